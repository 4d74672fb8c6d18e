"""Limit spectrum of a sample covariance matrix for a discrete population law (spectral notes §2-§3).

Population law ``H = sum_k w_k delta_{tau_k}`` (``tau_k >= 0``), aspect ratio ``c = p / n``. With the
variable ``y = -1/m`` (m the companion Stieltjes transform) the Silverstein–Choi map reads [derived]

    x(y) = y (1 + c sum_k w_k tau_k / (y - tau_k)),      x'(y) = 1 - phi(y),
    phi(y) = c sum_k w_k tau_k^2 / (tau_k - y)^2.

``phi`` is strictly convex between consecutive poles ``tau_k`` and tends to 0 at +-infinity, so:
the left edge is the single root of ``phi = 1`` in ``(-inf, tau_1)``, the right edge the single
root in ``(tau_K, inf)``, and each interval ``(tau_k, tau_{k+1})`` holds 0 or 2 roots ``y_a < y_b``,
giving the gap ``(x(y_a), x(y_b))``. Every root is bracketed; no polynomial root finder is used.

The width of a gap is computed without cancellation [derived]:

    x(y_b) - x(y_a) = (c d^3 / 2) sum_k w_k tau_k^2 / ((tau_k - y_a)^2 (tau_k - y_b)^2),  d = y_b - y_a,

which follows from integrating ``1 - phi`` over ``(y_a, y_b)`` and ``phi(y_a) = phi(y_b) = 1``.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from sdckit.errors import ParameterError

_EPS = np.finfo(float).eps


@dataclass(frozen=True)
class Interval:
    """One connected component of the support in (0, inf)."""

    lower: float
    """Left edge (eigenvalue units: the units of tau)."""
    upper: float
    """Right edge."""
    mass: float
    """Share of the p eigenvalues in this component (0..1)."""


@dataclass(frozen=True)
class Gap:
    """A gap between two components, and which eigenvalues it separates."""

    lower: float
    """Right edge of the component below."""
    upper: float
    """Left edge of the component above."""
    width: float
    """``upper - lower``, computed without cancellation."""
    mass_above: float
    """Share of the p eigenvalues above the gap: the gap separates lambda_k and lambda_{k+1} with
    k = mass_above * p (exact separation, Bai–Silverstein 1999)."""

    def index(self, p: int) -> int:
        """The k such that this gap lies between the k-th and (k+1)-th largest eigenvalue."""
        return round(self.mass_above * p)


@dataclass(frozen=True)
class Support:
    """Support of the limit law ``F^{c,H}``: components in (0, inf), their gaps, the atom at 0.

    Examples
    --------
    >>> sup = support(0.1, [1.0, 10.0], [0.7, 0.3])
    >>> sup.n_components, [round(g.width, 4) for g in sup.gaps], sup.atom
    (2, [5.3599], 0.0)
    """

    c: float
    taus: tuple[float, ...]
    weights: tuple[float, ...]
    intervals: tuple[Interval, ...]
    gaps: tuple[Gap, ...]
    atom: float
    """Mass at 0: max(H({0}), 1 - 1/c)."""
    edges_y: tuple[float, ...] = field(default=(), repr=False)
    """The critical points y = -1/m behind the edges, in edge order (for checks)."""

    @property
    def n_components(self) -> int:
        """Number of connected components in (0, inf) (the atom at 0 is not counted)."""
        return len(self.intervals)

    def contains(self, x: ArrayLike) -> NDArray[np.bool_]:
        """True where ``x`` lies in a component (edges included)."""
        xs = np.asarray(x, dtype=float)
        out = np.zeros(xs.shape, dtype=bool)
        for iv in self.intervals:
            out |= (xs >= iv.lower) & (xs <= iv.upper)
        return out

    def to_dict(self) -> dict[str, Any]:
        return {
            "c": self.c,
            "taus": list(self.taus),
            "weights": list(self.weights),
            "atom_at_zero": self.atom,
            "intervals": [{"lower": i.lower, "upper": i.upper, "mass": i.mass} for i in self.intervals],
            "gaps": [
                {"lower": g.lower, "upper": g.upper, "width": g.width, "mass_above": g.mass_above}
                for g in self.gaps
            ],
        }


def check_population(
    c: float, taus: ArrayLike, weights: ArrayLike | None = None
) -> tuple[float, NDArray[np.float64], NDArray[np.float64]]:
    """Validate ``(c, H)``; merge repeated atoms, sort by tau, normalise weights summing to 1 +- 1e-9."""
    c = float(c)
    if not (math.isfinite(c) and c > 0):
        raise ParameterError(f"c={c!r}: the aspect ratio p/n must be a positive number.")
    tau = np.atleast_1d(np.asarray(taus, dtype=float))
    if tau.size == 0:
        raise ParameterError("taus is empty: give at least one population eigenvalue.")
    if not np.all(np.isfinite(tau)) or np.any(tau < 0):
        raise ParameterError(f"taus={tau.tolist()!r}: population eigenvalues must be finite and >= 0.")
    w = np.full(tau.size, 1.0 / tau.size) if weights is None else np.atleast_1d(np.asarray(weights, dtype=float))
    if w.shape != tau.shape:
        raise ParameterError(f"weights has {w.size} entries for {tau.size} taus; give one weight per tau.")
    if not np.all(np.isfinite(w)) or np.any(w <= 0):
        raise ParameterError(f"weights={w.tolist()!r}: weights must be positive.")
    if abs(w.sum() - 1.0) > 1e-9:
        raise ParameterError(f"weights sum to {w.sum()!r}, not 1: H must be a probability law.")
    uniq, inv = np.unique(tau, return_inverse=True)
    merged = np.bincount(inv, weights=w)
    return c, uniq, merged / merged.sum()


def _phi(y: float, c: float, tau: NDArray[np.float64], w: NDArray[np.float64]) -> tuple[float, float]:
    """phi(y) - 1 and phi'(y)."""
    d = tau - y
    q = w * tau * tau / (d * d)
    return float(c * q.sum() - 1.0), float(2.0 * c * (q / d).sum())


