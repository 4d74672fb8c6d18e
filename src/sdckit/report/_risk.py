"""The report's re-identification risk section (sdckit.risk) and the release plan section."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from sdckit._io import DataSource, MissingPolicy
from sdckit.report._report import Block, Section, figure, metrics, paragraph, table
from sdckit.risk import ReleasePlan, RiskSummary, joint_exposure_bound, plan_release, risk_summary


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
