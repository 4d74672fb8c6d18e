"""Numeric disclosure risk of a masked release: distance-based record linkage, sdcMicro's ``dRisk`` and ``dRiskRMD``.

The rows of the original and the masked table correspond (record i of the release is record i of
the input). Every measure here runs in O(n p) memory: nearest neighbours come from a k-d tree
(:class:`scipy.spatial.cKDTree`), never from an n x n distance matrix.

* :func:`record_linkage` (distance-based record linkage, Domingo-Ferrer & Torra 2001): an intruder
  who holds the original records links each released record to its nearest original record; the
  share of released records whose own original is the nearest, and is among the k nearest.
* :func:`d_risk`: sdcMicro 5.8.1 ``dRisk(x, xm, k)``, the share of records whose every original
  value lies in ``[x'_ij - k sd'_j, x'_ij + k sd'_j]``, sd' the *masked* column's sd.
* :func:`d_risk_rmd`: sdcMicro 5.8.1 ``dRiskRMD(x, xm, k, k2)``, intervals scaled by each
  record's robust Mahalanobis distance, and a record counted in ``risk2`` only when no other
  masked record lies within ``k2`` of its masked record.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any, Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy.spatial import cKDTree
from scipy.stats import chi2

from sdckit.errors import InputError, ParameterError

__all__ = ["DRiskRMD", "RecordLinkage", "d_risk", "d_risk_rmd", "record_linkage"]

Metric = Literal["euclidean", "mahalanobis"]
_RANK_TOL = 1e-9


def _pair(x: ArrayLike, xm: ArrayLike, name: str) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    a = np.asarray(x, dtype=np.float64)
    b = np.asarray(xm, dtype=np.float64)
    a = a.reshape(-1, 1) if a.ndim == 1 else a
    b = b.reshape(-1, 1) if b.ndim == 1 else b
    if a.ndim != 2 or a.shape != b.shape:
        raise InputError(
            f"{name}: the original {a.shape} and the masked table {b.shape} must have the same rows and "
            "columns, row i of one being record i of the other."
        )
    if a.shape[0] < 2:
        raise InputError(f"{name}: needs at least 2 records, got {a.shape[0]}.")
    return a, b


@dataclass(frozen=True)
class RecordLinkage:
    """Distance-based record linkage of a release (shares of released records, 0..1)."""

    n: int
    """Records linked."""
    k: int
    """The k of ``share_within_k``."""
    metric: str
    """``euclidean`` on columns standardised by the original mean and sd, or ``mahalanobis``."""
    share_nearest: float
    """Share of released records whose nearest original record is their own (ties broken at random,
    in expectation: a tie of m records at the smallest distance counts 1/m)."""
    share_within_k: float
    """Share of released records whose own original is among the k nearest (ties likewise)."""

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-ready dict."""
        return asdict(self)


