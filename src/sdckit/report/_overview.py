"""The data at a glance: the first section of every report, and ``sdckit describe``."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import narwhals as nw

from sdckit._io import DataSource, read_data
from sdckit.report._report import Section, metrics, paragraph, table

UNKNOWN_MARKERS = ("?", "")
"""Text values that usually mean 'unknown' in survey files; reported, never altered."""


def _example(value: Any) -> Any:
    """A value fit for a table cell and JSON: nested values (lists, structs) as their text."""
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    if hasattr(value, "to_list"):
        value = value.to_list()
    return str(value)


def describe_data(source: DataSource, columns: Sequence[str] | None = None) -> dict[str, Any]:
    """Rows, columns and, per column: type, distinct values, missing values, unknown markers.

    Lazy frames are collected (a description reads every row anyway).
    """
    data = read_data(source, columns)
    frame = data.frame
    if isinstance(frame, nw.LazyFrame):
        frame = frame.collect()
    schema = frame.collect_schema()
    cols = []
    for name in data.columns:
        s = frame[name]
        dtype = schema[name]
        n_missing = int(s.is_null().sum())
        if dtype.is_float():
            n_missing += int(s.is_nan().fill_null(False).sum())
        n_unknown = 0
        if dtype == nw.String:
            n_unknown = int(s.is_in(list(UNKNOWN_MARKERS)).sum())
        non_null = s.drop_nulls()
        cols.append(
            {
                "name": name,
                "dtype": str(dtype),
                "numeric": bool(dtype.is_numeric()),
                "n_distinct": int(s.n_unique()),
                "n_missing": n_missing,
                "n_unknown_marker": n_unknown,
                "example": _example(non_null[0]) if len(non_null) else None,
            }
        )
    return {"source": data.source, "n_rows": len(frame), "n_columns": len(data.columns), "columns": cols}


def overview_section(source: DataSource, columns: Sequence[str] | None = None) -> Section:
    """Section 'The data at a glance'."""
    summary = describe_data(source, columns)
    section = Section("data", "The data at a glance", data=summary)
    n_unknown = sum(c["n_unknown_marker"] for c in summary["columns"])
    n_missing = sum(c["n_missing"] for c in summary["columns"])
    section.add(
        metrics(
            [
                ("rows (users)", summary["n_rows"], ""),
                ("columns", summary["n_columns"], ""),
                ("missing cells", n_missing, ""),
                ("cells marked unknown ('?' or empty)", n_unknown, ""),
            ]
        ),
        table(
            [
                (c["name"], c["dtype"], c["n_distinct"], c["n_missing"], c["n_unknown_marker"])
                for c in summary["columns"]
            ],
            ["column", "type", "distinct values (support)", "missing", "marked unknown"],
        ),
        paragraph(
            "Each row is one person; identical rows are different people and are never merged. "
            "Values marked unknown ('?') are kept as a value of their own: an attacker sees them too.",
            note=True,
        ),
    )
    section.summary = f"{summary['n_rows']:,} rows and {summary['n_columns']} columns from {summary['source']}."
    return section
