"""The report's re-identification risk section (sdckit.risk) and the release plan section."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from sdckit._io import DataSource, MissingPolicy
from sdckit.report._report import Block, Section, figure, metrics, paragraph, table
from sdckit.risk import (
    IndividualRisk,
    LDiversity,
    ReleasePlan,
    RiskSummary,
    Suda2Result,
    individual_risk,
    joint_exposure_bound,
    l_diversity,
    plan_release,
    risk_summary,
    suda2,
)


def exposure_figure(summary: RiskSummary, *, n_points: int = 120) -> Any:
    """Matplotlib figure: the true exposure Q_J(t) and the bounds from the marginals, t on a log axis."""
    import matplotlib

    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt

    assert summary.curve is not None
    assert summary.marginals is not None
    n = summary.n
    ts = np.logspace(np.log10(1.0 / n), 0, n_points)
    fig, ax = plt.subplots(figsize=(6.4, 4.0))
    summary.curve.plot(ax, label="true exposure Q_J(t)", color="black", linewidth=2)
    styles = {"best": ("C0", "-"), "theorem3": ("C1", "--"), "support": ("C2", ":"), "lower": ("C3", "-.")}
    for method, (color, ls) in styles.items():
        values = joint_exposure_bound(summary.marginals, t=ts, method=method)  # type: ignore[arg-type]
        ax.plot(ts, values, color=color, linestyle=ls, label=f"{method} (from marginals)")
    if summary.max_exposed_size > 0:
        ax.axvline(summary.max_exposed_size / n, color="grey", linewidth=0.8)
    ax.legend(fontsize=8, loc="upper left")
    ax.set_title(f"Exposure on {len(summary.columns)} columns, n = {n:,}", fontsize=10)
    return fig


def _pct(x: float) -> str:
    return f"{100 * x:.3g}%"


def risk_section(
    data: DataSource,
    columns: Sequence[str] | str,
    *,
    k: int = 5,
    budget: float = 0.05,
    missing: MissingPolicy = "value",
    plot: bool = True,
    include_plan: bool = True,
) -> Section:
    """Section 'Re-identification risk': k-anonymity, uniques, the exposure curve beside the bounds
    from the marginals, entropy (what it does and does not mean), per-column parts, the release plan.

    Parameters
    ----------
    data, columns : the table and its quasi-identifiers.
    k : group size (>= 1).
    budget : share of users (0..1) the release plan may leave in groups smaller than k.
    missing : ``"value"`` (default) or ``"drop"``.
    plot : include the exposure figure (inline SVG).
    include_plan : show the release plan here (False when the report has its own plan section).
    """
    s = risk_summary(data, columns, k=k, missing=missing)
    assert s.marginals is not None
    plan = plan_release(s.marginals, k=k, budget=budget)
    section = Section("risk", "Re-identification risk", data={"summary": s.to_dict(), "plan": plan.to_dict()})
    section.add(
        metrics(
            [
                ("k-anonymity (smallest group)", s.k_anonymity, ""),
                ("unique users", s.n_unique, ""),
                (f"users in groups < {k}", 100 * s.exposure, "%"),
                ("bound from marginals", 100 * s.bounds["best"], "%"),
                ("entropy", s.entropy_bits, " bits"),
            ]
        ),
        paragraph(
            f"Quasi-identifiers: {', '.join(s.columns)}. {s.n:,} users form {s.n_groups:,} groups; "
            f"{_pct(s.exposure)} of users are in a group of fewer than {k} (the exposure Q_J at k = {k}). "
            "Identical rows are different users and are never merged."
        ),
    )
    if plot:
        section.add(
            figure(
                exposure_figure(s),
                caption="True exposure Q_J(t) (share of users in groups of at most t n users) and the bounds "
                "a curator holding only single-column counts can compute; the grey line marks k.",
            )
        )
    section.add(
        table(
            [
                ("true exposure", s.exposure, "counted on the joint table"),
                ("lower (max of single columns)", s.bounds["lower"], "never a guarantee"),
                ("support: t * product of supports", s.bounds["support"], "Theorem 2, nothing sacrificed"),
                ("Theorem 2, best sacrificed values", s.bounds["theorem2"], "upper bound"),
                ("Theorem 3, optimised over c", s.bounds["theorem3"], "upper bound, no support size used"),
                ("best upper bound", s.bounds["best"], "what the plan uses"),
            ],
            ["quantity", f"share of users in groups < {k}", "note"],
            caption="The truth beside the bounds from marginals (anonymity notes §2)",
        ),
        paragraph(
            f"Entropy H = {s.entropy_bits:.3f} bits. The popular reading 'each combination is shared by about "
            f"n / 2^H = {s.n / 2**s.entropy_bits:,.0f} users' holds only for near-uniform data. What H does "
            f"guarantee at this k: at most {_pct(s.entropy_bound)} (H / log2(1/t)), sharper "
            f"{_pct(s.entropy_bound_sharp)}, of users in groups < {k}; here the truth is {_pct(s.exposure)}.",
        ),
        table(
            [(c.column, c.support, c.exposure_alone, c.exposure_without) for c in s.per_column],
            ["column", "support (values)", f"exposed alone (< {k})", f"exposed without it (< {k})"],
            caption="Per-column contributions: a large drop when a column is left out marks the riskiest column",
        ),
        *(_plan_blocks(plan) if include_plan else []),
        paragraph(
            "Low exposure is an average: some users can still be unique. Several releases sharing columns can "
            "be joined, and survey weights (e.g. fnlwgt) are near-unique and are not quasi-identifiers.",
            note=True,
        ),
    )
    section.summary = (
        f"{_pct(s.exposure)} of users are in groups smaller than {k} on {len(s.columns)} quasi-identifiers "
        f"({s.n_unique:,} unique); the plan releases {len(plan.columns)} of them within a budget of {_pct(budget)}."
    )
    return section


def _plan_blocks(plan: ReleasePlan) -> list[Block]:
    released = ", ".join(plan.columns) if plan.columns else "no column"
    return [
        paragraph(
            f"Release plan (global suppression, k = {plan.k}, budget {_pct(plan.budget)} of users): release "
            f"{released}; bound {_pct(plan.bound)} ({plan.method}, {plan.search} search over column sets)."
        ),
        table(
            sorted(plan.excluded.items()),
            ["excluded column", "why"],
            caption="Columns left out of the release",
        ),
    ]


def plan_section(plan: ReleasePlan) -> Section:
    """Section 'Release plan': the columns released, the bound, and why each other column is left out."""
    section = Section("plan", "Release plan", data={"plan": plan.to_dict()})
    section.add(
        metrics(
            [
                ("columns released", len(plan.columns), ""),
                ("k", plan.k, ""),
                ("budget", 100 * plan.budget, "%"),
                ("bound", 100 * plan.bound, "%"),
            ]
        ),
        *_plan_blocks(plan),
    )
    summary = (
        f"Release {len(plan.columns)} column(s) ({', '.join(plan.columns) or 'none'}); at most {_pct(plan.bound)} "
        f"of users in groups smaller than {plan.k} (budget {_pct(plan.budget)})."
    )
    if plan.setting == "statistical":
        summary += (
            f" Statistical setting: the counts are a sample; the bound is on the expected share in a fresh "
            f"release of {plan.n_release:,} users and holds with probability at least {1 - (plan.delta or 0):.4g}."
        )
    section.summary = summary
    return section


# ----------------------------------------------------------------------------------------------
# Disclosure-review measures (issue 13): individual and global risk, l-diversity, SUDA2. Each
# function renders a result computed elsewhere; ``risk_measure_blocks`` computes and renders all.


def individual_risk_figure(ir: IndividualRisk) -> Any:
    """Matplotlib figure: histogram of the per-record risk r_i (records per risk interval, log count)."""
    import matplotlib

    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt

    bins = ir.histogram()
    fig, ax = plt.subplots(figsize=(6.4, 3.2))
    ax.bar(range(len(bins)), [max(c, 0) for _, c in bins], color="C0")
    ax.set_xticks(range(len(bins)), [label for label, _ in bins], rotation=30, fontsize=8)
    ax.set_yscale("symlog", linthresh=1)
    ax.set_xlabel("individual re-identification risk r_i")
    ax.set_ylabel("records")
    source = f"weights {ir.weights}" if ir.weights else "no weights: r = 1 / f_k"
    ax.set_title(f"Per-record risk on {len(ir.columns)} key columns ({source})", fontsize=10)
    return fig


def individual_risk_blocks(ir: IndividualRisk, *, threshold: float = 0.1, plot: bool = True) -> list[Block]:
    """Global risk (expected re-identifications and its share), the riskiest records, the histogram."""
    model = (
        f"Benedetti-Franconi approximation with sampling weights {ir.weights!r} (F_k = sum of the weights)"
        if ir.weights
        else "no sampling weights: the table is taken as the population, r_i = 1 / f_k"
    )
    blocks: list[Block] = [
        metrics(
            [
                ("expected re-identifications", ir.expected_reidentifications, ""),
                ("global risk", 100 * ir.global_risk, "%"),
                ("highest individual risk", 100 * ir.max_risk, "%"),
                (f"records with risk > {threshold:g}", ir.n_above(threshold), ""),
            ]
        ),
        paragraph(
            f"Individual risk r_i is the probability that an intruder who matches record i on "
            f"{', '.join(ir.columns)} against the population picks the right person ({model}). Summed over "
            f"the {ir.n:,} records it is the expected number of correct re-identifications, "
            f"{ir.expected_reidentifications:,.2f} ({_pct(ir.global_risk)} of the records)."
        ),
    ]
    if plot:
        blocks.append(
            figure(
                individual_risk_figure(ir),
                caption="Records per interval of individual risk (log scale); the right end holds the records "
                "an intruder is most likely to re-identify.",
            )
        )
    blocks.append(table(ir.histogram(), ["individual risk", "records"], caption="Per-record risk histogram"))
    return blocks


def l_diversity_blocks(ld: LDiversity) -> list[Block]:
    """The l-diversity table: per sensitive column, the table's l of each form, t and shares not 2-diverse."""
    rows = [
        (
            s.column,
            s.l,
            float(s.entropy_l.min()),
            int(s.recursive_l.min()),
            ld.not_diverse(2, column=s.column),
            ld.not_diverse(2, kind="entropy", column=s.column),
            "–" if s.t is None else s.t,
        )
        for s in ld.per_column
    ]
    return [
        table(
            rows,
            [
                "sensitive column",
                "distinct l",
                "entropy l",
                f"recursive ({ld.c:g}, l)",
                "users not 2-diverse",
                "not entropy 2-diverse",
                "t-closeness",
            ],
            caption=f"l-diversity within the {ld.n_groups:,} groups of {', '.join(ld.quasi_identifiers)}",
        ),
        paragraph(
            f"{_pct(ld.not_diverse(2))} of users are in a group whose members all share the value of at least "
            "one sensitive column: an intruder who places them in their group learns that value without "
            "re-identifying anyone. Distinct l counts values; entropy l = exp(H) also needs them balanced."
        ),
    ]


