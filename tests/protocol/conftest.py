"""Shared fixtures: a small sample of the bundled Adult data (CC BY 4.0, shipped in sdckit.datasets)."""

from __future__ import annotations

from typing import Any

import polars as pl
import pytest

from sdckit.datasets import load_adult

FEATURES = ("age", "sex", "race", "marital-status")


@pytest.fixture(scope="session")
def adult() -> pl.DataFrame:
    return load_adult()


@pytest.fixture(scope="session")
def adult_rows(adult: pl.DataFrame) -> list[dict[str, Any]]:
    """The first 600 Adult users on a few features, as each device would hold them."""
    return list(adult.head(600).select(FEATURES).rows(named=True))