def _dphi(y: float, c: float, tau: NDArray[np.float64], w: NDArray[np.float64]) -> tuple[float, float]:
    """phi'(y) and phi''(y)."""
    d = tau - y
    q = w * tau * tau / (d * d * d)
    return float(2.0 * c * q.sum()), float(6.0 * c * (q / d).sum())


def _solve(fdf: Any, lo: float, hi: float, increasing: bool, x0: float | None = None) -> float:
    """Root of a monotone function on the open bracket (lo, hi): Newton, bisection when it leaves.

    The ends are never evaluated (they may be poles).
    """
    x = 0.5 * (lo + hi) if x0 is None or not (lo < x0 < hi) else x0
    for _ in range(400):
        f, df = fdf(x)
        if f == 0.0:
            return x
        if (f > 0.0) == increasing:
            hi = x
        else:
            lo = x
        xn = x - f / df if df != 0.0 else 0.5 * (lo + hi)
        if not (lo < xn < hi):
            xn = 0.5 * (lo + hi)
        if abs(xn - x) <= 2.0 * _EPS * max(abs(x), abs(xn)) or hi - lo <= 4.0 * _EPS * max(abs(lo), abs(hi)):
            return xn
        x = xn
    return x


def _x_of_y(y: float, c: float, tau: NDArray[np.float64], w: NDArray[np.float64]) -> float:
    return float(y * (1.0 + c * (w * tau / (y - tau)).sum()))


def _gap_width(ya: float, yb: float, c: float, tau: NDArray[np.float64], w: NDArray[np.float64]) -> float:
    d = yb - ya
    return float(0.5 * c * d**3 * (w * tau * tau / ((tau - ya) ** 2 * (tau - yb) ** 2)).sum())


def support(c: float, taus: ArrayLike, weights: ArrayLike | None = None) -> Support:
    """Support of the limit eigenvalue law of a sample covariance matrix (Silverstein–Choi).

    Parameters
    ----------
    c : aspect ratio p / n (> 0).
    taus : population eigenvalues (>= 0; variance units), e.g. ``[t, t + s]`` for the spiked model.
    weights : their shares of the p eigenvalues (positive, summing to 1); default equal shares.

    Returns
    -------
    Support
        Components in (0, inf) with their masses, the gaps (width and the eigenvalue index each
        separates) and the atom at 0 (mass ``max(H({0}), 1 - 1/c)``).

    Notes
    -----
    [lit: Silverstein–Choi 1995; spectral notes §3]. The complement of the support is
    ``{x(y) : phi(y) < 1}``; see the module docstring for x and phi. Cost O(K^2) for K atoms.
    Component masses [derived, checked against the integrated density]: a component holds the
    weights of the atoms tau_k whose y lies in its range; the lowest takes the remainder of
    ``1 - atom``.

    Examples
    --------
    >>> sup = support(0.5, [1.0])          # Marchenko–Pastur: [(1 - sqrt c)^2, (1 + sqrt c)^2]
    >>> [(round(i.lower, 6), round(i.upper, 6)) for i in sup.intervals]
    [(0.085786, 2.914214)]
    """
    c, tau_all, w_all = check_population(c, taus, weights)
    return _support(c, tuple(tau_all.tolist()), tuple(w_all.tolist()))


