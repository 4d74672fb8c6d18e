"""Collection ids, specifications and published plans taken from requests."""

from __future__ import annotations

from typing import Any

import pytest

from sdckit.errors import ConfigError, ParameterError
from sdckit.protocol import CollectionSpec, PublishedPlan
from sdckit.protocol._spec import check_collection_id

PLAN: dict[str, Any] = {
    "collection": "c",
    "columns": ["sex"],
    "k": 5,
    "budget": 0.05,
    "bound": 0.01,
    "method": "best",
    "excluded": {"age": "bound 0.2 > budget 0.05"},
    "n_round1": 10,
    "setting": "fixed",
    "redactions": [{"feature": "sex", "value_key": '"x"', "probability": 0.1}],
}


@pytest.mark.parametrize("cid", ["abc\n", "a\x00b", "..", "../etc", "", "a" * 65, "ü", "a b", "a/b"])
def test_hostile_collection_ids_are_refused(cid: str) -> None:
    # "abc\n" used to pass: re.match with "$" also matches before a final newline
    with pytest.raises(ParameterError, match="collection id"):
        check_collection_id(cid)


def test_a_long_id_is_not_echoed_whole() -> None:
    with pytest.raises(ParameterError) as info:
        check_collection_id("x" * 10_000)
    assert len(str(info.value)) < 200


@pytest.mark.parametrize("features", [[1, 2], ["a", None], [""], [["a"]]])
def test_features_are_non_empty_strings(features: list[Any]) -> None:
    with pytest.raises((ConfigError, ParameterError)):
        CollectionSpec.from_dict({"id": "c", "features": features})


def test_a_plan_round_trips() -> None:
    # a plan without the pair-round fields (as published before them) reads with their defaults
    assert PublishedPlan.from_dict(PLAN).to_dict() == {
        **PLAN,
        "rounds": ["singles", "release"],
        "pair_bound": None,
        "pair_measured": None,
    }
    paired = {**PLAN, "rounds": ["singles", "pairs", "release"], "pair_bound": 0.04, "pair_measured": 0.001}
    assert PublishedPlan.from_dict(paired).to_dict() == paired


@pytest.mark.parametrize(
    "bad", [{"rounds": ["singles", "triples"]}, {"pair_bound": 1.5}, {"pair_measured": float("nan")}]
)
def test_bad_pair_fields_are_refused(bad: dict[str, Any]) -> None:
    with pytest.raises(ConfigError):
        PublishedPlan.from_dict({**PLAN, **bad})


@pytest.mark.parametrize(
    "change",
    [
        {"excluded": "ab"},  # dict("ab") raised ValueError: a 500 at the analyst
        {"excluded": {"age": 1}},
        {"columns": [1]},
        {"columns": ["sex", "sex"]},
        {"k": 0},
        {"k": "5"},
        {"k": True},
        {"budget": 2.0},
        {"bound": float("nan")},
        {"n_round1": -1},
        {"setting": "other"},
        {"collection": ["c"]},
        {"redactions": [{"feature": "sex", "value_key": '"x"', "probability": 7}]},
        {"redactions": ["x"]},
        {"columns": None},
    ],
)
def test_hostile_plans_raise_config_error(change: dict[str, Any]) -> None:
    with pytest.raises(ConfigError, match="not a published plan"):
        PublishedPlan.from_dict({**PLAN, **change})
