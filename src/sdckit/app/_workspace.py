"""A browser tab's workspace: its :class:`~sdckit.app._session.History`, the data it loaded, the
cached measured run of each state, and the job (re-measure, plan, report) running for it.

Every figure comes from :func:`sdckit.pipeline.run_pipeline` on the state's
:class:`~sdckit.pipeline.PipelineConfig` (no report: :meth:`start_report` builds it), run in a worker thread; the export
writes the released file with :func:`sdckit.pipeline.write_outputs` (so the pipeline's refusal
rule and its check of the written file apply) and the report with the report builder.
"""

from __future__ import annotations

import dataclasses
import secrets
import shutil
import tempfile
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import polars as pl
from pydantic import ValidationError

from sdckit.anonymize._hierarchy import ADULT_HIERARCHY_COLUMNS, BUILTIN_PREFIX, Hierarchy
from sdckit.app._figures import Figures, column_loss, figures_of
from sdckit.app._hierarchies import as_spec
from sdckit.app._jobs import Job
from sdckit.app._session import SOURCE, History, Workbench, new_secret_seed, roles_of
from sdckit.errors import ConfigError, SdcError
from sdckit.pipeline import run_pipeline, write_outputs
from sdckit.pipeline._config import PipelineConfig, ReadSection, _config_error
from sdckit.pipeline._read import load_input as _load
from sdckit.pipeline._resolve import resolve_roles as _resolve_roles
from sdckit.pipeline._result import PipelineResult
from sdckit.pipeline._roles import Roles
from sdckit.plan import plan_release
from sdckit.report._main import build_report
from sdckit.risk import Marginals

__all__ = ["Run", "Workspace"]

CACHED_RUNS = 12
"""Measured runs kept per session (undo and redo within them show their figures at once)."""


@dataclass(frozen=True)
class Run:
    """One state measured: the pipeline's result and the figures the page shows."""

    result: PipelineResult
    input_figures: Figures
    release_figures: Figures
    loss: list[dict[str, Any]]
    seconds: float
    warnings: tuple[str, ...] = ()
    """The run's warnings (legal but suspicious input), shown as the CLI shows them."""


@dataclass(frozen=True)
class Glance:
    """The loaded data at a glance."""

    n_rows: int
    columns: list[dict[str, Any]]
    preview: list[list[str]]
    roles: Any
    """The pipeline's :class:`~sdckit.pipeline.Roles` for this data (defaults, or guesses and flags)."""
    guess_error: str | None = None


def _glance(frame: pl.DataFrame, roles: Any, guess_error: str | None) -> Glance:
    cols = []
    for name, dtype in frame.schema.items():
        s = frame[name]
        examples = [str(v) for v in s.drop_nulls().unique(maintain_order=True).head(4).to_list()]
        cols.append({"name": name, "dtype": str(dtype), "distinct": s.n_unique(), "missing": s.null_count(),
                     "examples": ", ".join(examples)})
    preview = [[("" if v is None else str(v)) for v in row] for row in frame.head(5).iter_rows()]
    return Glance(frame.height, cols, preview, roles, guess_error)


