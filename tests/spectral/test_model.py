"""The spiked model: U(t) by both of the seed's methods, t*, conventions, leakages, g_IT and g_ET."""

from __future__ import annotations

import math
import warnings
from typing import Any

import mpmath
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numpy.testing import assert_allclose

from sdckit.errors import ParameterError, SdcWarning
from sdckit.spectral import (
    SpikedModel,
    critical_noise_precise,
    discriminant_polynomial,
    separation_discriminant,
    separation_precise,
    spike_count,
    support_discriminant,
)

S = 10.0

# (c, r) over the regimes of notes §5.2: c < 1, c = 1, c > 1, r c -> 1 from below, small r
REGIMES = [(0.5, 0.3), (1.0, 0.3), (2.0, 0.3), (0.1, 0.05), (1.0, 0.99), (0.5, 1.99), (3.0, 0.33), (0.25, 0.5)]
REGIMES = [(c, r) for c, r in REGIMES if 0 < r < 1]


def _grid(model: SpikedModel) -> list[float]:
    ts = model.critical_noise()
    return [1e-9, 1e-3, 0.1 * ts, 0.5 * ts, 0.9 * ts, 0.99 * ts, (1 - 1e-4) * ts, (1 + 1e-6) * ts, 2 * ts]


@pytest.mark.parametrize(("c", "r"), REGIMES)
def test_two_methods_agree(c: float, r: float) -> None:
    # Silverstein–Choi (float64 kernel) against the seed's discriminant method (exact coefficients,
    # mpmath roots at 40 digits): 1e-9 relative, over t -> 0, t -> t* and beyond t*
    m = SpikedModel(c, r, S)
    for t in _grid(m):
        u_sc = m.separation(t)
        u_disc = separation_discriminant(c, r, S, t)
        assert u_sc == pytest.approx(u_disc, rel=1e-9, abs=1e-300), (c, r, t)
        assert m.components(t) == (2 if u_disc > 0 else 1)


