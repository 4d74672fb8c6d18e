"""Run a release pipeline in memory: read, resolve the roles, plan, apply the steps, measure, shuffle.

The one function, :func:`run_pipeline`, takes a validated :class:`PipelineConfig` and returns a
:class:`PipelineResult` (the protected table, the plan, a log of what each step touched, the
measures of the input and of the release). The report is rendered from that result by
:func:`sdckit.report.build_report`; writing files is left to :func:`write_outputs`, so the run
itself is testable without touching the disk. Each step is a :class:`~sdckit.pipeline._steps.Step`
run through its ``run`` (``apply`` and the randomness logged); the loop never asks what it is.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
from numpy.typing import NDArray

from sdckit._io import check_numeric
from sdckit._io._survey import SurveyLabels, declared_missing_text, survey_name_problem, value_labels_text
from sdckit.errors import ConfigError, SdcWarning
from sdckit.microagg._relations import (
    MIN_ROWS_PER_COLUMN,
    LinearRelation,
    LinearRelationError,
    check_linear_relations,
    enough_rows,
    find_linear_relations,
)
from sdckit.pipeline._config import DEFAULT_NAME, PipelineConfig
from sdckit.pipeline._linked import ghost_suppress, link_columns, scenario
from sdckit.pipeline._loss import key_warnings, step_loss_warnings
from sdckit.pipeline._outputs import write_outputs
from sdckit.pipeline._read import load_input, survey_labels
from sdckit.pipeline._resolve import guess_columns, resolve_roles
from sdckit.pipeline._result import PipelineResult
from sdckit.pipeline._roles import Roles
from sdckit.pipeline._steps import SUPPRESSED, Step, StepContext, StepLog, merge_small_strata
from sdckit.plan import plan_release
from sdckit.risk import Marginals
from sdckit.risk._measures._attacks import AttackSettings
from sdckit.risk._measures._posterior import row_posterior
from sdckit.risk._measures._posterior_pass import PosteriorPassError, suppress_posterior
from sdckit.risk._measures._release import measure_release

__all__ = ["SUPPRESSED", "PipelineResult", "StepLog", "guess_columns", "merge_small_strata", "run_pipeline", "write_outputs"]

Advance = Callable[..., None]


def _suppressed_cells(before: pl.DataFrame, after: pl.DataFrame) -> dict[str, NDArray[np.bool_]]:
    """Per released column, the cells a step set to missing (missing after, not before): a written
    ``.sav``/``.dta`` declares them as the suppression code, not as an answer's missing value."""
    if before.height != after.height:
        return {}
    return {
        c: after[c].is_null().to_numpy() & ~before[c].is_null().to_numpy()
        for c in after.columns
        if c in before.columns
    }


def _check_relations(frame: pl.DataFrame, config: PipelineConfig, roles: Roles) -> tuple[LinearRelation, ...]:
    """Before masking: refuse when a linear relation ties the masked numeric columns to released unmasked ones."""
    masked: set[str] = set()
    dropped: set[str] = set()
    for step in config.steps:
        if step.masks_amounts:
            masked.update(step.columns_touched(roles))
        elif step.drops_columns:
            dropped.update(step.columns_touched(roles))
        masked.update(step.coarsened_columns(roles))  # a banded column gives no exact value back
    released = [c for c in roles.released(frame.columns) if c not in dropped]
    schema = frame.schema  # once: building it costs O(columns)
    categorical = set(roles.categorical)  # codes, not amounts: never a term of a relation
    numeric = [c for c in released if schema[c].is_numeric() and schema[c] != pl.Boolean and c not in categorical
               and frame[c].null_count() < frame.height]  # a column missing in every row is in no relation
    if len(numeric) < 2:
        return ()
    x, names = check_numeric(frame, numeric, missing="drop")
    live = int(np.sum(np.nanstd(x, axis=0) > 0)) if x.shape[0] else 0
    if masked and not enough_rows(x.shape[0], live):
        warnings.warn(
            f"{config.source}: linear relations not checked: {x.shape[0]:,} complete rows for {live} numeric columns "
            f"(at least {MIN_ROWS_PER_COLUMN} rows per column are needed: with fewer, any columns look related).",
            SdcWarning,
            stacklevel=3,
        )
        return ()
    if config.allow_linear_relations or not masked:
        return tuple(find_linear_relations(x, list(names), prefer=[c for c in names if c in masked]))
    try:
        return tuple(check_linear_relations(x, list(names), masked=masked, released=released))
    except LinearRelationError as err:
        raise ConfigError(f"{config.source}: {err}".replace("--allow-linear-relations, allow_linear_relations=True, or ", "")) from None


