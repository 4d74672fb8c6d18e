"""The seed's discriminant method, done right, and a high-precision Silverstein–Choi path (mpmath).

Discriminant method [seed, corrected; spectral notes §3]: for real x, Delta_t(x) is the discriminant in
G of the cubic ``A G^3 + B G^2 + C G + D`` whose coefficients are polynomials in x; the support in
(0, inf) is the closure of ``{x > 0 : Delta_t(x) < 0}``. Delta_t has degree 8 and equals
``c^2 x^4 R_t(x)`` with R_t a quartic (x^5 when c = 1).

Done right means: the polynomial is built in exact rational arithmetic from the binary values of
c, r, s, t (every float is a rational), so the x^4 factor is removed *exactly* (its coefficients are
exactly zero, which is asserted); the quartic's roots are found by mpmath at ``dps`` digits; and the
support is read from the sign of R_t between consecutive roots, never as "the k-th positive root".
At t = 0 the cubic degenerates to a quadratic and its own discriminant is used (factor x^2).
"""

from __future__ import annotations

from fractions import Fraction

import mpmath

Poly = list[Fraction]  # ascending coefficients in x


def _mul(a: Poly, b: Poly) -> Poly:
    out = [Fraction(0)] * (len(a) + len(b) - 1)
    for i, ai in enumerate(a):
        if ai:
            for j, bj in enumerate(b):
                out[i + j] += ai * bj
    return out


def _add(*ps: Poly) -> Poly:
    n = max(len(p) for p in ps)
    out = [Fraction(0)] * n
    for p in ps:
        for i, v in enumerate(p):
            out[i] += v
    return out


def _scale(a: Poly, k: Fraction | int) -> Poly:
    return [k * v for v in a]


def discriminant_polynomial(c: float, r: float, s: float, t: float) -> tuple[Poly, int]:
    """Exact coefficients of Delta_t(x) / x^m (ascending) and m, the multiplicity of x = 0 removed.

    m is 4 for t > 0 (5 when c = 1) and 2 at t = 0 (quadratic case; 3 when rc... see tests).
    """
    C_, R_, S_, T_ = (Fraction(float(v)) for v in (c, r, s, t))
    one = Fraction(1)
    a = [T_ * (one - C_), -one]
    b = [(T_ + S_) * (one - C_), -one]
    x = [Fraction(0), one]
    Bq = _mul(_scale(x, C_), _add(_scale(a, T_ + S_), _scale(b, T_)))
    Cq = _add(_scale(x, C_ * (R_ * T_ + (one - R_) * (T_ + S_))), _mul(a, b))
    Dq = _add(_scale(a, R_), _scale(b, one - R_))
    if T_ == 0:
        # Quadratic B G^2 + C G + D (A = 0): discriminant C^2 - 4 B D.
        disc = _add(_mul(Cq, Cq), _scale(_mul(Bq, Dq), -4))
    else:
        Aq = [Fraction(0), Fraction(0), T_ * (T_ + S_) * C_ * C_]
        AB = _mul(Aq, Bq)
        CD = _mul(Cq, Dq)
        B2 = _mul(Bq, Bq)
        C2 = _mul(Cq, Cq)
        disc = _add(
            _scale(_mul(AB, CD), 18),
            _scale(_mul(_mul(B2, Bq), Dq), -4),
            _mul(B2, C2),
            _scale(_mul(Aq, _mul(C2, Cq)), -4),
            _scale(_mul(_mul(Aq, Aq), _mul(Dq, Dq)), -27),
        )
    m = 0
    while m < len(disc) and disc[m] == 0:
        m += 1
    return disc[m:], m


def _eval(poly: Poly, x: mpmath.mpf) -> mpmath.mpf:
    acc = mpmath.mpf(0)
    for coef in reversed(poly):
        acc = acc * x + mpmath.mpf(coef.numerator) / coef.denominator
    return acc


def _polyroots(descending: list[mpmath.mpf], dps: int) -> list[mpmath.mpc]:
    try:  # mpmath >= 1.4 wants ascending order (asc=True); 1.3 only knows descending
        return list(mpmath.polyroots(descending[::-1], maxsteps=400, extraprec=4 * dps, asc=True))
    except TypeError:
        return list(mpmath.polyroots(descending, maxsteps=400, extraprec=4 * dps))


