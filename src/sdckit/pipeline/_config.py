"""The declarative release pipeline: a YAML/JSON file, validated by pydantic into a frozen :class:`PipelineConfig`.

Validation is strict and precise: an unknown key names its near matches, a wrong type names the key
path, the value and what was expected. Column names are checked against the data in
:func:`sdckit.pipeline.run_pipeline`, where the data is known.

Column roles (what goes out is decided here, not guessed):

==================  ===========================================================================
quasi_identifiers   columns an attacker may know; released as masked by the steps, measured
numeric             numeric columns to mask (a numeric quasi-identifier may be one of them)
sensitive           released; their l-diversity within the quasi-identifier groups is measured
weight              survey weight(s); never a quasi-identifier; released as they are
keep                released as they are (not quasi-identifiers)
identifiers         never released
household           (alias ``entity``) the column grouping rows into households or entities: never
                    released as is (a fresh random id, or dropped: ``household_id``); k counts
                    distinct households in every group, and the household risk is measured
household_columns   household-level columns (values shared by every member), checked constant
                    within each household; a step that suppresses one member's value suppresses all
==================  ===========================================================================

A column with no role is not released, and the report lists it.
"""

from __future__ import annotations

import codecs
import json
import warnings
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Annotated, Any, ClassVar, Literal

import yaml
from pydantic import Field, ValidationError, field_validator, model_validator

from sdckit.errors import ConfigError
from sdckit.pipeline._fields import Columns, Flag, GroupSize, Strict, Text, near, split_columns
from sdckit.pipeline._steps import (
    STEPS,
    AnonymizeOptions,
    AnyStep,
    CorrelatedNoiseStep,
    MicroaggregateStep,
    NoiseStep,
    RankSwapStep,
    Step,
    SuppressStep,
)

__all__ = [
    "ANONYMIZE_STEPS",
    "AnonymizeStep",
    "CorrelatedNoiseStep",
    "MicroaggregateStep",
    "NoiseStep",
    "PipelineConfig",
    "RankSwapStep",
    "ReadSection",
    "Step",
    "SuppressStep",
    "load_config",
    "parse_config",
]

DEFAULT_SEED = 20261130
DEFAULT_NAME = "sdckit release"

MICROAGG_METHODS = ("mdav", "mdav_blocked", "vmdav", "rank", "pca", "single")
POSITIVITY_MODES = ("none", "same", "subset", "global")
NOISE_DISTRIBUTIONS = ("gaussian", "laplace", "uniform", "rademacher", "discrete")
BOUND_METHODS = ("best", "lower", "support", "theorem2", "theorem3")

ANONYMIZE_STEPS: dict[str, str] = {
    kind: f"sdckit.anonymize:{cls.estimator.__name__}"
    for kind, cls in STEPS.items()
    if issubclass(cls, AnonymizeOptions)
}
"""Pipeline steps whose options are the constructor keywords of an estimator ("module:Class"); kept for
compatibility: each is now a step class of the registry with typed options."""

STEP_KINDS: tuple[str, ...] = tuple(STEPS)
"""Every step kind: the keys of the registry :data:`sdckit.pipeline._steps.STEPS`."""

_Strict = Strict
_near = near
_split = split_columns


class AnonymizeStep:
    """Deprecated: ``AnonymizeStep(kind=..., params={...})`` builds the typed step of that kind
    (``RecodeStep``, ``TopCodeStep``, ``LocalSuppressionStep``, ``PramStep``); build those, or parse the
    step with :func:`parse_config`, instead."""

    def __new__(cls, *, kind: str, params: Mapping[str, Any] | None = None) -> Step:  # type: ignore[misc]
        warnings.warn(
            "AnonymizeStep(kind=..., params=...) is deprecated: each anonymize step is a class with typed options "
            "(sdckit.pipeline._steps.STEPS[kind]); build that, or parse the step with parse_config.",
            DeprecationWarning,
            stacklevel=2,
        )
        if kind not in ANONYMIZE_STEPS:
            raise ValueError(f"{kind!r} is not an anonymize step; use one of {', '.join(ANONYMIZE_STEPS)}.")
        return STEPS[kind].model_validate(dict(params or {}))


