"""Column selection, the missing-value policy and numeric matrices."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

import narwhals as nw
import numpy as np
from numpy.typing import NDArray

from sdckit._io._formats import DEFAULT_NA, ReadOptions
from sdckit._io._frames import DataSource, as_narwhals, check_columns, is_lazy, native_kind
from sdckit._scale import collect_small
from sdckit.errors import (
    EmptyTableError,
    MissingValuesError,
    NonNumericColumnError,
    ParameterError,
    TooFewRowsError,
)

MissingPolicy = Literal["value", "drop", "error"]
"""How missing values (null, NaN) are treated: ``"value"`` keeps them as one more category (the
default for quasi-identifiers, where "unknown" is a value an attacker sees too; null and NaN are the
same category, NaN becoming null), ``"drop"`` removes the rows (reported in ``n_dropped``),
``"error"`` raises :class:`MissingValuesError`."""

_POLICIES = ("value", "drop", "error")


@dataclass(frozen=True)
class Data:
    """Validated input: a narwhals frame holding exactly the chosen columns.

    Attributes
    ----------
    frame : narwhals DataFrame or LazyFrame restricted to ``columns`` (lazy stays lazy).
    columns : the selected column names, in the order asked for.
    source : a short human name of the input (file name or frame type).
    n_dropped : rows removed by ``missing="drop"`` (0 otherwise; None for lazy frames, where
        counting would force a pass over the data).
    """

    frame: nw.DataFrame[Any] | nw.LazyFrame[Any]
    columns: tuple[str, ...]
    source: str
    n_dropped: int | None = 0

    @property
    def is_lazy(self) -> bool:
        """True when the rows live elsewhere (DuckDB, Dask, PySpark, polars LazyFrame)."""
        return is_lazy(self.frame)

    @property
    def n_rows(self) -> int:
        """Number of rows (forces a count on lazy frames)."""
        if isinstance(self.frame, nw.DataFrame):
            return len(self.frame)

        counted = collect_small(self.frame.select(nw.len()), what="the row count", limit=1)
        return int(counted.item(0, 0))


def _check_policy(missing: str) -> None:
    if missing not in _POLICIES:
        raise ParameterError(f"missing={missing!r} is not a policy; use one of {', '.join(map(repr, _POLICIES))}.")


def _missing_expr(frame: nw.DataFrame[Any] | nw.LazyFrame[Any], name: str, schema: Any = None) -> nw.Expr:
    dtype = (schema if schema is not None else frame.collect_schema())[name]  # one schema for many columns
    expr = nw.col(name).is_null()
    if dtype.is_float():
        expr = expr | nw.col(name).is_nan()
    return expr


def read_data(
    source: DataSource,
    columns: Sequence[str] | str | None = None,
    *,
    missing: MissingPolicy = "value",
    min_rows: int = 1,
    separator: str | None = None,
    encoding: str = "utf-8",
    decimal: str = ".",
    na_values: Sequence[str] = DEFAULT_NA,
    labels: str = "labels",
) -> Data:
    """Read and validate input for the algorithms.

    Parameters
    ----------
    source : a path or a frame (pandas, polars, pyarrow, or a lazy frame narwhals accepts). Paths:
        CSV, TSV, Parquet, JSON lines (``.gz`` allowed); with ``pip install 'sdckit[formats]'``
        also ``.xlsx``/``.ods``, SPSS ``.sav``, Stata ``.dta``, SAS ``.sas7bdat``/``.xpt`` (value
        labels as categories) and R ``.rds``/``.RData``.
    columns : names to keep, in order (a list or ``"a,b,c"``); None keeps all.
    missing : ``"value"`` (default) keeps null/NaN as a value, ``"drop"`` drops those rows and
        reports how many, ``"error"`` raises naming the column.
    min_rows : fewest rows accepted after the policy (checked on eager frames only).
    separator, encoding, decimal, na_values : how a text file is read (see
        :class:`~sdckit._io.ReadOptions`): the separator is sniffed when None; ``decimal=","``
        reads ``1,5`` as 1.5; the strings in ``na_values`` (default empty, ``NA``, ``NaN``) are
        missing.
    labels : for SPSS, Stata and SAS files: ``"labels"`` (default) shows a labelled variable's value
        labels (an unlabelled code stays a value, as its text), ``"codes"`` its codes; declared
        missing codes stay their code, never a blank.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "r.csv"
    >>> _ = path.write_text(chr(10).join(['"age";"income"', '30;"1,5"', 'NA;"2,25"']), encoding="latin-1")
    >>> d = read_data(path, decimal=",", encoding="latin-1")
    >>> d.frame["income"].to_list(), d.frame["age"].to_list()
    ([1.5, 2.25], [30, None])

    Raises
    ------
    FileNotFoundInputError, UnreadableInputError, ColumnNotFoundError, EmptyTableError,
    MissingValuesError, TooFewRowsError
    """
    _check_policy(missing)
    options = ReadOptions(separator=separator, encoding=encoding, decimal=decimal, na_values=tuple(na_values),
                          labels=labels)
    frame = as_narwhals(source, options)
    names = check_columns(frame, columns)
    frame = frame.select(*names)
    n_dropped: int | None = 0
    if missing == "value":  # null and NaN are the same one "missing" category, not two
        schema = frame.collect_schema()
        floats = [c for c in names if schema[c].is_float()]
        if floats:
            frame = frame.with_columns(*[nw.col(c).fill_nan(None) for c in floats])
    else:
        schema = frame.collect_schema()
        if isinstance(frame, nw.DataFrame):
            masks = frame.select(*[_missing_expr(frame, name, schema).alias(name) for name in names])
            for name in names:
                mask = masks[name].to_numpy()
                count = int(mask.sum())
                if count and missing == "error":
                    raise MissingValuesError(name, count, int(np.argmax(mask)))
            if missing == "drop":
                keep = ~nw.any_horizontal(*[_missing_expr(frame, c, schema) for c in names], ignore_nulls=True)
                before = len(frame)
                empty = [name for name in names if before and int(masks[name].to_numpy().sum()) == before]
                if empty:
                    raise EmptyTableError(
                        f"column {empty[0]!r} is missing in every one of the {before:,} rows, so dropping the rows with a "
                        "missing value leaves none; leave the column out, or check how the file was read (the strings "
                        "read as missing: na_values)."
                    )
                frame = frame.filter(keep)
                n_dropped = before - len(frame)
        else:
            keep = ~nw.any_horizontal(*[_missing_expr(frame, c, schema) for c in names], ignore_nulls=True)
            frame = frame.filter(keep)
            n_dropped = None
    if isinstance(frame, nw.DataFrame):
        n = len(frame)
        if n == 0:
            why = " after dropping rows with missing values" if n_dropped else ""
            raise EmptyTableError(f"the table has no rows{why}; there is nothing to measure.")
        if n < min_rows:
            raise TooFewRowsError(f"need at least {min_rows} rows; the table has {n}.")
    return Data(frame=frame, columns=tuple(names), source=native_kind(source), n_dropped=n_dropped)


def _first_non_numeric(values: NDArray[Any]) -> tuple[object, int | None]:
    for i, v in enumerate(values):
        if v is None:
            continue
        try:
            float(v)
        except (TypeError, ValueError):
            return (v.item() if isinstance(v, np.generic) else v), i
    return None, None


def check_numeric(
    source: DataSource | Data,
    columns: Sequence[str] | str | None = None,
    *,
    missing: Literal["drop", "error"] = "error",
    min_rows: int = 1,
) -> tuple[NDArray[np.float64], tuple[str, ...]]:
    """Return the chosen columns as a C-contiguous ``float64`` matrix of shape (n, p), and the names.

    Integer and boolean columns are converted; a text column whose every value parses as a number
    (e.g. a CSV column with thousands separators removed) is converted too; any other text raises
    :class:`NonNumericColumnError` naming the column and the first bad value. Missing values raise
    (default) or drop their rows (``missing="drop"``; use :func:`read_data` first to learn how many).
    Lazy frames are collected: numeric algorithms need the rows in memory.
    """
    if missing not in ("drop", "error"):
        raise ParameterError(
            f"missing={missing!r}: numeric algorithms take missing='error' or missing='drop'."
        )
    data = source if isinstance(source, Data) else read_data(source, columns, missing=missing)
    frame = data.frame
    if isinstance(frame, nw.LazyFrame):
        frame = collect_small(frame, what="the numeric columns", limit=None)  # counted in driver_rows()
    names = list(data.columns)
    if len(frame) == 0:
        raise EmptyTableError("the table has no rows; there is nothing to mask.")
    cols: list[NDArray[np.float64]] = []
    schema = frame.collect_schema()
    for name in names:
        dtype = schema[name]
        series = frame[name]
        if dtype.is_numeric() or dtype == nw.Boolean:
            arr = series.cast(nw.Float64).to_numpy()
        else:
            raw = series.to_numpy()
            try:
                arr = np.array([np.nan if v is None else float(v) for v in raw], dtype=np.float64)
            except (TypeError, ValueError):
                bad, row = _first_non_numeric(raw)
                raise NonNumericColumnError(name, bad, row) from None
        arr = np.asarray(arr, dtype=np.float64)
        if np.isinf(arr).any():
            row = int(np.argmax(np.isinf(arr)))
            raise NonNumericColumnError(name, float(arr[row]), row)
        cols.append(arr)
    matrix = np.ascontiguousarray(np.column_stack(cols)) if cols else np.empty((len(frame), 0))
    nan_rows = np.isnan(matrix).any(axis=1)
    if nan_rows.any():
        if missing == "error":
            j = int(np.argmax(np.isnan(matrix).any(axis=0)))
            col_nan = np.isnan(matrix[:, j])
            raise MissingValuesError(names[j], int(col_nan.sum()), int(np.argmax(col_nan)))
        matrix = np.ascontiguousarray(matrix[~nan_rows])
    if matrix.shape[0] < min_rows:
        raise TooFewRowsError(
            f"need at least {min_rows} rows; the table has {matrix.shape[0]} (n_samples = {matrix.shape[0]})."
        )
    return matrix, tuple(names)
