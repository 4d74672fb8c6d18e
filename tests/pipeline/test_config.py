"""Pipeline files: every key validated, precise errors, paths resolved against the file."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from sdckit._checks import k_message
from sdckit.errors import ConfigError
from sdckit.pipeline import MicroaggregateStep, NoiseStep, SuppressStep, load_config, parse_config

GOOD = """
input: people.csv
name: My release
quasi_identifiers: [age, sex]
numeric: [age, income]
k: 3
budget: 0.1
seed: 7
reproducible: true
steps:
  - microaggregate: {method: mdav, k: 4, positivity: same}
  - noise: {t: 0.5, distribution: laplace}
  - suppress: plan
output:
  data: out/protected.parquet
  report: out/report.html
"""


def test_a_complete_file(tmp_path: Path) -> None:
    path = tmp_path / "p.yaml"
    path.write_text(GOOD)
    cfg = load_config(path)
    assert cfg.input == str(tmp_path / "people.csv")
    assert cfg.quasi_identifiers == ("age", "sex")
    assert (cfg.k, cfg.budget, cfg.seed, cfg.reproducible) == (3, 0.1, 7, True)
    assert (cfg.missing_semantics, cfg.shuffle_rows) == ("value", True)  # the defaults of issue 21
    assert cfg.steps == (
        MicroaggregateStep(method="mdav", k=4, positivity="same"),
        NoiseStep(t=0.5, distribution="laplace"),
        SuppressStep(columns="plan"),
    )
    assert cfg.output_data == str(tmp_path / "out/protected.parquet")
    assert cfg.to_dict()["steps"][0] == {
        "microaggregate": {"method": "mdav", "k": 4, "columns": None, "restore_moments": True, "positivity": "same",
                           "strata": None, "small_strata": "merge"}
    }


def test_defaults_mean_the_bundled_adult_data() -> None:
    cfg = parse_config({})
    assert cfg.uses_adult
    assert cfg.k == 5
    assert cfg.budget == 0.05
    assert cfg.steps == ()


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ({"quasi_identifier": ["a"]}, "unknown key 'quasi_identifier'. Did you mean 'quasi_identifiers'"),
        ({"k": "5"}, r"<dict>.k: expected a whole number, got '5' \(str\)"),
        ({"k": 0}, r"k: 0: k-anonymity needs a group size k >= 2"),
        ({"k": 1}, r"k: 1: k-anonymity needs a group size k >= 2"),
        ({"k": True}, "expected a whole number"),
        ({"budget": 1.5}, "budget: must be <= 1.0, got 1.5"),
        ({"budget": -0.1}, "budget: must be >= 0.0, got -0.1"),
        ({"numeric": []}, "expected a non-empty list of column names"),
        ({"steps": {"noise": {}}}, "expected a list of steps"),
        ({"steps": [{"microaggregation": {}}]}, "steps\\[0\\]: unknown key 'microaggregation'. Did you mean 'microaggregate'"),
        ({"steps": [{"microaggregate": {"kk": 3}}]}, "steps\\[0\\].microaggregate: unknown key 'kk'"),
        ({"steps": [{"microaggregate": {"method": "kmeans"}}]}, "'kmeans' is not one of mdav"),
        ({"steps": [{"noise": {"t": -1}}]}, "steps\\[0\\].noise.t: must be >= 0.0, got -1"),
        ({"steps": [{"noise": {"t": "lots"}}]}, "steps\\[0\\].noise.t: expected a number, got 'lots'"),
        ({"steps": [{"noise": {"max_leakage_nat": 1}}]}, "unknown key 'max_leakage_nat'. Did you mean 'max_leakage_nats'"),
        ({"steps": [{"recode": ["age"]}]}, "steps\\[0\\].recode: expected a mapping"),
        ({"keep": ["a"], "identifiers": ["a"]}, "column 'a' is under both identifiers and keep; give each column one role"),
        ({"numeric": ["x"], "keep": ["x"]}, "column 'x' is under numeric \\(to mask\\) and keep"),
        ({"allow_over_budget": "yes"}, "allow_over_budget: expected true or false, got 'yes'"),
        ({"sensitive": [3]}, r"sensitive\[0\]: expected a string, got 3 \(int\)"),
        ({"steps": [{"noise": {}, "suppress": {}}]}, "each step is one of"),
        ({"output": {"html": "x"}}, "output: unknown key 'html'"),
        (["not", "a", "mapping"], "expected a mapping"),
        ({"input": "x.csv", "separator": ";"}, r"unknown key 'separator': reading options go under read, e.g. read: \{separator: ';'\}"),
        ({"input": "x.csv", "read": {"delimiter": ";"}}, r"<dict>.read: unknown key 'delimiter'. Did you mean 'separator'"),
        ({"input": "x.csv", "read": {"decimal": ",", "separator": ","}}, "decimal: ',' and separator: ',' cannot both hold"),
        ({"input": "x.csv", "read": {"na_values": [-9.5]}}, r"read.na_values: -9.5 \(float\) is not a string; quote each value"),
        ({"input": "x.csv", "read": ";"}, "read: expected a mapping"),
        ({"read": {"encoding": "latin-1"}}, "the reading options apply to a file given as input; the bundled Adult data"),
        ({"missing": -9}, r"missing: -9 is not one of value or drop .* read, e.g. read: \{na_values: \['-9', NA, ''\]\}"),
        ({"missing": "error"}, "missing: 'error' is not one of value or drop"),
    ],
)
def test_errors_name_the_key_the_value_and_the_fix(raw: object, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        parse_config(raw)


def test_file_errors(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="no pipeline file"):
        load_config(tmp_path / "missing.yaml")
    bad = tmp_path / "bad.yaml"
    bad.write_text("k: [1, 2\n")
    with pytest.raises(ConfigError, match=r"bad\.yaml is not valid YAML"):
        load_config(bad)
    js = tmp_path / "p.json"
    js.write_text('{"k": 7}')
    assert load_config(js).k == 7


def test_yaml_no_means_no_positivity() -> None:
    cfg = parse_config({"steps": [{"microaggregate": {"positivity": False}}]})
    assert cfg.steps[0] == MicroaggregateStep(positivity="none")


def test_epsilon_is_renamed_with_a_clear_error() -> None:
    # epsilon means differential privacy only; the pipeline's leakage budget is in nats
    with pytest.raises(ConfigError, match=r"steps\[0\]\.noise: 'epsilon' was renamed 'max_leakage_nats'.*nats"):
        parse_config({"steps": [{"noise": {"epsilon": 1.0}}]})
    with pytest.raises(ConfigError, match="'epsilon' was renamed"):
        parse_config({"epsilon": 1.0})
    cfg = parse_config({"steps": [{"noise": {"max_leakage_nats": 0.5}}]})
    assert cfg.steps[0] == NoiseStep(max_leakage_nats=0.5)
    assert cfg.to_dict()["steps"][0]["noise"]["max_leakage_nats"] == 0.5


def test_roles_and_anonymize_steps() -> None:
    cfg = parse_config(
        {
            "quasi_identifiers": "age, sex",
            "sensitive": ["income"],
            "weight": "w",
            "identifiers": ["id"],
            "keep": ["note"],
            "allow_over_budget": True,
            "steps": [{"recode": {"rules": {"age": {"breaks": [0, 30, 60, 120]}}}}, {"local_suppression": {}}],
        }
    )
    assert cfg.quasi_identifiers == ("age", "sex")
    assert (cfg.weight, cfg.identifiers, cfg.keep) == (("w",), ("id",), ("note",))
    assert cfg.allow_over_budget
    assert [s.kind for s in cfg.steps] == ["recode", "local_suppression"]
    assert cfg.steps[0].params == {"rules": {"age": {"breaks": [0, 30, 60, 120]}}}  # type: ignore[union-attr]
    assert cfg.to_dict()["steps"][0] == {"recode": {"rules": {"age": {"breaks": [0, 30, 60, 120]}}}}
    assert cfg.to_dict()["steps"][1] == {"local_suppression": {}}
    # the config is frozen
    with pytest.raises(ValidationError):
        cfg.k = 3  # type: ignore[misc]


def test_microaggregate_within_strata_of_the_quasi_identifiers() -> None:
    cfg = parse_config({"steps": [{"microaggregate": {"columns": ["age"], "strata": "quasi_identifiers"}}]})
    step = cfg.steps[0]
    assert isinstance(step, MicroaggregateStep)
    assert (step.strata, step.small_strata) == ("quasi_identifiers", "merge")
    with pytest.raises(ConfigError, match="small_strata: 'drop' is not one of merge or error"):
        parse_config({"steps": [{"microaggregate": {"small_strata": "drop"}}]})


def test_read_section_values() -> None:
    cfg = parse_config({"input": "x.csv", "read": {"separator": "tab", "na_values": [-9, "NA", " . "], "encoding": "cp1252"}})
    assert (cfg.read.separator, cfg.read.na_values, cfg.read.encoding) == ("\t", ("-9", "NA", "."), "cp1252")
    assert parse_config({"input": "x.csv", "read": {"separator": "\\t"}}).read.separator == "\t"  # YAML '\t'
    assert parse_config({"input": "x.csv", "read": {"na_values": "-9, NA,"}}).read.na_values == ("-9", "NA", "")
    assert parse_config({"input": "x.csv", "read": None}).read.is_default
    assert parse_config({}).to_dict()["read"] == {"separator": None, "encoding": "utf-8", "decimal": ".",
                                                  "na_values": ["", "NA", "NaN"]}


def test_a_seed_is_an_explicit_choice() -> None:
    assert parse_config({}).step_seed is None  # OS entropy by default
    assert parse_config({}).to_dict()["seed"] is None  # and no seed is recorded
    with pytest.raises(ConfigError, match="add reproducible: true"):
        parse_config({"seed": 3})
    with pytest.raises(ConfigError, match="needs a seed"):
        parse_config({"reproducible": True})
    cfg = parse_config({"seed": 3, "reproducible": True})
    assert (cfg.step_seed, cfg.to_dict()["seed"], cfg.to_dict()["reproducible"]) == (3, 3, True)


@pytest.mark.parametrize(
    ("step", "message"),
    [
        ({"local_suppression": {"k": 1}}, "steps[0].local_suppression.k: 1: k-anonymity needs a group size k >= 2"),
        ({"microaggregate": {"k": 0}}, "steps[0].microaggregate.k: 0: k-anonymity needs a group size k >= 2"),
        ({"local_suppression": {"delta": 1}}, "steps[0].local_suppression.delta: must be < 1.0, got 1"),
        ({"local_suppression": {"random_redaction": 1.5}}, "random_redaction: must be <= 1.0, got 1.5"),
        ({"pram": {"pd": 2}}, "steps[0].pram.pd: must be <= 1.0, got 2"),
        ({"pram": {"alpha": -0.1}}, "steps[0].pram.alpha: must be >= 0.0, got -0.1"),
    ],
)
def test_step_options_out_of_range_are_refused_when_the_file_is_read(step: dict, message: str) -> None:
    # the estimators' own rules (LocalSuppressor, PRAM, check_group_size), declared once on the step's fields
    with pytest.raises(ConfigError) as err:
        parse_config({"steps": [step]})
    assert message in str(err.value)


def test_every_k_has_the_one_k_message() -> None:
    with pytest.raises(ConfigError) as top:
        parse_config({"k": 1})
    with pytest.raises(ConfigError) as step:
        parse_config({"steps": [{"local_suppression": {"k": 1}}]})
    one = k_message(1).replace("k=", "", 1)
    assert str(top.value).endswith(one)
    assert str(step.value).endswith(one)
