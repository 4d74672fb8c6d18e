"""The statistical-exposure illustration (Figure 3 of arXiv:2201.12306).

Population: the joint distribution p of UCI Adult on five quasi-identifiers (workclass,
marital-status, race, sex, relationship). A curator draws a sample of n_hat = 2,000 users; the
release will hold n = 500 other users; k = 5. Over 300 curator samples we compare

* the plug-in exposure Q_hat(t) at t = (k - 1) / n (the exposure of the empirical distribution,
  discontinuous in p, hence noisy), and
* the unbiased statistical-exposure estimate S_hat of Q^stat_n(k) (smooth in p, low variance),

against the true Q^stat_n(k) and the exposure Q_p(t) of the population, and the realised share not
k-anonymous of fresh releases. Writes ``docs/figures/risk_figure3.svg``.

Run from the repository root: ``.venv/bin/python examples/risk_statistical.py``.
"""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np

from sdckit.datasets import load_adult
from sdckit.risk import estimate_statistical_exposure, exposure_curve, statistical_exposure

COLUMNS = ["workclass", "marital-status", "race", "sex", "relationship"]
N_RELEASE, N_SAMPLE, K, REPS, SEED = 500, 2000, 5, 300, 20261130
OUT = Path(__file__).resolve().parents[1] / "docs" / "figures" / "risk_figure3.svg"


def plugin_q(counts: np.ndarray, t_num: int, n_release: int) -> float:
    """Q_hat(t) with t = t_num / n_release: sample share in values with c / n_hat <= t (integers)."""
    n_hat = counts.sum()
    return float(counts[counts * n_release <= t_num * n_hat].sum() / n_hat)


def main() -> None:
    adult = load_adult()
    joint = adult.group_by(COLUMNS, maintain_order=True).len()["len"].to_numpy()  # fixed order: reproducible
    p = joint / joint.sum()
    rng = np.random.default_rng(SEED)
    q_stat = statistical_exposure(p, n=N_RELEASE, k=K)
    q_pop = float(p[p * N_RELEASE <= K - 1].sum())  # exposure Q_p((k - 1) / n) of the population
    plug, stat, realised = [], [], []
    for _ in range(REPS):
        sample = rng.multinomial(N_SAMPLE, p)
        plug.append(plugin_q(sample, K - 1, N_RELEASE))
        stat.append(estimate_statistical_exposure(sample, n=N_RELEASE, k=K, interval="mcdiarmid").estimate)
        release = rng.multinomial(N_RELEASE, p)
        realised.append(float(release[release < K].sum() / N_RELEASE))
    plug_a, stat_a, real_a = map(np.asarray, (plug, stat, realised))

    fig, ax = plt.subplots(figsize=(6.4, 4.0))
    lo = min(plug_a.min(), real_a.min(), stat_a.min())
    hi = max(plug_a.max(), real_a.max(), stat_a.max())
    bins = np.linspace(lo - 0.02 * (hi - lo), hi + 0.02 * (hi - lo), 40)
    ax.hist(plug_a, bins=bins, alpha=0.5, color="C1", label=f"plug-in exposure $\\hat Q(t)$ (sd {plug_a.std():.4f})")
    ax.hist(stat_a, bins=bins, alpha=0.6, color="C0", label=f"statistical exposure $\\hat S$ (sd {stat_a.std():.4f})")
    ax.hist(real_a, bins=bins, histtype="step", color="grey", label="realised share < k in fresh releases")
    ax.axvline(q_stat, color="C0", linewidth=2, label=f"true $Q^{{stat}}_n(k)$ = {q_stat:.4f}")
    ax.axvline(q_pop, color="C1", linestyle="--", label=f"population exposure $Q_p(t)$ = {q_pop:.4f}")
    ax.set_xlabel("share of users")
    ax.set_ylabel(f"count over {REPS} curator samples")
    ax.set_title(f"Adult on {len(COLUMNS)} columns: n = {N_RELEASE}, n_hat = {N_SAMPLE}, k = {K}", fontsize=9)
    ax.legend(fontsize=7)
    OUT.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(OUT, bbox_inches="tight", metadata={"Date": None})
    plt.close(fig)
    print(f"Q_stat = {q_stat:.5f}; population exposure Q_p(t) = {q_pop:.5f}")
    print(f"plug-in     mean {plug_a.mean():.5f} sd {plug_a.std():.5f}")
    print(f"statistical mean {stat_a.mean():.5f} sd {stat_a.std():.5f}  (unbiased for Q_stat)")
    print(f"realised    mean {real_a.mean():.5f} sd {real_a.std():.5f}")
    print(f"full-table exposure at k={K}: {exposure_curve(adult, COLUMNS).not_k_anonymous(K):.5f}")
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
