"""What every pipeline step is: a frozen, strict pydantic model whose fields are its options.

A step declares once its YAML key (``kind``), a one-line example (``example``, the app's template
and the docs'), whether it draws randomness (:meth:`Step.is_random`), whether it moves what an
attacker knows (:meth:`Step.moves_knowledge`), whether it runs only in memory
(:meth:`Step.in_memory_reason`), the columns it touches (:meth:`Step.columns_touched`), its checks on the
data (:meth:`Step.check`) and how it masks a frame (:meth:`Step.apply`). The pipeline runs each
step through :meth:`Step.apply` with a :class:`StepContext` (what a step may read of the run, never
the whole configuration) and records the :class:`StepLog` it returns.
"""

from __future__ import annotations

import difflib
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field, replace
from types import UnionType
from typing import Annotated, Any, ClassVar, Literal, Union, get_args, get_origin

import polars as pl

from sdckit._io._survey import SurveyLabels
from sdckit.errors import ConfigError
from sdckit.pipeline._fields import Strict
from sdckit.pipeline._roles import Roles
from sdckit.plan import ReleasePlan

__all__ = ["Step", "StepContext", "StepLog", "StepOption", "check_columns_exist"]

RANDOM_FROM_OS = "OS entropy (secret)"
RANDOM_FROM_SEED = "seeded (reproducible run: not for publication)"


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


@dataclass(frozen=True, kw_only=True)
class StepContext:
    """What a step may read of a run (never the whole configuration)."""

    source: str
    """Where the configuration came from, for messages (``adult.yaml``, ``the workbench``)."""
    index: int
    """The step's position in ``steps``, for messages: ``adult.yaml: steps[2].pram: ...``."""
    k: int
    """The pipeline's smallest group size."""
    budget: float = 0.05
    """The pipeline's budget: the share of rows (0..1) allowed in groups of fewer than k rows."""
    bound_method: str = "best"
    """How the release plan bounds the exposure (a distributed ``suppress: plan`` plans itself)."""
    quasi_identifiers: tuple[str, ...] = ()
    numeric: tuple[str, ...] = ()
    """The numeric columns to mask (a numeric step's default columns)."""
    categorical: tuple[str, ...] = ()
    seed: int | None = None
    """This step's seed (None: OS entropy, a real release)."""
    plan: ReleasePlan | None = None
    """The release plan at k and budget (``suppress: plan`` drops what it excludes); None on a distributed
    run, where a ``suppress: plan`` plans on the frame it is given."""
    masked: frozenset[str] = frozenset()
    """Columns earlier steps changed (``suppress: plan`` keeps those)."""
    declared_missing: dict[str, str] = field(default_factory=dict)
    """Column -> its declared missing codes as read (an SPSS 98 "don't know", a Stata ``.d``), for the
    numeric columns whose declared missing cells are missing in the frame: a step says it left them missing."""
    value_labels: dict[str, dict[str, str]] = field(default_factory=dict)
    """Column -> {code as text: label} of the input file's labelled columns (a ``recode`` mapping may
    name a code of a column that holds its labels)."""
    engine: str | None = None
    """None in memory (a polars DataFrame); ``polars`` (a LazyFrame), ``dask`` or ``spark`` where the rows live."""
    linked: tuple[str, ...] = ()
    """Released columns that reveal a key and count as quasi-identifiers (``linked_as: key``): a step
    that takes keys (``local_suppression``) takes them with the keys it is given."""
    household: str | None = None
    """The column grouping rows into households/entities (k then counts distinct entities); None: rows."""
    household_columns: tuple[str, ...] = ()
    """Household-level columns (one value per household): suppressed for every member or none."""
    weight: str | None = None
    """The sampling-weight column, if any (household risk)."""

    @property
    def where(self) -> str:
        """``source: steps[i].kind``-style prefix without the kind (the step adds it)."""
        return f"{self.source}: steps[{self.index}]"

    @property
    def randomness(self) -> str:
        """Where a random step's numbers come from, as logged."""
        return RANDOM_FROM_OS if self.seed is None else RANDOM_FROM_SEED


@dataclass(frozen=True)
class StepOption:
    """One option of a step, for forms and the docs' option table."""

    name: str
    type: str
    """The accepted values, in words (``whole number``, ``mdav | vmdav``, ``list of columns``)."""
    default: Any
    help: str


def check_columns_exist(columns_in_data: Sequence[str], columns: Collection[str], key: str, source: str) -> None:
    """Refuse a named column that is not in the data, with its near matches."""
    for c in columns:
        if c not in columns_in_data:
            matches = difflib.get_close_matches(c, list(columns_in_data), n=2, cutoff=0.6)
            hint = (f" Did you mean {' or '.join(map(repr, matches))}?" if matches
                    else f" The data has: {', '.join(list(columns_in_data)[:15])}.")
            raise ConfigError(f"{source}: {key}: column {c!r} is not in the data.{hint}")


