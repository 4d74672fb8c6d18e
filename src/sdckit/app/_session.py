"""One workbench session: what is on screen (a frozen :class:`Workbench`), its undo and redo stacks,
and the :class:`~sdckit.pipeline.PipelineConfig` and pipeline YAML that reproduce it.

The state is plain data: the input, its reading options, a role per column, k, the budget and the
masking steps written as the pipeline file writes them (``{kind: options}``). Every change makes a
new state; undo and redo move between states, and a state's measured run is cached, so undoing
shows its figures again at once. Nothing here runs the pipeline (see :mod:`sdckit.app._jobs`).
"""

from __future__ import annotations

import json
import re
import secrets
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import yaml

from sdckit.errors import ConfigError
from sdckit.pipeline._config import DEFAULT_NAME, DEFAULT_SEED, STEP_KINDS, PipelineConfig, parse_config
from sdckit.pipeline._steps import STEPS

__all__ = [
    "ROLES",
    "ROLE_LABELS",
    "STEP_TEMPLATES",
    "History",
    "Workbench",
    "parse_step",
    "parse_step_options",
    "roles_of",
    "step_text",
]

SOURCE = "the workbench"
"""Where the app's settings come from, in error messages (as ``sdckit run`` names its file)."""

ROLES = ("quasi_identifier", "numeric_key", "numeric", "sensitive", "weight", "household", "identifier", "keep", "none")
"""A column's role on screen. ``quasi_identifier`` is a categorical key (compared value by value);
``numeric_key`` a numeric quasi-identifier that is also masked (it is in both ``quasi_identifiers``
and ``numeric`` of the pipeline file); ``household`` the one column that groups the rows of a
household or other cluster (``household: column`` of the pipeline file); ``none`` is not released.
A ``quasi_identifier`` stored as numbers (``sex`` coded 1/2) is also written under ``categorical:``,
so that the pipeline compares its codes and never averages them."""

ROLE_LABELS = {
    "quasi_identifier": "quasi-identifier (categorical)",
    "numeric_key": "quasi-identifier (numeric, masked)",
    "numeric": "numeric (masked)",
    "sensitive": "sensitive",
    "weight": "weight",
    "household": "household id (cluster)",
    "identifier": "identifier (never released)",
    "keep": "keep (released as is)",
    "none": "no role (not released)",
}

_ROLE_KEYS = {
    "quasi_identifiers": ("quasi_identifier", "numeric_key"),
    "numeric": ("numeric_key", "numeric"),
    "sensitive": ("sensitive",),
    "weight": ("weight",),
    "identifiers": ("identifier",),
    "keep": ("keep",),
}

STEP_TEMPLATES: dict[str, str] = {kind: cls.example for kind, cls in STEPS.items()}
"""An example of each step's options, in the pipeline file's words (YAML flow style): each step class's ``example``."""


def step_text(options: Any) -> str:
    """A step's options as one line of YAML flow style (how the page shows and edits them)."""
    text = yaml.safe_dump(options, default_flow_style=True, sort_keys=False, allow_unicode=True, width=10_000)
    return text.strip().removesuffix("...").strip()


def parse_step(kind: str, text: str, index: int) -> tuple[str, str]:
    """Validate one step typed on the page as YAML flow text: ``(kind, canonical JSON of its
    options)``, or the pipeline file's one-line :class:`~sdckit.errors.ConfigError`."""
    if kind not in STEP_KINDS:
        raise ConfigError(f"{SOURCE}: steps[{index}]: {kind!r} is not a step; use one of {', '.join(STEP_KINDS)}.")
    try:
        options = yaml.safe_load(text) if text.strip() else {}
    except yaml.YAMLError as err:
        first = str(err).strip().splitlines()[0]
        raise ConfigError(
            f"{SOURCE}: steps[{index}].{kind}: the options are not valid YAML ({first}); write them as in the "
            f"pipeline file, e.g. {STEP_TEMPLATES[kind]}."
        ) from None
    return parse_step_options(kind, {} if options is None else options, index)


def parse_step_options(kind: str, options: Any, index: int) -> tuple[str, str]:
    """Validate one step's options (``{option: value}``, as the pipeline file holds them):
    ``(kind, canonical JSON of the options)``, or the pipeline's one-line error, naming ``steps[index]``."""
    if kind not in STEP_KINDS:
        raise ConfigError(f"{SOURCE}: steps[{index}]: {kind!r} is not a step; use one of {', '.join(STEP_KINDS)}.")
    try:
        parse_config({"steps": [{kind: options}]}, source=SOURCE)  # the pipeline's own validation and messages
    except ConfigError as err:
        if index == 0:
            raise
        raise ConfigError(str(err).replace(f"{SOURCE}.steps[0]", f"{SOURCE}.steps[{index}]", 1)) from None
    try:
        return kind, json.dumps(options, sort_keys=False)
    except (TypeError, ValueError):  # a value YAML reads but JSON cannot hold (a date)
        raise ConfigError(
            f"{SOURCE}: steps[{index}].{kind}: the options hold a value the page cannot keep "
            f"({step_text(options)}); write dates and other values as text, in quotes."
        ) from None


