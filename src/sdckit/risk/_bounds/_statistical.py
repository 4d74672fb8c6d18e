"""Statistical exposure: the expected share not k-anonymous in a fresh release (anonymity notes §3).

When the curator's sample and the released table are different users drawn from the same
distribution p, the exposure of the release is random; its expectation

    Q^stat_n(k) = sum_v p_v P(Bin(n - 1, p_v) <= k - 2)

is smooth in p and can be estimated from the curator's sample, unlike the exposure itself.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from sdckit._checks import IntervalMethod, check_k
from sdckit._io import DataSource
from sdckit.errors import EmptyTableError, InputError, ParameterError
from sdckit.risk._measures._exposure import exposure_curve

_INTERVALS = ("auto", "jackknife", "mcdiarmid")


def _check_n(n: int, name: str = "n") -> int:
    if isinstance(n, bool) or int(n) != n or n < 1:
        raise ParameterError(f"{name}={n!r} must be a number of users >= 1.")
    return int(n)


def statistical_exposure(p: ArrayLike, *, n: int, k: int) -> float:
    """Q^stat_n(k) = sum_v p_v P(Bin(n - 1, p_v) <= k - 2) for a known distribution p.

    The expected share of users not k-anonymous in a release of n users drawn i.i.d. from p
    [seed + derived; anonymity notes §3]: a user with value v is in a group smaller than k when at
    most k - 2 of the other n - 1 users share v.

    Parameters
    ----------
    p : probabilities of the values (>= 0, summing to 1 within 1e-9).
    n : users in the release (>= 1).
    k : group size (>= 1).

    Returns
    -------
    A share of users (0..1).

    Examples
    --------
    >>> round(statistical_exposure([0.05] * 20, n=100, k=5), 12)   # P(Bin(99, 1/20) <= 3)
    0.264964364779
    """
    from scipy import stats  # lazy: start-up time

    probs = np.asarray(p, dtype=np.float64).ravel()
    if probs.size == 0 or np.any(~np.isfinite(probs)) or np.any(probs < 0):
        raise ParameterError("p must be a non-empty array of probabilities >= 0.")
    if abs(probs.sum() - 1.0) > 1e-9:
        raise ParameterError(f"p sums to {probs.sum():.12g}, not 1; pass probabilities (counts / total).")
    n_i, k_i = _check_n(n), int(check_k(k))
    return float(np.sum(probs * stats.binom.cdf(k_i - 2, n_i - 1, probs)))


def _hyper_terms(counts: NDArray[np.int64], n_hat: int, n: int, k: int) -> NDArray[np.float64]:
    """h(c) = (c / n_hat) P(Hypergeom(N = n_hat - 1, K = c - 1, draws = n - 1) <= k - 2), per count."""
    from scipy import stats  # lazy: start-up time

    uniq, inv = np.unique(counts, return_inverse=True)
    vals = np.zeros(uniq.size)
    pos = uniq > 0
    if k < 2:  # P(... <= -1) = 0: with k = 1 nobody is below k
        return np.zeros(counts.shape)
    # with n = 1 no other user is drawn: the count of others is 0 <= k - 2 (scipy gives NaN for M = 0)
    cdf = np.ones(int(pos.sum())) if n == 1 else stats.hypergeom.cdf(k - 2, n_hat - 1, uniq[pos] - 1, n - 1)
    vals[pos] = uniq[pos] / n_hat * cdf
    return np.asarray(vals[inv].reshape(counts.shape), dtype=np.float64)


def _binom_terms(counts: NDArray[np.int64], n_hat: int, n: int, k: int) -> NDArray[np.float64]:
    """Plug-in (c / n_hat) P(Bin(n - 1, c / n_hat) <= k - 2), per count."""
    from scipy import stats  # lazy: start-up time

    uniq, inv = np.unique(counts, return_inverse=True)
    p = uniq / n_hat
    vals = p * stats.binom.cdf(k - 2, n - 1, p)
    return np.asarray(vals[inv].reshape(counts.shape), dtype=np.float64)


@dataclass(frozen=True, kw_only=True)
class StatisticalExposure:
    """An estimate of the statistical exposure Q^stat_n(k), with a confidence interval when one is valid."""

    estimate: float
    """Estimated share of users (0..1) not k-anonymous in a fresh release of n users."""
    lower: float
    """Lower end of the interval (share of users); NaN when no valid interval exists (``interval == "none"``)."""
    upper: float
    """Upper end of the interval (share of users); NaN when no valid interval exists."""
    estimator: str
    """``"unbiased"`` (hypergeometric U-statistic, n_hat >= n) or ``"plug-in"`` (n_hat < n, biased)."""
    interval: str
    """``"jackknife"`` (estimate +- z sqrt(V_ES), Efron-Stein jackknife variance; approximate),
    ``"mcdiarmid"`` (distribution-free, radius (2k - 1) sqrt(ln(2/delta) / (2 n_hat))) or ``"none"``
    (the plug-in regime: no interval can be valid, see ``note``)."""
    n: int
    """Users in the release."""
    n_sample: int
    """Users in the curator's sample (n_hat)."""
    k: int
    """Group size."""
    delta: float
    """The interval holds with probability >= 1 - delta (jackknife: approximately, checked by simulation)."""
    mcdiarmid_radius: float
    """(2k - 1) sqrt(ln(2/delta) / (2 n_hat)), for comparison (NaN for the plug-in)."""
    std_error: float
    """sqrt(V_ES), the Efron-Stein jackknife standard error of the estimate (NaN when n_hat <= n)."""
    note: str
    """Why the interval is what it is (empty when nothing needs saying)."""

    @property
    def has_interval(self) -> bool:
        """True when ``lower``/``upper`` hold a valid interval."""
        return self.interval != "none"

    def to_dict(self) -> dict[str, Any]:
        """JSON form (shares of users; NaN ends of a missing interval become None)."""
        out = {f: getattr(self, f) for f in self.__dataclass_fields__}
        for f in ("lower", "upper", "mcdiarmid_radius", "std_error"):
            if math.isnan(out[f]):
                out[f] = None
        out["has_interval"] = self.has_interval
        return out

    def __str__(self) -> str:
        head = (
            f"Q^stat_{self.n}(k={self.k}) ~ {self.estimate:.4f} ({self.estimator}, n_hat={self.n_sample:,})"
        )
        if not self.has_interval:
            return f"{head}; no valid interval: {self.note}"
        level = f"{100 * (1 - self.delta):g}%"
        tail = f"; {self.note}" if self.note else ""
        return f"{head}, {level} {self.interval} interval [{self.lower:.4f}, {self.upper:.4f}]{tail}"