class Workspace:
    """One session (one browser tab): state, history, cached runs, the running job."""

    def __init__(self) -> None:
        self.id = secrets.token_urlsafe(12)
        self.secret = secrets.token_urlsafe(32)
        """The session cookie's value: a request for this session must carry it."""
        self.seed = new_secret_seed()
        """The seed of this session's random steps when the state is not reproducible (never written)."""
        self.history = History()
        self.dir = Path(tempfile.mkdtemp(prefix="sdckit-app-"))
        self.lock = threading.RLock()
        self.runs: OrderedDict[Workbench, Run] = OrderedDict()
        self.glances: dict[tuple[str, tuple[tuple[str, Any], ...]], Glance] = {}
        self.job: Job | None = None
        self.error: str | None = None
        self.notice: str | None = None
        self.plan: Any = None
        self.plan_for: Workbench | None = None
        self.plan_options: dict[str, str] = {}
        self.report_path: Path | None = None
        self.report_for: Workbench | None = None
        self.hierarchies: dict[str, Hierarchy] = {}
        """Hierarchies built or loaded in the page, per column (the planner uses them)."""
        self.frame: pl.DataFrame | None = None
        """The loaded data, as read (frequency tables, previews and hierarchies are built from it)."""
        self.plan_hierarchies: dict[str, Any] = {}
        """The hierarchies the last plan used (``{column: name or mapping}``), for its steps."""
        self.combo_columns: tuple[str, ...] | None = None
        """The keys whose combinations the page lists (None: all the keys)."""
        self.preview: Any = None
        self.preview_for: Workbench | None = None
        """A recoding previewed (:class:`sdckit.app._keys.Preview`) and the state it was previewed on."""
        self.draft: dict[str, Any] = {}
        """A refused add or edit of a step as typed (``index`` None for the add form), shown again."""
        self.last_used = time.monotonic()

    # --- state ---------------------------------------------------------------------------------

    @property
    def state(self) -> Workbench:
        return self.history.state

    def config(self, state: Workbench | None = None) -> PipelineConfig:
        return (state or self.state).config(run_seed=self.seed)

    def glance(self, state: Workbench | None = None) -> Glance | None:
        s = state or self.state
        return self.glances.get((s.input, s.read))

    def load(self, source: str, read: dict[str, Any], *, name: str | None = None) -> None:
        """Read ``source`` (``adult`` or a path) with ``read_data`` and the pipeline's reading options,
        guess its roles as the pipeline does, and make it the state (steps cleared)."""
        source = source.strip() or "adult"
        read_items = tuple(sorted((k, tuple(v) if isinstance(v, list) else v) for k, v in read.items()))
        raw: dict[str, Any] = {"input": source}
        if read_items:
            raw["read"] = dict(read_items)
        try:
            probe = PipelineConfig.model_validate({**raw, "source": SOURCE})
        except Exception as err:  # pydantic's error, in the pipeline file's words
            if isinstance(err, ValidationError):
                raise _config_error(err, SOURCE) from None
            raise
        if probe.uses_adult:
            source, read_items = "adult", ()
        else:
            source = str(Path(source).expanduser().resolve())
            probe = probe.replace(input=source)
        frame, _, _ = _load(probe)
        guess_error = None
        try:
            _, roles = _resolve_roles(probe, frame)
        except ConfigError as err:
            roles, guess_error = Roles(quasi_identifiers=()), str(err)
        self.glances[(source, read_items)] = _glance(frame, roles, guess_error)
        if self.frame is None or self.frame.columns != frame.columns or self.state.input != source:
            self.hierarchies = {}
        self.frame = frame
        shown = name or ("UCI Adult (bundled)" if source == "adult" else Path(source).name)
        coded = tuple(c for c, t in frame.schema.items() if t.is_numeric())
        new = replace(self.state, input=source, input_name=shown, read=read_items, coded=coded,
                      roles=roles_of(frame.columns, roles), steps=())
        self.history.change(new, f"load {shown}")
        self.plan = None

    def save_upload(self, filename: str, body: bytes) -> Path:
        """Keep an uploaded file in this session's private folder (never beyond this machine)."""
        safe = Path(filename).name or "upload"
        path = self.dir / "uploads" / safe
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(body)
        return path

    # --- runs ----------------------------------------------------------------------------------

    def run_of(self, state: Workbench | None = None) -> Run | None:
        return self.runs.get(state or self.state)

    def measure(self, state: Workbench, advance: Any) -> Run:
        """Run the pipeline for ``state`` (the report is built only on request) and collect the figures."""
        t0 = time.perf_counter()
        result = run_pipeline(self.config(state), advance=advance)
        assert result.input_measure is not None
        assert result.release_measure is not None
        assert result.input_frame is not None
        weights = tuple(result.config.weight or ())
        frame = result.input_frame
        released_input = frame.select(result.roles.released(frame.columns)) if result.roles is not None else frame
        masked = [c for log in result.steps for c in log.columns]
        return Run(
            result=result,
            input_figures=figures_of(result.input_measure, released_input, weights=weights),
            release_figures=figures_of(result.release_measure, result.protected, weights=weights),
            # the release goes out shuffled: compare each released row with its own input row
            loss=column_loss(frame if result.row_order is None else frame[result.row_order], result.protected, masked),
            seconds=time.perf_counter() - t0,
        )

    def start_measure(self, *, revert_on_failure: bool) -> None:
        """Measure the current state in a worker thread (at once if already measured).

        ``revert_on_failure``: the state is a change just made; if its run fails (a missing column, a
        wrong parameter) the change is dropped, the error shown, and the session goes on as before."""
        state = self.state
        if state in self.runs:
            self.runs.move_to_end(state)
            self.supersede()
            return
        if not state.roles:
            return
        self.supersede()

        def done(job: Job) -> None:
            with self.lock:
                if job.superseded:
                    return
                if job.error is None and not job.cancelled:
                    self.runs[state] = replace(job.result, warnings=tuple(job.warnings))
                    while len(self.runs) > CACHED_RUNS:
                        self.runs.popitem(last=False)
                    return
                if job.error is not None:
                    self.error = job.error
                elif job.cancelled:
                    self.notice = "Cancelled: the change was not applied." if revert_on_failure else "Cancelled."
                if revert_on_failure and self.history.state == state:
                    self.history.drop_last()

        self.job = Job("Measuring the release", lambda advance: self.measure(state, advance), on_done=done).start()

    def start_plan(self, hierarchies: str, suppression: str, *, use_built: bool = True) -> None:
        """Ask the planner (:func:`sdckit.plan.plan_release`, with hierarchies and suppression) in a
        worker thread; ``use_built``: with the hierarchies built in the page too (they win over a
        name typed for the same column)."""
        state = self.state
        self.plan_options = {"hierarchies": hierarchies, "suppression": suppression}
        config = self.config(state)
        hier: dict[str, Any] = dict(_hierarchies(hierarchies))
        if use_built:
            hier |= {c: as_spec(h) for c, h in self.hierarchies.items()}
        share = _share(suppression)

        def work(advance: Any) -> Any:
            advance(description="Reading the data")
            frame, _, _ = _load(config)
            cfg, _ = _resolve_roles(config, frame)
            qis = list(cfg.quasi_identifiers or ())
            hier_used = {c: h for c, h in hier.items() if c in qis}  # `adult` names all eight; use those given roles
            if hier and not hier_used:
                raise ConfigError(f"{SOURCE}: hierarchies: none of {', '.join(hier)} is a quasi-identifier "
                                  f"(they are {', '.join(qis)}).")
            advance(description="Searching the recoding lattice")
            return plan_release(
                Marginals.from_data(frame, qis, missing="value"), k=cfg.k, budget=cfg.budget,
                method=cfg.bound_method, columns=qis, hierarchies=hier_used or None, data=frame if hier_used else None,
                suppression=share if hier_used else None, progress=lambda _n: advance(),
            )

        def keep(result: Any) -> None:
            self.plan, self.plan_for, self.plan_hierarchies = result, state, hier

        self._start("Planning", work, cancelled="Planning cancelled.", keep=keep)

    def start_report(self) -> None:
        """Build the HTML report of the state's run (the report builder) in a worker thread."""
        state = self.state
        run = self.run_of(state)
        if run is None:
            raise ConfigError(f"{SOURCE}: the release is not measured yet; wait for the figures, then build the report.")
        out = self.dir / "report" / "report.html"

        def work(advance: Any) -> Path:
            advance(description="Building the report")
            html, _ = build_report(run.result, advance=advance).write(out)
            return html

        def keep(result: Any) -> None:
            self.report_path, self.report_for = result, state

        self._start("Writing the report", work, cancelled="Report cancelled.", keep=keep)

    def _start(self, title: str, work: Any, *, cancelled: str, keep: Any) -> None:
        """Start ``work`` as the session's one job; when it ends (unless a newer job replaced it), keep
        its result, or show its error or that it was cancelled."""

        def done(job: Job) -> None:
            with self.lock:
                if job.superseded:
                    return
                if job.error is not None:
                    self.error = job.error
                elif job.cancelled:
                    self.notice = cancelled
                else:
                    keep(job.result)

        self.supersede()
        self.job = Job(title, work, on_done=done).start()

    def cancel(self) -> None:
        """The user's Cancel: the running job stops at its next stage, and says so."""
        if self.job is not None and self.job.running:
            self.job.cancel()

    def supersede(self) -> None:
        """Newer work replaces the running job: it stops at its next stage, silently."""
        if self.job is not None and self.job.running:
            self.job.superseded = True
            self.job.cancel()

    def write_release(self) -> Path:
        """The released file of the state on screen, written by the pipeline's writer; refused (an
        error) when the release is over its budget, as ``sdckit run`` refuses."""
        run = self.run_of()
        if run is None:
            raise ConfigError(f"{SOURCE}: the release is not measured yet; wait for the figures.")
        if run.result.refused:
            m = run.result.release_measure
            assert m is not None
            if m.within_budget:  # over by what the other released columns give away
                raise ConfigError(
                    f"{SOURCE}: the released columns beside the keys single people out (see the posterior under the "
                    "verdict): no data file is written, as `sdckit run` refuses. Tick \"posterior pass\", or mask those "
                    "columns."
                )
            raise ConfigError(
                f"{SOURCE}: the release is over its budget (exposure at k = {m.k} is {100 * m.exposure_at_k:.3g} % > "
                f"{100 * m.budget:.3g} %): no data file is written, as `sdckit run` refuses. Add a step, or raise the budget."
            )
        folder = Path(tempfile.mkdtemp(prefix="release-", dir=self.dir))
        path = folder / Path(self.state.output).name
        cfg = run.result.config.replace(output_data=str(path), output_report=None)
        written = write_outputs(dataclasses.replace(run.result, config=cfg))
        return written["data"]

    def close(self) -> None:
        self.cancel()
        shutil.rmtree(self.dir, ignore_errors=True)


