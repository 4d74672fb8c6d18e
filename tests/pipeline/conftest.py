"""Fixtures of the pipeline's step tests: a small frame with Adult's column names (so every step's
``example``, written for the bundled Adult data, runs on it) and a context to apply a step in."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from sdckit.pipeline import StepContext
from sdckit.risk import Marginals, plan_release

QUASI_IDENTIFIERS = ("age", "sex", "race", "native-country")
NUMERIC = ("capital-gain", "capital-loss", "hours-per-week")


@pytest.fixture(scope="session")
def small_frame() -> pl.DataFrame:
    """120 rows: categorical keys (sex, race, native-country), an integer age, and three amounts."""
    rng = np.random.default_rng(20261203)
    n = 120
    return pl.DataFrame({
        "age": rng.integers(17, 90, n),
        "sex": rng.choice(["Female", "Male"], n),
        "race": rng.choice(["White", "Black", "Asian-Pac-Islander", "Other"], n, p=[0.7, 0.15, 0.1, 0.05]),
        "native-country": rng.choice(["United-States", "Mexico", "Canada", "India"], n, p=[0.85, 0.07, 0.05, 0.03]),
        "capital-gain": np.round(rng.lognormal(6, 2, n)),
        "capital-loss": np.round(rng.lognormal(4, 1.5, n)),
        "hours-per-week": rng.integers(10, 80, n),
    })


def context(frame: pl.DataFrame, *, seed: int | None = None, k: int = 3, **changes: object) -> StepContext:
    """A step's view of a run on ``frame``: Adult's roles, k, the plan at k and budget 0.05."""
    plan = plan_release(Marginals.from_data(frame, list(QUASI_IDENTIFIERS), missing="value"), k=k, budget=0.05)
    fields: dict[str, object] = {
        "source": "test.yaml", "index": 0, "k": k, "quasi_identifiers": QUASI_IDENTIFIERS, "numeric": NUMERIC,
        "seed": seed, "plan": plan, **changes,
    }
    return StepContext(**fields)  # type: ignore[arg-type]
