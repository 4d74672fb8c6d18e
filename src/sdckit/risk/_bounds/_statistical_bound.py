"""A guaranteed bound on the statistical exposure of a fresh release, from a sample's marginals.

The statistical setting of the protocol (anonymity notes §5): the curator counts single-column
marginals of n_hat users drawn i.i.d. from a population law p, and the release will be a fresh
sample of n users from p. What is bounded is the statistical exposure (anonymity notes §3)

    Q^stat_n(k) = sum_v p_v P(Bin(n - 1, p_v) <= k - 2),

the expected share of users in groups smaller than k in the release, from the sample's
single-column counts only (no joint count is seen).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from sdckit._checks import UPPER_METHODS, BoundMethod, check_k, check_method
from sdckit.errors import ParameterError
from sdckit.risk._bounds._joint import _bound, _lower
from sdckit.risk._counts._marginals import Marginals

_GRID = 256  # sample thresholds tried: grid / 2 consecutive ones from 2D n_hat, then grid geometric ones
_ROUND_UP = 1.0 + 1e-12  # float sums: round the bound toward privacy


def check_delta(delta: float) -> float:
    """``delta`` as a float in (0, 1) or a :class:`ParameterError`."""
    if isinstance(delta, bool) or not isinstance(delta, (int, float)) or not 0 < delta < 1:
        raise ParameterError(
            f"delta={delta!r} must be a probability in (0, 1): the bound fails with probability at most "
            "delta, e.g. delta=0.05."
        )
    return float(delta)


def check_n_release(n_release: object) -> int:
    """``n_release`` as an int >= 1 or a :class:`ParameterError`."""
    if isinstance(n_release, bool) or not isinstance(n_release, (int, np.integer)) or n_release < 1:
        raise ParameterError(
            f"n_release={n_release!r} must be the number of users in the release (an integer >= 1)."
        )
    return int(n_release)


def dkw_radius(n_hat: int, delta: float, n_columns: int = 0, n_sets: int = 0) -> float:
    """D = sqrt(ln(2 / delta') / (2 n_hat)): the DKW–Massart radius (share of users, 0..1).

    delta' = delta / (2^n_columns - 1) with ``n_columns`` > 0: the union bound over every non-empty
    set of ``n_columns`` candidate columns (computed in logs, so no underflow); delta' = delta /
    ``n_sets`` with ``n_sets`` > 0 instead: the union bound over that many candidate releases (e.g.
    the nodes of a recoding lattice).
    """
    if n_sets > 0:
        log_sets = math.log(n_sets)
    else:
        log_sets = 0.0 if n_columns <= 0 else n_columns * math.log(2.0) + math.log1p(-(2.0**-n_columns))
    return math.sqrt((math.log(2.0 / delta) + log_sets) / (2.0 * n_hat))


def _statistical_bound(
    marginals: Marginals,
    *,
    k: int,
    n_release: int,
    method: str,
    delta: float,
    n_columns: int = 0,
    n_sets: int = 0,
    grid: int = _GRID,
) -> float:
    """The bound of :func:`statistical_exposure_bound` on all columns of ``marginals`` (checked args).

    ``n_columns`` > 0: the bound holds simultaneously for every set of that many candidate columns
    (:func:`dkw_radius`); the planner's choice among them is then covered. ``n_sets`` > 0: it holds
    simultaneously for that many candidate releases (the recoding lattice's nodes).
    """
    from scipy import stats  # lazy: start-up time

    if k <= 1:  # P(Bin(n - 1, p) <= -1) = 0: nobody is below k = 1
        return 0.0
    if n_release < k:  # fewer users than k: everyone is below k, whatever p
        return 1.0
    if not marginals.columns:  # one group holding every user: P(Bin(n - 1, 1) <= k - 2) = 0
        return 0.0
    n_hat = marginals.n
    d = dkw_radius(n_hat, delta, n_columns, n_sets)
    # Q^stat = F(1) + int_0^1 (-F'(t)) Q_p(t) dt, and Q_p(t) <= min(1, Q_hat(c(t)) + D) on the DKW
    # event, c(t) = floor((t + 2D) n_hat). Thresholds c_0 < c_1 < ... cut [0, 1] into pieces where
    # c(t) is in (c_{i-1}, c_i]; there Q_hat(c(t)) <= Q_hat(c_i) <= B(c_i) (Q_hat is non-decreasing).
    c0 = math.floor(2 * d * n_hat)
    if c0 >= n_hat:
        return 1.0
    dense = np.arange(c0, min(c0 + grid // 2, n_hat) + 1)
    sparse = np.geomspace(max(c0 + grid // 2, 1), n_hat, grid).round()
    c = np.unique(np.clip(np.concatenate([dense, sparse, [n_hat]]), c0, n_hat).astype(np.int64))
    edges = np.clip((np.concatenate([[c0 - 1], c]) + 1) / n_hat - 2 * d, 0.0, 1.0)
    edges[0], edges[-1] = 0.0, 1.0
    if len(marginals.columns) == 1:  # one column: the sample's exposure is known exactly
        b = _lower(marginals, c)
    else:
        b = np.asarray(_bound(marginals, c, method), dtype=np.float64)  # >= Q_hat at threshold c
    u = np.minimum(1.0, b + d)  # >= Q_p(t) on the piece ending at c_i
    u = np.minimum.accumulate(u[::-1])[::-1]  # Q_hat(c_i) <= Q_hat(c_j) <= B(c_j) for j >= i
    f = stats.binom.cdf(k - 2, n_release - 1, edges)  # F(t) = P(Bin(n - 1, t) <= k - 2), falls with t
    weights = np.maximum(f[:-1] - f[1:], 0.0)
    total = float(f[-1] + np.sum(u * weights))
    return float(min(1.0, total * _ROUND_UP))


def statistical_exposure_bound(
    marginals: Marginals,
    *,
    k: int,
    n_release: int,
    delta: float = 0.05,
    method: BoundMethod = "best",
    columns: Sequence[str] | None = None,
) -> float:
    """Upper bound, with probability >= 1 - delta, on the statistical exposure of a fresh release.

    The curator holds single-column counts of a sample of n_hat users drawn i.i.d. from a
    population law p; the release will be n = ``n_release`` fresh users from p. With
    D = sqrt(ln(2 / delta) / (2 n_hat)) and F(t) = P(Bin(n - 1, t) <= k - 2),

        Q^stat_n(k) <= F(1) + int_0^1 (-F'(t)) U(t) dt,     U(t) = min(1, B_J(t + 2D) + D),

    where B_J is the upper bound ``method`` of :func:`joint_exposure_bound` computed on the
    sample's marginals. Holds with probability >= 1 - delta over the draw of the sample.

    Parameters
    ----------
    marginals : the value counts of the curator's sample (n_hat = ``marginals.n`` users).
    k : group size (>= 1); bounds the expected share of released users in groups smaller than k.
    n_release : users in the fresh release (>= 1).
    delta : probability (0..1, exclusive) that the bound fails, over the draw of the sample.
    method : an upper bound on the sample's joint exposure: ``"best"`` (default), ``"theorem2"``,
        ``"theorem3"`` or ``"support"``.
    columns : a subset of the marginals' columns (default: all).

    Returns
    -------
    A share of users (0..1): an upper bound on Q^stat_n(k) of the joint law of ``columns``.

    Raises
    ------
    ParameterError : k < 1, n_release < 1, delta outside (0, 1), or ``method="lower"`` (a lower
        bound guarantees nothing).

    Warnings
    --------
    The guarantee is for one column set fixed before the counts are seen. A set chosen by looking at
    the counts (as :func:`plan_release` does) needs a union bound over the sets it could have chosen;
    ``plan_release(..., setting="statistical")`` applies it. The bound is on an expectation over the
    release: one release can have a larger share, and some users can be unique.

    Notes
    -----
    [derived; anonymity notes §3 and §2] Let F(t) = P(Bin(n - 1, t) <= k - 2), non-increasing and
    continuous in t.

    1. Layer cake. F(p_v) = F(1) + int_{p_v}^1 (-F'(t)) dt, so, summing p_v F(p_v) over the values
       (Fubini, everything >= 0), Q^stat_n(k) = F(1) + int_0^1 (-F'(t)) Q_p(t) dt, where
       Q_p(t) = sum_{p_v <= t} p_v is the population exposure. Any U(t) >= Q_p(t) for all t at once
       gives Q^stat_n(k) <= F(1) + int (-F') U. (Bounding U by 1 above some t0 gives the simpler
       split Q^stat <= U(t0) + (1 - U(t0)) F(t0); the integral is never larger.)
    2. DKW along the order of increasing p_v (a fixed order, so the Dvoretzky–Kiefer–Wolfowitz
       inequality with Massart's constant applies, to discrete laws too): with probability
       >= 1 - delta every prefix has |p_hat(prefix) - p(prefix)| <= D, hence every single value has
       |p_hat_v - p_v| <= 2D. The values with p_v <= t form a prefix A; each has p_hat_v <= t + 2D,
       so p_hat(A) <= Q_hat(t + 2D) and Q_p(t) = p(A) <= Q_hat(t + 2D) + D, for every t at once
       (anonymity notes §3, plug-in).
    3. Q_hat(s) is the exposure of the sample itself, which Theorems 2 and 3 bound from the sample's
       marginals: Q_hat(s) <= B_J(s) (anonymity notes §2). For a single column Q_hat(s) is read off
       its counts exactly, and that is used instead.

    Computation: Q_hat(t + 2D) depends on t only through c = floor((t + 2D) n_hat) and does not
    decrease with c, so on the piece of t where c lies in (c_{i-1}, c_i] it is at most
    B_J(c_i / n_hat); the integral becomes the finite sum F(1) + sum_i U_i (F(lo_i) - F(hi_i)). The
    c_i are 128 consecutive thresholds from 2D n_hat, then 256 geometric ones up to n_hat; a coarser
    grid only loosens the bound. The result is rounded up by a relative 1e-12. The exact integral is
    never above the protocol's first version, min over t of B_J(t + 2D) + D + F(t) (tested against it
    on its 64-point grid).

    The price of not seeing the joint law is D (0.0107 for n_hat = 16,000, delta = 0.05) plus the
    threshold shift 2D: B_J is evaluated at groups of up to (t + 2D) n_hat sample users, far above
    k. The bound is therefore informative only for column sets with few joint values; a
    k-anonymity-scale answer from marginals alone needs a larger n_hat (anonymity notes §3: at
    t ~ k / n << D the plug-in bracket is vacuous). Cost: one bound curve of ``method``.

    References
    ----------
    .. [1] Bravo-Hermsdorff, G. et al. (2022). Statistical anonymity: quantifying reidentification
       risks without reidentifying users. arXiv:2201.12306 [seed].
    .. [2] Massart, P. (1990). The tight constant in the Dvoretzky–Kiefer–Wolfowitz inequality.
       Ann. Probab. 18(3).

    Examples
    --------
    A sample of 16,280 users; sex alone pays only D = 0.0106, the pair also the threshold shift.

    >>> m = Marginals.from_counts({"sex": [10895, 5385], "race": [13908, 1562, 520, 155, 135]})
    >>> round(statistical_exposure_bound(m, k=5, n_release=10000, columns=["sex"]), 4)
    0.0106
    >>> round(statistical_exposure_bound(m, k=5, n_release=10000), 4)
    0.147
    """
    if method not in UPPER_METHODS:
        check_method(method)
        raise ParameterError(
            f"method={method!r} is a lower bound and guarantees nothing; bound with 'best', 'theorem2', "
            "'theorem3' or 'support'."
        )
    k_int = int(check_k(k))
    n_rel = check_n_release(n_release)
    dlt = check_delta(delta)
    marg = marginals if columns is None else marginals.select(tuple(columns))
    return _statistical_bound(marg, k=k_int, n_release=n_rel, method=method, delta=dlt)