@dataclass(frozen=True)
class Workbench:
    """What is on screen, as plain hashable data (one state of the undo history)."""

    input: str = "adult"
    """``adult`` (the bundled data) or a path on this machine."""
    input_name: str = "UCI Adult (bundled)"
    coded: tuple[str, ...] = ()
    """The input's columns stored as numbers: one of them as a ``quasi_identifier`` is written under
    ``categorical:`` (its values are codes)."""
    """How the page names the input (an uploaded file's own name)."""
    read: tuple[tuple[str, Any], ...] = ()
    """Reading options that differ from the defaults (``read`` of the pipeline file)."""
    roles: tuple[tuple[str, str], ...] = ()
    """``(column, role)`` for every column of the input, in its order; see :data:`ROLES`."""
    k: int = 5
    budget: float = 0.05
    steps: tuple[tuple[str, str], ...] = ()
    """``(kind, JSON of the options)`` per masking step, in order."""
    off: tuple[int, ...] = ()
    """The steps switched off (their numbers, from 0): kept on screen, left out of the run and the export."""
    name: str = DEFAULT_NAME
    reproducible: bool = False
    """Write ``seed:`` into the YAML so that ``sdckit run`` redraws the same random steps (not for
    publication: whoever holds the file can redraw the masking)."""
    seed: int = DEFAULT_SEED
    """The seed written when ``reproducible`` is on."""
    posterior_pass: bool = False
    """Write ``posterior_pass: true``: after the steps, suppress the key cells the other released columns
    give away (docs/anonymize.md); without it such a release is refused."""
    output: str = "release.csv"
    """The released file's name in the exported YAML (its ending chooses the format)."""
    report_output: str = "report.html"
    """The report's name in the exported YAML; empty: ``sdckit run`` writes no report."""

    @property
    def role_of(self) -> dict[str, str]:
        return dict(self.roles)

    def step_list(self) -> list[dict[str, Any]]:
        """The steps as the pipeline file writes them: ``[{kind: options}, ...]``."""
        return [{kind: json.loads(opts)} for i, (kind, opts) in enumerate(self.steps) if i not in self.off]

    def run_index(self, index: int) -> int | None:
        """The number of step ``index`` among the steps that run (None when it is switched off)."""
        if index in self.off:
            return None
        return index - sum(1 for i in self.off if i < index)

    def pipeline_dict(self, *, run_seed: int | None = None, export: bool = False) -> dict[str, Any]:
        """The pipeline file of this state. ``run_seed`` is the seed of the app's own run (the
        session's secret one unless ``reproducible``); the export writes ``seed:`` only when
        ``reproducible`` is on."""
        out: dict[str, Any] = {"name": self.name, "input": self.input}
        if self.read:
            out["read"] = {key: list(v) if isinstance(v, tuple) else v for key, v in self.read}
        for key, roles in _ROLE_KEYS.items():
            cols = [c for c, r in self.roles if r in roles]
            if cols:
                out[key] = cols
        categorical = [c for c, r in self.roles if r == "quasi_identifier" and c in self.coded]
        if categorical:
            out["categorical"] = categorical
        household = [c for c, r in self.roles if r == "household"]
        if household:
            if not has_household_role():
                raise ConfigError(
                    f"{SOURCE}: column {household[0]!r}: this sdckit's pipeline has no household role (household:); "
                    "give the column the role identifier (withheld) instead."
                )
            out["household"] = household[0]
        out["k"], out["budget"] = self.k, self.budget
        if self.reproducible:
            if "reproducible" in PipelineConfig.model_fields:  # the explicit opt-in, where the pipeline has it
                out["reproducible"] = True
            out["seed"] = self.seed
        elif not export and run_seed is not None and "reproducible" not in PipelineConfig.model_fields:
            out["seed"] = run_seed  # a secret seed of this session (where the pipeline has no OS-entropy default)
        if self.posterior_pass:
            out["posterior_pass"] = True
        out["steps"] = self.step_list()
        out["output"] = {"data": self.output, "report": self.report_output or None} if export else {"data": None, "report": None}
        return out

    def pipeline_comments(self) -> list[str]:
        """The switched-off steps, as comments of the exported file (they do not run)."""
        return [f"# switched off in the app (not run): {kind}: {step_text(json.loads(opts))}"
                for i, (kind, opts) in enumerate(self.steps) if i in self.off]

    def config(self, *, run_seed: int | None = None) -> PipelineConfig:
        """The validated :class:`PipelineConfig` the app runs for this state."""
        return parse_config(self.pipeline_dict(run_seed=run_seed), source=SOURCE)

    def pipeline_yaml(self) -> str:
        """The pipeline file that reproduces this state with ``sdckit run``."""
        head = [
            "# Written by `sdckit app`: `sdckit run` on this file reproduces the release on screen.",
        ]
        if self.reproducible:
            head.append("# reproducible (not for publication): the seed below lets anyone redraw the random steps.")
        else:
            head.append("# No seed: random steps draw fresh entropy on each run (the setting for publication).")
        if self.input != "adult":
            head.append("# input: a path on the machine that ran the app; change it if you move the file.")
        head += self.pipeline_comments()
        body = yaml.safe_dump(self.pipeline_dict(export=True), sort_keys=False, allow_unicode=True, width=120)
        return "\n".join(head) + "\n" + body


