"""Steps on small frames through ``apply`` (no read, no plan search, no report): what each one
declares about the attacker's knowledge, the plan, and its log."""

from __future__ import annotations

import polars as pl
import pytest

from sdckit.errors import ConfigError
from sdckit.pipeline import (
    LocalSuppressionStep,
    MicroaggregateStep,
    PramStep,
    Roles,
    SuppressStep,
    TopCodeStep,
)
from sdckit.pipeline._config import AnonymizeStep

from .conftest import NUMERIC, QUASI_IDENTIFIERS, context


def test_local_suppression_does_not_move_what_the_attacker_knows(small_frame: pl.DataFrame) -> None:
    step = LocalSuppressionStep(k=5)
    out, log = step.apply(small_frame, context(small_frame))
    assert out.null_count().sum_horizontal().item() > 0  # cells were suppressed
    assert not any(step.moves_knowledge(c, log) for c in log.columns)
    assert log.details["params"]["k"] == 5
    assert log.details["params"]["columns"] == list(QUASI_IDENTIFIERS)
    assert step.is_random()
    assert not LocalSuppressionStep(method="sdcmicro").is_random()
    assert LocalSuppressionStep(method="sdcmicro").in_memory_reason() is not None
    assert LocalSuppressionStep().in_memory_reason() is None


def test_microaggregate_strata_cells_merged_to_a_star_do_not_move_knowledge(small_frame: pl.DataFrame) -> None:
    step = MicroaggregateStep(columns=("capital-gain",), k=5, strata="quasi_identifiers", restore_moments=False)
    out, log = step.apply(small_frame, context(small_frame))
    merged = log.details["suppressed_cells"]
    assert merged  # 120 rows over four keys: rare combinations are merged
    assert all(not step.moves_knowledge(c, log) for c in merged)
    assert step.moves_knowledge("capital-gain", log)
    assert step.masked_columns(log) == ("capital-gain",)
    assert (out[next(iter(merged))] == "*").sum() > 0


def test_suppress_plan_keeps_a_quasi_identifier_an_earlier_step_masked(small_frame: pl.DataFrame) -> None:
    ctx = context(small_frame)
    assert ctx.plan is not None
    excluded = [c for c in QUASI_IDENTIFIERS if c not in ctx.plan.columns]
    assert excluded  # age (73 values in 120 rows) cannot be released at k = 3
    out, log = SuppressStep().apply(small_frame, ctx)
    assert set(log.columns) == set(excluded)
    assert not set(excluded) & set(out.columns)
    out, log = SuppressStep().apply(small_frame, context(small_frame, masked=frozenset(excluded)))
    assert log.columns == ()
    assert f"Kept {', '.join(excluded)}: masked by an earlier step." in log.description


def test_top_code_fills_the_numeric_columns_and_masks_amounts(small_frame: pl.DataFrame) -> None:
    step = TopCodeStep(top_quantile=0.9)
    out, log = step.apply(small_frame, context(small_frame))
    assert log.details["params"] == {"top_quantile": 0.9, "columns": list(NUMERIC)}
    assert step.masks_amounts
    assert step.columns_touched(Roles(quasi_identifiers=QUASI_IDENTIFIERS, numeric=NUMERIC)) == NUMERIC
    assert out["capital-gain"].max() <= small_frame["capital-gain"].quantile(0.9, "higher")


def test_an_estimator_error_names_the_step(small_frame: pl.DataFrame) -> None:
    with pytest.raises(ConfigError, match=r"^test\.yaml: steps\[0\]\.pram: "):
        PramStep(columns=("no_such_column",)).apply(small_frame, context(small_frame))


def test_anonymize_step_is_a_deprecated_way_to_build_the_typed_step() -> None:
    with pytest.warns(DeprecationWarning, match="AnonymizeStep"):
        step = AnonymizeStep(kind="pram", params={"columns": ["race"], "pd": 0.7})
    assert step == PramStep(columns=("race",), pd=0.7)
    assert step.params == {"columns": ["race"], "pd": 0.7}
