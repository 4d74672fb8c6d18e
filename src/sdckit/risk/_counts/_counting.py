"""Group-size histograms: how many groups of each size the rows form on a set of columns.

Counting happens where the data lives. Eager frames are converted to polars (zero-copy for
pyarrow) and, when every column is integer, boolean, categorical or text, each row is hashed into
one integer key by mixed radix over dense per-column codes and counted with ``np.bincount``; other
eager frames use polars ``group_by``; lazy frames (DuckDB, Dask, PySpark, polars LazyFrame) run a
narwhals ``group_by`` twice (rows -> group sizes -> histogram of sizes) and only the histogram,
which has at most sqrt(2 n) rows, is collected.
"""

from __future__ import annotations

import math
from typing import Any

import narwhals as nw
import numpy as np
import polars as pl
from numpy.typing import NDArray

from sdckit._scale import collect_small

_BINCOUNT_MAX = 1 << 22  # key ranges up to max(this, 2 n) are counted with np.bincount (dense)
_KEY_MAX = 1 << 62


def _codes(s: pl.Series) -> tuple[NDArray[np.int64], int] | None:
    """Dense int64 codes (nulls get their own code) and the number of codes, or None if unsupported."""
    dtype = s.dtype
    if dtype == pl.Boolean:
        s = s.cast(pl.Int8)
        dtype = s.dtype
    if dtype in (pl.String, pl.Categorical) or isinstance(dtype, pl.Enum):
        if dtype == pl.String:
            s = s.cast(pl.Categorical)
        phys = s.to_physical()
        lo = phys.min()
        hi = phys.max()
    elif dtype.is_integer():
        phys = s
        lo, hi = s.min(), s.max()
    else:
        return None
    if lo is None or hi is None:  # all null
        return np.zeros(s.len(), dtype=np.int64), 1
    lo_i, hi_i = int(lo), int(hi)  # type: ignore[arg-type]
    span = hi_i - lo_i + 1
    if span > _KEY_MAX:
        return None
    codes = (phys.cast(pl.Int64) - lo_i).fill_null(span).to_numpy()
    return np.asarray(codes, dtype=np.int64), span + (1 if s.null_count() else 0)


def _radix_sizes(df: pl.DataFrame, columns: list[str]) -> NDArray[np.int64] | None:
    """Group sizes (one per group, any order) by mixed-radix keys, or None when keys would overflow."""
    parts: list[tuple[NDArray[np.int64], int]] = []
    total = 1
    for c in columns:
        got = _codes(df[c])
        if got is None:
            return None
        parts.append(got)
        total *= got[1]
        if total > _KEY_MAX:
            return None
    key = np.zeros(df.height, dtype=np.int64)
    for codes, radix in parts:
        key *= radix
        key += codes
    if total <= max(_BINCOUNT_MAX, 2 * df.height):
        counts = np.bincount(key, minlength=0)
        return np.asarray(counts[counts > 0], dtype=np.int64)
    vc = pl.Series("k", key).value_counts(name="__n")
    return np.asarray(vc["__n"].to_numpy(), dtype=np.int64)


def _histogram(sizes: NDArray[np.int64]) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
    by_size = np.bincount(sizes)
    present = np.flatnonzero(by_size)
    return present.astype(np.int64), by_size[present].astype(np.int64)


def size_histogram(
    frame: nw.DataFrame[Any] | nw.LazyFrame[Any], columns: list[str]
) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
    """(sizes ascending, number of groups of each size) of the rows of ``frame`` grouped on ``columns``.

    Missing values are one more value (nulls group together). An empty frame gives empty arrays.
    """
    if isinstance(frame, nw.LazyFrame):
        lazy_hist = (
            frame.group_by(*columns)
            .agg(nw.len().alias("__size"))
            .group_by("__size")
            .agg(nw.len().alias("__groups"))
        )
        hist = collect_small(lazy_hist, what=f"the group-size histogram of {', '.join(columns)}")
        sizes = np.asarray(hist["__size"].to_numpy(), dtype=np.int64)
        groups = np.asarray(hist["__groups"].to_numpy(), dtype=np.int64)
        order = np.argsort(sizes)
        return sizes[order], groups[order]
    df = frame.select(*columns).to_polars()
    if df.height == 0:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    found = _radix_sizes(df, columns)
    if found is None:
        found = np.asarray(df.group_by(columns).agg(pl.len().alias("__n"))["__n"].to_numpy(), dtype=np.int64)
    return _histogram(found)


