"""Run a release pipeline: measure the risk, plan the release, apply the masking steps, report.

The one function, :func:`run_pipeline`, takes a validated :class:`PipelineConfig` and returns a
:class:`PipelineResult` (the protected table, the plan, a log of what each step touched, and the
:class:`~sdckit.report.Report`). Writing files is left to :func:`write_outputs`, so the run itself
is testable without touching the disk.
"""

from __future__ import annotations

import difflib
import importlib
import inspect
import json
import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
from numpy.typing import NDArray

from sdckit._io import ReadOptions, check_numeric, read_back_options, read_data, write_table
from sdckit._io._survey import SurveyLabels, read_labels
from sdckit.errors import ConfigError, NonNumericColumnError, SdcError, UnreadableInputError
from sdckit.microagg._relations import (
    LinearRelation,
    LinearRelationError,
    check_linear_relations,
    find_linear_relations,
)
from sdckit.pipeline._config import (
    ANONYMIZE_STEPS,
    DEFAULT_NAME,
    AnonymizeStep,
    CorrelatedNoiseStep,
    MicroaggregateStep,
    NoiseStep,
    PipelineConfig,
    RankSwapStep,
    ReadSection,
    Step,
    SuppressStep,
    _near,
)
from sdckit.pipeline._roles import Flag, Roles, flag_declared, guess_roles
from sdckit.plan import ReleasePlan, plan_release
from sdckit.report._report import Report
from sdckit.risk import Marginals
from sdckit.risk._measures._release import ReleaseMeasure, measure_release

__all__ = ["PipelineResult", "StepLog", "guess_columns", "merge_small_strata", "run_pipeline", "write_outputs"]

Advance = Callable[..., None]


@dataclass(frozen=True)
class StepLog:
    """What one masking step did, in numbers."""

    kind: str
    """The step's kind: ``microaggregate``, ``noise``, ``rank_swap``, ``correlated_noise``, ``suppress``, ..."""
    columns: tuple[str, ...]
    """Columns the step changed or removed."""
    details: dict[str, Any] = field(default_factory=dict)
    """Step-specific figures (information loss in percent, noise variance t, cells changed, ...)."""
    description: str = ""
    """One plain sentence."""

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "columns": list(self.columns), "details": self.details, "description": self.description}


@dataclass(frozen=True)
class PipelineResult:
    """The outcome of a pipeline run."""

    config: PipelineConfig
    """The configuration, with defaults filled in (quasi-identifiers, numeric columns)."""
    protected: pl.DataFrame
    """The release: every row of the input, only the columns with a releasing role, masked columns replaced."""
    plan: ReleasePlan
    """The release plan on the quasi-identifiers at k and budget (from the input's marginals)."""
    steps: tuple[StepLog, ...]
    """What each masking step did, in order."""
    report: Report
    """The HTML report (not yet written)."""
    roles: Roles | None = None
    """Every column's role, with the guesses flagged."""
    not_released: dict[str, str] = field(default_factory=dict)
    """Columns of the input that are not in the release, and why."""
    input_measure: ReleaseMeasure | None = None
    """The input's risk, as if its role columns were released unmasked."""
    release_measure: ReleaseMeasure | None = None
    """The release's risk, measured on ``protected`` (the table as written)."""
    relations: tuple[LinearRelation, ...] = ()
    """Linear relations found among the numeric columns before masking."""
    source_name: str = ""
    """The input's name, for the report."""
    input_frame: pl.DataFrame | None = None
    """The input as read (for the report's input sections)."""
    n_dropped: int = 0
    """Rows removed by ``missing: drop``."""
    numeric_guessed: bool = False
    """True when the numeric columns were guessed (no ``numeric`` given): the experiments then run on
    at most ``EXPERIMENT_MAX_COLUMNS`` of them."""
    labels: Any = None
    """The input's value and variable labels and declared missing values (a
    :class:`~sdckit._io.SurveyLabels`, from an SPSS, Stata or SAS file), written with a ``.sav``/``.dta`` release."""
    known: pl.DataFrame | None = None
    """What an attacker knows of each person (the quasi-identifiers after the public recodings, before
    suppression; and the weight), for the consistent count; never written."""
    row_order: NDArray[np.int64] | None = None
    """The shuffle: released row i is input row ``row_order[i]`` (None: the input's order); kept in
    memory to measure the written file against the input row by row, never written."""

    @property
    def within_budget(self) -> bool:
        """True when the release's exposure at k is at most the budget."""
        return self.release_measure is None or self.release_measure.within_budget

    @property
    def refused(self) -> bool:
        """True when the release is over budget and ``allow_over_budget`` is not set: no data file is written."""
        return not self.within_budget and not self.config.allow_over_budget


def _load(config: PipelineConfig) -> tuple[pl.DataFrame, str, int]:
    """The input as a polars frame, its name, and how many rows ``missing: drop`` removed."""
    if config.uses_adult:
        from sdckit.datasets import load_adult

        return load_adult(), "UCI Adult (bundled, 32,561 rows; Becker & Kohavi 1996, CC BY 4.0)", 0
    assert config.input is not None
    _check_read_applies(config)
    try:
        data = read_data(config.input, missing=config.missing, **config.read.read_kwargs())
    except UnreadableInputError as err:  # its fix in the words of a pipeline file, not of the command line
        if config.source == "the command line":
            raise
        raise UnreadableInputError(f"{config.source}: input: {_pipeline_words(str(err))}") from None
    frame = data.frame
    native = frame.to_native() if not data.is_lazy else frame.collect().to_native()  # type: ignore[union-attr]
    if not isinstance(native, pl.DataFrame):  # pragma: no cover - paths are read with polars
        native = pl.DataFrame(native)
    return native, Path(config.input).name, int(data.n_dropped or 0)


