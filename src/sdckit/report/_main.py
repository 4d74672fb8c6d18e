"""The main report: every area's section for one dataset, and a summary in plain words.

``build_report(result)`` renders a pipeline run (``sdckit report`` and ``make demo`` first run the
pipeline, then render; the report itself runs nothing of it). Each heading says whether the
section measures the input or the release. The sections, in page order:

=================  ======================================================================
summary            what the release did: its figure against the budget, its risk, every warning
data               the input at a glance (rows, columns, supports, missing values)
release_check      input and release side by side, measured on the release as written; roles
release_risk       the release's risk a reviewer signs, beside the input's: individual and
                   global risk with the weights, k-anonymity, l-diversity, interval disclosure,
                   information loss per categorical quasi-identifier, PRAM matrices
risk               the input's re-identification risk, as is (exposure curve, bounds)
release            what the pipeline's masking steps did (only when the pipeline has steps)
plan               experiment on the input: what a curator behind a shuffler could release
microaggregation   experiment on the input: MDAV utility table
spectral           experiment on the input: additive noise for private PCA
protocol           simulation on the input: the shuffle protocol on loopback
=================  ======================================================================

The experiments run only when the pipeline lists them (``experiments: [curator_plan,
microaggregation, spectral]``; ``sdckit report`` without a pipeline runs all three); on guessed
numeric columns they use at most :data:`~sdckit.pipeline._config.EXPERIMENT_MAX_COLUMNS`.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import polars as pl

from sdckit._io import check_numeric
from sdckit.report._fmt import pct as _pct
from sdckit.report._overview import overview_section
from sdckit.report._release_check import alert, posterior_text, release_check_section, verdict
from sdckit.report._release_risk import release_risk_section, warning_blocks
from sdckit.report._report import Block, Report, Section, figure, metrics, paragraph, table
from sdckit.report._spectral import spectral_section

if TYPE_CHECKING:
    from sdckit.pipeline._run import PipelineResult, StepLog
    from sdckit.plan import ReleasePlan
    from sdckit.risk import Marginals

SECTION_IDS: tuple[str, ...] = ("summary", "data", "release_check", "release_risk", "risk")
"""Sections every main report has (``release`` joins when the pipeline has masking steps)."""

EXPERIMENT_SECTIONS: dict[str, str] = {"curator_plan": "plan", "microaggregation": "microaggregation", "spectral": "spectral"}
"""Each experiment (``experiments: [...]``) and the id of its section."""

EXPERIMENT = "Experiment on the input, not the release: "
"""How every experiment's heading begins."""

Advance = Callable[..., None]


def _plan_figure(marginals: Marginals, plan: ReleasePlan, all_columns: Sequence[str]) -> Any:
    """Bound from marginals against k, for every quasi-identifier and for the planned columns."""
    # lazy: start-up time
    import matplotlib

    matplotlib.use("Agg")
    # lazy: start-up time
    import matplotlib.pyplot as plt

    # lazy: start-up time (`import sdckit.report` stays light: the CLI's --json output uses it)
    from sdckit.risk import joint_exposure_bound

    ks = np.unique(np.r_[np.geomspace(2, 100, 40).astype(int), plan.k])
    fig, ax = plt.subplots(figsize=(7.0, 3.6))
    every = 100 * np.asarray(joint_exposure_bound(marginals, k=ks, columns=list(all_columns)), dtype=float)
    ax.plot(ks, every, label=f"all {len(all_columns)} quasi-identifiers", color="#b33")
    if plan.columns:
        planned = 100 * np.asarray(joint_exposure_bound(marginals, k=ks, columns=list(plan.columns)), dtype=float)
        ax.plot(ks, planned, label=f"planned release ({len(plan.columns)} columns)", color="#2f5aa8")
    ax.axhline(100 * plan.budget, color="grey", linestyle="--", linewidth=0.9, label=f"budget {_pct(plan.budget)}")
    ax.axvline(plan.k, color="grey", linewidth=0.8)
    ax.set_xscale("log")
    ax.set_xticks([2, 5, 10, 20, 50, 100], ["2", "5", "10", "20", "50", "100"])
    ax.minorticks_off()
    ax.set_ylim(0, 104)
    ax.set_yticks([0, 20, 40, 60, 80, 100], ["0 %", "20 %", "40 %", "60 %", "80 %", "100 % =\nno guarantee"])
    ax.set_xlabel("k (a user is exposed in a group of fewer than k users)")
    ax.set_ylabel("upper bound on users in groups < k")
    ax.legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.2), ncol=3, frameon=False)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    return fig


