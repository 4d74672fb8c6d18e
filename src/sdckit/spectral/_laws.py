"""The spectral ground: the laws of the noise and of the data (spectral notes §1 and §4).

The unit noise laws a respondent draws from (:func:`draw_noise`, variance t per entry), their
non-Gaussianity D(Z_1) and entropies in nats, and what is assumed of the data's law. Every other
spectral module points down to this one; it imports none of them.
"""

from __future__ import annotations

import math
from typing import Any, Literal

import numpy as np
from numpy.typing import NDArray

from sdckit._estimator import as_generator
from sdckit.errors import ParameterError

NoiseDistribution = Literal["gaussian", "laplace", "uniform", "rademacher", "discrete"]
"""Law of the unit noise Z (mean 0, variance 1 before scaling by sqrt(t)); ``"discrete"`` is the
two-sided geometric law (integers) with variance exactly t, for integer survey answers."""

DISTRIBUTIONS: tuple[str, ...] = ("gaussian", "laplace", "uniform", "rademacher", "discrete")

Seed = int | np.random.Generator | None


def as_rng(seed: Seed) -> np.random.Generator:
    """A numpy Generator from ``seed``: a Generator as is, an int >= 0, or None for OS entropy."""
    return as_generator(seed, name="seed")


def _check_t(t: float) -> float:
    if isinstance(t, bool) or not isinstance(t, (int, float, np.integer, np.floating)) or not math.isfinite(t) or t < 0:
        raise ParameterError(f"t={t!r}: the noise variance per entry must be a finite number >= 0.")
    return float(t)


def draw_noise(shape: tuple[int, ...], t: float, distribution: NoiseDistribution, rng: np.random.Generator) -> NDArray[Any]:
    """I.i.d. noise of mean 0 and variance ``t`` (variance units of the data).

    gaussian N(0, t); laplace with scale sqrt(t/2); uniform on [-sqrt(3t), sqrt(3t)]; rademacher
    +-sqrt(t); discrete: G1 - G2, G_i geometric on {0, 1, ...} with P(G = g) = (1-q) q^g, variance
    2q/(1-q)^2 = t, i.e. q = ((t+1) - sqrt(2t+1)) / t (int64 values).
    """
    t = _check_t(t)
    if distribution == "gaussian":
        return rng.normal(0.0, math.sqrt(t), size=shape)
    if distribution == "laplace":
        return rng.laplace(0.0, math.sqrt(t / 2.0), size=shape)
    if distribution == "uniform":
        a = math.sqrt(3.0 * t)
        return rng.uniform(-a, a, size=shape)
    if distribution == "rademacher":
        return math.sqrt(t) * (2.0 * rng.integers(0, 2, size=shape) - 1.0)
    if distribution == "discrete":
        if t == 0:
            return np.zeros(shape, dtype=np.int64)
        q = ((t + 1.0) - math.sqrt(2.0 * t + 1.0)) / t
        g = rng.geometric(1.0 - q, size=(2, *shape)) - 1  # numpy counts trials from 1
        return (g[0] - g[1]).astype(np.int64)
    raise ParameterError(f"distribution={distribution!r}: use one of {', '.join(map(repr, DISTRIBUTIONS))}.")


DataLaw = Literal["gaussian", "any"]
"""What is assumed of the data's law: ``"gaussian"`` (the closed forms are exact for Gaussian
noise) or ``"any"`` (any law with this covariance: the same formulas are upper bounds)."""

DATA_LAWS: tuple[str, ...] = ("gaussian", "any")

_HALF_LOG_2PI_E = 0.5 * math.log(2.0 * math.pi * math.e)

NON_GAUSSIANITY: dict[str, float] = {
    "gaussian": 0.0,
    "laplace": 0.5 * math.log(math.pi) - 0.5,  # 1/2 log(2 pi e) - (1 + 1/2 log 2)
    "uniform": 0.5 * math.log(math.pi * math.e / 6.0),  # 1/2 log(2 pi e) - log(2 sqrt 3)
    "rademacher": math.inf,  # no density: D(Z || Z_G) = +inf
    "discrete": math.inf,  # integer-valued: no density
}
"""D(Z_1) = D(Z_1 || N(0, 1)) in nats for each unit-variance noise law of :class:`AdditiveNoise`.

Closed forms [derived; notes]: Gaussian 0; Laplace (scale 1/sqrt 2) 1/2 log(pi) - 1/2 = 0.0724;
uniform on [-sqrt 3, sqrt 3] 1/2 log(pi e / 6) = 0.1765; Rademacher and the discrete (two-sided
geometric) law have no density, so D = +inf and so is the leakage of data with a density (given
Y, X is one of countably many points). D is scale-free: D(sqrt(t) Z_1) = D(Z_1) for every t > 0."""


def non_gaussianity(distribution: str) -> float:
    """D(Z_1) in nats of the unit noise law ``distribution`` (see :data:`NON_GAUSSIANITY`).

    Examples
    --------
    >>> round(non_gaussianity("laplace"), 6), round(non_gaussianity("uniform"), 6)
    (0.072365, 0.176485)
    """
    try:
        return NON_GAUSSIANITY[distribution]
    except KeyError:
        raise ParameterError(
            f"distribution={distribution!r}: use one of {', '.join(map(repr, NON_GAUSSIANITY))}."
        ) from None


def noise_entropy(distribution: str, t: float) -> float:
    """h(sqrt(t) Z_1), the differential entropy of one coordinate of the noise (nats).

    Gaussian 1/2 log(2 pi e t); Laplace 1 + log(2 b), b = sqrt(t/2); uniform log(2 sqrt(3 t)); the
    same as 1/2 log(2 pi e t) - D(Z_1). Raises for the laws without a density.
    """
    d = non_gaussianity(distribution)
    if not math.isfinite(d):
        raise ParameterError(f"distribution={distribution!r} has no density, so no differential entropy.")
    if not t > 0:
        raise ParameterError(f"t={t!r}: the noise variance must be > 0.")
    return 0.5 * math.log(t) + _HALF_LOG_2PI_E - d


def discrete_noise_entropy(t: float) -> float:
    """H(K) in nats of the discrete noise of variance t (:func:`~sdckit.spectral.draw_noise`).

    K = G1 - G2, G_i geometric on {0, 1, ...} with ratio q, so P(K = k) = (1 - q)/(1 + q) q^|k| and
    E|K| = 2q / (1 - q^2) [derived]: H(K) = -log((1 - q)/(1 + q)) - E|K| log q, with
    q = ((t + 1) - sqrt(2t + 1)) / t. 0 at t = 0.
    """
    if not t >= 0 or not math.isfinite(t):
        raise ParameterError(f"t={t!r}: the noise variance must be a finite number >= 0.")
    if t == 0:
        return 0.0
    q = ((t + 1.0) - math.sqrt(2.0 * t + 1.0)) / t
    if q <= 0.0:  # t below float resolution of q: K = 0 almost surely
        return 0.0
    return float(-math.log((1.0 - q) / (1.0 + q)) - 2.0 * q / (1.0 - q * q) * math.log(q))
