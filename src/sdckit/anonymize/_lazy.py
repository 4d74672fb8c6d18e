"""Masking a lazy frame (polars LazyFrame, DuckDB, Dask, Spark) where its rows live.

Fitting needs only aggregates of each column: a one-row summary (count, min, max, distinct values,
cells changed) or its value counts (one row per distinct value, for quantiles and hierarchies),
each brought back through :func:`sdckit._scale.collect_small`. Transforming is a narwhals
expression per column (``when``/``then`` chains, ``replace_strict``), so the result is a frame of
the input's kind that is still lazy.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import narwhals as nw
import numpy as np
from numpy.typing import NDArray

from sdckit._scale import collect_small, count_driver_rows, engine_of


def lazy_frame(X: Any) -> nw.LazyFrame[Any] | None:
    """``X`` as a narwhals LazyFrame when it is one (polars LazyFrame, DuckDB, Dask, Spark), else None."""
    if isinstance(X, nw.LazyFrame):
        return X
    if isinstance(X, (nw.DataFrame, str, bytes)) or hasattr(X, "__fspath__") or isinstance(X, np.ndarray):
        return None
    mod = type(X).__module__.split(".")[0]
    if mod not in ("polars", "duckdb", "_duckdb", "dask", "dask_expr", "pyspark", "sqlframe", "ibis"):
        return None
    try:
        frame = nw.from_native(X)
    except TypeError:
        return None
    return frame if isinstance(frame, nw.LazyFrame) else None


def holding_missing(frame: nw.LazyFrame[Any], dtype: Any) -> Any:
    """``dtype``, or Float64 for an integer dtype on Dask (numpy integers hold no missing cell:
    pandas' own rule for an integer column with missing values)."""
    if dtype.is_integer() and frame.implementation.is_dask():
        return nw.Float64
    return dtype


def present(name: str, dtype: Any) -> nw.Expr:
    """Column ``name`` with NaN read as missing (as the in-memory methods read it)."""
    col = nw.col(name)
    if dtype.is_float():
        return nw.when(~col.is_nan()).then(col)  # NaN and null -> null
    return col


def aggregate(frame: nw.LazyFrame[Any], exprs: Sequence[nw.Expr], *, what: str) -> dict[str, Any]:
    """One row of aggregates of ``frame`` as a dict (one row reaches the driver)."""
    row = collect_small(frame.select(*exprs), what=what, limit=1)
    return {c: row[c].to_list()[0] for c in row.columns}


def value_counts(frame: nw.LazyFrame[Any], name: str, dtype: Any) -> tuple[list[Any], NDArray[np.int64]]:
    """Distinct non-missing values of column ``name`` (sorted when they compare) and their counts,
    from one distributed ``group_by`` (one row per distinct value reaches the driver)."""
    counts = collect_small(
        frame.select(present(name, dtype).alias(name))
        .filter(~nw.col(name).is_null())
        .group_by(name)
        .agg(nw.len().alias("__n")),
        what=f"value counts of {name!r}",
    )
    values = counts[name].to_list()
    n = np.asarray(counts["__n"].to_list(), dtype=np.int64)
    try:
        order = sorted(range(len(values)), key=lambda i: values[i])
    except TypeError:
        order = sorted(range(len(values)), key=lambda i: str(values[i]))
    return [values[i] for i in order], n[order]


def distinct_values(frame: nw.LazyFrame[Any], name: str, dtype: Any) -> list[Any]:
    """The distinct non-missing values of column ``name`` (see :func:`value_counts`)."""
    return value_counts(frame, name, dtype)[0]


def counted_quantile(values: Sequence[float], counts: NDArray[np.int64], q: float) -> float:
    """``np.quantile(x, q)`` (linear interpolation) of the data ``x`` that has these value counts.

    With n = sum(counts) and the sorted data x_(0) <= ... <= x_(n-1): h = (n - 1) q, i = floor(h),
    g = h - i, Q = x_(i) + g (x_(i+1) - x_(i)) (numpy's ``_lerp``, which for g >= 1/2 computes
    x_(i+1) - (1 - g)(x_(i+1) - x_(i))); x_(r) is the value whose cumulative count first exceeds r.
    """
    x = np.asarray(values, dtype=np.float64)
    order = np.argsort(x, kind="stable")
    x, c = x[order], np.asarray(counts, dtype=np.int64)[order]
    cum = np.cumsum(c)
    n = int(cum[-1])
    h = (n - 1) * float(q)
    i = min(max(math.floor(h), 0), n - 1)
    j = min(i + 1, n - 1)
    a = float(x[int(np.searchsorted(cum, i, side="right"))])
    b = float(x[int(np.searchsorted(cum, j, side="right"))])
    g = h - i
    d = b - a
    return b - d * (1 - g) if g >= 0.5 else a + d * g


def n_distinct(expr: nw.Expr) -> nw.Expr:
    """Distinct non-missing values of ``expr`` (an aggregate)."""
    return expr.n_unique() - expr.is_null().any().cast(nw.Int64)


def changed(before: nw.Expr, after: nw.Expr, comparable: bool) -> nw.Expr:
    """1 where the cell changed (a value became another or missing; missing cells stay missing).

    ``comparable``: whether the values before and after have types that compare (else every
    non-missing cell counts as changed, as in memory a number never equals a label)."""
    if not comparable:
        return (~before.is_null()).cast(nw.Int64)
    both = ~before.is_null() & ~after.is_null()
    # pandas reads NaN != NaN as True and SQL NULL != x as NULL: compare only where both hold a value
    differs = (before.is_null() != after.is_null()) | (both & (before != after).fill_null(False))
    return differs.cast(nw.Int64)


def lookup(expr: nw.Expr, old: Sequence[Any], new: Sequence[Any], dtype: Any) -> nw.Expr:
    """``expr`` mapped value by value (``old[i] -> new[i]``; missing stays missing), as ``dtype``."""
    if not old:
        return nw.lit(None, dtype=dtype)
    return expr.replace_strict(list(old), list(new), default=nw.lit(None, dtype=dtype), return_dtype=dtype)


def dtype_of(values: Sequence[Any], given: Any) -> Any:
    """The narwhals dtype of the recoded ``values``: text, integer, float, or ``given`` (the column's)."""
    present_values = [v for v in values if v is not None]
    if all(isinstance(v, str) for v in present_values) and present_values:
        return nw.String
    if present_values and all(isinstance(v, (bool, np.bool_)) for v in present_values):
        return nw.Boolean
    if present_values and all(isinstance(v, (int, np.integer)) and not isinstance(v, bool) for v in present_values):
        return given if given.is_integer() else nw.Int64
    if present_values and all(isinstance(v, (int, float, np.integer, np.floating)) for v in present_values):
        return given if given.is_float() else nw.Float64
    if not present_values:
        return given
    return nw.String


def partition_tallies(X: Any, fn: Any, names: Sequence[str]) -> NDArray[np.int64]:
    """Integer tallies ``fn(pdf, (partition, batch))`` returns for every partition of a Dask or Spark
    frame (a pandas DataFrame with int64 columns ``names``, the last a count; Spark's batches of a
    partition are summed by the other columns), stacked; their count is added to
    :func:`~sdckit._scale.driver_rows`. The (partition, batch) keys are those of
    :func:`sdckit._scale.map_partitions`, so ``fn`` can redraw what a map drew."""
    import pandas as pd  # lazy: an optional engine's library

    native = X.to_native() if isinstance(X, (nw.DataFrame, nw.LazyFrame)) else X
    cols = list(names)
    if engine_of(native) == "dask":

        def part(pdf: Any, partition_info: dict[str, Any] | None = None) -> Any:
            number = int(partition_info["number"]) if partition_info else 0
            return fn(pdf, (number, 0))

        meta = pd.DataFrame({c: pd.Series(dtype="int64") for c in cols})
        got = native.map_partitions(part, meta=meta).compute()
        rows = np.asarray(got[cols].to_numpy(), dtype=np.int64).reshape(-1, len(cols))
    else:
        from pyspark.sql.types import LongType, StructField, StructType  # lazy: an optional engine's library

        schema = StructType([StructField(c, LongType(), False) for c in cols])

        def batches(it: Any) -> Any:
            from pyspark import TaskContext  # lazy: an optional engine's library

            ctx = TaskContext.get()
            pid = ctx.partitionId() if ctx is not None else 0
            parts = [fn(pdf, (pid, i)) for i, pdf in enumerate(it)]
            if parts:  # one tally per partition, not per Arrow batch: sum the last column by the others
                yield pd.concat(parts).groupby(cols[:-1], as_index=False)[cols[-1]].sum()

        collected = native.mapInPandas(batches, schema).collect()
        rows = np.asarray([list(r) for r in collected], dtype=np.int64).reshape(-1, len(cols))
    count_driver_rows(rows.shape[0])
    return rows
