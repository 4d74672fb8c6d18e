"""Local suppression's decoys: the allowance k D / n and the Bernstein bound on D, by simulation."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest

from sdckit.protocol._planning import _redaction_rules, decide_plan, decoy_allowance

REDACTED = "<redacted>"


def _table(rng: np.random.Generator, n: int = 300) -> list[tuple[str, str]]:
    a = rng.choice(["x", "y", "z", "r1", "r2"], n, p=[0.5, 0.3, 0.19, 0.006, 0.004])
    b = rng.choice(["u", "v", "w", "s1"], n, p=[0.6, 0.3, 0.095, 0.005])
    return list(zip(a.tolist(), b.tolist(), strict=True))


def _counts(rows: list[tuple[str, str]]) -> dict[str, dict[str, int]]:
    return {"a": dict(Counter(r[0] for r in rows)), "b": dict(Counter(r[1] for r in rows))}


def _exposure(rows: list[tuple[str, ...]], k: int) -> float:
    sizes = Counter(rows)
    return sum(c for c in sizes.values() if c < k) / len(rows)


@pytest.mark.parametrize("k", [2, 5])
def test_decoys_add_at_most_k_d_over_n(k: int) -> None:
    # independent check of the allowance's inequality, draw by draw, with Counter
    rng = np.random.default_rng(20261130)
    for _ in range(60):
        rows = _table(rng)
        n = len(rows)
        counts = _counts(rows)
        rules = _redaction_rules(counts, ["a", "b"], k, n)
        index = {"a": 0, "b": 1}
        holders_only = [
            tuple(REDACTED if counts[f][row[index[f]]] < k else row[index[f]] for f in ("a", "b"))
            for row in rows
        ]
        released, decoys = [], 0
        for row, base in zip(rows, holders_only, strict=True):
            out = list(base)
            is_decoy = False
            for rule in rules:
                j = index[rule.feature]
                if row[j] != rule.value_key and rng.random() < rule.probability:
                    out[j] = REDACTED
                    is_decoy = True
            decoys += is_decoy
            released.append(tuple(out))
        assert _exposure(released, k) <= _exposure(holders_only, k) + k * decoys / n + 1e-12


def test_bernstein_bound_on_the_number_of_decoys() -> None:
    rng = np.random.default_rng(7)
    rows = _table(rng, 2000)
    counts = _counts(rows)
    k, delta = 5, 0.1
    rules = _redaction_rules(counts, ["a", "b"], k, len(rows))
    _, d_max = decoy_allowance(rules, counts, len(rows), k=k, delta=delta)
    draws = 400
    exceed = 0
    for _ in range(draws):
        d = sum(int(rng.binomial(len(rows) - counts[r.feature][r.value_key], r.probability)) for r in rules)
        exceed += d > d_max
    # Bernstein: P(D > d_max) <= delta; 4 standard errors of a share of 400 draws above delta
    assert exceed / draws <= delta + 4 * np.sqrt(delta * (1 - delta) / draws)
    mu = sum((len(rows) - counts[r.feature][r.value_key]) * r.probability for r in rules)
    assert d_max >= mu  # never below the mean


def test_no_rules_no_allowance() -> None:
    assert decoy_allowance([], {}, 100, k=5, delta=0.05) == (0.0, 0)


def test_plan_with_local_suppression_stays_within_budget() -> None:
    rng = np.random.default_rng(3)
    rows = _table(rng, 3000)
    counts = _counts(rows)
    plain = decide_plan(counts, collection="c", k=5, budget=0.05)
    plan = decide_plan(counts, collection="c", k=5, budget=0.05, local_suppression=True)
    assert plan.bound <= 0.05
    assert len(plan.columns) >= len(plain.columns)
    if plan.redactions:  # suppression chosen: its bound carries the decoys' allowance
        assert "decoy allowance" in plan.method
        allowance, _ = decoy_allowance(list(plan.redactions), counts, 3000, k=5, delta=0.05)
        assert plan.bound >= allowance
    else:
        assert plan == plain
