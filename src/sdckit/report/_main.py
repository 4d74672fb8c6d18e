"""The main report: every area's section for one dataset, and a summary in plain words.

``build_report()`` is what ``sdckit report`` and ``make demo`` run; with no data it uses the bundled
Adult data and the defaults of :mod:`sdckit.datasets`. The sections, in page order:

===========  ============================================================================
summary      what is safe to release and what it costs, in plain words
data         the data at a glance (rows, columns, supports, missing values)
risk         k-anonymity, uniques, the exposure curve beside the bounds from marginals
plan         what a curator behind a shuffler could release at k and budget
microaggregation  microaggregation of the numeric columns: information loss and utility
spectral     additive noise for PCA: fitted spectrum, U(t), privacy–utility curve
protocol     the shuffle protocol run on loopback (only with ``simulate_protocol``)
release      what the pipeline's masking steps did (only when the pipeline has steps)
===========  ============================================================================
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import polars as pl

from sdckit._io import DataSource, check_numeric
from sdckit.report._report import Block, Report, Section, figure, metrics, paragraph, table

if TYPE_CHECKING:
    from sdckit.pipeline import PipelineConfig
    from sdckit.pipeline._run import StepLog
    from sdckit.risk import Marginals, ReleasePlan

SECTION_IDS: tuple[str, ...] = ("summary", "data", "risk", "plan", "microaggregation", "spectral")
"""Sections every main report has (``release`` joins when the pipeline has masking steps)."""

Advance = Callable[..., None]


def _pct(x: float) -> str:
    return f"{100 * x:.3g}%"


def _plan_figure(marginals: Marginals, plan: ReleasePlan, all_columns: Sequence[str]) -> Any:
    """Bound from marginals against k, for every quasi-identifier and for the planned columns."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from sdckit.risk import joint_exposure_bound

    ks = np.unique(np.geomspace(1, 100, 40).astype(int))
    fig, ax = plt.subplots(figsize=(7.0, 3.6))
    every = np.asarray(joint_exposure_bound(marginals, k=ks, columns=list(all_columns)), dtype=float)
    ax.plot(ks, every, label=f"all {len(all_columns)} quasi-identifiers", color="#b33")
    if plan.columns:
        planned = np.asarray(joint_exposure_bound(marginals, k=ks, columns=list(plan.columns)), dtype=float)
        ax.plot(ks, planned, label=f"planned release ({len(plan.columns)} columns)", color="#2f5aa8")
    ax.axhline(plan.budget, color="grey", linestyle="--", linewidth=0.9, label=f"budget {_pct(plan.budget)}")
    ax.axvline(plan.k, color="grey", linewidth=0.8)
    ax.set_xscale("log")
    ax.set_ylim(0, 1.02)
    ax.set_xlabel("k (group size)")
    ax.set_ylabel("bound on share of users in groups < k")
    ax.legend(fontsize=8, loc="lower right")
    ax.grid(alpha=0.3)
    fig.tight_layout()
    return fig


def _curator_section(frame: pl.DataFrame, qis: Sequence[str], plan: ReleasePlan) -> Section:
    from sdckit.report._risk import plan_section
    from sdckit.risk import Marginals

    section = plan_section(plan)
    section.title = "What a curator behind a shuffler could release"
    marginals = Marginals.from_data(frame, list(qis))
    intro: list[Block] = [
        paragraph(
            "In the shuffle protocol a curator never sees a user's row: it receives each column's values "
            "separately, shuffled, and so knows only single-column counts (marginals). From those alone it "
            "bounds the share of users who would be in groups smaller than k if a set of columns were released "
            "together (Theorems 2 and 3 of arXiv:2201.12306), and keeps the largest set whose bound fits the "
            "budget (global suppression). The bound is a guarantee: the true exposure is never above it."
        )
    ]
    section.blocks[0:0] = intro
    section.add(
        figure(
            _plan_figure(marginals, plan, qis),
            caption="Bound from marginals on the share of users in groups smaller than k: every quasi-identifier "
            "against the planned release; the dashed line is the budget, the vertical line the chosen k.",
        )
    )
    return section


def _release_section(steps: Sequence[StepLog]) -> Section:
    section = Section("release", "What the masking steps did", data={"steps": [s.to_dict() for s in steps]})
    section.add(
        table(
            [(i + 1, s.kind, ", ".join(s.columns) or "–", s.description) for i, s in enumerate(steps)],
            ["step", "kind", "columns", "effect"],
        )
    )
    section.summary = " ".join(s.description for s in steps)
    return section


