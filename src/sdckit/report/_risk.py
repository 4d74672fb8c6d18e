"""The report's re-identification risk section (sdckit.risk) and the release plan section."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from sdckit._io import DataSource, MissingPolicy
from sdckit.plan import ReleasePlan, plan_release, received_marginals
from sdckit.report._fmt import NO_GUARANTEE, bound_text, in_percent, is_vacuous
from sdckit.report._fmt import pct as _pct
from sdckit.report._report import Block, Section, figure, metrics, paragraph, table
from sdckit.risk import (
    IndividualRisk,
    LDiversity,
    PairBoundCurve,
    RiskSummary,
    Suda2Result,
    individual_risk,
    l_diversity,
    pair_bound_curve,
    risk_summary,
    suda2,
)


@dataclass(frozen=True)
class ExposureAgainstK:
    """The truth and the bounds against k, for the exposure plot (shares of users, 0..1)."""

    k: NDArray[np.int64]
    """Group sizes 2..max_k (and the release's k)."""
    truth: NDArray[np.float64]
    """True share of users in groups smaller than k (counted on the joint table)."""
    bounds: PairBoundCurve
    """Single-column bound, pair bound and lower bound at the same k."""
    pairs: tuple[tuple[str, ...], ...]
    """The pair tables behind the pair bound (empty: the pair bound is the single-column bound)."""

    def at(self, k: int) -> dict[str, float]:
        """The four curves at one k."""
        i = int(np.searchsorted(self.k, k))
        b = self.bounds
        return {"truth": float(self.truth[i]), "single": float(b.single[i]), "pairs": float(b.blocks[i]),
                "lower": float(b.lower[i])}

    def to_dict(self) -> dict[str, Any]:
        return {"k": self.k.tolist(), "truth": self.truth.tolist(),
                **{key: v for key, v in self.bounds.to_dict().items() if key != "k"},
                "pairs": [list(p) for p in self.pairs], "unit": "share of users (0..1)"}


def exposure_against_k(
    summary: RiskSummary,
    data: DataSource | None = None,
    *,
    budget: float = 0.05,
    missing: MissingPolicy = "value",
    max_k: int = 50,
) -> ExposureAgainstK:
    """The truth and the bounds against k = 2..``max_k``: the true share of users in groups smaller
    than k, the single-column bound, and (with ``data``) the pair bound from the pair tables a curator
    would ask for at the summary's k and ``budget`` (:func:`choose_pair_queries`, rare values redacted)."""
    assert summary.curve is not None
    assert summary.marginals is not None
    k = summary.k if summary.k is not None else summary.max_exposed_size + 1
    ks = np.unique(np.r_[np.arange(2, max(max_k, k) + 1), max(k, 2)]).astype(np.int64)
    truth = np.asarray(summary.curve.not_k_anonymous(ks), dtype=np.float64)
    marginals = summary.marginals
    pairs: tuple[tuple[str, ...], ...] = ()
    if data is not None:
        marginals, queries = received_marginals(
            data, list(summary.columns), max(k, 2), budget, missing=missing, singles=summary.marginals
        )
        pairs = tuple(tuple(b) for b in queries.blocks)
    return ExposureAgainstK(ks, truth, pair_bound_curve(marginals, ks), pairs)


def exposure_figure(
    summary: RiskSummary,
    data: DataSource | None = None,
    *,
    budget: float = 0.05,
    missing: MissingPolicy = "value",
    curves: ExposureAgainstK | None = None,
) -> Any:
    """Matplotlib figure: exposure against k (x axis): the truth, the single-column bound, the pair
    bound (with ``data``, see :func:`exposure_against_k`) and the lower bound; y in percent of users,
    an upper bound at the top reads "no guarantee"; the legend sits below the axes."""
    # lazy: start-up time
    import matplotlib

    matplotlib.use("Agg", force=False)
    # lazy: start-up time
    import matplotlib.pyplot as plt

    c = curves if curves is not None else exposure_against_k(summary, data, budget=budget, missing=missing)
    ks, b = c.k, c.bounds
    k = summary.k if summary.k is not None else summary.max_exposed_size + 1
    fig, ax = plt.subplots(figsize=(7.0, 4.2))
    same = bool(np.allclose(b.single, b.blocks))
    ax.plot(ks, 100 * b.single, color="#d95f02", linewidth=4.5, alpha=0.55,
            label="upper bound from single-column counts")
    pair_label = f"upper bound using {len(c.pairs)} pair table(s)" if c.pairs else "upper bound with pairs (none asked)"
    if same:
        pair_label += ", equal to the single-column bound"
    ax.plot(ks, 100 * b.blocks, color="#1b5fa8", linewidth=1.8, linestyle=(0, (6, 2)), label=pair_label)
    ax.plot(ks, 100 * c.truth, color="black", linewidth=2.2, marker="o", markersize=2.5,
            label="true exposure (counted on the joint table)")
    ax.plot(ks, 100 * b.lower, color="#666", linewidth=1.2, linestyle=":",
            label="lower bound (largest single column or pair; not a guarantee)")
    ax.axvline(k, color="grey", linewidth=0.8)
    ax.annotate(f"k = {k}", (k, 50), xytext=(4, 0), textcoords="offset points", fontsize=8, color="grey")
    ax.set_xlim(ks.min(), ks.max())
    ax.set_ylim(0, 104)
    ax.set_yticks([0, 20, 40, 60, 80, 100], ["0 %", "20 %", "40 %", "60 %", "80 %", "100 % =\nno guarantee"])
    ax.set_xlabel("k (a user is exposed in a group of fewer than k users)")
    ax.set_ylabel("users in groups smaller than k")
    ax.set_title(f"Exposure on {len(summary.columns)} columns, n = {summary.n:,}", fontsize=10)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.16), ncol=2, frameon=False)
    fig.tight_layout()
    return fig