def n_distinct(frame: nw.DataFrame[Any] | nw.LazyFrame[Any], columns: list[str]) -> dict[str, int]:
    """Number of distinct values (null counted as one) of each column, in one pass."""
    out = collect_small(frame.select(*[nw.col(c).n_unique().alias(c) for c in columns]), what="distinct counts", limit=1)
    return {c: int(out[c][0]) for c in columns}


def log2_safe(x: float) -> float:
    return math.log2(x) if x > 0 else -math.inf


def weighted_group_sizes(
    frame: nw.DataFrame[Any] | nw.LazyFrame[Any], columns: list[str], weights: str
) -> tuple[NDArray[np.int64], NDArray[np.float64]]:
    """Per group of ``columns`` (any order, aligned): f_k, its rows, and F_k, the sum of ``weights``.

    Counted where the data lives (one narwhals ``group_by``); only one row per group is collected.
    """
    out = collect_small(
        frame.group_by(*columns).agg(nw.len().alias("__n_sample"), nw.col(weights).sum().alias("__w_total")),
        what=f"the weighted group sizes of {', '.join(columns)}",
    )
    return (
        np.asarray(out["__n_sample"].to_numpy(), dtype=np.int64),
        np.asarray(out["__w_total"].to_numpy(), dtype=np.float64),
    )


def group_ids(df: pl.DataFrame, columns: list[str]) -> tuple[NDArray[np.int64], int]:
    """Dense group id (0..g-1) of each row of an eager frame on ``columns``, and the number of groups g.

    Mixed-radix keys over dense column codes (nulls are one more value) when every column is
    integer, boolean, categorical or text; polars ``group_by`` otherwise. Ids follow the key order,
    not the order of first appearance.
    """
    n = df.height
    parts: list[tuple[NDArray[np.int64], int]] = []
    total = 1
    for c in columns:
        got = _codes(df[c])
        if got is None:
            break
        parts.append(got)
        total *= got[1]
        if total > _KEY_MAX:
            break
    else:
        key = np.zeros(n, dtype=np.int64)
        for codes, radix in parts:
            key *= radix
            key += codes
        if total <= max(_BINCOUNT_MAX, 2 * n):
            present = np.bincount(key, minlength=0) > 0
            remap = np.cumsum(present) - 1
            return np.asarray(remap[key], dtype=np.int64), int(present.sum())
        uniq, inverse = np.unique(key, return_inverse=True)
        return np.asarray(inverse.reshape(-1), dtype=np.int64), int(uniq.size)
    groups = (
        df.select(columns)
        .with_row_index("__i")
        .group_by(columns, maintain_order=True)
        .agg(pl.col("__i"))
        .with_row_index("__g")
        .select("__g", "__i")
        .explode("__i")
    )
    ids = np.empty(n, dtype=np.int64)
    ids[groups["__i"].to_numpy()] = groups["__g"].to_numpy()
    return ids, (int(ids.max()) + 1 if n else 0)


def sorted_codes(s: pl.Series, *, missing_code: int | None = None) -> tuple[NDArray[np.int64], int]:
    """Codes 0..m-1 of a column's values in sorted order and the number of codes used.

    Nulls get ``missing_code`` (not counted), or with None the code m, one more value (counted).
    Categorical columns are ordered by their text.
    """
    if s.dtype == pl.Categorical or isinstance(s.dtype, pl.Enum):
        s = s.cast(pl.String)
    ranked = s.rank("dense")  # 1..m, nulls stay null
    m = int(ranked.max() or 0)  # type: ignore[arg-type]
    codes = (ranked.cast(pl.Int64) - 1).fill_null(m if missing_code is None else missing_code).to_numpy()
    extra = 1 if missing_code is None and s.null_count() else 0
    return np.asarray(codes, dtype=np.int64), m + extra
