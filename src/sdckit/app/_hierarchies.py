"""Hierarchies built in the workbench: interval hierarchies (by breaks, or by quantiles) and grouping
hierarchies (categories merged under a label), saved and loaded in ARX's format (one row per value,
one column per level, ``;`` between fields, no header; :class:`sdckit.anonymize.Hierarchy`).

Every hierarchy ends in the level ``*`` (the column withheld), so the planner can always choose
between releasing a column at some level and withholding it. A hierarchy goes into a recode step
(and the exported pipeline file) as the mapping ``{value: [level 1, level 2, ...]}``, so the file is
self-contained. Errors are :class:`~sdckit.errors.ConfigError` lines naming the column, the value
and the fix.
"""

from __future__ import annotations

import csv
import io
import itertools
import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from sdckit.anonymize._hierarchy import Hierarchy
from sdckit.errors import ConfigError, SdcError

__all__ = [
    "grouping_hierarchy",
    "hierarchy_csv",
    "hierarchy_from_csv",
    "interval_hierarchy",
    "parse_breaks",
    "parse_groups",
    "quantile_breaks",
]

SOURCE = "the workbench: hierarchies"
TOP = "*"


def _text(value: Any) -> str:
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value).strip()


def _num(text: str) -> str:
    x = float(text)
    return str(int(x)) if x.is_integer() else f"{x:g}"


def parse_breaks(column: str, text: str) -> list[list[float]]:
    """Breaks per level, a level per ``;`` (``0, 20, 40, 120; 0, 40, 120``), each increasing."""
    levels: list[list[float]] = []
    for i, part in enumerate(p for p in text.split(";") if p.strip()):
        try:
            breaks = [float(b) for b in part.replace(" ", "").split(",") if b]
        except ValueError:
            raise ConfigError(f"{SOURCE}: column {column!r}: breaks {part.strip()!r} are not numbers; write e.g. "
                              "0, 20, 40, 120 (a level per ;).") from None
        if len(breaks) < 2 or any(b2 <= b1 for b1, b2 in itertools.pairwise(breaks)):
            raise ConfigError(f"{SOURCE}: column {column!r}: level {i + 1}: breaks {part.strip()!r} must be at least two "
                              "increasing numbers, e.g. 0, 20, 40, 120.")
        levels.append(breaks)
    if not levels:
        raise ConfigError(f"{SOURCE}: column {column!r}: no breaks given; write e.g. 0, 20, 40, 120 (a level per ;).")
    return levels


def quantile_breaks(column: str, values: Sequence[Any], groups: int) -> list[list[float]]:
    """Breaks at the quantiles of ``values``: ``groups`` classes, then half as many, ... down to 2."""
    x = np.asarray([float(v) for v in values if v is not None and not (isinstance(v, float) and math.isnan(v))])
    if x.size == 0:
        raise ConfigError(f"{SOURCE}: column {column!r} has no numbers to take quantiles of; choose a numeric column.")
    if groups < 2:
        raise ConfigError(f"{SOURCE}: column {column!r}: quantiles {groups}: give 2 or more classes.")
    levels: list[list[float]] = []
    n = groups
    while n >= 2:
        qs = np.quantile(x, np.linspace(0, 1, n + 1))
        breaks = sorted({float(q) for q in qs[1:-1]} | {float(x.min()), float(x.max()) + 1})
        if not levels or breaks != levels[-1]:
            levels.append(breaks)
        n //= 2
    return levels


def _interval_label(v: float, breaks: Sequence[float]) -> str | None:
    for a, b in itertools.pairwise(breaks):
        if a <= v < b:
            return f"[{_num(str(a))}, {_num(str(b))})"
    return None


