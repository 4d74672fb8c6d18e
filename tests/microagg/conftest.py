"""Shared fixtures: the CASC Census set (tests/data, GPL-2 sdcMicro package data; see its README)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import polars as pl
import pytest

DATA = Path(__file__).resolve().parents[1] / "data"


@pytest.fixture(scope="session")
def census() -> pl.DataFrame:
    """CASC Census, 1080 x 13, all numeric; PTOTVAL = PEARNVAL + POTHVAL in every row."""
    return pl.read_csv(DATA / "casc_census.csv.gz")


@pytest.fixture(scope="session")
def census_x(census: pl.DataFrame) -> np.ndarray:
    return census.to_numpy().astype(np.float64)


@pytest.fixture(scope="session")
def tarragona() -> pl.DataFrame:
    """CASC Tarragona, 834 x 13, with negative values."""
    return pl.read_csv(DATA / "casc_tarragona.csv.gz")
