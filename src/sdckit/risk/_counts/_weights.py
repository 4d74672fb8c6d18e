"""Sampling weights: f_k (sample count of a key combination) and F_k (sum of the weights over it).

A sampling weight w_i is the number of population units record i stands for (1 / its inclusion
probability), so F_k = sum of w_i over the records with key k estimates the population count of
that key (Horvitz-Thompson); f_k <= F_k when every weight is at least 1.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import narwhals as nw
import numpy as np
import polars as pl
from numpy.typing import NDArray

from sdckit._checks import check_groupable
from sdckit._io import DataSource, MissingPolicy, as_narwhals, read_data
from sdckit._scale import collect_all, collect_small
from sdckit.errors import InputError, MissingValuesError, NonNumericColumnError, UnreadableInputError
from sdckit.risk._counts._counting import group_ids


def check_numeric_weights(series: nw.Series[Any], name: str) -> NDArray[np.float64]:
    """The weights as float64; raise naming the column, the value and the row when one is missing,
    not a number, infinite or not positive."""
    dtype = series.dtype
    if not (dtype.is_numeric() and dtype != nw.Boolean):
        vals = series.to_list()
        row, value = next(
            ((i, v) for i, v in enumerate(vals) if v is not None and not isinstance(v, (int, float))),
            (0, vals[0] if vals else None),
        )
        raise NonNumericColumnError(name, value, row)
    w = np.asarray(series.cast(nw.Float64).to_numpy(), dtype=np.float64)
    miss = np.isnan(w)
    if miss.any():
        raise MissingValuesError(
            name,
            int(miss.sum()),
            int(np.argmax(miss)),
            fix="Every record needs its sampling weight; impute it or drop those records first.",
        )
    bad = ~np.isfinite(w) | (w <= 0)
    if bad.any():
        row = int(np.argmax(bad))
        raise InputError(
            f"column {name!r} holds the weight {float(w[row]):g} at row {row}; a sampling weight is a positive, "
            "finite number of population units per record."
        )
    return w


def check_weight_column(
    frame: nw.DataFrame[Any] | nw.LazyFrame[Any], name: str, columns: Sequence[str]
) -> float | None:
    """Check a weight column where the data lives: not a key column, numeric, complete, positive,
    finite (eager frames name the row; lazy frames are checked with one aggregate pass, and their
    smallest weight is returned; None for eager frames)."""
    if name in columns:
        raise InputError(
            f"column {name!r} is both a key column and the weights; a weight is not an attribute an "
            "attacker knows. Leave it out of the columns."
        )
    if isinstance(frame, nw.DataFrame):
        check_numeric_weights(frame[name], name)
        return None
    dtype = frame.collect_schema()[name]
    if not (dtype.is_numeric() and dtype != nw.Boolean):
        raise NonNumericColumnError(name, str(dtype))
    col = nw.col(name)
    stats = collect_small(
        frame.select(col.is_null().cast(nw.Int64).sum().alias("nulls"), col.min().alias("lo"), col.max().alias("hi")),
        what=f"the checks of the weights {name!r}",
        limit=1,
    )
    nulls, lo, hi = int(stats["nulls"][0]), stats["lo"][0], stats["hi"][0]
    if nulls:
        raise MissingValuesError(name, nulls, fix="Every record needs its sampling weight; impute it first.")
    if lo is None or not np.isfinite(lo) or not np.isfinite(hi) or lo <= 0:
        bad = lo if lo is None or not np.isfinite(lo) or lo <= 0 else hi
        raise InputError(
            f"column {name!r} holds the weight {bad!r}; a sampling weight is a positive, finite number of "
            "population units per record."
        )
    return float(lo)


def read_keys_and_weights(
    data: DataSource,
    columns: Sequence[str] | str,
    weights: str | None,
    *,
    missing: MissingPolicy = "value",
    what: str = "this measure",
) -> tuple[pl.DataFrame, tuple[str, ...], NDArray[np.float64] | None, int | None]:
    """The key columns as an eager polars frame, the weights (float64, or None) and the rows dropped.

    The weight column must be numeric, finite, positive and complete; ``missing`` applies to the
    key columns only (rows dropped there drop their weight too). Lazy frames are collected: the
    measures built on this give one value per record.
    """
    frame = collect_all(
        as_narwhals(data), what=what, instead=f"with_{what} adds the per-record columns where they live."
        if what == "individual_risk" else ""
    )
    names = frame.collect_schema().names()
    if weights is not None and weights not in names:
        read_data(frame, [weights])  # raises ColumnNotFoundError with the close names
    keys = read_data(frame, columns, missing=missing)
    cols = keys.columns
    if weights is not None and weights in cols:
        raise InputError(
            f"column {weights!r} is both a key column and the weights; a weight is not an attribute an "
            "attacker knows. Leave it out of the columns."
        )
    check_groupable(keys.frame, list(cols))
    w: NDArray[np.float64] | None = None
    if weights is not None:
        wf = frame.select(weights)
        if missing == "drop" and keys.n_dropped:
            mask = ~nw.any_horizontal(*[nw.col(c).is_null() for c in cols], ignore_nulls=True)
            schema = frame.collect_schema()
            floats = [c for c in cols if schema[c].is_float()]
            if floats:
                mask = mask & ~nw.any_horizontal(*[nw.col(c).is_nan() for c in floats], ignore_nulls=True)
            wf = frame.filter(mask).select(weights)
        w = check_numeric_weights(wf[weights], weights)
    df = keys.frame.to_polars() if isinstance(keys.frame, nw.DataFrame) else None
    if df is None:  # pragma: no cover - collected above
        raise UnreadableInputError(f"{what} needs the rows in memory; collect the lazy frame first.")
    return df, cols, w, keys.n_dropped


def group_frequencies(
    df: pl.DataFrame, columns: Sequence[str], weights: NDArray[np.float64] | None
) -> tuple[NDArray[np.int64], NDArray[np.float64], NDArray[np.int64]]:
    """Per group: f_k, the records sharing the key, and F_k, the sum of their weights (F_k = f_k
    without weights); and each record's group id (index into them). Missing values are one more value."""
    ids, n_groups = group_ids(df, list(columns))
    fk = np.bincount(ids, minlength=n_groups).astype(np.int64)
    big_f = np.asarray(
        fk if weights is None else np.bincount(ids, weights=weights, minlength=n_groups), dtype=np.float64
    )
    return fk, big_f, ids


def check_population_counts(fk: NDArray[np.int64], big_f: NDArray[np.float64], weights: str) -> None:
    """Raise when a key's weights (per group or per record arrays) add up to fewer units than its sample records (F_k < f_k)."""
    bad = big_f < fk * (1.0 - 1e-12)
    if np.any(bad):
        row = int(np.argmax(bad))
        raise InputError(
            f"the weights {weights!r} of the records sharing a key add up to {big_f[row]:g}, fewer "
            f"than its {int(fk[row])} sample records: sampling weights count population units per record "
            "and are at least 1. Check the column (is it a probability instead of its inverse?)."
        )