def _check_release_names(config: PipelineConfig, released: Sequence[str]) -> None:
    """Before any work: a ``.sav``/``.dta`` release refuses a column name SPSS or Stata does not accept."""
    if not config.output_data:
        return
    ending = Path(str(config.output_data)).suffix.lower()
    problem = survey_name_problem(released, ending)
    if problem is not None:
        raise ConfigError(f"{config.source}: output.data: {problem}.")


def run_pipeline(config: PipelineConfig, *, advance: Advance | None = None, report: bool | None = None) -> PipelineResult:
    """Run ``config`` end to end in memory; see :func:`write_outputs` to write the files.

    Steps: read the input; resolve the column roles; check linear relations among the numeric
    columns; plan the release at k and budget from single-column marginals (what a curator behind
    a shuffler sees); apply the masking steps in order; keep only the columns with a releasing
    role; measure the release itself (:func:`sdckit.risk.measure_release`) beside the input.
    Every row of the input stays in the output, in random order (OS entropy; the input's order
    with ``shuffle_rows: false``). The report is rendered from the result by
    :func:`sdckit.report.build_report` (``report=`` is deprecated and ignored).
    """
    if report is not None:
        warnings.warn(
            "run_pipeline(report=...) is deprecated and ignored: the result holds no report; render it with "
            "sdckit.report.build_report(result).",
            DeprecationWarning,
            stacklevel=2,
        )
    if config.engine != "polars":
        raise ConfigError(
            f"{config.source}: engine: {config.engine}: run_pipeline works in memory; run this pipeline with "
            "`sdckit run` or sdckit.pipeline.run_distributed (the release is written as Parquet part files)."
        )
    tick = advance or (lambda *_a, **_k: None)
    tick(description="Reading the input")
    frame, source_name, n_dropped = load_input(config)
    numeric_guessed = not config.numeric and not config.uses_adult
    labels_in = survey_labels(config)
    if labels_in is not None and any(m.shape[0] != frame.height for m in labels_in.declared.values()):
        labels_in = replace(labels_in, declared={})  # `missing: drop` dropped every row holding one
    config, roles = resolve_roles(config, frame, labels_in)
    _check_release_names(config, roles.released(frame.columns))
    if config.name == DEFAULT_NAME:
        short = "UCI Adult" if config.uses_adult else source_name
        config = config.replace(name=f"Release report: {short}")
    config, linked = link_columns(config, frame)  # linked keep columns become quasi-identifiers
    qis = config.quasi_identifiers or ()
    step_qis = tuple(q for q in qis if q not in linked.names or q in linked.step_keys)
    relations = _check_relations(frame, config, roles)
    tick(description="Planning the release")
    plan = plan_release(
        Marginals.from_data(frame, list(qis), missing="value"),
        k=config.k,
        budget=config.budget,
        method=config.bound_method,
    )
    protected = frame
    known = frame  # what an attacker knows of each person: the input after the public recodings
    logs: list[StepLog] = []
    masked: set[str] = set()
    base = config.step_seed
    loss: list[str] = []
    coarsened: set[str] = set()
    released_roles = set(roles.released(frame.columns))
    for i, step in enumerate(config.steps):
        tick(description=f"Step {i + 1}: {step.kind}")
        ctx = StepContext(
            source=config.source, index=i, k=config.k, budget=config.budget, bound_method=config.bound_method,
            quasi_identifiers=step_qis, numeric=tuple(config.numeric or ()), linked=linked.step_keys,
            categorical=roles.categorical, seed=None if base is None else base + i, plan=plan,
            masked=frozenset(masked), household=roles.household, household_columns=roles.household_columns,
            weight=roles.weight[0] if roles.weight else None, declared_missing=declared_missing_text(labels_in),
            value_labels=value_labels_text(labels_in, protected),
        )
        before = protected
        protected, log = step.run(protected, ctx)
        protected = ghost_suppress(before, protected, linked)
        _check_households_whole(protected, roles, f"{ctx.where}.{step.kind}")
        loss += step_loss_warnings(i, log, before, protected, released_roles, config.warn_loss_share)
        coarsened.update(step.coarsened_columns(roles))
        masked.update(c for c in step.masked_columns(log) if c in protected.columns)
        known = _known_after(known, before, protected, step, log)
        logs.append(log)
    released = roles.released(protected.columns)
    not_released = roles.not_released(frame.columns)
    not_released.update({c: "suppressed by a step" for c in frame.columns if c not in protected.columns and c not in not_released})
    if roles.household is not None and roles.household in released:
        seed = None if base is None else base + len(config.steps) + 1
        protected = protected.with_columns(fresh_household_ids(protected[roles.household], seed))
    protected = protected.select(released)
    weight = roles.weight[0] if roles.weight else None
    entity = roles.household
    input_columns = roles.released(frame.columns)
    if entity is not None and entity not in input_columns:
        input_columns = (*input_columns, entity)
    known_qis = known.select([c for c in known.columns if c in set(qis) | {weight}])
    categorical = set(roles.categorical)
    masked_numeric = [
        c for c in masked
        if c in protected.columns and frame.schema[c].is_numeric() and protected.schema[c].is_numeric() and c not in categorical
    ]  # a recoded age (bands) is a category now
    # the household id is a fresh random number: it says who lives together (household risk), not who a row is
    features = [c for c in protected.columns if c not in {*qis, weight, entity}]
    if config.posterior_pass and known_qis.height == protected.height:
        tick(description="Suppressing what the other columns reveal")
        protected, log = _posterior_pass(config, protected, known_qis, qis, features, masked_numeric)
        logs.append(log)
        pass_figures: dict[str, Any] | None = log.details
    else:
        pass_figures = None
    tick(description="Measuring the release")
    sensitive = list(config.sensitive or ())
    input_measure = measure_release(
        frame.select(input_columns), quasi_identifiers=qis, k=config.k, budget=config.budget,
        sensitive=sensitive, missing_semantics=config.missing_semantics, weights=weight,
        categorical=roles.categorical, entity=entity,
    )
    release_measure = measure_release(
        protected, quasi_identifiers=qis, k=config.k, budget=config.budget, sensitive=sensitive,
        original=frame, masked=sorted(masked_numeric, key=list(frame.columns).index),
        missing_semantics=config.missing_semantics, weights=weight, categorical=roles.categorical, known=known_qis,
        entity=entity,
        attacks=_attack_settings(config),
    )
    # the attacker's posterior on each person's row given every released column (aligned: before the shuffle)
    posterior = row_posterior(
        protected, known_qis, list(qis), k=config.k, features=features, masked=masked_numeric,
    ) if known_qis.height == protected.height else None
    scenarios = [scenario("the quasi-identifiers (the headline)", protected, known_qis, qis, config.k)]
    wider = [c for c in (config.attacker_knows or ()) if c in protected.columns and c not in qis]
    if wider:
        scenarios.append(scenario(
            "a wider attacker (attacker_knows)", protected, known.select([c for c in known.columns if c in {*qis, *wider}]),
            [*qis, *wider], config.k, extra=wider,
        ))
    seen = [*key_warnings(frame, qis, coarsened, config.warn_key_categories_share), *loss]
    if seen:
        release_measure = replace(release_measure, warnings=(*release_measure.warnings, *seen))
    labels = (labels_in or SurveyLabels()).select(protected.columns).with_suppressed(
        _suppressed_cells(frame, protected)
    )
    if config.shuffle_rows:
        # after the consistent count, which the pipeline measures with the rows still aligned
        order = np.random.default_rng(None if base is None else base + len(config.steps)).permutation(protected.height)
        protected = protected[order]
        labels = labels.reordered(order)
    else:
        order = None
    return PipelineResult(
        config=config, protected=protected, plan=plan, steps=tuple(logs), roles=roles,
        not_released=not_released, input_measure=input_measure, release_measure=release_measure,
        relations=relations, source_name=source_name, input_frame=frame, n_dropped=n_dropped,
        numeric_guessed=numeric_guessed, labels=labels, known=known_qis, row_order=order,
        linked=linked, scenarios=tuple(scenarios), posterior=posterior, posterior_pass=pass_figures,
    )


