"""Global recoding: numeric columns into intervals, categorical columns by a mapping or a hierarchy."""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping
from typing import Any, Self

import narwhals as nw
import numpy as np

from sdckit._io import DataSource
from sdckit.anonymize._base import Anonymizer, _same, change_counts, native_out, text_values
from sdckit.anonymize._hierarchy import as_hierarchy
from sdckit.anonymize._lazy import (
    aggregate,
    changed,
    counted_quantile,
    distinct_values,
    dtype_of,
    holding_missing,
    lookup,
    n_distinct,
    present,
    value_counts,
)
from sdckit.errors import ColumnNotFoundError, InputError, NonNumericColumnError, ParameterError

_RULE_KEYS = {"breaks", "labels", "bins", "method", "mapping", "hierarchy", "level", "closed"}
_CLOSED = ("left", "right")


def _fmt(x: float) -> str:
    """A break at full precision (the shortest text that reads back as the same float): two
    different breaks never share a label (``1e+06`` and ``1000000.5`` stay apart)."""
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    x = float(x)
    return str(int(x)) if x.is_integer() and abs(x) < 2**63 else repr(x)


def interval_labels(breaks: list[float], *, closed_last: bool = False, closed: str = "left") -> list[str]:
    """Labels ``[a, b)`` of consecutive breaks (``closed="right"``: ``(a, b]``); with ``closed_last``
    the last is ``[a, b]``."""
    if closed == "right":
        return [f"({_fmt(a)}, {_fmt(b)}]" for a, b in itertools.pairwise(breaks)]
    out = [f"[{_fmt(a)}, {_fmt(b)})" for a, b in itertools.pairwise(breaks)]
    if closed_last and out:
        out[-1] = out[-1][:-1] + "]"
    return out


def _interval_of(
    x: float, breaks: list[float], labels: list[Any], closed_last: bool, column: str = "?", closed: str = "left"
) -> Any:
    b = breaks
    if closed == "right":  # sdcMicro's globalRecode (R's cut): (b_i, b_i+1], missing outside (b0, b_last]
        if x <= b[0] or x > b[-1]:
            return None
        return labels[int(np.searchsorted(b, x, side="left")) - 1]
    if closed_last and x == b[-1]:
        return labels[-1]
    if x < b[0] or x >= b[-1]:
        if labels and not isinstance(labels[0], str):
            raise InputError(
                f"column {column!r}: value {x:g} is outside the breaks [{_fmt(b[0])}, {_fmt(b[-1])}), which "
                "have numeric labels; add -inf and inf as the outer breaks (with a label each), or give "
                "text labels."
            )
        return f"(-inf, {_fmt(b[0])})" if x < b[0] else f"[{_fmt(b[-1])}, inf)"
    i = int(np.searchsorted(b, x, side="right")) - 1
    return labels[i]


def value_text(value: Any) -> str:
    """A value as a mapping key and as text in a recoded column: ``3`` and ``3.0`` -> ``"3"``, ``2.5`` -> ``"2.5"``."""
    if isinstance(value, (bool, np.bool_)):
        return str(value)
    if isinstance(value, (int, np.integer)):
        return str(int(value))
    if isinstance(value, (float, np.floating)):
        x = float(value)
        return str(int(x)) if math.isfinite(x) and x.is_integer() and abs(x) < 2**53 else repr(x)
    return str(value)


def _text_or_none(value: Any) -> Any:
    return None if value is None else value_text(value)


def _texts(values: Any) -> Any:
    return np.array([_text_or_none(v) for v in np.asarray(values, dtype=object).tolist()], dtype=object)


def _mapped(mapping: Mapping[str, Any], value: Any) -> Any:
    """The new value of ``value`` (a number matches its key as ``3`` or ``3.0``), else the value itself."""
    key = value_text(value)
    if key in mapping:
        return mapping[key]
    return mapping.get(str(value), value)


def as_one_type(values: list[Any]) -> list[Any]:
    """Recoded values of one type: when a mapping sends some values to text (``3 -> "3-8"``), the
    values it leaves become their text too (``1 -> "1"``), so the column is text, as its labels are."""
    present = [v for v in values if v is not None]
    if any(isinstance(v, str) for v in present) and not all(isinstance(v, str) for v in present):
        return [None if v is None else v if isinstance(v, str) else value_text(v) for v in values]
    return values


