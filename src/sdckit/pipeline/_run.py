"""Run a release pipeline: measure the risk, plan the release, apply the masking steps, report.

The one function, :func:`run_pipeline`, takes a validated :class:`PipelineConfig` and returns a
:class:`PipelineResult` (the protected table, the plan, a log of what each step touched, and the
:class:`~sdckit.report.Report`). Writing files is left to :func:`write_outputs`, so the run itself
is testable without touching the disk.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
from numpy.typing import NDArray

from sdckit._io import check_numeric, read_data, write_table
from sdckit.errors import ConfigError
from sdckit.pipeline._config import DEFAULT_NAME, MicroaggregateStep, NoiseStep, PipelineConfig, SuppressStep
from sdckit.report._report import Report
from sdckit.risk import Marginals, ReleasePlan, plan_release

__all__ = ["PipelineResult", "StepLog", "guess_columns", "run_pipeline", "write_outputs"]

Advance = Callable[..., None]


@dataclass(frozen=True)
class StepLog:
    """What one masking step did, in numbers."""

    kind: str
    """``microaggregate``, ``noise`` or ``suppress``."""
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
    """The table to release: every row of the input, masked columns replaced, suppressed ones gone."""
    plan: ReleasePlan
    """The release plan on the quasi-identifiers at k and budget."""
    steps: tuple[StepLog, ...]
    """What each masking step did, in order."""
    report: Report
    """The HTML report (not yet written)."""


def _load(config: PipelineConfig) -> tuple[pl.DataFrame, str, int]:
    """The input as a polars frame, its name, and how many rows ``missing: drop`` removed."""
    if config.uses_adult:
        from sdckit.datasets import load_adult

        return load_adult(), "UCI Adult (bundled, 32,561 rows; Becker & Kohavi 1996, CC BY 4.0)", 0
    assert config.input is not None
    data = read_data(config.input, missing=config.missing)
    frame = data.frame
    native = frame.to_native() if not data.is_lazy else frame.collect().to_native()  # type: ignore[union-attr]
    if not isinstance(native, pl.DataFrame):  # pragma: no cover - paths are read with polars
        native = pl.DataFrame(native)
    return native, Path(config.input).name, int(data.n_dropped or 0)


def _check_columns(frame: pl.DataFrame, columns: Sequence[str], key: str, source: str) -> None:
    for c in columns:
        if c not in frame.columns:
            near = difflib.get_close_matches(c, frame.columns, n=2, cutoff=0.6)
            hint = f" Did you mean {' or '.join(map(repr, near))}?" if near else f" The data has: {', '.join(frame.columns[:15])}."
            raise ConfigError(f"{source}: {key}: column {c!r} is not in the data.{hint}")


def guess_columns(frame: pl.DataFrame) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """Default columns for data without a configuration (the report states them).

    Quasi-identifiers: text, boolean and integer columns with fewer distinct values than half the
    rows (near-unique columns are identifiers or weights, not quasi-identifiers). Numeric columns
    to mask: numeric columns with more than 10 distinct values.
    """
    n = frame.height
    qis, numeric = [], []
    for name, dtype in frame.schema.items():
        n_distinct = frame[name].n_unique()
        if dtype.is_numeric() and n_distinct > 10:
            numeric.append(name)
        if (not dtype.is_float()) and n_distinct < max(2, n // 2):
            qis.append(name)
    return tuple(qis), tuple(numeric)


def _with_defaults(config: PipelineConfig, frame: pl.DataFrame) -> PipelineConfig:
    qis, numeric = config.quasi_identifiers, config.numeric
    if config.uses_adult:
        from sdckit.datasets import ADULT_NUMERIC, ADULT_QUASI_IDENTIFIERS

        qis = qis or ADULT_QUASI_IDENTIFIERS
        numeric = numeric or ADULT_NUMERIC
    if not qis:
        qis, guessed_numeric = guess_columns(frame)
        numeric = numeric or guessed_numeric
        if not qis:
            raise ConfigError(
                f"{config.source}: quasi_identifiers: name the columns an attacker may know, "
                "e.g. quasi_identifiers: [age, sex, region]."
            )
    _check_columns(frame, qis, "quasi_identifiers", config.source)
    _check_columns(frame, numeric or (), "numeric", config.source)
    for i, step in enumerate(config.steps):
        cols = step.columns if isinstance(step, (MicroaggregateStep, NoiseStep)) else None
        if cols:
            _check_columns(frame, cols, f"steps[{i}].{step.kind}.columns", config.source)
        if isinstance(step, SuppressStep) and step.columns != "plan":
            _check_columns(frame, step.columns, f"steps[{i}].suppress.columns", config.source)
        if isinstance(step, (MicroaggregateStep, NoiseStep)) and not (cols or numeric):
            raise ConfigError(
                f"{config.source}: steps[{i}].{step.kind}: no columns to mask; list them in `numeric` "
                "or in the step's `columns`."
            )
    return replace(config, quasi_identifiers=tuple(qis), numeric=tuple(numeric) if numeric else None)


def _numeric_columns(frame: pl.DataFrame, columns: Sequence[str]) -> NDArray[np.float64]:
    """The columns as floats; a text column or a missing value raises its precise error."""
    X, _ = check_numeric(frame, list(columns), missing="error")
    return X


def _microaggregate(frame: pl.DataFrame, step: MicroaggregateStep, columns: tuple[str, ...], seed: int) -> tuple[pl.DataFrame, StepLog]:
    from sdckit.microagg import Microaggregation, MomentRestorer, PositivityRestorer

    original = frame.select(columns)
    _numeric_columns(frame, columns)  # precise error for text or missing values
    model = Microaggregation(k=step.k, method=step.method, columns=list(columns))  # type: ignore[arg-type]
    masked = model.fit_transform(original)
    details: dict[str, Any] = {
        "method": step.method,
        "k": step.k,
        "information_loss_percent": float(model.information_loss_),
        "n_groups": int(np.unique(model.groups_).size),
    }
    what = f"{step.method.upper()} with k = {step.k} on {len(columns)} column(s): IL {model.information_loss_:.2f} %"
    if step.positivity != "none":
        restorer = PositivityRestorer(mode=step.positivity, columns=list(columns))  # type: ignore[arg-type]
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
    return out, StepLog("microaggregate", columns, details, what + ".")


def _noise(frame: pl.DataFrame, step: NoiseStep, columns: tuple[str, ...], seed: int) -> tuple[pl.DataFrame, StepLog]:
    from sdckit.spectral import AdditiveNoise
    from sdckit.spectral._design import design_noise_from_data

    X = _numeric_columns(frame, columns)
    mean, sd = X.mean(axis=0), X.std(axis=0)
    sd = np.where(sd > 0, sd, 1.0)
    details: dict[str, Any] = {"distribution": step.distribution}
    if step.t == "recommended":
        if len(columns) < 2:
            raise ConfigError("noise: t: recommended needs at least two columns (a spectrum to protect); give t.")
        _, design = design_noise_from_data(X, standardize=True, max_leakage=step.epsilon)
        t = float(design.t)
        details.update({"recommended_by": "design_noise", "epsilon_nats": step.epsilon, "design": design.to_dict()})
    else:
        t = float(step.t)
    details["t"] = t
    if step.distribution == "discrete":
        # integer answers: noise of variance t on the raw scale keeps them integers
        noisy = AdditiveNoise(t=t, distribution="discrete", seed=seed).fit_transform(frame.select(columns))
        details["scale"] = "raw units"
    else:
        Z = pl.DataFrame(((X - mean) / sd), schema=list(columns), orient="row")
        Zn = AdditiveNoise(t=t, distribution=step.distribution, seed=seed).fit_transform(Z)  # type: ignore[arg-type]
        noisy = pl.DataFrame(Zn.to_numpy() * sd + mean, schema=list(columns), orient="row")
        details["scale"] = "standardised columns (t in units of each column's variance)"
    out = frame.with_columns(noisy.select(columns))
    what = f"{step.distribution} noise of variance t = {t:.3g} ({details['scale']}) on {len(columns)} column(s)."
    return out, StepLog("noise", columns, details, what)


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
        dropped = tuple(step.columns)
        what = f"Dropped {len(dropped)} column(s) as configured: {', '.join(dropped)}."
    return frame.drop(dropped), StepLog("suppress", dropped, {"kept_quasi_identifiers": list(plan.columns)}, what)


def run_pipeline(config: PipelineConfig, *, advance: Advance | None = None, report: bool = True) -> PipelineResult:
    """Run ``config`` end to end in memory; see :func:`write_outputs` to write the files.

    Steps: read the input; measure the risk on the quasi-identifiers; plan the release at k and
    budget from single-column marginals (what a curator behind a shuffler sees); apply the masking
    steps in order; build the report. Every row of the input stays in the output, in order.
    """
    from sdckit.report._main import assemble_report

    tick = advance or (lambda *_a, **_k: None)
    frame, source_name, n_dropped = _load(config)
    config = _with_defaults(config, frame)
    if config.name == DEFAULT_NAME:
        short = "UCI Adult" if config.uses_adult else source_name
        config = replace(config, name=f"Release report: {short}")
    qis = config.quasi_identifiers or ()
    tick(description="Planning the release")
    plan = plan_release(
        Marginals.from_data(frame, list(qis), missing="value"),
        k=config.k,
        budget=config.budget,
        method=config.bound_method,  # type: ignore[arg-type]
    )
    protected = frame
    logs: list[StepLog] = []
    masked: set[str] = set()
    for i, step in enumerate(config.steps):
        tick(description=f"Step {i + 1}: {step.kind}")
        if isinstance(step, SuppressStep):
            protected, log = _suppress(protected, step, plan, qis, masked)
        else:
            cols = tuple(step.columns or config.numeric or ())
            cols = tuple(c for c in cols if c in protected.columns)
            if isinstance(step, MicroaggregateStep):
                protected, log = _microaggregate(protected, step, cols, config.seed + i)
            else:
                protected, log = _noise(protected, step, cols, config.seed + i)
            masked.update(cols)
        logs.append(log)
    rep = (
        assemble_report(config, frame, source_name, plan, tuple(logs), advance=tick, n_dropped=n_dropped)
        if report
        else Report(config.name)
    )
    return PipelineResult(config=config, protected=protected, plan=plan, steps=tuple(logs), report=rep)


def write_outputs(result: PipelineResult) -> dict[str, Path]:
    """Write the protected data (format by extension) and the report; return what was written."""
    written: dict[str, Path] = {}
    cfg = result.config
    if cfg.output_data:
        written["data"] = write_table(result.protected, cfg.output_data)
    if cfg.output_report:
        html, sidecar = result.report.write(cfg.output_report)
        written["report"], written["sidecar"] = html, sidecar
    return written