def _counts_of(
    sample: DataSource | ArrayLike | Mapping[Any, int], columns: Sequence[str] | str | None
) -> NDArray[np.int64]:
    if isinstance(sample, Mapping) and columns is None:
        arr = np.asarray(list(sample.values()), dtype=np.float64)
    elif isinstance(sample, (list, tuple, np.ndarray)):
        arr = np.asarray(sample, dtype=np.float64)
    else:
        if columns is None:
            raise InputError("give the columns whose joint values are counted, e.g. columns=['sex', 'race'].")

        curve = exposure_curve(sample, columns)
        return np.repeat(curve.sizes, curve.n_groups_of_size)
    if arr.ndim != 1 or np.any(~np.isfinite(arr)) or np.any(arr < 0) or np.any(arr != np.floor(arr)):
        raise InputError("counts must be a flat list of whole numbers >= 0 (users holding each value).")
    out = arr.astype(np.int64)
    return out[out > 0]


def _jackknife_variance(counts: NDArray[np.int64], n_hat: int, n: int, k: int) -> float:
    """Efron-Stein jackknife variance V_ES = sum_i (S_(i) - S_(.))^2 of the U-statistic (n_hat > n).

    Leaving out one user of value v turns c_v into c_v - 1 and n_hat into n_hat - 1, so the n_hat
    leave-one-out estimates take one value per occupied atom,
    S_(v) = T - h'(c_v) + h'(c_v - 1) with h' the terms at n_hat - 1 and T = sum_w h'(c_w):
    O(atoms), never O(n_hat^2). With one occupied atom every S_(i) is the same: V_ES = 0.
    """
    if counts.size == 1:
        return 0.0
    h_c = _hyper_terms(counts, n_hat - 1, n, k)
    s_v = h_c.sum() - h_c + _hyper_terms(counts - 1, n_hat - 1, n, k)
    mean = float(np.dot(counts, s_v)) / n_hat
    return float(np.dot(counts, (s_v - mean) ** 2))


