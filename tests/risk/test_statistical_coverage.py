"""Coverage of the default interval of estimate_statistical_exposure, by simulation (issue 10).

Each case draws >= 400 curator samples from a known p, calls the public function on each, and counts
how often [lower, upper] holds the exact Q^stat_n(k) (statistical_exposure, closed form). Nominal
coverage 1 - delta = 0.90; the test asks for >= 0.87. The plug-in case must say it gives no interval.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from sdckit.risk import estimate_statistical_exposure, statistical_exposure

DELTA, REPS = 0.1, 400


def _zipf(atoms: int, s: float) -> np.ndarray:
    w = 1.0 / np.arange(1, atoms + 1) ** s
    return w / w.sum()


def _coverage(p: np.ndarray, n_hat: int, n: int, k: int, seed: int) -> tuple[float, float, float]:
    truth = statistical_exposure(p, n=n, k=k)
    samples = np.random.default_rng(seed).multinomial(n_hat, p, size=REPS)  # all samples at once
    hits, mean = 0, 0.0
    for c in samples:
        est = estimate_statistical_exposure(c, n=n, k=k, delta=DELTA)
        assert est.interval == "jackknife"
        hits += est.lower <= truth <= est.upper
        mean += est.estimate / REPS
    return hits / REPS, mean, truth


@pytest.mark.slow
@pytest.mark.parametrize(
    ("name", "p", "n_hat", "n", "k"),
    [
        ("uniform-1111", np.full(1111, 1 / 1111), 10_000, 5_000, 5),  # the audit's failing case (old: 0.000)
        ("zipf-1.1", _zipf(2000, 1.1), 10_000, 5_000, 5),
        ("zipf-1.5-small", _zipf(5000, 1.5), 2_000, 200, 5),
        ("zipf-0.8-k2", _zipf(3000, 0.8), 10_000, 100, 2),
    ],
)
def test_default_interval_covers(name: str, p: np.ndarray, n_hat: int, n: int, k: int) -> None:
    cover, mean, truth = _coverage(p, n_hat, n, k, seed=len(name) * 7919)
    assert cover >= 1 - DELTA - 0.03, f"{name}: coverage {cover:.3f}"
    assert abs(mean - truth) < 0.01  # unbiased on average (a sanity check on the simulation itself)


@pytest.mark.slow
def test_plugin_case_says_no_interval() -> None:
    # The audit's plug-in case: n_hat = 500 < n = 2000 (old bootstrap coverage: 0.045).
    p = _zipf(400, 1.0)
    samples = np.random.default_rng(2000).multinomial(500, p, size=REPS)
    for c in samples:
        est = estimate_statistical_exposure(c, n=2_000, k=5, delta=DELTA)
        assert est.estimator == "plug-in"
        assert est.interval == "none"
        assert math.isnan(est.lower)
        assert math.isnan(est.upper)
        assert "no valid interval" in str(est)


@pytest.mark.slow
@pytest.mark.parametrize(
    ("name", "p", "n_hat", "n", "k", "expected"),
    [
        # exposure near 1 on small samples: the jackknife covered 0.33 (n_hat = 30) and 0.72 (200)
        ("uniform-100-tiny", np.full(100, 1 / 100), 30, 15, 3, "mcdiarmid"),
        ("uniform-1000-small", np.full(1000, 1 / 1000), 200, 100, 3, "mcdiarmid"),
        ("uniform-1000-300", np.full(1000, 1 / 1000), 300, 150, 3, "jackknife"),
        ("zipf-0.8-300", _zipf(500, 0.8), 300, 150, 3, "jackknife"),
    ],
)
def test_small_samples_get_an_interval_that_covers(
    name: str, p: np.ndarray, n_hat: int, n: int, k: int, expected: str
) -> None:
    truth = statistical_exposure(p, n=n, k=k)
    samples = np.random.default_rng(len(name) * 31).multinomial(n_hat, p, size=REPS)
    hits = used = 0
    for c in samples:
        est = estimate_statistical_exposure(c, n=n, k=k, delta=DELTA)
        if est.interval != expected:  # a symmetric sample also falls back (all leave-one-outs equal)
            assert est.interval == "mcdiarmid"
            assert "leave-one-out" in est.note
        used += 1
        hits += est.lower <= truth <= est.upper
    assert used == REPS
    assert hits / REPS >= 1 - DELTA - 0.03, f"{name}: coverage {hits / REPS:.3f}"
