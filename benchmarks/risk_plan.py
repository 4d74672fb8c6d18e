"""plan_release and joint_exposure_bound on Adult's 14 columns (32,561 users).

No peer: sdcMicro has no bound from marginals. Target: the bound "well under a second" (issue 3).
Run: ``cd benchmarks && ../.venv/bin/python risk_plan.py``.
"""

from __future__ import annotations

import warnings

import numpy as np

from _harness import bench, emit
from sdckit.datasets import load_adult
from sdckit.plan import plan_release
from sdckit.risk import Marginals, joint_exposure_bound


def main() -> None:
    warnings.simplefilter("ignore")
    adult = load_adult()
    cols = [c for c in adult.columns if c != "income"]
    m = Marginals.from_data(adult, cols)
    emit("risk Marginals.from_data adult 14 cols", bench(lambda: Marginals.from_data(adult, cols), repeat=5))
    emit("risk joint_exposure_bound adult 14 cols k=5", bench(lambda: joint_exposure_bound(m, k=5), repeat=5),
         target=1.0)
    ts = np.logspace(-5, 0, 100)
    emit("risk joint_exposure_bound adult 14 cols 100 t", bench(lambda: joint_exposure_bound(m, t=ts), repeat=3),
         target=1.0)
    for k, budget in ((5, 0.05), (10, 0.2)):
        plan = plan_release(m, k=k, budget=budget)
        emit(f"risk plan_release adult 14 cols k={k} budget={budget}",
             bench(lambda k=k, budget=budget: plan_release(m, k=k, budget=budget), repeat=3),
             columns=len(plan.columns), bound=round(plan.bound, 4))


if __name__ == "__main__":
    main()
