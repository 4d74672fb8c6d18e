"""Monte Carlo against the limit: the empirical gap and the eigenvalue histogram (notes §5.6)."""

from __future__ import annotations

import numpy as np
import pytest

from sdckit.spectral import SpikedModel, cdf, simulate_gap, simulate_spectrum

SEED = 20261130
S = 10.0


@pytest.mark.parametrize("distribution", ["gaussian", "rademacher"])
def test_gap_at_p_1000_within_a_few_percent_of_s(distribution: str) -> None:
    # notes §5.6: at p >= 1000 the empirical gap matches U(t) within a few percent of s (bias ~p^-2/3,
    # downward for the gap here since the edges spread into it); non-Gaussian entries: universality
    m = SpikedModel(0.5, 0.3, S)
    sim = simulate_gap(m, 1.5, 1000, reps=1, distribution=distribution, seed=SEED)  # type: ignore[arg-type]
    assert sim.k == 300
    assert sim.n == 2000
    assert abs(sim.mean - m.separation(1.5)) < 0.03 * S


def test_gap_trend_follows_u() -> None:
    m = SpikedModel(0.5, 0.3, S)
    ts = np.array([0.5, 1.5, 3.0])
    gaps = [simulate_gap(m, t, 300, reps=2, seed=SEED).mean for t in ts]
    assert gaps[0] > gaps[1] > gaps[2]  # U decreases in t
    assert np.all(np.abs(np.array(gaps) - m.separation(ts)) < 0.06 * S)


def test_histogram_against_limit_cdf() -> None:
    # Kolmogorov distance between the empirical spectral law (p = 1000) and F_t from cdf(): at this p
    # it is O(1/p) in the bulk; 0.01 leaves room for edge effects
    m = SpikedModel(0.5, 0.3, S)
    t = 1.5
    lam = np.sort(simulate_spectrum(m, t, 1000, seed=SEED))
    F = cdf(lam, 0.5, [t, t + S], [0.7, 0.3])
    emp_hi = np.arange(1, lam.size + 1) / lam.size
    emp_lo = np.arange(0, lam.size) / lam.size
    ks = max(np.max(np.abs(emp_hi - F)), np.max(np.abs(emp_lo - F)))
    assert ks < 0.01


def test_simulation_is_reproducible() -> None:
    m = SpikedModel(0.5, 0.3, S)
    a = simulate_gap(m, 1.0, 100, reps=2, seed=3).gaps
    b = simulate_gap(m, 1.0, 100, reps=2, seed=3).gaps
    np.testing.assert_array_equal(a, b)