class GlobalRecoder(Anonymizer):
    """Global recoding: every cell of a column is replaced by its class (an interval or a group).

    Per column one rule (a JSON-able mapping):

    * ``{"breaks": [b0, b1, ...]}``: numbers into intervals ``[b_i, b_{i+1})``; values below b0
      become ``(-inf, b0)``, values at or above the last break ``[b_last, inf)``. With
      ``closed="right"`` (for the recoder, or ``"closed"`` in one rule) the intervals are
      ``(b_i, b_{i+1}]`` and a value outside ``(b0, b_last]`` becomes missing, as sdcMicro's
      ``globalRecode`` (R's ``cut``) classes them (counted in ``changes_`` as ``outside_breaks``); optional
      ``"labels"`` (one per interval ``[b_i, b_{i+1})``) replace the default text. Numeric labels
      (e.g. each interval's midpoint) keep the column numeric; then there are no outer intervals,
      so a value outside ``[b0, b_last)`` raises (use ``-inf`` and ``inf`` as the outer breaks);
    * ``{"bins": m, "method": "width" | "quantile"}``: m intervals of equal width, or holding
      about n / m values each (quantile breaks, repeated breaks merged), learned by ``fit``; the
      last interval is closed, ``[a, max]``;
    * ``{"mapping": {value: new_value}}``: listed values are merged into new ones, others kept;
    * ``{"hierarchy": h, "level": l}``: the label at level l of a hierarchy (a CSV path in ARX
      format, a built-in name such as ``"adult:age"``, a :class:`Hierarchy`, or a mapping
      ``{value: [level1, ...]}``); level 0 keeps the raw values.

    Recoding is a function of the cell alone, so it maps each column's value counts to value counts
    (the planner plans it from marginals) and missing cells stay missing. Recoded columns become
    text (interval or group labels) except under numeric labels or a mapping to numbers. A numpy
    array is read as columns ``x0, x1, ...`` (NaN a missing cell) and comes back as an array.

    A lazy frame (polars LazyFrame, DuckDB, Dask, Spark) is fitted from aggregates (a summary row,
    value counts for quantile bins and hierarchies) and recoded lazily: the same kind of frame
    comes back, its rows never collected (docs/scale.md).

    The output keeps the input's row order (scikit-learn's row alignment); shuffle the rows before
    publishing (``sdckit run`` and every CLI command that writes rows do), or the unchanged columns
    link each released row to its input row by position.

    Parameters
    ----------
    rules : ``{column: rule}`` as above; other columns are untouched.
    closed : ``"left"`` (default, ``[a, b)``) or ``"right"`` (``(a, b]``, sdcMicro's classes) for
        the ``breaks`` rules. Interval labels show the breaks at full precision.

    Attributes
    ----------
    columns_ : tuple of str, the recoded columns.
    rules_ : dict, per column the learned rule: ``{"breaks": [...], "labels": [...]}``,
        ``{"mapping": {...}}``, or for a hierarchy ``{"mapping": {...}, "hierarchy": name, "level": l}``
        (the mapping of the fitted values; ``transform`` recodes other values of the hierarchy by it
        and refuses values it lacks).
    changes_ : dict, per column ``{"cells_changed": int, "values_merged": int}`` on the fitted data
        (values merged: distinct values before minus after).

    See Also
    --------
    TopBottomCoder, LocalSuppressor, sdckit.plan.plan_release

    References
    ----------
    .. [1] Hundepool, A. et al. (2012). Statistical Disclosure Control. Wiley, §3.4.2 (global recoding).
    .. [2] Templ, M., Kowarik, A. and Meindl, B. (2015). Statistical disclosure control for
       micro-data using the R package sdcMicro. J. Stat. Softw. 67(4) (``globalRecode``, ``groupAndRename``).

    Examples
    --------
    >>> import polars as pl
    >>> df = pl.DataFrame({"age": [23, 37, 41, 68], "sex": ["f", "m", "m", "f"]})
    >>> rec = GlobalRecoder(rules={"age": {"breaks": [20, 40, 60]}}).fit(df)
    >>> rec.transform(df)["age"].to_list()
    ['[20, 40)', '[20, 40)', '[40, 60)', '[60, inf)']
    >>> rec.changes_["age"]
    {'cells_changed': 4, 'values_merged': 1}
    """

    def __init__(self, *, rules: Mapping[str, Mapping[str, Any]] | None = None, closed: str = "left") -> None:
        self.rules = rules
        self.closed = closed

    def fit(self, X: DataSource, y: None = None) -> Self:
        """Learn each column's rule (bins from the data) and record the changes on ``X``."""
        if not isinstance(self.rules, Mapping) or not self.rules:
            raise ParameterError(
                f"rules={self.rules!r}: GlobalRecoder needs rules {{column: rule}}, e.g. "
                "rules={'age': {'breaks': [0, 30, 50, 70]}}."
            )
        if self.closed not in _CLOSED:
            raise ParameterError(
                f"closed={self.closed!r}: use 'left' (intervals [a, b), the default) or 'right' ((a, b], sdcMicro's "
                "globalRecode)."
            )
        lazy = self._lazy_in(X, list(self.rules), reset=True)
        if lazy is not None:
            return self._fit_lazy(*lazy)
        frame, names, _ = self._frame_in(X, list(self.rules), reset=True)
        learned: dict[str, dict[str, Any]] = {}
        for name in names:
            rule = self.rules[name]
            learned[name] = _learn(name, rule, _SeriesStats(frame[name]), self._closed_of(name))
        self._set_rules(learned, names)
        changes: dict[str, dict[str, int]] = {}
        for name in names:
            before = text_values(frame[name])
            after = np.array(self._apply(name, before), dtype=object)
            if "mapping" in learned[name]:  # a value left as it was is not changed by becoming its text (1 -> "1")
                changes[name] = change_counts(_texts(before), _texts(after))
            else:
                changes[name] = change_counts(before, after)
            if learned[name].get("closed") == "right":
                changes[name]["outside_breaks"] = int(sum(a is None and b is not None for a, b in zip(after, before, strict=True)))
        self.changes_ = changes
        return self

    def _closed_of(self, name: str) -> str:
        assert self.rules is not None
        rule = self.rules[name]
        if not isinstance(rule, Mapping) or not rule or set(rule) - _RULE_KEYS:
            bad = sorted(set(rule) - _RULE_KEYS) if isinstance(rule, Mapping) else rule
            raise ParameterError(
                f"column {name!r}: rule {bad!r} is not understood; use breaks, bins (+ method), "
                "mapping, or hierarchy + level."
            )
        closed = str(rule.get("closed", self.closed))
        if closed not in _CLOSED:
            raise ParameterError(f"column {name!r}: closed={closed!r}; use 'left' or 'right'.")
        return closed

    def _set_rules(self, learned: dict[str, dict[str, Any]], names: list[str]) -> None:
        assert self.rules is not None
        # a hierarchy's values not in the fitted data are recoded by the hierarchy, never let through raw
        self._hierarchies = {
            name: (as_hierarchy(self.rules[name]["hierarchy"], name), int(learned[name]["level"]))
            for name in names
            if "hierarchy" in learned[name]
        }
        self.rules_ = learned
        self.columns_ = tuple(names)

    def _fit_lazy(self, frame: nw.LazyFrame[Any], names: list[str]) -> Self:
        """Fit on a lazy frame from aggregates (a summary row, value counts where quantiles or a
        hierarchy need them); ``changes_`` from one more aggregate row."""
        assert self.rules is not None
        schema = frame.collect_schema()
        stats = {name: _LazyStats(frame, name, schema[name]) for name in names}
        learned = {name: _learn(name, self.rules[name], stats[name], self._closed_of(name)) for name in names}
        self._set_rules(learned, names)
        exprs: list[nw.Expr] = []
        merged: dict[str, int] = {}
        for j, name in enumerate(names):
            dtype = schema[name]
            before = present(name, dtype)
            if "mapping" in learned[name]:
                # mapped value by value: the changes follow from the distinct values, compared as in memory
                old = stats[name].distinct()
                new = self._apply(name, old)
                moved = [o for o, v in zip(old, new, strict=True) if not _same(_text_or_none(o), _text_or_none(v))]
                merged[name] = max(0, len(old) - len({v for v in new if v is not None}))
                hit = before.is_in(moved).fill_null(False) if moved else before.is_null() & ~before.is_null()
                exprs.append(hit.cast(nw.Int64).sum().alias(f"__sdckit{j}_changed"))
                continue
            after, out_dtype = self._expr(frame, name, dtype)
            comparable = out_dtype.is_numeric() == dtype.is_numeric()
            exprs += [
                changed(before, after, comparable).sum().alias(f"__sdckit{j}_changed"),
                n_distinct(before).alias(f"__sdckit{j}_before"),
                n_distinct(after).alias(f"__sdckit{j}_after"),
            ]
            if learned[name].get("closed") == "right":
                exprs.append((after.is_null() & ~before.is_null()).cast(nw.Int64).sum().alias(f"__sdckit{j}_outside"))
        row = aggregate(frame, exprs, what="the cells the recoding changes")
        self.changes_ = {}
        for j, name in enumerate(names):
            if name in merged:
                values_merged = merged[name]
            else:
                values_merged = max(0, int(row[f"__sdckit{j}_before"]) - int(row[f"__sdckit{j}_after"]))
            self.changes_[name] = {"cells_changed": int(row[f"__sdckit{j}_changed"] or 0), "values_merged": values_merged}
            if f"__sdckit{j}_outside" in row:
                self.changes_[name]["outside_breaks"] = int(row[f"__sdckit{j}_outside"] or 0)
        return self

    def _expr(
        self, frame: nw.LazyFrame[Any], name: str, dtype: Any, distinct: list[Any] | None = None
    ) -> tuple[nw.Expr, Any]:
        """The recoded column ``name`` as a narwhals expression, and its dtype.

        Intervals are a ``when``/``then`` chain over the breaks (no pass over the data; numeric
        labels check the range with one aggregate row, as in memory a value outside raises);
        mappings and hierarchies map the column's distinct values (one ``group_by``) by the
        in-memory rule, then ``replace_strict``."""
        rule = self.rules_[name]
        x = present(name, dtype)
        if "mapping" in rule:
            old = distinct if distinct is not None else distinct_values(frame, name, dtype)
            new = self._apply(name, old)
            out_dtype = dtype_of(new, dtype)
            if out_dtype == nw.String:
                new = [None if v is None else value_text(v) for v in new]
            out_dtype = holding_missing(frame, out_dtype)
            return lookup(x, old, new, out_dtype).alias(name), out_dtype
        breaks, labels, closed_last = rule["breaks"], rule["labels"], rule["closed_last"]
        out_dtype = holding_missing(frame, dtype_of(labels, dtype))
        none = nw.lit(None, dtype=out_dtype)
        lit = [nw.lit(lab, dtype=out_dtype) for lab in labels]
        if rule.get("closed", "left") == "right":
            chain = nw.when(x.is_null() | (x <= breaks[0]) | (x > breaks[-1])).then(none)
            for i, b in enumerate(breaks[1:]):
                chain = chain.when(x <= b).then(lit[i])
            return chain.otherwise(none).alias(name), out_dtype
        if out_dtype != nw.String:
            self._check_range(frame, name, dtype, breaks, labels, closed_last)
            low = high = none
        else:
            low = nw.lit(f"(-inf, {_fmt(breaks[0])})", dtype=out_dtype)
            high = nw.lit(f"[{_fmt(breaks[-1])}, inf)", dtype=out_dtype)
        chain = nw.when(x.is_null()).then(none).when(x < breaks[0]).then(low)
        if closed_last:
            chain = chain.when(x == breaks[-1]).then(lit[-1])
        chain = chain.when(x >= breaks[-1]).then(high)
        for i, b in enumerate(breaks[1:]):
            chain = chain.when(x < b).then(lit[i])
        return chain.otherwise(none).alias(name), out_dtype

    def _check_range(
        self, frame: nw.LazyFrame[Any], name: str, dtype: Any, breaks: list[float], labels: list[Any], closed_last: bool
    ) -> None:
        """Numeric labels have no outer intervals: raise, as in memory, on a value outside the breaks."""
        x = present(name, dtype)
        row = aggregate(frame, [x.min().alias("lo"), x.max().alias("hi")], what=f"the range of {name!r}")
        for v in (row["lo"], row["hi"]):
            if v is not None:
                _interval_of(float(v), breaks, labels, closed_last, name)

    def _apply(self, name: str, values: Any) -> list[Any]:
        rule = self.rules_[name]
        if "hierarchy" in rule:
            h, level = self._hierarchies[name]
            mapping = rule["mapping"]
            return [
                None if v is None else mapping[str(v)] if str(v) in mapping else h.label(v, level, name)
                for v in values
            ]
        if "mapping" in rule:
            mapping = rule["mapping"]
            return as_one_type([None if v is None else _mapped(mapping, v) for v in values])
        breaks, labels, closed_last = rule["breaks"], rule["labels"], rule["closed_last"]
        side = rule.get("closed", "left")
        return [None if v is None else _interval_of(float(v), breaks, labels, closed_last, name, side) for v in values]

    def transform(self, X: DataSource) -> Any:
        """Recode the fitted columns of ``X``; other columns and the row order are untouched."""
        self.check_is_fitted("rules_")
        lazy = self._lazy_in(X, list(self.columns_), reset=False)
        if lazy is not None:  # the same kind of frame, still lazy
            lf = lazy[0]
            schema = lf.collect_schema()
            return lf.with_columns(*[self._expr(lf, name, schema[name])[0] for name in self.columns_]).to_native()
        frame, _, was_array = self._frame_in(X, list(self.columns_), reset=False)
        ns = nw.get_native_namespace(frame)
        replaced = {}
        for name in self.columns_:
            new = self._apply(name, text_values(frame[name]))
            if all(v is None or isinstance(v, str) for v in new):
                replaced[name] = nw.new_series(name, np.array(new, dtype=object), dtype=nw.String, backend=ns)
            else:
                replaced[name] = nw.new_series(name, new, backend=ns)
        return self._write_output(native_out(frame, replaced), was_array)


