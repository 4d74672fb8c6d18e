"""Shared helpers of the risk tests: brute-force references written independently of sdckit.risk."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

import polars as pl


def brute_exposure(rows: Sequence[tuple[object, ...]], max_size: int) -> float:
    """Share of rows whose exact tuple occurs at most ``max_size`` times (plain Python counting)."""
    if not rows:
        return 0.0
    counts = Counter(rows)
    return sum(1 for r in rows if counts[r] <= max_size) / len(rows)


def table(rows: Sequence[tuple[int, ...]], width: int) -> pl.DataFrame:
    """A polars table with columns c0..c{width-1} from integer tuples."""
    return pl.DataFrame({f"c{j}": [r[j] for r in rows] for j in range(width)}, schema={f"c{j}": pl.Int64 for j in range(width)})
