"""The release planner against brute force over every column subset."""

from __future__ import annotations

import itertools
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sdckit.datasets import load_adult
from sdckit.errors import ColumnNotFoundError, InfeasibleError, ParameterError, SdcWarning
from sdckit.risk import Marginals, ReleasePlan, exposure_curve, joint_exposure_bound, plan_release

marginals_strategy = st.integers(1, 6).flatmap(
    lambda p: st.lists(st.lists(st.integers(1, 30), min_size=1, max_size=8), min_size=p, max_size=p)
)


def _same_total(cols: list[list[int]]) -> dict[str, list[int]]:
    """Scale every column to the first column's total by adding the difference to its largest value."""
    n = max(10, *(sum(c) for c in cols))  # at least k users (k <= 6 here)
    out = {}
    for j, c in enumerate(cols):
        c = sorted(c)
        c[-1] += n - sum(c)
        out[f"c{j}"] = c
    return out


@settings(max_examples=40, deadline=None)
@given(
    marginals_strategy,
    st.integers(2, 6),
    st.sampled_from([0.0, 0.01, 0.05, 0.2, 0.5]),
    st.lists(st.integers(0, 3), min_size=6, max_size=6),
)
def test_plan_is_the_best_subset(cols: list[list[int]], k: int, budget: float, w: list[int]) -> None:
    m = Marginals.from_counts(_same_total(cols))
    weights = {c: float(w[j]) for j, c in enumerate(m.columns)}
    plan = plan_release(m, k=k, budget=budget, weights=weights)
    # brute force: every subset, bounded independently with the public bound
    best = 0.0
    for r in range(len(m.columns) + 1):
        for subset in itertools.combinations(m.columns, r):
            bound = joint_exposure_bound(m, k=k, columns=subset) if subset else 0.0
            if bound <= budget:
                best = max(best, sum(weights[c] for c in subset))
    assert plan.weight == best
    assert plan.bound <= budget
    if plan.columns:
        assert plan.bound == pytest.approx(joint_exposure_bound(m, k=k, columns=plan.columns), rel=1e-12)
    assert set(plan.excluded) == set(m.columns) - set(plan.columns)


def test_plan_on_adult_is_sound() -> None:
    adult = load_adult()
    cols = [c for c in adult.columns if c != "income"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SdcWarning)
        m = Marginals.from_data(adult, cols)
    plan = plan_release(m, k=5, budget=0.05)
    assert plan.search == "exact"
    assert 0 < plan.bound <= 0.05
    # the guarantee holds on the real joint counts
    assert exposure_curve(adult, list(plan.columns)).not_k_anonymous(5) <= plan.bound
    assert plan.excluded["fnlwgt"].startswith("alone its bound is")
    for c, why in plan.excluded.items():
        assert "> budget 0.05" in why, c
    d = plan.to_dict()
    assert d["columns"] == list(plan.columns)
    assert (d["k"], d["budget"]) == (5, 0.05)
    assert isinstance(plan, ReleasePlan)


def test_greedy_beyond_twenty_columns() -> None:
    # 24 binary columns with a rare value: exact search is not attempted; the plan still meets the budget
    counts = {f"c{j}": [1 + j, 1000 - 1 - j] for j in range(24)}
    m = Marginals.from_counts(counts)
    plan = plan_release(m, k=3, budget=0.05)
    assert plan.search == "greedy"
    assert plan.bound <= 0.05
    assert plan.bound == pytest.approx(joint_exposure_bound(m, k=3, columns=plan.columns), rel=1e-12)
    assert len(plan.columns) >= 1


def test_plan_errors() -> None:
    m = Marginals.from_counts({"a": [5, 5], "b": [9, 1]})
    with pytest.raises(ParameterError, match="lower bound and guarantees nothing"):
        plan_release(m, k=2, budget=0.1, method="lower")
    with pytest.raises(ParameterError, match=r"budget=1\.5 is outside"):
        plan_release(m, k=2, budget=1.5)
    with pytest.raises(ParameterError, match="k=0 is below 1"):
        plan_release(m, k=0, budget=0.1)
    with pytest.raises(ParameterError, match="weight of column 'a'"):
        plan_release(m, k=2, budget=0.1, weights={"a": -1.0})
    with pytest.raises(ColumnNotFoundError):
        plan_release(m, k=2, budget=0.1, weights={"z": 1.0})
    with pytest.raises(InfeasibleError, match="larger than the 10 users"):
        plan_release(m, k=11, budget=0.1)
    with pytest.warns(SdcWarning, match="budget=0.6"):
        plan_release(m, k=2, budget=0.6)


@pytest.mark.parametrize("k", [2**63, 2**70, float(2**64), np.uint64(2**63)])
def test_huge_k_is_refused_as_too_large_not_wrapped(k: object) -> None:
    # int64 would wrap 2**63 to a negative number; the message must be about the table's size
    m = Marginals.from_counts({"a": {"x": 10, "y": 5}})
    with pytest.raises(InfeasibleError, match="is larger than the 15 users"):
        plan_release(m, k=k, budget=0.05)  # type: ignore[arg-type]