DEFAULT_NA_VALUES: tuple[str, ...] = ("", "NA", "NaN")
"""The strings read as missing when ``read.na_values`` is not given (those of ``sdckit._io.read_data``)."""


class ReadSection(_Strict):
    """How the input file is read: the options of :func:`sdckit._io.read_data` and of every command's
    ``--separator``, ``--encoding``, ``--decimal`` and ``--na-values``, under the same names.

    They apply to text files (CSV, TSV, ``.txt``, ``.gz`` allowed); ``na_values`` also to
    spreadsheets and ``encoding`` also to SPSS, Stata and SAS files.
    """

    known_as: ClassVar[dict[str, str]] = {
        "sep": "separator", "delimiter": "separator", "delim": "separator",
        "null_values": "na_values", "na": "na_values", "na_strings": "na_values", "missing_values": "na_values",
        "decimal_mark": "decimal", "decimal_comma": "decimal",
    }
    unsupported: ClassVar[dict[str, str]] = {
        "sheet": "a spreadsheet is read from its first sheet; save the sheet you mean as a file of its own (or as CSV)",
        "sheet_name": "a spreadsheet is read from its first sheet; save the sheet you mean as a file of its own (or as CSV)",
    }

    separator: Text | None = None
    """The field separator, one character (``tab`` or ``\\t`` for a tab); None sniffs it (comma, semicolon,
    tab or bar)."""
    encoding: Text = "utf-8"
    """The text encoding, e.g. ``utf-8`` (a byte-order mark is skipped), ``latin-1``, ``cp1252``."""
    decimal: Text = "."
    """The decimal mark, ``.`` or ``,`` (then the separator cannot be a comma)."""
    na_values: tuple[Text, ...] = DEFAULT_NA_VALUES
    """The strings that mean missing (after surrounding blanks are stripped); they replace the default
    empty, ``NA`` and ``NaN``, so list those too if the file also uses them."""
    labels: Literal["labels", "codes"] = "labels"
    """SPSS, Stata and SAS files: a labelled variable holds its value labels (``labels``; an unlabelled
    code stays a value) or its codes (``codes``); the labels travel with the data either way."""

    @model_validator(mode="before")
    @classmethod
    def _other_names(cls, raw: Any) -> Any:
        if isinstance(raw, Mapping):
            for key in raw:
                if key in cls.known_as:
                    raise ValueError(f"unknown key {str(key)!r}. Did you mean {cls.known_as[key]!r}?")
                if key in cls.unsupported:
                    raise ValueError(f"unknown key {str(key)!r}: {cls.unsupported[key]}.")
        return raw

    @field_validator("separator", mode="before")
    @classmethod
    def _separator(cls, v: Any) -> Any:
        if v in ("tab", "TAB", "\\t"):  # YAML keeps '\t' in single quotes as backslash and t
            return "\t"
        if isinstance(v, str) and len(v) != 1:
            raise ValueError(
                f"{v!r} is not one character; give the one character between fields, e.g. separator: ';' "
                "or separator: tab (leave the key out to sniff it)."
            )
        return v

    @field_validator("encoding", mode="before")
    @classmethod
    def _encoding(cls, v: Any) -> Any:
        if isinstance(v, str):
            try:
                codecs.lookup(v)
            except LookupError:
                raise ValueError(
                    f"{v!r} is not an encoding Python knows; use e.g. utf-8, latin-1 or cp1252."
                ) from None
        return v

    @field_validator("decimal", mode="before")
    @classmethod
    def _decimal(cls, v: Any) -> Any:
        if isinstance(v, str) and v not in (".", ","):
            raise ValueError(f"{v!r} is not a decimal mark; use '.' or ','.")
        return v

    @field_validator("na_values", mode="before")
    @classmethod
    def _na_values(cls, v: Any) -> Any:
        """``"-9, NA"`` is split on commas (as ``--na-values``); YAML's ``-9`` is the string ``-9``."""
        if isinstance(v, str):
            return [s.strip() for s in v.split(",")]
        if isinstance(v, (list, tuple)):
            out = []
            for item in v:
                if isinstance(item, int) and not isinstance(item, bool):
                    out.append(str(item))
                elif isinstance(item, str):
                    out.append(item.strip())
                else:
                    raise ValueError(
                        f"{item!r} ({type(item).__name__}) is not a string; quote each value as it is written in "
                        f"the file, e.g. na_values: ['-9', '{item}', NA]."
                    )
            return out
        return v

    @model_validator(mode="after")
    def _decimal_comma_needs_another_separator(self) -> ReadSection:
        if self.decimal == "," and self.separator == ",":
            raise ValueError(
                "decimal: ',' and separator: ',' cannot both hold: a file with decimal commas separates its "
                "fields with another character; write e.g. separator: ';'."
            )
        return self

    @property
    def is_default(self) -> bool:
        """True when every option has its default (the file is read as any command reads it)."""
        return self == ReadSection()

    def read_kwargs(self) -> dict[str, Any]:
        """The keywords of :func:`sdckit._io.read_data`."""
        return {"separator": self.separator, "encoding": self.encoding, "decimal": self.decimal,
                "na_values": self.na_values, "labels": self.labels}

    def to_dict(self) -> dict[str, Any]:
        """Plain data, for the report sidecar."""
        out = {**self.read_kwargs(), "na_values": list(self.na_values)}
        if self.labels == "labels":  # the default, and the only reading of files without labels
            del out["labels"]
        return out


