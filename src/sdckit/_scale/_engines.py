"""Dask and Spark adapters: moments in one pass, per-block and per-partition pandas functions."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterator, Sequence
from typing import Any, Literal

import narwhals as nw
import numpy as np
from numpy.typing import NDArray

from sdckit.errors import ParameterError

Engine = Literal["dask", "spark"]

_DRIVER_ROWS = [0]


def driver_rows() -> int:
    """Rows sdckit's distributed passes have brought to the driver so far in this process.

    Only aggregates come back: one moment row per partition, one size per block. Tests and the
    benchmark read this counter to show that no data row does.
    """
    return _DRIVER_ROWS[0]
PandasFn = Callable[[Any], Any]
"""A function from a pandas DataFrame to a pandas DataFrame of the same columns."""


def _native(X: Any) -> Any:
    return X.to_native() if isinstance(X, (nw.DataFrame, nw.LazyFrame)) else X


def engine_of(X: Any) -> Engine | None:
    """``"dask"`` or ``"spark"`` for a Dask or PySpark DataFrame (native or narwhals), else None."""
    mod = type(_native(X)).__module__.split(".")[0]
    if mod in ("dask", "dask_expr"):
        return "dask"
    if mod == "pyspark":
        return "spark"
    return None


def _require(X: Any) -> tuple[Engine, Any]:
    native = _native(X)
    engine = engine_of(native)
    if engine is None:
        raise ParameterError(f"expected a Dask or Spark DataFrame, got {type(native).__name__}.")
    return engine, native


def numeric_dtypes(X: Any, columns: Sequence[str]) -> dict[str, bool]:
    """Whether each column is numeric (or boolean), read off the schema (no pass over the rows)."""
    engine, df = _require(X)
    if engine == "dask":
        # lazy: the frames extra
        import pandas as pd

        return {c: bool(pd.api.types.is_numeric_dtype(df.dtypes[c])) for c in columns}
    # lazy: the scale extra
    from pyspark.sql.types import BooleanType, NumericType

    fields = {f.name: f.dataType for f in df.schema.fields}
    return {c: isinstance(fields[c], (NumericType, BooleanType)) for c in columns}


def _partial_moments(x: NDArray[np.float64]) -> tuple[int, NDArray[np.float64], NDArray[np.float64], NDArray[np.int64]]:
    """(n, mean, scatter, NaN count per column) of the complete rows of x."""
    nan = np.isnan(x)
    ok = x[~nan.any(axis=1)]
    n = ok.shape[0]
    mean = ok.mean(axis=0) if n else np.zeros(x.shape[1])
    centred = ok - mean
    return n, mean, centred.T @ centred, nan.sum(axis=0).astype(np.int64)


def _moment_row(x: NDArray[np.float64]) -> NDArray[np.float64]:
    n, mean, scatter, nulls = _partial_moments(x)
    return np.concatenate([[float(n)], mean, scatter.ravel(), nulls.astype(np.float64)])


def _as_float(pdf: Any, columns: Sequence[str]) -> NDArray[np.float64]:
    return np.asarray(pdf[list(columns)].astype("float64").to_numpy(dtype=np.float64, na_value=np.nan))


def column_moments(
    X: Any, columns: Sequence[str]
) -> tuple[int, NDArray[np.float64], NDArray[np.float64], NDArray[np.int64]]:
    """Count, mean, covariance (ddof=1) and missing-cell counts of ``columns``, in one pass.

    Each partition sends one row (its count, mean, scatter matrix and NaN counts); the driver
    merges them with Chan's formula ``M = M_a + M_b + d d^T n_a n_b / n``, ``d = mean_b - mean_a``.
    Missing cells are counted; the moments are those of the complete rows.
    """
    # lazy: the frames extra
    import pandas as pd

    engine, df = _require(X)
    cols = list(columns)
    p = len(cols)
    names = ["n", *[f"m{j}" for j in range(p)], *[f"s{i}" for i in range(p * p)], *[f"z{j}" for j in range(p)]]
    if engine == "dask":

        def part(pdf: Any) -> Any:
            return pd.DataFrame([_moment_row(_as_float(pdf, cols))], columns=names)

        meta = pd.DataFrame({c: pd.Series(dtype="float64") for c in names})
        rows = np.asarray(df[cols].map_partitions(part, meta=meta).compute().to_numpy(), dtype=np.float64)
        _DRIVER_ROWS[0] += rows.shape[0]
    else:
        # lazy: the scale extra
        from pyspark.sql.types import DoubleType, StructField, StructType

        schema = StructType([StructField(c, DoubleType(), False) for c in names])

        def batches(it: Iterator[Any]) -> Iterator[Any]:
            parts = [_as_float(pdf, cols) for pdf in it]
            x = np.concatenate(parts) if parts else np.empty((0, p))
            yield pd.DataFrame([_moment_row(x)], columns=names)

        collected = df.select(*cols).mapInPandas(batches, schema).collect()
        rows = np.asarray([list(r) for r in collected], dtype=np.float64).reshape(-1, len(names))
        _DRIVER_ROWS[0] += rows.shape[0]
    n_tot, mean, scatter = 0, np.zeros(p), np.zeros((p, p))
    nulls = np.zeros(p, dtype=np.int64)
    for row in rows:
        n_b = int(row[0])
        nulls += row[1 + p + p * p :].astype(np.int64)
        if n_b == 0:
            continue
        m_b, s_b = row[1 : 1 + p], row[1 + p : 1 + p + p * p].reshape(p, p)
        n_new = n_tot + n_b
        d = m_b - mean
        scatter = scatter + s_b + np.outer(d, d) * (n_tot * n_b / n_new)
        mean = mean + d * (n_b / n_new)
        n_tot = n_new
    cov = scatter / (n_tot - 1) if n_tot > 1 else np.full((p, p), np.nan)
    return n_tot, mean, cov, nulls


def null_counts(X: Any, columns: Sequence[str]) -> NDArray[np.int64]:
    """Missing cells (null or NaN) per column, in one pass (see :func:`column_moments`)."""
    return column_moments(X, columns)[3]


def block_sizes(X: Any, keys: Sequence[str]) -> dict[tuple[Any, ...], int]:
    """Rows per block (one value per block reaches the driver)."""
    engine, df = _require(X)
    if engine == "dask":
        sizes = df.groupby(list(keys), dropna=False).size().compute()
        _DRIVER_ROWS[0] += len(sizes)
        return {(k if isinstance(k, tuple) else (k,)): int(v) for k, v in sizes.items()}
    rows = df.groupBy(*keys).count().collect()
    _DRIVER_ROWS[0] += len(rows)
    return {tuple(r[k] for k in keys): int(r["count"]) for r in rows}


def _dask_meta(df: Any, floats: Sequence[str]) -> Any:
    meta = df._meta
    return meta.astype(dict.fromkeys(floats, "float64")) if floats else meta


def _spark_schema(df: Any, floats: Sequence[str]) -> Any:
    # lazy: the scale extra
    from pyspark.sql.types import DoubleType, StructField, StructType

    return StructType(
        [StructField(f.name, DoubleType(), True) if f.name in floats else f for f in df.schema.fields]
    )


def map_blocks(X: Any, keys: Sequence[str], fn: PandasFn, *, floats: Sequence[str] = ()) -> Any:
    """``fn`` on every block (rows sharing the values of ``keys``); a lazy frame of the same kind.

    Dask: ``shuffle(on=keys)`` puts each block in one partition, then ``map_partitions`` runs
    ``fn`` per block; Spark: ``groupBy(*keys).applyInPandas``. ``floats`` are the columns ``fn``
    turns into float64 (their schema changes accordingly).
    """
    # lazy: the frames extra
    import pandas as pd

    engine, df = _require(X)
    keys = list(keys)
    floats = list(floats)
    if engine == "dask":
        meta = _dask_meta(df, floats)

        def part(pdf: Any) -> Any:
            if len(pdf) == 0:
                return pdf.astype(dict.fromkeys(floats, "float64"))
            pieces = [fn(g) for _, g in pdf.groupby(keys, sort=False, dropna=False)]
            return pd.concat(pieces).astype(dict.fromkeys(floats, "float64"))

        return df.shuffle(on=keys).map_partitions(part, meta=meta)
    schema = _spark_schema(df, floats)

    def block(pdf: Any) -> Any:
        return fn(pdf).astype(dict.fromkeys(floats, "float64"))

    return df.groupBy(*keys).applyInPandas(block, schema=schema)


def map_partitions(
    X: Any, fn: Callable[[Any, tuple[int, int]], Any], *, floats: Sequence[str] = ()
) -> Any:
    """``fn(pdf, (partition, batch))`` on every partition; a lazy frame of the same kind.

    Dask gives each partition whole (batch 0); Spark's ``mapInPandas`` gives Arrow batches, numbered
    within their partition (``TaskContext.partitionId()``).
    """
    engine, df = _require(X)
    floats = list(floats)
    if engine == "dask":
        meta = _dask_meta(df, floats)

        def part(pdf: Any, partition_info: dict[str, Any] | None = None) -> Any:
            number = int(partition_info["number"]) if partition_info else 0
            return fn(pdf, (number, 0)).astype(dict.fromkeys(floats, "float64"))

        return df.map_partitions(part, meta=meta)
    schema = _spark_schema(df, floats)

    def batches(it: Iterator[Any]) -> Iterator[Any]:
        # lazy: the scale extra
        from pyspark import TaskContext

        ctx = TaskContext.get()
        pid = ctx.partitionId() if ctx is not None else 0
        for i, pdf in enumerate(it):
            yield fn(pdf, (pid, i)).astype(dict.fromkeys(floats, "float64"))

    return df.mapInPandas(batches, schema)


def local_spark(app_name: str = "sdckit", *, cores: int = 2, **conf: str) -> Any:
    """A quiet local Spark session (``local[cores]``) whose workers run this interpreter.

    For tests, benchmarks and trying things out; on a cluster, build the session as usual.
    ``conf`` adds Spark settings (underscores for dots: ``driver_memory="6g"``).
    """
    # lazy: the scale extra
    from pyspark.sql import SparkSession

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    builder = (
        SparkSession.builder.master(f"local[{cores}]")
        .appName(app_name)
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", str(4 * cores))
        .config("spark.sql.execution.arrow.pyspark.enabled", "true")
    )
    for key, value in conf.items():
        builder = builder.config(f"spark.{key.replace('_', '.')}", value)
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel("ERROR")
    return session
