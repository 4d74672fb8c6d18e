"""Top and bottom coding: values beyond a threshold become the threshold (or a label)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Self

import narwhals as nw
import numpy as np

from sdckit._io import DataSource
from sdckit.anonymize._base import Anonymizer, change_counts, native_out, text_values
from sdckit.anonymize._lazy import aggregate, counted_quantile, n_distinct, present, value_counts
from sdckit.errors import NonNumericColumnError, ParameterError

Threshold = float | Mapping[str, float] | None


def _per_column(value: Any, name: str, what: str) -> float | None:
    if value is None:
        return None
    if isinstance(value, Mapping):
        value = value.get(name)
        if value is None:
            return None
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise ParameterError(f"column {name!r}: {what}={value!r} must be a number.")
    if not np.isfinite(value):
        raise ParameterError(f"column {name!r}: {what}={value!r} must be finite.")
    return float(value)


class TopBottomCoder(Anonymizer):
    """Top and bottom coding: x > top becomes ``top_value`` (default top), x < bottom ``bottom_value``.

    Thresholds are numbers (one for all columns, or ``{column: number}``) or quantiles of the
    fitted data (``top_quantile=0.99``: the 99th percentile, numpy's linear interpolation). Values
    at the threshold are kept. With a text ``top_value`` (e.g. ``">= 100000"``) the column becomes
    text. Missing cells stay missing. A lazy frame (polars LazyFrame, DuckDB, Dask, Spark) is fitted
    from aggregates (value counts for quantiles; the quantiles are exact) and coded lazily: the same
    kind of frame comes back (docs/scale.md).

    The output keeps the input's row order (scikit-learn's row alignment); shuffle the rows before
    publishing (``sdckit run`` and every CLI command that writes rows do), or the unchanged columns
    link each released row to its input row by position.

    Parameters
    ----------
    columns : the numeric columns to code (default: those named in ``top``/``bottom`` mappings,
        else every numeric column; a table without one raises).
    top, bottom : thresholds (number or ``{column: number}``).
    top_quantile, bottom_quantile : thresholds as quantiles (0..1) of each column, learned by ``fit``.
    top_value, bottom_value : replacement (default: the threshold itself).

    Attributes
    ----------
    columns_ : tuple of str, the coded columns.
    thresholds_ : dict, per column ``(bottom, top)`` (None where not coded).
    changes_ : dict, per column ``{"cells_changed", "values_merged", "n_top", "n_bottom"}``.

    References
    ----------
    .. [1] Hundepool, A. et al. (2012). Statistical Disclosure Control. Wiley, §3.4.3.

    Examples
    --------
    >>> import polars as pl
    >>> df = pl.DataFrame({"income": [10, 20, 30, 900]})
    >>> TopBottomCoder(top=100).fit_transform(df)["income"].to_list()
    [10, 20, 30, 100]
    """

    def __init__(
        self,
        *,
        columns: Sequence[str] | None = None,
        top: Threshold = None,
        bottom: Threshold = None,
        top_quantile: float | None = None,
        bottom_quantile: float | None = None,
        top_value: float | str | None = None,
        bottom_value: float | str | None = None,
    ) -> None:
        self.columns = columns
        self.top = top
        self.bottom = bottom
        self.top_quantile = top_quantile
        self.bottom_quantile = bottom_quantile
        self.top_value = top_value
        self.bottom_value = bottom_value

    def fit(self, X: DataSource, y: None = None) -> Self:
        """Learn the thresholds of each column and record the changes on ``X``."""
        if self.top is not None and self.top_quantile is not None:
            raise ParameterError("give top or top_quantile, not both.")
        if self.bottom is not None and self.bottom_quantile is not None:
            raise ParameterError("give bottom or bottom_quantile, not both.")
        if all(v is None for v in (self.top, self.bottom, self.top_quantile, self.bottom_quantile)):
            raise ParameterError(
                "TopBottomCoder needs a threshold: top, bottom, top_quantile or bottom_quantile."
            )
        for q, what in ((self.top_quantile, "top_quantile"), (self.bottom_quantile, "bottom_quantile")):
            if q is not None and (isinstance(q, bool) or not isinstance(q, (int, float)) or not 0 <= q <= 1):
                raise ParameterError(f"{what}={q!r} must be a share between 0 and 1, e.g. 0.99.")
        columns = self.columns
        if columns is None:
            named = [c for t in (self.top, self.bottom) if isinstance(t, Mapping) for c in t]
            columns = list(dict.fromkeys(named)) or None
        lazy = self._lazy_in(X, columns, reset=True)
        if lazy is not None:
            return self._fit_lazy(lazy[0], lazy[1], columns is None)
        frame, names, _ = self._frame_in(X, columns, reset=True)
        if columns is None:  # every numeric column (a text column cannot be top coded)
            names = self._numeric_only(frame.schema, names)
        self._check_stray(names)
        thresholds: dict[str, tuple[float | None, float | None]] = {}
        for name in names:
            s = frame[name]
            if not s.dtype.is_numeric():
                raise NonNumericColumnError(name, next(iter(s.drop_nulls().to_list()), None))
            x = np.asarray(s.cast(nw.Float64).drop_nulls().to_numpy(), dtype=np.float64)
            x = x[~np.isnan(x)]
            thresholds[name] = self._thresholds(name, x.size, lambda q, x=x: float(np.quantile(x, q)))
        self.thresholds_ = thresholds
        self.columns_ = tuple(names)
        self.changes_ = {}
        for name in names:
            before = text_values(frame[name])
            after, n_top, n_bottom = self._apply(name, before)
            self.changes_[name] = change_counts(before, np.array(after, dtype=object)) | {
                "n_top": n_top,
                "n_bottom": n_bottom,
            }
        return self

    def _numeric_only(self, schema: Any, names: list[str]) -> list[str]:
        numeric = [c for c in names if schema[c].is_numeric()]
        if not numeric:
            shown = ", ".join(f"{c!r} ({schema[c]})" for c in list(schema)[:6])
            raise ParameterError(
                f"TopBottomCoder found no numeric column to code among {shown}; convert the columns "
                "to numbers first (e.g. polars .cast(pl.Float64)), or name numeric ones with columns=[...]."
            )
        return numeric

    def _check_stray(self, names: list[str]) -> None:
        for t, what in ((self.top, "top"), (self.bottom, "bottom")):
            stray = [c for c in t if c not in names] if isinstance(t, Mapping) else []
            if stray:
                raise ParameterError(
                    f"{what} gives a threshold for column {stray[0]!r}, which is not among the coded "
                    f"columns {names}; add it to columns=[...] or drop it from {what}."
                )

    def _thresholds(self, name: str, size: int, quantile: Any) -> tuple[float | None, float | None]:
        """(bottom, top) of one column; ``quantile(q)`` the q-quantile of its ``size`` values."""
        hi = _per_column(self.top, name, "top")
        lo = _per_column(self.bottom, name, "bottom")
        if self.top_quantile is not None and size:
            hi = quantile(self.top_quantile)
        if self.bottom_quantile is not None and size:
            lo = quantile(self.bottom_quantile)
        if hi is not None and lo is not None and lo > hi:
            raise ParameterError(f"column {name!r}: bottom {lo:g} is above top {hi:g}.")
        return lo, hi

    def _fit_lazy(self, frame: nw.LazyFrame[Any], names: list[str], every_numeric: bool) -> Self:
        """Fit on a lazy frame: thresholds from the value counts (quantiles only), ``changes_`` from
        one aggregate row."""
        schema = frame.collect_schema()
        if every_numeric:
            names = self._numeric_only(schema, names)
        self._check_stray(names)
        thresholds: dict[str, tuple[float | None, float | None]] = {}
        for name in names:
            if not schema[name].is_numeric():
                example = aggregate(frame, [nw.col(name).min().alias("v")], what=f"a value of {name!r}")["v"]
                raise NonNumericColumnError(name, example)
            if self.top_quantile is None and self.bottom_quantile is None:
                thresholds[name] = self._thresholds(name, 0, None)
                continue
            values, counts = value_counts(frame, name, schema[name])
            thresholds[name] = self._thresholds(
                name, int(counts.sum()), lambda q, v=values, c=counts: counted_quantile(v, c, q)
            )
        self.thresholds_ = thresholds
        self.columns_ = tuple(names)
        exprs: list[nw.Expr] = []
        for j, name in enumerate(names):
            dtype = schema[name]
            lo, hi = thresholds[name]
            x = present(name, dtype)
            after, _ = self._expr(name, dtype)
            top = (x > hi).fill_null(False) if hi is not None else x.is_null() & ~x.is_null()
            bottom = (x < lo).fill_null(False) & ~top if lo is not None else x.is_null() & ~x.is_null()
            integer = dtype.is_integer()
            differs = []  # a coded cell changes unless its replacement is its own value
            for mask, value, t in ((top, self.top_value, hi), (bottom, self.bottom_value, lo)):
                if t is not None:
                    r = self._replacement(value, t, integer)
                    differs.append(mask if isinstance(r, str) else mask & (x != r).fill_null(False))
            cells = (differs[0] | differs[1]) if len(differs) == 2 else differs[0]
            exprs += [
                cells.cast(nw.Int64).sum().alias(f"__sdckit{j}_changed"),
                n_distinct(x).alias(f"__sdckit{j}_before"),
                n_distinct(after).alias(f"__sdckit{j}_after"),
                top.cast(nw.Int64).sum().alias(f"__sdckit{j}_top"),
                bottom.cast(nw.Int64).sum().alias(f"__sdckit{j}_bottom"),
            ]
        row = aggregate(frame, exprs, what="the cells top and bottom coding change") if exprs else {}
        self.changes_ = {
            name: {
                "cells_changed": int(row[f"__sdckit{j}_changed"] or 0),
                "values_merged": max(0, int(row[f"__sdckit{j}_before"]) - int(row[f"__sdckit{j}_after"])),
                "n_top": int(row[f"__sdckit{j}_top"] or 0),
                "n_bottom": int(row[f"__sdckit{j}_bottom"] or 0),
            }
            for j, name in enumerate(names)
        }
        return self

    def _expr(self, name: str, dtype: Any) -> tuple[nw.Expr, Any]:
        """The coded column as a narwhals expression (``when``/``then``) and its dtype.

        Text replacements make the column text whether or not a cell is coded (in memory, only
        when one is); a fractional threshold makes an integer column float."""
        lo, hi = self.thresholds_[name]
        integer = dtype.is_integer()
        coded = [  # (threshold, is the top one, replacement)
            (t, is_top, self._replacement(value, t, integer))
            for t, is_top, value in ((hi, True, self.top_value), (lo, False, self.bottom_value))
            if t is not None
        ]
        if any(isinstance(r, str) for _, _, r in coded):
            out_dtype: Any = nw.String
        elif dtype.is_float() or any(isinstance(r, float) for _, _, r in coded):
            out_dtype = dtype if dtype.is_float() else nw.Float64
        else:
            out_dtype = dtype
        x = present(name, dtype)
        chain: Any = None
        for t, is_top, r in coded:
            cond = x > t if is_top else x < t
            value = nw.lit(str(r) if out_dtype == nw.String else r, dtype=out_dtype)
            chain = nw.when(cond).then(value) if chain is None else chain.when(cond).then(value)
        base = x.cast(out_dtype) if out_dtype != dtype else x
        if chain is None:
            return base.alias(name), out_dtype
        return chain.otherwise(base).alias(name), out_dtype

    def _replacement(self, value: float | str | None, threshold: float, integer: bool) -> Any:
        if value is not None:
            return value
        return int(threshold) if integer and float(threshold).is_integer() else threshold

    def _apply(self, name: str, values: Any) -> tuple[list[Any], int, int]:
        lo, hi = self.thresholds_[name]
        integer = all(isinstance(v, (int, np.integer)) for v in values if v is not None)
        out: list[Any] = []
        n_top = n_bottom = 0
        for v in values:
            if v is not None and hi is not None and v > hi:
                out.append(self._replacement(self.top_value, hi, integer))
                n_top += 1
            elif v is not None and lo is not None and v < lo:
                out.append(self._replacement(self.bottom_value, lo, integer))
                n_bottom += 1
            else:
                out.append(v)
        return out, n_top, n_bottom

    def transform(self, X: DataSource) -> Any:
        """Code the fitted columns of ``X``; other columns untouched."""
        self.check_is_fitted("thresholds_")
        lazy = self._lazy_in(X, list(self.columns_), reset=False)
        if lazy is not None:  # the same kind of frame, still lazy
            lf = lazy[0]
            schema = lf.collect_schema()
            return lf.with_columns(*[self._expr(name, schema[name])[0] for name in self.columns_]).to_native()
        frame, _, was_array = self._frame_in(X, list(self.columns_), reset=False)
        ns = nw.get_native_namespace(frame)
        replaced = {}
        for name in self.columns_:
            new, _, _ = self._apply(name, text_values(frame[name]))
            if any(isinstance(v, str) for v in new):
                text = np.array([None if v is None else str(v) for v in new], dtype=object)
                replaced[name] = nw.new_series(name, text, dtype=nw.String, backend=ns)
            else:
                dtype = frame.schema[name] if not any(isinstance(v, float) for v in new) else nw.Float64
                if frame.schema[name].is_float():
                    dtype = frame.schema[name]
                replaced[name] = nw.new_series(name, new, dtype=dtype, backend=ns)
        return self._write_output(native_out(frame, replaced), was_array)
