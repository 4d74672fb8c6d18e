"""Compiled kernel of the spiked model ``H_t = (1 - r) delta_t + r delta_{t+s}`` (spectral notes §3).

Everything is written in ``u = y - t`` (y = -1/m of the Silverstein–Choi map), which keeps the
noise-side edges accurate when t << s:

    phi(u) = c [ (1 - r) t^2 / u^2 + r (t + s)^2 / (s - u)^2 ],
    x(u)   = (t + u) [ 1 + c (1 - r) t / u - c r (t + s) / (s - u) ].

``phi`` is convex and monotone on each of (-inf, 0), (0, u0), (u0, s), (s, inf), where
``u0 = s a / (a + b)``, ``a = ((1 - r) t^2)^{1/3}``, ``b = (r (t + s)^2)^{1/3}`` is its minimiser on
(0, s) [derived]. Newton started on the side where ``phi >= 1`` (a start known in closed form) then
moves monotonically to the root: no overshoot, no root finder.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit
from numpy.typing import NDArray

_TOL = 4e-16
_MAXIT = 200
_NEAR = 0.05  # margin 1 - phi_min below which the gap roots are solved around the minimiser


@njit(cache=True)
def _f(u: float, c: float, r: float, s: float, t: float) -> tuple[float, float]:
    # ratios, not t^2 / u^2: t may be tiny (even subnormal) without underflow
    v = s - u
    qa = (1.0 - r) * (t / u) ** 2
    qb = r * ((t + s) / v) ** 2
    f = c * (qa + qb) - 1.0
    df = c * (-2.0 * qa / u + 2.0 * qb / v)
    return f, df


@njit(cache=True)
def _newton(u: float, lo: float, hi: float, c: float, r: float, s: float, t: float) -> float:
    """Monotone Newton from a start where phi >= 1; the result is clamped into [lo, hi]."""
    for _ in range(_MAXIT):
        f, df = _f(u, c, r, s, t)
        if f <= 0.0 or df == 0.0:
            break
        un = u - f / df
        if un < lo:
            un = lo
        if un > hi:
            un = hi
        if abs(un - u) <= _TOL * abs(u) + 1e-300:
            u = un
            break
        u = un
    return u


@njit(cache=True)
def _x(u: float, c: float, r: float, s: float, t: float) -> float:
    return (t + u) * (1.0 + c * (1.0 - r) * t / u - c * r * (t + s) / (s - u))


@njit(cache=True)
def _g(h: float, u0: float, v0: float, ck: float, m: float) -> tuple[float, float]:
    """phi(u0 + h) - phi_min - m and its derivative, without cancellation [derived]:

    phi(u0 + h) - phi_min = cK h^2 [(3 u0 + 2h) / u^2 + (3 v0 - 2h) / v^2],  u = u0 + h, v = v0 - h,
    from (1 - r) t^2 = K u0^3 and r (t + s)^2 = K v0^3 at the minimiser.
    """
    u = u0 + h
    v = v0 - h
    pa = 3.0 * u0 + 2.0 * h
    pb = 3.0 * v0 - 2.0 * h
    q = pa / (u * u) + pb / (v * v)
    dq = 2.0 / (u * u) - 2.0 * pa / (u * u * u) - 2.0 / (v * v) + 2.0 * pb / (v * v * v)
    return ck * h * h * q - m, ck * (2.0 * h * q + h * h * dq)


@njit(cache=True)
def _solve_h(h: float, lo: float, hi: float, u0: float, v0: float, ck: float, m: float) -> float:
    """Root of _g on the open bracket (lo, hi), g monotone there: Newton, bisection when it leaves."""
    if not (lo < h < hi):
        h = 0.5 * (lo + hi)
    for _ in range(_MAXIT):
        f, df = _g(h, u0, v0, ck, m)
        if f == 0.0:
            return h
        # g grows with |h| on both sides: f > 0 means the root is nearer 0
        if h > 0.0:
            if f > 0.0:
                hi = h
            else:
                lo = h
        elif f > 0.0:
            lo = h
        else:
            hi = h
        hn = h - f / df if df != 0.0 else 0.5 * (lo + hi)
        if not (lo < hn < hi):
            hn = 0.5 * (lo + hi)
        if abs(hn - h) <= _TOL * abs(h) + 1e-300 or hi - lo <= _TOL * max(abs(lo), abs(hi)):
            return hn
        h = hn
    return h


@njit(cache=True)
def spiked_edges(
    t: NDArray[np.float64], c: float, r: float, s: float
) -> tuple[
    NDArray[np.float64], NDArray[np.float64], NDArray[np.float64], NDArray[np.float64], NDArray[np.float64],
    NDArray[np.int64],
]:
    """Edges (left, gap_low, gap_high, right) of supp F_t in (0, inf), U(t) and N(t), for each t >= 0.

    gap_low/gap_high are NaN when there is no gap. U(0) follows the convention s (1 - sqrt(rc))^2
    when rc < 1, else 0 (the limit t -> 0+); N(0) = 1.
    """
    n = t.size
    left = np.empty(n)
    glo = np.empty(n)
    ghi = np.empty(n)
    right = np.empty(n)
    gap = np.empty(n)
    ncomp = np.ones(n, dtype=np.int64)
    sq = math.sqrt(r * c)
    for i in range(n):
        ti = t[i]
        if ti == 0.0:
            left[i] = s * (1.0 - sq) ** 2
            right[i] = s * (1.0 + sq) ** 2
            glo[i] = np.nan
            ghi[i] = np.nan
            gap[i] = s * (1.0 - sq) ** 2 if sq < 1.0 else 0.0
            continue
        ts = ti + s
        # Left edge: root in (-inf, 0); phi >= 1 at u = -t sqrt(c (1 - r)).
        if c == 1.0:
            left[i] = 0.0  # y = 0 is the root exactly: phi(-t) = c
        else:
            ul = _newton(-ti * math.sqrt(c * (1.0 - r)), -np.inf, 0.0, c, r, s, ti)
            left[i] = max(_x(ul, c, r, s, ti), 0.0)
        # Right edge: root in (s, inf); phi >= 1 at u = s + (t + s) sqrt(c r).
        ur = _newton(s + ts * sq, s, np.inf, c, r, s, ti)
        right[i] = _x(ur, c, r, s, ti)
        # Gap condition in closed form [derived]: phi_min = c (a + b)^3 / s^2 < 1.
        a = (1.0 - r) ** (1.0 / 3.0) * ti ** (2.0 / 3.0)
        b = r ** (1.0 / 3.0) * ts ** (2.0 / 3.0)
        phimin = c * (a + b) ** 3 / (s * s)
        margin = 1.0 - phimin
        if margin <= 0.0:
            glo[i] = np.nan
            ghi[i] = np.nan
            gap[i] = 0.0
            continue
        ncomp[i] = 2
        u0 = s * a / (a + b)
        v0 = s * b / (a + b)
        ck = phimin / s
        if margin < _NEAR:
            # near t*: solve for the offsets h from the minimiser (no cancellation in phi - 1)
            ha = _solve_h(ti * math.sqrt(c * (1.0 - r)) - u0, -u0, 0.0, u0, v0, ck, margin)
            hb = _solve_h(v0 - ts * sq, 0.0, v0, u0, v0, ck, margin)
            d = hb - ha  # opposite signs: no cancellation
            ua = u0 + ha
            ub = u0 + hb
            va = v0 - ha
            vb = v0 - hb
        else:
            # far from t*: monotone Newton in u keeps u_a's digits when u_a << u0 (t << s)
            ua = _newton(min(ti * math.sqrt(c * (1.0 - r)), u0), 0.0, u0, c, r, s, ti)
            ub = _newton(max(s - ts * sq, u0), u0, s, c, r, s, ti)
            d = ub - ua
            va = s - ua
            vb = s - ub
        w = 0.5 * c * d * d * d * ((1.0 - r) * (ti / ua) ** 2 / (ub * ub) + r * (ts / va) ** 2 / (vb * vb))
        xa = _x(ua, c, r, s, ti)
        glo[i] = xa
        ghi[i] = xa + w
        gap[i] = w
    return left, glo, ghi, right, gap, ncomp
