"""Population uniqueness from a sample: Zayatz, Pitman, SNB and the Gaussian-copula model.

A sample of n persons from a population of N (sampling fraction pi = n / N) shows its
equivalence classes on the quasi-identifiers; a class unique in the sample may or may not be
unique in the population. Three models estimate the *number* of population uniques from the
sample's class-size frequencies c_j (classes of size j), as ARX does (Dankar et al. 2012):

* Zayatz (1991): the population's class sizes are distributed like the sample's; a sample unique
  comes from a population class of size i with probability proportional to (c_i / K) h(i), h(i) =
  P(Hypergeom(N, i, n) = 1); population uniques = c_1 P(F = 1 | f = 1) / pi.
* Pitman (Hoshino 2001): the partition follows Pitman's sampling formula with (theta, alpha),
  fitted by maximum likelihood; population uniques = Gamma(theta + 1) / Gamma(theta + alpha) N^alpha.
* SNB (Chen and McNulty 1998): population class sizes are 1 + NegBin(r, p); Bernoulli sampling
  turns each into f = Bernoulli(pi) + NegBin(r, q), q = p / (p + pi (1 - p)); (r, p) fit the
  shares of sample classes of size 1 and 2; population uniques = K_hat p^r with K_hat the
  population's classes under the same fit.

The Gaussian-copula model of Rocher, Hendrickx and de Montjoye (2019) scores each *person*:
the marginals are the sample's, the dependence a Gaussian copula fitted on the sample; the cell
probability p_x of a person's values is a box probability of the latent normal (the GHK simulator),
and the probability that the person is unique in the population is (1 - p_x)^(N - 1).

Pure logic, no I/O.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import polars as pl
from numpy.typing import ArrayLike, NDArray
from scipy import optimize, special, stats

from sdckit.errors import InputError, NotFittedError, ParameterError

__all__ = [
    "GaussianCopulaUniqueness",
    "PopulationUniques",
    "pitman_uniques",
    "sample_class_sizes",
    "shlosser_classes",
    "snb_uniques",
    "zayatz_uniques",
]


@dataclass(frozen=True)
class PopulationUniques:
    """An estimate of the population uniques from a sample."""

    model: str
    n_sample: int
    n_population: int
    n_sample_uniques: int
    population_uniques: float
    """Estimated number of persons unique in the population."""
    parameters: dict[str, float] = field(default_factory=dict)

    @property
    def share(self) -> float:
        """Estimated share of the population that is unique (0..1)."""
        return self.population_uniques / self.n_population

    @property
    def unique_given_sample_unique(self) -> float:
        """Estimated P(population unique | sample unique) = pi * uniques / sample uniques (clipped to 0..1)."""
        if self.n_sample_uniques == 0:
            return 0.0
        pi = self.n_sample / self.n_population
        return float(min(1.0, max(0.0, pi * self.population_uniques / self.n_sample_uniques)))


def sample_class_sizes(frame: pl.DataFrame, columns: Sequence[str]) -> NDArray[np.int64]:
    """The size of every equivalence class of ``frame`` on ``columns`` (a missing value is a value)."""
    if not columns:
        raise ParameterError("columns: give at least one quasi-identifier.")
    return np.asarray(frame.group_by(list(columns)).len()["len"].to_numpy(), dtype=np.int64)


def _frequencies(class_sizes: ArrayLike) -> tuple[NDArray[np.int64], NDArray[np.int64], int, int]:
    sizes = np.asarray(class_sizes, dtype=np.int64)
    if sizes.size == 0 or (sizes < 1).any():
        raise InputError("class_sizes: a non-empty list of class sizes >= 1 (one per equivalence class of the sample).")
    j, c = np.unique(sizes, return_counts=True)
    return j, c, int(sizes.sum()), int(sizes.size)


def _check_population(n: int, population: int) -> float:
    if population < n:
        raise ParameterError(f"population={population}: the population holds at least the sample's {n} persons.")
    return n / population


def zayatz_uniques(class_sizes: ArrayLike, *, population: int) -> PopulationUniques:
    """Zayatz (1991): population uniques from the sample's class sizes.

    P(F = 1 | f = 1) = (c_1 / K) h(1) / sum_i (c_i / K) h(i), h(i) = P(Hypergeom(N, i, n) = 1);
    population uniques = c_1 P(F = 1 | f = 1) / pi.

    References
    ----------
    .. [1] Zayatz, L. (1991). Estimation of the percent of unique population elements on a
       microdata file using the sample. Statistical Research Division Report, US Census Bureau.
    """
    j, c, n, k = _frequencies(class_sizes)
    pi = _check_population(n, population)
    c1 = int(c[j == 1].sum())
    h = stats.hypergeom.pmf(1, population, j, n)
    denom = float(np.sum(c / k * h))
    p_unique = 0.0 if denom == 0 else float((c1 / k) * stats.hypergeom.pmf(1, population, 1, n) / denom)
    return PopulationUniques("zayatz", n, population, c1, c1 * p_unique / pi, {"p_unique_given_sample_unique": p_unique})


def _pitman_negloglik(params: NDArray[np.float64], j: NDArray[np.int64], c: NDArray[np.int64], n: int, k: int) -> float:
    theta, alpha = float(params[0]), float(params[1])
    # sum_{i=1}^{K-1} log(theta + i alpha) = (K - 1) log alpha + lgamma(theta/alpha + K) - lgamma(theta/alpha + 1)
    first = (k - 1) * np.log(alpha) + special.gammaln(theta / alpha + k) - special.gammaln(theta / alpha + 1)
    second = special.gammaln(theta + n) - special.gammaln(theta + 1)
    third = float(np.sum(c * (special.gammaln(j - alpha) - special.gammaln(1 - alpha))))
    return -(first - second + third)


def pitman_uniques(class_sizes: ArrayLike, *, population: int) -> PopulationUniques:
    """Pitman's sampling formula (Hoshino 2001): (theta, alpha) by maximum likelihood, then
    population uniques = Gamma(theta + 1) / Gamma(theta + alpha) N^alpha.

    The log-likelihood of a partition of n into K classes with c_j classes of size j is
    sum_{i<K} log(theta + i alpha) - sum_{i<n} log(theta + i) + sum_j c_j sum_{i<j} log(i - alpha),
    maximised over 0 < alpha < 1, theta > -alpha.

    References
    ----------
    .. [1] Hoshino, N. (2001). Applying Pitman's sampling formula to microdata disclosure risk
       assessment. Journal of Official Statistics 17(4), 499-520.
    """
    j, c, n, k = _frequencies(class_sizes)
    _check_population(n, population)
    c1 = int(c[j == 1].sum())
    if k == n:  # every person unique: the likelihood grows without bound as alpha -> 1
        return PopulationUniques("pitman", n, population, c1, float(population), {"theta": float("nan"), "alpha": 1.0})
    best = None
    for a0 in (0.2, 0.5, 0.8):
        for t0 in (1.0, float(k), float(k) * 10):
            res = optimize.minimize(
                _pitman_negloglik, x0=np.array([t0, a0]), args=(j, c, n, k), method="L-BFGS-B",
                bounds=[(1e-9, None), (1e-6, 1 - 1e-9)],
            )
            if np.isfinite(res.fun) and (best is None or res.fun < best.fun):
                best = res
    assert best is not None
    theta, alpha = float(best.x[0]), float(best.x[1])
    log_u = special.gammaln(theta + 1) - special.gammaln(theta + alpha) + alpha * np.log(population)
    uniques = float(min(np.exp(log_u), population))
    return PopulationUniques("pitman", n, population, c1, uniques, {"theta": theta, "alpha": alpha})


def shlosser_classes(class_sizes: ArrayLike, *, population: int) -> float:
    """Shlosser's estimate of the number of classes in the population (Haas et al. 1995):
    K_hat = K + c_1 sum_j (1 - pi)^j c_j / sum_j j pi (1 - pi)^(j - 1) c_j."""
    j, c, n, k = _frequencies(class_sizes)
    pi = _check_population(n, population)
    c1 = float(c[j == 1].sum())
    num = float(np.sum((1 - pi) ** j * c))
    den = float(np.sum(j * pi * (1 - pi) ** (j - 1) * c))
    return float(k + (c1 * num / den if den > 0 else 0.0))


def _snb_sample_pmf(r: float, p: float, pi: float) -> tuple[float, float, float]:
    """P(f = 0), P(f = 1), P(f = 2) when F = 1 + NegBin(r, p) and f | F ~ Bin(F, pi)."""
    q = p / (p + pi * (1 - p))
    nb0 = q**r
    nb1 = r * q**r * (1 - q)
    nb2 = r * (r + 1) / 2 * q**r * (1 - q) ** 2
    return (1 - pi) * nb0, pi * nb0 + (1 - pi) * nb1, pi * nb1 + (1 - pi) * nb2


def snb_uniques(class_sizes: ArrayLike, *, population: int) -> PopulationUniques:
    """The shifted negative binomial model (Chen and Keller-McNulty 1998).

    Population class sizes F = 1 + NegBin(r, p) (P(F = 1) = p^r); sampling each person with
    probability pi gives f = Bernoulli(pi) + NegBin(r, q), q = p / (p + pi (1 - p)). The sample
    shows the K classes with f >= 1: (r, p) solve c_1 / K = P(f = 1) / (1 - P(f = 0)) and
    c_2 / K = P(f = 2) / (1 - P(f = 0)) (least squares in log r, logit p); the population holds
    K_hat = K / (1 - P(f = 0)) classes and K_hat p^r uniques. (ARX takes K_hat from Shlosser's
    estimator instead, :func:`shlosser_classes`, which overshoots on skewed class sizes: 93,000
    for 60,000 in ``tests/risk/test_population.py``; here K_hat follows from the same fitted model.)

    References
    ----------
    .. [1] Chen, G. and Keller-McNulty, S. (1998). Estimation of identification disclosure risk in
       microdata. Journal of Official Statistics 14(1), 79-95.
    """
    j, c, n, k = _frequencies(class_sizes)
    pi = _check_population(n, population)
    c1, c2 = float(c[j == 1].sum()), float(c[j == 2].sum())
    target = np.array([c1, max(c2, 0.5)]) / k

    def residual(z: NDArray[np.float64]) -> NDArray[np.float64]:
        r, p = float(np.exp(z[0])), float(special.expit(z[1]))
        p0, p1, p2 = _snb_sample_pmf(r, p, pi)
        return np.log(np.array([p1, p2]) / (1 - p0) + 1e-300) - np.log(target)

    best = None
    for z0 in ((0.0, 0.0), (-2.0, 2.0), (2.0, -2.0), (-1.0, -3.0), (1.0, 3.0)):
        res = optimize.least_squares(residual, np.array(z0), bounds=([-12, -30], [12, 30]))
        if best is None or res.cost < best.cost:
            best = res
    assert best is not None
    r, p = float(np.exp(best.x[0])), float(special.expit(best.x[1]))
    k_hat = k / (1 - _snb_sample_pmf(r, p, pi)[0])
    uniques = float(min(k_hat * p**r, population))
    return PopulationUniques("snb", n, population, int(c1), uniques, {"r": r, "p": p, "classes": k_hat})


def _ordered_levels(series: pl.Series) -> list[Any]:
    """Levels in the copula's order: numbers ascending; other values by descending frequency
    (ties by their text), so neighbouring latent intervals hold similar counts."""
    if series.dtype.is_numeric():
        return series.drop_nulls().unique().sort().to_list() + ([None] if series.null_count() else [])
    vc = series.value_counts(sort=True, name="__n")
    rows = sorted(vc.iter_rows(), key=lambda row: (-row[1], str(row[0])))
    return [row[0] for row in rows]


class GaussianCopulaUniqueness:
    """Rocher, Hendrickx and de Montjoye's (2019) individual uniqueness: a Gaussian copula.

    Each column's marginal is its distribution in the sample, its levels cut the latent normal
    axis into intervals [Phi^-1(F(v-)), Phi^-1(F(v))); the latent correlation is the correlation
    of the normal scores of the distributional transform (u = F(v-) + U p(v), U uniform). A
    person's cell probability p_x = P(Z in box(x)), Z ~ N(0, R), is estimated by the GHK
    simulator (``draws`` sequential draws); the probability of being unique in a population of N
    is xi_x = (1 - p_x)^(N - 1), and the population's share of uniques is estimated by the mean of
    xi over the sample (each sampled person a draw from the population).

    Parameters
    ----------
    population : N, the population's size.
    draws : GHK draws per person.
    random_state : seed of the distributional transform and the GHK draws (None: OS entropy).

    Attributes
    ----------
    levels_ : per column, its ordered levels.
    thresholds_ : per column, the latent interval edges (len(levels) + 1, from -inf to inf).
    correlation_ : the latent correlation matrix (d, d).

    References
    ----------
    .. [1] Rocher, L., Hendrickx, J. M. and de Montjoye, Y.-A. (2019). Estimating the success of
       re-identifications in incomplete datasets using generative models. Nature Communications 10, 3069.
    .. [2] Genz, A. (1992). Numerical computation of multivariate normal probabilities. J. Comput.
       Graph. Stat. 1(2) (the GHK/Genz sequential conditioning).
    """

    def __init__(self, *, population: int, draws: int = 64, random_state: int | None = None) -> None:
        self.population = population
        self.draws = draws
        self.random_state = random_state

    def fit(self, sample: pl.DataFrame, columns: Sequence[str] | None = None) -> GaussianCopulaUniqueness:
        cols = list(columns or sample.columns)
        if sample.height < 2:
            raise InputError("the sample needs at least 2 rows to fit a copula.")
        _check_population(sample.height, self.population)
        rng = np.random.default_rng(self.random_state)
        self.columns_ = cols
        self.levels_: list[list[Any]] = []
        self.thresholds_: list[NDArray[np.float64]] = []
        latent = np.empty((sample.height, len(cols)))
        for i, c in enumerate(cols):
            levels = _ordered_levels(sample[c])
            codes = self._codes(sample[c], levels)
            p = np.bincount(codes, minlength=len(levels)) / sample.height
            cdf = np.concatenate([[0.0], np.cumsum(p)])
            cdf[-1] = 1.0
            self.levels_.append(levels)
            self.thresholds_.append(special.ndtri(cdf))
            u = cdf[codes] + rng.random(sample.height) * p[codes]
            latent[:, i] = special.ndtri(np.clip(u, 1e-12, 1 - 1e-12))
        corr = np.atleast_2d(np.corrcoef(latent, rowvar=False))
        w, v = np.linalg.eigh(corr)  # nearest positive definite: eigenvalues floored
        corr = (v * np.maximum(w, 1e-6)) @ v.T
        d = np.sqrt(np.diag(corr))
        self.correlation_ = corr / np.outer(d, d)
        return self

    @staticmethod
    def _codes(series: pl.Series, levels: list[Any]) -> NDArray[np.int64]:
        index = {v: i for i, v in enumerate(levels)}
        out = np.array([index.get(v, -1) for v in series.to_list()], dtype=np.int64)
        return out

    def cell_probability(self, frame: pl.DataFrame) -> NDArray[np.float64]:
        """p_x for each row of ``frame`` (a value the sample never showed has probability 0)."""
        if not hasattr(self, "correlation_"):
            raise NotFittedError("GaussianCopulaUniqueness is not fitted: call fit(sample) first.")
        d = len(self.columns_)
        lo = np.empty((frame.height, d))
        hi = np.empty((frame.height, d))
        unseen = np.zeros(frame.height, dtype=bool)
        for i, c in enumerate(self.columns_):
            codes = self._codes(frame[c], self.levels_[i])
            unseen |= codes < 0
            codes = np.maximum(codes, 0)
            lo[:, i] = self.thresholds_[i][codes]
            hi[:, i] = self.thresholds_[i][codes + 1]
        p = ghk_box_probability(self.correlation_, lo, hi, draws=self.draws, rng=np.random.default_rng(self.random_state))
        p[unseen] = 0.0
        return p

    def predict_uniqueness(self, frame: pl.DataFrame) -> NDArray[np.float64]:
        """xi_x = (1 - p_x)^(N - 1): each row's probability of being unique in the population."""
        p = self.cell_probability(frame)
        return np.exp((self.population - 1) * np.log1p(-np.clip(p, 0.0, 1.0 - 1e-16)))

    def population_uniques(self, sample: pl.DataFrame) -> PopulationUniques:
        """Estimated population uniques: N times the mean of xi over the sample."""
        xi = self.predict_uniqueness(sample)
        n_su = int(np.sum(sample_class_sizes(sample, self.columns_) == 1))
        return PopulationUniques("copula", sample.height, self.population, n_su, float(self.population * xi.mean()))


