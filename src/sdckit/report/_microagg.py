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
    ("information_loss_pct", "IL (%)"),
    ("il1s", "IL1s"),
    ("eigen_distance", "eigen dist."),
    ("variance_change", "var. change"),
    ("correlation_change", "corr. change"),
    ("ecdf_max", "U_m"),
    ("cluster", "U_c"),
    ("propensity", "U_p"),
    ("negative_share", "neg. share"),
    ("sdid_risk", "SDID risk"),
)


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

    import matplotlib

    matplotlib.use("Agg")
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
        summary=(
            f"MDAV with k = {k} on {p} numeric columns loses {il['microaggregated']:.2f} % of the variance; "
            f"moment restoration brings the covariance back exactly ({stats.n_negative_records:,} records "
            "would turn negative, handled by the positivity variant)."
        ),
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
                ("covariance rank", rank, f"/ {p}"),
            ]
        ),
        table(
            [[label, *[getattr(tab, key) for tab in tables.values()]] for key, label in _SHOWN],
            ["measure", *tables],
            caption=f"Utility and risk (IL on all {n:,} rows; other measures on {rows.shape[0]:,} sampled rows).",
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
        "sample_rows": int(rows.shape[0]),
        "seed": seed,
    }
    return section