class _SeriesStats:
    """What ``_learn`` reads of an in-memory column."""

    def __init__(self, series: Any) -> None:
        self.series = series
        self.numeric = bool(series.dtype.is_numeric())

    def example(self) -> Any:
        return next((v for v in self.series.drop_nulls().to_list()), None)

    def distinct(self) -> list[Any]:
        return list({v for v in text_values(self.series).tolist() if v is not None})

    def floats(self) -> Any:
        x = np.asarray(self.series.cast(nw.Float64).drop_nulls().to_numpy(), dtype=np.float64)
        return x[~np.isnan(x)]

    def size(self) -> int:
        return int(self.floats().size)

    def min_max(self) -> tuple[float, float]:
        x = self.floats()
        return float(x.min()), float(x.max())

    def quantiles(self, qs: Any) -> Any:
        return np.quantile(self.floats(), qs)


class _LazyStats:
    """What ``_learn`` reads of a lazy column: one aggregate row, or the value counts."""

    def __init__(self, frame: nw.LazyFrame[Any], name: str, dtype: Any) -> None:
        self.frame, self.name, self.dtype = frame, name, dtype
        self.numeric = bool(dtype.is_numeric())
        self.distinct_cached: list[Any] | None = None
        self._counts: tuple[list[Any], Any] | None = None
        self._summary: dict[str, Any] | None = None

    def example(self) -> Any:
        return aggregate(self.frame, [nw.col(self.name).min().alias("v")], what=f"a value of {self.name!r}")["v"]

    def counts(self) -> tuple[list[Any], Any]:
        if self._counts is None:
            self._counts = value_counts(self.frame, self.name, self.dtype)
            self.distinct_cached = self._counts[0]
        return self._counts

    def distinct(self) -> list[Any]:
        return self.counts()[0]

    def summary(self) -> dict[str, Any]:
        if self._summary is None:
            x = present(self.name, self.dtype)
            self._summary = aggregate(
                self.frame,
                [x.count().alias("n"), x.min().alias("lo"), x.max().alias("hi")],
                what=f"the range of {self.name!r}",
            )
        return self._summary

    def size(self) -> int:
        return int(self.summary()["n"] or 0)

    def min_max(self) -> tuple[float, float]:
        s = self.summary()
        return float(s["lo"]), float(s["hi"])

    def quantiles(self, qs: Any) -> Any:
        values, counts = self.counts()
        return np.array([counted_quantile(values, counts, float(q)) for q in qs], dtype=np.float64)