def ghk_box_probability(
    corr: NDArray[np.float64], lower: NDArray[np.float64], upper: NDArray[np.float64], *, draws: int,
    rng: np.random.Generator,
) -> NDArray[np.float64]:
    """P(lower < Z < upper), Z ~ N(0, corr), per row, by the GHK simulator (vectorised over rows).

    With corr = L L^T, Z = L e: for j = 1..d the bounds of e_j given e_<j are
    ((lower_j - sum_{k<j} L_jk e_k) / L_jj, (upper_j - ...) / L_jj); the estimate is the mean over
    ``draws`` of prod_j [Phi(b_j) - Phi(a_j)], e_j drawn from the normal truncated to [a_j, b_j].
    Unbiased for every box (Geweke 1991; Hajivassiliou, McFadden and Ruud 1996).
    """
    chol = np.linalg.cholesky(corr)
    n, d = lower.shape
    out = np.zeros(n)
    block = max(1, 2_000_000 // max(draws * d, 1))  # memory O(block draws d)
    for start in range(0, n, block):
        lo = lower[start : start + block][:, None, :]
        hi = upper[start : start + block][:, None, :]
        m = lo.shape[0]
        e = np.zeros((m, draws, d))
        weight = np.ones((m, draws))
        for j in range(d):
            shift = e[:, :, :j] @ chol[j, :j] if j else 0.0
            a = special.ndtr((lo[:, :, j] - shift) / chol[j, j])
            b = special.ndtr((hi[:, :, j] - shift) / chol[j, j])
            width = np.clip(b - a, 0.0, 1.0)
            weight *= width
            u = a + rng.random((m, draws)) * width
            e[:, :, j] = special.ndtri(np.clip(u, 1e-300, 1 - 1e-16))
        out[start : start + m] = weight.mean(axis=1)
    return out
