"""Monte Carlo of the noisy sample covariance: eigenvalues, the empirical gap, and its spread.

The survey is ``X_t = Sigma^{1/2} W + sqrt(t) Z`` (p x n), Sigma = s on the first k = floor(r p)
coordinates and 0 elsewhere, W and Z with i.i.d. entries of mean 0 and variance 1 drawn from the
same law (Gaussian or not: the limit spectrum is universal, notes §4). The empirical gap
``lambda_k - lambda_{k+1}`` tends to U(t) (exact separation) with an upward bias of order p^(-2/3)
from edge fluctuations (notes §5.6). Memory O(p n); cost O(p^2 n + p^3) per draw.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from sdckit.errors import ParameterError
from sdckit.spectral._laws import NoiseDistribution, as_rng, draw_noise
from sdckit.spectral._model import SpikedModel


def _unit(shape: tuple[int, int], distribution: NoiseDistribution, rng: np.random.Generator) -> NDArray[np.float64]:
    if distribution == "discrete":  # integer noise of variance 1
        return draw_noise(shape, 1.0, "discrete", rng).astype(float)
    return np.asarray(draw_noise(shape, 1.0, distribution, rng), dtype=float)


def simulate_spectrum(
    model: SpikedModel,
    t: float,
    p: int,
    *,
    distribution: NoiseDistribution = "gaussian",
    seed: int | np.random.Generator | None = None,
) -> NDArray[np.float64]:
    """Eigenvalues (descending, length p) of ``X_t X_t^T / n`` for one simulated survey, n = round(p / c).

    Examples
    --------
    >>> lam = simulate_spectrum(SpikedModel(0.5, 0.3, 10.0), 1.5, 200, seed=1)
    >>> lam.shape, bool(lam[59] - lam[60] > 1.0)     # k = 60 spikes; U(1.5) = 1.65
    ((200,), True)
    """
    if isinstance(p, bool) or not isinstance(p, (int, np.integer)) or p < 2:
        raise ParameterError(f"p={p!r}: simulate at least 2 questions.")
    rng = as_rng(seed)
    n = max(1, round(p / model.c))
    k = model.spike_count(p)
    x = np.sqrt(t) * _unit((p, n), distribution, rng)
    x[:k] += np.sqrt(model.s) * _unit((k, n), distribution, rng)
    if n >= p:
        lam = np.linalg.eigvalsh(x @ x.T / n)
    else:  # same non-zero eigenvalues from the smaller n x n Gram matrix
        lam = np.r_[np.zeros(p - n), np.linalg.eigvalsh(x.T @ x / n)]
    return np.asarray(lam[::-1], dtype=float)


@dataclass(frozen=True)
class GapSimulation:
    """Empirical gaps lambda_k - lambda_{k+1} over repeated surveys, against the limit U(t)."""

    gaps: NDArray[np.float64]
    """One gap per replicate (variance units)."""
    predicted: float
    """U(t) of the limit law."""
    p: int
    n: int
    k: int
    t: float
    distribution: str

    @property
    def mean(self) -> float:
        return float(self.gaps.mean())

    @property
    def std_error(self) -> float:
        return float(self.gaps.std(ddof=1) / np.sqrt(self.gaps.size)) if self.gaps.size > 1 else float("nan")

    def to_dict(self) -> dict[str, Any]:
        return {"p": self.p, "n": self.n, "k": self.k, "t": self.t, "distribution": self.distribution,
                "predicted": self.predicted, "mean": self.mean, "std_error": self.std_error,
                "gaps": self.gaps.tolist()}


def simulate_gap(
    model: SpikedModel,
    t: float,
    p: int,
    *,
    reps: int = 5,
    distribution: NoiseDistribution = "gaussian",
    seed: int | np.random.Generator | None = None,
) -> GapSimulation:
    """Monte Carlo of the empirical gap at noise t, ``reps`` independent surveys of p questions."""
    if reps < 1:
        raise ParameterError(f"reps={reps}: run at least one replicate.")
    rng = as_rng(seed)
    k = model.spike_count(p)
    gaps = np.empty(reps)
    for i in range(reps):
        lam = simulate_spectrum(model, t, p, distribution=distribution, seed=rng)
        gaps[i] = lam[k - 1] - lam[k]
    return GapSimulation(gaps=gaps, predicted=float(model.separation(t)), p=p, n=max(1, round(p / model.c)),
                         k=k, t=float(t), distribution=distribution)