def _survey_labels(config: PipelineConfig) -> SurveyLabels | None:
    """The input's labels and declared missing values (an SPSS, Stata or SAS file), else None."""
    if config.uses_adult or config.input is None:
        return None
    enc = config.read.encoding
    return read_labels(config.input, labels=config.read.labels, encoding=None if ReadOptions(encoding=enc).is_utf8 else enc)


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


_READ_APPLIES = {"csv": ("separator", "encoding", "decimal", "na_values"), "tsv": ("separator", "encoding", "decimal",
                 "na_values"), "excel": ("na_values",), "stat": ("encoding", "labels")}
"""The ``read`` options each input format uses (text files all; spreadsheets the missing markers; SPSS,
Stata and SAS files the encoding); Parquet, JSON lines and R files none."""


def _check_read_applies(config: PipelineConfig) -> None:
    """Refuse a reading option the input's format ignores: a ``na_values: ['-9']`` that does not apply
    would leave -9 counted as a value, and the figures would be of other data than the user meant."""
    from sdckit._io._frames import _format_of

    assert config.input is not None
    default = ReadSection()
    given = [key for key in ReadSection.allowed_keys() if getattr(config.read, key) != getattr(default, key)]
    if not given:
        return
    fmt = _format_of(Path(config.input))
    ignored = [key for key in given if key not in _READ_APPLIES.get(fmt, ())]
    if "labels" in ignored:
        raise ConfigError(
            f"{config.source}: read.labels: {Path(config.input).name!r} has no value labels (read.labels applies to "
            "SPSS, Stata and SAS files); leave read.labels out, or list coded columns under categorical."
        )
    if ignored:
        uses = _READ_APPLIES.get(fmt, ())
        what = f"only {', '.join(f'read.{u}' for u in uses)} applies to it" if uses else "no reading option applies to it"
        raise ConfigError(
            f"{config.source}: read.{ignored[0]}: {Path(config.input).name!r} is not a text file ({what}); leave "
            f"read.{ignored[0]} out, or give a CSV file as input."
        )


def _pipeline_words(message: str) -> str:
    """A reading error's fix in the words of a pipeline file: ``--separator ';' (separator=';' in
    Python)`` -> ``read: {separator: ';'}``."""
    message = re.sub(r" \((?:separator|encoding|decimal)=[^)]* in Python\)", "", message)
    message = message.replace("--na-values", "--na_values")
    return re.sub(r"--(separator|encoding|decimal|na_values) ('[^']*'|[\w-]+)", r"read: {\1: \2}", message)


def _check_columns(frame: pl.DataFrame, columns: Sequence[str], key: str, source: str) -> None:
    for c in columns:
        if c not in frame.columns:
            near = difflib.get_close_matches(c, frame.columns, n=2, cutoff=0.6)
            hint = f" Did you mean {' or '.join(map(repr, near))}?" if near else f" The data has: {', '.join(frame.columns[:15])}."
            raise ConfigError(f"{source}: {key}: column {c!r} is not in the data.{hint}")


def guess_columns(frame: pl.DataFrame) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """Guessed (quasi-identifiers, numeric columns to mask) for data without roles; see :func:`guess_roles`."""
    roles = guess_roles(frame)
    return roles.quasi_identifiers, roles.numeric


NUMERIC_STEPS = (MicroaggregateStep, NoiseStep, RankSwapStep, CorrelatedNoiseStep)
"""The steps that mask the numeric columns (their ``columns``, or the pipeline's ``numeric``)."""


def _step_columns(step: Step) -> tuple[str, ...]:
    if isinstance(step, NUMERIC_STEPS):
        return tuple(step.columns or ())
    if isinstance(step, SuppressStep) and step.columns != "plan":
        return tuple(step.columns)
    if isinstance(step, AnonymizeStep):
        cols = step.params.get("columns")
        if isinstance(cols, str):
            return (cols,)
        if isinstance(cols, (list, tuple)):
            return tuple(str(c) for c in cols)
        if isinstance(cols, dict):
            return tuple(str(c) for c in cols)
    return ()


def _categorical(config: PipelineConfig, frame: pl.DataFrame, labels: SurveyLabels | None) -> tuple[str, ...]:
    """The declared categorical columns, and the labelled columns of the input file not declared numeric."""
    declared = set(config.categorical or ())
    numeric = set(config.numeric or ())
    labelled = {c for c in (labels.labelled if labels is not None else ()) if c not in numeric}
    return tuple(c for c in frame.columns if c in declared | labelled)


def _declared_missing_in(frame: pl.DataFrame, column: str, labels: SurveyLabels | None) -> tuple[float, int] | None:
    """The first SPSS declared missing code (or range) found in a numeric column, and how often."""
    if labels is None or column not in frame.columns or not frame.schema[column].is_numeric():
        return None
    values = frame[column].cast(pl.Float64)
    for spec in labels.missing_ranges.get(column, ()):
        lo, hi = (spec["lo"], spec["hi"]) if isinstance(spec, dict) else (spec, spec)
        if not isinstance(lo, (int, float)):
            continue
        hit = values.filter((values >= lo) & (values <= hi))
        if hit.len():
            return float(hit[0]), int(hit.len())
    return None


