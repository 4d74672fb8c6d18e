"""Statistical exposure: exact references, Monte Carlo, and unbiasedness by exhaustive sub-sampling."""

from __future__ import annotations

import itertools
import math
from collections import Counter

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sdckit.errors import EmptyTableError, InputError, ParameterError
from sdckit.risk import (
    estimate_statistical_exposure,
    plugin_exposure,
    statistical_exposure,
)


def test_uniform_reference_mpmath() -> None:
    # Q_stat for p uniform on 20 values, n = 100, k = 5, i.e. P(Bin(99, 1/20) <= 3).
    # Reference: mpmath 1.3.0, mp.dps = 30, exact binomial sum -> 0.264964364778804210407938330607
    assert statistical_exposure(np.full(20, 1 / 20), n=100, k=5) == pytest.approx(0.2649643647788042, rel=1e-12)


def test_monte_carlo() -> None:
    rng = np.random.default_rng(20261130)
    p = np.array([0.5, 0.2, 0.1, 0.08, 0.05, 0.04, 0.02, 0.01])
    n, k, reps = 60, 3, 4000
    draws = rng.multinomial(n, p, size=reps)  # one release per row; a user of value v is exposed when c_v < k
    shares = (draws * (draws < k)).sum(axis=1) / n
    q = statistical_exposure(p, n=n, k=k)
    se = math.sqrt(q * (1 - q) / reps)  # a per-replicate share in [0, 1] has variance at most q(1 - q)
    assert abs(shares.mean() - q) < 4 * se


def _subsample_mean(counts: list[int], n: int, k: int) -> float:
    """Average share not k-anonymous over all size-n sub-samples of the users (exhaustive)."""
    users = [v for v, c in enumerate(counts) for _ in range(c)]
    total, num = 0.0, 0
    for sub in itertools.combinations(range(len(users)), n):
        vals = Counter(users[i] for i in sub)
        total += sum(c for c in vals.values() if c < k) / n
        num += 1
    return total / num


@settings(max_examples=25, deadline=None)
@given(st.lists(st.integers(1, 4), min_size=1, max_size=4), st.integers(1, 4), st.data())
def test_unbiased_by_exhaustive_enumeration(counts: list[int], k: int, data: st.DataObject) -> None:
    n_hat = sum(counts)
    n = data.draw(st.integers(1, min(n_hat, 9)))
    est = estimate_statistical_exposure(counts, n=n, k=k, interval="mcdiarmid")
    assert est.estimator == "unbiased"
    assert est.estimate == pytest.approx(_subsample_mean(counts, n, k), abs=1e-12)


def test_plugin_for_small_sample_and_radius() -> None:
    counts = [40, 30, 20, 5, 3, 1, 1]
    est = estimate_statistical_exposure(counts, n=500, k=3, seed=1)
    p = np.array(counts) / 100
    assert est.estimator == "plug-in"
    assert est.estimate == pytest.approx(statistical_exposure(p, n=500, k=3), rel=1e-12)
    big = estimate_statistical_exposure(counts, n=50, k=3, interval="mcdiarmid")
    # (2k - 1) sqrt(ln(2/delta) / (2 n_hat)) with k = 3, delta = 0.05, n_hat = 100
    assert big.mcdiarmid_radius == pytest.approx(5 * math.sqrt(math.log(40) / 200), rel=1e-14)
    assert big.lower == max(0.0, big.estimate - big.mcdiarmid_radius)
    boot = estimate_statistical_exposure(counts, n=50, k=3, seed=3)
    assert boot.upper - boot.lower < 2 * big.mcdiarmid_radius
    assert boot.lower <= boot.estimate <= boot.upper
    assert boot.to_dict()["estimator"] == "unbiased"


def test_bootstrap_is_reproducible_and_covers() -> None:
    rng = np.random.default_rng(11)
    p = np.array([0.3, 0.3, 0.2, 0.1, 0.05, 0.03, 0.02])
    n, k = 40, 3
    truth = statistical_exposure(p, n=n, k=k)
    hits = 0
    for _ in range(40):
        sample = rng.multinomial(400, p)
        est = estimate_statistical_exposure(sample, n=n, k=k, n_boot=200, seed=5)
        hits += est.lower <= truth <= est.upper
    assert hits >= 30  # nominal 95%; 40 trials, loose to stay robust
    a = estimate_statistical_exposure([5, 3, 2], n=4, k=2, seed=9)
    b = estimate_statistical_exposure([5, 3, 2], n=4, k=2, seed=9)
    assert (a.lower, a.upper) == (b.lower, b.upper)


def test_plugin_exposure_counts() -> None:
    # sample of 100, release of 50, k = 3: values with c * 50 < 3 * 100, i.e. c < 6, count
    assert plugin_exposure([40, 30, 20, 5, 3, 1, 1], n=50, k=3) == pytest.approx(0.10, abs=1e-15)


def test_table_input() -> None:
    import polars as pl

    df = pl.DataFrame({"a": [0, 0, 0, 1, 1, 2], "b": [0, 0, 0, 1, 1, 2]})
    via_table = estimate_statistical_exposure(df, ["a", "b"], n=4, k=2, interval="mcdiarmid")
    via_counts = estimate_statistical_exposure({"x": 3, "y": 2, "z": 1}, n=4, k=2, interval="mcdiarmid")
    assert via_table.estimate == pytest.approx(via_counts.estimate, abs=1e-15)


def test_errors() -> None:
    with pytest.raises(ParameterError, match="sums to"):
        statistical_exposure([0.5, 0.4], n=10, k=2)
    with pytest.raises(ParameterError, match="needs a sample at least as large"):
        estimate_statistical_exposure([3, 2], n=10, k=2, interval="mcdiarmid")
    with pytest.raises(EmptyTableError):
        estimate_statistical_exposure([0, 0], n=1, k=2)
    with pytest.raises(InputError, match="whole numbers"):
        estimate_statistical_exposure([1.5, 2], n=1, k=2)
    with pytest.raises(ParameterError, match="delta"):
        estimate_statistical_exposure([3, 2], n=2, k=2, delta=1.5)