class Output(_Strict):
    data: Text | None = None
    report: Text | None = "report.html"


Risk = Annotated[float, Field(strict=False, ge=0.0, le=1.0)]


class AttackBudget(_Strict):
    """The largest risk each attack may show on the release (0..1); an attack without one only warns."""

    singling_out: Risk | None = None
    linkability: Risk | None = None
    inference: Risk | None = None


class AttackSection(_Strict):
    """The attacks an outsider runs on the release (singling out, linkability, inference; every
    released column known, against a held-out control): sample sizes and budget (see ``docs/risk.md``)."""

    run: Flag = True
    """Run the attacks in the release measure (``false``: not run, not reported)."""
    n_attacks: Annotated[int, Field(strict=True, ge=10, le=100_000)] = 300
    """Attacks of each kind (queries, targets): more is slower and narrows the intervals."""
    n_control: Annotated[int, Field(strict=True, ge=10)] = 1000
    """Records held out as the control (at most a fifth of the rows)."""
    budget: AttackBudget = Field(default_factory=AttackBudget)
    """Per attack, the largest risk allowed: over it the release is refused (exit 3) unless
    ``allow_over_budget``; e.g. ``budget: {singling_out: 0.05, linkability: 0.05, inference: 0.1}``."""

    def budgets(self) -> dict[str, float]:
        """The budgets set, by attack."""
        return {k: float(v) for k, v in self.budget.model_dump().items() if v is not None}


EXPERIMENTS: tuple[str, ...] = ("curator_plan", "microaggregation", "spectral")
"""The experiments on the input a report can add (``experiments: [...]``); ``sdckit report`` without a
pipeline runs all three, ``sdckit run`` none unless listed."""

EXPERIMENT_MAX_COLUMNS = 20
"""Guessed numeric columns beyond this many are left out of the microaggregation and private-PCA
experiments (the first ones in file order run, and the report says so); named columns all run."""


