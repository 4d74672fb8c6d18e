"""Run the candidate releases of one input, write each, and measure every written file the same way.

A comparison is a pipeline file with a ``compare:`` section::

    input: data.csv
    quasi_identifiers: [sex, age_band]
    numeric: [income, expend]
    k: 3
    compare:
      repeat: 3                  # each candidate drawn 3 times (OS entropy): the spread on the map
      output: releases/          # every release written here, then read back and measured
      report: compare.html
      regression: {outcome: income, predictors: [age, sex]}
      candidates:
        - name: MDAV k=3
          steps: [{microaggregate: {k: 3, restore_moments: false}}]
        - name: DP tree
          synthesize: {method: dp_tree, epsilon: 1.0}

The top-level keys are a pipeline's (roles, k, budget); a candidate's ``steps`` are pipeline steps
run by :func:`sdckit.pipeline.run_pipeline` (the release shuffled, every step from OS entropy), a
``synthesize`` candidate is differentially private synthetic data (:mod:`sdckit.synth`). Every
figure is computed on the file as read back (:mod:`sdckit.compare._figures`).
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import narwhals as nw
import numpy as np
import polars as pl
import yaml
from numpy.typing import NDArray

from sdckit._io import check_outputs, read_data, write_table
from sdckit.compare._figures import (
    RISK_FIGURES,
    UTILITY_FIGURES,
    Figure,
    Regression,
    ReleaseContext,
    measure_intervals,
    measure_written,
)
from sdckit.errors import ConfigError
from sdckit.pipeline._config import PipelineConfig, _step, parse_config
from sdckit.pipeline._read import load_input, survey_labels
from sdckit.pipeline._resolve import resolve_roles
from sdckit.pipeline._run import run_pipeline
from sdckit.pipeline._steps import Step
from sdckit.report import Report
from sdckit.risk._measures._attacks import AttackSettings
from sdckit.synth import DPMarginalSynthesizer, DPTreeSynthesizer

__all__ = [
    "Candidate",
    "CandidateResult",
    "CompareResult",
    "CompareSpec",
    "load_compare",
    "pareto_frontier",
    "parse_compare",
    "planned_outputs",
    "run_compare",
]

SYNTHESIZERS: dict[str, type[DPMarginalSynthesizer] | type[DPTreeSynthesizer]] = {
    "dp_marginals": DPMarginalSynthesizer,
    "dp_tree": DPTreeSynthesizer,
}
"""``synthesize.method`` -> the synthesizer class."""

_COMPARE_KEYS = ("candidates", "repeat", "output", "report", "regression", "risk_axis", "utility_axis", "format")
_CANDIDATE_KEYS = ("name", "steps", "synthesize", "repeat")
_SYNTH_KEYS = ("method", "epsilon", "bins")


@dataclass(frozen=True)
class Candidate:
    """One candidate release: pipeline steps, or a DP synthesizer."""

    name: str
    steps: tuple[Step, ...] = ()
    synthesize: Mapping[str, Any] | None = None
    repeat: int | None = None

    @property
    def epsilon(self) -> float | None:
        """The differential-privacy budget asked for (None: not a DP release)."""
        return None if self.synthesize is None else float(self.synthesize.get("epsilon", 1.0))


@dataclass(frozen=True)
class CompareSpec:
    """A validated comparison: the input and roles (a pipeline config) and the candidates."""

    config: PipelineConfig
    candidates: tuple[Candidate, ...]
    repeat: int = 3
    output: str = "compare_releases"
    report: str | None = "compare.html"
    regression: Regression | None = None
    risk_axis: str = "closest_share"
    utility_axis: str = "pmse"
    format: str = "parquet"


@dataclass
class Draw:
    """One written release of a candidate and its figures."""

    path: Path
    values: dict[str, float | None]
    within_budget: bool
    epsilon: float | None = None
    row_order: NDArray[np.int64] | None = None
    """Released row i is input row ``row_order[i]`` (in memory only, never written; None: synthetic)."""
    known: pl.DataFrame | None = None
    """What the attacker knows of each person (the consistent count's users; in memory only)."""
    seconds: float = 0.0
    intervals: dict[str, tuple[float, float]] = field(default_factory=dict)
    """Each figure's own interval on this release (the attacks' confidence intervals)."""
    attacks: dict[str, Any] | None = None
    """The three attacks' counts and figures on this release (:func:`sdckit.risk.release_attacks`)."""
    held_out: NDArray[np.int64] | None = None
    """Synthetic data: the input rows held out of the synthesizer's input (the attacks' control)."""


@dataclass
class CandidateResult:
    """Every draw of a candidate, and the summary a map point shows."""

    candidate: Candidate
    draws: list[Draw] = field(default_factory=list)

    def stat(self, name: str) -> tuple[float | None, float | None, float | None]:
        """(mean, min, max) of a figure over the draws (None when it does not apply)."""
        vals = [d.values.get(name) for d in self.draws]
        got = [float(v) for v in vals if v is not None]
        if not got:
            return None, None, None
        return float(np.mean(got)), float(np.min(got)), float(np.max(got))

    def band(self, name: str) -> tuple[float | None, float | None]:
        """The extent a map point's bar shows: the range over the draws, widened by each draw's own
        interval where the figure has one (an attack's confidence interval)."""
        lows: list[float] = []
        highs: list[float] = []
        for d in self.draws:
            v = d.values.get(name)
            if v is None:
                continue
            lo, hi = d.intervals.get(name, (float(v), float(v)))
            lows.append(min(lo, float(v)))
            highs.append(max(hi, float(v)))
        return (min(lows), max(highs)) if lows else (None, None)

    @property
    def within_budget(self) -> bool:
        """Every draw within budget."""
        return all(d.within_budget for d in self.draws)

    @property
    def epsilon(self) -> float | None:
        """The largest epsilon spent over the draws (OpenDP's map), None when not DP."""
        eps = [d.epsilon for d in self.draws if d.epsilon is not None]
        return max(eps) if eps else None


@dataclass
class CompareResult:
    """The outcome of :func:`run_compare`."""

    spec: CompareSpec
    input_frame: pl.DataFrame
    results: list[CandidateResult]
    figures: tuple[Figure, ...]
    frontier: list[str]
    seconds: float

    def figure(self, name: str) -> Figure:
        return next(f for f in self.figures if f.name == name)


def _read_back(path: Path) -> pl.DataFrame:
    """The written release as the reader of any sdckit input reads it."""
    frame = read_data(path).frame
    if isinstance(frame, nw.LazyFrame):
        frame = frame.collect()
    native = nw.to_native(frame)
    return native if isinstance(native, pl.DataFrame) else pl.DataFrame(native)


def _slug(name: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-") or "candidate"


def _positive_int(value: Any, where: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ConfigError(f"{where}: expected a whole number >= 1, got {value!r}.")
    return value


def parse_compare(raw: Mapping[str, Any], *, base: Path | None = None, source: str = "<dict>") -> CompareSpec:
    """Validate a pipeline mapping with a ``compare:`` section into a :class:`CompareSpec`."""
    obj = dict(raw)
    section = obj.pop("compare", None)
    if not isinstance(section, Mapping):
        raise ConfigError(f"{source}: a comparison needs a `compare:` section with `candidates:` (a list).")
    for key in section:
        if key not in _COMPARE_KEYS:
            raise ConfigError(f"{source}.compare: unknown key {str(key)!r}; one of {', '.join(_COMPARE_KEYS)}.")
    obj.pop("output", None)  # a comparison writes its releases under compare.output
    top_steps = obj.pop("steps", None) or []
    config = parse_config({**obj, "allow_over_budget": True}, base=base, source=source)
    raw_candidates = list(section.get("candidates") or [])
    if top_steps:
        raw_candidates.insert(0, {"name": "this pipeline's steps", "steps": top_steps})
    if not raw_candidates:
        raise ConfigError(f"{source}.compare.candidates: give at least one candidate (`- name: ..., steps: [...]`).")
    candidates: list[Candidate] = []
    for i, rc in enumerate(raw_candidates):
        where = f"{source}.compare.candidates[{i}]"
        if not isinstance(rc, Mapping):
            raise ConfigError(f"{where}: expected a mapping with name and steps or synthesize, got {rc!r}.")
        for key in rc:
            if key not in _CANDIDATE_KEYS:
                raise ConfigError(f"{where}: unknown key {str(key)!r}; one of {', '.join(_CANDIDATE_KEYS)}.")
        name = str(rc.get("name") or f"candidate {i + 1}")
        if ("steps" in rc) == ("synthesize" in rc):
            raise ConfigError(f"{where} ({name}): give exactly one of `steps:` (pipeline steps) or `synthesize:`.")
        repeat = None if rc.get("repeat") is None else _positive_int(rc["repeat"], f"{where}.repeat")
        if "steps" in rc:
            raw_steps = rc["steps"] or []
            if not isinstance(raw_steps, list):
                raise ConfigError(f"{where}.steps: expected a list of steps, got {raw_steps!r}.")
            steps = tuple(_step(s, j, f"{where}") for j, s in enumerate(raw_steps))
            candidates.append(Candidate(name, steps=steps, repeat=repeat))
            continue
        syn = rc["synthesize"]
        if not isinstance(syn, Mapping) or syn.get("method") not in SYNTHESIZERS:
            raise ConfigError(f"{where}.synthesize: give method: one of {', '.join(SYNTHESIZERS)} (and epsilon).")
        for key in syn:
            if key not in _SYNTH_KEYS:
                raise ConfigError(f"{where}.synthesize: unknown key {str(key)!r}; one of {', '.join(_SYNTH_KEYS)}.")
        eps = syn.get("epsilon", 1.0)
        if isinstance(eps, bool) or not isinstance(eps, (int, float)) or not (0 < eps < float("inf")):
            raise ConfigError(f"{where}.synthesize.epsilon: a positive number, got {eps!r}.")
        if "bins" in syn:
            _positive_int(syn["bins"], f"{where}.synthesize.bins")
        candidates.append(Candidate(name, synthesize=dict(syn), repeat=repeat))
    names = [c.name for c in candidates]
    if len(set(names)) != len(names):
        raise ConfigError(f"{source}.compare.candidates: two candidates share a name; names: {names}.")
    reg = section.get("regression")
    regression = None
    if reg is not None:
        if not isinstance(reg, Mapping) or "outcome" not in reg or not reg.get("predictors"):
            raise ConfigError(f"{source}.compare.regression: give {{outcome: column, predictors: [columns]}}.")
        preds = reg["predictors"]
        regression = Regression(str(reg["outcome"]), tuple(str(p) for p in ([preds] if isinstance(preds, str) else preds)))
    known = {f.name for f in (*RISK_FIGURES, *UTILITY_FIGURES)}
    risk_axis = str(section.get("risk_axis", "closest_share"))
    utility_axis = str(section.get("utility_axis", "pmse"))
    for key, value in (("risk_axis", risk_axis), ("utility_axis", utility_axis)):
        if value not in known:
            raise ConfigError(f"{source}.compare.{key}: {value!r} is not a figure; one of {', '.join(sorted(known))}.")
    fmt = str(section.get("format", "parquet"))
    if fmt not in ("parquet", "csv"):
        raise ConfigError(f"{source}.compare.format: parquet or csv, got {fmt!r}.")
    output = str(section.get("output", "compare_releases"))
    report = section.get("report", "compare.html")
    if base is not None:
        output = output if Path(output).is_absolute() else str(base / output)
        report = None if report is None else (report if Path(str(report)).is_absolute() else str(base / str(report)))
    return CompareSpec(
        config=config, candidates=tuple(candidates),
        repeat=_positive_int(section.get("repeat", 3), f"{source}.compare.repeat"), output=output,
        report=None if report is None else str(report), regression=regression, risk_axis=risk_axis,
        utility_axis=utility_axis, format=fmt,
    )


def load_compare(path: str | Path) -> CompareSpec:
    """Read a pipeline file with a ``compare:`` section."""
    p = Path(path)
    if not p.exists():
        raise ConfigError(f"no comparison file at {str(path)!r}.")
    text = p.read_text(encoding="utf-8")
    try:
        raw = json.loads(text) if p.suffix.lower() == ".json" else yaml.safe_load(text)
    except (yaml.YAMLError, json.JSONDecodeError) as err:
        raise ConfigError(f"{p.name} is not valid: {str(err).strip().splitlines()[0]}") from None
    if not isinstance(raw, Mapping):
        raise ConfigError(f"{p.name}: expected a mapping of keys to values.")
    spec = parse_compare(raw, base=p.parent, source=p.name)
    return CompareSpec(**{**spec.__dict__, "config": spec.config.replace(config_file=str(p))})


def planned_outputs(spec: CompareSpec) -> list[Path]:
    """Every file the comparison writes: one per candidate and draw, and the report."""
    out = Path(spec.output)
    files = [
        out / f"{i + 1:02d}-{_slug(c.name)}-{r + 1}.{spec.format}"
        for i, c in enumerate(spec.candidates)
        for r in range(c.repeat or spec.repeat)
    ]
    return files


def pareto_frontier(points: Mapping[str, tuple[float, float]]) -> list[str]:
    """Names of the points no other point beats on both axes (both oriented lower-is-better)."""
    front = []
    for name, (x, y) in points.items():
        dominated = any(
            (x2 <= x and y2 <= y) and (x2 < x or y2 < y) for other, (x2, y2) in points.items() if other != name
        )
        if not dominated:
            front.append(name)
    return front


def _oriented(value: float, figure: Figure) -> float:
    return value if figure.better == "lower" else -value


def run_compare(
    spec: CompareSpec,
    *,
    risk: Sequence[Figure] = RISK_FIGURES,
    utility: Sequence[Figure] = UTILITY_FIGURES,
    advance: Callable[..., None] | None = None,
    seed: int | None = None,
) -> CompareResult:
    """Run, write and measure every candidate ``repeat`` times; mark the frontier.

    Every draw comes from OS entropy unless ``seed`` is given (tests: then draw r of candidate i
    uses ``seed + 1000 i + r``). ``risk`` and ``utility`` are the figures measured on each
    written file (:data:`~sdckit.compare._figures.RISK_FIGURES` and ``UTILITY_FIGURES`` by default).
    """
    tick = advance or (lambda *_a, **_k: None)
    start = time.perf_counter()
    config = spec.config
    files = planned_outputs(spec)
    inputs = [config.input, config.config_file] if not config.uses_adult else [config.config_file]
    check_outputs([*files, *(Report.outputs(spec.report) if spec.report else ())],
                  [p for p in inputs if p], make_folders=True)
    frame, _name, _dropped = load_input(config)
    config, roles = resolve_roles(config, frame, survey_labels(config))
    released = roles.released(frame.columns)
    household = roles.household
    if household is not None and household not in released:  # household_id: drop: kept for the household risk
        released = (*released, household)
    input_released = frame.select(released)
    categorical = tuple(c for c in released if c in set(roles.categorical) or not frame.schema[c].is_numeric())
    numeric = tuple(c for c in released if c not in set(categorical))
    qis = tuple(config.quasi_identifiers or ())
    attack_settings = (
        AttackSettings(n_attacks=config.attacks.n_attacks, n_control=config.attacks.n_control,
                       budget=config.attacks.budgets())
        if config.attacks.run else None
    )
    figures = (*risk, *utility)
    results: list[CandidateResult] = []
    file_iter = iter(files)
    for i, cand in enumerate(spec.candidates):
        cres = CandidateResult(cand)
        for r in range(cand.repeat or spec.repeat):
            tick(description=f"{cand.name}: draw {r + 1}")
            path = next(file_iter)
            draw_seed = None if seed is None else seed + 1000 * i + r
            t0 = time.perf_counter()
            row_order: NDArray[np.int64] | None
            known = None
            epsilon = None
            training = control = None
            held_rows: NDArray[np.int64] | None = None
            if cand.synthesize is not None:
                syn = dict(cand.synthesize)
                fit_on = input_released.select([c for c in input_released.columns if c != household])
                if attack_settings is not None and fit_on.height >= 20:
                    # the control is held out of the synthesizer's input: records the release cannot stem from
                    split = np.random.default_rng(None if draw_seed is None else [draw_seed, 1])
                    n_held = max(1, min(attack_settings.n_control, fit_on.height // 5))
                    held = np.zeros(fit_on.height, dtype=bool)
                    held[split.choice(fit_on.height, size=n_held, replace=False)] = True
                    training, control = fit_on.filter(pl.Series(~held)), fit_on.filter(pl.Series(held))
                    held_rows = np.flatnonzero(held)
                    fit_on = training
                model = SYNTHESIZERS[syn["method"]](
                    epsilon=float(syn.get("epsilon", 1.0)), bins=int(syn.get("bins", 20)),
                    categorical=[c for c in categorical if c != household], random_state=draw_seed,
                ).fit(fit_on)
                release = model.sample()
                epsilon = float(model.epsilon_)
                row_order = None
            else:
                cfg = config.replace(
                    steps=cand.steps, output_data=None, output_report=None, allow_over_budget=True,
                    seed=draw_seed, reproducible=draw_seed is not None,
                    attacks=config.attacks.model_copy(update={"run": False}),  # measured below, on the written file
                )
                result = run_pipeline(cfg)
                release = result.protected
                row_order = result.row_order if result.row_order is not None else np.arange(release.height)
                known = result.known
            write_table(release, path)
            written = _read_back(path)
            ctx = ReleaseContext(
                input=input_released, release=written, quasi_identifiers=qis, numeric=numeric,
                categorical=categorical, k=config.k, budget=config.budget, row_order=row_order,
                known=known, regression=spec.regression, control=control, training=training,
                household=household, sensitive=tuple(config.sensitive or ()),
                attacks=None if attack_settings is None else AttackSettings(
                    n_attacks=attack_settings.n_attacks, n_control=attack_settings.n_control,
                    budget=attack_settings.budget, seed=None if draw_seed is None else draw_seed + 7),
            )
            values, within = measure_written(ctx, risk=risk, utility=utility)
            intervals = measure_intervals(ctx, figures)
            cres.draws.append(Draw(path, values, within, epsilon, row_order, known, time.perf_counter() - t0,
                                   intervals, ctx._attacks, held_rows))
        results.append(cres)
    rx = next(f for f in figures if f.name == spec.risk_axis)
    uy = next(f for f in figures if f.name == spec.utility_axis)
    points = {}
    for c in results:
        x, y = c.stat(rx.name)[0], c.stat(uy.name)[0]
        if x is not None and y is not None:
            points[c.candidate.name] = (_oriented(x, rx), _oriented(y, uy))
    return CompareResult(spec, input_released, results, figures, pareto_frontier(points), time.perf_counter() - start)