def _hierarchies(text: str) -> dict[str, str]:
    """``adult`` (every built-in Adult hierarchy) or ``column=source, ...`` as ``{column: source}``."""
    out: dict[str, str] = {}
    for item in (p.strip() for p in text.split(",")):
        if not item:
            continue
        if item == "adult":
            out |= {c: f"{BUILTIN_PREFIX}{c}" for c in ADULT_HIERARCHY_COLUMNS}
        elif "=" in item:
            column, _, source = item.partition("=")
            out[column.strip()] = source.strip()
        else:
            raise ConfigError(f"{SOURCE}: hierarchies: {item!r} is not column=source; write e.g. adult, or age=age.csv.")
    return out


def _share(text: str) -> float | None:
    if not text.strip():
        return None
    try:
        value = float(text)
    except ValueError:
        raise ConfigError(f"{SOURCE}: suppression: {text!r} is not a number; give a share of records, e.g. 0.05.") from None
    if not 0.0 <= value <= 1.0:
        raise ConfigError(f"{SOURCE}: suppression: {value:g} is not a share in [0, 1]; e.g. 0.05.")
    return value


def plan_steps(plan: Any, hierarchies: dict[str, Any], k: int) -> list[tuple[str, dict[str, Any]]]:
    """A plan as pipeline steps: recode each recoded column to its level (with its hierarchy),
    drop each withheld column, then local suppression when the plan suppresses cells."""
    steps: list[tuple[str, dict[str, Any]]] = []
    excluded = [c for c in plan.excluded]
    rules = {c: {"hierarchy": hierarchies[c], "level": int(level)}
             for c, level in plan.levels.items() if level and c in hierarchies and c not in excluded}
    if rules:
        steps.append(("recode", {"rules": rules}))
    if excluded:
        steps.append(("suppress", {"columns": excluded}))
    if plan.n_suppressed:
        steps.append(("local_suppression", {"k": k, "columns": list(plan.columns)}))
    return steps


def read_options(form: dict[str, Any]) -> dict[str, Any]:
    """The page's reading options as the pipeline's ``read`` section (only those given)."""
    out: dict[str, Any] = {}
    default = ReadSection()
    for key in ReadSection.allowed_keys():
        value = form.get(key)
        if value in (None, ""):
            continue
        if key == "na_values":
            value = [s.strip() for s in str(value).split(",")]
            if tuple(value) == default.na_values:
                continue
        elif value == getattr(default, key):
            continue
        out[key] = value
    return out


def user_error(err: SdcError) -> str:
    """The one line ``sdckit run`` prints for an error (after its ``Error:``)."""
    return str(err)