@functools.lru_cache(maxsize=256)
def _support(c: float, taus: tuple[float, ...], weights: tuple[float, ...]) -> Support:
    """Cached body of :func:`support` (inputs already validated)."""
    tau_all, w_all = np.array(taus), np.array(weights)
    pos = tau_all > 0
    tau, w = tau_all[pos], w_all[pos]
    w0 = float(w_all[~pos].sum())
    atom = max(w0, 1.0 - 1.0 / c, 0.0)
    if tau.size == 0:
        return Support(c, tuple(tau_all.tolist()), tuple(w_all.tolist()), (), (), 1.0)
    fdf = lambda y: _phi(y, c, tau, w)  # noqa: E731
    bound = math.sqrt(c * float((w * tau * tau).sum()))  # phi <= 1 beyond this distance from the poles
    y_left = _solve(fdf, tau[0] - bound - 1.0, tau[0], increasing=True)
    if abs(c - 1.0) <= 4 * _EPS and w0 == 0.0:
        y_left = 0.0  # phi(0) = c exactly: the left edge is 0 (c = 1, density ~ x^-1/2)
    y_right = _solve(fdf, tau[-1], tau[-1] + bound + 1.0, increasing=False)
    # Candidate gaps, one per interval between consecutive poles.
    raw_gaps: list[tuple[float, float, int]] = []
    for k in range(tau.size - 1):
        lo, hi = float(tau[k]), float(tau[k + 1])
        y0 = _solve(lambda y: _dphi(y, c, tau, w), lo, hi, increasing=True)
        f0, _ = _phi(y0, c, tau, w)
        if f0 < 0.0:
            ya = _solve(fdf, lo, y0, increasing=False)
            yb = _solve(fdf, y0, hi, increasing=True)
            if yb > ya:
                raw_gaps.append((ya, yb, k))
    x_left = 0.0 if y_left == 0.0 else max(_x_of_y(y_left, c, tau, w), 0.0)
    x_right = _x_of_y(y_right, c, tau, w)
    total = 1.0 - atom
    gaps: list[Gap] = []
    edges_y = [y_left]
    for ya, yb, k in raw_gaps:
        above = float(w[k + 1 :].sum())
        width = _gap_width(ya, yb, c, tau, w)
        xa = _x_of_y(ya, c, tau, w)
        gaps.append(Gap(lower=xa, upper=xa + width, width=width, mass_above=above))
        edges_y += [ya, yb]
    edges_y.append(y_right)
    lowers = [x_left] + [g.upper for g in gaps]
    uppers = [g.lower for g in gaps] + [x_right]
    aboves = [g.mass_above for g in gaps] + [0.0]
    masses = [total - aboves[0]] + [aboves[i] - aboves[i + 1] for i in range(len(gaps))]
    intervals = tuple(Interval(lo, hi, m) for lo, hi, m in zip(lowers, uppers, masses, strict=True))
    return Support(
        c, tuple(tau_all.tolist()), tuple(w_all.tolist()), intervals, tuple(gaps), atom, tuple(edges_y)
    )


# ---------------------------------------------------------------------------------------------
# Stieltjes / Cauchy transforms and the density
# ---------------------------------------------------------------------------------------------


def _poly_coefficients(c: float, tau: NDArray[np.float64], w: NDArray[np.float64]) -> tuple[NDArray[Any], NDArray[Any]]:
    """``z q1(m) + q0(m) = 0`` (ascending coefficients) equivalent to ``z = x(m)``, positive tau only.

    x(m) = -1/m + c sum_k w_k tau_k / (1 + tau_k m); multiply by m prod_k (1 + tau_k m).
    """
    P = np.polynomial.polynomial
    prod = np.array([1.0])
    for tk in tau:
        prod = P.polymul(prod, [1.0, tk])
    q1 = P.polymul([0.0, 1.0], prod)  # z m prod
    s = np.zeros(tau.size)
    for k in range(tau.size):
        others = np.array([1.0])
        for j, tj in enumerate(tau):
            if j != k:
                others = P.polymul(others, [1.0, tj])
        s = P.polyadd(s, w[k] * tau[k] * others)
    q0 = P.polysub(prod, c * P.polymul([0.0, 1.0], s))
    q0 = np.pad(q0, (0, q1.size - q0.size))
    return q1, q0