JACKKNIFE_MIN_SAMPLE = 300
"""Smallest sample (users) for which the default jackknife interval is given. Below it the normal
approximation fails when the exposure is near 1 (simulated coverage at nominal 0.90: 0.33 at
n_hat = 30, 0.72 at 200, 0.92 at 300; tests/risk/test_statistical_coverage.py), so the McDiarmid
interval is given instead."""


RARE_USERS = 20
"""Below this many sampled users carrying the estimate (n_hat S_hat), the default interval's upper
end is at least the exact binomial limit on their share (see :func:`estimate_statistical_exposure`):
the jackknife's normal approximation fails there (unsafe-side misses of 14-16 % at a nominal 2.5 %
with a rare tail of 3 expected users)."""

RARE_USERS_OUTSIDE = 50
"""Below this many sampled users in groups of weight < 1 (exposure near 1), the default interval's
lower end is at most 1 minus the exact binomial upper limit on their share (the jackknife covered
30 % there with 3 such users, 87 % with 10, 90 % with 30 at a nominal 95 %)."""


def _clopper_pearson_upper(count: float, n_hat: int, delta: float) -> float:
    """The exact (Clopper-Pearson) one-sided 1 - delta/2 upper limit on a binomial share, for
    ``count`` successes out of n_hat rounded up to a whole number (toward the wider limit)."""
    from scipy import stats  # lazy: start-up time

    x = min(math.ceil(count - 1e-9 * max(1.0, count)), n_hat)
    if x >= n_hat:
        return 1.0
    return float(stats.beta.ppf(1 - delta / 2, x + 1, n_hat - x))


