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
from sdckit.microagg._positivity import PositivityMode, positivity_restore
from sdckit.microagg._restore import restoring_map
from sdckit.microagg._utility import cluster_utility, ecdf_utility, propensity_utility

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