def _posterior_pass(
    config: PipelineConfig, protected: pl.DataFrame, known: pl.DataFrame, qis: Sequence[str], features: Sequence[str],
    masked: Sequence[str],
) -> tuple[pl.DataFrame, StepLog]:
    """After the steps: suppress the released values that carry a posterior above its bound
    (:func:`sdckit.risk._measures._posterior_pass.suppress_posterior`), logged as a step of its own."""
    base = config.step_seed
    try:
        done = suppress_posterior(
            protected, known, list(qis), k=config.k, features=features, masked=masked,
            cell_bound=config.posterior_bound, seed=None if base is None else base + len(config.steps) + 2,
        )
    except PosteriorPassError as err:
        raise ConfigError(f"{config.source}: the posterior pass: {err}") from None
    cells = done.n_cells
    total = protected.height * max(protected.width, 1)
    log = StepLog(
        kind="posterior_pass", columns=tuple(done.cells),
        details={**done.to_dict(), "suppressed_cells": cells, "information_loss": 100.0 * cells / total},
        description=done.describe(),
    )
    return done.release, log


def _check_households_whole(frame: pl.DataFrame, roles: Roles, where: str) -> None:
    """Refuse a step that left a household-level column with two values (or a value and a suppressed
    cell) in one household: the release would show which members were masked."""
    if roles.household is None or roles.household not in frame.columns:
        return
    for c in roles.household_columns:
        if c not in frame.columns:
            continue
        bad = frame.group_by(roles.household).agg(pl.col(c).n_unique().alias("__n")).filter(pl.col("__n") > 1)
        if bad.height:
            raise ConfigError(
                f"{where}: left household-level column {c!r} different between members of {bad.height:,} households "
                f"(e.g. household {bad.sort(roles.household)[roles.household][0]!r}); a household-level value is masked "
                f"for every member or none. Leave {c!r} out of this step, or out of household_columns."
            )


