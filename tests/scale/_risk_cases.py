"""Shared data and in-memory references of the distributed risk tests (Dask and Spark)."""

from __future__ import annotations

from typing import Any

import numpy as np
import polars as pl

from sdckit.risk import LDiversity, suda2

KEYS = ["region", "sex", "age_band"]
"""Key columns with missing cells (wildcards) in sex and age_band."""


def risk_table(table: pl.DataFrame) -> pl.DataFrame:
    """The shared table with a banded age, missing key cells (3 missingness patterns besides none),
    a sampling weight >= 1 and a sensitive column."""
    rng = np.random.default_rng(25)
    n = table.height
    gone_sex = rng.random(n) < 0.05
    gone_age = rng.random(n) < 0.08
    return table.with_columns(
        pl.when(pl.Series(gone_sex)).then(None).otherwise(pl.col("sex")).alias("sex"),
        pl.when(pl.Series(gone_age)).then(None).otherwise(pl.col("age") // 10).alias("age_band"),
        (1.0 + pl.col("score")).alias("w"),
        pl.Series("diagnosis", rng.choice(["flu", "cold", "none", "rare"], n, p=[0.3, 0.3, 0.35, 0.05])),
    )


def by_id(frame: pl.DataFrame, column: str) -> np.ndarray[Any, Any]:
    return frame.sort("id")[column].to_numpy()


def canonical_groups(ld: LDiversity) -> list[tuple[Any, ...]]:
    """The per-group figures as a sorted list (group order is no part of the result)."""
    rows = []
    for g in range(ld.n_groups):
        row: list[Any] = [int(ld.group_sizes[g])]
        for s in ld.per_column:
            row += [int(s.distinct[g]), round(float(s.entropy_l[g]), 9), int(s.recursive_l[g])]
        rows.append(tuple(row))
    return sorted(rows)


def blocked_reference(frame: pl.DataFrame, columns: list[str], block: str) -> pl.DataFrame:
    """SUDA2 scores of each block as a table of its own, by the in-memory suda2 (id, suda_score, msu counts)."""
    parts = []
    for _, part in frame.group_by([block]):
        res = suda2(part, columns)
        parts.append(
            part.select("id").with_columns(
                pl.Series("suda_score", res.scores),
                *[pl.Series(f"msu_size_{s}", res.msu_counts[:, s - 1]) for s in range(1, len(columns) + 1)],
            )
        )
    return pl.concat(parts).sort("id")
