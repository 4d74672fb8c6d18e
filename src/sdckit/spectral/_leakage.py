"""Privacy measures of the additive-noise mechanism for the spiked model (spectral notes §4).

Gaussian data and noise, k = floor(r p) spikes of variance s, noise variance t per entry:

    P_IT(t) = (k / 2) log(1 + s / t)       nats,   inverse  t = s / (exp(2 L / k) - 1)   [seed]
    P_ET(t) = k s t / (s + t)              total MMSE (variance units), inverse t = m s / (k s - m)
    P_ET(t) = -2 t^2 P_IT'(t)              (I-MMSE) [seed]

Inverses round toward privacy: the returned t satisfies the budget in floating point too.
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from sdckit.errors import ParameterError
from sdckit.spectral._laws import DATA_LAWS, non_gaussianity


def spike_count(r: float, p: int) -> int:
    """k = floor(r p), read from the decimal r was written as: ``spike_count(0.29, 100) == 29``.

    ``math.floor(0.29 * 100)`` is 28 because 0.29 is stored below 0.29 (spectral notes §5.5); the
    shortest decimal of the float (``repr``) is what the caller typed.

    Examples
    --------
    >>> spike_count(0.29, 100), spike_count(0.3, 50), spike_count(1 / 3, 3)
    (29, 15, 1)
    """
    if isinstance(p, bool) or not isinstance(p, (int, np.integer)) or p < 1:
        raise ParameterError(f"p={p!r}: the number of questions must be a positive integer.")
    exact = Fraction(repr(float(r))) * int(p)
    k = math.floor(exact)
    if exact - k > 1 - Fraction(1, 10**9):  # r = k/p computed in floats (1/3 * 3 = 0.999...)
        k += 1
    if k < 1:
        raise ParameterError(f"r={r!r}, p={p}: floor(r p) = 0 spikes; raise r or p so that r p >= 1.")
    return int(k)


def _as_array(x: ArrayLike, name: str) -> tuple[NDArray[np.float64], bool]:
    arr = np.asarray(x, dtype=float)
    if np.any(np.isnan(arr)):
        raise ParameterError(f"{name} contains NaN; give numbers.")
    return arr, arr.ndim == 0


def _out(arr: NDArray[Any], scalar: bool) -> Any:
    return float(arr) if scalar else arr


def information_leakage(
    t: ArrayLike, *, k: int, s: float, data_law: str = "gaussian", noise: str = "gaussian", p: int | None = None
) -> Any:
    """P_IT(t) for the spiked model (k eigenvalues s, the rest 0): (k/2) log(1 + s/t) nats; +inf at t = 0.

    ``data_law="gaussian"`` and ``noise="gaussian"`` (defaults): the exact leakage [seed]. The same
    number bounds it from above for data of any law with this covariance (``data_law="any"``,
    Gaussian noise: the Gaussian maximises h(X + sqrt(t) Z) at a given covariance). Noise of
    another law of :class:`AdditiveNoise` adds p D(Z_1), its non-Gaussianity (``p`` required):
    P_IT(t) <= (k/2) log(1 + s/t) + p D(Z_1), +inf for the laws without a density (spectral notes
    §4, "Leakage beyond the Gaussian model"; :func:`sdckit.spectral.leakage_bound` says which bound
    applies).
    """
    if data_law not in DATA_LAWS:
        raise ParameterError(f"data_law={data_law!r}: use 'gaussian' or 'any'.")
    d = non_gaussianity(noise)
    if d > 0 and (p is None or isinstance(p, bool) or int(p) != p or p < k):
        raise ParameterError(f"noise={noise!r}: give p (the number of questions, >= k = {k}) for the non-Gaussian term p D(Z_1).")
    ta, scalar = _as_array(t, "t")
    if np.any(ta < 0):
        raise ParameterError("t < 0: the noise variance t must be >= 0.")
    with np.errstate(divide="ignore"):
        out = 0.5 * k * np.log1p(s / ta)
    if d > 0:
        out = out + int(p or 0) * d
    return _out(out, scalar)


def estimation_leakage(t: ArrayLike, *, k: int, s: float) -> Any:
    """P_ET(t) = k s t / (s + t): total MMSE over the p coordinates (variance units); k s at t = inf."""
    ta, scalar = _as_array(t, "t")
    if np.any(ta < 0):
        raise ParameterError("t < 0: the noise variance t must be >= 0.")
    with np.errstate(invalid="ignore"):
        out = np.where(np.isinf(ta), k * s, k * s * ta / (s + ta))
    return _out(out, scalar)


def noise_for_information(max_leakage_nats: ArrayLike, *, k: int, s: float) -> Any:
    """Smallest t with P_IT(t) <= L = ``max_leakage_nats`` (nats): s / expm1(2 L / k); +inf for L <= 0, 0 for L = inf.

    Rounded toward privacy: ``information_leakage(t) <= L`` holds in floating point.
    """
    ea, scalar = _as_array(max_leakage_nats, "max_leakage_nats")
    with np.errstate(divide="ignore", over="ignore"):
        t = np.where(ea <= 0, np.inf, s / np.expm1(2.0 * np.maximum(ea, 0.0) / k))
    for _ in range(8):  # a few ulps at most
        bad = np.isfinite(t) & (t > 0) & (0.5 * k * np.log1p(s / np.where(t > 0, t, 1.0)) > ea)
        if not bad.any():
            break
        t = np.where(bad, np.nextafter(t, np.inf), t)
    return _out(t, scalar)


def noise_for_estimation(min_mmse: ArrayLike, *, k: int, s: float) -> Any:
    """Smallest t with P_ET(t) >= m = ``min_mmse`` (variance units): m s / (k s - m) for 0 <= m < k s, +inf for m >= k s.

    Rounded toward privacy: ``estimation_leakage(t) >= m`` holds in floating point.
    """
    ea, scalar = _as_array(min_mmse, "min_mmse")
    if np.any(ea < 0):
        raise ParameterError("min_mmse < 0: an MMSE floor is a variance, give min_mmse >= 0.")
    ks = k * s
    with np.errstate(divide="ignore", invalid="ignore"):
        t = np.where(ea >= ks, np.inf, ea * s / (ks - ea))
    for _ in range(8):
        with np.errstate(invalid="ignore"):
            bad = np.isfinite(t) & (ks * t / (s + t) < ea)
        if not bad.any():
            break
        t = np.where(bad, np.nextafter(t, np.inf), t)
    return _out(t, scalar)