def fresh_household_ids(ids: pl.Series, seed: int | None) -> pl.Series:
    """Each household's id replaced by a fresh random number 1..m (OS entropy unless ``seed``): members
    stay linked to one another, and nothing links the release's ids to the input's."""
    uniq = ids.unique()
    fresh = np.random.default_rng(seed).permutation(uniq.len()) + 1
    table = pl.DataFrame({"__old": uniq, "__new": fresh.astype(np.int64)})
    mapped = pl.DataFrame({"__old": ids}).join(table, on="__old", how="left", maintain_order="left")["__new"]
    return mapped.alias(ids.name)


def _attack_settings(config: PipelineConfig) -> AttackSettings | None:
    """The attacks of the release measure: from OS entropy, or from the seed in a reproducible run."""
    section = config.attacks
    if not section.run:
        return None
    base = config.step_seed
    return AttackSettings(
        n_attacks=section.n_attacks, n_control=section.n_control, budget=section.budgets(),
        seed=None if base is None else base + len(config.steps) + 1,
    )


def _known_after(known: pl.DataFrame, before: pl.DataFrame, after: pl.DataFrame, step: Step, log: StepLog) -> pl.DataFrame:
    """The attacker's knowledge after a step: a public recoding (recode, top_code) or a masking that
    changes values (PRAM, microaggregation, noise: the released value then stands for the person's)
    moves it; a suppression (local_suppression, the ``*`` of small_strata: merge) does not."""
    changed = [
        c for c in after.columns
        if c in before.columns and step.moves_knowledge(c, log) and not after[c].equals(before[c])
    ]
    return known.with_columns([after[c] for c in changed]) if changed else known