def has_household_role() -> bool:
    """Whether the pipeline file takes ``household: column`` (the household role)."""
    return "household" in PipelineConfig.model_fields


def roles_of(columns: Sequence[str], roles: Any) -> tuple[tuple[str, str], ...]:
    """A :class:`~sdckit.pipeline.Roles` as ``(column, role)`` for every column (see :data:`ROLES`)."""
    out = []
    household = getattr(roles, "household", None)
    households = {household} if isinstance(household, str) else set(household or ())
    for c in columns:
        if c in households:
            role = "household"
        elif c in roles.identifiers:
            role = "identifier"
        elif c in roles.quasi_identifiers:
            role = "numeric_key" if c in roles.numeric else "quasi_identifier"
        elif c in roles.numeric:
            role = "numeric"
        elif c in roles.sensitive:
            role = "sensitive"
        elif c in roles.weight:
            role = "weight"
        elif c in roles.keep:
            role = "keep"
        else:
            role = "none"
        out.append((c, role))
    return tuple(out)


def check_roles(columns: Sequence[str], given: Mapping[str, str]) -> tuple[tuple[str, str], ...]:
    """The roles posted by the page, every column once, each role one of :data:`ROLES`."""
    out = []
    for c in columns:
        role = given.get(c, "none")
        if role not in ROLES:
            raise ConfigError(f"{SOURCE}: column {c!r}: {role!r} is not a role; use one of {', '.join(ROLES)}.")
        out.append((c, role))
    households = [c for c, r in out if r == "household"]
    if len(households) > 1:
        raise ConfigError(f"{SOURCE}: columns {households[0]!r} and {households[1]!r} are both the household id; "
                          "give one of them another role (one column groups the rows of a household).")
    unknown = [c for c in given if c not in columns]
    if unknown:
        raise ConfigError(f"{SOURCE}: column {unknown[0]!r} is not in the data; reload the page.")
    return tuple(out)


@dataclass
class History:
    """The current state with its undo and redo stacks (each change clears redo)."""

    state: Workbench = field(default_factory=Workbench)
    undo_stack: list[tuple[Workbench, str]] = field(default_factory=list)
    redo_stack: list[tuple[Workbench, str]] = field(default_factory=list)
    limit: int = 200

    def change(self, new: Workbench, label: str) -> None:
        """Make ``new`` the state (``label`` names the change, for the undo button)."""
        if new == self.state:
            return
        self.undo_stack.append((self.state, label))
        del self.undo_stack[: -self.limit]
        self.redo_stack.clear()
        self.state = new

    def undo(self) -> str | None:
        """Go back one change; returns its label (None when there is nothing to undo)."""
        if not self.undo_stack:
            return None
        previous, label = self.undo_stack.pop()
        self.redo_stack.append((self.state, label))
        self.state = previous
        return label

    def redo(self) -> str | None:
        """Make the last undone change again; returns its label (None when there is none)."""
        if not self.redo_stack:
            return None
        following, label = self.redo_stack.pop()
        self.undo_stack.append((self.state, label))
        self.state = following
        return label

    def drop_last(self) -> None:
        """Forget the last change, back to the state before it (a change whose run failed)."""
        if self.undo_stack:
            self.state, _ = self.undo_stack.pop()

    @property
    def previous(self) -> Workbench | None:
        """The state before the last change (the "before" of the figures)."""
        return self.undo_stack[-1][0] if self.undo_stack else None


def new_secret_seed() -> int:
    """The seed of a session's random steps when it is not reproducible: OS entropy, never written."""
    return secrets.randbits(63)


def with_steps(state: Workbench, steps: Sequence[tuple[str, str]]) -> Workbench:
    return replace(state, steps=tuple(steps))


def moved_off(off: Sequence[int], *, removed: int | None = None, swapped: tuple[int, int] | None = None) -> tuple[int, ...]:
    """The switched-off step numbers after removing step ``removed`` or swapping two steps."""
    out = set(off)
    if removed is not None:
        out = {i - (i > removed) for i in out if i != removed}
    if swapped is not None:
        a, b = swapped
        out = {b if i == a else a if i == b else i for i in out}
    return tuple(sorted(out))


FIELD_IN_ERROR = re.compile(r"\.steps\[\d+\]\.(\w+)\.(\w+): ")
UNKNOWN_KEY = re.compile(r"\.steps\[\d+\]\.(\w+): unknown key '([^']+)'")


def field_of_error(message: str) -> str | None:
    """The option a step's one-line error is about (shown beside its input), or None."""
    m = FIELD_IN_ERROR.search(message) or UNKNOWN_KEY.search(message)
    return m.group(2) if m else None
