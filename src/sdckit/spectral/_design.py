"""Noise design: from a leakage budget, an MMSE floor or a utility target to a noise level t.

Leakage of Gaussian data with covariance eigenvalues lambda_i under noise t [seed; notes §4]:

    P_IT(t) = (1/2) sum_i log(1 + lambda_i / t)  nats,     P_ET(t) = t sum_i lambda_i / (lambda_i + t).

For the spiked model (k eigenvalues s, the rest 0) these are the closed forms of
:class:`SpikedModel`. A model fitted to data may carry a noise *floor* b (the mean of the small
eigenvalues): then Sigma = s P_k + b I, the k spikes have variance s + b, and the separation is
U(t + b) because the floor acts as noise already present.
"""

from __future__ import annotations

import math
import sys
from dataclasses import asdict, dataclass
from typing import Any, Literal

import numpy as np
from numpy.typing import ArrayLike
from scipy.optimize import brentq

from sdckit._io import check_numeric
from sdckit.errors import InfeasibleError, InputError, ParameterError
from sdckit.spectral._laws import non_gaussianity
from sdckit.spectral._model import SpikedModel
from sdckit.spectral._nongaussian import _spectrum, gaussian_leakage
from sdckit.spectral._support import component_means


@dataclass(frozen=True, kw_only=True)
class SpikedFit:
    """A spiked model fitted to a spectrum (see :func:`fit_spiked`)."""

    model: SpikedModel
    """SpikedModel(c = p/n, r = k/p, s)."""
    k: int
    """Number of spikes: the largest gap lambda_j - lambda_{j+1} among j <= p/2 (or given)."""
    floor: float
    """Noise floor b - t: variance of the small eigenvalues beyond the known noise t (>= 0)."""
    t_effective: float
    """t + floor: the noise level the model sees."""
    how: str
    """How the fit was made, in one sentence."""

    def to_dict(self) -> dict[str, Any]:
        return {"c": self.model.c, "r": self.model.r, "s": self.model.s, "k": self.k, "floor": self.floor,
                "t_effective": self.t_effective, "how": self.how}