def estimate_statistical_exposure(
    sample: DataSource | ArrayLike | Mapping[Any, int],
    columns: Sequence[str] | str | None = None,
    *,
    n: int,
    k: int,
    delta: float = 0.05,
    interval: IntervalMethod = "auto",
) -> StatisticalExposure:
    """Estimate Q^stat_n(k) from the curator's sample of n_hat users, with a confidence interval.

    For n_hat >= n the unbiased U-statistic over size-n sub-samples [derived; anonymity notes §3]

        S_hat = sum_v (c_v / n_hat) P(Hypergeom(N = n_hat - 1, K = c_v - 1, draws = n - 1) <= k - 2).

    Intervals (``interval``):

    - ``"auto"`` (default): the jackknife interval from n_hat >= 300 (:data:`JACKKNIFE_MIN_SAMPLE`)
      users, the McDiarmid interval below (``note`` says so), where the jackknife under-covers.
    - ``"jackknife"``: S_hat +- z_{1 - delta/2} sqrt(V_ES), clipped to [0, 1], with the
      Efron-Stein jackknife variance V_ES = sum_{i=1}^{n_hat} (S_(i) - S_(.))^2 (S_(i): the same
      U-statistic on the sample without user i). By the Efron-Stein inequality E[V_ES] >=
      Var(S_{n_hat - 1}) >= Var(S_{n_hat}) (a U-statistic's variance does not grow with the sample;
      Hoeffding 1948), so the variance is conservative on average; the normal quantile makes the
      interval approximate. Simulated coverage (tests/risk/test_statistical_coverage.py, 400+
      samples per case at delta = 0.1): 0.88-1.00 on uniform, Zipf and n_hat >> n cases with
      n_hat >= 300, exposures near 1 included; below 300 it under-covers (as low as 0.33 at
      n_hat = 30 with the exposure near 1), and asked for explicitly it then says so in ``note``.
      Needs n_hat > n and V_ES > 0; otherwise (n_hat = n, or all leave-one-out estimates equal)
      the McDiarmid interval is given instead (``note`` says so).
    - With ``"auto"``, when fewer than :data:`RARE_USERS` (20) sampled users carry the estimate
      (n_hat S_hat < 20: the exposure comes from a few users in small groups), the upper end is at
      least the exact Clopper-Pearson upper limit ``B^{-1}(1 - delta/2; x + 1, n_hat - x)`` on
      that share, x = ceil(n_hat S_hat) [lit: Clopper and Pearson 1934]. n_hat S_hat = sum_i w_i,
      each sampled user's weight w_i in [0, 1], is a binomial count when the weights are 0 or 1
      (rare users in groups below k); with fractional weights, which depend on the sample, reading
      it as a count is a heuristic, checked by simulation. Symmetrically, when fewer than
      :data:`RARE_USERS_OUTSIDE` (50) sampled users are in groups of weight below 1 (exposure near
      1: they carry 1 - S_hat, each with weight at most 1), the lower end is at most 1 minus the
      exact upper limit on their share. ``note`` says when either applies. Simulated
      (tests/risk/test_statistical_coverage.py): one big value plus a rare tail of 1-20 expected
      sampled users, n_hat 30-10,000, and exposures near 1, at 0.90 and 0.95: the truth is above
      the upper end in at most delta/2 of samples plus simulation slack.
    - ``"mcdiarmid"``: |S_hat - Q^stat| <= (2k - 1) sqrt(ln(2/delta) / (2 n_hat)) w.p. >= 1 - delta,
      distribution-free and independent of the support size, but wide.

    For n_hat < n, Q^stat_n is a polynomial of degree > n_hat in p and has no unbiased estimator from
    n_hat users; the plug-in sum_v p_hat_v P(Bin(n - 1, p_hat_v) <= k - 2) is returned with its bias
    unknown, and no interval (``interval == "none"``, ``lower``/``upper`` NaN, ``note`` says why):
    a bootstrap around it covers the truth in as few as 5% of samples.

    Parameters
    ----------
    sample : counts of each value in the curator's sample (a list, an array or ``{value: count}``),
        or a table whose joint values on ``columns`` are counted.
    columns : the columns, when ``sample`` is a table.
    n : users in the release.
    k : group size (>= 1).
    delta : 1 - confidence level, in (0, 1).
    interval : ``"auto"`` (default), ``"jackknife"`` or ``"mcdiarmid"`` (all only for n_hat >= n).

    Examples
    --------
    >>> est = estimate_statistical_exposure([40, 30, 20, 5, 3, 1, 1], n=50, k=3, interval="mcdiarmid")
    >>> est.estimator, round(est.estimate, 6), round(est.mcdiarmid_radius, 4)
    ('unbiased', 0.058544, 0.6791)
    >>> estimate_statistical_exposure([40, 30, 20, 5, 3, 1, 1], n=500, k=3).has_interval
    False
    """
    from scipy import stats  # lazy: start-up time

    counts = _counts_of(sample, columns)
    n_hat = int(counts.sum())
    if n_hat == 0:
        raise EmptyTableError("the curator's sample has no users; there is nothing to estimate from.")
    n_i, k_i = _check_n(n), int(check_k(k))
    if not 0 < delta < 1:
        raise ParameterError(f"delta={delta!r} must be in (0, 1), e.g. 0.05 for a 95% interval.")
    if interval == "bootstrap":
        raise ParameterError(
            "interval='bootstrap' was removed: its percentile interval is centred on the plug-in value and "
            "covered the truth in 0% of samples in simulation; use interval='jackknife' (default) or 'mcdiarmid'."
        )
    if interval not in _INTERVALS:
        raise ParameterError(f"interval={interval!r}: use 'auto', 'jackknife' or 'mcdiarmid'.")
    unbiased = n_hat >= n_i
    terms = _hyper_terms if unbiased else _binom_terms
    estimate = float(terms(counts, n_hat, n_i, k_i).sum())
    radius = (2 * k_i - 1) * math.sqrt(math.log(2 / delta) / (2 * n_hat)) if unbiased else math.nan
    std_error, note, lo, hi = math.nan, "", math.nan, math.nan
    method: str = interval
    if not unbiased:
        if interval == "mcdiarmid":
            raise ParameterError(
                f"the McDiarmid interval needs a sample at least as large as the release (n_hat={n_hat:,} < "
                f"n={n_i:,}); no valid interval exists here: use a larger sample or a smaller release."
            )
        method = "none"
        note = (
            f"the sample (n_hat={n_hat:,}) is smaller than the release (n={n_i:,}): Q^stat_n has no unbiased "
            "estimator and the plug-in's bias is unknown, so no interval is valid; use a sample of >= n users"
        )
    else:
        if n_hat > n_i:
            std_error = math.sqrt(_jackknife_variance(counts, n_hat, n_i, k_i))
        small = n_hat < JACKKNIFE_MIN_SAMPLE
        auto = interval == "auto"
        if interval == "auto":
            interval = method = "mcdiarmid" if small else "jackknife"
            if small:
                note = (
                    f"below {JACKKNIFE_MIN_SAMPLE} sampled users the jackknife's normal approximation "
                    "under-covers in simulation (as low as 33% for a nominal 90% at n_hat = 30); the "
                    "distribution-free McDiarmid interval is given"
                )
        if interval == "jackknife" and n_hat == n_i:
            method = "mcdiarmid"
            note = "n_hat = n leaves no leave-one-out estimate; the distribution-free McDiarmid interval is given"
        elif interval == "jackknife" and std_error == 0:
            method = "mcdiarmid"
            note = (
                "every leave-one-out estimate is the same (a symmetric or one-valued sample), so the jackknife "
                "says nothing of the spread; the distribution-free McDiarmid interval is given"
            )
        elif interval == "jackknife" and small:
            note = (
                f"n_hat = {n_hat:,} < {JACKKNIFE_MIN_SAMPLE}: this jackknife interval under-covers in simulation "
                "on samples this small (as low as 33% for a nominal 90%); interval='auto' gives McDiarmid's"
            )
        half = float(stats.norm.ppf(1 - delta / 2)) * std_error if method == "jackknife" else radius
        lo, hi = max(0.0, estimate - half), min(1.0, estimate + half)
        if auto:  # a few users carry the estimate (or its complement): exact binomial limits
            carried = n_hat * estimate
            # users whose group may not be small in the release (weight < 1): an upper count of the complement
            outside = float(counts[terms(counts, n_hat, n_i, k_i) * n_hat < counts * (1 - 1e-12)].sum())
            said = []
            if carried < RARE_USERS and (cp := _clopper_pearson_upper(carried, n_hat, delta)) > hi:
                hi = cp
                said.append(f"fewer than {RARE_USERS} sampled users carry the estimate: the upper end is "
                            f"the exact binomial limit {cp:.4g}")
            if outside < RARE_USERS_OUTSIDE and (cp := 1.0 - _clopper_pearson_upper(outside, n_hat, delta)) < lo:
                lo = max(cp, 0.0)
                said.append(f"fewer than {RARE_USERS_OUTSIDE} sampled users are outside small groups: the lower end is "
                            f"the exact binomial limit {lo:.4g}")
            note = "; ".join([note, *said] if note else said)
    return StatisticalExposure(
        estimate=estimate,
        lower=float(lo),
        upper=float(hi),
        estimator="unbiased" if unbiased else "plug-in",
        interval=method,
        n=n_i,
        n_sample=n_hat,
        k=k_i,
        delta=float(delta),
        mcdiarmid_radius=radius,
        std_error=std_error,
        note=note,
    )


def plugin_exposure(counts: ArrayLike, *, n: int, k: int) -> float:
    """The naive plug-in exposure: share of the sample's users in groups of < k (k scaled to n).

    Reads the sample as if it were the release: users whose value has fewer than k * n_hat / n
    sample holders. For comparison only: at k-anonymity scale it has no useful accuracy guarantee
    (anonymity notes §3, Le Cam bound).
    """
    c = np.asarray(counts, dtype=np.int64)
    c = c[c > 0]
    n_hat = int(c.sum())
    limit = int(check_k(k)) * n_hat  # c / n_hat < k / n  <=>  c n < k n_hat (integers)
    return float(c[c * _check_n(n) < limit].sum() / n_hat)