class PipelineConfig(_Strict):
    """A validated release pipeline. Paths are resolved against the config file's folder."""

    input: Text | None = None
    """Path of the data (CSV, Parquet, JSON lines); None or ``adult`` for the bundled Adult data."""
    read: ReadSection = Field(default_factory=ReadSection)
    """How the input file is read (separator, encoding, decimal mark, strings that mean missing)."""
    name: Text = DEFAULT_NAME
    """Title of the report."""
    quasi_identifiers: Columns | None = None
    """Columns an attacker may know (default for Adult: the report defaults; otherwise guessed, and said so)."""
    numeric: Columns | None = None
    """Numeric columns to mask (default for Adult: the report defaults; otherwise guessed)."""
    sensitive: Columns | None = None
    """Released; their l-diversity within the quasi-identifier groups is measured."""
    weight: Columns | None = None
    """Survey weight column(s): never quasi-identifiers, released as they are."""
    identifiers: Columns | None = None
    """Never released."""
    keep: Columns | None = None
    """Released as they are (not quasi-identifiers)."""
    categorical: Columns | None = None
    """Columns whose values are categories even when they are numbers (``sex`` coded 1/2): never
    microaggregated or advised to be, left out of interval disclosure. Labelled columns of an SPSS,
    Stata or SAS file are categorical without being listed."""
    household: Text | None = None
    """The column that groups rows into households or entities (a firm's monthly rows); ``entity:`` is
    another name for it. Never released as is (``household_id``); when set, k counts distinct
    households/entities in every group of identical released key values (headline, budget, refusal),
    and the release's household risk is measured (sdcMicro's ``hier_risk``)."""
    household_columns: Columns | None = None
    """Household-level columns: values shared by every member (the dwelling's roof, the region). Checked
    constant within each household; local suppression then suppresses a value for every member or none."""
    household_id: Literal["random", "drop"] = "random"
    """How the household column goes out: ``random`` (default: a fresh random id per household, from OS
    entropy, so members stay linked and nothing links to the input's ids) or ``drop``."""
    k: GroupSize = 5
    """Group size of k-anonymity for the risk figures, the plan and the release check."""
    budget: Annotated[float, Field(strict=True, ge=0.0, le=1.0)] = 0.05
    """The largest share of users allowed in groups smaller than k (0..1), for the plan and the release."""
    bound_method: Literal["best", "lower", "support", "theorem2", "theorem3"] = "best"
    """Bound used by the planner (see ``sdckit.risk.joint_exposure_bound``)."""
    missing: Literal["value", "drop"] = "value"
    """Missing values as a value of their own (default) or rows dropped."""
    missing_semantics: Literal["wildcard", "value"] = "value"
    """How the release check groups a missing (suppressed) quasi-identifier cell: ``value`` (default:
    a value of its own, so the budget reads "every released row looks exactly like at least k - 1
    others") or ``wildcard`` (it matches any value, sdcMicro's rule). The other reading and the
    consistent count are stated beside the headline."""
    seed: Annotated[int, Field(strict=True, ge=0)] | None = None
    """Seed of every random step, only with ``reproducible: true``; without it every random step
    (decoys, PRAM, noise, the row order) draws fresh OS entropy, and no seed is recorded."""
    reproducible: Flag = False
    """Draw every random step from ``seed`` (tests and reproductions): whoever learns the seed can
    undo PRAM and tell decoys from suppressions, so the report marks the release not for publication."""
    shuffle_rows: Flag = True
    """Write the release's rows in random order (OS entropy), so no row links to the input by its
    position; ``false`` keeps the input's order (the report says so)."""
    engine: Literal["polars", "dask", "spark"] = "polars"
    """Where the rows live: ``polars`` (default: in memory, the full report), or ``dask`` / ``spark``
    (the input read as a distributed frame, the steps run where the rows live, the release written
    as Parquet part files and measured there; see ``docs/scale.md``)."""
    partitions: Annotated[int, Field(strict=True, ge=1)] | None = None
    """With ``engine: dask`` or ``spark``: repartition the input into this many partitions (default:
    as read)."""
    simulate_protocol: Annotated[int, Field(strict=True, ge=0)] = 0
    """Users to run through the shuffle protocol on loopback for the report (0: no simulation)."""
    experiments: tuple[str, ...] = ()
    """Experiments on the input to add to the report, none by default: ``curator_plan`` (what a
    curator behind a shuffler could release), ``microaggregation`` (MDAV utility table),
    ``spectral`` (noise for private PCA). They measure the input, not the release."""
    linked: dict[Text, Columns] | None = None
    """``keep`` columns that reveal quasi-identifiers, ``{column: [keys]}`` (``relationship: [sex,
    marital-status]``): counted as quasi-identifiers (see ``linked_as``), with those found on the data."""
    linked_threshold: Annotated[float, Field(strict=True, gt=0.0, le=1.0)] | None = 0.3
    """A ``keep`` column whose uncertainty coefficient U(key | column) reaches this for some key is
    linked (found on the data, named in the console and the report); null: only the declared ones."""
    linked_as: Literal["key", "ghost"] = "key"
    """``key`` (default): a linked column is a quasi-identifier for the steps and every figure;
    ``ghost``: suppressed with the key cells it reveals (sdcMicro's ghost variables), still counted."""
    attacker_knows: Columns | None = None
    """Released columns a wider attacker may know besides the keys: the headline is shown again for
    keys plus these (the report's scenarios), so a reviewer sees what a wrong choice of keys costs."""
    posterior_pass: Flag = False
    """After the steps, suppress the released non-key values (and, where they do not suffice, one more key)
    of every released group where the attacker who reads every released column puts more than 1/k + 0.05
    on a person's row or more than ``posterior_bound`` on a suppressed cell (docs/anonymize.md)."""
    posterior_bound: Annotated[float, Field(strict=False, gt=0.0, lt=1.0)] | None = None
    """The bound on the posterior of a suppressed cell that the posterior pass enforces and the report
    states (default 1 - 1/k: the attacker's best guess of a hidden value is wrong at least 1/k of the time)."""
    allow_over_budget: Flag = False
    """Write the protected data even when the release is over budget (the summary says so in red)."""
    attacks: AttackSection = Field(default_factory=AttackSection)
    """The attacks an outsider runs on the release, and their budget (``attacks: {budget: {singling_out: 0.05}}``)."""
    allow_linear_relations: Flag = False
    """Mask even when a linear relation ties masked columns to released unmasked ones."""
    warn_loss_share: Annotated[float, Field(ge=0, le=1)] = 0.25
    """Warn when a step suppresses (or PRAM changes) more than this share of a released column's cells."""
    warn_key_categories_share: Annotated[float, Field(ge=0, le=1)] = 0.2
    """Warn when a quasi-identifier no step recodes has more distinct values than this share of the rows."""
    steps: tuple[AnyStep, ...] = ()
    """Masking steps, applied in order."""
    output_data: Text | None = None
    """Where to write the protected data (format by extension); None writes nothing."""
    output_report: Text | None = "report.html"
    """Where to write the HTML report (the JSON sidecar goes beside it); None writes none."""
    source: str = "<dict>"
    """Where the config came from (for messages)."""
    config_file: str | None = None
    """The pipeline file's path (an input: never written over)."""

    internal: ClassVar[tuple[str, ...]] = ("source", "output_data", "output_report", "config_file")

    @model_validator(mode="before")
    @classmethod
    def _entity_is_household(cls, raw: Any) -> Any:
        """``entity:`` is another name for ``household:`` (business and panel files)."""
        if isinstance(raw, Mapping) and "entity" in raw:
            if raw.get("household") is not None and raw.get("entity") != raw.get("household"):
                raise ValueError("give household or entity (two names for one role), not both.")
            raw = {k: v for k, v in raw.items() if k != "entity"} | {"household": raw["entity"]}
        return raw

    @field_validator("quasi_identifiers", "numeric", "sensitive", "weight", "identifiers", "keep", "categorical",
                     "attacker_knows", "household_columns", mode="before")
    @classmethod
    def split_columns(cls, v: Any) -> Any:
        return _split(v)

    @field_validator("linked", mode="before")
    @classmethod
    def _split_linked(cls, v: Any) -> Any:
        return {c: _split(keys) for c, keys in v.items()} if isinstance(v, Mapping) else v

    @field_validator("experiments", mode="before")
    @classmethod
    def _known_experiments(cls, v: Any) -> Any:
        items = _split(v) if isinstance(v, str) else v
        if items is None:
            return ()
        if not isinstance(items, (list, tuple)):
            raise ValueError(f"give a list, e.g. experiments: [{', '.join(EXPERIMENTS)}]; got {v!r}.")
        for item in items:
            if item not in EXPERIMENTS:
                raise ValueError(
                    f"{item!r} is not an experiment.{_near(str(item), EXPERIMENTS)}"
                )
        return tuple(dict.fromkeys(items))

    @field_validator("read", mode="before")
    @classmethod
    def _empty_read(cls, v: Any) -> Any:
        return {} if v is None else v  # `read:` with nothing under it

    @field_validator("missing", mode="before")
    @classmethod
    def _missing_is_a_policy(cls, v: Any) -> Any:
        if v not in ("value", "drop", "error") and isinstance(v, (str, int)) and not isinstance(v, bool):
            raise ValueError(
                f"{v!r} is not one of value or drop (the missing-value policy); the strings that mean missing "
                f"in the file go under read, e.g. read: {{na_values: ['{v}', NA, '']}}."
            )
        return v  # other values get the usual "is not one of" message

    @model_validator(mode="after")
    def _read_options_need_a_file(self) -> PipelineConfig:
        if self.uses_adult and not self.read.is_default:
            raise ValueError(
                "read: the reading options apply to a file given as input; the bundled Adult data is read "
                "as it is. Give input: your_file.csv, or leave read out."
            )
        return self

    @model_validator(mode="after")
    def _roles_do_not_clash(self) -> PipelineConfig:
        roles = {
            "quasi_identifiers": self.quasi_identifiers,
            "sensitive": self.sensitive,
            "weight": self.weight,
            "identifiers": self.identifiers,
            "keep": self.keep,
        }
        seen: dict[str, str] = {}
        for role, cols in roles.items():
            for c in cols or ():
                if c in seen:
                    raise ValueError(
                        f"column {c!r} is under both {seen[c]} and {role}; give each column one role."
                    )
                seen[c] = role
        for c in self.numeric or ():
            if c in (self.categorical or ()):
                raise ValueError(
                    f"column {c!r} is under numeric (to mask as a number) and categorical; a category is not averaged. "
                    "Give it one of the two."
                )
            if seen.get(c) in ("identifiers", "keep", "weight"):
                raise ValueError(
                    f"column {c!r} is under numeric (to mask) and {seen[c]}; a masked column is not "
                    f"{'released as is' if seen[c] != 'identifiers' else 'withheld'}. Give it one role."
                )
        if self.household is not None:
            h = self.household
            if h in seen or h in (self.numeric or ()) or h in (self.household_columns or ()):
                where = seen.get(h) or ("numeric" if h in (self.numeric or ()) else "household_columns")
                raise ValueError(
                    f"column {h!r} is the household (entity) column and under {where}; the household id is never "
                    f"released as is (household_id: random or drop). Remove it from {where}."
                )
            if self.engine != "polars":
                raise ValueError(
                    f"household: {h}: households are kept whole in memory; use engine: polars (the default)."
                )
        elif self.household_columns:
            raise ValueError(
                "household_columns need household: name the column that groups rows into households, e.g. "
                "household: hhid."
            )
        if self.posterior_pass and self.engine != "polars":
            raise ValueError(
                f"posterior_pass: true reads every released row of every group at once, in memory; on engine: "
                f"{self.engine} leave it out (the console and the sidecar then say the posterior was not "
                "measured), or use engine: polars (the default)."
            )
        return self

    @model_validator(mode="after")
    def _seed_is_an_explicit_choice(self) -> PipelineConfig:
        if self.seed is not None and not self.reproducible:
            raise ValueError(
                f"seed: {self.seed} makes every random step reproducible, so whoever learns it can undo PRAM and "
                "tell decoys from suppressions; add reproducible: true (the report then marks the release not "
                "for publication), or leave seed out for fresh OS entropy."
            )
        if self.reproducible and self.seed is None:
            raise ValueError("reproducible: true needs a seed, e.g. seed: 7 (or leave reproducible out).")
        return self

    @property
    def step_seed(self) -> int | None:
        """The seed base of the random steps: ``seed`` in a reproducible run, else None (OS entropy)."""
        return self.seed if self.reproducible else None

    @property
    def experiment_seed(self) -> int:
        """Seed of the report's own experiments (samples for its figures; nothing of the release)."""
        return self.seed if self.reproducible and self.seed is not None else DEFAULT_SEED

    @property
    def uses_adult(self) -> bool:
        """True when the input is the bundled Adult data."""
        return self.input is None or self.input.lower() == "adult"

    @property
    def declares_roles(self) -> bool:
        """True when the file names any role (else quasi-identifiers are guessed, and the report says so)."""
        return any(
            getattr(self, r) for r in ("quasi_identifiers", "sensitive", "weight", "identifiers", "keep", "numeric")
        )

    def replace(self, **changes: Any) -> PipelineConfig:
        """A copy with ``changes`` (validated again)."""
        data = {k: getattr(self, k) for k in type(self).model_fields}
        data.update(changes)
        try:
            return type(self).model_validate(data)
        except ValidationError as err:
            raise _config_error(err, self.source) from None

    def to_dict(self) -> dict[str, Any]:
        """Plain data, for the report sidecar."""
        return {
            "input": self.input or "adult",
            "read": self.read.to_dict(),
            "name": self.name,
            "quasi_identifiers": list(self.quasi_identifiers or ()),
            "numeric": list(self.numeric or ()),
            "sensitive": list(self.sensitive or ()),
            "weight": list(self.weight or ()),
            "identifiers": list(self.identifiers or ()),
            "keep": list(self.keep or ()),
            "categorical": list(self.categorical or ()),
            **({"household": self.household, "household_columns": list(self.household_columns or ()),
                "household_id": self.household_id} if self.household is not None else {}),
            "k": self.k,
            "budget": self.budget,
            "bound_method": self.bound_method,
            "missing": self.missing,
            "missing_semantics": self.missing_semantics,
            "seed": self.seed if self.reproducible else None,
            "reproducible": self.reproducible,
            "shuffle_rows": self.shuffle_rows,
            "simulate_protocol": self.simulate_protocol,
            "experiments": list(self.experiments),
            "linked": {c: list(v) for c, v in (self.linked or {}).items()},
            "linked_threshold": self.linked_threshold,
            "linked_as": self.linked_as,
            "attacker_knows": list(self.attacker_knows or ()),
            "posterior_pass": self.posterior_pass,
            "posterior_bound": self.posterior_bound,
            "allow_over_budget": self.allow_over_budget,
            "attacks": self.attacks.model_dump(),
            "allow_linear_relations": self.allow_linear_relations,
            "warn_loss_share": self.warn_loss_share,
            "warn_key_categories_share": self.warn_key_categories_share,
            "steps": [s.to_dict() for s in self.steps],
            "output": {"data": self.output_data, "report": self.output_report},
        }