def _resolve_roles(
    config: PipelineConfig, frame: pl.DataFrame, labels: SurveyLabels | None = None
) -> tuple[PipelineConfig, Roles]:
    """Fill in the roles (Adult defaults, or guesses flagged with their fix) and check every column exists."""
    src = config.source
    for key in ("quasi_identifiers", "numeric", "sensitive", "weight", "identifiers", "keep", "categorical"):
        _check_columns(frame, getattr(config, key) or (), key, src)
    categorical = _categorical(config, frame, labels)
    for i, step in enumerate(config.steps):
        _check_columns(frame, _step_columns(step), f"steps[{i}].{step.kind}.columns", src)
        if isinstance(step, MicroaggregateStep) and step.strata not in (None, "quasi_identifiers"):
            _check_columns(frame, step.strata or (), f"steps[{i}].microaggregate.strata", src)
    if config.uses_adult and not config.declares_roles:
        from sdckit.datasets import ADULT_NUMERIC, ADULT_QUASI_IDENTIFIERS

        roles = Roles(
            quasi_identifiers=ADULT_QUASI_IDENTIFIERS,
            numeric=ADULT_NUMERIC,
            sensitive=("income",),
            identifiers=("fnlwgt",),
            flags=(
                Flag("fnlwgt", "near-unique", "fnlwgt (the survey weight) has 21,648 values in 32,561 rows and is in the "
                     "public original: withheld by default (it would link records back)."),
            ),
        )
    elif config.quasi_identifiers:
        roles = Roles(
            quasi_identifiers=tuple(config.quasi_identifiers),
            numeric=tuple(config.numeric or ()),
            sensitive=tuple(config.sensitive or ()),
            weight=tuple(config.weight or ()),
            identifiers=tuple(config.identifiers or ()),
            keep=tuple(config.keep or ()),
        )
    else:
        declared = (*(config.numeric or ()), *(config.keep or ()))
        guess = guess_roles(
            frame,
            exclude=declared,
            sensitive=config.sensitive or (),
            weight=config.weight or (),
            identifiers=config.identifiers or (),
            categorical=categorical,
        )
        if not guess.quasi_identifiers:
            how = (
                "pass -q/--quasi-identifiers, e.g. -q age,sex,region"
                if src == "the command line"
                else "e.g. quasi_identifiers: [age, sex, region]"
            )
            raise ConfigError(f"{src}: quasi_identifiers: name the columns an attacker may know; {how}.")
        roles = replace(
            guess,
            numeric=tuple(config.numeric) if config.numeric else (guess.numeric if not config.declares_roles else ()),
            keep=tuple(config.keep or ()),
        )
    roles = replace(roles, categorical=categorical)
    roles = replace(roles, flags=(*roles.flags, *flag_declared(frame, roles)))
    for i, step in enumerate(config.steps):
        if isinstance(step, NUMERIC_STEPS):
            cat = next((c for c in (step.columns or roles.numeric) if c in categorical), None)
            if cat is not None:
                why = "is listed under categorical" if cat in (config.categorical or ()) else "has value labels in the input file"
                raise ConfigError(
                    f"{src}: steps[{i}].{step.kind}.columns: {cat!r} {why}: its values are categories, not amounts to "
                    f"{'average' if step.kind == 'microaggregate' else 'perturb'}. Leave it out of the step (recode or "
                    "pram it instead), or, if it is a number, list it under numeric."
                )
            for c in step.columns or roles.numeric:
                found = _declared_missing_in(frame, c, labels)
                if found is not None:
                    code, n = found
                    raise ConfigError(
                        f"{src}: steps[{i}].{step.kind}.columns: {c!r} holds the declared missing code {code:g} in {n:,} "
                        f"row(s) of the input file: a code, not an amount, that {step.kind} would mix into the masked "
                        "values. Leave the column out of the step, or make the code system-missing before sdckit "
                        f"(SPSS: RECODE {c} ({code:g}=SYSMIS))."
                    )
    for i, step in enumerate(config.steps):
        if isinstance(step, NUMERIC_STEPS) and not (step.columns or roles.numeric):
            raise ConfigError(
                f"{src}: steps[{i}].{step.kind}: no columns to mask; list them in `numeric` or in the step's `columns`."
            )
    config = config.replace(
        quasi_identifiers=roles.quasi_identifiers,
        numeric=roles.numeric or None,
        sensitive=roles.sensitive or None,
        weight=roles.weight or None,
        identifiers=roles.identifiers or None,
        keep=roles.keep or None,
        categorical=roles.categorical or None,
    )
    return config, roles


def _numeric_columns(frame: pl.DataFrame, columns: Sequence[str]) -> NDArray[np.float64]:
    """The columns as floats; a text column or a missing value raises its precise error."""
    try:
        X, _ = check_numeric(frame, list(columns), missing="error")
    except NonNumericColumnError as err:  # often a reading option: a decimal comma, a missing-value marker
        value = str(err.value).strip()
        if re.fullmatch(r"[-+]?\d[\d.]*,\d+", value):
            hint = "The file's decimal mark looks like a comma: read it with read: {decimal: ','}."
        else:
            hint = (f"If {value!r} means missing, list it under read, e.g. read: {{na_values: ['{value}', NA, '']}}; "
                    "otherwise leave the column out of the numeric columns.")
        raise NonNumericColumnError(err.column, err.value, err.row, fix=hint) from None
    return X


SUPPRESSED = "*"
"""The released value of a stratum cell merged away by ``small_strata: merge`` (a category of its own)."""


