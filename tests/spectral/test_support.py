"""Limit spectrum for a discrete population law: support, density, cdf, Cauchy transform."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numpy.testing import assert_allclose
from scipy.integrate import quad

from sdckit.errors import ParameterError
from sdckit.spectral import SpikedModel, cauchy_transform, cdf, density, support
from sdckit.spectral._support import _phi, _x_of_y

# ---- Marchenko–Pastur (H = delta_1): closed forms [lit: Marchenko–Pastur 1967] ----------------


@pytest.mark.parametrize("c", [0.1, 0.5, 0.9])
def test_marchenko_pastur_edges_and_density(c: float) -> None:
    sup = support(c, [1.0])
    a, b = (1 - math.sqrt(c)) ** 2, (1 + math.sqrt(c)) ** 2  # closed-form MP edges
    assert sup.n_components == 1
    assert_allclose([sup.intervals[0].lower, sup.intervals[0].upper], [a, b], rtol=1e-13)
    x = np.linspace(a, b, 23)[1:-1]
    expected = np.sqrt((b - x) * (x - a)) / (2 * math.pi * c * x)  # MP density, variance 1
    assert_allclose(density(x, c, [1.0]), expected, rtol=1e-9, atol=1e-12)


def test_marchenko_pastur_c_above_one_has_atom() -> None:
    c = 2.5
    sup = support(c, [1.0])
    assert sup.atom == pytest.approx(1 - 1 / c, abs=0)  # rank n of p: atom 1 - 1/c
    assert sup.intervals[0].lower == pytest.approx((1 - math.sqrt(c)) ** 2, rel=1e-13)
    assert sup.intervals[0].mass == pytest.approx(1 / c, rel=1e-13)
    # the integral of the density is 1/c (quad, an independent integrator)
    iv = sup.intervals[0]
    total = quad(lambda x: float(density(x, c, [1.0])), iv.lower, iv.upper, limit=200)[0]
    assert total == pytest.approx(1 / c, abs=1e-7)


def test_marchenko_pastur_c_one_edge_at_zero_inverse_sqrt() -> None:
    sup = support(1.0, [1.0])
    assert sup.intervals[0].lower == 0.0
    # density ~ 1 / (pi sqrt(x)) as x -> 0 for c = 1 (MP closed form sqrt((4 - x) x) / (2 pi x))
    x = np.array([1e-8, 1e-6])
    assert_allclose(density(x, 1.0, [1.0]), np.sqrt((4 - x) * x) / (2 * math.pi * x), rtol=1e-6)
    assert float(cdf(4.0, 1.0, [1.0])) == pytest.approx(1.0, abs=1e-9)


@pytest.mark.parametrize("z", [2.0 + 1.0j, 0.3 + 0.05j, 5.0 + 2.0j, -1.0 + 0.5j])
def test_cauchy_transform_solves_seed_quadratic(z: complex) -> None:
    # [seed]: H = delta_1 gives c z G^2 + (1 - c - z) G + 1 = 0, G in C- for z in C+
    c = 0.5
    g = complex(cauchy_transform(z, c, [1.0]))
    assert abs(c * z * g**2 + (1 - c - z) * g + 1) < 1e-12
    assert g.imag < 0


@pytest.mark.parametrize(("c", "taus", "weights"), [(0.5, [1.5, 11.5], [0.7, 0.3]), (2.0, [1.0, 6.0], [0.8, 0.2])])
def test_cauchy_transform_equals_integral_of_density(c: float, taus: list[float], weights: list[float]) -> None:
    # independent route: G(z) = atom / z + int f(x) / (z - x) dx by adaptive quadrature
    sup = support(c, taus, weights)
    for z in (3.0 + 2.0j,):
        integral = sum(quad(lambda x, z=z: float(density(x, c, taus, weights)) / (z - x), iv.lower, iv.upper,
                            limit=100, complex_func=True)[0] for iv in sup.intervals)
        expected = sup.atom / z + integral
        assert abs(complex(cauchy_transform(z, c, taus, weights)) - expected) < 1e-7


def test_cauchy_transform_real_axis_branches() -> None:
    c, taus, w = 0.5, [1.5, 11.5], [0.7, 0.3]
    sup = support(c, taus, w)
    inside = 0.5 * (sup.intervals[0].lower + sup.intervals[0].upper)
    gap = 0.5 * (sup.gaps[0].lower + sup.gaps[0].upper)
    g_in = complex(cauchy_transform(inside, c, taus, w))
    g_gap = complex(cauchy_transform(gap, c, taus, w))
    assert g_in.imag < 0  # physical branch inside the support: Im G < 0
    assert g_gap.imag == 0.0
    # outside the support G is the real integral: compare with quad
    expected = sum(quad(lambda x: float(density(x, c, taus, w)) / (gap - x), iv.lower, iv.upper, limit=200)[0]
                   for iv in sup.intervals)
    assert g_gap.real == pytest.approx(expected, abs=1e-7)
    # and the density is -Im G / pi
    assert float(density(inside, c, taus, w)) == pytest.approx(-g_in.imag / math.pi, rel=1e-12)


# ---- the spiked model through the general code ----------------------------------------------


@pytest.mark.parametrize("c", [0.3, 1.0, 2.0])
def test_component_masses_are_r_and_min_one_inverse_c_minus_r(c: float) -> None:
    r, s, t = 0.3, 10.0, 0.5 if c > 1 else 1.5
    if c > 1:
        r = 0.1  # rc < 1 so that a gap exists at small t
        t = 0.2
    sup = support(c, [t, t + s], [1 - r, r])
    assert sup.n_components == 2
    masses = [quad(lambda x: float(density(x, c, [t, t + s], [1 - r, r])), iv.lower, iv.upper, limit=400)[0]
              for iv in sup.intervals]
    # notes §3 mass check: lower min(1, 1/c) - r, upper r
    assert_allclose(masses, [min(1, 1 / c) - r, r], atol=2e-7)
    assert_allclose([iv.mass for iv in sup.intervals], [min(1, 1 / c) - r, r], rtol=1e-12)
    assert sup.gaps[0].index(100) == round(r * 100)


def test_cdf_matches_quadrature_and_is_monotone() -> None:
    c, taus, w = 0.5, [1.5, 11.5], [0.7, 0.3]
    xs = np.linspace(0, 25, 60)
    F = cdf(xs, c, taus, w)
    assert np.all(np.diff(F) >= -1e-12)
    assert F[-1] == pytest.approx(1.0, abs=1e-9)
    x = 2.0
    expected = quad(lambda v: float(density(v, c, taus, w)), 0, x, limit=200)[0]
    assert float(cdf(x, c, taus, w)) == pytest.approx(expected, abs=1e-8)


@pytest.mark.parametrize(("c", "r"), [(0.5, 0.3), (4.0, 0.5)])
def test_t0_support_closed_form(c: float, r: float) -> None:
    # notes §3: supp F_0 = {0} u [s (1 - sqrt(rc))^2, s (1 + sqrt(rc))^2], also for rc = 2 > 1;
    # atom at 0: 1 - rank/p = 1 - min(r, 1/c)
    s = 10.0
    sup = support(c, [0.0, s], [1 - r, r])
    q = math.sqrt(r * c)
    assert sup.atom == pytest.approx(1 - min(r, 1 / c))
    assert sup.intervals[0].mass == pytest.approx(min(r, 1 / c))
    assert_allclose([sup.intervals[0].lower, sup.intervals[0].upper], [s * (1 - q) ** 2, s * (1 + q) ** 2], rtol=1e-13)


@pytest.mark.parametrize(("c", "t"), [(0.5, 1.5), (1.0, 0.5), (2.0, 0.01), (0.1, 12.0)])
def test_general_support_equals_spiked_kernel(c: float, t: float) -> None:
    r, s = 0.3 if c <= 1 else 0.1, 10.0
    sup = support(c, [t, t + s], [1 - r, r])
    edges = SpikedModel(c, r, s).support(t)
    got = [sup.intervals[0].lower, sup.intervals[-1].upper]
    assert_allclose(got, [edges.left, edges.right], rtol=1e-12, atol=1e-14)
    if sup.gaps:
        assert_allclose([sup.gaps[0].lower, sup.gaps[0].upper], [edges.gap_low, edges.gap_high], rtol=1e-11)


@settings(max_examples=40, deadline=None)
@given(
    c=st.floats(0.05, 3.0),
    taus=st.lists(st.floats(0.1, 50.0), min_size=1, max_size=5, unique=True),
    seed=st.integers(0, 2**16),
)
def test_edges_are_critical_points_and_width_formula(c: float, taus: list[float], seed: int) -> None:
    rng = np.random.default_rng(seed)
    w = rng.dirichlet(np.ones(len(taus)))
    sup = support(c, taus, w)
    tau = np.array(sup.taus)
    ww = np.array(sup.weights)
    for y in sup.edges_y:
        if y != 0.0:
            assert abs(_phi(y, sup.c, tau, ww)[0]) < 1e-7  # phi(y) = 1 at every edge
    for g in sup.gaps:
        # the cancellation-free width equals the direct difference x(y_b) - x(y_a)
        i = sup.gaps.index(g)
        ya, yb = sup.edges_y[1 + 2 * i], sup.edges_y[2 + 2 * i]
        direct = _x_of_y(yb, sup.c, tau, ww) - _x_of_y(ya, sup.c, tau, ww)
        assert g.width == pytest.approx(direct, rel=1e-6, abs=1e-9 * max(tau))
    masses = [iv.mass for iv in sup.intervals]
    assert sum(masses) + sup.atom == pytest.approx(1.0, abs=1e-12)
    assert all(m > 0 for m in masses)
    lows = [iv.lower for iv in sup.intervals]
    assert lows == sorted(lows)


def test_multi_spike_support_against_simulation() -> None:
    # H = 0.5 d_1 + 0.3 d_4 + 0.2 d_12, c = 0.1; p = 400, n = 4000 Gaussian rows; exact separation:
    # the number of eigenvalues in each component equals mass * p, all inside the edges +- 3 % of scale
    c, taus, w = 0.1, [1.0, 4.0, 12.0], [0.5, 0.3, 0.2]
    sup = support(c, taus, w)
    assert sup.n_components == 3
    p, n = 400, 4000
    rng = np.random.default_rng(20261130)
    scale = np.repeat(np.sqrt(taus), [200, 120, 80])
    x = scale[:, None] * rng.normal(size=(p, n))
    lam = np.linalg.eigvalsh(x @ x.T / n)
    for iv in sup.intervals:
        tol = 0.03 * iv.upper
        count = np.sum((lam >= iv.lower - tol) & (lam <= iv.upper + tol))
        assert count == round(iv.mass * p)
    assert [g.index(p) for g in sup.gaps] == [200, 80]


def test_bad_population_messages() -> None:
    with pytest.raises(ParameterError, match="weights sum to"):
        support(0.5, [1.0, 2.0], [0.5, 0.6])
    with pytest.raises(ParameterError, match=r"c=-1\.0"):
        support(-1.0, [1.0])
    with pytest.raises(ParameterError, match="one weight per tau"):
        support(0.5, [1.0, 2.0], [1.0])
