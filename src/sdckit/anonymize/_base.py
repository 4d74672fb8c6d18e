"""What the anonymisation estimators share: the frame in and out, the record of changes."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Self

import narwhals as nw
import numpy as np
from numpy.typing import NDArray

from sdckit._estimator import Estimator, is_array_input
from sdckit._io import DataSource, as_narwhals, check_columns
from sdckit.anonymize._lazy import lazy_frame
from sdckit.errors import UnreadableInputError


class Anonymizer(Estimator):
    """Base of the anonymisation estimators: ``fit`` learns, ``transform`` applies, same frame out.

    Subclasses implement ``fit`` and ``transform``; ``changes_`` (set by ``fit``, on the fitted
    data) maps each column to ``{"cells_changed": ..., "values_merged": ...}`` and any counts the
    method adds (e.g. ``cells_suppressed``). A numpy array is read as columns ``x0, x1, ...`` (a
    NaN is a missing cell, kept missing) and comes back as a numpy array; ``n_features_in_``,
    ``feature_names_in_`` and ``transform``'s check of the columns against ``fit`` are scikit-learn's.
    """

    def _allow_nan(self) -> bool:
        return True  # a missing cell is data here: every method keeps it missing (or matches it)

    def __sklearn_tags__(self) -> Any:
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = True
        return tags

    def _frame_in(
        self, X: DataSource, columns: Sequence[str] | str | None, *, reset: bool
    ) -> tuple[nw.DataFrame[Any], list[str], bool]:
        """``(frame, names, was_array)``: X as an eager narwhals frame, its checked columns ``columns``
        (all when None), and whether it came as an array (see :meth:`Estimator._read_input`)."""
        source = X if is_array_input(X) else eager_frame(X)  # a path is read once
        native, was_array = self._read_input(source, reset=reset)
        frame, names = frame_columns(native, columns)
        return frame, names, was_array

    def _lazy_in(
        self, X: DataSource, columns: Sequence[str] | str | None, *, reset: bool
    ) -> tuple[nw.LazyFrame[Any], list[str]] | None:
        """``(frame, names)`` for a lazy frame (polars LazyFrame, DuckDB, Dask, Spark), checked as
        :meth:`_frame_in` checks an eager one; None for any other input."""
        lazy = lazy_frame(X)
        if lazy is None:
            return None
        frame, _ = self._read_input(lazy, reset=reset)
        frame = nw.from_native(frame) if not isinstance(frame, nw.LazyFrame) else frame
        return frame, check_columns(frame, columns)

    def fit_transform(self, X: DataSource, y: None = None) -> Any:
        """``fit(X).transform(X)``."""
        return self.fit(X).transform(X)

    def fit(self, X: DataSource, y: None = None) -> Self:  # pragma: no cover - overridden
        raise NotImplementedError

    def transform(self, X: DataSource) -> Any:  # pragma: no cover - overridden
        raise NotImplementedError


def eager_frame(data: DataSource) -> nw.DataFrame[Any]:
    """The narwhals eager frame of ``data`` (lazy frames are refused: rows change one by one)."""
    frame = as_narwhals(data)
    if isinstance(frame, nw.LazyFrame):
        raise UnreadableInputError(
            "anonymisation changes cells row by row and needs an eager table; collect the lazy frame "
            "first (e.g. .collect())."
        )
    return frame


def frame_columns(
    data: DataSource, columns: Sequence[str] | str | None
) -> tuple[nw.DataFrame[Any], list[str]]:
    """The eager frame and the checked column names (all columns when None)."""
    frame = eager_frame(data)
    return frame, check_columns(frame, columns)


def native_out(frame: nw.DataFrame[Any], replaced: Mapping[str, Any]) -> Any:
    """``frame`` with narwhals series or expressions ``replaced`` (by name), as the native frame."""
    if not replaced:
        return frame.to_native()
    return frame.with_columns(**replaced).to_native()


def with_nulls(frame: nw.DataFrame[Any], masks: Mapping[str, NDArray[np.bool_]]) -> Any:
    """Set the cells where ``masks[column]`` is true to missing (null), keeping each column's type."""
    native = frame.to_native()
    if type(native).__module__.split(".")[0] == "pandas":
        return _pandas_with_nulls(native, masks)
    ns = nw.get_native_namespace(frame)
    marks = {f"__sdckit_null_{i}": name for i, name in enumerate(masks)}
    helper = frame.with_columns(
        *[nw.new_series(m, np.asarray(masks[c], dtype=bool), backend=ns) for m, c in marks.items()]
    )
    replaced = {
        c: nw.when(nw.col(m)).then(nw.lit(None, dtype=frame.schema[c])).otherwise(nw.col(c))
        for m, c in marks.items()
    }
    out = helper.with_columns(**replaced).drop(list(marks))
    return out.to_native()


def _pandas_with_nulls(native: Any, masks: Mapping[str, NDArray[np.bool_]]) -> Any:
    """pandas: integer and boolean columns become their nullable types (numpy ints hold no missing)."""
    import pandas as pd  # lazy: an optional engine's library

    out = native.copy()
    for name, mask in masks.items():
        col = out[name]
        if not mask.any():
            continue
        if pd.api.types.is_integer_dtype(col.dtype) and not isinstance(col.dtype, pd.ArrowDtype):
            col = col.astype("Int64")
        elif pd.api.types.is_bool_dtype(col.dtype):
            col = col.astype("boolean")
        out[name] = col.mask(np.asarray(mask, dtype=bool))
    return out


def from_codes(
    frame: nw.DataFrame[Any], name: str, codes: NDArray[np.int64], values: Sequence[Any]
) -> nw.Series[Any]:
    """A series of column ``name``'s type whose row i holds ``values[codes[i]]`` (None = missing)."""
    ns = nw.get_native_namespace(frame)
    dtype = frame.schema[name]
    index = nw.new_series(name, np.asarray(codes, dtype=np.int64), backend=ns)
    return index.replace_strict(list(range(len(values))), list(values), return_dtype=dtype)


def text_values(series: nw.Series[Any]) -> NDArray[Any]:
    """A series as an object array of Python values (None for missing, NaN counted as missing)."""
    values = series.to_list()
    return np.array(
        [None if (v is None or (isinstance(v, float) and v != v)) else v for v in values], dtype=object
    )


def change_counts(before: NDArray[Any], after: NDArray[Any]) -> dict[str, int]:
    """``cells_changed`` (cells whose value differs, missing included) and ``values_merged``
    (distinct non-missing values before minus after) of one column."""
    b = np.asarray(before, dtype=object)
    a = np.asarray(after, dtype=object)
    changed = int(sum(1 for x, y in zip(b.tolist(), a.tolist(), strict=True) if not _same(x, y)))
    distinct_before = len({x for x in b.tolist() if x is not None})
    distinct_after = len({y for y in a.tolist() if y is not None})
    return {"cells_changed": changed, "values_merged": max(0, distinct_before - distinct_after)}


def _same(x: object, y: object) -> bool:
    if x is None or y is None:
        return x is None and y is None
    return bool(x == y)