def merge_small_strata(frame: pl.DataFrame, columns: Sequence[str], k: int) -> tuple[pl.DataFrame, dict[str, int]]:
    """Suppress strata values (to ``*``) until every combination of ``columns`` has at least k rows.

    Greedy local suppression: while some rows are in a combination of fewer than k rows, each such
    row has its next column suppressed, the column with most distinct values first. If the rows
    with every column suppressed are fewer than k, rows of the smallest other combinations join
    them. The columns become text. Returns the frame and the cells suppressed per column.
    """
    cols = list(columns)
    if not cols or frame.height < k:
        return frame, {}
    order = sorted(cols, key=lambda c: -frame[c].n_unique())
    values = {c: np.asarray(frame[c].cast(pl.String).fill_null("<missing>").to_numpy(), dtype=object) for c in cols}
    counts = dict.fromkeys(cols, 0)

    def sizes() -> NDArray[np.int64]:
        df = pl.DataFrame({c: values[c].astype(str) for c in cols})
        return np.asarray(df.select(pl.len().over(cols).alias("n"))["n"].to_numpy(), dtype=np.int64)

    for _ in range(len(cols)):
        small = sizes() < k
        if not small.any():
            break
        done = np.zeros(frame.height, dtype=bool)
        for c in order:
            sel = small & ~done & (values[c] != SUPPRESSED)
            values[c][sel] = SUPPRESSED
            counts[c] += int(sel.sum())
            done |= sel
    all_star = np.logical_and.reduce([values[c] == SUPPRESSED for c in cols])
    if 0 < all_star.sum() < k:
        # too few fully suppressed rows: whole smallest combinations join them (never part of one)
        df = pl.DataFrame({c: values[c].astype(str) for c in cols}).with_row_index("__row")
        groups = (
            df.filter(~pl.Series(all_star))
            .group_by(cols)
            .agg(pl.col("__row"), pl.len().alias("__n"))
            .sort(["__n", pl.col("__row").list.first()])
        )
        for rows in groups["__row"].to_list():
            if all_star.sum() >= k:
                break
            for c in cols:
                counts[c] += int(np.sum(values[c][rows] != SUPPRESSED))
                values[c][rows] = SUPPRESSED
            all_star[rows] = True
    out = frame.with_columns(
        [pl.Series(c, values[c].astype(str)).replace("<missing>", None) for c in cols]
    )
    return out, {c: n for c, n in counts.items() if n}


def _microaggregate(
    frame: pl.DataFrame, step: MicroaggregateStep, columns: tuple[str, ...], qis: Sequence[str]
) -> tuple[pl.DataFrame, StepLog]:
    from sdckit.microagg import Microaggregation, MomentRestorer, PositivityRestorer

    _numeric_columns(frame, columns)  # precise error for text or missing values
    strata: list[str] = []
    if step.strata == "quasi_identifiers":
        strata = [q for q in qis if q in frame.columns and q not in columns]
    elif step.strata:
        strata = [c for c in step.strata if c in frame.columns]
    details: dict[str, Any] = {"method": step.method, "k": step.k}
    merged: dict[str, int] = {}
    if strata:
        details["strata"] = strata
        if step.small_strata == "merge":
            frame, merged = merge_small_strata(frame, strata, step.k)
            details["suppressed_cells"] = merged
    original = frame.select(columns)
    model = Microaggregation(
        k=step.k, method=step.method, columns=list(columns), strata=strata or None, allow_linear_relations=True
    )
    masked = model.fit_transform(frame.select([*columns, *strata])).select(columns)
    details["information_loss_percent"] = float(model.information_loss_)
    details["n_groups"] = int(model.n_groups_)
    what = f"{step.method.upper()} with k = {step.k} on {len(columns)} column(s): IL {model.information_loss_:.2f} %"
    if strata:
        what += f", within strata of {', '.join(strata)}"
        if merged:
            total = sum(merged.values())
            what += (f" ({total:,} strata cells of rare combinations suppressed to '*': "
                     + ", ".join(f"{c} {n:,}" for c, n in merged.items()) + ")")
    if step.positivity != "none":
        restorer = PositivityRestorer(mode=step.positivity, columns=list(columns))
        restorer.fit(original, masked, groups=model.groups_)
        masked = restorer.transform(masked)
        stats = getattr(restorer, "stats_", None)
        if stats is not None and hasattr(stats, "to_dict"):
            details["positivity"] = stats.to_dict()
        what += f"; mean and covariance restored keeping signs ({step.positivity})"
    elif step.restore_moments:
        masked = MomentRestorer(columns=list(columns)).fit(original, masked).transform(masked)
        what += "; mean and covariance restored"
    out = frame.with_columns(masked.select(columns))
    return out, StepLog("microaggregate", (*columns, *merged), details, what + ".")