def fit_spiked(eigenvalues: ArrayLike, *, n: int, k: int | None = None, t: float = 0.0) -> SpikedFit:
    """Fit the spiked model to the eigenvalues of a sample covariance (method of moments).

    k: the largest gap ``lambda_j - lambda_{j+1}`` among ``1 <= j <= max(1, p // 2)`` unless given
    (spikes are a minority, r < 1/2). The population law is ``(1 - r) delta_b + r delta_(b+s)``
    with r = k/p, c = p/n; b (the noise level, t + floor) and s solve two moment equations [derived]:
    the trace, ``b + r s = mean of all eigenvalues`` (E tr Sigma_hat / p = tr Sigma / p), and the mean
    of the lower component of the limit law ``F^{c,H}`` = the mean of the p - k smallest eigenvalues
    (exact separation puts exactly those in the lower component). Without a gap in the fitted law,
    b falls back to the mean of the small eigenvalues.

    Parameters
    ----------
    eigenvalues : the p eigenvalues of the sample covariance (any order; variance units).
    n : number of rows the covariance was computed from.
    k : number of spikes (1 <= k < p), or None to choose it.
    t : noise variance already in the data (known), subtracted from b to give the floor.
    """
    lam = np.sort(np.asarray(eigenvalues, dtype=float))[::-1]
    p = lam.size
    if p < 2:
        raise InputError(f"a spiked model needs at least 2 columns; got {p}.")
    if not np.all(np.isfinite(lam)):
        raise InputError("the eigenvalues contain NaN or inf; check the data for missing values.")
    if k is None:
        top = max(1, p // 2)
        k = int(np.argmax(lam[:top] - lam[1 : top + 1])) + 1
        how = f"k = {k}: the largest gap among the top {top} eigenvalues"
    else:
        if not 1 <= k < p:
            raise ParameterError(f"k={k}: the number of spikes must be in [1, p - 1] = [1, {p - 1}].")
        how = f"k = {k} (given)"
    r = k / p
    mean_all = float(lam.mean())
    b = float(lam[k:].mean())
    s = (mean_all - b) / r
    if s <= 0:
        raise InfeasibleError("the spectrum is flat (no eigenvalue above the floor); there is no spike to fit.")
    how += "; trace matched (b + r s = mean eigenvalue)"
    refined = _match_lower_mean(p / n, r, mean_all, b)
    if refined is not None:
        b, s = refined, (mean_all - refined) / r
        how += ", and b such that the limit law's lower component has the observed mean of the small eigenvalues"
    else:
        how += ", b = mean of the small eigenvalues (no gap in the fitted law to refine it)"
    floor = max(b - float(t), 0.0)
    return SpikedFit(model=SpikedModel(p / n, r, s), k=k, floor=floor, t_effective=float(t) + floor, how=how)


def _match_lower_mean(c: float, r: float, mean_all: float, observed: float) -> float | None:
    """b in (0, mean_all) with mean(lower component of F^{c, H_b}) = observed, H_b = (1-r) d_b + r d_(b+s),
    s = (mean_all - b) / r; None when the law has no gap near the naive b or no root is bracketed."""
    def gap_mean(b: float) -> float:
        s = (mean_all - b) / r
        means = component_means(c, [b, b + s], [1 - r, r])
        if len(means) != 2:
            raise ArithmeticError("no gap")
        return means[0] - observed

    try:
        lo, hi = 0.5 * observed, min(observed * 1.5, mean_all * (1 - 1e-9))
        glo, ghi = gap_mean(lo), gap_mean(hi)
        if glo * ghi > 0:
            return None
        return float(brentq(gap_mean, lo, hi, xtol=1e-12 * mean_all, rtol=1e-10))
    except ArithmeticError:
        return None


@dataclass(frozen=True, kw_only=True)
class NoiseDesign:
    """A recommended noise level and what it guarantees (OpenDP style: the guarantee is recorded)."""

    t: float
    """Recommended noise variance per entry (variance units of the data)."""
    constraint: str
    """The request, e.g. 'information leakage <= 2 nats'."""
    information_leakage_nats: float
    """P_IT(t) per respondent (nats)."""
    estimation_mmse: float
    """P_ET(t): total MMSE of an answer given its noisy version (variance units)."""
    separation: float
    """U at this t: the limit gap between information and noise eigenvalues (variance units)."""
    separation_without_noise: float
    """U with no added noise (the floor only): the most there is to keep."""
    utility_share: float
    """separation / separation_without_noise (0..1)."""
    critical_noise: float
    """t* (added noise beyond which the gap closes)."""
    n_separable: int
    """k if the gap survives, else 0."""
    c: float
    r: float
    s: float
    p: int
    k: int
    floor: float
    note: str
    """A plain sentence on what the design means."""
    noise: str = "gaussian"
    """The noise law the design is for (:data:`~sdckit.spectral._nongaussian.NON_GAUSSIANITY`)."""
    gaussian_leakage_nats: float = math.nan
    """1/2 sum_i log(1 + lambda_i / t): the Gaussian term of the leakage (nats)."""
    non_gaussian_nats: float = 0.0
    """p D(Z_1): what the noise law's non-Gaussianity may add (nats; 0 for Gaussian noise).
    ``information_leakage_nats`` is the sum of the two terms, the bound of spectral notes §4."""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _leak(t: float, lam: list[tuple[float, int]]) -> float:
    """(1/2) sum_i log(1 + lambda_i / t) over distinct eigenvalues with multiplicity (the closed form
    of the spiked model, bit for bit, when the floor is 0)."""
    if t == 0:
        return math.inf
    return sum(0.5 * mult * math.log1p(v / t) for v, mult in lam)


def _mmse(t: float, lam: list[tuple[float, int]]) -> float:
    if math.isinf(t):
        return sum(mult * v for v, mult in lam)
    return sum(mult * v * t / (v + t) for v, mult in lam)


def design_noise(
    model: SpikedModel,
    p: int,
    *,
    max_leakage: float | None = None,
    min_mmse: float | None = None,
    min_separation: float | None = None,
    floor: float = 0.0,
    noise: str = "gaussian",
) -> NoiseDesign:
    """Recommend the noise variance t for a spiked model and report the utility left.

    Give exactly one of: ``max_leakage`` (P_IT budget, nats): the smallest t with P_IT(t) <= budget;
    ``min_mmse`` (P_ET floor, variance units): the smallest t with P_ET(t) >= floor; or
    ``min_separation`` (variance units): the largest t keeping U >= target (the converse design).
    Budgets are met in floating point (rounded toward privacy): the returned t is finite, > 0 for a
    leakage budget, and its leakage never exceeds the budget; a budget no finite t meets raises
    :class:`InfeasibleError` naming the budget and the smallest leakage reachable. With ``floor`` b > 0 the population
    is Sigma = s P_k + b I (see :func:`fit_spiked`); leakages use all p eigenvalues and U(t + b).

    ``noise`` is the law of the noise to be added. The leakage is bounded for data of any law by
    ``P_IT(t) <= 1/2 sum_i log(1 + lambda_i / t) + p D(Z_1)`` (spectral notes §4, Bound 2; D = 0
    for Gaussian noise, 0.0724 nats for Laplace, 0.1765 for uniform), so a leakage budget L is met
    by the smallest t whose Gaussian term is at most L - p D(Z_1); ``information_leakage_nats`` is
    that sum. Laws without a density (rademacher, discrete) have an infinite bound on continuous
    data: a leakage budget with them raises :class:`InfeasibleError` with the reason, as does a
    budget L <= p D(Z_1) (the bound never falls below p D(Z_1)).

    Examples
    --------
    >>> d = design_noise(SpikedModel(0.5, 0.3, 10.0), p=50, max_leakage=12.0)
    >>> round(d.t, 4), d.information_leakage_nats <= 12.0, round(d.separation, 4), d.n_separable
    (2.5297, True, 0.5685, 15)
    >>> d = design_noise(SpikedModel(0.5, 0.3, 10.0), p=50, max_leakage=12.0, noise="laplace")
    >>> round(d.t, 4), round(d.gaussian_leakage_nats + d.non_gaussian_nats, 9) == round(d.information_leakage_nats, 9)
    (4.8605, True)
    """
    d_noise = non_gaussianity(noise)
    extra = p * d_noise if d_noise > 0 else 0.0
    given = [v is not None for v in (max_leakage, min_mmse, min_separation)]
    if sum(given) != 1:
        raise ParameterError("give exactly one of max_leakage (nats), min_mmse (variance) or min_separation.")
    if floor < 0 or not math.isfinite(floor):
        raise ParameterError(f"floor={floor!r}: a noise floor is a variance >= 0.")
    k = model.spike_count(p)
    if k >= p:
        raise ParameterError(f"k = floor(r p) = {k} >= p = {p}: no noise eigenvalues left; lower r.")
    lam = [(model.s + floor, k)] + ([(floor, p - k)] if floor > 0 else [])
    tstar_eff = model.critical_noise()
    if max_leakage is not None:
        if not max_leakage > 0:
            raise ParameterError(f"max_leakage={max_leakage!r}: a leakage budget in nats must be > 0.")
        constraint = f"information leakage <= {max_leakage:g} nats"
        if not math.isfinite(extra):
            raise InfeasibleError(
                f"noise={noise!r} has no density: its leakage bound is infinite on continuous data (given "
                "the noisy answer, the true one is one of countably many points), so no t meets "
                f"max_leakage={max_leakage:g} nats; use gaussian, laplace or uniform noise, or give t."
            )
        budget = max_leakage - extra  # what the Gaussian term may use
        if not budget > 0:
            raise InfeasibleError(
                f"max_leakage={max_leakage:g} nats cannot be guaranteed with {noise} noise on p = {p} columns: "
                f"its bound is at least p D(Z_1) = {extra:.6g} nats at any t; raise the budget above that, "
                "or use gaussian noise."
            )
        t = float(model.noise_for_information(budget, p)) if floor == 0 else math.nan
        if not (0 < t < math.inf and _leak(t, lam) <= budget):  # floor > 0, or the closed form over/underflowed
            t = _solve_t(lambda x: budget - _leak(x, lam), model.s)
            if t == 0:  # every t down to the smallest normal float meets the budget: take that one, not 0
                t = _T_MIN
        if not (math.isfinite(t) and _leak(t, lam) <= budget):
            reachable = _leak(_T_MAX, lam)
            raise InfeasibleError(
                f"max_leakage={max_leakage:g} nats cannot be met with finite noise: the smallest leakage "
                f"reachable is {reachable:.6g} nats (at t = {_T_MAX:.3g}); raise the budget."
            )
    elif min_mmse is not None:
        if not min_mmse >= 0:
            raise ParameterError(f"min_mmse={min_mmse!r}: an MMSE floor is a variance >= 0.")
        total = _mmse(math.inf, lam)
        if min_mmse >= total:
            raise InfeasibleError(
                f"min_mmse={min_mmse:g} >= {total:g} (the total variance): no noise level reaches it; lower the floor."
            )
        constraint = f"estimation MMSE >= {min_mmse:g}"
        if floor == 0:
            t = float(model.noise_for_estimation(min_mmse, p))
        else:
            t = _solve_t(lambda x: _mmse(x, lam) - min_mmse, model.s)
    else:
        assert min_separation is not None
        top = float(model.separation(floor))
        if min_separation > top:
            raise InfeasibleError(
                f"min_separation={min_separation:g} > {top:g}, the separation with no added noise; lower the target."
            )
        constraint = f"separation >= {min_separation:g}"
        t = max(float(model.noise_for_separation(min_separation)) - floor, 0.0)
    u = float(model.separation(t + floor))
    u0 = float(model.separation(floor))
    n_sep = k if u > 0 else 0
    added_tstar = max(tstar_eff - floor, 0.0)
    if n_sep:
        note = (f"t = {t:.4g} keeps the {k} information eigenvalues apart from the noise (gap {u:.4g}, "
                f"{u / u0:.0%} of the gap without noise); the gap closes at t* = {added_tstar:.4g}.")
    else:
        note = (f"t = {t:.4g} >= t* = {added_tstar:.4g}: at this privacy level PCA cannot tell the {k} "
                "information components from the noise (U = 0). Relax the budget or collect more rows.")
    gauss = _leak(t, lam)
    return NoiseDesign(
        t=t, constraint=constraint, information_leakage_nats=gauss + extra, estimation_mmse=_mmse(t, lam),
        separation=u, separation_without_noise=u0, utility_share=u / u0 if u0 > 0 else 0.0,
        critical_noise=added_tstar, n_separable=n_sep, c=model.c, r=model.r, s=model.s, p=p, k=k,
        floor=floor, note=note, noise=noise, gaussian_leakage_nats=gauss, non_gaussian_nats=extra,
    )


_T_MIN = sys.float_info.min  # the smallest normal float64: the least noise a design may return
_T_MAX = sys.float_info.max / 4  # the most (finite, and t + floor stays finite)


def _solve_t(f: Any, scale: float) -> float:
    """Smallest t in [_T_MIN, _T_MAX] with f(t) >= 0 for f increasing in t (solved in log t), nudged
    up until it holds; 0.0 when f(_T_MIN) >= 0 already, +inf when f(_T_MAX) < 0."""
    del scale  # the bracket is the whole float range: a budget of any size has its root inside
    lo, hi = math.log(_T_MIN), math.log(_T_MAX)
    g = lambda lt: f(math.exp(lt))  # noqa: E731
    if g(lo) >= 0:
        return 0.0
    if g(hi) < 0:
        return math.inf
    t = math.exp(brentq(g, lo, hi, xtol=1e-15, rtol=4 * np.finfo(float).eps))
    while f(t) < 0:
        t = math.nextafter(t, math.inf)
    return t


def noise_for_covariance(cov: ArrayLike, max_leakage: float, *, noise: str = "gaussian") -> float:
    """Smallest t with 1/2 log det(I + Sigma/t) + p D(Z_1) <= ``max_leakage`` (nats) for this covariance.

    The bound of spectral notes §4 (Bound 2) for any data law with covariance Sigma; rounded toward
    privacy (the bound at the returned t never exceeds the budget in floating point). Raises
    :class:`InfeasibleError` for laws without a density (an infinite bound) or a budget <= p D(Z_1).

    Examples
    --------
    >>> t = noise_for_covariance([[1.0, 0.5], [0.5, 1.0]], 1.0, noise="uniform")
    >>> from sdckit.spectral import leakage_bound
    >>> round(t, 4), leakage_bound([[1.0, 0.5], [0.5, 1.0]], t, noise="uniform").upper <= 1.0
    (1.0303, True)
    """
    lam = _spectrum(cov)
    p = int(lam.size)
    d = non_gaussianity(noise)
    extra = p * d if d > 0 else 0.0
    if not max_leakage > 0:
        raise ParameterError(f"max_leakage={max_leakage!r}: a leakage budget in nats must be > 0.")
    if not math.isfinite(extra):
        raise InfeasibleError(f"noise={noise!r} has no density: its leakage bound is infinite on continuous data.")
    budget = max_leakage - extra
    if not budget > 0:
        raise InfeasibleError(
            f"max_leakage={max_leakage:g} nats cannot be guaranteed with {noise} noise on p = {p} columns: "
            f"its bound is at least p D(Z_1) = {extra:.6g} nats at any t; raise the budget or use gaussian noise."
        )
    if float(lam.max()) == 0.0:
        return _T_MIN
    t = _solve_t(lambda x: budget - gaussian_leakage(lam, x), float(lam.max()))
    if t == 0:
        return _T_MIN
    if not math.isfinite(t):
        raise InfeasibleError(
            f"max_leakage={max_leakage:g} nats cannot be met with finite noise; raise the budget."
        )
    return t


def design_noise_from_data(
    X: Any,
    columns: Any = None,
    *,
    k: int | None = None,
    standardize: bool = False,
    max_leakage: float | None = None,
    min_mmse: float | None = None,
    min_separation: float | None = None,
    missing: Literal["error", "drop"] = "error",
    noise: str = "gaussian",
) -> tuple[SpikedFit, NoiseDesign]:
    """Fit the spiked model to representative clean data, then :func:`design_noise` on it.

    The eigenvalues of the sample covariance (columns centred; z-scored when ``standardize``, so t is
    then in units of each column's variance) give (k, s, floor) by :func:`fit_spiked`; the design
    accounts for the floor as noise already present. Rows with missing values raise
    (``missing="error"``, the default) or are left out of the fit (``missing="drop"``).

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(1000, 20)) * np.r_[np.full(2, 3.0), np.full(18, 0.3)]
    >>> fit, d = design_noise_from_data(X, max_leakage=5.0)
    >>> fit.k, d.n_separable, d.information_leakage_nats <= 5.0
    (2, 2, True)
    """
    if isinstance(X, np.ndarray):
        z = np.asarray(X, dtype=float)
        if z.ndim != 2 or not np.all(np.isfinite(z)):
            raise InputError("X must be a finite 2-D array (rows = respondents, columns = answers).")
        names: tuple[str, ...] = tuple(f"column {j}" for j in range(z.shape[1]))
    else:
        z, cols = check_numeric(X, columns, missing=missing, min_rows=2)
        names = tuple(f"column {c!r}" for c in cols)
    n, p = z.shape
    z = z - z.mean(axis=0)
    if standardize:
        sd = z.std(axis=0)
        if np.any(sd == 0):
            j = int(np.argmax(sd == 0))
            raise InputError(
                f"{names[j]} is constant; a z-score divides by its standard deviation (0). "
                "Leave it out of the columns, or do not standardise."
            )
        z = z / sd
    lam = np.linalg.eigvalsh(z.T @ z / n)
    fit = fit_spiked(lam, n=n, k=k)
    design = design_noise(fit.model, p, max_leakage=max_leakage, min_mmse=min_mmse,
                          min_separation=min_separation, floor=fit.floor, noise=noise)
    return fit, design