def _summary_section(sections: Sequence[Section], plan: ReleasePlan, qis: Sequence[str], config: PipelineConfig) -> Section:
    risk = next((s for s in sections if s.id == "risk"), None)
    exposure = risk.data["summary"]["exposure"] if risk is not None else float("nan")
    unique = risk.data["summary"]["n_unique"] if risk is not None else 0
    excluded = [c for c in qis if c not in plan.columns]
    safe = (
        f"Safe to release as they are: {', '.join(plan.columns)}. Together they leave at most "
        f"{_pct(plan.bound)} of users in groups smaller than k = {plan.k} (budget {_pct(plan.budget)}), "
        "a guarantee computed from single-column counts only."
        if plan.columns
        else f"No quasi-identifier fits the budget of {_pct(plan.budget)} at k = {plan.k}: release none of them "
        "as they are, or coarsen them first."
    )
    costs = (
        f"Cost: {len(excluded)} of {len(qis)} quasi-identifiers are withheld ({', '.join(excluded)})."
        if excluded
        else "Cost: no quasi-identifier has to be withheld."
    )
    lines = [
        f"Released as is, the {len(qis)} quasi-identifiers put {_pct(exposure)} of users in groups smaller than "
        f"k = {config.k} ({unique:,} users are unique).",
        safe,
        costs,
    ]
    lines += [s.summary for s in sections if s.id in ("microaggregation", "spectral", "protocol", "release") and s.summary]
    section = Section(
        "summary",
        "Summary",
        data={"released_columns": list(plan.columns), "withheld_columns": excluded, "exposure_as_is": exposure,
              "bound_of_release": plan.bound, "k": plan.k, "budget": plan.budget},
    )
    section.add(
        metrics(
            [
                (f"users in groups < {config.k}, as is", 100 * exposure, "%"),
                ("bound after the plan", 100 * plan.bound, "%"),
                ("quasi-identifiers released", len(plan.columns), f" of {len(qis)}"),
            ]
        ),
        *[paragraph(line) for line in lines],
        paragraph(
            "Exposure is an average over users: low exposure does not mean nobody is unique, and several "
            "releases that share columns can be joined. Units: shares of users (0–100 %), leakage in nats, "
            "information loss in percent of the total sum of squares.",
            note=True,
        ),
    )
    section.summary = " ".join(lines[:3])
    return section


def assemble_report(
    config: PipelineConfig,
    frame: pl.DataFrame,
    source_name: str,
    plan: ReleasePlan,
    steps: Sequence[StepLog] = (),
    *,
    advance: Advance | None = None,
    n_dropped: int = 0,
) -> Report:
    """Build every section of the main report for ``frame`` under ``config``.

    ``n_dropped`` (rows removed by ``missing: drop``) is stated in the inputs and the data section.
    """
    from sdckit.pipeline._config import MicroaggregateStep, NoiseStep
    from sdckit.report._microagg import microagg_section
    from sdckit.report._overview import overview_section
    from sdckit.report._risk import risk_section
    from sdckit.report._spectral import spectral_section

    tick = advance or (lambda *_a, **_k: None)
    qis = list(config.quasi_identifiers or ())
    numeric = list(config.numeric or ())
    inputs: dict[str, Any] = {"data": source_name, "rows": frame.height}
    if n_dropped:
        inputs["rows dropped (missing values)"] = n_dropped
    rep = Report(config.name, inputs=inputs, parameters=config.to_dict(), seed=config.seed)
    sections: list[Section] = []
    tick(description="The data at a glance")
    overview = overview_section(frame)
    if n_dropped:
        overview.data["n_dropped_missing"] = n_dropped
        overview.add(paragraph(f"{n_dropped:,} row(s) with a missing value were dropped (missing: drop) before this."))
    sections.append(overview)
    tick(description="Re-identification risk")
    sections.append(risk_section(frame, qis, k=config.k, budget=config.budget, missing=config.missing, include_plan=False))
    tick(description="Release plan")
    sections.append(_curator_section(frame, qis, plan))
    if len(numeric) >= 2:
        X, names = check_numeric(frame, numeric, missing="drop")
        k_micro = next((s.k for s in config.steps if isinstance(s, MicroaggregateStep)), 3)
        tick(description="Microaggregation")
        sections.append(microagg_section(X, names, k=k_micro, seed=config.seed))
        eps = next((s.epsilon for s in config.steps if isinstance(s, NoiseStep)), 1.0)
        tick(description="Noise for private PCA")
        sections.append(spectral_section(X, names, seed=config.seed, budget_nats=eps))
    else:
        for sid, title in (("microaggregation", "Microaggregation"), ("spectral", "Additive noise for PCA")):
            sections.append(
                Section(sid, title).add(
                    paragraph("This needs at least two numeric columns; list them under `numeric` in the pipeline.")
                )
            )
    if config.simulate_protocol:
        from sdckit.protocol import simulate
        from sdckit.report._protocol import protocol_section

        tick(description=f"Shuffle protocol with {config.simulate_protocol:,} users")
        result = simulate(
            frame, qis, k=config.k, budget=config.budget, users=config.simulate_protocol, seed=config.seed
        )
        sections.append(protocol_section(result))
    if steps:
        sections.append(_release_section(steps))
    summary = _summary_section(sections, plan, qis, config)
    for section in [summary, *sections]:
        rep.add(section)
    return rep


def build_report(
    source: DataSource | None = None,
    *,
    config: PipelineConfig | None = None,
    seed: int | None = None,
    advance: Advance | None = None,
) -> Report:
    """The main report for ``source`` (default: the bundled Adult data with its default columns).

    ``config`` (a :class:`~sdckit.pipeline.PipelineConfig`) sets the columns, k, budget and steps;
    ``source`` and ``seed``, when given, override its input and seed.
    """
    from dataclasses import replace

    from sdckit.pipeline import PipelineConfig
    from sdckit.pipeline._run import run_pipeline

    cfg = config or PipelineConfig()
    if source is not None:
        if not isinstance(source, str):
            raise TypeError("build_report takes a path; for a frame, use sdckit.pipeline.run_pipeline")
        cfg = replace(cfg, input=source)
    if seed is not None:
        cfg = replace(cfg, seed=seed)
    return run_pipeline(cfg, advance=advance).report