def _noise(
    frame: pl.DataFrame, step: NoiseStep, columns: tuple[str, ...], seed: int | None
) -> tuple[pl.DataFrame, StepLog]:
    from sdckit.errors import InfeasibleError
    from sdckit.spectral import AdditiveNoise
    from sdckit.spectral._design import design_noise_from_data, noise_for_covariance
    from sdckit.spectral._nongaussian import integer_leakage_bound, leakage_bound, non_gaussianity

    X = _numeric_columns(frame, columns)
    mean, sd = X.mean(axis=0), X.std(axis=0)
    sd = np.where(sd > 0, sd, 1.0)
    corr = np.atleast_2d(np.cov((X - mean) / sd, rowvar=False, ddof=0))  # the covariance t is in units of
    law = step.distribution
    details: dict[str, Any] = {"distribution": law}
    if step.t == "recommended":
        if len(columns) < 2:
            raise ConfigError("noise: t: recommended needs at least two columns (a spectrum to protect); give t.")
        if not math.isfinite(non_gaussianity(law)):
            raise ConfigError(
                f"noise: t: recommended with distribution: {law}: {law} noise has no density, so its leakage "
                "bound is infinite on continuous data (given the noisy answer, the true one is one of "
                "countably many points) and no t meets max_leakage_nats. Use gaussian, laplace or uniform, "
                "or give t (discrete noise suits integer answers)."
            )
        try:
            _, design = design_noise_from_data(X, standardize=True, max_leakage=step.max_leakage_nats, noise=law)
            # the spiked model is a fit: t also meets the budget on the columns' own covariance
            t = max(float(design.t), noise_for_covariance(corr, step.max_leakage_nats, noise=law))
        except InfeasibleError as exc:
            raise ConfigError(f"noise: t: recommended: {exc}") from None
        details.update(
            {"recommended_by": "design_noise", "max_leakage_nats": step.max_leakage_nats, "design": design.to_dict()}
        )
    else:
        t = float(step.t)
    details["t"] = t
    if law == "discrete":
        # integer noise on the raw scale, of variance t times each column's variance (t in the same
        # units as for the other laws); integer answers stay integers
        rng = np.random.default_rng(seed)
        raw = frame.select(columns)
        noisy = pl.DataFrame([
            AdditiveNoise(t=t * float(v), distribution="discrete", random_state=rng).fit_transform(raw.select(c))[c]
            for c, v in zip(columns, X.var(axis=0), strict=True)
        ])
        details["scale"] = "raw units, integer noise of variance t times each column's variance"
        if np.all(np.round(X) == X):
            details["information_leakage_nats"] = integer_leakage_bound(X.var(axis=0), t * X.var(axis=0))
            details["leakage_bound"] = (
                "integer answers and discrete noise: I(X; Y) <= sum_j 1/2 log(2 pi e (Var Y_j + 1/12)) - H(K_j)"
            )
        else:
            details["information_leakage_nats"] = None
            details["leakage_bound"] = (
                "unbounded: discrete noise on non-integer answers (no density; the leakage bound is infinite)"
            )
    else:
        Z = pl.DataFrame(((X - mean) / sd), schema=list(columns), orient="row")
        Zn = AdditiveNoise(t=t, distribution=law, random_state=seed).fit_transform(Z)
        noisy = pl.DataFrame(Zn.to_numpy() * sd + mean, schema=list(columns), orient="row")
        details["scale"] = "standardised columns: t in units of each column's variance"
        bound = leakage_bound(corr, t, noise=law) if t > 0 else None
        finite = bound is not None and math.isfinite(bound.upper)
        details["information_leakage_nats"] = bound.upper if bound is not None and finite else None
        details["leakage_bound"] = bound.applies if bound is not None else "unbounded: no noise (t = 0)"
    out = frame.with_columns(noisy.select(columns))
    leak = details["information_leakage_nats"]
    said = f"information leakage <= {leak:.4g} nats" if leak is not None else "information leakage unbounded"
    what = f"{law.capitalize()} noise of variance t = {t:.3g} on {len(columns)} column(s), {details['scale']}; {said}."
    return out, StepLog("noise", columns, details, what)


def _restore_step(
    before: pl.DataFrame,
    after: pl.DataFrame,
    step: NoiseStep | RankSwapStep | CorrelatedNoiseStep,
    columns: tuple[str, ...],
    log: StepLog,
) -> tuple[pl.DataFrame, StepLog]:
    """A numeric step's ``restore_moments`` / ``positivity``: T(x) = A x + b fitted on (before, after)."""
    from sdckit.microagg import MomentRestorer, PositivityRestorer

    if step.positivity == "none" and not step.restore_moments:
        return after, log
    original, masked = before.select(columns), after.select(columns)
    details = dict(log.details)
    if step.positivity != "none":
        restorer = PositivityRestorer(mode=step.positivity, columns=list(columns))
        restorer.fit(original, masked, groups=np.arange(original.height))  # no groups: each record its own
        restored = restorer.transform(masked)
        details["positivity"] = restorer.stats_.to_dict()
        what = f" Mean and covariance restored keeping signs ({step.positivity})."
    else:
        restored = MomentRestorer(columns=list(columns)).fit(original, masked).transform(masked)
        what = " Mean and covariance restored."
    details["restore_moments"] = True
    return after.with_columns(restored.select(columns)), StepLog(log.kind, log.columns, details, log.description + what)


def _swap_or_correlated_noise(
    frame: pl.DataFrame, step: RankSwapStep | CorrelatedNoiseStep, columns: tuple[str, ...], seed: int | None
) -> tuple[pl.DataFrame, StepLog]:
    from sdckit.microagg import CorrelatedNoise, RankSwap

    _numeric_columns(frame, columns)  # precise error for text or missing values
    data = frame.select(columns).cast(pl.Float64)
    details: dict[str, Any]
    if isinstance(step, RankSwapStep):
        swap = RankSwap(
            p=step.p, r0=step.r0, k0=step.k0, top_percent=step.top_percent, bottom_percent=step.bottom_percent,
            random_state=seed,
        )
        masked = swap.fit_transform(data)
        window = {c: float(w) for c, w in swap.window_.items()}
        how = f"p = {step.p} %" if step.p is not None else (f"k0 = {step.k0}" if step.k0 is not None else f"r0 = {step.r0 or 0.95}")
        details = {"p": step.p, "r0": step.r0, "k0": step.k0, "top_percent": step.top_percent,
                   "bottom_percent": step.bottom_percent, "window_share": window}
        what = (f"Rank swapping ({how}; top/bottom {step.top_percent:g} %/{step.bottom_percent:g} % coded) on "
                f"{len(columns)} column(s), windows {min(window.values()):.3g}-{max(window.values()):.3g} of the records.")
    else:
        masked = CorrelatedNoise(law=step.law, noise=step.noise, delta=step.delta, random_state=seed).fit_transform(data)
        details = {"law": step.law, "noise": step.noise, "delta": step.delta}
        size = f"delta = {step.delta:g}" if step.law == "correlated2" else f"noise = {step.noise:g} of the covariance"
        what = f"Correlated noise ({step.law}, {size}) on {len(columns)} column(s)."
    out = frame.with_columns(masked.select(columns))
    return _restore_step(frame, out, step, columns, StepLog(step.kind, columns, details, what))


