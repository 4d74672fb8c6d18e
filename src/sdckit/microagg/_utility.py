"""Data-utility and interval-disclosure measures comparing an original and a masked table.

Microaggregation notes §4 [lit: Woo, Reiter, Oganian and Karr (2009), J. Priv. Confid. 1(1);
sdcMicro's ``dUtility``; sdcMicro's ``dRisk`` is :func:`sdckit.risk.d_risk`]. Pure array functions plus :func:`utility_table`, which takes
frames and returns every measure in one :class:`UtilityTable`.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import asdict, dataclass, fields
from typing import Any, Literal

import numpy as np
import polars as pl
from numba import njit
from numpy.typing import NDArray
from scipy.cluster.vq import kmeans2
from scipy.linalg import cho_factor, cho_solve, qr
from scipy.linalg.blas import dsyrk
from scipy.special import expit
from threadpoolctl import threadpool_limits

from sdckit._io import DataSource
from sdckit.errors import ParameterError
from sdckit.microagg._base import numeric_matrix
from sdckit.microagg._mdav import information_loss
from sdckit.risk._measures._linkage import interval_disclosure, sample_sd


def _scale(x: NDArray[np.float64]) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    sd = x.std(axis=0)
    return x.mean(axis=0), np.where(sd > 0, sd, 1.0)


def _standardized_like(x: NDArray[np.float64], a: NDArray[np.float64]) -> NDArray[np.float64]:
    """``a`` in z-scores of the original ``x``: its column means and population sds (0 sd -> 1)."""
    mean, sd = _scale(x)
    return (a - mean) / sd


def il1s(x: NDArray[np.float64], xm: NDArray[np.float64]) -> float:
    """IL1s = (1 / (n p)) sum_ij |x_ij - x'_ij| / (sqrt(2) sd_j): mean absolute change in sd units.

    This is the literature's normalisation, a mean over the n p cells [lit: Yancey, Winkler and
    Creecy (2002), LNCS 2316; Mateo-Sanz, Domingo-Ferrer and Sebe (2005)]. sdcMicro's
    ``dUtility(x, xm, method="IL1s")`` (5.8.1) computes the same terms but sums them over the cells,
    sum_ij |x_ij - x'_ij| / (sqrt(2) sd_j) = n p * IL1s, so it grows with the table (its older
    ``"IL1old"`` is the mean, as here); the notes write the sum. ``sd_j`` is the original sample sd
    (ddof=1); constant columns are left out. Unitless, >= 0.
    """
    sd = sample_sd(x)
    use = sd > 0
    if not use.any():
        return 0.0
    return float(np.mean(np.abs(x[:, use] - xm[:, use]) / (np.sqrt(2.0) * sd[use])))


EIGEN_METHODS = ("original", "sdcmicro")


def eigen_distance(
    x: NDArray[np.float64], xm: NDArray[np.float64], *, method: str = "original", tol: float = 1e-9
) -> float:
    """sum_j |lambda_j - lambda'_j| / lambda_j over the eigenvalues (descending) of two covariances.

    ``method`` says how each table is standardised before its covariance is taken:

    * ``"original"`` (default): both tables in the z-scores of the original (its mean and sd), so
      lambda' also sees a change of scale (microaggregation shrinks variances: lambda' < lambda);
    * ``"sdcmicro"``: each table by its own mean and sd, as sdcMicro's ``dUtility(method="eigen")``
      (``eigen(var(scale(x)))`` against ``eigen(var(scale(xm)))``): the eigenvalues of the two
      correlation matrices, blind to a change of scale.

    Eigenvalues of the original below ``tol`` times the largest (exact collinearity) are left out.
    Unitless, >= 0.
    """
    if method not in EIGEN_METHODS:
        raise ParameterError(
            f"method={method!r}: use 'original' (the original's z-scores) or 'sdcmicro' (each table's own)."
        )

    def spectrum(z: NDArray[np.float64]) -> NDArray[np.float64]:
        return np.sort(np.linalg.eigvalsh(np.atleast_2d(np.cov(z, rowvar=False))))[::-1]

    lam = spectrum(_standardized_like(x, x))
    lam_m = spectrum(_standardized_like(x if method == "original" else xm, xm))
    use = lam > tol * lam[0]
    return float(np.sum(np.abs(lam[use] - lam_m[use]) / lam[use]))


def relative_change(a: NDArray[np.float64], b: NDArray[np.float64]) -> float:
    """||b - a||_1 / ||a||_1: the mean absolute change relative to the mean absolute size (0 = unchanged)."""
    a = np.ravel(a)
    b = np.ravel(b)
    ok = ~(np.isnan(a) | np.isnan(b))
    den = float(np.abs(a[ok]).sum())
    num = float(np.abs(b[ok] - a[ok]).sum())
    if den == 0:
        return 0.0 if num == 0 else float("inf")
    return num / den


def _moments3(x: NDArray[np.float64]) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    c = x - x.mean(axis=0)
    m2 = (c**2).mean(axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        skew = (c**3).mean(axis=0) / m2**1.5
        kurt = (c**4).mean(axis=0) / m2**2
    return skew, kurt


def _regression_coefficients(z: NDArray[np.float64]) -> NDArray[np.float64]:
    """Slopes of each column on all others (OLS with intercept, minimum-norm when collinear)."""
    n, p = z.shape
    out = []
    for j in range(p):
        design = np.column_stack([np.ones(n), np.delete(z, j, axis=1)])
        beta, *_ = np.linalg.lstsq(design, z[:, j], rcond=None)
        out.append(beta[1:])
    return np.concatenate(out) if out else np.zeros(0)


def _upper(m: NDArray[np.float64], diag: bool) -> NDArray[np.float64]:
    return m[np.triu_indices(m.shape[0], 0 if diag else 1)]


@njit(cache=True, nogil=True)
def _dominance_counts(points: NDArray[np.float64], data: NDArray[np.float64]) -> NDArray[np.int64]:
    """For each point z, the number of rows x of ``data`` with x <= z in every column."""
    q, p = points.shape
    n = data.shape[0]
    out = np.zeros(q, dtype=np.int64)
    for a in range(q):
        cnt = 0
        for i in range(n):
            ok = True
            for j in range(p):
                if data[i, j] > points[a, j]:
                    ok = False
                    break
            if ok:
                cnt += 1
        out[a] = cnt
    return out


def ecdf_utility(
    x: NDArray[np.float64], xm: NDArray[np.float64], *, max_points: int | None = 2000, seed: int = 0
) -> tuple[float, float]:
    """(U_m, U_s): the largest and the mean squared gap between the multivariate ECDFs.

    ``F(z)`` = share of rows with every column <= z (componentwise). Over the merged rows z_j:
    ``U_m = max_j |F_o(z_j) - F_m(z_j)|``, ``U_s = (1/N) sum_j (F_o(z_j) - F_m(z_j))^2`` [lit: Woo
    et al. 2009]. With more than ``max_points`` merged rows, the z_j are a uniform sample of that
    many of them (seeded; F itself always counts every row), so U_m is then a lower bound and U_s
    an unbiased estimate. Cost O(N * max_points * p) time, O(N p) memory. Both in [0, 1].
    """
    merged = np.ascontiguousarray(np.vstack([x, xm]))
    if max_points is not None and merged.shape[0] > max_points:
        rng = np.random.default_rng(seed)
        merged = merged[rng.choice(merged.shape[0], size=max_points, replace=False)]
    f_o = _dominance_counts(merged, np.ascontiguousarray(x)) / x.shape[0]
    f_m = _dominance_counts(merged, np.ascontiguousarray(xm)) / xm.shape[0]
    gap = f_o - f_m
    return float(np.abs(gap).max()), float(np.mean(gap**2))


def cluster_utility(
    x: NDArray[np.float64], xm: NDArray[np.float64], *, n_clusters: int | None = None, seed: int = 0
) -> float:
    """U_c = (1/G) sum_j (n_j^o / n_j - c)^2 with c = n_o / N [lit: Woo et al. 2009; notes §4].

    The merged rows, standardised with the original mean and sd, are cut into G clusters by
    k-means (scipy ``kmeans2``, k-means++ start, seeded); equal weights w_j = 1; empty clusters
    are left out. Default G = max(2, min(50, N // 100)). 0 when every cluster holds original and
    masked rows in the overall proportion; at most c^2 or (1 - c)^2.
    """
    merged = np.vstack([x, xm])
    z = _standardized_like(x, merged)
    big_n = merged.shape[0]
    g = max(2, min(50, big_n // 100)) if n_clusters is None else n_clusters
    if g < 1 or g > big_n:
        raise ParameterError(f"n_clusters={g} must be between 1 and the {big_n} merged rows.")
    _, labels = kmeans2(z, g, minit="++", seed=np.random.default_rng(seed))
    is_orig = np.zeros(big_n)
    is_orig[: x.shape[0]] = 1.0
    n_j = np.bincount(labels, minlength=g).astype(np.float64)
    o_j = np.bincount(labels, weights=is_orig, minlength=g)
    c = x.shape[0] / big_n
    use = n_j > 0
    return float(np.mean((o_j[use] / n_j[use] - c) ** 2))


def polynomial_terms(z: NDArray[np.float64], degree: int) -> NDArray[np.float64]:
    """All monomials of the columns of total degree 1..degree (no intercept), one column each."""
    return _monomial_matrix(z, _monomials(z.shape[1], degree))


def _monomials(p: int, degree: int) -> list[tuple[int, ...]]:
    """Every monomial of total degree 1..degree in ``p`` variables, as tuples of column indices."""
    return [c for d in range(1, degree + 1) for c in itertools.combinations_with_replacement(range(p), d)]


def _monomial_matrix(z: NDArray[np.float64], terms: Sequence[tuple[int, ...]]) -> NDArray[np.float64]:
    out = np.empty((z.shape[0], len(terms)))
    for j, term in enumerate(terms):
        col = z[:, term[0]].copy()
        for i in term[1:]:
            col *= z[:, i]
        out[:, j] = col
    return out


_NEWTON_FLOPS = 1e9
"""Budget of one Newton step of the propensity model (N F^2 flops) behind ``max_terms="auto"``."""


def propensity_terms(
    p: int, n_rows: int, *, degree: int = 3, max_terms: int | Literal["auto"] | None = "auto", seed: int = 0
) -> tuple[list[tuple[int, ...]], int]:
    """The monomials of the propensity model and how many there are in all: ``(terms, total)``.

    All C(p + degree, degree) - 1 monomials when they fit in ``max_terms``; otherwise every
    single-column power (x_j, x_j^2, ..., x_j^degree: p * degree terms) and a uniform sample,
    seeded, of the interactions to fill ``max_terms``. ``"auto"`` caps the terms at
    sqrt(1e9 / N) (one Newton step <= 1e9 flops), at least p * degree + 1; None never caps.
    """
    terms = _monomials(p, degree)
    total = len(terms)
    if max_terms == "auto":
        cap: int | None = max(p * degree + 1, int(np.sqrt(_NEWTON_FLOPS / max(n_rows, 1))))
    else:
        cap = max_terms
    if cap is None or total <= cap:
        return terms, total
    if isinstance(cap, bool) or not isinstance(cap, (int, np.integer)) or cap < p * degree:
        raise ParameterError(
            f"max_terms={max_terms!r} must be 'auto', None or a whole number >= {p * degree} "
            f"(the {p} columns' powers up to degree {degree})."
        )
    powers = [t for t in terms if len(set(t)) == 1]
    mixed = [t for t in terms if len(set(t)) > 1]
    pick = np.random.default_rng(seed).choice(len(mixed), size=int(cap) - len(powers), replace=False)
    chosen = set(powers) | {mixed[i] for i in pick}
    return [t for t in terms if t in chosen], total


@dataclass(frozen=True)
class PropensityFit:
    """The propensity model behind U_p: its pMSE and the polynomial terms it used."""

    pmse: float
    """U_p = (1/N) sum_i (p_i - c)^2."""
    n_terms: int
    """Monomials in the model (before collinear ones are dropped)."""
    n_terms_total: int
    """Monomials of degree 1..degree there are; more than ``n_terms`` when the terms were sampled."""
    rank: int
    """Dimension of the fitted feature span (collinear directions dropped)."""
    n_iter: int
    """Newton steps taken."""

    @property
    def sampled(self) -> bool:
        """True when the interactions were a seeded sample (see :func:`propensity_terms`)."""
        return self.n_terms < self.n_terms_total


def propensity_fit(
    x: NDArray[np.float64],
    xm: NDArray[np.float64],
    *,
    degree: int = 3,
    ridge: float = 1e-6,
    max_iter: int = 100,
    max_terms: int | Literal["auto"] | None = "auto",
    seed: int = 0,
) -> PropensityFit:
    """Fit the logistic model of "is masked" behind U_p; see :func:`propensity_utility`.

    Features: the monomials of :func:`propensity_terms` of the columns standardised with the
    original mean and sd, centred and scaled, then an orthonormal basis of their span from a thin
    QR with column pivoting (directions with |R_jj| < 1e-9 |R_11| dropped as collinear), scaled so
    that Q'Q = N I. Newton's method on the penalised log-likelihood (ridge ``ridge * N`` on every
    coefficient but the intercept), the Hessian Q'WQ formed by one symmetric rank-N update (BLAS
    syrk) and the step length found exactly by a one-dimensional Newton search (the log-likelihood
    is concave along the step), which needs far fewer steps than halving on nearly separable
    data. Cost O(N F^2) per step.
    """
    if degree < 1:
        raise ParameterError(f"degree={degree} must be >= 1 (3 by default: cubic terms).")
    z = _standardized_like(x, np.vstack([x, xm]))
    big_n, p = z.shape
    terms, total = propensity_terms(p, big_n, degree=degree, max_terms=max_terms, seed=seed)
    feats = _monomial_matrix(z, terms)
    feats -= feats.mean(axis=0)
    fsd = feats.std(axis=0)
    feats = feats[:, fsd > 1e-12 * max(float(fsd.max(initial=0.0)), 1.0)]
    if feats.shape[1]:  # orthonormal basis of the feature span (collinear directions dropped)
        feats /= feats.std(axis=0)
        q, r_mat, _ = qr(feats, mode="economic", pivoting=True, overwrite_a=True, check_finite=False)
        diag = np.abs(np.diag(r_mat))
        q = q[:, : int((diag > 1e-9 * diag[0]).sum())]
    else:
        q = feats
    design = np.asfortranarray(np.column_stack([np.ones(big_n), q * np.sqrt(big_n)]))
    y = np.zeros(big_n)
    y[x.shape[0] :] = 1.0
    c = xm.shape[0] / big_n
    m = design.shape[1]
    beta = np.zeros(m)
    beta[0] = np.log(c / (1 - c))
    pen = np.full(m, ridge * big_n)
    pen[0] = 0.0
    eta = design @ beta
    n_iter = 0
    for n_iter in range(1, max_iter + 1):
        prob = expit(eta)
        grad = design.T @ (y - prob) - pen * beta
        if np.abs(grad).max() < 1e-10 * big_n:  # at the optimum (e.g. identical tables)
            n_iter -= 1
            break
        w = prob * (1 - prob)
        hess = dsyrk(1.0, design * np.sqrt(w)[:, None], trans=1, lower=0)
        hess[np.diag_indices(m)] += pen
        try:  # the ridge makes the Hessian positive definite; lstsq only if rounding says otherwise
            step = cho_solve(cho_factor(hess, lower=False, overwrite_a=True), grad)
        except np.linalg.LinAlgError:
            step = np.linalg.lstsq(np.triu(hess) + np.triu(hess, 1).T, grad, rcond=None)[0]
        d = design @ step
        t = _line_search(eta, d, y, float(pen @ (beta * step)), float(pen @ (step * step)))
        beta = beta + t * step
        eta = eta + t * d
        if np.abs(t * step).max() < 1e-9:
            break
    pmse = float(np.mean((expit(eta) - c) ** 2))
    return PropensityFit(pmse=pmse, n_terms=len(terms), n_terms_total=total, rank=m - 1, n_iter=n_iter)


def _line_search(
    eta: NDArray[np.float64], d: NDArray[np.float64], y: NDArray[np.float64], pen_bs: float, pen_ss: float
) -> float:
    """argmax over t >= 0 of the penalised log-likelihood along the Newton step.

    The function is concave in t and rising at 0, so its slope is bracketed ([0, hi] with the
    slope < 0 at hi, found by doubling from 1) and the root of the slope found by Newton steps
    kept inside the bracket, bisection otherwise.
    """

    def slope_curvature(t: float) -> tuple[float, float]:
        prob = expit(eta + t * d)
        return (
            float(d @ (y - prob)) - pen_bs - t * pen_ss,
            -float((d * d) @ (prob * (1 - prob))) - pen_ss,
        )

    lo, hi = 0.0, 1.0
    slope, curv = slope_curvature(hi)
    while slope > 0 and hi < 1e12:  # the optimum is beyond hi
        lo, hi = hi, 2 * hi
        slope, curv = slope_curvature(hi)
    if slope > 0:
        return hi
    t = hi
    for _ in range(60):
        if slope > 0:
            lo = t
        else:
            hi = t
        nxt = t - slope / curv if curv < 0 else 0.5 * (lo + hi)
        if not lo < nxt < hi:
            nxt = 0.5 * (lo + hi)
        if hi - lo < 1e-9 * max(1.0, hi) or abs(nxt - t) < 1e-12 * max(1.0, t):
            return nxt
        t = nxt
        slope, curv = slope_curvature(t)
    return t


def propensity_utility(
    x: NDArray[np.float64],
    xm: NDArray[np.float64],
    *,
    degree: int = 3,
    ridge: float = 1e-6,
    max_iter: int = 100,
    max_terms: int | Literal["auto"] | None = "auto",
    seed: int = 0,
) -> float:
    """U_p = (1/N) sum_i (p_i - c)^2, c = n_m / N: the pMSE of a logistic model of "is masked".

    The model has an intercept and every monomial of degree 1..``degree`` of the columns
    (standardised with the original mean and sd); with more monomials than ``max_terms``, every
    single-column power and a seeded sample of the interactions (:func:`propensity_terms`; the
    count used is in :func:`propensity_fit` and in :class:`UtilityTable`). The features are
    orthonormalised (thin QR, collinear ones dropped) and fitted by Newton's method with exact line
    search and a tiny ridge ``ridge`` for separable cases. Degree <= 2 has a blind spot [notes
    §4]: U_p = 0 exactly for any release matching the mean and covariance, hence the cubic
    default. In [0, c(1 - c)], 0 when the tables are indistinguishable. Cost O(N F^2) per Newton
    step with F terms: 55 for 5 columns, 559 for 13 at degree 3; ``"auto"`` keeps N F^2 <= 1e9.
    """
    return propensity_fit(
        x, xm, degree=degree, ridge=ridge, max_iter=max_iter, max_terms=max_terms, seed=seed
    ).pmse


def negative_share(x: NDArray[np.float64], xm: NDArray[np.float64]) -> float:
    """Share of masked cells below 0 in the columns whose original values are all >= 0 (0..1)."""
    use = (x >= 0).all(axis=0)
    if not use.any():
        return 0.0
    return float(np.mean(xm[:, use] < 0))


@dataclass(frozen=True)
class UtilityTable:
    """Every utility and risk measure of one release; ``to_dict()`` for JSON, ``rows()`` to print."""

    information_loss_pct: float
    """IL = 100 SSE/SST on original z-scores (percent; 0 = identical)."""
    il1s: float
    """Mean |x - x'| / (sqrt(2) sd) per cell (sd units)."""
    eigen_distance: float
    """sum |lambda - lambda'| / lambda, standardised covariance (unitless)."""
    mean_change: float
    """Relative change of the column means, ||m' - m||_1 / ||m||_1."""
    variance_change: float
    """Relative change of the variances."""
    covariance_change: float
    """Relative change of the covariances (upper triangle with the diagonal)."""
    correlation_change: float
    """Relative change of the correlations (upper triangle)."""
    skewness_change: float
    """Relative change of the skewness of each column."""
    kurtosis_change: float
    """Relative change of the (non-excess) kurtosis of each column."""
    regression_change: float
    """Relative change of the slopes of each column regressed on the others (standardised)."""
    ecdf_max: float
    """U_m, largest ECDF gap (0..1)."""
    ecdf_mean_square: float
    """U_s, mean squared ECDF gap (0..1)."""
    cluster: float
    """U_c, cluster utility (0 = ideal)."""
    propensity: float
    """U_p, pMSE of the logistic model (0 = indistinguishable)."""
    negative_share: float
    """Share of masked cells < 0 in columns that are >= 0 in the original (0..1)."""
    sdid_risk: float
    """SDID interval disclosure risk (0..1; 1 when unmasked)."""
    propensity_terms: int = 0
    """Polynomial terms in the propensity model of U_p (0 when U_p was not computed)."""
    propensity_terms_total: int = 0
    """Polynomial terms of degree 1..degree there are; more than ``propensity_terms`` when the
    interactions were sampled (see :func:`propensity_terms`)."""

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-ready dict (stable keys): the measures, then the two term counts."""
        return asdict(self)

    def rows(self) -> list[tuple[str, float]]:
        """(name, value) pairs of the measures in a fixed order (NaN: not computed)."""
        return [(f.name, float(getattr(self, f.name))) for f in fields(self) if f.name not in _COUNTS]

    def to_frame(self) -> pl.DataFrame:
        """The measures as a polars DataFrame with columns ``measure`` and ``value``."""
        names, values = zip(*self.rows(), strict=True)
        return pl.DataFrame({"measure": list(names), "value": list(values)})

    @property
    def propensity_note(self) -> str:
        """One line on the terms behind U_p: all of them, or how many were sampled."""
        if not self.propensity_terms:
            return "U_p not computed"
        if self.propensity_terms >= self.propensity_terms_total:
            return f"U_p: logistic model on all {self.propensity_terms:,} polynomial terms"
        return (
            f"U_p: logistic model on {self.propensity_terms:,} of the {self.propensity_terms_total:,} "
            "polynomial terms (every single-column power and a seeded sample of the interactions)"
        )


_COUNTS = ("propensity_terms", "propensity_terms_total")

Level = Literal["basic", "full"]
"""Which measures :func:`utility_table` computes: ``"full"`` (all), ``"basic"`` (all but the three
that fit a model or sample: U_m/U_s, U_c and U_p, which are NaN)."""


def utility_measures(
    x: NDArray[np.float64],
    xm: NDArray[np.float64],
    *,
    degree: int = 3,
    n_clusters: int | None = None,
    max_points: int | None = 2000,
    sdid_k: float = 0.05,
    seed: int = 0,
    max_terms: int | Literal["auto"] | None = "auto",
    level: Level = "full",
) -> UtilityTable:
    """All measures for row-aligned arrays ``x`` (original) and ``xm`` (masked), both (n, p).

    ``level="basic"`` leaves out (as NaN) the ECDF, cluster and propensity measures. BLAS runs on
    one thread here: these matrices are too small to gain from more, and on a busy machine
    spinning BLAS threads made the table ten times slower.
    """
    with threadpool_limits(limits=1, user_api="blas"):
        return _measures(x, xm, degree, n_clusters, max_points, sdid_k, seed, max_terms, level)


def _measures(
    x: NDArray[np.float64],
    xm: NDArray[np.float64],
    degree: int,
    n_clusters: int | None,
    max_points: int | None,
    sdid_k: float,
    seed: int,
    max_terms: int | Literal["auto"] | None,
    level: Level,
) -> UtilityTable:
    if level not in ("basic", "full"):
        raise ParameterError(f"level={level!r}: use 'basic' or 'full'.")
    if x.shape != xm.shape:
        raise ParameterError(
            f"original {x.shape} and masked {xm.shape} must have the same shape (rows correspond)."
        )
    z, zm = _standardized_like(x, x), _standardized_like(x, xm)
    cov, cov_m = np.atleast_2d(np.cov(x, rowvar=False)), np.atleast_2d(np.cov(xm, rowvar=False))
    with np.errstate(invalid="ignore", divide="ignore"):
        cor, cor_m = np.atleast_2d(np.corrcoef(x, rowvar=False)), np.atleast_2d(np.corrcoef(xm, rowvar=False))
    sk, ku = _moments3(x)
    sk_m, ku_m = _moments3(xm)
    nan = float("nan")
    if level == "full":
        u_m, u_s = ecdf_utility(x, xm, max_points=max_points, seed=seed)
        u_c = cluster_utility(x, xm, n_clusters=n_clusters, seed=seed)
        fit = propensity_fit(x, xm, degree=degree, max_terms=max_terms, seed=seed)
        u_p, n_terms, n_total = fit.pmse, fit.n_terms, fit.n_terms_total
    else:
        u_m = u_s = u_c = u_p = nan
        n_terms = n_total = 0
    return UtilityTable(
        information_loss_pct=information_loss(x, xm),
        il1s=il1s(x, xm),
        eigen_distance=eigen_distance(x, xm),
        mean_change=relative_change(x.mean(axis=0), xm.mean(axis=0)),
        variance_change=relative_change(np.diag(cov), np.diag(cov_m)),
        covariance_change=relative_change(_upper(cov, True), _upper(cov_m, True)),
        correlation_change=relative_change(_upper(cor, False), _upper(cor_m, False)),
        skewness_change=relative_change(sk, sk_m),
        kurtosis_change=relative_change(ku, ku_m),
        regression_change=relative_change(_regression_coefficients(z), _regression_coefficients(zm)),
        ecdf_max=u_m,
        ecdf_mean_square=u_s,
        cluster=u_c,
        propensity=u_p,
        negative_share=negative_share(x, xm),
        sdid_risk=interval_disclosure(x, xm, k=sdid_k),
        propensity_terms=n_terms,
        propensity_terms_total=n_total,
    )


def utility_table(
    original: DataSource,
    masked: DataSource,
    *,
    columns: Sequence[str] | None = None,
    degree: int = 3,
    n_clusters: int | None = None,
    max_points: int | None = 2000,
    sdid_k: float = 0.05,
    seed: int = 0,
    max_terms: int | Literal["auto"] | None = "auto",
    level: Level = "full",
) -> UtilityTable:
    """Every utility and risk measure of ``masked`` against ``original`` (rows correspond).

    Parameters
    ----------
    original, masked : tables (paths or frames) holding ``columns`` (default: all of original's).
    degree : polynomial degree of the propensity model (3: cubic terms, see the blind spot).
    n_clusters : clusters G for U_c (default max(2, min(50, N // 100))).
    max_points : evaluation points for the ECDF measures (None: all merged rows).
    sdid_k : half-width of the SDID interval, in original sd units.
    seed : seeds k-means, the ECDF evaluation sample and the sample of propensity terms.
    max_terms : most polynomial terms in the propensity model (``"auto"``: N F^2 <= 1e9, which
        keeps all 559 cubic terms of 13 columns on 1,080 + 1,080 rows; None: all terms). The
        table records how many were used (``propensity_terms`` of ``propensity_terms_total``).
    level : ``"full"`` (every measure) or ``"basic"`` (no ECDF, cluster or propensity measure).

    Examples
    --------
    >>> import polars as pl
    >>> df = pl.DataFrame({"x": [1.0, 2.0, 3.0, 4.0, 5.0, 6.0], "y": [2.0, 1.0, 4.0, 3.0, 6.0, 5.0]})
    >>> t = utility_table(df, df, n_clusters=2)
    >>> t.information_loss_pct, round(t.propensity, 12), t.sdid_risk, t.ecdf_max, t.cluster
    (0.0, 0.0, 1.0, 0.0, 0.0)
    """
    x, names = numeric_matrix(original, columns, min_rows=2)
    xm, _ = numeric_matrix(masked, list(names), min_rows=2)
    return utility_measures(
        x,
        xm,
        degree=degree,
        n_clusters=n_clusters,
        max_points=max_points,
        sdid_k=sdid_k,
        seed=seed,
        max_terms=max_terms,
        level=level,
    )
