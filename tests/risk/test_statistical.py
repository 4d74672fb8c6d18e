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
    assert statistical_exposure(np.full(20, 1 / 20), n=100, k=5) == pytest.approx(
        0.2649643647788042, rel=1e-12
    )


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
    est = estimate_statistical_exposure(counts, n=500, k=3)
    p = np.array(counts) / 100
    assert est.estimator == "plug-in"
    assert est.estimate == pytest.approx(statistical_exposure(p, n=500, k=3), rel=1e-12)
    # the plug-in regime gives no interval, and says so in the result, its JSON and its text
    assert est.interval == "none"
    assert not est.has_interval
    assert math.isnan(est.lower)
    assert math.isnan(est.upper)
    assert est.to_dict()["lower"] is None
    assert est.to_dict()["has_interval"] is False
    assert "no valid interval" in str(est)
    assert "smaller than the release" in est.note
    big = estimate_statistical_exposure(counts, n=50, k=3, interval="mcdiarmid")
    # (2k - 1) sqrt(ln(2/delta) / (2 n_hat)) with k = 3, delta = 0.05, n_hat = 100
    assert big.mcdiarmid_radius == pytest.approx(5 * math.sqrt(math.log(40) / 200), rel=1e-14)
    assert big.lower == max(0.0, big.estimate - big.mcdiarmid_radius)
    auto = estimate_statistical_exposure(counts, n=50, k=3)  # 100 users: too few for the jackknife
    assert auto.interval == "mcdiarmid"
    assert "under-covers" in auto.note
    assert (auto.lower, auto.upper) == (big.lower, big.upper)
    jack = estimate_statistical_exposure(counts, n=50, k=3, interval="jackknife")
    assert jack.interval == "jackknife"
    assert "under-covers" in jack.note
    assert jack.to_dict()["estimator"] == "unbiased"
    assert jack.upper - jack.lower < 2 * big.mcdiarmid_radius
    assert jack.lower <= jack.estimate <= jack.upper
    assert "95% jackknife interval" in str(jack)


def _leave_one_out_brute(counts: list[int], n: int, k: int) -> float:
    """V_ES = sum_i (S_(i) - mean)^2, one user removed at a time, each S_(i) recomputed from scratch."""
    users = [v for v, c in enumerate(counts) for _ in range(c)]
    loo = []
    for i in range(len(users)):
        rest = Counter(users[:i] + users[i + 1 :])
        loo.append(
            estimate_statistical_exposure(list(rest.values()), n=n, k=k, interval="mcdiarmid").estimate
        )
    arr = np.array(loo)
    return float(((arr - arr.mean()) ** 2).sum())


def test_jackknife_variance_by_brute_force() -> None:
    for counts, n, k in [([5, 3, 2, 1], 4, 2), ([7, 1, 1, 1, 4], 9, 3), ([2, 2, 2], 5, 3)]:
        est = estimate_statistical_exposure(counts, n=n, k=k, interval="jackknife")
        assert est.std_error**2 == pytest.approx(_leave_one_out_brute(counts, n, k), rel=1e-10, abs=1e-15)
        z = 1.959963984540054  # Phi^-1(0.975)
        assert est.upper == pytest.approx(min(1.0, est.estimate + z * est.std_error), rel=1e-12)


def _multinomial_outcomes(n_hat: int, atoms: int) -> list[tuple[int, ...]]:
    if atoms == 1:
        return [(n_hat,)]
    return [(c, *rest) for c in range(n_hat + 1) for rest in _multinomial_outcomes(n_hat - c, atoms - 1)]


def test_efron_stein_is_conservative_in_expectation_exactly() -> None:
    # Exact expectation over every multinomial sample: E[V_ES] >= Var(S_hat) (Efron-Stein + Hoeffding).
    for p, n_hat, n, k in [
        ((0.5, 0.3, 0.2), 8, 4, 2),
        ((0.6, 0.2, 0.1, 0.1), 7, 3, 3),
        ((0.25,) * 4, 9, 6, 2),
    ]:
        probs, mean_s, mean_s2, mean_v = np.array(p), 0.0, 0.0, 0.0
        for c in _multinomial_outcomes(n_hat, len(p)):
            w = (
                math.factorial(n_hat)
                / math.prod(math.factorial(x) for x in c)
                * float(np.prod(probs ** np.array(c)))
            )
            est = estimate_statistical_exposure([x for x in c if x], n=n, k=k)
            mean_s, mean_s2, mean_v = (
                mean_s + w * est.estimate,
                mean_s2 + w * est.estimate**2,
                mean_v + w * est.std_error**2,
            )
        assert mean_s == pytest.approx(statistical_exposure(probs, n=n, k=k), abs=1e-12)  # unbiased
        assert mean_v >= mean_s2 - mean_s**2


def test_n_hat_equal_n_falls_back_to_mcdiarmid() -> None:
    est = estimate_statistical_exposure([5, 3, 2], n=10, k=2)
    assert est.interval == "mcdiarmid"
    assert "McDiarmid" in est.note
    assert est.upper == min(1.0, est.estimate + est.mcdiarmid_radius)
    sym = estimate_statistical_exposure([4, 4], n=4, k=2, interval="jackknife")  # by symmetry every S_(i) is equal: V_ES = 0
    assert sym.std_error == 0.0
    assert sym.interval == "mcdiarmid"
    assert sym.upper - sym.lower > 0
    with pytest.raises(ParameterError, match="bootstrap' was removed"):
        estimate_statistical_exposure([5, 3, 2], n=4, k=2, interval="bootstrap")  # type: ignore[arg-type]


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
    with pytest.raises(ParameterError, match="no valid interval exists"):
        estimate_statistical_exposure([3, 2], n=10, k=2, interval="mcdiarmid")
    with pytest.raises(EmptyTableError):
        estimate_statistical_exposure([0, 0], n=1, k=2)
    with pytest.raises(InputError, match="whole numbers"):
        estimate_statistical_exposure([1.5, 2], n=1, k=2)
    with pytest.raises(ParameterError, match="delta"):
        estimate_statistical_exposure([3, 2], n=2, k=2, delta=1.5)