def _companion_roots(z: NDArray[np.complex128], q1: NDArray[Any], q0: NDArray[Any]) -> NDArray[np.complex128]:
    """All roots m of ``z q1(m) + q0(m)`` for each z: shape (len(z), deg)."""
    coef = z[:, None] * q1[None, :] + q0[None, :]  # ascending, degree deg
    deg = q1.size - 1
    comp = np.zeros((z.size, deg, deg), dtype=complex)
    comp[:, 1:, :-1] = np.eye(deg - 1)
    comp[:, :, -1] = -coef[:, :-1] / coef[:, -1:]
    roots = np.linalg.eigvals(comp)
    # Two Newton steps polish each root on the original polynomial (the companion loses digits).
    dcoef = coef[:, 1:] * np.arange(1, deg + 1)
    for _ in range(2):
        f = np.zeros_like(roots)
        df = np.zeros_like(roots)
        for j in range(deg, -1, -1):
            f = f * roots + coef[:, j : j + 1]
        for j in range(deg - 1, -1, -1):
            df = df * roots + dcoef[:, j : j + 1]
        ok = df != 0
        step = np.where(ok, f / np.where(ok, df, 1.0), 0.0)
        roots = roots - np.where(np.isfinite(step), step, 0.0)
    return np.asarray(roots, dtype=complex)


def companion_transform(z: ArrayLike, c: float, taus: ArrayLike, weights: ArrayLike | None = None) -> NDArray[np.complex128]:
    """Stieltjes transform ``m(z) = int dF_(x) / (x - z)`` of the companion law ``F_ = (1-c) delta_0 + c F``.

    The physical branch: for Im z > 0 the root with Im m > 0 (unique); for real z in the support
    the limit from above (Im m > 0); for real z outside it the real root with ``x'(m) > 0``
    (Silverstein–Choi). Roots are chosen by this domain, never by their order.
    """
    c, tau_all, w_all = check_population(c, taus, weights)
    pos = tau_all > 0
    tau, w = tau_all[pos], w_all[pos]
    zz = np.atleast_1d(np.asarray(z, dtype=complex)).ravel()
    if tau.size == 0:
        return np.asarray(-(1.0 / zz), dtype=complex).reshape(np.shape(z))
    flip = zz.imag < 0
    zq = np.where(flip, zz.conj(), zz)
    q1, q0 = _poly_coefficients(c, tau, w)
    roots = _companion_roots(zq, q1, q0)
    out = np.empty(zq.size, dtype=complex)
    sup = support(c, tau_all, w_all)
    real_z = zq.imag == 0
    inside = real_z & sup.contains(zq.real)
    upper = ~real_z | inside
    if upper.any():
        idx = np.argmax(roots[upper].imag, axis=1)
        out[upper] = roots[upper][np.arange(idx.size), idx]
    outside = real_z & ~inside
    if outside.any():
        m = roots[outside].real
        with np.errstate(divide="ignore", invalid="ignore"):
            xprime = 1.0 / m**2 - c * (w * tau * tau / (1.0 + np.multiply.outer(m, tau)) ** 2).sum(axis=-1)
        near_real = np.abs(roots[outside].imag) <= 1e-7 * (1.0 + np.abs(m))
        score = np.where(near_real & np.isfinite(xprime), xprime, -np.inf)
        idx = np.argmax(score, axis=1)
        out[outside] = m[np.arange(idx.size), idx]
    out = np.where(flip, out.conj(), out)
    return np.asarray(out, dtype=complex).reshape(np.shape(z))


