"""Shared data of the distributed-frame tests: a seeded table with block keys and numeric columns."""

from __future__ import annotations

import warnings

import numpy as np
import polars as pl
import pytest

N = 2_000


@pytest.fixture(scope="session")
def table() -> pl.DataFrame:
    rng = np.random.default_rng(20261201)
    return pl.DataFrame(
        {
            "id": np.arange(N),
            "region": rng.choice(["north", "south", "east", "west"], N),
            "sex": rng.choice(["f", "m"], N),
            "age": rng.integers(18, 90, N),
            "income": rng.lognormal(10, 0.7, N),
            "hours": rng.normal(38, 8, N),
            "score": rng.gamma(2.0, 3.0, N),
        }
    )


@pytest.fixture(autouse=True)
def _quiet_narwhals() -> None:
    # narwhals announces that its Dask support moves to a separate package; not our warning
    warnings.filterwarnings("ignore", message=".*narwhals-dask.*", category=FutureWarning)


NUMERIC = ["age", "income", "hours", "score"]
