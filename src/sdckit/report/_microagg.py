"""The microaggregation section of the report: information loss and utility of three variants."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import numpy as np
from numpy.typing import NDArray

from sdckit.microagg._groups import group_centres, mdav_groups, standardize
from sdckit.microagg._mdav import information_loss
from sdckit.microagg._positivity import positivity_restore
from sdckit.microagg._restore import restoring_map
from sdckit.microagg._utility import UtilityTable, utility_measures
from sdckit.report._report import Section, figure, metrics, paragraph, table

_SHOWN = (
    ("information_loss_pct", "IL", "information loss: 100 SSE / SST on z-scores (0 % = unchanged)", True),
    ("il1s", "IL1s", "mean absolute change per cell, in original sd units / sqrt 2 (0 = unchanged)", False),
    ("eigen_distance", "eigen dist.", "relative change of the correlation eigenvalues (0 = same spectrum)", False),
    ("variance_change", "var. change", "relative change of the variances (0 = same)", False),
    ("correlation_change", "corr. change", "relative change of the correlations (0 = same)", False),
    ("ecdf_max", "U_m", "largest gap between the original and released distribution functions (0 = same)", True),
    ("cluster", "U_c", "cluster utility: how well clustering tells original from released rows (0 = not at all)", False),
    ("propensity", "U_p", "propensity pMSE: how well a logistic model tells them apart (0 = not at all)", False),
    ("negative_share", "neg. share", "cells released below 0 in columns never below 0 in the original", True),
    ("sdid_risk", "SDID risk", "interval disclosure: records whose every original value lies within ±5 % sd of "
     "the released one (100 % = unmasked)", True),
)
"""(field, label, one-line explanation, shown in percent)."""


def _shown(tab: UtilityTable, key: str, percent: bool) -> str:
    v = float(getattr(tab, key))
    if key == "information_loss_pct":
        return f"{v:.3g} %"
    return f"{100 * v:.3g} %" if percent else f"{v:.3g}"


def _times(a: float, b: float) -> str:
    """How many times a is of b, in words."""
    if b <= 0:
        return "from 0" if a > 0 else "unchanged"
    r = a / b
    if r >= 10:
        return f"{r:,.0f}× as large"
    return f"{r:.2g}× as large" if r >= 1.05 else ("unchanged" if r > 0.95 else f"{r:.2g}× (smaller)")


def microagg_section(
    X: NDArray[np.float64],
    names: Sequence[str],
    *,
    k: int = 5,
    seed: int = 20261130,
    max_rows: int = 3_000,
    degree: int = 3,
) -> Section:
    """MDAV (compiled kernel) on ``X`` (n, p), then moment restoration and the positivity variant.

    Information loss is computed on all rows; the utility table on a seeded sample of at most
    ``max_rows`` rows (the same rows of every variant) to keep the section to a few seconds.
    Columns whose values are all >= 0 are the positivity-constrained ones.
    """
    x = np.ascontiguousarray(X, dtype=np.float64)
    n, p = x.shape
    groups = mdav_groups(standardize(x), k)
    masked = group_centres(x, groups)
    a, b, rank = restoring_map(x, masked)
    restored = masked @ a.T + b
    signs = np.where((x >= 0).all(axis=0), 1, 0).astype(np.int64)
    positive, stats, _ = positivity_restore(x, masked, signs=signs, groups=groups)
    stats = replace(stats, constrained=tuple(name for name, s in zip(names, signs, strict=True) if s))
    rng = np.random.default_rng(seed)
    rows = np.sort(rng.choice(n, size=max_rows, replace=False)) if n > max_rows else np.arange(n)
    variants = {"microaggregated": masked, "moment-restored": restored, "positivity-preserving": positive}
    tables: dict[str, UtilityTable] = {
        name: utility_measures(x[rows], v[rows], degree=degree, seed=seed) for name, v in variants.items()
    }
    il = {name: information_loss(x, v) for name, v in variants.items()}
    for name in tables:  # the table's IL on all rows, not the sample
        tables[name] = UtilityTable(**{**tables[name].to_dict(), "information_loss_pct": il[name]})

    # lazy: start-up time
    import matplotlib

    matplotlib.use("Agg")
    # lazy: start-up time
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7.5, 3.2))
    keys = ("ecdf_max", "cluster", "propensity", "variance_change", "correlation_change")
    width = 0.26
    for i, (name, tab) in enumerate(tables.items()):
        vals = [getattr(tab, key) for key in keys]
        ax.bar(np.arange(len(keys)) + (i - 1) * width, vals, width, label=name)
    ax.set_xticks(np.arange(len(keys)), ["U_m", "U_c", "U_p", "var. change", "corr. change"])
    ax.set_yscale("log")
    ax.set_ylabel("value (lower is better)")
    ax.legend(fontsize=8)
    fig.tight_layout()

    section = Section(
        id="microaggregation",
        title=f"Microaggregation (MDAV, k = {k})",
    )
    plain_share = stats.n_kept / max(n, 1)
    u_m = {name: tab.ecdf_max for name, tab in tables.items()}
    costs = (
        f"Costs: moment restoration brings the mean and covariance back (covariance rank {rank} of {p}) but "
        f"makes U_m {_times(u_m['moment-restored'], u_m['microaggregated'])} "
        f"({u_m['microaggregated']:.3g} → {u_m['moment-restored']:.3g}) and its information loss is "
        f"{il['moment-restored']:.3g} % against {il['microaggregated']:.3g} %; {stats.n_negative_records:,} records "
        f"({100 * stats.n_negative_records / max(n, 1):.3g} %) get values below 0 in columns that never are. The "
        f"positivity variant avoids that by leaving {stats.n_kept:,} records ({100 * plain_share:.3g} %) "
        "plain microaggregated (not restored), so its covariance is only partly restored "
        f"(U_m {u_m['positivity-preserving']:.3g}, IL {il['positivity-preserving']:.3g} %)."
    )
    section.summary = (
        f"MDAV with k = {k} on {p} numeric columns loses {il['microaggregated']:.2f} % of the variance; restoring "
        f"the mean and covariance makes U_m {_times(u_m['moment-restored'], u_m['microaggregated'])} and puts "
        f"{stats.n_negative_records:,} records ({100 * stats.n_negative_records / max(n, 1):.3g} %) below 0 where the "
        f"original never is; the positivity variant avoids that by leaving {100 * plain_share:.3g} % of the records "
        "plain microaggregated."
    )
    section.add(
        paragraph(
            f"Every record of the columns {', '.join(names)} is replaced by the mean of its MDAV group of "
            f"at least {k} records (z-scores, squared Euclidean distance). The moment-restored variant applies "
            "T(x) = A x + b with A = S1^1/2 S2^-1/2 so the release has the original mean and covariance; the "
            "positivity-preserving variant keeps the records T would push below zero as microaggregated, "
            "cutting only between MDAV groups: restoration keeps groups identical, each group is released "
            "kept or transformed whole, so every released row is still shared by at least k records."
        ),
        metrics(
            [
                ("groups", int(groups.max()) + 1, ""),
                ("information loss", il["microaggregated"], "%"),
                ("records negative after T", stats.n_negative_records, ""),
                ("left plain under positivity", 100 * plain_share, "%"),
                ("covariance rank", rank, f"/ {p}"),
            ]
        ),
        paragraph(costs),
        table(
            [[label, *[_shown(tab, key, pc) for tab in tables.values()], what] for key, label, what, pc in _SHOWN],
            ["measure", *tables, "what it measures"],
            caption=f"Utility and risk (IL on all {n:,} rows; other measures on {rows.shape[0]:,} sampled rows); "
            "lower is better for every row.",
        ),
        figure(fig, caption="Distribution measures per variant (log scale)."),
        paragraph(
            f"Positivity step: {stats.n_kept:,} records kept microaggregated, {stats.n_transformed:,} "
            f"transformed, {stats.n_reverted:,} reverted, {stats.n_filled_cells:,} cells filled.",
            note=True,
        ),
    )
    section.data = {
        "k": k,
        "columns": list(names),
        "n_rows": n,
        "n_groups": int(groups.max()) + 1,
        "information_loss_pct": il,
        "utility": {name: tab.to_dict() for name, tab in tables.items()},
        "positivity": stats.to_dict(),
        "plain_share_positivity": plain_share,
        "ecdf_max": u_m,
        "sample_rows": int(rows.shape[0]),
        "seed": seed,
    }
    return section
