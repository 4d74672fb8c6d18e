"""SUDA2 on a frame that does not fit one machine: the exact search inside blocks, where the rows live.

An MSU is a property of the whole table (a set of values no other record shares), so the exact
search needs every record in one place. On a cluster :func:`with_suda2` runs the exact SUDA2 search
inside each block, the rows sharing the values of ``block`` (a region, a stratum), as a table of its
own: a record's MSUs are those within its block, i.e. sets of values unique *among the records of
its block*. With the block columns among the key columns this is the MSU search of the table on the
keys given the block (a set S unique in the block is unique in the table on S plus the block
columns), so the scores count MSUs that may be one column larger than the exact ones; docs/scale.md
gives the measured difference on Adult.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterator, Sequence
from typing import Any, Literal

import narwhals as nw
import numpy as np
import polars as pl
from numpy.typing import NDArray

from sdckit._io import DataSource, as_narwhals, check_columns
from sdckit._scale import collect_small, engine_of, restore_kind
from sdckit.errors import ParameterError, SdcWarning
from sdckit.risk._counts._counting import size_histogram, sorted_codes
from sdckit.risk._counts._lazy_keys import check_new_columns
from sdckit.risk._measures._suda import msu_counts, suda_weights

SUDA_COLUMNS = ("suda_score", "min_msu_size")
"""Columns :func:`with_suda2` adds, with ``dis_suda_score`` and ``msu_size_<s>`` (s = 1..m)."""


def _block_result(keys: pl.DataFrame, columns: Sequence[str], missing: str) -> tuple[NDArray[np.int64], NDArray[np.float64]]:
    """(MSU counts (n, m), SUDA scores) of one block, its rows a table of their own."""
    m = len(columns)
    if keys.height == 0:
        return np.zeros((0, m), dtype=np.int64), np.zeros(0)
    codes = np.column_stack(
        [sorted_codes(keys[c], missing_code=-1 if missing == "ignore" else None)[0] for c in columns]
    ).astype(np.int32)
    counts = msu_counts(codes)
    return counts, counts @ suda_weights(m)


def _scored_pandas(pdf: Any, columns: Sequence[str], missing: str) -> Any:
    """``pdf`` (one block) with ``suda_score``, ``min_msu_size`` and ``msu_size_<s>``."""
    keys = pl.from_pandas(pdf[list(columns)].reset_index(drop=True))
    counts, scores = _block_result(keys, columns, missing)
    out = pdf.copy()
    out["suda_score"] = scores.astype(np.float64)
    has = counts > 0
    out["min_msu_size"] = np.where(has.any(axis=1), np.argmax(has, axis=1) + 1, 0).astype(np.int64)
    for s in range(1, len(columns) + 1):
        out[f"msu_size_{s}"] = counts[:, s - 1].astype(np.int64)
    return out


def _new_names(m: int) -> list[str]:
    return ["suda_score", "min_msu_size", *[f"msu_size_{s}" for s in range(1, m + 1)]]


def _blocked_native(native: Any, engine: str, columns: Sequence[str], block: Sequence[str], missing: str) -> Any:
    """The per-block scores on Dask (``shuffle`` + ``map_partitions``) or Spark (``applyInPandas``)."""
    import pandas as pd  # lazy: an optional engine's library

    cols, keys = list(columns), list(block)
    m = len(cols)
    if engine == "dask":
        meta = native._meta.copy()
        meta["suda_score"] = pd.Series(dtype="float64")
        meta["min_msu_size"] = pd.Series(dtype="int64")
        for s in range(1, m + 1):
            meta[f"msu_size_{s}"] = pd.Series(dtype="int64")

        def part(pdf: Any) -> Any:
            if len(pdf) == 0:
                return meta
            pieces = [_scored_pandas(g, cols, missing) for _, g in pdf.groupby(keys, sort=False, dropna=False)]
            return pd.concat(pieces)

        return native.shuffle(on=keys).map_partitions(part, meta=meta)
    from pyspark.sql.types import (  # lazy: an optional engine's library
        DoubleType,
        LongType,
        StructField,
        StructType,
    )

    fields = [*native.schema.fields, StructField("suda_score", DoubleType(), False),
              StructField("min_msu_size", LongType(), False)]
    fields += [StructField(f"msu_size_{s}", LongType(), False) for s in range(1, m + 1)]

    def block_fn(pdf: Any) -> Any:
        return _scored_pandas(pdf, cols, missing)

    return native.groupBy(*keys).applyInPandas(block_fn, schema=StructType(fields))


def _blocked_in_memory(df: pl.DataFrame, columns: Sequence[str], block: Sequence[str], missing: str) -> pl.DataFrame:
    parts: Iterator[pl.DataFrame] = iter(df.partition_by(list(block), maintain_order=True)) if df.height else iter(())
    scored = [pl.from_pandas(_scored_pandas(p.to_pandas(), columns, missing)) for p in parts]
    if not scored:
        return df
    return pl.concat(scored, how="vertical_relaxed")


def with_suda2(
    data: DataSource,
    columns: Sequence[str] | str,
    *,
    block: Sequence[str] | str,
    missing: Literal["value", "ignore"] = "value",
    dis_fraction: float = 0.01,
) -> Any:
    """The lazy frame ``data`` with SUDA2 scores computed within blocks, where the rows live.

    Runs the exact search of :func:`sdckit.risk.suda2` inside every block (the rows sharing the
    values of ``block``) and adds the columns of :meth:`Suda2Result.to_frame`: ``suda_score``
    (sum over the record's MSUs within its block of (m - |S|)!, m = the number of ``columns``),
    ``dis_suda_score``, ``min_msu_size`` and ``msu_size_<s>``. The DIS score uses the whole
    table's figures: P, the records in pairs on all ``columns`` (one distributed ``group_by``,
    only the size histogram reaches the driver), and sum_j score_j^-Q (one aggregate row).

    This is an approximation of the table's SUDA2 unless every block is the whole table: a set of
    values unique within its block need not be unique in the table. Put the block columns among
    ``columns`` (then a block MSU S is an MSU of the table on S plus the block keys); docs/scale.md
    measures the difference. Dask: ``shuffle(on=block)`` + ``map_partitions``; Spark:
    ``groupBy(*block).applyInPandas``; each block must fit one worker's memory. A polars LazyFrame
    or DuckDB relation is collected (with a warning naming the rows) and given back lazy.

    Parameters
    ----------
    data : a Dask or Spark frame (or a polars LazyFrame / DuckDB relation).
    columns : the key columns.
    block : the block columns (one or more).
    missing : ``"value"`` (a missing cell is a value) or ``"ignore"`` (sdcMicro's rule); filter the
        rows first to drop them.
    dis_fraction : sampling fraction f in (0, 1) of the DIS score.
    """
    if missing not in ("value", "ignore"):
        raise ParameterError(f"missing={missing!r}: on a lazy frame use 'value' or 'ignore'; filter the rows first.")
    f = float(dis_fraction)
    if not (0.0 < f < 1.0):
        raise ParameterError(f"dis_fraction={dis_fraction!r} must be a sampling fraction strictly between 0 and 1.")
    frame = as_narwhals(data)
    if not isinstance(frame, nw.LazyFrame):
        raise ParameterError(
            "with_suda2 takes a lazy frame (Dask, Spark, polars LazyFrame, DuckDB); in memory use suda2 (exact)."
        )
    cols = check_columns(frame, columns)
    blocks = check_columns(frame, block)
    m = len(cols)
    original = frame.collect_schema().names()
    check_new_columns(original, [*_new_names(m), "dis_suda_score"])
    native = frame.to_native()
    engine = engine_of(native)
    if engine is not None:
        scored = nw.from_native(_blocked_native(native, engine, cols, blocks, missing))
    else:
        eager = collect_small(frame, what=f"the rows of the table (SUDA2 within blocks of {', '.join(blocks)})", limit=None)
        warnings.warn(
            f"with_suda2 collects the {len(eager):,} rows of the lazy frame into memory (the blocks run here); "
            "a Dask or Spark frame keeps them on the workers.",
            SdcWarning,
            stacklevel=2,
        )
        done = _blocked_in_memory(eager.to_polars(), cols, blocks, missing)
        scored = nw.from_native(restore_kind(done, native))
    sizes, groups = size_histogram(frame, cols)
    n_pair_rows = int(2 * groups[sizes == 2].sum())
    q = 1.0 + (8.0 - m) / 20.0
    score = nw.col("suda_score")
    inv = nw.when(score > 0).then(score ** (-q)).otherwise(nw.lit(0.0))
    adj_row = collect_small(scored.select(inv.sum().alias("adj")), what="the DIS normaliser", limit=1)
    adj = float(adj_row["adj"][0] or 0.0)
    gap = n_pair_rows * (1.0 - f) / f
    if adj > 0:
        dis = nw.when(score > 0).then(1.0 / (1.0 + gap / (score**q * adj))).otherwise(nw.lit(0.0))
    else:
        dis = nw.lit(0.0)
    names = _new_names(m)
    out = scored.with_columns(dis.cast(nw.Float64).alias("dis_suda_score"))
    return out.select(*original, names[0], "dis_suda_score", *names[1:]).to_native()
