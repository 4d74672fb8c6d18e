"""Population uniqueness estimators against closed forms and simulations of their own models."""

from __future__ import annotations

from math import comb

import numpy as np
import polars as pl
import pytest
from scipy import stats

from sdckit.errors import ParameterError
from sdckit.risk._measures._population import (
    GaussianCopulaUniqueness,
    _snb_sample_pmf,
    ghk_box_probability,
    pitman_uniques,
    sample_class_sizes,
    shlosser_classes,
    snb_uniques,
    zayatz_uniques,
)


def test_zayatz_matches_the_hand_computed_formula() -> None:
    sizes = [1, 1, 1, 2, 3]  # K = 5 classes, n = 8
    big_n, n = 100, 8

    def h(i: int) -> float:  # P(Hypergeom(N, i, n) = 1), by counting
        return i * comb(big_n - i, n - 1) / comb(big_n, n)

    p = (3 / 5) * h(1) / ((3 / 5) * h(1) + (1 / 5) * h(2) + (1 / 5) * h(3))
    est = zayatz_uniques(sizes, population=big_n)
    assert est.parameters["p_unique_given_sample_unique"] == pytest.approx(p, rel=1e-12)
    assert est.population_uniques == pytest.approx(3 * p / (n / big_n), rel=1e-12)


def _pitman_yor_partition(n: int, theta: float, alpha: float, rng: np.random.Generator) -> np.ndarray:
    """Class label of each of n persons, by the two-parameter Chinese restaurant process."""
    labels = np.empty(n, dtype=np.int64)
    sizes = np.zeros(n, dtype=float)
    k = 0
    u = rng.random((n, 2))
    for i in range(n):
        if u[i, 0] < (theta + alpha * k) / (theta + i):
            sizes[k] = 1
            labels[i] = k
            k += 1
        else:  # an existing class j with probability (size_j - alpha) / (i - alpha k)
            cum = np.cumsum(sizes[:k] - alpha)
            j = int(np.searchsorted(cum, u[i, 1] * cum[-1], side="right"))
            sizes[j] += 1
            labels[i] = j
    return labels


def test_pitman_recovers_its_parameters_and_the_population_uniques() -> None:
    # a simple random sample of a Pitman-Yor partition is Pitman-Yor with the same (theta, alpha)
    rng = np.random.default_rng(7)
    big_n, n = 12_000, 3_000
    errors, alphas = [], []
    for _ in range(3):
        labels = _pitman_yor_partition(big_n, theta=100.0, alpha=0.5, rng=rng)
        true_uniques = int(np.sum(np.bincount(labels) == 1))
        sample = labels[rng.choice(big_n, n, replace=False)]
        est = pitman_uniques(np.bincount(sample)[np.bincount(sample) > 0], population=big_n)
        errors.append(est.population_uniques / true_uniques - 1)
        alphas.append(est.parameters["alpha"])
    assert np.mean(alphas) == pytest.approx(0.5, abs=0.06)
    assert abs(np.mean(errors)) < 0.12


def test_snb_sampling_law_matches_simulation() -> None:
    rng = np.random.default_rng(3)
    r, p, pi = 0.7, 0.4, 0.2
    big_f = 1 + rng.negative_binomial(r, p, size=400_000)
    f = rng.binomial(big_f, pi)
    p0, p1, p2 = _snb_sample_pmf(r, p, pi)
    assert np.mean(f == 0) == pytest.approx(p0, abs=0.003)
    assert np.mean(f == 1) == pytest.approx(p1, abs=0.003)
    assert np.mean(f == 2) == pytest.approx(p2, abs=0.003)


