"""Numeric disclosure risk of a masked release: distance-based record linkage, sdcMicro's ``dRisk`` and ``dRiskRMD``.

The rows of the original and the masked table correspond (record i of the release is record i of
the input). Every measure here runs in O(n p) memory, never with an n x n distance matrix: record
linkage by a k-d tree (:class:`scipy.spatial.cKDTree`, searched within each record's own distance)
in few columns, and in many a sorted-neighbourhood scan (blocking on the first principal axis) with
the tree for the records the scan would walk long for, dRiskRMD's nearest other record by a k-d tree.

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

from sdckit._checks import group_size
from sdckit._scale._jit import njit
from sdckit.errors import InputError, ParameterError

__all__ = ["DRiskRMD", "RecordLinkage", "d_risk", "d_risk_rmd", "interval_disclosure", "record_linkage"]

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


@njit(cache=True)
def _scan_ranks(
    z: NDArray[np.float64], zm: NDArray[np.float64], order: NDArray[np.int64], k: int, rel_tol: float,
    max_steps: int = -1,
) -> tuple[NDArray[np.int64], NDArray[np.int64], NDArray[np.bool_]]:
    """For each released record: originals strictly nearer than its own, at most as near, and done.

    The originals are sorted by their first coordinate (``order``); from the released record's place
    in that order the scan walks left and right while the first coordinate alone is within the own
    distance (no farther original can be nearer), each distance summed column by column and abandoned
    once past the own distance. It stops once k originals are nearer (the record is not linked within
    k; both counts are then only "k or more"). With ``max_steps`` >= 0 a record whose walk would visit
    more originals is left undone (``done`` False, its counts meaningless) for another method.
    """
    n, p = z.shape
    first = np.empty(n)
    for r in range(n):
        first[r] = z[order[r], 0]
    nearer = np.zeros(n, dtype=np.int64)
    at_most = np.zeros(n, dtype=np.int64)
    done = np.ones(n, dtype=np.bool_)
    for i in range(n):
        own = 0.0
        for c in range(p):
            d = zm[i, c] - z[i, c]
            own += d * d
        tol = rel_tol * (1.0 + own)
        lo_bound = own - tol
        hi_bound = own + tol
        pos = np.searchsorted(first, zm[i, 0])
        less = 0
        le = 0
        right = pos
        left = pos - 1
        steps = 0
        while less < k:  # the two sides merged by increasing gap on the first axis
            if steps == max_steps:
                done[i] = False
                break
            steps += 1
            if right < n and (left < 0 or first[right] - zm[i, 0] <= zm[i, 0] - first[left]):
                r = right
                right += 1
            elif left >= 0:
                r = left
                left -= 1
            else:
                break
            g = first[r] - zm[i, 0]
            if g * g > hi_bound:
                break  # every original left is at least this far on the first axis alone
            j = order[r]
            d2 = 0.0
            for c in range(p):
                d = zm[i, c] - z[j, c]
                d2 += d * d
                if d2 > hi_bound:
                    break
            if d2 <= hi_bound:
                le += 1
                if d2 < lo_bound:
                    less += 1
        nearer[i] = less
        at_most[i] = max(le, less + 1)
    return nearer, at_most, done


KD_TREE_MAX_COLUMNS = 6
"""Up to this many columns a k-d tree alone counts the originals nearer than each record's own (a search
bounded by the own distance, :func:`_ranks_by_tree`); above it the sorted-neighbourhood scan
:func:`_scan_ranks` first, the tree for the records the scan leaves undone (:data:`SCAN_STEPS`)."""

TREE_BINS = 32
"""The released records are queried in this many groups of similar own distance, each group's search
bounded by its largest own distance (a k-d tree takes one bound per query call)."""


def _ranks_by_tree(
    z: NDArray[np.float64], zm: NDArray[np.float64], k: int, rows: NDArray[np.int64] | None = None
) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
    """The k + 1 nearest originals of each released record, searched only within its own distance.

    Only the originals at most as far as the record's own original count, so the search is bounded
    by the own distance (plus the tie tolerance): a well-masked record's search stops at its own
    original instead of walking out to the (k + 1)-th neighbour, which in 12 dimensions is most of the
    tree. scipy's bound is one number per call, so the records go in :data:`TREE_BINS` groups by own
    distance, each bounded by the group's largest. Every core (``workers=-1``). ``rows``: only these
    released records (their counts, in that order).
    """
    from scipy.spatial import cKDTree  # lazy: start-up time

    n = z.shape[0]
    tree = cKDTree(z)
    if rows is not None:
        z, zm = z[rows], zm[rows]
    own = np.sqrt(((zm - z) ** 2).sum(axis=1))
    tol = _RANK_TOL * (1.0 + own)
    kq = min(n, k + 1)
    dist = np.empty((own.size, kq))
    by_own = np.argsort(own, kind="stable")
    for part in np.array_split(by_own, max(1, min(TREE_BINS, own.size))):
        if part.size == 0:
            continue
        bound = float((own[part] + tol[part]).max()) * (1.0 + 1e-12) + 1e-300
        got, _ = tree.query(zm[part], k=kq, distance_upper_bound=bound, workers=-1)
        dist[part] = np.asarray(got).reshape(part.size, kq)  # beyond the bound: inf, counted in neither
    nearer = (dist < (own - tol)[:, None]).sum(axis=1).astype(np.int64)
    at_most = (dist <= (own + tol)[:, None]).sum(axis=1).astype(np.int64)
    # ties reaching past the k + 1 returned: count them in full (rare: duplicated records)
    redo = np.flatnonzero((nearer < k) & (at_most == kq) & (kq < n))
    if redo.size:
        at_most[redo] = np.asarray(tree.query_ball_point(zm[redo], r=own[redo] + tol[redo], return_length=True))
    return nearer, np.maximum(at_most, nearer + 1)


SCAN_STEPS = 256
"""``method="auto"``: a record whose sorted-neighbourhood walk visits more originals than this goes to
the bounded k-d tree instead (the walk is quick where k originals are nearer than the own one, as
after microaggregation; the tree where the own original is near, as after light noise)."""


def link_ranks(
    z: NDArray[np.float64], zm: NDArray[np.float64], k: int, *, method: Literal["auto", "tree", "scan"] = "auto"
) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
    """Per released record i: (#originals strictly nearer than its own, #originals at most as near).

    Exact while the first count is below k (then the record may be linked within k); otherwise both
    only say "k or more". ``method="tree"``: a k-d tree searched within each record's own distance
    (:func:`_ranks_by_tree`, O(n k) memory); ``"scan"``: both tables rotated to the original's
    principal axes (distances unchanged) and scanned in the order of the first axis (O(n p)
    memory); ``"auto"``: the tree up to :data:`KD_TREE_MAX_COLUMNS` columns, else the scan for every record whose walk
    ends within :data:`SCAN_STEPS` originals and the tree for the rest. Never an n x n matrix.
    """
    k = int(k)
    if method == "tree" or (method == "auto" and z.shape[1] <= KD_TREE_MAX_COLUMNS):
        return _ranks_by_tree(z, zm, k)
    s = np.atleast_2d(np.cov(z, rowvar=False))
    _, v = np.linalg.eigh((s + s.T) / 2)
    rot = v[:, ::-1]
    zr = np.ascontiguousarray(z @ rot)
    zmr = np.ascontiguousarray(zm @ rot)
    order = np.argsort(zr[:, 0], kind="stable").astype(np.int64)
    nearer, at_most, done = _scan_ranks(zr, zmr, order, k, _RANK_TOL, -1 if method == "scan" else SCAN_STEPS)
    rest = np.flatnonzero(~done)
    if rest.size:
        nearer[rest], at_most[rest] = _ranks_by_tree(zr, zmr, k, rows=rest)
    return nearer, at_most


def record_linkage(x: ArrayLike, xm: ArrayLike, *, k: int = 5, metric: Metric = "euclidean") -> RecordLinkage:
    """Distance-based record linkage: how many released records an intruder holding the originals links back.

    Each released record ``x'_i`` is compared with every original record ``x_j`` on columns
    standardised by the original mean and sd (``metric="euclidean"``) or by the original covariance
    (``"mahalanobis"``, ``d^2 = (a - b)^T S^+ (a - b)``). With ``l_i`` the originals strictly nearer
    to ``x'_i`` than ``x_i`` and ``e_i`` those at most as near (``x_i`` included), a random tie-break
    puts ``x_i`` at a uniform rank in ``l_i + 1 .. e_i``, so

        share_nearest  = (1/n) sum_i [l_i = 0] / (e_i - l_i)
        share_within_k = (1/n) sum_i clip((k - l_i) / (e_i - l_i), 0, 1)

    [lit: Domingo-Ferrer & Torra 2001, distance-based record linkage]. Counts from a k-d tree in few
    columns, from a sorted-neighbourhood scan and the tree in many (:func:`link_ranks`): never an n x n
    matrix (10^5 records x 12 columns in about 4 CPU-s: ``benchmarks/risk_record_linkage.py``).

    Examples
    --------
    >>> import numpy as np
    >>> x = np.random.default_rng(0).normal(size=(500, 3))
    >>> record_linkage(x, x).share_nearest
    1.0
    """
    a, b = _pair(x, xm, "record_linkage")
    k = group_size(k)
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


def _c_steps(z: NDArray[np.float64], subset: NDArray[np.int64], h: int, steps: int) -> tuple[NDArray[np.int64], float]:
    """Concentration steps of FastMCD (Rousseeuw & Van Driessen 1999): keep the h records nearest in the
    subset's Mahalanobis distance; the covariance determinant never increases. (subset, log det)."""
    logdet = math.inf
    for _ in range(steps):
        sub = z[subset]
        centre = sub.mean(axis=0)
        cov = np.cov(sub, rowvar=False, ddof=1)
        sign, new = np.linalg.slogdet(cov)
        if sign <= 0:
            return subset, -math.inf  # an exact fit: h records on a hyperplane
        diff = z - centre
        d2 = np.einsum("ij,ij->i", diff @ np.linalg.inv(cov), diff)
        nxt = np.sort(np.argpartition(d2, h - 1)[:h])
        if new >= logdet - 1e-12 and np.array_equal(nxt, subset):
            return subset, new
        subset, logdet = nxt, new
    return subset, logdet


def mcd_subset(z: NDArray[np.float64], h: int, *, starts: int = 100, random_state: int = 0) -> NDArray[np.int64]:
    """The h-subset of the minimum covariance determinant, by FastMCD: ``starts`` random (p + 1)-subsets
    (on at most 1,500 records) get two C-steps, the 10 best two more on all records, and the best of
    those is iterated to convergence."""
    n, p = z.shape
    rng = np.random.default_rng(random_state)
    pool = z if n <= 1500 else z[np.sort(rng.choice(n, 1500, replace=False))]
    hp = max(p + 1, round(h * pool.shape[0] / n))
    tried: list[tuple[float, NDArray[np.int64]]] = []
    for _ in range(starts):
        start = rng.choice(pool.shape[0], p + 1, replace=False)
        sub = pool[start]
        cov = np.cov(sub, rowvar=False, ddof=1)
        if np.linalg.matrix_rank(cov) < p:
            continue
        diff = pool - sub.mean(axis=0)
        d2 = np.einsum("ij,ij->i", diff @ np.linalg.inv(cov), diff)
        subset, logdet = _c_steps(pool, np.sort(np.argpartition(d2, hp - 1)[:hp]), hp, 2)
        tried.append((logdet, subset))
    if not tried:
        raise np.linalg.LinAlgError("every random start is singular")
    best: tuple[float, NDArray[np.int64]] | None = None
    for _, subset in sorted(tried, key=lambda t: t[0])[:10]:
        sub = pool[subset]
        diff = z - sub.mean(axis=0)
        d2 = np.einsum("ij,ij->i", diff @ np.linalg.inv(np.cov(sub, rowvar=False, ddof=1)), diff)
        full, logdet = _c_steps(z, np.sort(np.argpartition(d2, h - 1)[:h]), h, 2)
        if best is None or logdet < best[0]:
            best = (logdet, full)
    assert best is not None
    return _c_steps(z, best[1], h, 100)[0]  # the best of the ten, to convergence


def mcd_covariance(z: NDArray[np.float64], *, random_state: int = 0) -> NDArray[np.float64]:
    """Reweighted MCD covariance with robustbase's consistency factors (no small-sample factors).

    h = floor((n + p + 1) / 2) (robustbase's default alpha = 1/2), the h-subset by FastMCD
    (:func:`mcd_subset`); then as robustbase ``covMcd``: raw covariance = cov(h-subset) * c(h/n),
    weights = [d^2 < chi2_p(0.975)], covariance = cov(weighted) * c(w/n), with
    ``c(a) = a / F_{chi2, p+2}(chi2_p^{-1}(a))``. O(n p^2) per step, no n x n matrix.
    """
    from scipy.stats import chi2  # lazy: start-up time

    n, p = z.shape

    def cons(a: float) -> float:
        return a / float(chi2.cdf(chi2.ppf(a, p), p + 2))

    h = (n + p + 1) // 2
    sub = z[mcd_subset(z, h, random_state=random_state)]
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
    its own FastMCD subset, so it can differ slightly from sdcMicro's. The nearest other
    masked record comes from a k-d tree (sdcMicro builds the n x n distance matrix).
    """
    from scipy.spatial import cKDTree  # lazy: start-up time

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


def sample_sd(x: NDArray[np.float64]) -> NDArray[np.float64]:
    """Column sample sds (ddof=1) of the original; zeros for a single row."""
    return x.std(axis=0, ddof=1) if x.shape[0] > 1 else np.zeros(x.shape[1])


def interval_disclosure(x: NDArray[np.float64], xm: NDArray[np.float64], *, k: float = 0.05) -> float:
    """SDID risk: share of records whose every original value lies in ``x'_ij +- k sd_j`` (0..1).

    ``sd_j`` is the original sample sd (ddof=1) [notes §4]. Rows must correspond. 1 for an
    unmasked release (every record is disclosed), lower is safer. This is sdckit's own figure, not
    sdcMicro's ``dRisk``: that one uses the *masked* sd (:func:`sdckit.risk.d_risk`).
    """
    sd = sample_sd(x)
    inside = np.abs(x - xm) <= k * sd
    return float(np.mean(inside.all(axis=1)))