def _learn(name: str, rule: Mapping[str, Any], stats: _SeriesStats | _LazyStats, closed: str = "left") -> dict[str, Any]:
    if "mapping" in rule:
        mapping = rule["mapping"]
        if not isinstance(mapping, Mapping):
            raise ParameterError(f"column {name!r}: mapping must be {{value: new_value}}, got {mapping!r}.")
        return {"mapping": {value_text(k): v for k, v in mapping.items()}}
    if "hierarchy" in rule:
        h = as_hierarchy(rule["hierarchy"], name)
        level = h.check_level(rule.get("level", 1), name)
        table = {}
        for v in stats.distinct():
            table[str(v)] = h.label(v, level, name)
        return {"mapping": table, "hierarchy": h.name, "level": level}
    if not stats.numeric:
        raise NonNumericColumnError(name, stats.example())
    if "breaks" in rule:
        try:
            breaks = sorted({float(b) for b in rule["breaks"]})
        except (TypeError, ValueError):
            raise ParameterError(
                f"column {name!r}: breaks must be numbers, got {rule['breaks']!r}."
            ) from None
        if len(breaks) < 2 and "labels" in rule:
            raise ParameterError(f"column {name!r}: labels need at least two breaks.")
        if not breaks:
            raise ParameterError(f"column {name!r}: give at least one break, e.g. breaks=[0, 30, 60].")
        if closed == "right" and len(breaks) < 2:
            raise ParameterError(
                f"column {name!r}: closed='right' needs at least two breaks (the classes are (b0, b1], ...; a value "
                "outside (b0, b_last] becomes missing), e.g. breaks=[0, 30, 60]."
            )
        labels: list[Any] = interval_labels(breaks, closed=closed)
        if "labels" in rule:
            given = _labels(name, rule["labels"])
            if len(given) != len(labels):
                raise ParameterError(
                    f"column {name!r}: {len(given)} labels for {len(labels)} intervals; give one label per "
                    "pair of consecutive breaks."
                )
            labels = given
        return {"breaks": breaks, "labels": labels, "closed_last": False, "closed": closed}
    if "bins" in rule:
        m = rule["bins"]
        method = rule.get("method", "width")
        if isinstance(m, bool) or not isinstance(m, int) or m < 1:
            raise ParameterError(f"column {name!r}: bins={m!r}; give a whole number of intervals >= 1.")
        if method not in ("width", "quantile"):
            raise ParameterError(f"column {name!r}: method={method!r}; use 'width' or 'quantile'.")
        if stats.size() == 0:
            raise ParameterError(f"column {name!r} has no values to learn bins from.")
        if method == "width":
            edges = np.linspace(*stats.min_max(), m + 1)
        elif method == "quantile":
            edges = stats.quantiles(np.linspace(0, 1, m + 1))
        else:
            raise ParameterError(f"column {name!r}: method={method!r}; use 'width' or 'quantile'.")
        breaks = sorted({float(e) for e in edges})
        if len(breaks) == 1:
            breaks = [breaks[0], breaks[0]]
            return {
                "breaks": breaks,
                "labels": [f"[{_fmt(breaks[0])}, {_fmt(breaks[0])}]"],
                "closed_last": True,
            }
        return {"breaks": breaks, "labels": interval_labels(breaks, closed_last=True), "closed_last": True}
    raise ParameterError(f"column {name!r}: a rule needs breaks, bins, mapping or hierarchy.")