def cauchy_transform(z: ArrayLike, c: float, taus: ArrayLike, weights: ArrayLike | None = None) -> NDArray[np.complex128]:
    """Cauchy transform ``G(z) = int dF(x) / (z - x)`` of the limit law ``F = F^{c,H}`` (spectral notes §2).

    ``G = -(m_ + (1 - c)/z) / c`` with ``m_`` the companion transform (:func:`companion_transform`).
    G maps C+ to C-; on the real line inside the support it returns the limit from above
    (Im G < 0, the physical branch), outside it the real value.

    Examples
    --------
    >>> g = cauchy_transform(2.0 + 1.0j, 0.5, [1.0])      # checks c z G^2 + (1 - c - z) G + 1 = 0
    >>> bool(abs(0.5 * (2 + 1j) * g**2 + (1 - 0.5 - (2 + 1j)) * g + 1) < 1e-12)
    True
    """
    c = float(c)
    zz = np.asarray(z, dtype=complex)
    m = companion_transform(zz, c, taus, weights)
    return -(m + (1.0 - c) / zz) / c


def density(x: ArrayLike, c: float, taus: ArrayLike, weights: ArrayLike | None = None) -> NDArray[np.float64]:
    """Density of the continuous part of ``F^{c,H}`` on (0, inf): ``f(x) = -Im G(x + i0) / pi``.

    Zero outside the support (decided by :func:`support`, so no spurious mass from round-off).
    The atom at 0 is not part of the density; see :attr:`Support.atom`.

    Examples
    --------
    >>> # Marchenko–Pastur at c = 1/2, x = 1: sqrt((b - x)(x - a)) / (2 pi c x) = 0.4211...
    >>> round(float(density(1.0, 0.5, [1.0])), 6)
    0.421084
    """
    xs = np.asarray(x, dtype=float)
    flat = xs.ravel()
    out = np.zeros(flat.size)
    sup = support(c, taus, weights)
    inside = sup.contains(flat) & (flat > 0)
    if inside.any():
        m = companion_transform(flat[inside], c, taus, weights)
        out[inside] = np.maximum(m.imag, 0.0) / (math.pi * float(c))
    return out.reshape(xs.shape)


_NODES, _WEIGHTS = np.polynomial.legendre.leggauss(96)


def _integrate(lo: NDArray[np.float64], hi: NDArray[np.float64], c: float, taus: ArrayLike, weights: ArrayLike | None,
               sup: Support, moment: int = 0) -> NDArray[np.float64]:
    """int_lo^hi x^moment f(x) dx with x = lo + (hi - lo)(1 - cos th)/2: smooth at square-root edges
    and at the x^-1/2 edge of c = 1."""
    th = 0.5 * math.pi * (_NODES + 1.0)
    wt = 0.5 * math.pi * _WEIGHTS
    span = (hi - lo)[:, None]
    xs = lo[:, None] + span * 0.5 * (1.0 - np.cos(th))[None, :]
    jac = span * 0.5 * np.sin(th)[None, :]
    f = np.zeros(xs.shape)
    flat = xs.ravel()
    ok = flat > 0
    if ok.any():
        m = companion_transform(flat[ok], c, taus, weights)
        vals = np.zeros(flat.size)
        vals[ok] = np.maximum(m.imag, 0.0) / (math.pi * c)
        f = vals.reshape(xs.shape)
    return np.asarray((f * xs**moment * jac * wt[None, :]).sum(axis=1), dtype=float)


def cdf(x: ArrayLike, c: float, taus: ArrayLike, weights: ArrayLike | None = None) -> NDArray[np.float64]:
    """Distribution function ``F^{c,H}(x)`` (the atom at 0 included), by 96-point Gauss–Legendre per
    component after a cosine substitution (absolute error about 1e-10 on smooth laws).

    Examples
    --------
    >>> round(float(cdf(10.0, 0.5, [1.0])), 10)
    1.0
    """
    xs = np.asarray(x, dtype=float)
    flat = xs.ravel()
    sup = support(c, taus, weights)
    out = np.where(flat >= 0, sup.atom, 0.0)
    for iv in sup.intervals:
        full = flat >= iv.upper
        out = out + np.where(full, iv.mass, 0.0)
        part = (flat > iv.lower) & ~full
        if part.any():
            lo = np.full(int(part.sum()), iv.lower)
            out[part] += _integrate(lo, flat[part], float(c), taus, weights, sup)
    return out.reshape(xs.shape)


def component_means(c: float, taus: ArrayLike, weights: ArrayLike | None = None) -> list[float]:
    """Mean eigenvalue of each component of the support (first moment / mass), by quadrature."""
    sup = support(c, taus, weights)
    out = []
    for iv in sup.intervals:
        lo, hi = np.array([iv.lower]), np.array([iv.upper])
        out.append(float(_integrate(lo, hi, float(c), taus, weights, sup, moment=1)[0] / iv.mass))
    return out