def _linkage_coordinates(
    x: NDArray[np.float64], xm: NDArray[np.float64], metric: Metric
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    mean = x.mean(axis=0)
    sd = x.std(axis=0, ddof=1)
    sd = np.where(sd > 0, sd, 1.0)
    z, zm = (x - mean) / sd, (xm - mean) / sd
    if metric == "euclidean":
        return z, zm
    s = np.atleast_2d(np.cov(z, rowvar=False, ddof=1))
    w, v = np.linalg.eigh((s + s.T) / 2)
    keep = w > _RANK_TOL * max(float(w.max()), 0.0)
    whiten = v[:, keep] / np.sqrt(w[keep])  # S^{+1/2} in the eigenbasis: |(a - b) whiten| is the Mahalanobis distance
    return z @ whiten, zm @ whiten


def link_ranks(
    z: NDArray[np.float64], zm: NDArray[np.float64], k: int
) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
    """Per released record i: (#originals strictly nearer than its own, #originals at most as near).

    Exact for the counts below k; ``at_most`` may stop at k + 1 when more originals are farther
    (it is then only used to say "not within k"). A k-d tree of the originals, O(n k) memory.
    """
    n = z.shape[0]
    own = np.sqrt(((zm - z) ** 2).sum(axis=1))
    tol = _RANK_TOL * (1.0 + own)
    tree = cKDTree(z)
    kq = min(n, k + 1)
    dist, _ = tree.query(zm, k=kq)
    dist = dist.reshape(n, kq)
    nearer = (dist < (own - tol)[:, None]).sum(axis=1).astype(np.int64)
    at_most = (dist <= (own + tol)[:, None]).sum(axis=1).astype(np.int64)
    # ties reaching past the k + 1 returned: count them in full (rare: duplicated records)
    redo = np.flatnonzero((nearer < k) & (at_most == kq) & (kq < n))
    if redo.size:
        at_most[redo] = np.asarray(tree.query_ball_point(zm[redo], r=own[redo] + tol[redo], return_length=True))
    return nearer, np.maximum(at_most, nearer + 1)


def record_linkage(x: ArrayLike, xm: ArrayLike, *, k: int = 5, metric: Metric = "euclidean") -> RecordLinkage:
    """Distance-based record linkage: how many released records an intruder holding the originals links back.

    Each released record ``x'_i`` is compared with every original record ``x_j`` on columns
    standardised by the original mean and sd (``metric="euclidean"``) or by the original covariance
    (``"mahalanobis"``, ``d^2 = (a - b)^T S^+ (a - b)``). With ``l_i`` the originals strictly nearer
    to ``x'_i`` than ``x_i`` and ``e_i`` those at most as near (``x_i`` included), a random tie-break
    puts ``x_i`` at a uniform rank in ``l_i + 1 .. e_i``, so

        share_nearest  = (1/n) sum_i [l_i = 0] / (e_i - l_i)
        share_within_k = (1/n) sum_i clip((k - l_i) / (e_i - l_i), 0, 1)

    [lit: Domingo-Ferrer & Torra 2001, distance-based record linkage]. Nearest neighbours from a k-d
    tree: O(n k) memory, about O(n log n) time in few dimensions.

    Examples
    --------
    >>> import numpy as np
    >>> x = np.random.default_rng(0).normal(size=(500, 3))
    >>> record_linkage(x, x).share_nearest
    1.0
    """
    a, b = _pair(x, xm, "record_linkage")
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1:
        raise ParameterError(f"record_linkage: k={k!r} must be a whole number >= 1, e.g. k=5.")
    if metric not in ("euclidean", "mahalanobis"):
        raise ParameterError(f"record_linkage: metric={metric!r}: use 'euclidean' or 'mahalanobis'.")
    if np.isnan(a).any() or np.isnan(b).any():
        raise InputError("record_linkage: missing values (NaN); drop or impute those records first.")
    z, zm = _linkage_coordinates(a, b, metric)
    nearer, at_most = link_ranks(z, zm, int(k))
    ties = (at_most - nearer).astype(np.float64)
    nearest = np.where(nearer == 0, 1.0 / ties, 0.0)
    within = np.clip((int(k) - nearer) / ties, 0.0, 1.0)
    return RecordLinkage(
        n=int(a.shape[0]), k=int(k), metric=metric,
        share_nearest=float(nearest.mean()), share_within_k=float(within.mean()),
    )


def d_risk(x: ArrayLike, xm: ArrayLike, *, k: float = 0.05) -> float:
    """sdcMicro's ``dRisk``: share of records whose every original value lies in ``x'_ij +- k sd'_j``.

    ``sd'_j`` is the sample sd (ddof=1) of the *masked* column j, NaN left out; a comparison with a
    missing value counts as inside (sdcMicro 5.8.1 ``dRiskWORK``: ``rowSums(x < xm - k sd | x >
    xm + k sd, na.rm = TRUE) == 0``). 1 for an unmasked release; lower is safer. This differs from
    :func:`sdckit.microagg.interval_disclosure`, whose interval uses the *original* sd.
    """
    a, b = _pair(x, xm, "d_risk")
    if not (isinstance(k, (int, float)) and not isinstance(k, bool) and k >= 0):
        raise ParameterError(f"d_risk: k={k!r} must be a number >= 0 (a share of the sd, e.g. 0.05).")
    sd = np.nanstd(b, axis=0, ddof=1)
    with np.errstate(invalid="ignore"):
        outside = (a < b - k * sd) | (a > b + k * sd)
    return float(np.mean(outside.sum(axis=1) == 0))


@dataclass(frozen=True)
class DRiskRMD:
    """sdcMicro's ``dRiskRMD`` figures (shares of records, 0..1; the weighted ones as sdcMicro defines them)."""

    risk1: float
    """Share of records with some masked value within ``k RMD_i`` of the original (standardised units)."""
    risk2: float
    """Share of those records whose masked record has no other masked record within ``k2``."""
    wrisk1: float
    """sdcMicro's ``wrisk1 = |W1| * sum_{i in W1} RMD_i / n``."""
    wrisk2: float
    """sdcMicro's ``wrisk2 = |W2| * sum_{i in W2} RMD_i / n``."""
    k: float
    k2: float

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-ready dict."""
        return asdict(self)


def mcd_covariance(z: NDArray[np.float64], *, random_state: int = 0) -> NDArray[np.float64]:
    """Reweighted MCD covariance with robustbase's consistency factors (no small-sample factors).

    The h-subset (h = floor((n + p + 1) / 2), robustbase's default alpha = 1/2) comes from
    scikit-learn's FastMCD (:class:`sklearn.covariance.MinCovDet`); then as robustbase
    ``covMcd``: raw covariance = cov(h-subset) * c(h/n), weights = [d^2 < chi2_p(0.975)], covariance
    = cov(weighted) * c(w/n), with ``c(a) = a / F_{chi2, p+2}(chi2_p^{-1}(a))``.
    """
    from sklearn.covariance import MinCovDet

    n, p = z.shape

    def cons(a: float) -> float:
        return a / float(chi2.cdf(chi2.ppf(a, p), p + 2))

    mcd = MinCovDet(random_state=random_state, support_fraction=math.floor((n + p + 1) / 2) / n).fit(z)
    sub = z[mcd.raw_support_]
    raw_centre = sub.mean(axis=0)
    raw_cov = np.cov(sub, rowvar=False, ddof=1) * cons(sub.shape[0] / n)
    diff = z - raw_centre
    d2 = np.einsum("ij,ij->i", diff @ np.linalg.pinv(raw_cov), diff)
    keep = d2 < chi2.ppf(0.975, p)
    return np.asarray(np.cov(z[keep], rowvar=False, ddof=1) * cons(int(keep.sum()) / n))


def d_risk_rmd(
    x: ArrayLike,
    xm: ArrayLike,
    *,
    k: float = 0.01,
    k2: float = 0.05,
    covariance: ArrayLike | None = None,
    random_state: int = 0,
) -> DRiskRMD:
    """sdcMicro's ``dRiskRMD``: interval disclosure scaled by each record's robust Mahalanobis distance.

    As sdcMicro 5.8.1 ``dRiskRMDWORK``: x and x' are each standardised by their own mean and sd;
    ``RMD_i = 0.05 sqrt((z_i - zbar)^T C^{-1} (z_i - zbar))`` with C the robust (MCD) covariance
    of z; W1 = records with *some* column j where ``z'_ij`` lies strictly inside
    ``z_ij +- k RMD_i``; W2 = records of W1 whose masked record is farther than ``k2`` from every
    other masked record (standardised units). ``risk1 = |W1| / n``, ``risk2 = |W2| / n``.

    ``covariance`` gives C (e.g. robustbase's ``covMcd(scale(x))$cov``); by default
    :func:`mcd_covariance`, which follows robustbase without its small-sample factors and with
    scikit-learn's FastMCD subset, so it can differ slightly from sdcMicro's. The nearest other
    masked record comes from a k-d tree (sdcMicro builds the n x n distance matrix).
    """
    a, b = _pair(x, xm, "d_risk_rmd")
    if np.isnan(a).any() or np.isnan(b).any():
        raise InputError("d_risk_rmd: missing values (NaN); drop or impute those records first.")
    n = a.shape[0]

    def scale(m: NDArray[np.float64]) -> NDArray[np.float64]:
        sd = m.std(axis=0, ddof=1)
        return (m - m.mean(axis=0)) / np.where(sd > 0, sd, 1.0)

    z, zm = scale(a), scale(b)
    cov = mcd_covariance(z, random_state=random_state) if covariance is None else np.asarray(covariance, dtype=np.float64)
    diff = z - z.mean(axis=0)
    rmd = np.sqrt(np.einsum("ij,ij->i", diff @ np.linalg.inv(cov), diff)) * 0.05
    lo, hi = z - k * rmd[:, None], z + k * rmd[:, None]
    w1 = ((zm > lo) & (zm < hi)).any(axis=1)
    idx = np.flatnonzero(w1)
    w2 = np.zeros(n, dtype=bool)
    if idx.size:
        dist, _ = cKDTree(zm).query(zm[idx], k=2)
        w2[idx] = dist[:, 1] > k2
    return DRiskRMD(
        risk1=float(w1.sum() / n),
        risk2=float(w2.sum() / n),
        wrisk1=float(w1.sum() * rmd[w1].sum() / n),
        wrisk2=float(w2.sum() * rmd[w2].sum() / n),
        k=float(k),
        k2=float(k2),
    )
