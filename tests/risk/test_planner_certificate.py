"""Issue 38: the planner certifies each candidate node's suppression cost from below; its stated
bound is never above the exhaustive minimum of the chosen recoding, and its loss bound never above
the loss it proposes."""

from __future__ import annotations

import itertools
from collections import Counter

import numpy as np
import polars as pl
import pytest

from sdckit.anonymize import Hierarchy, recode
from sdckit.plan import plan_release
from sdckit.risk import Marginals


def _brute_min(rows: list[tuple[object, ...]], k: int) -> int:
    """Fewest hidden cells so every released row has >= k - 1 identical others (exhaustive, with a cut)."""
    options = [
        [(len(hide), tuple(None if j in hide else v for j, v in enumerate(r)))
         for size in range(len(r) + 1) for hide in itertools.combinations(range(len(r)), size)]
        for r in rows
    ]
    best = [sum(len(r) for r in rows)]
    chosen: list[tuple[object, ...]] = []

    def dfs(i: int, cost: int) -> None:
        if cost >= best[0]:
            return
        if i == len(rows):
            if min(Counter(chosen).values()) >= k:
                best[0] = cost
            return
        for c, t in options[i]:
            chosen.append(t)
            dfs(i + 1, cost + c)
            chosen.pop()

    dfs(0, 0)
    return best[0]


@pytest.mark.parametrize("seed", range(4))
def test_planner_certified_bound_is_below_the_brute_force_minimum(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n = 6
    df = pl.DataFrame({
        "a": [str(v) for v in rng.integers(0, 4, n)],
        "b": rng.choice(["x", "y", "z"], n).tolist(),
        "c": [str(v) for v in rng.integers(0, 2, n)],
    })
    hs = {"a": Hierarchy.from_rows([[str(v), f"{v // 2}", "*"] for v in range(4)])}
    keys = ["a", "b", "c"]
    plan = plan_release(Marginals.from_data(df, keys), k=2, budget=0.0, hierarchies=hs, data=df, suppression=1.0,
                        withhold=False)
    recoded = recode(df, dict(plan.recodings)) if plan.recodings else df
    rows = [tuple(r) for r in recoded.select(list(plan.columns)).iter_rows()]
    truth = _brute_min(rows, 2)
    assert plan.suppression_bound <= truth <= plan.n_suppressed
    assert plan.loss_bound is not None
    assert plan.loss is not None
    assert plan.loss_bound <= plan.loss + 1e-12
    assert plan.loss_gap is not None
    assert 0.0 <= plan.loss_gap < 1.0
    assert plan.to_dict()["loss_gap"] == plan.loss_gap
