"""Coverage of the default interval of estimate_statistical_exposure, by simulation (issue 10).

Each case draws >= 400 curator samples from a known p, calls the public function on each, and counts
how often [lower, upper] holds the exact Q^stat_n(k) (statistical_exposure, closed form). Nominal
coverage 1 - delta = 0.90; the test asks for >= 0.87. The plug-in case must say it gives no interval.
"""

from __future__ import annotations

import math
from collections import Counter

import numpy as np
import pytest
from scipy import stats

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


# ---- few users carry the estimate (issue 23) ---------------------------------------------------------
# The estimate depends on a sample only through its multiset of counts, so each distinct multiset
# is estimated once and weighted by how often it was drawn: the public function on every sample,
# at a fraction of the cost.


def _misses(p: np.ndarray, n_hat: int, n: int, k: int, delta: float, reps: int, seed: int) -> tuple[float, float]:
    """Shares of samples with the truth above the upper end (unsafe) and below the lower end (safe)."""
    truth = statistical_exposure(p, n=n, k=k)
    drawn = np.random.default_rng(seed).multinomial(n_hat, p, size=reps)
    drawn.sort(axis=1)
    multisets = Counter(tuple(row[row > 0].tolist()) for row in drawn)
    above = below = 0
    for counts, times in multisets.items():
        est = estimate_statistical_exposure(list(counts), n=n, k=k, delta=delta)
        above += times * (truth > est.upper)
        below += times * (truth < est.lower)
    return above / reps, below / reps


def _slack(rate: float, reps: int) -> float:
    return 3 * math.sqrt(rate * (1 - rate) / reps)  # three binomial standard errors


@pytest.mark.slow
@pytest.mark.parametrize("tail_users", [1, 3, 5, 10, 20])
def test_rare_tail_upper_end_covers(tail_users: int) -> None:
    # one big value and a tail of 50 values holding `tail_users` expected sampled users; k = 5.
    # The audit: with 3 tail users the truth was above the upper end in 14-16 % of samples at 0.95.
    reps = 1000
    for n_hat in (30, 300, 1_000, 10_000):
        if tail_users / n_hat > 0.2:
            continue  # 10 or 20 of 30 users is not a rare tail (and it is the slowest case)
        share = tail_users / n_hat
        p = np.r_[1 - share, np.full(50, share / 50)]
        for delta in (0.10, 0.05):
            above, _ = _misses(p, n_hat, max(n_hat // 2, 5), 5, delta, reps, seed=n_hat + tail_users)
            assert above <= delta / 2 + _slack(delta / 2, reps), f"n_hat={n_hat}, delta={delta}: {above:.3f}"


@pytest.mark.slow
@pytest.mark.parametrize("big_users", [3, 10, 30])
def test_exposure_near_one_both_ends(big_users: int) -> None:
    # everyone is rare but one value of `big_users` expected sampled users, n_hat = 1,000, k = 5.
    # The jackknife missed on the safe side here (truth below the lower end in 70 % at 3 users).
    reps, n_hat = 400, 1_000
    share = big_users / n_hat
    p = np.r_[share, np.full(20_000, (1 - share) / 20_000)]
    for delta in (0.10, 0.05):
        above, below = _misses(p, n_hat, n_hat // 2, 5, delta, reps, seed=big_users)
        assert above <= delta / 2 + _slack(delta / 2, reps), f"unsafe side, delta={delta}: {above:.3f}"
        assert below <= delta / 2 + _slack(delta / 2, reps), f"safe side, delta={delta}: {below:.3f}"


def test_exact_limit_is_said_and_is_clopper_pearson() -> None:
    # 2 tail users of 1,000: the jackknife's upper end would be below the exact limit
    counts = [998, 1, 1]
    est = estimate_statistical_exposure(counts, n=500, k=5, delta=0.05)
    assert est.upper == pytest.approx(float(stats.beta.ppf(0.975, 3, 998)))  # x = 2: Beta(x + 1, n_hat - x)
    assert "exact binomial limit" in est.note
    explicit = estimate_statistical_exposure(counts, n=500, k=5, delta=0.05, interval="jackknife")
    assert explicit.upper < est.upper  # asked for by name, the jackknife is the jackknife