# --- errors ------------------------------------------------------------------------------------


def _where(source: str, loc: Sequence[Any]) -> str:
    out = source
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        elif str(part).startswith(("function-", "literal[", "constrained-", "tuple[")):
            continue
        else:
            out += f".{part}"
    return out


def _config_error(err: ValidationError, source: str) -> ConfigError:
    """The first problem of ``err`` as one sentence: the key path, the value, what was expected."""
    errors = err.errors()
    # a union (e.g. t: number or 'recommended') reports one error per branch: the number's is the useful one
    e = next((x for x in errors if x["type"] not in ("literal_error",)), errors[0]) if len(errors) > 1 else errors[0]
    kind, value, ctx = e["type"], e.get("input"), e.get("ctx", {})
    where = _where(source, [p for p in e["loc"] if not (isinstance(p, str) and p.startswith(("literal[", "function-")))])
    got = f"got {value!r} ({type(value).__name__})"
    if kind == "value_error":
        return ConfigError(f"{where}: {ctx.get('error', e['msg'])}")
    if kind in ("int_type", "int_parsing", "int_from_float"):
        return ConfigError(f"{where}: expected a whole number, {got}.")
    if kind in ("float_type", "float_parsing"):
        return ConfigError(f"{where}: expected a number, {got}.")
    if kind in ("bool_type", "bool_parsing"):
        return ConfigError(f"{where}: expected true or false, {got}.")
    if kind == "string_type":
        return ConfigError(f"{where}: expected a string, {got}.")
    if kind in ("greater_than_equal", "greater_than", "less_than_equal", "less_than"):
        bounds = {"greater_than_equal": ">=", "greater_than": ">", "less_than_equal": "<=", "less_than": "<"}
        limit = next(iter(ctx.values()), "")
        return ConfigError(f"{where}: must be {bounds[kind]} {limit}, got {value}.")
    if kind == "literal_error":
        expected = str(ctx.get("expected", "")).replace("'", "")
        return ConfigError(f"{where}: {value!r} is not one of {expected}.")
    if kind in ("tuple_type", "list_type", "too_short", "iterable_type"):
        return ConfigError(f"{where}: expected a non-empty list of column names, {got}.")
    if kind in ("dict_type", "model_type", "model_attributes_type"):
        return ConfigError(f"{where}: expected a mapping of keys to values, {got}.")
    return ConfigError(f"{where}: {e['msg']} ({got}).")


