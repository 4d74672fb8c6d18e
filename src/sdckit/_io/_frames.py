"""Reading paths and wrapping native frames with narwhals."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, TypeAlias

import narwhals as nw
import numpy as np
import polars as pl
from numpy.typing import NDArray

from sdckit.errors import (
    ColumnNotFoundError,
    EmptyTableError,
    FileNotFoundInputError,
    UnreadableInputError,
)

DataSource: TypeAlias = "str | os.PathLike[str] | Any"
"""A path (CSV, Parquet, JSON lines, optionally gzipped) or a frame: pandas, polars, pyarrow, or a
lazy frame that narwhals accepts (polars LazyFrame, DuckDB relation, Dask, PySpark)."""

_READERS = {
    ".csv": "csv",
    ".tsv": "tsv",
    ".txt": "csv",
    ".parquet": "parquet",
    ".pq": "parquet",
    ".jsonl": "ndjson",
    ".ndjson": "ndjson",
    ".json": "ndjson",
}


def _format_of(path: Path) -> str:
    suffixes = [s.lower() for s in path.suffixes]
    if suffixes and suffixes[-1] == ".gz":
        suffixes = suffixes[:-1]
    if not suffixes or suffixes[-1] not in _READERS:
        known = ", ".join(sorted(_READERS))
        raise UnreadableInputError(
            f"cannot tell the format of {str(path)!r} from its name. "
            f"Use one of the endings {known} (optionally followed by .gz)."
        )
    return _READERS[suffixes[-1]]


def read_path(path: str | os.PathLike[str]) -> pl.DataFrame:
    """Read a CSV, TSV, Parquet or JSON-lines file (``.gz`` allowed) into a polars DataFrame.

    CSV fields are read with surrounding whitespace kept as in the file except that empty fields
    become null; no value is dropped. Raises :class:`FileNotFoundInputError` for a missing path and
    :class:`UnreadableInputError` for a file that does not parse.
    """
    p = Path(path)
    if not p.exists():
        raise FileNotFoundInputError(str(path))
    if p.is_dir():
        raise UnreadableInputError(f"{str(path)!r} is a folder; give the path of a data file.")
    fmt = _format_of(p)
    try:
        if fmt in ("csv", "tsv"):
            df = pl.read_csv(
                p,
                separator="\t" if fmt == "tsv" else ",",
                infer_schema_length=10_000,
                try_parse_dates=False,
            )
        elif fmt == "parquet":
            df = pl.read_parquet(p)
        else:
            df = pl.read_ndjson(p)
    except (pl.exceptions.PolarsError, OSError, ValueError) as err:
        first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        raise UnreadableInputError(
            f"cannot read {str(path)!r} as {fmt.upper()}: {first}. "
            "Check that the file is complete and of the format its name says."
        ) from None
    if fmt in ("csv", "tsv"):
        df = _strip_padding(df)
    return df


def _strip_padding(df: pl.DataFrame) -> pl.DataFrame:
    """Strip padded names and fields (", Male" in the UCI files) and re-type padded numbers."""
    df = df.rename({c: c.strip() for c in df.columns if c != c.strip()})
    text = [c for c, t in df.schema.items() if t == pl.String]
    if not text:
        return df
    df = df.with_columns(pl.col(text).str.strip_chars())
    retyped = []
    for c in text:
        for dtype in (pl.Int64, pl.Float64):
            try:
                retyped.append(df[c].cast(dtype, strict=True))
                break
            except pl.exceptions.PolarsError:
                continue
    return df.with_columns(retyped) if retyped else df


def as_narwhals(source: DataSource) -> nw.DataFrame[Any] | nw.LazyFrame[Any]:
    """Wrap a path or a native frame as a narwhals frame (eager or lazy, as given)."""
    if isinstance(source, (str, os.PathLike)):
        return nw.from_native(read_path(source), eager_only=True)
    if isinstance(source, (nw.DataFrame, nw.LazyFrame)):
        return source
    if isinstance(source, np.ndarray):
        raise UnreadableInputError(
            "a bare numpy array has no column names; wrap it first, e.g. "
            "polars.DataFrame(array, schema=['a', 'b', ...])."
        )
    if isinstance(source, Mapping):
        return nw.from_native(pl.DataFrame(dict(source)), eager_only=True)
    try:
        return nw.from_native(source)
    except TypeError:
        raise UnreadableInputError(
            f"cannot read an object of type {type(source).__name__}. Give a path (CSV, Parquet, "
            "JSON lines) or a pandas, polars or pyarrow table."
        ) from None


def is_lazy(frame: nw.DataFrame[Any] | nw.LazyFrame[Any]) -> bool:
    """True for a lazy frame (counted where it lives, never collected whole)."""
    return isinstance(frame, nw.LazyFrame)


def native_kind(source: DataSource) -> str:
    """A short human name of the input: the file name or the frame's type."""
    if isinstance(source, (str, os.PathLike)):
        return Path(source).name
    mod = type(source).__module__.split(".")[0]
    return f"{mod}.{type(source).__name__}"


def check_columns(
    frame: nw.DataFrame[Any] | nw.LazyFrame[Any], columns: Sequence[str] | str | None
) -> list[str]:
    """Return the requested column names, checked; all columns when ``columns`` is None.

    A comma-separated string is split (``"age,sex"``). Unknown names raise
    :class:`ColumnNotFoundError` listing the near matches; duplicates are an error too.
    """
    available = list(frame.collect_schema().names())
    if not available:
        raise EmptyTableError("the table has no columns.")
    if columns is None:
        return available
    if isinstance(columns, str):
        columns = [c.strip() for c in columns.split(",") if c.strip()]
    wanted = [str(c) for c in columns]
    if not wanted:
        raise ColumnNotFoundError("", available)
    for c in wanted:
        if c not in available:
            raise ColumnNotFoundError(c, available)
    seen: set[str] = set()
    for c in wanted:
        if c in seen:
            raise UnreadableInputError(f"column {c!r} is named twice; name each column once.")
        seen.add(c)
    return wanted


def like_input(
    original: DataSource,
    columns: Mapping[str, NDArray[Any] | Sequence[Any]],
) -> Any:
    """Return ``original`` with ``columns`` replaced or appended, as the caller's own frame type.

    Other columns and the row order are untouched. A path in gives a polars DataFrame out. This is
    the one place that decides the output type (like scikit-learn's ``set_output``).
    """
    frame = as_narwhals(original)
    if is_lazy(frame):
        raise UnreadableInputError(
            "a lazy frame cannot take new per-row columns; collect it first (e.g. .collect())."
        )
    assert isinstance(frame, nw.DataFrame)
    ns = nw.get_native_namespace(frame)
    new = []
    for name, values in columns.items():
        arr = np.asarray(values)
        if arr.shape[0] != len(frame):
            raise UnreadableInputError(
                f"internal: column {name!r} has {arr.shape[0]} values for {len(frame)} rows."
            )
        new.append(nw.new_series(name, arr, backend=ns))
    out = frame.with_columns(*new) if new else frame
    return out.to_native()