def test_snb_and_shlosser_on_a_population_of_their_model() -> None:
    rng = np.random.default_rng(11)
    r, p, pi = 0.6, 0.35, 0.1
    big_f = 1 + rng.negative_binomial(r, p, size=60_000)  # population classes
    f = rng.binomial(big_f, pi)
    sizes = f[f > 0]
    true_uniques = int(np.sum(big_f == 1))
    est = snb_uniques(sizes, population=round(sizes.sum() / pi))  # N such that n / N is the sampling fraction
    assert est.population_uniques == pytest.approx(true_uniques, rel=0.2)  # two moments of one sample: -11 % here
    assert est.parameters["classes"] == pytest.approx(60_000, rel=0.2)
    assert est.parameters["r"] == pytest.approx(r, rel=0.5)
    # Shlosser's estimate of the classes (ARX's choice) overshoots here: why snb_uniques does not use it
    assert shlosser_classes(sizes, population=round(sizes.sum() / pi)) > 1.3 * 60_000


def test_ghk_matches_scipy_for_random_boxes() -> None:
    rng = np.random.default_rng(5)
    a = rng.normal(size=(3, 3))
    cov = a @ a.T + 3 * np.eye(3)
    d = np.sqrt(np.diag(cov))
    corr = cov / np.outer(d, d)
    lower = rng.normal(-0.5, 0.7, size=(6, 3))
    upper = lower + rng.uniform(0.2, 1.5, size=(6, 3))
    lower[0, 0] = -np.inf
    upper[1, 2] = np.inf
    got = ghk_box_probability(corr, lower, upper, draws=20_000, rng=np.random.default_rng(0))
    mvn = stats.multivariate_normal(mean=np.zeros(3), cov=corr)
    want = np.array([mvn.cdf(u, lower_limit=lo) for lo, u in zip(lower, upper, strict=True)])
    np.testing.assert_allclose(got, want, rtol=0.03, atol=2e-4)


def test_copula_of_independent_columns_is_the_product_of_marginals() -> None:
    rng = np.random.default_rng(2)
    n = 20_000
    f = pl.DataFrame({"a": rng.integers(0, 5, n), "b": rng.integers(0, 3, n)})
    model = GaussianCopulaUniqueness(population=10**6, draws=256, random_state=0).fit(f, ["a", "b"])
    assert np.abs(model.correlation_[0, 1]) < 0.03
    probe = pl.DataFrame({"a": [0, 4], "b": [2, 1]})
    pa = f["a"].value_counts().sort("a")["count"].to_numpy() / n
    pb = f["b"].value_counts().sort("b")["count"].to_numpy() / n
    want = np.array([pa[0] * pb[2], pa[4] * pb[1]])
    np.testing.assert_allclose(model.cell_probability(probe), want, rtol=0.06)


def test_copula_ranks_population_uniques_on_a_copula_population() -> None:
    # a population drawn from a discretised Gaussian copula: the model is right, the AUC high and the share close
    rng = np.random.default_rng(9)
    big_n = 100_000
    corr = np.array([[1, 0.6, 0.3], [0.6, 1, 0.5], [0.3, 0.5, 1]])
    z = rng.multivariate_normal(np.zeros(3), corr, size=big_n)
    pop = pl.DataFrame({f"c{j}": np.digitize(z[:, j], np.linspace(-2.5, 2.5, 30)) for j in range(3)})
    unique = pop.select(pl.len().over(pop.columns)).to_series().to_numpy() == 1
    rows = rng.choice(big_n, 5_000, replace=False)
    sample = pop[rows]
    model = GaussianCopulaUniqueness(population=big_n, random_state=1).fit(sample)
    xi = model.predict_uniqueness(sample)
    auc = stats.mannwhitneyu(xi[unique[rows]], xi[~unique[rows]]).statistic / (unique[rows].sum() * (~unique[rows]).sum())
    assert auc > 0.9
    assert xi.mean() == pytest.approx(unique.mean(), abs=0.03)


def test_class_sizes_and_bad_population() -> None:
    f = pl.DataFrame({"a": [1, 1, 2, None], "b": ["x", "x", "y", "y"]})
    assert sorted(sample_class_sizes(f, ["a", "b"]).tolist()) == [1, 1, 2]
    with pytest.raises(ParameterError, match="population"):
        zayatz_uniques([1, 2], population=2)