def _labels(name: str, given: Any) -> list[Any]:
    """Interval labels as given: all numbers (the column stays numeric) or text."""
    if isinstance(given, (str, bytes)) or not isinstance(given, (list, tuple)):
        raise ParameterError(f"column {name!r}: labels={given!r}; give a list, one label per interval.")
    if given and all(_is_number(v) for v in given):  # one numeric type, so the column has one dtype
        if all(isinstance(v, (int, np.integer)) for v in given):
            return [int(v) for v in given]
        return [float(v) for v in given]
    return [str(v) for v in given]


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, (bool, np.bool_))


def recode(data: DataSource, rules: Mapping[str, Mapping[str, Any]]) -> Any:
    """Recode ``data`` by ``rules`` (see :class:`GlobalRecoder`); same frame type out.

    Examples
    --------
    >>> import polars as pl
    >>> recode(pl.DataFrame({"c": ["Cuba", "Peru", "Japan"]}),
    ...        {"c": {"hierarchy": "adult:native-country", "level": 2}})["c"].to_list()
    ['Americas', 'Americas', 'Asia']
    """
    if not isinstance(rules, Mapping):
        raise ParameterError(f"rules={rules!r}: give {{column: rule}}, e.g. {{'age': {{'bins': 5}}}}.")
    for c in rules:
        if not isinstance(c, str):
            raise ColumnNotFoundError(str(c), [])
    return GlobalRecoder(rules=rules).fit_transform(data)