def _curator_section(frame: pl.DataFrame, qis: Sequence[str], plan: ReleasePlan) -> Section:
    # lazy: start-up time (loads scipy, sklearn; sdckit.risk too, see _plan_figure)
    from sdckit.report._risk import plan_section
    from sdckit.risk import Marginals

    section = plan_section(plan)
    section.title = EXPERIMENT + "what a curator behind a shuffler could release"
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
    section = Section("release", "The release: what the masking steps did", data={"steps": [s.to_dict() for s in steps]})
    section.add(
        table(
            [(i + 1, s.kind, ", ".join(s.columns) or "–", s.description) for i, s in enumerate(steps)],
            ["step", "kind", "columns", "effect"],
        )
    )
    section.summary = " ".join(s.description for s in steps)
    return section


def _summary_section(sections: Sequence[Section], result: PipelineResult) -> Section:
    plan, config = result.plan, result.config
    qis = list(config.quasi_identifiers or ())
    release, before = result.release_measure, result.input_measure
    assert release is not None
    assert before is not None
    excluded = [c for c in qis if c not in plan.columns]
    headline = verdict(release, config.allow_over_budget)
    lines: list[str] = []
    ir = release.individual_risk
    if ir is not None:
        weights = f"with the sampling weights {release.weights!r}" if release.weights else "the release taken as the population"
        lines.append(
            f"Individual risk of the release ({weights}): {ir['expected_reidentifications']:,.2f} expected "
            f"re-identifications, global risk {_pct(ir['global_risk'])}, highest individual risk {_pct(ir['max_risk'])}."
        )
    lines.append(
        f"As is, the input puts {_pct(before.exposure_at_k)} of users in groups smaller than k = {config.k} on the "
        f"{len(before.quasi_identifiers)} quasi-identifiers ({before.n_unique:,} unique users)."
    )
    if release.fixes:
        lines.append("What would fix it: " + "; ".join(release.fixes) + ".")
    if result.not_released:
        lines.append(
            f"Not released: {', '.join(f'{c} ({why})' for c, why in result.not_released.items())}."
        )
    if excluded and any(s.kind == "suppress" for s in result.steps):
        lines.append(f"The plan withholds {', '.join(excluded)} unless a step masks them.")
    lines += [f"The release's masking steps: {s.summary}" for s in sections if s.id == "release" and s.summary]
    experiments = [s for s in sections if s.id in (*EXPERIMENT_SECTIONS.values(), "protocol")]
    if experiments:
        lines.append(
            f"{len(experiments)} experiment(s) on the input, not on the release, follow the release's sections: "
            + "; ".join(s.title.removeprefix(EXPERIMENT) for s in experiments) + "."
        )
    section = Section(
        "summary",
        "Summary of the release",
        data={
            "headline": "release",
            "exposure_of_release": release.exposure_at_k,
            "k_anonymity_of_release": release.k_anonymity,
            "n_unique_of_release": release.n_unique,
            "within_budget": result.within_budget,
            "refused": result.refused,
            "allow_over_budget": config.allow_over_budget,
            "exposure_as_is": before.exposure_at_k,
            "released_columns": list(release.columns),
            "not_released": dict(result.not_released),
            "planned_columns": list(plan.columns),
            "withheld_columns": excluded,
            "bound_of_plan": plan.bound,
            "k": config.k,
            "budget": config.budget,
            "unit": "share of users (0..1)",
            "expected_reidentifications_of_release": ir["expected_reidentifications"] if ir else None,
            "global_risk_of_release": ir["global_risk"] if ir else None,
            "warnings": list(release.warnings),
            "experiments": [s.id for s in experiments],
        },
    )
    section.add(
        metrics(
            [
                (f"users in groups < {config.k}, in the release", 100 * release.exposure_at_k, "%"),
                ("budget", 100 * config.budget, "%"),
                ("expected re-identifications, release", f"{ir['expected_reidentifications']:,.2f}" if ir else "–", ""),
                (f"users in groups < {config.k}, input as is", 100 * before.exposure_at_k, "%"),
                ("columns released", len(release.columns), f" of {len(result.input_frame.columns) if result.input_frame is not None else len(release.columns)}"),
            ]
        ),
        alert(headline) if not release.within_budget or release.attacks_show_risk else paragraph(headline),
        *([(paragraph if result.posterior_within_budget else alert)(
            posterior_text(result.posterior, config.budget, release.exposure_at_k, result.posterior_pass))] if result.posterior is not None else []),
        *warning_blocks(release.warnings),
        *[paragraph(line) for line in lines],
        paragraph(
            "Exposure is an average over users: low exposure does not mean nobody is unique, and several "
            "releases that share columns can be joined. Units: shares of users (0–100 %), leakage in nats, "
            "information loss in percent of the total sum of squares.",
            note=True,
        ),
    )
    section.summary = headline
    return section


