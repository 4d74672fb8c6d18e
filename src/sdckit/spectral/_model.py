"""The seed's spiked model: noise–information separation U(t), t* and the privacy–utility functions.

Population covariance Sigma with one non-zero eigenvalue s of multiplicity k = floor(r p); local
additive noise of variance t per entry; aspect ratio c = p / n. The sample covariance of the noisy
data has population law ``H_t = (1 - r) delta_t + r delta_{t+s}`` [seed; spectral notes §1].
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy.optimize import brentq

from sdckit.errors import InfeasibleError, ParameterError, SdcWarning
from sdckit.spectral import _leakage
from sdckit.spectral._discriminant import critical_noise_precise, separation_discriminant, separation_precise
from sdckit.spectral._kernels import spiked_edges

SeparationMethod = Literal["critical", "discriminant", "precise"]
"""How U(t) is computed: ``"critical"`` Silverstein–Choi critical points in float64 (fast, default),
``"discriminant"`` the seed's discriminant method in exact/mpmath arithmetic, ``"precise"``
Silverstein–Choi at ``dps`` digits (mpmath; tiny gaps near t*)."""

SupMethod = Literal["monotone", "grid", "both"]
"""How a privacy–utility function takes its sup: ``"monotone"`` assumes U non-increasing (the seed's
Conjecture 2) and evaluates U at the constraint's end point; ``"grid"`` takes the sup over a grid
of t (assumption-free, a lower bound of the sup); ``"both"`` returns the larger and warns when they
differ."""


def _arr(x: ArrayLike, name: str) -> tuple[NDArray[np.float64], bool]:
    a = np.asarray(x, dtype=float)
    if np.any(np.isnan(a)):
        raise ParameterError(f"{name} contains NaN; give numbers.")
    return a, a.ndim == 0


def _ret(a: NDArray[Any], scalar: bool) -> Any:
    return a.item() if scalar else a


@dataclass(frozen=True)
class SpikedSupport:
    """Support of F_t in (0, inf) for the spiked model at one or several t (arrays broadcast like t).

    Every edge is an eigenvalue in variance units; ``gap_low``/``gap_high`` are NaN without a gap.
    """

    t: Any
    """Noise variance per entry."""
    left: Any
    """Left edge of the support in (0, inf) (0 when c = 1)."""
    gap_low: Any
    """Right edge of the lower (noise) component."""
    gap_high: Any
    """Left edge of the upper (information) component."""
    right: Any
    """Right edge of the support."""
    separation: Any
    """U(t) = gap_high - gap_low, or 0 (t = 0: the convention of :meth:`SpikedModel.separation`)."""
    n_components: Any
    """N(t): components in (0, inf), the atom at 0 not counted."""
    atom: float
    """Mass at 0: max(0, 1 - 1/c)."""
    upper_mass: float
    """Share of eigenvalues in the upper component when N = 2: r."""
    lower_mass: float
    """Share in the lower component when N = 2: min(1, 1/c) - r."""

    def to_dict(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in self.__dataclass_fields__}


@dataclass(frozen=True)
class SpikedModel:
    """The seed's toy model: Sigma has one eigenvalue ``s`` of multiplicity floor(r p), the rest 0.

    The sample covariance of the noisy survey ``X + sqrt(t) Z`` has, as p, n -> infinity with
    p / n = c, the limit eigenvalue law ``F_t = F^{c, H_t}`` with ``H_t = (1-r) delta_t + r delta_{t+s}``.

    Parameters
    ----------
    c : aspect ratio p / n (> 0).
    r : share of the p eigenvalues that carry information, in (0, 1).
    s : the information eigenvalue (variance units, > 0).

    Notes
    -----
    Conventions [spectral notes §3-§4]: t is the noise variance per entry (variance units); U(0) =
    s (1 - sqrt(rc))^2 if rc < 1, else 0 (the limit t -> 0+); t* = 0 when rc >= 1 (no gap for any
    t > 0); for c > 1 the atom at 0 (mass 1 - 1/c) is not a component; for c = 1 the left edge is 0.
    Leakages take p and use k = floor(r p) read from r's decimal (:func:`spike_count`).

    References
    ----------
    .. [1] Diaz, Asoodeh, Alajaji, Linder, Belinschi, Mingo (2018). On the noise-information
       separation of a private principal component analysis scheme. arXiv:1801.03553.

    Examples
    --------
    >>> m = SpikedModel(0.5, 0.3, 10.0)
    >>> round(m.separation(1.5), 6), m.components(1.5), round(m.critical_noise(), 6)
    (1.651906, 2, 3.510009)
    >>> round(m.information_leakage(1.5, p=50), 4)   # (15/2) log(1 + 10/1.5) nats
    15.2766
    """

    c: float
    r: float
    s: float

    def __post_init__(self) -> None:
        for name, v in (("c", self.c), ("r", self.r), ("s", self.s)):
            if isinstance(v, bool) or not isinstance(v, (int, float, np.integer, np.floating)) or not math.isfinite(v):
                raise ParameterError(f"{name}={v!r}: give a finite number.")
        if self.c <= 0:
            raise ParameterError(f"c={self.c!r}: the aspect ratio p/n must be > 0.")
        if not 0 < self.r < 1:
            raise ParameterError(f"r={self.r!r}: the share of informative eigenvalues must be in (0, 1).")
        if self.s <= 0:
            raise ParameterError(f"s={self.s!r}: the information eigenvalue must be > 0.")
        object.__setattr__(self, "c", float(self.c))
        object.__setattr__(self, "r", float(self.r))
        object.__setattr__(self, "s", float(self.s))

    def __bool__(self) -> bool:
        msg = "a SpikedModel is a function of t, not a truth value; use model.components(t) == 2"
        raise TypeError(msg)

    # -- the spectrum ------------------------------------------------------------------------

    def _t(self, t: ArrayLike) -> tuple[NDArray[np.float64], bool]:
        ta, scalar = _arr(t, "t")
        if np.any(ta < 0) or np.any(np.isinf(ta)):
            raise ParameterError("t must be finite and >= 0 (the noise variance per entry).")
        return ta, scalar

    def separation(self, t: ArrayLike, *, method: SeparationMethod = "critical", dps: int = 50) -> Any:
        """U(t): distance between the noise and the information components of supp F_t (variance units).

        U(t) = x(y_b) - x(y_a), the image of the two critical points y_a < y_b of the Silverstein–Choi
        map between the poles t and t + s, computed as ``(c d^3/2) sum_k w_k tau_k^2 /
        ((tau_k - y_a)^2 (tau_k - y_b)^2)`` with d = y_b - y_a (no cancellation) [derived, notes §3].
        It is the limit of ``lambda_k - lambda_{k+1}`` of the noisy sample covariance, k = floor(rp).
        0 for t >= t*. Homogeneous: U(lambda t; lambda s) = lambda U(t; s).

        Parameters
        ----------
        t : noise variance per entry (>= 0), scalar or array.
        method : ``"critical"`` (float64, about 0.3 µs per t), ``"discriminant"`` (the seed's method,
            exact coefficients and mpmath roots, about 10 ms per t) or ``"precise"`` (mpmath).
        dps : decimal digits for the mpmath methods.
        """
        ta, scalar = self._t(t)
        if method == "critical":
            out = spiked_edges(np.ascontiguousarray(ta.ravel()), self.c, self.r, self.s)[4].reshape(ta.shape)
        elif method == "discriminant":
            out = np.array([separation_discriminant(self.c, self.r, self.s, float(v), dps=dps) for v in ta.ravel()])
            out = out.reshape(ta.shape)
        elif method == "precise":
            out = np.array([float(separation_precise(self.c, self.r, self.s, float(v), dps=dps)) for v in ta.ravel()])
            out = out.reshape(ta.shape)
        else:
            raise ParameterError(f"method={method!r}: use 'critical', 'discriminant' or 'precise'.")
        return _ret(out, scalar)

    def components(self, t: ArrayLike) -> Any:
        """N(t) in {1, 2}: components of supp F_t in (0, inf), from the closed-form gap condition

        ``c^(1/3) [(1-r)^(1/3) t^(2/3) + r^(1/3) (t+s)^(2/3)] < s^(2/3)``  [derived, notes §3].

        N(0) = 1 (at t = 0 the noise component has collapsed into the atom at 0).
        """
        ta, scalar = self._t(t)
        n = spiked_edges(np.ascontiguousarray(ta.ravel()), self.c, self.r, self.s)[5].reshape(ta.shape)
        return int(n) if scalar else n

    def support(self, t: ArrayLike) -> SpikedSupport:
        """Edges of supp F_t in (0, inf), U(t), N(t) and the masses (arrays shaped like t)."""
        ta, scalar = self._t(t)
        left, glo, ghi, right, gap, ncomp = spiked_edges(np.ascontiguousarray(ta.ravel()), self.c, self.r, self.s)
        shape = ta.shape

        def f(v: NDArray[np.float64]) -> Any:
            return _ret(v.reshape(shape), scalar)

        return SpikedSupport(
            t=f(ta.ravel()), left=f(left), gap_low=f(glo), gap_high=f(ghi), right=f(right),
            separation=f(gap), n_components=_ret(ncomp.reshape(shape), scalar), atom=max(0.0, 1.0 - 1.0 / self.c),
            upper_mass=self.r, lower_mass=min(1.0, 1.0 / self.c) - self.r,
        )

    def critical_noise(self, *, dps: int | None = None) -> float:
        """t*: the noise variance at which the gap closes, U(t) > 0 iff t < t* [derived, notes §3].

        Root of ``c^(1/3) [(1-r)^(1/3) tau^(2/3) + r^(1/3) (1+tau)^(2/3)] = 1`` (increasing in tau),
        t* = s tau; 0 when rc >= 1; tends to s / sqrt(c) as r -> 0. ``dps`` solves it with mpmath.
        """
        if self.r * self.c >= 1:
            return 0.0
        if dps is not None:
            return float(critical_noise_precise(self.c, self.r, self.s, dps=dps))
        c3, a3, b3 = np.cbrt(self.c), np.cbrt(1.0 - self.r), np.cbrt(self.r)

        def g(tau: float) -> float:
            return float(c3 * (a3 * tau ** (2.0 / 3.0) + b3 * (1.0 + tau) ** (2.0 / 3.0)) - 1.0)

        hi = 1.0 / math.sqrt(self.c * (1.0 - self.r))
        return self.s * float(brentq(g, 0.0, hi, xtol=1e-300, rtol=4 * np.finfo(float).eps, maxiter=500))

    def noise_for_separation(self, u: ArrayLike) -> Any:
        """Largest t with U(t) >= u (variance units): the inverse of U on [0, t*).

        NaN where u > U(0) (no noise level reaches it); t* where u <= 0. Assumes U non-increasing
        (Conjecture 2; checked on a grid in the tests).
        """
        ua, scalar = _arr(u, "u")
        tstar = self.critical_noise()
        u0 = self.separation(0.0)
        out = np.empty(ua.shape)
        flat = out.reshape(-1)
        for i, v in enumerate(ua.ravel()):
            if v <= 0:
                flat[i] = tstar
            elif v > u0:
                flat[i] = np.nan
            elif v == u0:
                flat[i] = 0.0
            else:
                flat[i] = brentq(lambda x, v=v: self.separation(x) - v, 0.0, tstar, xtol=1e-14 * self.s, rtol=1e-14)
        return _ret(out, scalar)

    # -- privacy -----------------------------------------------------------------------------

    def spike_count(self, p: int) -> int:
        """k = floor(r p), from r's decimal (0.29 * 100 gives 29, not 28)."""
        return _leakage.spike_count(self.r, p)

    def information_leakage(self, t: ArrayLike, p: int, *, data_law: str = "gaussian", noise: str = "gaussian") -> Any:
        """P_IT(t) = I(X; X_t) = (k/2) log(1 + s/t) nats per respondent, k = floor(rp) [seed, notes §4].

        Exact for Gaussian data and noise; an upper bound for ``data_law="any"``; plus p D(Z_1) for
        non-Gaussian ``noise`` (see :func:`sdckit.spectral._leakage.information_leakage`).
        """
        self._t(t)
        return _leakage.information_leakage(t, k=self.spike_count(p), s=self.s, data_law=data_law, noise=noise, p=p)

    def estimation_leakage(self, t: ArrayLike, p: int) -> Any:
        """P_ET(t) = k s t / (s + t): total MMSE of X given X_t (variance units) [seed, notes §4]."""
        self._t(t)
        return _leakage.estimation_leakage(t, k=self.spike_count(p), s=self.s)

    def noise_for_information(self, max_leakage_nats: ArrayLike, p: int) -> Any:
        """Smallest t with P_IT(t) <= L = ``max_leakage_nats``: s / (exp(2 L / k) - 1), rounded toward privacy."""
        return _leakage.noise_for_information(max_leakage_nats, k=self.spike_count(p), s=self.s)

    def noise_for_estimation(self, min_mmse: ArrayLike, p: int) -> Any:
        """Smallest t with P_ET(t) >= m = ``min_mmse``: m s / (k s - m); +inf when m >= k s (no such t)."""
        return _leakage.noise_for_estimation(min_mmse, k=self.spike_count(p), s=self.s)

    def _sup(self, t_lo: NDArray[np.float64], method: SupMethod, grid: int) -> NDArray[np.float64]:
        """sup{U(t) : t >= t_lo} by the chosen method (t_lo = inf gives 0)."""
        finite = np.isfinite(t_lo)
        mono = np.zeros(t_lo.shape)
        mono[finite] = self.separation(t_lo[finite])
        if method == "monotone":
            return mono
        if method not in ("grid", "both"):
            raise ParameterError(f"method={method!r}: use 'monotone', 'grid' or 'both'.")
        tstar = self.critical_noise()
        ts = np.linspace(0.0, tstar, grid) if tstar > 0 else np.zeros(1)
        us = self.separation(ts)
        suffix = np.maximum.accumulate(us[::-1])[::-1]  # sup over t >= ts[i]
        idx = np.searchsorted(ts, t_lo, side="left")
        on_grid = np.where(idx < ts.size, suffix[np.minimum(idx, ts.size - 1)], 0.0)
        best = np.maximum(mono, np.where(finite, on_grid, 0.0))
        if method == "both":
            diff = best - mono
            if np.any(diff > 1e-9 * self.s):
                i = int(np.argmax(diff))
                warnings.warn(
                    f"U is not non-increasing here: the sup over a grid exceeds U at the constraint's end "
                    f"(t >= {float(t_lo.ravel()[i]):.6g}) by {float(diff.ravel()[i]):.3g}; "
                    "the grid value is returned (Conjecture 2 fails for these parameters).",
                    SdcWarning,
                    stacklevel=3,
                )
        return best if method == "both" else np.where(finite, on_grid, 0.0)

    def utility_at_information(self, max_leakage_nats: ArrayLike, p: int, *, method: SupMethod = "monotone",
                               grid: int = 2001) -> Any:
        """g_IT(L) = sup{U(t) : P_IT(t) <= L}: the separation left under a leakage budget L (nats).

        ``L = max_leakage_nats``. With U non-increasing, g_IT(L) = U(P_IT^{-1}(L)) [seed, notes §4];
        g_IT(L) = 0 iff L <= P_IT(t*). L <= 0 gives 0 (no finite t leaks nothing); L = inf gives U(0).

        Examples
        --------
        >>> m = SpikedModel(0.5, 0.3, 10.0)
        >>> leak_star = m.information_leakage(m.critical_noise(), p=50)   # 10.1086 nats
        >>> m.utility_at_information(0.999 * leak_star, p=50), round(m.utility_at_information(12.0, p=50), 4)
        (0.0, 0.5685)
        """
        ea, scalar = _arr(max_leakage_nats, "max_leakage_nats")
        t_lo = np.asarray(self.noise_for_information(ea, p), dtype=float)
        return _ret(self._sup(t_lo, method, grid), scalar)

    def utility_at_estimation(self, min_mmse: ArrayLike, p: int, *, method: SupMethod = "monotone",
                              grid: int = 2001) -> Any:
        """g_ET(m) = sup{U(t) : P_ET(t) >= m}: the separation left under an MMSE floor m = ``min_mmse``.

        With U non-increasing, g_ET(m) = U(m s / (k s - m)) for 0 <= m < k s [seed, notes §4].
        For m >= k s the constraint set is empty: returns 0 and warns (SdcWarning).
        """
        ea, scalar = _arr(min_mmse, "min_mmse")
        t_lo = np.asarray(self.noise_for_estimation(ea, p), dtype=float)
        if np.any(np.isinf(t_lo)):
            ks = self.spike_count(p) * self.s
            warnings.warn(
                f"MMSE floor min_mmse >= k s = {ks:.6g}: no noise level reaches it (P_ET < k s for every t); "
                "g_ET is 0 there by convention (empty constraint set).",
                SdcWarning,
                stacklevel=2,
            )
        return _ret(self._sup(t_lo, method, grid), scalar)

    def information_for_utility(self, u: ArrayLike, p: int) -> Any:
        """Inverse of g_IT: the largest leakage budget (nats) needed to keep U >= u, i.e. P_IT at
        :meth:`noise_for_separation`; NaN where u > U(0)."""
        t = np.asarray(self.noise_for_separation(u), dtype=float)
        out = np.where(np.isnan(t), np.nan, np.asarray(self.information_leakage(np.nan_to_num(t), p)))
        return _ret(out, np.ndim(u) == 0)

    def estimation_for_utility(self, u: ArrayLike, p: int) -> Any:
        """Inverse of g_ET: the largest MMSE floor compatible with U >= u; NaN where u > U(0)."""
        t = np.asarray(self.noise_for_separation(u), dtype=float)
        out = np.where(np.isnan(t), np.nan, np.asarray(self.estimation_leakage(np.nan_to_num(t), p)))
        return _ret(out, np.ndim(u) == 0)

    def require_gap(self) -> None:
        """Raise :class:`InfeasibleError` when no t > 0 keeps a gap (rc >= 1)."""
        if self.r * self.c >= 1:
            raise InfeasibleError(
                f"r c = {self.r * self.c:.4g} >= 1: the information component cannot be separated for any "
                "noise t > 0 (too few respondents for the number of spikes). Collect more rows (smaller c)."
            )