def _type_text(annotation: Any) -> str:
    """An option's accepted values in words (``whole number``, ``mdav | vmdav``, ``list of columns``)."""
    origin, args = get_origin(annotation), get_args(annotation)
    if origin is Annotated:
        return _type_text(args[0])
    if origin is Literal:
        return " | ".join(map(str, args))
    if origin in (Union, UnionType):
        return " or ".join(_type_text(a) for a in args if a is not type(None))
    if origin is tuple:
        inner = _type_text(args[0]) if args else "value"
        return "list of columns" if inner == "text" else f"list of {inner}s"
    if origin is dict:
        return "mapping"
    names = {int: "whole number", float: "number", bool: "true | false", str: "text", dict: "mapping"}
    return names.get(annotation, getattr(annotation, "__name__", str(annotation)))


class Step(Strict):
    """A masking step of the pipeline: its fields are its options, as the pipeline file writes them.

    Subclasses set ``kind`` (a ``Literal``: the YAML key and the registry key), ``example`` and
    the methods below; :meth:`apply` is all the pipeline calls.
    """

    kind: str
    """The step's YAML key."""
    example: ClassVar[str] = "{}"
    """One line of YAML flow style: the app's template and the docs' example."""
    in_memory_only: ClassVar[str | None] = None
    """None: the step runs where the rows live (Dask, Spark, a LazyFrame); else why not, and what to do."""
    masks_amounts: ClassVar[bool] = False
    """True when the step changes numeric amounts (linear relations to released columns then matter)."""
    drops_columns: ClassVar[bool] = False
    """True when the step removes its columns from the release."""

    def is_random(self) -> bool:
        """Whether the step draws random numbers (logged as ``OS entropy (secret)`` or ``seeded``)."""
        return False

    def moves_knowledge(self, column: str, log: StepLog) -> bool:
        """Whether the released value of ``column`` after this step stands for the person's (a public
        recoding or a masking that changes values), so the attacker's knowledge moves with it; a
        suppression (a cell set to missing or ``*``) does not."""
        return True

    def in_memory_reason(self) -> str | None:
        """Why the step cannot run where the rows live (None: it can); :attr:`in_memory_only` by default."""
        return self.in_memory_only

    def refusal(self, engine: str) -> str | None:
        """The end of the message refusing the step on a ``engine`` frame (after ``steps[i].kind``), or None."""
        reason = self.in_memory_reason()
        return None if reason is None else f" does not run on a {engine} frame: {reason}."

    def named_files(self) -> tuple[str, ...]:
        """Files the options name (inputs of the run: never written over)."""
        return ()

    def named_columns(self) -> tuple[str, ...]:
        """The columns the options name (checked against the data before roles are resolved)."""
        return ()

    def columns_touched(self, roles: Roles) -> tuple[str, ...]:
        """The columns the step touches, with the pipeline's roles filling its defaults."""
        return self.named_columns()

    def coarsened_columns(self, roles: Roles) -> tuple[str, ...]:
        """Columns the step releases coarsened (recoded into bands): no exact value of them goes out, so
        the linear-relation check counts them as masked."""
        return ()

    def check_names(self, columns_in_data: Sequence[str], source: str, index: int) -> None:
        """Refuse a column the options name that is not in the data."""
        check_columns_exist(columns_in_data, self.named_columns(), f"steps[{index}].{self.kind}.columns", source)

    def check(
        self, frame: pl.DataFrame, roles: Roles, labels: SurveyLabels | None, *, source: str, index: int,
        declared_categorical: Collection[str] = (),
    ) -> None:
        """Data checks once the roles are known (a category in a numeric step, a declared missing code)."""

    def masked_columns(self, log: StepLog) -> tuple[str, ...]:
        """The columns whose values the step changed (an earlier mask ``suppress: plan`` keeps)."""
        return log.columns

    def apply(self, frame: Any, ctx: StepContext) -> tuple[Any, StepLog]:
        """Mask ``frame`` (a polars DataFrame; a lazy frame when ``ctx.engine`` is set); return it and the log."""
        raise NotImplementedError

    def run(self, frame: Any, ctx: StepContext) -> tuple[Any, StepLog]:
        """:meth:`apply`, then the randomness recorded in the log (never the seed of a real release)."""
        out, log = self.apply(frame, ctx)
        if self.is_random():
            log = replace(log, details={**log.details, "random": True, "randomness": ctx.randomness})
        return out, log

    def options(self) -> dict[str, Any]:
        """The options as the pipeline file writes them (lists for tuples), for ``to_dict``."""
        body = self.model_dump(exclude={"kind"})
        return {k: list(v) if isinstance(v, tuple) else v for k, v in body.items()}

    def to_dict(self) -> dict[str, Any]:
        """``{kind: options}``, as in the pipeline file (parsed back to an equal step)."""
        return {self.kind: self.options()}

    @classmethod
    def options_schema(cls) -> list[StepOption]:
        """Every option: its name, accepted values in words, default and help (the field's docstring)."""
        out = []
        for name, info in cls.model_fields.items():
            if name in cls.internal:
                continue
            out.append(StepOption(name, _type_text(info.annotation), info.default, " ".join((info.description or "").split())))
        return out