def _anonymize(
    frame: pl.DataFrame, step: AnonymizeStep, index: int, config: PipelineConfig, seed: int | None
) -> tuple[pl.DataFrame, StepLog]:
    """A step of ``sdckit.anonymize``: its options are the estimator's constructor keywords."""
    where = f"{config.source}: steps[{index}].{step.kind}"
    target = ANONYMIZE_STEPS[step.kind]
    module_name, _, class_name = target.partition(":")
    try:
        cls = getattr(importlib.import_module(module_name), class_name)
    except (ImportError, AttributeError):
        raise ConfigError(
            f"{where}: this step needs {module_name}.{class_name}, which is not available in this build of sdckit; "
            "use microaggregate (with strata: quasi_identifiers) or suppress instead."
        ) from None
    params = dict(step.params)
    sig = inspect.signature(cls)
    accepts_any = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in sig.parameters.values())
    for name in params:
        if name not in sig.parameters and not accepts_any:
            raise ConfigError(f"{where}: unknown option {name!r}.{_near(name, list(sig.parameters))}")
    fill = {"quasi_identifiers": [q for q in config.quasi_identifiers or () if q in frame.columns], "k": config.k,
            "random_state": seed}
    if step.kind == "local_suppression":
        fill["columns"] = fill["quasi_identifiers"]  # the keys are the quasi-identifiers, not every column
    elif step.kind == "top_code" and not any(isinstance(params.get(t), dict) for t in ("top", "bottom")):
        fill["columns"] = [c for c in config.numeric or () if c in frame.columns]  # not weights or kept columns
    for name, value in fill.items():
        if name in sig.parameters and name not in params:
            params[name] = value
    try:
        estimator = cls(**params)
        out = estimator.fit_transform(frame)
    except SdcError as err:
        raise ConfigError(f"{where}: {err}") from None
    changes = _changes(getattr(estimator, "changes_", None))
    total = sum(c["cells_changed"] for c in changes.values())
    changed = tuple(c for c, n in changes.items() if n["cells_changed"]) or _step_columns(step)
    parts = "; ".join(_change_text(c, n) for c, n in changes.items() if n["cells_changed"])
    if step.kind == "local_suppression":
        what = f"{class_name} set {total:,} cell(s) to missing: {parts}." if total else f"{class_name} set no cell to missing."
    else:
        what = f"{class_name} changed {total:,} cell(s): {parts}." if total else f"{class_name} changed no cell."
    if step.kind == "local_suppression" and total:
        if params.get("method", "decoys") == "decoys":
            what += (f" Every row is now identical to at least {params.get('k', config.k) - 1} others, suppressed "
                     "cells included (decoys drawn at random among larger groups).")
        else:
            what += " sdcMicro's algorithm: a missing cell matches any value when its groups are counted."
    if not isinstance(out, pl.DataFrame):  # pragma: no cover - the estimators return the input's frame type
        out = pl.DataFrame(out)
    details: dict[str, Any] = {"params": dict(params), "changes": changes, "cells_changed": total}
    transition = getattr(estimator, "transition_", None)
    if isinstance(transition, dict):  # PRAM: the matrices are published with the release
        details["transition_matrices"] = {
            str(c): {"values": [str(v) for v in values], "matrix": np.asarray(p, dtype=float).tolist()}
            for c, (values, p) in transition.items()
        }
    return out, StepLog(step.kind, changed, details, what)


def _changes(raw: Any) -> dict[str, dict[str, int]]:
    """An estimator's ``changes_`` as ``{column: {"cells_changed": n, ...}}`` (the agreed contract: a dict
    of counts per column); a bare count per column is read as its cells changed."""
    out: dict[str, dict[str, int]] = {}
    for column, value in dict(raw or {}).items():
        if isinstance(value, dict):
            counts = {str(key): int(n) for key, n in value.items()}
            counts.setdefault("cells_changed", 0)
        else:
            counts = {"cells_changed": int(value)}
        out[str(column)] = counts
    return out


def _change_text(column: str, counts: dict[str, int]) -> str:
    """``age 32,561 (64 values merged)``: a column's cells changed, and what else its estimator counted."""
    extra = []
    for key in ("values_merged", "cells_redacted", "outside_breaks"):
        n = counts.get(key, 0)
        if n:
            what = key.replace("_", " ") if key != "outside_breaks" else "outside the breaks, now missing"
            extra.append(f"{n:,} {what if n != 1 else what.replace('values', 'value').replace('cells', 'cell')}")
    return f"{column} {counts['cells_changed']:,}" + (f" ({', '.join(extra)})" if extra else "")


def _suppress(
    frame: pl.DataFrame, step: SuppressStep, plan: ReleasePlan, qis: Sequence[str], masked: set[str]
) -> tuple[pl.DataFrame, StepLog]:
    if step.columns == "plan":
        # a quasi-identifier already masked by an earlier step is no longer the raw value the plan judged
        dropped = tuple(c for c in qis if c not in plan.columns and c not in masked and c in frame.columns)
        kept_masked = [c for c in qis if c not in plan.columns and c in masked]
        what = f"Dropped {len(dropped)} quasi-identifier(s) the plan excludes: {', '.join(dropped) or 'none'}."
        if kept_masked:
            what += f" Kept {', '.join(kept_masked)}: masked by an earlier step."
    else:
        dropped = tuple(c for c in step.columns if c in frame.columns)
        what = f"Dropped {len(dropped)} column(s) as configured: {', '.join(dropped)}."
    return frame.drop(dropped), StepLog("suppress", dropped, {"kept_quasi_identifiers": list(plan.columns)}, what)


