"""Every registered step, checked the same way (as scikit-learn's ``test_common.py`` checks every
estimator): it parses from its example, round-trips its YAML, runs its example, refuses a wrong
option with the pipeline's one-line message, logs its columns and its randomness, and runs lazily
or refuses with its reason. A new step in :data:`sdckit.pipeline.STEPS` is checked here at once."""

from __future__ import annotations

import inspect
import re
from typing import Any

import polars as pl
import pytest
import yaml

from sdckit.errors import ConfigError
from sdckit.pipeline import STEPS, Step, parse_config, run_distributed
from sdckit.pipeline._steps import AnonymizeOptions
from sdckit.pipeline._steps._base import RANDOM_FROM_OS, RANDOM_FROM_SEED

from .conftest import NUMERIC, QUASI_IDENTIFIERS, context

KINDS = list(STEPS)


def _example(kind: str) -> Step:
    return parse_config({"steps": [{kind: yaml.safe_load(STEPS[kind].example)}]}).steps[0]


@pytest.mark.parametrize("kind", KINDS)
def test_parses_from_its_example_and_round_trips(kind: str) -> None:
    cls = STEPS[kind]
    assert "\n" not in cls.example  # one line of YAML flow style: the app's template
    step = _example(kind)
    assert type(step) is cls
    assert step.kind == kind
    again = parse_config({"steps": [step.to_dict()]}).steps[0]
    assert again == step
    config = parse_config({"steps": [step.to_dict(), step.to_dict()]})
    assert parse_config({"steps": config.to_dict()["steps"]}).steps == config.steps


@pytest.mark.parametrize("kind", KINDS)
def test_refuses_a_wrong_option_in_one_line(kind: str) -> None:
    with pytest.raises(ConfigError, match=rf"^test\.yaml\.steps\[0\]\.{kind}: unknown key 'no_such_option'\.") as err:
        parse_config({"steps": [{kind: {"no_such_option": 1}}]}, source="test.yaml")
    assert "\n" not in str(err.value)


@pytest.mark.parametrize("kind", KINDS)
def test_every_option_has_help(kind: str) -> None:
    options = STEPS[kind].options_schema()
    assert options
    for option in options:
        assert option.help, f"{kind}.{option.name} has no docstring"
        assert option.type


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("seed", [None, 7])
def test_example_runs_and_logs_its_columns_and_randomness(kind: str, seed: int | None, small_frame: pl.DataFrame) -> None:
    step = _example(kind)
    out, log = step.run(small_frame, context(small_frame, seed=seed))
    assert isinstance(out, pl.DataFrame)
    assert out.height == small_frame.height  # no row is dropped or added
    assert log.kind == kind
    assert log.columns
    assert set(log.columns) <= set(small_frame.columns)
    changed = {c for c in small_frame.columns if c not in out.columns or not out[c].equals(small_frame[c])}
    assert changed <= set(log.columns)  # every column the step changed or dropped is in its log
    assert log.description.endswith(".")
    if step.is_random():
        assert log.details["random"] is True
        assert log.details["randomness"] == (RANDOM_FROM_OS if seed is None else RANDOM_FROM_SEED)
    else:
        assert "randomness" not in log.details


@pytest.mark.filterwarnings("ignore:PRAM collects the polars LazyFrame:sdckit.errors.SdcWarning")
@pytest.mark.parametrize("kind", KINDS)
def test_runs_lazily_or_refuses_with_its_reason(kind: str, small_frame: pl.DataFrame) -> None:
    raw: dict[str, Any] = {
        "quasi_identifiers": list(QUASI_IDENTIFIERS), "numeric": list(NUMERIC), "k": 3, "budget": 1.0,
        "steps": [{kind: yaml.safe_load(STEPS[kind].example)}],
    }
    config = parse_config(raw, source="test.yaml")
    step = config.steps[0]
    reason = step.in_memory_reason()
    if reason is None:
        result = run_distributed(config, small_frame.lazy())
        assert isinstance(result.release, pl.LazyFrame)
        assert result.release.collect().height == small_frame.height
        assert result.steps[0].kind == kind
    else:
        with pytest.raises(ConfigError, match=rf"^test\.yaml: steps\[0\]\.{kind}.*{re.escape(reason)}"):
            run_distributed(config, small_frame.lazy())


def test_local_suppression_by_sdcmicro_refuses_to_run_distributed(small_frame: pl.DataFrame) -> None:
    raw = {"quasi_identifiers": list(QUASI_IDENTIFIERS), "steps": [{"local_suppression": {"method": "sdcmicro"}}]}
    with pytest.raises(ConfigError, match=r"steps\[0\]\.local_suppression: method: sdcmicro compares every record"):
        run_distributed(parse_config(raw), small_frame.lazy())


# --- the anonymize steps' options and their estimators' constructors cannot drift ----------------

FILLED_FROM_THE_RUN = {"k", "columns", "quasi_identifiers", "random_state", "entity", "household_columns"}
"""Constructor keywords the run fills from its context when a step leaves them out."""
DEFAULT_FROM_THE_RUN = {"k"}
"""Options whose default (None) means the run's value, not the estimator's default."""

ANONYMIZE = [cls for cls in STEPS.values() if issubclass(cls, AnonymizeOptions)]


@pytest.mark.parametrize("cls", ANONYMIZE, ids=[c.__name__ for c in ANONYMIZE])
def test_anonymize_options_are_the_estimator_parameters(cls: type[AnonymizeOptions]) -> None:
    options = {name for name in cls.model_fields if name not in cls.internal}
    parameters = inspect.signature(cls.estimator).parameters
    assert options - set(parameters) <= set(cls.pipeline_only), "an option the estimator does not take"
    missing = set(parameters) - options
    assert missing <= FILLED_FROM_THE_RUN, f"estimator parameters that are no option: {missing - FILLED_FROM_THE_RUN}"
    assert missing <= set(cls.filled)  # each is filled by the run
    for name in options & set(parameters) - DEFAULT_FROM_THE_RUN:
        assert cls.model_fields[name].default == parameters[name].default, name  # the same default