def _experiment_columns(result: PipelineResult) -> tuple[list[str], str]:
    """The numeric columns the microaggregation and private-PCA experiments use, and a note when capped."""
    # lazy: start-up time (loads scipy, sklearn, numba)
    from sdckit.pipeline._config import EXPERIMENT_MAX_COLUMNS

    numeric = list(result.config.numeric or ())
    if result.numeric_guessed and len(numeric) > EXPERIMENT_MAX_COLUMNS:
        note = (
            f"The numeric columns were guessed ({len(numeric):,} of them); this experiment uses the first "
            f"{EXPERIMENT_MAX_COLUMNS} in file order ({', '.join(numeric[:EXPERIMENT_MAX_COLUMNS])}). "
            "Name the columns (numeric: [...] or --numeric) to run it on others."
        )
        return numeric[:EXPERIMENT_MAX_COLUMNS], note
    return numeric, ""


def build_report(
    result: PipelineResult, *, advance: Advance | None = None, verified_on: str | Path | None = None
) -> Report:
    """Render the main report of a pipeline run (:func:`sdckit.pipeline.run_pipeline`); runs nothing of the pipeline.

    The release sections (``release_check``, ``release_risk``, ``release``) render the run's
    :class:`~sdckit.risk.ReleaseMeasure` and step log; the input sections (``data``, ``risk``)
    describe the input as is; the experiments (``plan``, ``microaggregation``, ``spectral``) run on
    the input only when ``config.experiments`` lists them, each headed as an experiment. The
    summary speaks of the release and lists every warning. ``verified_on`` is the data file the
    figures were measured on as written (``result.data_output`` for a report that
    :func:`sdckit.pipeline.write_outputs` writes: it measures the file again first, and writes
    nothing when the figures differ).
    """
    # lazy: start-up time (loads scipy, sklearn, numba)
    from sdckit.pipeline._config import MicroaggregateStep, NoiseStep
    from sdckit.report._microagg import microagg_section
    from sdckit.report._risk import risk_review_section

    config = result.config
    frame = result.input_frame
    if frame is None or result.release_measure is None or result.input_measure is None:
        raise ValueError("build_report renders a completed run: pass the result of sdckit.pipeline.run_pipeline")
    tick = advance or (lambda *_a, **_k: None)
    qis = list(config.quasi_identifiers or ())
    inputs: dict[str, Any] = {"data": result.source_name, "rows": frame.height}
    if not config.read.is_default:  # how the file was read, beside its name (all of it is under parameters.read)
        read = config.read
        inputs["read with"] = (
            f"separator {read.separator or 'sniffed'!r}, encoding {read.encoding}, decimal {read.decimal!r}, "
            f"missing: {', '.join(map(repr, read.na_values)) or 'none'}"
        )
    if result.n_dropped:
        inputs["rows dropped (missing values)"] = result.n_dropped
    rep = Report(config.name, inputs=inputs, parameters=config.to_dict(), seed=config.step_seed)
    sections: list[Section] = []
    tick(description="The input at a glance")
    overview = overview_section(frame)
    overview.title = "The input at a glance"
    if result.n_dropped:
        overview.data["n_dropped_missing"] = result.n_dropped
        overview.add(paragraph(f"{result.n_dropped:,} row(s) with a missing value were dropped (missing: drop) before this."))
    sections.append(overview)
    sections.append(
        release_check_section(
            result.input_measure,
            result.release_measure,
            roles=result.roles,
            not_released=result.not_released,
            relations=result.relations,
            allow_over_budget=config.allow_over_budget,
            reproducible=config.reproducible,
            shuffled=config.shuffle_rows,
            linked=result.linked,
            scenarios=result.scenarios,
            posterior=result.posterior,
            posterior_pass=result.posterior_pass,
        )
    )
    if verified_on is not None:
        sections[-1].data["verified_on_written_file"] = str(verified_on)
    tick(description="Risk of the release")
    sections.append(release_risk_section(result.input_measure, result.release_measure, steps=result.steps))
    tick(description="Re-identification risk of the input")
    with warnings.catch_warnings():  # the roles section already flags weights and identifiers
        warnings.simplefilter("ignore")
        roles = result.roles
        weights = roles.weight[0] if roles is not None and roles.weight else None
        sensitive = [c for c in (roles.sensitive if roles is not None else ()) if c in frame.columns]
        risk = risk_review_section(
            frame, qis, k=config.k, budget=config.budget, missing=config.missing, include_plan=False,
            weights=weights, sensitive=sensitive or None, plan=result.plan,
        )
        risk.title = "Re-identification risk of the input, as is"
        sections.append(risk)
    if result.steps:
        sections.append(_release_section(result.steps))
    experiments = set(config.experiments)
    if "curator_plan" in experiments:
        tick(description="Experiment: release plan")
        sections.append(_curator_section(frame, qis, result.plan))
    numeric, capped = _experiment_columns(result)
    wanted = [(sid, title) for sid, title in (("microaggregation", "microaggregation"),
                                              ("spectral", "additive noise for private PCA")) if sid in experiments]
    if wanted and len(numeric) >= 2:
        X, names = check_numeric(frame, numeric, missing="drop")
        if "microaggregation" in experiments:
            k_micro = next((s.k for s in config.steps if isinstance(s, MicroaggregateStep)), 3)
            tick(description="Experiment: microaggregation")
            micro = microagg_section(X, names, k=k_micro, seed=config.experiment_seed)
            micro.title = EXPERIMENT + micro.title[0].lower() + micro.title[1:]
            sections.append(micro.add(paragraph(capped, note=True)) if capped else micro)
        if "spectral" in experiments:
            nats = next((s.max_leakage_nats for s in config.steps if isinstance(s, NoiseStep)), 1.0)
            tick(description="Experiment: noise for private PCA")
            spectral = spectral_section(X, names, seed=config.experiment_seed, budget_nats=nats)
            spectral.title = EXPERIMENT + spectral.title[0].lower() + spectral.title[1:]
            sections.append(spectral.add(paragraph(capped, note=True)) if capped else spectral)
    else:
        for sid, title in wanted:
            sections.append(
                Section(sid, EXPERIMENT + title).add(
                    paragraph("This needs at least two numeric columns; list them under `numeric` in the pipeline.")
                )
            )
    if config.simulate_protocol:
        # lazy: the protocol extra
        from sdckit.protocol import simulate
        from sdckit.report._protocol import protocol_section

        tick(description=f"Simulation: shuffle protocol with {config.simulate_protocol:,} users")
        sim = simulate(frame, qis, k=config.k, budget=config.budget, users=config.simulate_protocol, seed=config.step_seed)
        protocol = protocol_section(sim)
        protocol.title = "Simulation on the input, not the release: " + protocol.title
        sections.append(protocol)
    summary = _summary_section(sections, result)
    for section in [summary, *sections]:
        rep.add(section)
    return rep