def _check_relations(frame: pl.DataFrame, config: PipelineConfig, roles: Roles) -> tuple[LinearRelation, ...]:
    """Before masking: refuse when a linear relation ties the masked numeric columns to released unmasked ones."""
    masked: set[str] = set()
    dropped: set[str] = set()
    for step in config.steps:
        if isinstance(step, NUMERIC_STEPS):
            masked.update(step.columns or roles.numeric)
        elif isinstance(step, AnonymizeStep) and step.kind == "top_code":
            masked.update(_step_columns(step) or roles.numeric)
        elif isinstance(step, SuppressStep) and step.columns != "plan":
            dropped.update(step.columns)
    released = [c for c in roles.released(frame.columns) if c not in dropped]
    schema = frame.schema  # once: building it costs O(columns)
    numeric = [c for c in released if schema[c].is_numeric() and schema[c] != pl.Boolean]
    if len(numeric) < 2:
        return ()
    x, names = check_numeric(frame, numeric, missing="drop")
    if config.allow_linear_relations or not masked:
        return tuple(find_linear_relations(x, list(names), prefer=[c for c in names if c in masked]))
    try:
        return tuple(check_linear_relations(x, list(names), masked=masked, released=released))
    except LinearRelationError as err:
        raise ConfigError(f"{config.source}: {err}".replace("--allow-linear-relations, allow_linear_relations=True, or ", "")) from None


def run_pipeline(config: PipelineConfig, *, advance: Advance | None = None, report: bool = True) -> PipelineResult:
    """Run ``config`` end to end in memory; see :func:`write_outputs` to write the files.

    Steps: read the input; resolve the column roles; check linear relations among the numeric
    columns; plan the release at k and budget from single-column marginals (what a curator behind
    a shuffler sees); apply the masking steps in order; keep only the columns with a releasing
    role; measure the release itself (:func:`sdckit.risk.measure_release`) beside the input; build
    the report (``report=False`` skips it). Every row of the input stays in the output, in random
    order (OS entropy; the input's order with ``shuffle_rows: false``).
    """
    if config.engine != "polars":
        raise ConfigError(
            f"{config.source}: engine: {config.engine}: run_pipeline works in memory; run this pipeline with "
            "`sdckit run` or sdckit.pipeline.run_distributed (the release is written as Parquet part files)."
        )
    tick = advance or (lambda *_a, **_k: None)
    tick(description="Reading the input")
    frame, source_name, n_dropped = _load(config)
    numeric_guessed = not config.numeric and not config.uses_adult
    survey_labels = _survey_labels(config)
    config, roles = _resolve_roles(config, frame, survey_labels)
    if config.name == DEFAULT_NAME:
        short = "UCI Adult" if config.uses_adult else source_name
        config = config.replace(name=f"Release report: {short}")
    qis = config.quasi_identifiers or ()
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
    for i, step in enumerate(config.steps):
        tick(description=f"Step {i + 1}: {step.kind}")
        seed = None if base is None else base + i
        before = protected
        if isinstance(step, SuppressStep):
            protected, log = _suppress(protected, step, plan, qis, masked)
        elif isinstance(step, AnonymizeStep):
            protected, log = _anonymize(protected, step, i, config, seed)
            masked.update(c for c in log.columns if c in protected.columns)
        else:
            cols = tuple(step.columns or config.numeric or ())
            cols = tuple(c for c in cols if c in protected.columns)
            if isinstance(step, MicroaggregateStep):
                protected, log = _microaggregate(protected, step, cols, qis)
            elif isinstance(step, (RankSwapStep, CorrelatedNoiseStep)):
                protected, log = _swap_or_correlated_noise(protected, step, cols, seed)
            else:
                protected, log = _noise(protected, step, cols, seed)
                protected, log = _restore_step(before, protected, step, cols, log)
            masked.update(cols)
        known = _known_after(known, before, protected, step, log)
        logs.append(_randomness(log, step, seed))
    released = roles.released(protected.columns)
    not_released = roles.not_released(frame.columns)
    not_released.update({c: "suppressed by a step" for c in frame.columns if c not in protected.columns and c not in not_released})
    protected = protected.select(released)
    weight = roles.weight[0] if roles.weight else None
    known_qis = known.select([c for c in known.columns if c in set(qis) | {weight}])
    tick(description="Measuring the release")
    sensitive = list(config.sensitive or ())
    input_measure = measure_release(
        frame.select(roles.released(frame.columns)), quasi_identifiers=qis, k=config.k, budget=config.budget,
        sensitive=sensitive, missing_semantics=config.missing_semantics, weights=weight,
        categorical=roles.categorical,
    )
    categorical = set(roles.categorical)
    masked_numeric = [c for c in masked if c in protected.columns and frame.schema[c].is_numeric() and c not in categorical]
    release_measure = measure_release(
        protected, quasi_identifiers=qis, k=config.k, budget=config.budget, sensitive=sensitive,
        original=frame, masked=sorted(masked_numeric, key=list(frame.columns).index),
        missing_semantics=config.missing_semantics, weights=weight, categorical=roles.categorical, known=known_qis,
    )
    labels = (survey_labels or SurveyLabels()).select(protected.columns).with_suppressed(
        _suppressed_cells(frame, protected)
    )
    if config.shuffle_rows:
        # after the consistent count, which the pipeline measures with the rows still aligned
        order = np.random.default_rng(None if base is None else base + len(config.steps)).permutation(protected.height)
        protected = protected[order]
        labels = labels.with_suppressed({c: m[order] for c, m in labels.suppressed.items()})
    else:
        order = None
    result = PipelineResult(
        config=config, protected=protected, plan=plan, steps=tuple(logs), report=Report(config.name), roles=roles,
        not_released=not_released, input_measure=input_measure, release_measure=release_measure,
        relations=relations, source_name=source_name, input_frame=frame, n_dropped=n_dropped,
        numeric_guessed=numeric_guessed, labels=labels, known=known_qis, row_order=order,
    )
    if report:
        from sdckit.report._main import build_report

        result = replace(result, report=build_report(result, advance=tick))
    return result


