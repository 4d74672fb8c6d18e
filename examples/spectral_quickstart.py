"""Private PCA in five steps: model, separation, leakage, design, mechanism + aggregator.

Run from the repository root: ``.venv/bin/python examples/spectral_quickstart.py``.
"""

from __future__ import annotations

import numpy as np
import polars as pl

from sdckit.spectral import AdditiveNoise, NoisyPCA, SpikedModel, design_noise


def main() -> None:
    # 1. A survey of p = 200 questions, n = 400 respondents (c = 1/2); 30 % of the directions carry
    #    signal of variance s = 10, the rest nothing.
    model = SpikedModel(0.5, 0.3, 10.0)
    print(f"U(0) = {model.separation(0.0):.4f}, t* = {model.critical_noise():.4f}")
    # 2. How much noise may each respondent add before PCA cannot tell signal from noise?
    for t in (0.5, 1.5, 3.0, 4.0):
        print(f"  t = {t}: U = {model.separation(t):.4f}, N = {model.components(t)}, "
              f"leakage = {model.information_leakage(t, p=200):.1f} nats")
    # 3. Design: a leakage budget of 60 nats per respondent.
    d = design_noise(model, 200, max_leakage=60.0)
    print(d.note)
    # 4. The mechanism, applied by each respondent, and the aggregator's PCA.
    rng = np.random.default_rng(1)
    x = rng.normal(size=(400, 200)) * np.r_[np.full(60, np.sqrt(10.0)), np.zeros(140)]
    survey = pl.DataFrame({f"q{j}": x[:, j] for j in range(200)})
    noisy = AdditiveNoise(t=d.t, seed=2).fit_transform(survey)
    pca = NoisyPCA(t=d.t).fit(noisy)
    print(f"aggregator: k = {pca.n_spikes_} spikes, predicted gap {pca.predicted_gap_:.3f}, "
          f"observed {pca.observed_gap_:.3f}, separable: {pca.n_separable_}")


if __name__ == "__main__":
    main()
