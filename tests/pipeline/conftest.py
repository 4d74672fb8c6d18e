"""Fixtures of the pipeline tests: a small frame with Adult's column names (so every step's
``example``, written for the bundled Adult data, runs on it), a context to apply a step in, and
the Adult example run once per session."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import polars as pl
import pytest

from sdckit.pipeline import PipelineResult, StepContext, load_config, run_pipeline, write_outputs
from sdckit.plan import plan_release
from sdckit.report import build_report
from sdckit.risk import Marginals

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


ADULT_EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "pipelines" / "adult.yaml"


@pytest.fixture(scope="session")
def adult_example_written(tmp_path_factory: pytest.TempPathFactory) -> tuple[PipelineResult, dict[str, Path]]:
    """``examples/pipelines/adult.yaml`` run once per session, its release written as Parquet with the
    report (the tests that only read this run share it: it takes seconds)."""
    folder = tmp_path_factory.mktemp("adult-example")
    config = load_config(ADULT_EXAMPLE)
    config = config.replace(output_data=str(folder / "release.parquet"), output_report=str(folder / "report.html"))
    result = run_pipeline(config)
    written = write_outputs(result, report=build_report(result, verified_on=result.data_output))
    return result, written