def _known_after(known: pl.DataFrame, before: pl.DataFrame, after: pl.DataFrame, step: Step, log: StepLog) -> pl.DataFrame:
    """The attacker's knowledge after a step: a public recoding (recode, top_code) or a masking that
    changes values (PRAM, microaggregation, noise: the released value then stands for the person's)
    moves it; a suppression (local_suppression, the ``*`` of small_strata: merge) does not."""
    if isinstance(step, AnonymizeStep) and step.kind == "local_suppression":
        return known
    starred = set(log.details.get("suppressed_cells") or {}) if isinstance(step, MicroaggregateStep) else set()
    changed = [
        c for c in after.columns
        if c in before.columns and c not in starred and not after[c].equals(before[c])
    ]
    return known.with_columns([after[c] for c in changed]) if changed else known


def _randomness(log: StepLog, step: Step, seed: int | None) -> StepLog:
    """Record that a step drew random numbers, and from where (never the seed of a real release)."""
    random = isinstance(step, (NoiseStep, RankSwapStep, CorrelatedNoiseStep)) or (
        isinstance(step, AnonymizeStep)
        and (step.kind == "pram" or (step.kind == "local_suppression" and step.params.get("method", "decoys") == "decoys")
             or bool(step.params.get("random_redaction")))
    )
    if not random:
        return log
    source = "OS entropy (secret)" if seed is None else "seeded (reproducible run: not for publication)"
    return replace(log, details={**log.details, "random": True, "randomness": source})


def _measure_written(
    path: Path, config: PipelineConfig, known: pl.DataFrame | None = None, original: pl.DataFrame | None = None
) -> ReleaseMeasure:
    """Measure the data file as written: read back in the format :func:`~sdckit._io.write_table`
    wrote it (:func:`~sdckit._io.read_back_options`), never with the input's reading options, so a
    written ``NA`` or ``-9`` is the value it was and only an empty field is missing."""
    reread = read_data(str(path), **read_back_options(path), labels=config.read.labels).frame.to_native()
    if not isinstance(reread, pl.DataFrame):  # pragma: no cover - paths are read with polars
        reread = pl.DataFrame(reread)
    return measure_release(
        reread, quasi_identifiers=config.quasi_identifiers or (), k=config.k, budget=config.budget,
        sensitive=config.sensitive or (), missing_semantics=config.missing_semantics, known=known,
        weights=config.weight[0] if config.weight else None, original=original,
        categorical=config.categorical or (),
    )


def _stated_figures(measure: ReleaseMeasure) -> dict[str, Any]:
    """The figures of a release the report states, to compare the file as written with the release in
    memory: everything but interval disclosure, numeric risk and the fixes (they need the input beside the release)."""
    skipped = ("interval_disclosure", "fixes", "information_loss", "warnings", "numeric_risk")
    return {key: value for key, value in measure.to_dict().items() if key not in skipped}


def _same(value: Any) -> str:
    """A figure as comparable text (NaN equals NaN; floats to 12 significant digits, since a sum over
    shuffled rows may differ from the same sum in the input's order in its last bits)."""

    def rounded(v: Any) -> Any:
        if isinstance(v, float):
            return float(f"{v:.12g}")
        if isinstance(v, dict):
            return {key: rounded(x) for key, x in v.items()}
        if isinstance(v, (list, tuple)):
            return [rounded(x) for x in v]
        return v

    return json.dumps(rounded(value), sort_keys=True, default=str)


def write_outputs(result: PipelineResult, *, inputs: Sequence[str | Path] = ()) -> dict[str, Path]:
    """Write the protected data (unless refused over budget) and the report; return what was written.

    Every output is checked first (never an input: the data, the pipeline file, a file a step
    reads, or ``inputs``; always writable), then written to temporary files renamed into place
    only when everything succeeded (:func:`sdckit._io.staged_outputs`). The data file is re-read
    and measured again before that: the figures in the report are those of the file as written.
    An over-budget release (without ``allow_over_budget``) writes no data file, only the report,
    marked not safe, with what would fix it; a data file of an earlier run at the output path is
    renamed ``<name>.stale`` (returned as ``"set_aside"``) so it cannot pass for this release.
    """
    from sdckit._io import set_aside, staged_outputs
    from sdckit.pipeline._outputs import check_pipeline_outputs

    written: dict[str, Path] = {}
    cfg = result.config
    check_pipeline_outputs(cfg, [cfg.config_file, *inputs])
    with staged_outputs() as stage:
        if cfg.output_data and not result.refused:
            path = Path(cfg.output_data)
            temp = stage.path(path)
            write_table(result.protected, temp, atomic=False, labels=result.labels)
            written["data"] = path
            original = result.input_frame
            if original is not None and result.row_order is not None:
                original = original[result.row_order]  # row i of the written file is input row row_order[i]
            again = _measure_written(temp, cfg, result.known, original)
            measured = result.release_measure
            if measured is not None:
                before, after = _stated_figures(measured), _stated_figures(again)
                differ = next((key for key in before if _same(before[key]) != _same(after[key])), None)
                if differ is not None:
                    raise ConfigError(
                        f"{cfg.source}: the written file {path.name} measures differently from the release in memory "
                        f"({differ} {after[differ]!r} against {before[differ]!r}); it was not written. "
                        "Write Parquet, which keeps every value exactly."
                    )
            if "release_check" in {s.id for s in result.report.sections}:
                section = next(s for s in result.report.sections if s.id == "release_check")
                section.data["verified_on_written_file"] = str(path)
        if cfg.output_report:
            html, sidecar = result.report.write(cfg.output_report, stage=stage)
            written["report"], written["sidecar"] = html, sidecar
    if cfg.output_data and result.refused:
        moved = set_aside(cfg.output_data)
        if moved is not None:
            written["set_aside"] = moved
    return written