def _mapping(value: Any, where: str) -> Mapping[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise ConfigError(f"{where}: expected a mapping of keys to values, got {value!r} ({type(value).__name__}).")
    return value


def _step(raw: Any, i: int, source: str) -> Step:
    where = f"{source}.steps[{i}]"
    if isinstance(raw, str):
        raw = {raw: {}}
    if not isinstance(raw, Mapping) or len(raw) != 1:
        raise ConfigError(
            f"{where}: each step is one of {', '.join(STEP_KINDS)} with its options, e.g. `- microaggregate: {{k: 3}}`."
        )
    kind, opts = next(iter(raw.items()))
    if kind not in STEP_KINDS:
        raise ConfigError(f"{where}: unknown key {str(kind)!r}.{_near(str(kind), STEP_KINDS)}")
    if kind == "suppress" and isinstance(opts, (str, list)):  # `- suppress: plan` shorthand
        opts = {"columns": opts}
    opts = _mapping(opts, f"{where}.{kind}")
    try:
        return STEPS[kind].model_validate(dict(opts))
    except ValidationError as err:
        raise _config_error(err, f"{where}.{kind}") from None


def parse_config(raw: Any, *, base: Path | None = None, source: str = "<dict>") -> PipelineConfig:
    """Validate a mapping (as read from YAML/JSON) into a :class:`PipelineConfig`.

    Relative paths are resolved against ``base`` (the config file's folder).
    """
    obj = dict(_mapping(raw, source))

    def resolve(p: Any) -> Any:
        if not isinstance(p, str) or base is None or p.lower() == "adult" or Path(p).is_absolute():
            return p
        return str(base / p)

    raw_steps = obj.pop("steps", None) or []
    if not isinstance(raw_steps, list):
        raise ConfigError(f"{source}.steps: expected a list of steps, got {raw_steps!r} ({type(raw_steps).__name__}).")
    steps = tuple(_step(s, i, source) for i, s in enumerate(raw_steps))
    output_raw = obj.pop("output", None)
    try:
        output = Output.model_validate(dict(_mapping(output_raw, f"{source}.output")))
    except ValidationError as err:
        raise _config_error(err, f"{source}.output") from None
    for key in obj:
        if key in ReadSection.allowed_keys():
            raise ConfigError(
                f"{source}: unknown key {str(key)!r}: reading options go under read, e.g. "
                f"read: {{{key}: {obj[key]!r}}}."
            )
        if key == "compare":
            raise ConfigError(f"{source}: a `compare:` section is run by `sdckit compare {source}` (sdckit.compare.load_compare).")
        if key not in PipelineConfig.allowed_keys() and key != "entity":
            allowed = [*PipelineConfig.allowed_keys(), "steps", "output", "entity"]
            renamed = {"epsilon": "steps[].noise.max_leakage_nats"}
            if key in renamed:
                raise ConfigError(f"{source}: {key!r} was renamed {renamed[key]!r} (leakage in nats, not differential privacy).")
            raise ConfigError(f"{source}: unknown key {str(key)!r}.{_near(str(key), allowed)}")
    if "input" in obj:
        obj["input"] = resolve(obj["input"])
    try:
        return PipelineConfig.model_validate(
            {
                **obj,
                "steps": steps,
                "output_data": resolve(output.data),
                "output_report": resolve(output.report),
                "source": source,
            }
        )
    except ValidationError as err:
        raise _config_error(err, source) from None


def load_config(path: str | Path) -> PipelineConfig:
    """Read and validate a pipeline file (YAML or JSON)."""
    p = Path(path)
    if not p.exists():
        raise ConfigError(f"no pipeline file at {str(path)!r}.")
    text = p.read_text(encoding="utf-8")
    try:
        raw = json.loads(text) if p.suffix.lower() == ".json" else yaml.safe_load(text)
    except (yaml.YAMLError, json.JSONDecodeError) as err:
        first = str(err).strip().splitlines()[0]
        raise ConfigError(f"{p.name} is not valid {'JSON' if p.suffix == '.json' else 'YAML'}: {first}") from None
    return parse_config(raw, base=p.parent, source=p.name).replace(config_file=str(p))