def risk_section(
    data: DataSource,
    columns: Sequence[str] | str,
    *,
    k: int = 5,
    budget: float = 0.05,
    missing: MissingPolicy = "value",
    plot: bool = True,
    include_plan: bool = True,
    plan: ReleasePlan | None = None,
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
    plan : the release plan at k and budget when already made on these columns (the pipeline's);
        None plans here.
    """
    s = risk_summary(data, columns, k=k, missing=missing)
    assert s.marginals is not None
    plan = plan if plan is not None else plan_release(s.marginals, k=k, budget=budget)
    best = s.bounds["best"]
    section = Section("risk", "Re-identification risk", data={"summary": s.to_dict(), "plan": plan.to_dict()})
    section.add(
        metrics(
            [
                ("k-anonymity (smallest group)", s.k_anonymity, ""),
                ("unique users", s.n_unique, ""),
                (f"users in groups < {k}", 100 * s.exposure, "%"),
                ("bound from single-column counts", NO_GUARANTEE if is_vacuous(best) else 100 * best,
                 "" if is_vacuous(best) else "%"),
                ("entropy", s.entropy_bits, " bits"),
            ]
        ),
        paragraph(
            f"Quasi-identifiers: {', '.join(s.columns)}. {s.n:,} users form {s.n_groups:,} groups; "
            f"{_pct(s.exposure)} of users are in a group of fewer than {k} (the exposure at k = {k}: the share "
            "of users an intruder who knows these columns can narrow down to fewer than k people). "
            "Identical rows are different users and are never merged. k-anonymity is the size of the smallest "
            "group; a unique user is alone in their group. The bound from single-column counts is what a "
            f"curator who sees only each column's counts can guarantee: {bound_text(best)}"
            + (" (with this many columns and values, single-column counts cannot rule out that every user is "
               "exposed)." if is_vacuous(best) else ".")
        ),
    )
    if plot:
        curves = exposure_against_k(s, data, budget=budget, missing=missing)
        here = curves.at(k)
        section.data["exposure_against_k"] = curves.to_dict()
        section.add(
            figure(
                exposure_figure(s, curves=curves),
                caption=f"Share of users in groups smaller than k, against k: the truth (black), the upper bound a "
                "curator can prove from single-column counts (orange), the sharper upper bound once it also "
                f"holds the {len(curves.pairs)} pair table(s) it may ask for within the budget "
                f"({_pct(budget)}, rare values redacted; blue), and a lower bound (dotted). An upper bound at the "
                "top (all users) is no guarantee. The grey line marks the release's k.",
            ),
            paragraph(
                f"At k = {k}: truth {_pct(here['truth'])}; single-column bound {bound_text(here['single'])}; "
                f"pair bound {bound_text(here['pairs'])}"
                + (f" (pairs asked: {', '.join(' × '.join(p) for p in curves.pairs)})" if curves.pairs else
                   " (no pair table fits the budget)")
                + ". Both upper bounds are never below the truth; at the top of the plot they guarantee nothing.",
            ),
        )

    def bound_cell(x: float) -> str:
        return bound_text(x, prefix="≤ ")

    section.add(
        table(
            [
                ("true exposure", _pct(s.exposure), "counted on the joint table"),
                ("lower (max of single columns)", _pct(s.bounds["lower"]), "the truth is at least this; not a guarantee"),
                ("support: t × product of supports", bound_cell(s.bounds["support"]), "Theorem 2, nothing sacrificed"),
                ("Theorem 2, best sacrificed values", bound_cell(s.bounds["theorem2"]), "upper bound"),
                ("Theorem 3, optimised over c", bound_cell(s.bounds["theorem3"]), "upper bound, no support size used"),
                ("best upper bound", bound_cell(best), "what the plan uses"),
            ],
            ["quantity", f"share of users in groups < {k}", "note"],
            caption="The truth beside the bounds from single-column counts (anonymity notes §2); "
            "'no guarantee' is an upper bound of 1 (all users)",
        ),
        paragraph(
            f"Entropy H = {s.entropy_bits:.3f} bits measures how spread out the combinations are. The popular "
            f"reading 'each combination is shared by about n / 2^H = {s.n / 2**s.entropy_bits:,.0f} users' holds "
            f"only for near-uniform data. What H alone guarantees at this k: {bound_text(s.entropy_bound)} "
            f"(H / log2(1/t)); the sharper form: {bound_text(s.entropy_bound_sharp)}; here the truth is "
            f"{_pct(s.exposure)}.",
        ),
        table(
            [(c.column, c.support, _pct(c.exposure_alone), _pct(c.exposure_without)) for c in s.per_column],
            ["column", "support (values)", f"exposed alone (< {k})", f"exposed without it (< {k})"],
            caption="Per-column contributions (share of users in groups < k): a large drop when a column is left "
            "out marks the riskiest column",
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
            f"{released}; {bound_text(plan.bound, prefix='bound ')} ({plan.method}, {plan.search} search over "
            "column sets)."
        ),
        table(
            sorted((c, in_percent(why)) for c, why in plan.excluded.items()),
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
                ("bound", NO_GUARANTEE if is_vacuous(plan.bound) else 100 * plan.bound,
                 "" if is_vacuous(plan.bound) else "%"),
            ]
        ),
        *_plan_blocks(plan),
    )
    summary = (
        f"Release {len(plan.columns)} column(s) ({', '.join(plan.columns) or 'none'}); {bound_text(plan.bound)} "
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
    # lazy: start-up time
    import matplotlib

    matplotlib.use("Agg", force=False)
    # lazy: start-up time
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
                ("expected re-identifications", f"{ir.expected_reidentifications:,.1f}", ""),
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
            _pct(ld.not_diverse(2, column=s.column)),
            _pct(ld.not_diverse(2, kind="entropy", column=s.column)),
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
            "re-identifying anyone. Distinct l counts values; entropy l = exp(H) also needs them balanced; "
            f"recursive ({ld.c:g}, l) asks that the most common value is less than {ld.c:g} times the rest; "
            "t-closeness is the largest distance between a group's distribution of the sensitive value and the "
            "whole table's (0 = no group differs, 1 = as far apart as possible)."
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
        paragraph(
            "A minimal sample unique (MSU) is a smallest set of column values that only one record has; "
            "the DIS-SUDA score of a record (0..1) grows with its number of small MSUs, i.e. with how easily "
            "it is singled out."
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
    plan: ReleasePlan | None = None,
) -> Section:
    """:func:`risk_section` with the disclosure-review measures appended: the per-record risk
    histogram and global risk (with ``weights``, the Benedetti-Franconi model), an l-diversity table
    when ``sensitive`` columns are given, SUDA2 with ``suda``; their figures go into the section data
    under ``individual_risk``, ``l_diversity`` and ``suda2``."""
    section = risk_section(
        data, columns, k=k, budget=budget, missing=missing, plot=plot, include_plan=include_plan, plan=plan
    )
    blocks, payload = risk_measure_blocks(
        data, columns, weights=weights, sensitive=sensitive, suda=suda, missing=missing, plot=plot
    )
    section.add(*blocks)
    section.data.update(payload)
    return section
