"""Utility and risk measures: null values, hand-computed cases, brute force, independent fits."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numpy.testing import assert_allclose
from scipy.optimize import minimize

from sdckit.errors import ParameterError
from sdckit.microagg import (
    MDAV,
    cluster_utility,
    ecdf_utility,
    eigen_distance,
    il1s,
    interval_disclosure,
    propensity_utility,
    utility_measures,
    utility_table,
)
from sdckit.microagg._utility import negative_share, relative_change

COLS = ["AFNLWGT", "AGI", "EMCONTRB", "FEDTAX", "PTOTVAL"]  # 5 Census columns: cubic U_p stays cheap


def test_identical_data_gives_null_values(census: pl.DataFrame) -> None:
    t = utility_table(census, census, columns=COLS, n_clusters=10)
    for name, value in t.rows():
        if name == "sdid_risk":
            assert value == 1.0  # an unmasked release discloses every record
        else:
            assert abs(value) < 1e-12, name


def test_measures_grow_with_k(census: pl.DataFrame) -> None:
    tables = [
        utility_table(census, MDAV(k=k).fit_transform(census.select(COLS)), columns=COLS)
        for k in (3, 10, 40)
    ]
    # means are kept exactly by MDAV; U_c (depends on the k-means cut) and U_p (saturates at
    # c(1 - c)) are not monotone in k in general, the measures below are on this data
    for name in (
        "information_loss_pct",
        "il1s",
        "eigen_distance",
        "variance_change",
        "covariance_change",
        "correlation_change",
        "regression_change",
        "ecdf_max",
        "ecdf_mean_square",
    ):
        values = [getattr(t, name) for t in tables]
        assert values[0] > 0, (name, values)
        assert values[0] < values[1] < values[2], (name, values)
    assert all(t.mean_change < 1e-12 for t in tables)
    assert tables[0].propensity > 0


def test_hand_computed_small_cases() -> None:
    x = np.array([[0.0], [2.0]])
    xm = np.array([[1.0], [1.0]])
    # sd (ddof=1) = sqrt(2); |x - x'| = 1 per cell; 1 / (sqrt(2) sqrt(2)) = 1/2
    assert_allclose(il1s(x, xm), 0.5)
    # 1 column: lambda = var/sd^2, so |lambda - lambda'| / lambda = |1 - var(x') / var(x)| = 1
    assert_allclose(eigen_distance(x, xm), 1.0)
    xs = np.array([[0.0, 0.0], [1.0, 1.0], [2.0, 2.0], [3.0, 3.0]])
    xms = xs + np.array([[0.0, 0.0], [0.01, 0.0], [1.0, 0.0], [0.0, -0.5]])
    # sd = 1.291; 0.05 sd = 0.0645: rows 0 and 1 inside on both columns, rows 2 and 3 outside
    assert_allclose(interval_disclosure(xs, xms), 0.5)
    # only column 0 is >= 0 in the original; one of its two masked cells is negative
    assert_allclose(
        negative_share(np.array([[1.0, -1.0], [2.0, 3.0]]), np.array([[-1.0, -5.0], [2.0, 3.0]])), 0.5
    )
    # ||b - a||_1 / ||a||_1 = (1 + 1) / (2 + 2)
    assert_allclose(relative_change(np.array([2.0, -2.0]), np.array([3.0, -1.0])), 0.5)


def brute_ecdf(x: np.ndarray, xm: np.ndarray) -> tuple[float, float]:
    """Direct definition: F(z) over all merged rows by broadcasting (O(N^2 p) memory; small N only)."""
    merged = np.vstack([x, xm])
    f_o = (x[None, :, :] <= merged[:, None, :]).all(axis=2).mean(axis=1)
    f_m = (xm[None, :, :] <= merged[:, None, :]).all(axis=2).mean(axis=1)
    return float(np.abs(f_o - f_m).max()), float(np.mean((f_o - f_m) ** 2))


@settings(max_examples=30, deadline=None)
@given(n=st.integers(2, 60), p=st.integers(1, 4), seed=st.integers(0, 2**32 - 1))
def test_ecdf_equals_brute_force(n: int, p: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    x = rng.integers(0, 5, (n, p)).astype(float)  # ties: <= must count equal values
    xm = x + rng.integers(-1, 2, (n, p))
    assert_allclose(ecdf_utility(x, xm, max_points=None), brute_ecdf(x, xm), rtol=1e-12, atol=1e-15)


def test_ecdf_subsample_is_bounded_by_full() -> None:
    rng = np.random.default_rng(4)
    x = rng.standard_normal((800, 3))
    xm = x + 0.3 * rng.standard_normal((800, 3))
    full_max, full_ms = ecdf_utility(x, xm, max_points=None)
    sub_max, sub_ms = ecdf_utility(x, xm, max_points=400, seed=1)
    assert sub_max <= full_max
    assert abs(sub_ms - full_ms) < 0.5 * full_ms  # an estimate of the mean over 1,600 points


def test_cluster_hand_case() -> None:
    rng = np.random.default_rng(0)
    x = np.vstack([rng.normal(0, 0.1, (50, 2)), rng.normal(10, 0.1, (50, 2))])
    xm = rng.normal(0, 0.1, (100, 2))  # every masked row in the first blob
    # clusters {50 orig + 100 masked} and {50 orig}: ((1/3 - 1/2)^2 + (1 - 1/2)^2) / 2 = 5/36
    assert_allclose(cluster_utility(x, xm, n_clusters=2, seed=3), 5 / 36, rtol=1e-12)
    with pytest.raises(ParameterError, match="n_clusters=500"):
        cluster_utility(x, xm, n_clusters=500)


def scipy_logistic_pmse(x: np.ndarray, xm: np.ndarray) -> float:
    """Independent U_p, degree 1: intercept + raw columns, maximum likelihood by BFGS."""
    design = np.column_stack([np.ones(len(x) + len(xm)), np.vstack([x, xm])])
    y = np.r_[np.zeros(len(x)), np.ones(len(xm))]

    def nll(beta: np.ndarray) -> float:
        eta = design @ beta
        return float(np.logaddexp(0, eta).sum() - y @ eta)

    def grad(beta: np.ndarray) -> np.ndarray:
        return np.asarray(design.T @ (1 / (1 + np.exp(-(design @ beta))) - y))

    beta = minimize(nll, np.zeros(design.shape[1]), jac=grad, method="BFGS", options={"gtol": 1e-10}).x
    prob = 1 / (1 + np.exp(-(design @ beta)))
    return float(np.mean((prob - len(xm) / len(y)) ** 2))


def test_propensity_matches_independent_fit() -> None:
    rng = np.random.default_rng(8)
    x = rng.standard_normal((150, 2))
    xm = 0.3 + 1.2 * rng.standard_normal((120, 2))
    # the ridge (1e-6 N) shifts the fit by ~1e-6 relative
    assert_allclose(propensity_utility(x, xm, degree=1), scipy_logistic_pmse(x, xm), rtol=1e-4)


def test_propensity_blind_spot_of_degree_two() -> None:
    x = np.random.default_rng(1).lognormal(0, 0.6, (400, 2))
    xm = 2 * x.mean(axis=0) - x  # the reflection keeps mean and covariance exactly, flips skewness
    assert propensity_utility(x, xm, degree=2) < 1e-12  # blind: mean and covariance match (notes §4)
    assert propensity_utility(x, xm, degree=3) > 1e-3  # cubic terms see the skew
    with pytest.raises(ParameterError, match="degree=0"):
        propensity_utility(x, xm, degree=0)


def test_utility_measures_shape_check_and_dict() -> None:
    x = np.random.default_rng(0).standard_normal((30, 2))
    with pytest.raises(ParameterError, match="same shape"):
        utility_measures(x, x[:10])
    table = utility_measures(x, x + 0.1, n_clusters=3)
    d = table.to_dict()
    assert table.to_frame()["measure"].to_list() == [m for m in d if not m.startswith("propensity_terms")]
    assert d["propensity_terms"] == d["propensity_terms_total"] == 9  # 2 columns, degree 3: all terms
    assert list(d)[:2] == ["information_loss_pct", "il1s"]
    assert len(d) == 18  # 16 measures and the two term counts of U_p


def test_propensity_cubic_matches_independent_fit() -> None:
    """Degree 3 on 3 columns (19 monomials): the QR/Newton fit against BFGS on the raw monomials."""
    from itertools import combinations_with_replacement

    rng = np.random.default_rng(3)
    x = rng.standard_normal((300, 3))
    xm = x + 0.4 * rng.standard_normal((300, 3)) ** 2
    z = np.vstack([x, xm])
    z = (z - x.mean(axis=0)) / x.std(axis=0)
    mono = [np.prod(z[:, list(c)], axis=1) for d in (1, 2, 3) for c in combinations_with_replacement(range(3), d)]
    design = np.column_stack([np.ones(len(z)), *mono])
    y = np.r_[np.zeros(300), np.ones(300)]

    def nll(beta: np.ndarray) -> tuple[float, np.ndarray]:
        eta = design @ beta
        return float(np.logaddexp(0, eta).sum() - y @ eta), design.T @ (1 / (1 + np.exp(-eta)) - y)

    beta = minimize(nll, np.zeros(design.shape[1]), jac=True, method="BFGS", options={"gtol": 1e-9}).x
    expected = float(np.mean((1 / (1 + np.exp(-(design @ beta))) - 0.5) ** 2))
    assert_allclose(propensity_utility(x, xm, degree=3, max_terms=None), expected, rtol=1e-4)


def test_propensity_terms_are_capped_and_stated() -> None:
    from sdckit.microagg._utility import propensity_terms

    terms, total = propensity_terms(34, 8000, degree=3, max_terms=200, seed=5)
    assert total == 7769  # C(37, 3) - 1
    assert len(terms) == 200 == len(set(terms))
    assert {(j,) * d for j in range(34) for d in (1, 2, 3)} <= set(terms)  # every power kept
    assert terms == propensity_terms(34, 8000, degree=3, max_terms=200, seed=5)[0]  # seeded
    assert propensity_terms(13, 2160, degree=3)[0].__len__() == 559  # "auto" keeps Census whole
    with pytest.raises(ParameterError, match="max_terms"):
        propensity_terms(34, 8000, degree=3, max_terms=50)
    x = np.random.default_rng(0).standard_normal((200, 8))
    table = utility_measures(x, x + 0.05, n_clusters=3, max_terms=40)
    assert (table.propensity_terms, table.propensity_terms_total) == (40, 164)
    assert "40 of the 164" in table.propensity_note


def test_propensity_separable_release_saturates() -> None:
    """A release shifted far away is told apart: U_p reaches c(1 - c) (the line search never loses)."""
    x = np.random.default_rng(2).standard_normal((200, 3))
    assert propensity_utility(x, x + 50.0) == pytest.approx(0.25, abs=1e-3)


def test_basic_level_leaves_out_the_model_measures(census: pl.DataFrame) -> None:
    full = utility_table(census, census.reverse(), columns=COLS, n_clusters=10)
    basic = utility_table(census, census.reverse(), columns=COLS, level="basic")
    for name, value in basic.rows():
        if name in ("ecdf_max", "ecdf_mean_square", "cluster", "propensity"):
            assert np.isnan(value), name
        else:
            assert value == getattr(full, name), name
