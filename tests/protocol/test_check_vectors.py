"""The shared check vectors (``vectors/checks-v1.json``): what a device accepts or refuses, read by
this test (the Python ``verify_plan``, ``verify_pairs`` and ``Client``) and by
``clients/js/test/checks.test.mjs`` (the TypeScript SDK), so both SDKs check the same things.

The expected bounds were computed by an exhaustive search in ``vectors/generate_checks.py``
(:func:`brute_bound`), not by the code under test; this test also re-derives them.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest

from sdckit.protocol import (
    Client,
    CollectionSpec,
    PairQueries,
    PlanRefusedError,
    PublishedPlan,
    UnpinnedSpecError,
    verify_pairs,
    verify_plan,
)

HERE = Path(__file__).with_name("vectors")
VEC = json.loads((HERE / "checks-v1.json").read_text())
sys.path.insert(0, str(HERE))
from generate_checks import brute_bound, decoy_allowance  # noqa: E402

from sdckit.protocol._planning import check_own_values  # noqa: E402


def _ids(cases: list[dict[str, Any]]) -> list[str]:
    return [c["name"] for c in cases]


def test_every_check_has_a_refusal_vector() -> None:
    refused = {c["refused"] for c in VEC["plans"] + VEC["pairs"] if c["refused"]}
    for words in ("claims a bound", "min_k", "max_budget", "above its budget", "for collection", "setting",
                  "does not publish the counts", "users but it says", "do not parse", "recoding cannot produce",
                  "outside the plan", "moved messages", "fewer than k", "above the budget"):
        assert words in refused, words
    assert {tuple(s["unpinned"]) for s in VEC["specs"]} >= {("analyst",), ("shuffler",), ("curator",)}


@pytest.mark.parametrize("case", VEC["plans"], ids=_ids(VEC["plans"]))
def test_plan_vectors(case: dict[str, Any]) -> None:
    spec = CollectionSpec.from_dict(case["spec"])
    if case["refused"]:
        with pytest.raises(PlanRefusedError, match=case["refused"]):
            verify_plan(PublishedPlan.from_dict(case["plan"]), spec)
        return
    got = verify_plan(PublishedPlan.from_dict(case["plan"]), spec)
    assert got == pytest.approx(case["bound"], rel=1e-9, abs=1e-12)


def test_the_expected_bounds_are_the_exhaustive_minimum() -> None:
    """Re-derive two of the file's figures here (not from the code under test)."""
    two = next(c for c in VEC["plans"] if c["name"] == "honest: two columns, the exact bound claimed")
    counts = [list(v.values()) for v in two["plan"]["evidence"]["counts"].values()]
    assert two["bound"] == brute_bound(counts, 60, 3)
    dec = next(c for c in VEC["plans"] if c["name"] == "honest: the decoy allowance added")
    assert dec["bound"] == pytest.approx(brute_bound(counts, 60, 2) + decoy_allowance(1, 2, 60))


@pytest.mark.parametrize("case", VEC["pairs"], ids=_ids(VEC["pairs"]))
def test_pair_vectors(case: dict[str, Any]) -> None:
    spec = CollectionSpec.from_dict(case["spec"])
    if case["refused"]:
        with pytest.raises(PlanRefusedError, match=case["refused"]):
            verify_pairs(PairQueries.from_dict(case["pairs"]), spec)
        return
    got = verify_pairs(PairQueries.from_dict(case["pairs"]), spec)
    assert got == pytest.approx(case["bound"], rel=1e-9, abs=1e-12)


@pytest.mark.parametrize("case", VEC["own_values"], ids=_ids(VEC["own_values"]))
def test_own_value_vectors(case: dict[str, Any]) -> None:
    plan = PublishedPlan.from_dict(case["plan"])
    if case["refused"]:
        with pytest.raises(PlanRefusedError, match=case["refused"]):
            check_own_values(plan, case["row"])
    else:
        check_own_values(plan, case["row"])


@pytest.mark.parametrize("case", VEC["specs"], ids=[",".join(s["unpinned"]) or "all" for s in VEC["specs"]])
def test_spec_vectors_through_the_client(case: dict[str, Any]) -> None:
    signed = case["signed"]

    def handler(request: httpx.Request) -> httpx.Response:
        if request.url.path == "/v1/collections/checks":
            return httpx.Response(200, json={"spec": signed, "enrolment": {}})
        return httpx.Response(404, json={"detail": "no"})

    client = Client(
        shuffler_url="http://relay",
        collection="checks",
        curator_verify_key=VEC["verify_key"],
        require_count_check=False,  # the vectors' specs test pinning, signed without the check
    )
    client._http = httpx.Client(transport=httpx.MockTransport(handler))
    if case["unpinned"]:
        with pytest.raises(UnpinnedSpecError, match="does not pin the " + ", ".join(case["unpinned"])):
            client.spec()
    else:
        assert client.spec().id == "checks"