def _components_mp(c: float, r: float, s: float, t: float, dps: int) -> list[tuple[mpmath.mpf, mpmath.mpf]]:
    poly, _ = discriminant_polynomial(c, r, s, t)
    coeffs = [mpmath.mpf(v.numerator) / v.denominator for v in reversed(poly)]  # descending
    roots = _polyroots(coeffs, dps) if len(coeffs) > 1 else []
    scale = max([abs(rt) for rt in roots] + [mpmath.mpf(1)])
    tol = scale * mpmath.mpf(10) ** (-(dps // 2))
    real = sorted({mpmath.re(rt) for rt in roots if abs(mpmath.im(rt)) <= tol and mpmath.re(rt) > tol})
    points = [mpmath.mpf(0), *real]
    comps: list[tuple[mpmath.mpf, mpmath.mpf]] = []
    for i, lo in enumerate(points):
        hi = points[i + 1] if i + 1 < len(points) else None
        mid = (lo + hi) / 2 if hi is not None else 2 * lo + 1
        if _eval(poly, mid) < 0:  # Delta < 0: two complex roots G, inside the support
            if hi is None:
                raise ArithmeticError("internal: the support cannot be unbounded")
            if comps and comps[-1][1] == lo:
                comps[-1] = (comps[-1][0], hi)  # a touching (double) root: one component
            else:
                comps.append((lo, hi))
    return comps


def support_discriminant(c: float, r: float, s: float, t: float, *, dps: int = 40) -> list[tuple[float, float]]:
    """Components of supp F_t in (0, inf) by the sign pattern of the reduced discriminant.

    Returns (lower, upper) edges, computed at ``dps`` decimal digits then rounded to float.

    Examples
    --------
    >>> [(round(lo, 6), round(hi, 6)) for lo, hi in support_discriminant(0.5, 0.3, 10.0, 1.5)]
    [(0.159804, 3.33298), (4.984886, 22.712329)]
    """
    with mpmath.workdps(dps):
        return [(float(lo), float(hi)) for lo, hi in _components_mp(c, r, s, t, dps)]


def separation_discriminant(c: float, r: float, s: float, t: float, *, dps: int = 40) -> float:
    """U(t) by the discriminant method: distance between the two components (difference taken at
    ``dps`` digits), 0 if there is one; t = 0 follows the convention of :meth:`SpikedModel.separation`."""
    with mpmath.workdps(dps):
        if t == 0:
            rc = mpmath.mpf(float(r)) * float(c)
            return float(s * (1 - mpmath.sqrt(rc)) ** 2) if rc < 1 else 0.0
        comps = _components_mp(c, r, s, t, dps)
        return float(comps[1][0] - comps[0][1]) if len(comps) >= 2 else 0.0


def separation_precise(c: float, r: float, s: float, t: float, *, dps: int = 50) -> mpmath.mpf:
    """U(t) by Silverstein–Choi at ``dps`` digits (mpmath): bracketed roots of phi = 1 around the
    closed-form minimiser, and the cancellation-free width formula. Use for tiny gaps near t*."""
    with mpmath.workdps(dps):
        C_, R_, S_, T_ = (mpmath.mpf(float(v)) for v in (c, r, s, t))
        if T_ == 0:
            rc = R_ * C_
            return +(S_ * (1 - mpmath.sqrt(rc)) ** 2) if rc < 1 else mpmath.mpf(0)
        TS = T_ + S_
        a = mpmath.cbrt((1 - R_) * T_ * T_)
        b = mpmath.cbrt(R_ * TS * TS)
        if C_ * (a + b) ** 3 >= S_ * S_:
            return mpmath.mpf(0)
        u0 = S_ * a / (a + b)

        def f(u: mpmath.mpf) -> mpmath.mpf:
            return C_ * ((1 - R_) * T_ * T_ / u**2 + R_ * TS * TS / (S_ - u) ** 2) - 1

        lo_a = min(T_ * mpmath.sqrt(C_ * (1 - R_)), u0 / 2)
        while f(lo_a) < 0:
            lo_a /= 2
        hi_b = max(S_ - TS * mpmath.sqrt(C_ * R_), (u0 + S_) / 2)
        while f(hi_b) < 0:
            hi_b = (hi_b + S_) / 2
        ua = mpmath.findroot(f, (lo_a, u0), solver="anderson")
        ub = mpmath.findroot(f, (u0, hi_b), solver="anderson")
        d = ub - ua
        va, vb = S_ - ua, S_ - ub
        return C_ * d**3 / 2 * ((1 - R_) * T_ * T_ / (ua * ub) ** 2 + R_ * TS * TS / (va * vb) ** 2)


def critical_noise_precise(c: float, r: float, s: float, *, dps: int = 50) -> mpmath.mpf:
    """t* at ``dps`` digits: the root of c^(1/3) [(1-r)^(1/3) t^(2/3) + r^(1/3) (t+s)^(2/3)] = s^(2/3)."""
    with mpmath.workdps(dps):
        C_, R_, S_ = (mpmath.mpf(float(v)) for v in (c, r, s))
        if R_ * C_ >= 1:
            return mpmath.mpf(0)

        def g(tau: mpmath.mpf) -> mpmath.mpf:
            return mpmath.cbrt(C_) * (mpmath.cbrt(1 - R_) * tau ** (mpmath.mpf(2) / 3)
                                      + mpmath.cbrt(R_) * (1 + tau) ** (mpmath.mpf(2) / 3)) - 1

        hi = 1 / mpmath.sqrt(C_ * (1 - R_))
        return S_ * mpmath.findroot(g, (mpmath.mpf(0), hi), solver="anderson")
