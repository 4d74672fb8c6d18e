"""The pair bound on UCI Adult (issue 17): truth, single-column bound and pair bound over k.

The curator asks the pairs that are safe at k = 5 (rare values redacted, the exposure of what it
learns bounded by 5 %), bounds the joint exposure from singles + pairs, plans the release, and
compares local suppression with decoys against the plain plan. Prints the figures of docs/risk.md
("Bounds from blocks") and writes ``docs/figures/risk_pairs.svg``.

Run from the repository root: ``.venv/bin/python examples/risk_pairs.py``.
"""

from __future__ import annotations

import itertools
import warnings
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np

from sdckit.datasets import load_adult
from sdckit.plan import choose_pair_queries, plan_release
from sdckit.risk import Marginals, exposure_curve, pair_bound_curve

FIGURE2 = ["workclass", "marital-status", "race", "sex"]
QIS = ["age", "workclass", "education", "marital-status", "occupation", "race", "sex", "native-country"]
OUT = Path(__file__).resolve().parents[1] / "docs" / "figures" / "risk_pairs.svg"
KS = np.arange(2, 51)


def main() -> None:
    warnings.simplefilter("ignore")
    adult = load_adult()
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.8))
    for ax, cols, name in zip(axes, (FIGURE2, QIS), ("figure-2 columns", "8 quasi-identifiers"), strict=True):
        singles = Marginals.from_data(adult, cols)
        queries = choose_pair_queries(singles, k=5, budget=0.05)  # what is safe to ask at k = 5
        asked = Marginals.from_data(adult, cols, blocks=queries.blocks, redact=queries.redact)
        every = Marginals.from_data(adult, cols, blocks=list(itertools.combinations(cols, 2)))
        truth = np.array([exposure_curve(adult, cols).not_k_anonymous(int(k)) for k in KS])
        c_asked, c_all = pair_bound_curve(asked, k=KS), pair_bound_curve(every, k=KS)
        assert np.all(c_all.blocks >= truth)
        assert np.all(c_asked.blocks >= truth)
        print(f"{name}: {len(queries.queries)} pairs asked at k=5, budget 5%: bound on what the curator learns "
              f"{queries.bound:.4f}, measured {queries.received_exposure(asked)['sum']:.4f}")
        for k in (2, 5, 10, 20, 50):
            i = int(k - 2)
            print(f"  k={k:2d} truth {truth[i]:.4f}  single {c_all.single[i]:.4f}  pairs asked {c_asked.blocks[i]:.4f}"
                  f"  all pairs {c_all.blocks[i]:.4f}")
        strict = c_all.blocks < c_all.single
        print(f"  all pairs strictly tighter at {int(strict.sum())} of {KS.size} k in 2..50")
        ax.plot(KS, truth, color="black", linewidth=2, label="true exposure")
        ax.plot(KS, c_all.single, color="C1", linestyle="--", label="bound from single columns")
        ax.plot(KS, c_all.blocks, color="C0", label="bound from singles + all pairs")
        ax.plot(KS, c_asked.blocks, color="C2", linestyle=":", label="singles + pairs safe at k=5")
        ax.set_title(f"Adult, {name}", fontsize=10)
        ax.set_xlabel("k")
        ax.set_ylim(0, 1.02 if cols is QIS else 0.3)
        ax.grid(alpha=0.3)
        plain = plan_release(singles, k=5, budget=0.05)
        with_pairs = plan_release(asked, k=5, budget=0.05)
        sizes = adult.group_by(list(with_pairs.columns)).len()["len"]
        measured = float(sizes.filter(sizes < 5).sum()) / adult.height
        print(f"  plan k=5 budget 5%: singles {plain.columns} bound {plain.bound:.4f}; "
              f"with pairs {with_pairs.columns} bound {with_pairs.bound:.4f}, measured {measured:.4f}")
    axes[0].set_ylabel("share of users in groups < k")
    axes[0].legend(fontsize=8, loc="upper left")
    fig.tight_layout()
    OUT.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(OUT)
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
