"""Reproduce Figure 2 of the statistical-anonymity paper (arXiv:2201.12306) on UCI Adult.

Four features with supports 2 to 9 (workclass, marital-status, race, sex; '?' counts as a value):
the true exposure Q_J(t) against the bound min(Theorem 2 with all values kept, Theorem 3) (the
paper's curve) and sdckit's best bound (Theorem 2 with the best sacrificed values), over t from
1e-5 to 0.3 on a log axis. Writes ``docs/figures/risk_figure2.svg``.

Run from the repository root: ``.venv/bin/python examples/risk_figure2.py``.
"""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np

from sdckit.datasets import load_adult
from sdckit.risk import Marginals, exposure_curve, joint_exposure_bound

COLUMNS = ["workclass", "marital-status", "race", "sex"]
OUT = Path(__file__).resolve().parents[1] / "docs" / "figures" / "risk_figure2.svg"


def main() -> None:
    adult = load_adult()
    curve = exposure_curve(adult, COLUMNS)  # the truth (needs the joint table)
    m = Marginals.from_data(adult, COLUMNS)  # what the curator sees
    ts = np.logspace(-5, np.log10(0.3), 400)
    truth = curve.at(ts)
    support = joint_exposure_bound(m, t=ts, method="support")  # Theorem 2, nothing sacrificed
    theorem3 = joint_exposure_bound(m, t=ts, method="theorem3")
    paper = np.minimum(support, theorem3)
    best = joint_exposure_bound(m, t=ts, method="best")
    assert np.all(best >= truth)  # soundness, checked on every point
    assert np.all(paper >= truth)

    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    ax.step(ts, truth, where="post", color="black", linewidth=2, label="true exposure $Q_J(t)$")
    ax.plot(ts, paper, color="C1", linestyle="--", label="min(Thm 2 all values kept, Thm 3)")
    ax.plot(ts, best, color="C0", label="best bound (Thm 2, best sacrificed values)")
    ax.set_xscale("log")
    ax.set_xlim(1e-5, 0.3)
    ax.set_ylim(-0.02, 1.02)
    ax.set_xlabel("t (share of rows)")
    ax.set_ylabel("exposure (share of users)")
    sup = ", ".join(f"{c} {s}" for c, s in m.supports.items())
    ax.set_title(f"UCI Adult, n = {curve.n:,}; supports: {sup}", fontsize=9)
    ax.legend(fontsize=8, loc="upper left")
    OUT.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(OUT, bbox_inches="tight", metadata={"Date": None})
    plt.close(fig)
    for t in (1e-4, 1e-3, 1e-2, 0.1):
        print(
            f"t={t:g}: truth {curve.at(t):.4f}  min(support, thm3) {float(np.minimum(joint_exposure_bound(m, t=t, method='support'), joint_exposure_bound(m, t=t, method='theorem3'))):.4f}"
            f"  best {joint_exposure_bound(m, t=t):.4f}"
        )
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
