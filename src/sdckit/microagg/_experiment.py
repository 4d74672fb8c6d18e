"""The seed's "eight types of data" experiment [seed; design reconstructed, notes §5].

{symmetric, non-symmetric} x {low, high} x {positive, negative}: margins arcsine on [0, 10]
(``10 sin^2(pi u / 2)``: symmetric, mass piled near 0 and 10) or lognormal with log-sd 1.5 (skewed,
mass near zero), since sign violations need mass near zero (notes §5); low (0.3) or high
(0.9) correlation of the Gaussian copula; all correlations positive, or negative between the two
halves of the columns (R_ij = s_i s_j rho with s = (+1, ..., -1, ...)). Each data set is
microaggregated with MDAV, moment-restored, and positivity-constrained; the three utility measures
U_m, U_c, U_p are computed for each variant.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray
from scipy.special import ndtr

from sdckit.microagg._groups import group_centres, mdav_groups, standardize
from sdckit.microagg._noise import correlated_noise
from sdckit.microagg._positivity import PositivityMode, positivity_restore
from sdckit.microagg._rankswap import rank_swap_column
from sdckit.microagg._restore import restoring_map
from sdckit.microagg._utility import cluster_utility, ecdf_utility, propensity_utility, utility_measures
from sdckit.risk._measures._linkage import record_linkage

EIGHT_TYPES: tuple[str, ...] = tuple(
    f"{shape} {level} {sign}"
    for shape in ("symmetric", "non-symmetric")
    for level in ("low", "high")
    for sign in ("positive", "negative")
)
"""The eight data types, e.g. ``"non-symmetric low positive"``."""


def eight_types_data(
    *, n: int = 1000, p: int = 5, log_sd: float = 1.5, seed: int = 0
) -> dict[str, NDArray[np.float64]]:
    """One (n, p) non-negative data set per type in :data:`EIGHT_TYPES` (seeded, reproducible).

    ``log_sd`` is the sd of log x for the non-symmetric (lognormal) types.
    """
    rng = np.random.default_rng(seed)
    signs = np.where(np.arange(p) < (p + 1) // 2, 1.0, -1.0)
    out: dict[str, NDArray[np.float64]] = {}
    for name in EIGHT_TYPES:
        shape, level, sign = name.split()
        rho = 0.3 if level == "low" else 0.9
        corr = np.full((p, p), rho)
        np.fill_diagonal(corr, 1.0)
        if sign == "negative":
            corr = corr * np.outer(signs, signs)
        g = rng.standard_normal((n, p)) @ np.linalg.cholesky(corr).T
        out[name] = 10.0 * np.sin(np.pi / 2 * ndtr(g)) ** 2 if shape == "symmetric" else np.exp(log_sd * g)
    return out


def eight_types_experiment(
    *,
    n: int = 1000,
    p: int = 5,
    k: int = 15,
    mode: PositivityMode = "same",
    buffer: float = 0.0,
    seed: int = 0,
) -> list[dict[str, Any]]:
    """Rows ``{type, variant, n_negative_records, ecdf_max, cluster, propensity}`` for the three
    variants ``masked`` (MDAV), ``restored`` (T(x) = A x + b) and ``positive`` of each type."""
    rows: list[dict[str, Any]] = []
    for name, x in eight_types_data(n=n, p=p, seed=seed).items():
        groups = mdav_groups(standardize(x), k)
        masked = group_centres(x, groups)
        a, b, _ = restoring_map(x, masked)
        restored = masked @ a.T + b
        signs = np.ones(p, dtype=np.int64)
        positive, stats, _ = positivity_restore(
            x, masked, signs=signs, groups=groups, mode=mode, buffer=buffer
        )
        for variant, xm in (("masked", masked), ("restored", restored), ("positive", positive)):
            u_m, _ = ecdf_utility(x, xm, seed=seed)
            rows.append(
                {
                    "type": name,
                    "variant": variant,
                    "n_negative_records": stats.n_negative_records,
                    "ecdf_max": u_m,
                    "cluster": cluster_utility(x, xm, seed=seed),
                    "propensity": propensity_utility(x, xm, degree=3),
                }
            )
    return rows


METHODS: tuple[str, ...] = ("mdav", "noise", "correlated_noise", "rank_swap")
"""The masking methods of :func:`experiment`."""
VARIANTS: tuple[str, ...] = ("masked", "restored", "positive")
"""Each method's output as is, moment-restored (T(x) = A x + b) and positivity-restored."""


