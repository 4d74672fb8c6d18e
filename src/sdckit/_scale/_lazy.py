"""Frames whose rows live elsewhere: which ones sdckit never collects, and which it collects saying so."""

from __future__ import annotations

import warnings
from typing import Any

import narwhals as nw

from sdckit._scale._engines import engine_of
from sdckit.errors import SdcWarning


def is_distributed(X: object) -> bool:
    """True for a Dask or PySpark frame (rows live on workers; never collected by sdckit)."""
    return engine_of(X) is not None


def _lazy_kind(X: object) -> str | None:
    native = X.to_native() if isinstance(X, (nw.DataFrame, nw.LazyFrame)) else X
    mod = type(native).__module__.split(".")[0]
    if mod == "polars" and type(native).__name__ == "LazyFrame":
        return "polars LazyFrame"
    if mod in ("duckdb", "_duckdb"):
        return "DuckDB relation"
    return None


def collect_if_lazy(X: Any, name: str) -> Any:
    """A polars DataFrame of a polars LazyFrame or DuckDB relation, with a warning that says so.

    Group-wise numeric methods need the rows in memory; other input is returned as is.
    """
    kind = _lazy_kind(X)
    if kind is None:
        return X
    warnings.warn(
        f"{name} collects the {kind} into memory: its numeric columns are needed row by row. "
        "For data that does not fit, use a Dask or Spark frame (masking runs partition by partition).",
        SdcWarning,
        stacklevel=3,
    )
    return nw.from_native(X).lazy().collect(backend="polars").to_native()


def restore_kind(out: Any, X: object) -> Any:
    """``out`` (an eager frame) as the lazy kind of ``X``: a polars LazyFrame or a DuckDB relation."""
    kind = _lazy_kind(X)
    if kind == "polars LazyFrame":
        return out.lazy()
    if kind == "DuckDB relation":
        # lazy: the frames extra
        import duckdb

        return duckdb.from_arrow(nw.from_native(out, eager_only=True).to_arrow())
    return out


