"""Reproduce the seed's Figures 2-5 (arXiv:1801.03553) into docs/figures/spectral_*.svg.

Run from the repository root: ``.venv/bin/python examples/spectral_figures.py``. The seed does not
state c for its Figures 3-4; we use c = 1/2 (p = 50 questions, n = 100 respondents for Fig. 4).
"""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

from sdckit.spectral import SpikedModel
from sdckit.spectral._plots import plot_discriminant, plot_histogram, plot_privacy_utility, plot_separation

OUT = Path(__file__).resolve().parent.parent / "docs" / "figures"
SEED = 20261130


def main() -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    plt.rcParams["svg.hashsalt"] = "sdckit"  # stable SVG ids: the files only change when the figure does
    model = SpikedModel(0.5, 0.3, 10.0)
    figures = {
        "spectral_fig2_histogram.svg": plot_histogram(model, 1.5, 1000, seed=SEED),
        "spectral_fig3_separation.svg": plot_separation(model),
        "spectral_fig4_privacy_utility.svg": plot_privacy_utility(model, 50),
        "spectral_fig5_discriminant.svg": plot_discriminant(model, 1.5),
    }
    for name, fig in figures.items():
        fig.savefig(OUT / name, metadata={"Date": None})
        plt.close(fig)
        print(f"wrote {OUT / name}")


if __name__ == "__main__":
    main()
