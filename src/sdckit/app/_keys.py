"""The keys as a statistician reads them: a frequency table per key, the combinations of chosen keys
that are unique or in groups smaller than k (counts only, never the rows), and the effect of a
recoding on one key previewed before it is applied.

Counts read a missing cell as a value of its own (shown as ``(missing)``), as the page's "exposure,
a missing cell as a value" does. A preview recodes with the pipeline's own recoder
(:class:`sdckit.anonymize.GlobalRecoder`), so what is previewed is what the step will do.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import polars as pl

from sdckit.anonymize import GlobalRecoder
from sdckit.app._hierarchies import parse_breaks, parse_groups
from sdckit.errors import ConfigError, SdcError

__all__ = ["Preview", "combinations_below", "frequency_table", "preview_recode", "recode_rule", "records_below"]

MISSING = "(missing)"
SOURCE = "the workbench: keys"


def _shown(v: Any) -> str:
    if v is None:
        return MISSING
    if isinstance(v, float) and v.is_integer():
        return str(int(v))
    return str(v)


def frequency_table(frame: pl.DataFrame, column: str, limit: int = 25) -> tuple[list[tuple[str, int]], int]:
    """``([(value, count)] most frequent first, number of further values)``."""
    counts = frame.group_by(column).agg(pl.len().alias("n")).sort(["n", column], descending=[True, False], nulls_last=True)
    rows = [(_shown(v), int(n)) for v, n in counts.iter_rows()]
    return rows[:limit], max(len(rows) - limit, 0)


def combinations_below(frame: pl.DataFrame, columns: Sequence[str], k: int, limit: int = 40) -> tuple[list[tuple[tuple[str, ...], int]], int, int]:
    """The combinations of ``columns`` held by fewer than ``k`` records, rarest first:
    ``([(values, count)], number of such combinations, records in them)``."""
    cols = list(columns)
    if not cols or frame.height == 0:
        return [], 0, 0
    counts = frame.group_by(cols).agg(pl.len().alias("__n")).filter(pl.col("__n") < k).sort(["__n", *cols], nulls_last=True)
    rows = [(tuple(_shown(v) for v in row[:-1]), int(row[-1])) for row in counts.iter_rows()]
    return rows[:limit], len(rows), sum(n for _, n in rows)


def records_below(frame: pl.DataFrame, columns: Sequence[str], k: int) -> int:
    """Records in groups of fewer than ``k`` on ``columns`` (a missing cell a value of its own)."""
    cols = list(columns)
    if not cols:
        return 0
    n = frame.group_by(cols).agg(pl.len().alias("__n")).filter(pl.col("__n") < k)["__n"].sum()
    return int(n or 0)


def recode_rule(frame: pl.DataFrame, column: str, how: str, text: str, closed: str = "left") -> dict[str, Any]:
    """A recode rule from the page's words: ``breaks`` (``0, 20, 40, 120``) or ``groups``
    (``label: a, b`` per line; a value in no group keeps itself, as text)."""
    if column not in frame.columns:
        raise ConfigError(f"{SOURCE}: column {column!r} is not in the data; choose one of the list.")
    if how == "breaks":
        if not frame.schema[column].is_numeric():
            raise ConfigError(f"{SOURCE}: column {column!r} holds text; breaks need numbers (group its categories instead).")
        return {"breaks": [int(b) if float(b).is_integer() else b for b in parse_breaks(column, text)[0]]}
    if how == "groups":
        groups = parse_groups(column, text)
        values = [_shown(v) for v in frame[column].drop_nulls().unique().to_list()]
        mapping = {v: v for v in values}
        for label, members in groups.items():
            for m in members:
                if m not in mapping:
                    raise ConfigError(f"{SOURCE}: column {column!r}: value {m!r} (group {label!r}) is not in the data.")
                mapping[m] = label
        return {"mapping": dict(sorted(mapping.items()))}
    raise ConfigError(f"{SOURCE}: {how!r} is no way to recode; use breaks or groups.")


@dataclass(frozen=True)
class Preview:
    """A recoding of one key, previewed on the release on screen."""

    column: str
    rule: dict[str, Any]
    closed: str
    before: list[tuple[str, int]]
    after: list[tuple[str, int]]
    below_before: int
    below_after: int
    keys: tuple[str, ...]
    k: int


def preview_recode(frame: pl.DataFrame, keys: Sequence[str], k: int, column: str, rule: dict[str, Any],
                   closed: str = "left") -> Preview:
    """The column's frequencies and the records in groups < k on ``keys``, before and after the rule."""
    try:
        after = GlobalRecoder(rules={column: rule}, closed=closed).fit_transform(frame)
    except SdcError as err:
        raise ConfigError(f"{SOURCE}: {err}") from None
    if not isinstance(after, pl.DataFrame):
        after = pl.DataFrame(after)
    cols = [c for c in keys if c in frame.columns]
    return Preview(column, rule, closed, frequency_table(frame, column, 40)[0], frequency_table(after, column, 40)[0],
                   records_below(frame, cols, k), records_below(after, cols, k), tuple(cols), k)
