"""Local suppression with decoys against the plain plan, now that pair tables are known (issue 17).

docs/risk.md ("Local suppression revisited"): B_plain <= B_suppressed + R / n, and the decoy
allowance is at least k * rules / n > R / n, so suppression never wins with bounds of this form.
The decoy rule and its allowance are the protocol's (read, not re-implemented).
"""

from __future__ import annotations

import itertools

import polars as pl
import pytest

from sdckit.datasets import load_adult
from sdckit.plan import plan_release
from sdckit.plan._queries import coarsen, rare_values
from sdckit.protocol._planning import _redaction_rules, decoy_allowance
from sdckit.risk import Marginals, joint_exposure_bound

CASES = [
    (["race", "sex", "native-country"], 5),
    (["age", "sex"], 5),
    (["age", "race", "sex"], 20),
    (["occupation", "race", "sex", "native-country"], 20),
]


@pytest.fixture(scope="module")
def adult() -> pl.DataFrame:
    return load_adult()


@pytest.mark.parametrize(("cols", "k"), CASES)
def test_suppression_with_decoys_never_beats_plain(adult: pl.DataFrame, cols: list[str], k: int) -> None:
    singles = Marginals.from_data(adult, cols)
    rare = rare_values(singles, k)
    redact = {c: set(v) for c, v in rare.items() if v}
    received = Marginals.from_data(adult, cols, blocks=list(itertools.combinations(cols, 2)), redact=redact)
    merged = coarsen(received, rare)
    n = singles.n
    counts = {c: {v: int(x) for v, x in zip(singles.values[c], singles.counts[c], strict=True)} for c in cols}
    rules = _redaction_rules(counts, cols, k, n)
    allowance, _ = decoy_allowance(rules, counts, n, k=k, delta=0.05)
    holders = sum(int(x) for c in cols for x in singles.counts[c] if x < k)
    plain = joint_exposure_bound(received, k=k)
    suppressed = joint_exposure_bound(merged, k=k)
    assert rules  # every case has a rare value
    assert plain <= suppressed + holders / n + 1e-12  # the saving is at most the holders' share
    assert allowance >= k * len(rules) / n > holders / n  # the decoys cost more than that
    assert suppressed + allowance > plain
    # the suppressed release is a coarsening: its bound is sound for it (holders redact; no decoys)
    released = adult.select(
        [
            pl.when(pl.col(c).is_in(list(rare[c])))
            .then(pl.lit("R"))
            .otherwise(pl.col(c).cast(pl.String))
            .alias(c)
            for c in cols
        ]
    )
    sizes = released.group_by(cols).len()["len"]
    assert float(sizes.filter(sizes < k).sum()) / n <= suppressed


def test_plans_with_pairs_never_gain_from_suppression(adult: pl.DataFrame) -> None:
    cols = ["age", "workclass", "education", "marital-status", "occupation", "race", "sex", "native-country"]
    singles = Marginals.from_data(adult, cols)
    for k, budget in ((5, 0.05), (20, 0.1)):
        rare = rare_values(singles, k)
        redact = {c: set(v) for c, v in rare.items() if v}
        pairs = [p for p in itertools.combinations(cols, 2) if "age" not in p or "sex" in p]
        received = Marginals.from_data(adult, cols, blocks=pairs, redact=redact)
        plain = plan_release(received, k=k, budget=budget)
        suppressed = plan_release(coarsen(received, rare), k=k, budget=budget)
        counts = {
            c: {v: int(x) for v, x in zip(singles.values[c], singles.counts[c], strict=True)} for c in cols
        }
        rules = _redaction_rules(counts, list(suppressed.columns), k, singles.n)
        allowance, _ = decoy_allowance(rules, counts, singles.n, k=k, delta=0.05)
        wins = suppressed.bound + allowance <= budget and len(suppressed.columns) > len(plain.columns)
        assert not wins