def suda2_blocks(s: Suda2Result) -> list[Block]:
    """SUDA2: records with minimal sample uniques, MSUs by size, the DIS-SUDA histogram."""
    by_size = s.msu_counts.sum(axis=0)
    return [
        metrics(
            [
                ("records with an MSU", s.n_special, ""),
                ("MSUs", s.n_msu, ""),
                ("highest DIS-SUDA score", float(s.dis_scores.max()) if s.n else 0.0, ""),
            ]
        ),
        table(
            [(size + 1, int(c)) for size, c in enumerate(by_size)],
            ["MSU size (columns)", "MSUs"],
            caption="Minimal sample uniques by size: the smaller, the easier the record is singled out",
        ),
        table(
            s.dis_histogram(),
            ["DIS-SUDA score", "records"],
            caption="DIS-SUDA scores (as sdcMicro prints them)",
        ),
    ]


def risk_measure_blocks(
    data: DataSource,
    columns: Sequence[str] | str,
    *,
    weights: str | None = None,
    sensitive: Sequence[str] | None = None,
    suda: bool = False,
    missing: MissingPolicy = "value",
    plot: bool = True,
) -> tuple[list[Block], dict[str, Any]]:
    """Blocks for the risk section (individual and global risk; l-diversity when ``sensitive`` is
    given; SUDA2 with ``suda``) and their JSON form, for :meth:`Section.add` and the section data."""
    ir = individual_risk(data, columns, weights=weights, missing=missing)
    blocks = individual_risk_blocks(ir, plot=plot)
    payload: dict[str, Any] = {"individual_risk": ir.to_dict()}
    if sensitive:
        ld = l_diversity(data, columns, list(sensitive), t_closeness=True, missing=missing)
        blocks += l_diversity_blocks(ld)
        payload["l_diversity"] = ld.to_dict()
    if suda:
        s = suda2(data, columns, missing=missing)
        blocks += suda2_blocks(s)
        payload["suda2"] = s.to_dict()
    return blocks, payload


def risk_review_section(
    data: DataSource,
    columns: Sequence[str] | str,
    *,
    k: int = 5,
    budget: float = 0.05,
    missing: MissingPolicy = "value",
    plot: bool = True,
    include_plan: bool = True,
    weights: str | None = None,
    sensitive: Sequence[str] | None = None,
    suda: bool = False,
) -> Section:
    """:func:`risk_section` with the disclosure-review measures appended: the per-record risk
    histogram and global risk (with ``weights``, the Benedetti-Franconi model), an l-diversity table
    when ``sensitive`` columns are given, SUDA2 with ``suda``; their figures go into the section data
    under ``individual_risk``, ``l_diversity`` and ``suda2``."""
    section = risk_section(
        data, columns, k=k, budget=budget, missing=missing, plot=plot, include_plan=include_plan
    )
    blocks, payload = risk_measure_blocks(
        data, columns, weights=weights, sensitive=sensitive, suda=suda, missing=missing, plot=plot
    )
    section.add(*blocks)
    section.data.update(payload)
    return section