def _mask(method: str, x: NDArray[np.float64], rng: np.random.Generator, *, k: int, noise: float, swap_p: float) -> tuple[NDArray[np.float64], NDArray[np.int64]]:
    """(masked, groups): groups are the MDAV groups, or one per record for the other methods."""
    n = x.shape[0]
    if method == "mdav":
        groups = mdav_groups(standardize(x), k)
        return group_centres(x, groups), groups
    own = np.arange(n, dtype=np.int64)
    if method == "noise":  # independent noise of variance noise * var_j per column (sdckit's noise step)
        return x + np.sqrt(noise) * x.std(axis=0, ddof=1) * rng.standard_normal(x.shape), own
    if method == "correlated_noise":
        return correlated_noise(x, noise, rng), own
    if method == "rank_swap":
        cols = [rank_swap_column(x[:, j], rng, p=swap_p, top_percent=0.0, bottom_percent=0.0)[0] for j in range(x.shape[1])]
        return np.column_stack(cols), own
    raise ValueError(f"method={method!r}: use one of {', '.join(METHODS)}.")


def experiment(
    *,
    n: int = 1000,
    p: int = 5,
    k: int = 15,
    noise: float = 0.1,
    swap_p: float = 5.0,
    methods: tuple[str, ...] = METHODS,
    mode: PositivityMode = "same",
    buffer: float = 0.05,
    link_k: int = 5,
    seed: int = 0,
) -> list[dict[str, Any]]:
    """The seed's question for other masked data: restoration's gain in utility and its cost in risk.

    For each type of :data:`EIGHT_TYPES` (n x p, :func:`eight_types_data`) and each method of
    ``methods``: ``mdav`` (groups of k), ``noise`` (independent Gaussian noise of variance
    ``noise * var_j`` per column), ``correlated_noise`` (N(0, noise S), :class:`CorrelatedNoise`),
    ``rank_swap`` (window ``swap_p`` % of the records, no top/bottom coding, :class:`RankSwap`),
    each released ``masked``, ``restored`` (:class:`MomentRestorer`) and ``positive``
    (:class:`PositivityRestorer`, ``mode``, ``buffer``; MDAV's groups kept whole). One row per
    (type, method, variant): ``n_negative_records`` (n', records T pushes below zero), the utility
    ``il1s``, ``eigen_distance``, ``covariance_change`` (relative L1 change of the covariances),
    ``propensity`` (U_p, cubic logistic), and the risk ``linkage_nearest`` / ``linkage_within_k``
    (:func:`sdckit.risk.record_linkage`, Euclidean on standardised columns, k = ``link_k``).
    ``seed`` fixes the data and the masking: an experiment, reproducible by design.
    """
    rows: list[dict[str, Any]] = []
    rng = np.random.default_rng([seed, 26])  # a stream of its own: the data's generator uses default_rng(seed)
    signs = np.ones(p, dtype=np.int64)
    for name, x in eight_types_data(n=n, p=p, seed=seed).items():
        for method in methods:
            masked, groups = _mask(method, x, rng, k=k, noise=noise, swap_p=swap_p)
            a, b, _ = restoring_map(x, masked)
            restored = masked @ a.T + b
            positive, stats, _ = positivity_restore(x, masked, signs=signs, groups=groups, mode=mode, buffer=buffer)
            for variant, xm in zip(VARIANTS, (masked, restored, positive), strict=True):
                util = utility_measures(x, xm, level="basic", seed=seed)
                link = record_linkage(x, xm, k=link_k)
                rows.append(
                    {
                        "type": name,
                        "method": method,
                        "variant": variant,
                        "n_negative_records": stats.n_negative_records,
                        "il1s": util.il1s,
                        "eigen_distance": util.eigen_distance,
                        "covariance_change": util.covariance_change,
                        "propensity": propensity_utility(x, xm, degree=3),
                        "linkage_nearest": link.share_nearest,
                        "linkage_within_k": link.share_within_k,
                    }
                )
    return rows
