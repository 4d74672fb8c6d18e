"""The pair bound (issue 17): joint_exposure_bound with all 91 pair tables of Adult's 14 columns.

No peer: sdcMicro has no bound from marginals. Target: under 1 s for one k (issue 17). The exact
minimum over the partitions of the 14 columns into pairs and singles is a dynamic programme over
the 2^14 subsets (numba; compiled once, cached on disk, the warm-up run is not timed).
Run: ``cd benchmarks && ../.venv/bin/python risk_pair_bound.py``.
"""

from __future__ import annotations

import itertools
import warnings

import numpy as np

from _harness import bench, emit
from sdckit.datasets import load_adult, load_adult_hierarchies
from sdckit.plan import choose_pair_queries, plan_release
from sdckit.risk import Marginals, joint_exposure_bound, pair_bound_curve


def main() -> None:
    warnings.simplefilter("ignore")
    adult = load_adult()
    cols = [c for c in adult.columns if c != "income"]
    pairs = list(itertools.combinations(cols, 2))
    assert len(cols) == 14
    assert len(pairs) == 91
    emit("risk Marginals.from_data adult 14 cols + 91 pairs",
         bench(lambda: Marginals.from_data(adult, cols, blocks=pairs), repeat=3))
    m = Marginals.from_data(adult, cols, blocks=pairs)
    for k in (2, 5, 50):
        value = joint_exposure_bound(m, k=k)
        emit(f"risk pair bound adult 14 cols 91 pairs k={k}", bench(lambda k=k: joint_exposure_bound(m, k=k), repeat=3),
             target=1.0, bound=round(float(value), 4), single=round(float(joint_exposure_bound(m.singles(), k=k)), 4))
    qis = ["age", "workclass", "education", "marital-status", "occupation", "race", "sex", "native-country"]
    m8 = Marginals.from_data(adult, qis, blocks=list(itertools.combinations(qis, 2)))
    emit("risk pair bound adult 8 QIs 28 pairs k=5", bench(lambda: joint_exposure_bound(m8, k=5), repeat=3), target=1.0)
    fig2 = ["workclass", "marital-status", "race", "sex"]
    m4 = Marginals.from_data(adult, fig2, blocks=list(itertools.combinations(fig2, 2)))
    ks = np.arange(2, 51)
    emit("risk pair_bound_curve adult figure-2 columns k=2..50", bench(lambda: pair_bound_curve(m4, k=ks), repeat=3))
    emit("risk choose_pair_queries adult 8 QIs k=5 budget=0.05",
         bench(lambda: choose_pair_queries(m8.singles(), k=5, budget=0.05), repeat=3))
    # the recoding lattice over the built-in hierarchies, from singles and from singles + 28 pairs
    hier = load_adult_hierarchies()
    for label, marg in (("singles", m8.singles()), ("28 pairs", m8)):
        plan = plan_release(marg, k=5, budget=0.05, hierarchies=hier)
        emit(f"risk plan_release lattice adult 8 QIs {label} k=5 budget=0.05",
             bench(lambda marg=marg: plan_release(marg, k=5, budget=0.05, hierarchies=hier), repeat=3),
             columns=len(plan.columns), loss=round(plan.loss, 4), nodes=plan.n_evaluated)


if __name__ == "__main__":
    main()