@pytest.mark.parametrize(("c", "r"), [(0.5, 0.3), (1.0, 0.3), (2.0, 0.3)])
def test_discriminant_edges_equal_critical_point_edges(c: float, r: float) -> None:
    m = SpikedModel(c, r, S)
    t = 0.5 * m.critical_noise()
    comps = support_discriminant(c, r, S, t)
    e = m.support(t)
    assert_allclose([comps[0][0], comps[0][1], comps[1][0], comps[1][1]], [e.left, e.gap_low, e.gap_high, e.right],
                    rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize(("c", "mult"), [(0.5, 4), (1.0, 5), (2.0, 4)])
def test_discriminant_has_exact_x4_factor(c: float, mult: int) -> None:
    # notes §3: Delta_t = c^2 x^4 R_t, x^5 when c = 1; the quartic is what remains
    poly, m = discriminant_polynomial(c, 0.3, S, 1.0)
    assert m == mult
    assert len(poly) - 1 == 8 - mult


def test_precise_path_for_tiny_gaps_near_t_star() -> None:
    m = SpikedModel(0.5, 0.3, S)
    ts = critical_noise_precise(0.5, 0.3, S, dps=60)
    with mpmath.workdps(60):
        t = float(ts * (1 - mpmath.mpf("1e-8")))
    u_mp = float(separation_precise(0.5, 0.3, S, t, dps=60))
    u_disc = separation_discriminant(0.5, 0.3, S, t, dps=60)
    assert u_mp == pytest.approx(u_disc, rel=1e-9)
    # U ~ K (t* - t)^(3/2) near t* (notes §3): the float kernel keeps ~6 digits here, the mp path all
    assert m.separation(t) == pytest.approx(u_mp, rel=1e-5)
    assert m.separation(t, method="precise") == pytest.approx(u_mp, rel=1e-12)


def test_three_halves_law_near_t_star() -> None:
    m = SpikedModel(0.5, 0.3, S)
    ts = m.critical_noise()
    h = np.array([1e-3, 1e-4]) * ts
    u = np.array([float(separation_precise(0.5, 0.3, S, ts - x)) for x in h])
    slope = math.log(u[0] / u[1]) / math.log(h[0] / h[1])
    assert slope == pytest.approx(1.5, abs=2e-3)


@pytest.mark.parametrize(("c", "r"), [(0.5, 0.3), (1.0, 0.3), (2.0, 0.3)])
def test_t0_convention_and_support(c: float, r: float) -> None:
    m = SpikedModel(c, r, S)
    q = math.sqrt(r * c)
    assert m.separation(0.0) == pytest.approx(S * (1 - q) ** 2, rel=1e-14)  # convention U(0), rc < 1
    e = m.support(0.0)
    assert (e.left, e.right) == pytest.approx((S * (1 - q) ** 2, S * (1 + q) ** 2), rel=1e-14)
    assert m.components(0.0) == 1
    assert m.separation(1e-12) == pytest.approx(m.separation(0.0), rel=1e-9)  # continuous at 0+


def test_rc_at_least_one_has_no_gap() -> None:
    m = SpikedModel(2.0, 0.6, S)  # rc = 1.2
    assert m.critical_noise() == 0.0
    assert m.separation(0.0) == 0.0
    assert np.all(m.separation(np.array([1e-6, 1.0, 10.0])) == 0.0)
    assert separation_discriminant(2.0, 0.6, S, 1e-3) == 0.0


@pytest.mark.parametrize("c", [0.2, 0.5, 1.0, 2.0, 5.0])
def test_t_star_tends_to_s_over_sqrt_c(c: float) -> None:
    # notes §3: as r -> 0, t* -> s / sqrt(c)
    assert SpikedModel(c, 1e-9, S).critical_noise() == pytest.approx(S / math.sqrt(c), rel=1e-2)
    assert SpikedModel(c, 1e-15, S).critical_noise() == pytest.approx(S / math.sqrt(c), rel=1e-4)


@pytest.mark.parametrize(("c", "r"), [(0.5, 0.3), (1.0, 0.3), (2.0, 0.3), (0.1, 0.05)])
def test_t_star_is_where_the_gap_closes(c: float, r: float) -> None:
    m = SpikedModel(c, r, S)
    ts = m.critical_noise()
    assert ts == pytest.approx(float(critical_noise_precise(c, r, S)), rel=1e-14)
    assert m.separation(ts * (1 - 1e-6)) > 0
    assert m.separation(ts * (1 + 1e-12)) == 0.0
    # the gap condition holds with equality at t* (notes §3, closed form)
    lhs = c ** (1 / 3) * ((1 - r) ** (1 / 3) * ts ** (2 / 3) + r ** (1 / 3) * (ts + S) ** (2 / 3))
    assert lhs == pytest.approx(S ** (2 / 3), rel=1e-14)


@settings(max_examples=40, deadline=None)
@given(
    c=st.floats(0.05, 4.0), r=st.floats(0.01, 0.9), s=st.floats(0.1, 100.0), lam=st.floats(0.01, 100.0),
    frac=st.one_of(st.just(0.0), st.floats(1e-9, 1.5)),
)
def test_homogeneity(c: float, r: float, s: float, lam: float, frac: float) -> None:
    # notes §3: U(lambda t; c, r, lambda s) = lambda U(t; c, r, s)
    m1, m2 = SpikedModel(c, r, s), SpikedModel(c, r, lam * s)
    t = frac * max(m1.critical_noise(), s)
    assert m2.separation(lam * t) == pytest.approx(lam * m1.separation(t), rel=1e-9, abs=1e-12 * lam * s)


@settings(max_examples=25, deadline=None)
@given(c=st.floats(0.05, 4.0), r=st.floats(0.01, 0.9))
def test_separation_non_increasing_numerically(c: float, r: float) -> None:
    # Conjecture 2 (notes §3), checked numerically: U is non-increasing on a fine grid
    m = SpikedModel(c, r, S)
    ts = m.critical_noise()
    t = np.linspace(0, 1.1 * ts + 1e-9, 2001)
    u = m.separation(t)
    assert np.all(np.diff(u) <= 1e-12 * S)


def test_vectorised_equals_scalar() -> None:
    m = SpikedModel(0.5, 0.3, S)
    t = np.array([[0.0, 0.5], [1.5, 5.0]])
    u = m.separation(t)
    assert u.shape == (2, 2)
    assert [m.separation(float(v)) for v in t.ravel()] == u.ravel().tolist()
    assert isinstance(m.separation(1.0), float)
    assert m.components(t).tolist() == [[1, 2], [2, 1]]


# ---- leakage ---------------------------------------------------------------------------------


def test_spike_count_reads_the_decimal() -> None:
    assert math.floor(0.29 * 100) == 28  # the float pitfall of notes §5.5
    assert spike_count(0.29, 100) == 29
    assert spike_count(0.3, 50) == 15
    with pytest.raises(ParameterError, match="floor"):
        spike_count(0.001, 50)


def test_leakage_closed_forms_and_inverses() -> None:
    m = SpikedModel(0.5, 0.3, S)
    p, k = 50, 15
    t = np.array([0.1, 1.0, 10.0])
    assert_allclose(m.information_leakage(t, p), 0.5 * k * np.log(1 + S / t), rtol=1e-15)  # [seed]
    assert_allclose(m.estimation_leakage(t, p), k * S * t / (S + t), rtol=1e-15)  # [seed]
    eps = np.array([0.5, 3.0, 30.0])
    tn = m.noise_for_information(eps, p)
    assert_allclose(tn, S / (np.exp(2 * eps / k) - 1), rtol=1e-14)  # [seed] inverse
    assert np.all(m.information_leakage(tn, p) <= eps)  # rounded toward privacy
    floors = np.array([1.0, 50.0, 149.0])
    te = m.noise_for_estimation(floors, p)
    assert np.all(m.estimation_leakage(te, p) >= floors)
    assert m.information_leakage(0.0, p) == math.inf


@pytest.mark.parametrize("t", [0.01, 0.7, 3.0, 40.0])
def test_i_mmse_identity(t: float) -> None:
    # [seed] P_ET = -2 t^2 P_IT'(t); derivative by mpmath.diff on the closed form at 30 digits
    m = SpikedModel(0.5, 0.3, S)
    with mpmath.workdps(30):
        d = mpmath.diff(lambda x: 0.5 * 15 * mpmath.log(1 + S / x), t)
        assert m.estimation_leakage(t, 50) == pytest.approx(float(-2 * t**2 * d), rel=1e-13)


@pytest.mark.parametrize(("c", "r"), [(0.5, 0.3), (1.0, 0.3), (0.1, 0.05)])
def test_g_it_zero_iff_budget_below_leakage_at_t_star(c: float, r: float) -> None:
    m = SpikedModel(c, r, S)
    p = 50
    eps_star = m.information_leakage(m.critical_noise(), p)
    # eps_star is P_IT(t*) rounded: its inverse is t* within an ulp, where U ~ (t* - t)^(3/2) ~ 1e-22 s
    assert m.utility_at_information(eps_star, p) <= 1e-20 * S
    assert m.utility_at_information(eps_star * (1 - 1e-12), p) == 0.0
    assert m.utility_at_information(eps_star * (1 + 1e-6), p) > 0.0
    assert m.utility_at_information(np.inf, p) == m.separation(0.0)
    assert m.utility_at_information(0.0, p) == 0.0


def test_g_monotone_equals_grid_sup() -> None:
    m = SpikedModel(0.5, 0.3, S)
    eps = np.linspace(5, 60, 12)
    mono = m.utility_at_information(eps, 50)
    grid = m.utility_at_information(eps, 50, method="grid", grid=4001)
    assert np.all(grid <= mono + 1e-12)  # grid points lie in the constraint set: a lower bound
    assert_allclose(grid, mono, atol=0.02 * S)  # and close to it on a fine grid
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        both = m.utility_at_information(eps, 50, method="both")  # no warning: U is monotone here
    assert_allclose(both, mono, rtol=0)
    # g_IT is non-decreasing in the budget
    assert np.all(np.diff(mono) >= 0)


def test_g_et_and_empty_constraint_set() -> None:
    m = SpikedModel(0.5, 0.3, S)
    p, k = 50, 15
    eps = np.array([1.0, 20.0])
    expected = m.separation(eps * S / (k * S - eps))  # [seed] g_ET = U(eps s / (k s - eps))
    assert_allclose(m.utility_at_estimation(eps, p), expected, rtol=1e-12)
    assert m.utility_at_estimation(0.0, p) == m.separation(0.0)
    with pytest.warns(SdcWarning, match="empty constraint set"):
        assert m.utility_at_estimation(k * S, p) == 0.0


def test_inverse_of_separation_and_of_g() -> None:
    m = SpikedModel(0.5, 0.3, S)
    u = np.array([0.1, 1.0, 3.0])
    t = m.noise_for_separation(u)
    assert_allclose(m.separation(t), u, rtol=1e-9)
    assert np.isnan(m.noise_for_separation(5.0))
    eps = m.information_for_utility(1.0, 50)
    assert m.utility_at_information(eps * (1 + 1e-9), 50) >= 1.0 - 1e-9
    floor = m.estimation_for_utility(1.0, 50)
    assert m.utility_at_estimation(floor * (1 - 1e-9), 50) >= 1.0 - 1e-9


def test_parameter_errors() -> None:
    with pytest.raises(ParameterError, match=r"r=1\.5"):
        SpikedModel(0.5, 1.5, S)
    with pytest.raises(ParameterError, match="c=0"):
        SpikedModel(0, 0.3, S)
    with pytest.raises(ParameterError, match="t must be finite and >= 0"):
        SpikedModel(0.5, 0.3, S).separation(-1.0)
    with pytest.raises(ParameterError, match="method="):
        SpikedModel(0.5, 0.3, S).separation(1.0, method="roots")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="function of t"):
        bool(SpikedModel(0.5, 0.3, S))


class _Bumpy(SpikedModel):
    """U with a bump after t = 1 (not non-increasing): the grid sup must catch it."""

    def separation(self, t: Any, *, method: Any = "critical", dps: int = 50) -> Any:
        base = super().separation(t, method=method, dps=dps)
        return base + 0.5 * np.exp(-((np.asarray(t) - 2.0) ** 2) / 0.01)


def test_sup_diagnostic_warns_when_monotonicity_fails() -> None:
    m = _Bumpy(0.5, 0.3, S)
    eps = m.information_leakage(1.9, 50)  # constraint t >= 1.9: the bump at t = 2 is feasible
    mono = m.utility_at_information(eps, 50)
    with pytest.warns(SdcWarning, match="not non-increasing"):
        both = m.utility_at_information(eps, 50, method="both", grid=4001)
    assert both > mono + 0.1  # the grid found the bump (0.5 high) that the monotone shortcut misses