def interval_hierarchy(column: str, values: Sequence[Any], levels: Sequence[Sequence[float]]) -> Hierarchy:
    """One row per distinct value: its interval ``[a, b)`` at each level of breaks, then ``*``."""
    rows = []
    distinct = sorted({float(v) for v in values if v is not None})
    for v in distinct:
        row = [_text(v)]
        for i, breaks in enumerate(levels):
            label = _interval_label(v, breaks)
            if label is None:
                raise ConfigError(f"{SOURCE}: column {column!r}: value {_text(v)} is outside the breaks of level {i + 1} "
                                  f"({_num(str(breaks[0]))} to {_num(str(breaks[-1]))}); widen the first or last break.")
            row.append(label)
        row.append(TOP)
        rows.append(row)
    return _rows(column, rows)


def parse_groups(column: str, text: str) -> dict[str, list[str]]:
    """``label: a, b, c`` per line (or ``;``): the categories merged under each label."""
    out: dict[str, list[str]] = {}
    for part in (p.strip() for p in text.replace("\n", ";").split(";")):
        if not part:
            continue
        label, sep, members = part.partition(":")
        if not sep or not label.strip() or not members.strip():
            raise ConfigError(f"{SOURCE}: column {column!r}: {part!r} is not label: value, value; write e.g. "
                              "piped: 1, 2 (a group per line).")
        out[label.strip()] = [m.strip() for m in members.split(",") if m.strip()]
    if not out:
        raise ConfigError(f"{SOURCE}: column {column!r}: no groups given; write e.g. piped: 1, 2 (a group per line).")
    return out


def grouping_hierarchy(column: str, values: Sequence[Any], groups: dict[str, list[str]]) -> Hierarchy:
    """One row per distinct value: its group's label (a value in no group keeps itself), then ``*``."""
    distinct = sorted({_text(v) for v in values if v is not None}, key=_order)
    group_of: dict[str, str] = {}
    for label, members in groups.items():
        for m in members:
            if m in group_of:
                raise ConfigError(f"{SOURCE}: column {column!r}: value {m!r} is in groups {group_of[m]!r} and {label!r}; "
                                  "put it in one group.")
            if m not in distinct:
                raise ConfigError(f"{SOURCE}: column {column!r}: value {m!r} (group {label!r}) is not in the data; its "
                                  f"values are {', '.join(distinct[:12])}{'…' if len(distinct) > 12 else ''}.")
            group_of[m] = label
    return _rows(column, [[v, group_of.get(v, v), TOP] for v in distinct])


def _order(v: str) -> tuple[int, float, str]:
    try:
        return (0, float(v), v)
    except ValueError:
        return (1, 0.0, v)


def _rows(column: str, rows: list[list[str]]) -> Hierarchy:
    try:
        return Hierarchy.from_rows(rows, name=f"the hierarchy of {column!r}")
    except SdcError as err:
        raise ConfigError(f"{SOURCE}: {err}") from None


def hierarchy_csv(h: Hierarchy) -> str:
    """ARX's format: a row per value, its label at each level, ``;`` between fields."""
    buf = io.StringIO()
    writer = csv.writer(buf, delimiter=";", lineterminator="\n")
    for value, labels in h.table.items():
        writer.writerow([value, *labels])
    return buf.getvalue()


def hierarchy_from_csv(column: str, text: str, values: Sequence[Any]) -> Hierarchy:
    """A hierarchy file's text (ARX's format), checked to hold every value of the column."""
    try:
        h = Hierarchy.from_text(text, name=f"the hierarchy of {column!r}")
    except SdcError as err:
        raise ConfigError(f"{SOURCE}: {err}") from None
    missing = sorted({_text(v) for v in values if v is not None} - set(h.table), key=_order)
    if missing:
        raise ConfigError(f"{SOURCE}: column {column!r}: value {missing[0]!r} is not in the file ({len(missing)} values "
                          "missing); add a row for each (the value, then its label at each level).")
    return h


def as_spec(h: Hierarchy) -> dict[str, list[str]]:
    """The hierarchy as a recode rule's ``hierarchy:`` mapping (``{value: [level 1, ...]}``)."""
    return {value: list(labels) for value, labels in h.table.items()}
