"""The declarative release pipeline: a YAML/JSON file, validated into a frozen :class:`PipelineConfig`.

Validation is strict and precise: an unknown key names its near matches, a wrong type names the key
path, the value and what was expected. Column names are checked against the data in
:func:`sdckit.pipeline.run_pipeline`, where the data is known.
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import yaml

from sdckit.errors import ConfigError

__all__ = [
    "MicroaggregateStep",
    "NoiseStep",
    "PipelineConfig",
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


@dataclass(frozen=True, kw_only=True)
class MicroaggregateStep:
    """Replace the numeric columns by group means (k-anonymity for continuous attributes)."""

    method: str = "mdav"
    """MDAV or one of its family (see ``sdckit.microagg``)."""
    k: int = 3
    """Smallest group size."""
    columns: tuple[str, ...] | None = None
    """Columns to microaggregate together (default: the pipeline's ``numeric`` columns)."""
    restore_moments: bool = True
    """Apply the linear transformation that restores the original mean and covariance."""
    positivity: str = "none"
    """Positivity-preserving variant: ``none``, ``same``, ``subset`` or ``global``."""

    kind: Literal["microaggregate"] = "microaggregate"


@dataclass(frozen=True, kw_only=True)
class NoiseStep:
    """Add independent noise of variance ``t`` per entry (the local mechanism of private PCA)."""

    t: float | Literal["recommended"] = "recommended"
    """Noise variance per entry (on standardised columns), or ``recommended`` from the design."""
    distribution: str = "gaussian"
    """Noise law: gaussian, laplace, uniform, rademacher, discrete."""
    columns: tuple[str, ...] | None = None
    """Columns to perturb (default: the pipeline's ``numeric`` columns)."""
    epsilon: float = 1.0
    """Leakage budget in nats used when ``t`` is ``recommended``."""

    kind: Literal["noise"] = "noise"


@dataclass(frozen=True, kw_only=True)
class SuppressStep:
    """Global suppression: drop quasi-identifiers that the release plan excludes (or those named)."""

    columns: Literal["plan"] | tuple[str, ...] = "plan"
    """``plan`` (drop what the planner excluded) or an explicit list of columns to drop."""

    kind: Literal["suppress"] = "suppress"


Step = MicroaggregateStep | NoiseStep | SuppressStep


@dataclass(frozen=True, kw_only=True)
class PipelineConfig:
    """A validated release pipeline. Paths are resolved against the config file's folder."""

    input: str | None = None
    """Path of the data (CSV, Parquet, JSON lines); None or ``adult`` for the bundled Adult data."""
    name: str = DEFAULT_NAME
    """Title of the report."""
    quasi_identifiers: tuple[str, ...] | None = None
    """Columns an attacker may know (default for Adult: the report defaults; otherwise required)."""
    numeric: tuple[str, ...] | None = None
    """Numeric columns to mask (default for Adult: the report defaults; otherwise none)."""
    k: int = 5
    """Group size of k-anonymity for the risk figures and the plan."""
    budget: float = 0.05
    """Largest acceptable share of users in groups < k (0..1) for the plan."""
    bound_method: str = "best"
    """Bound used by the planner (see ``sdckit.risk.joint_exposure_bound``)."""
    missing: Literal["value", "drop"] = "value"
    """Missing values as a value of their own (default) or rows dropped."""
    seed: int = DEFAULT_SEED
    """Seed of every random step."""
    simulate_protocol: int = 0
    """Users to run through the shuffle protocol on loopback for the report (0: no simulation)."""
    steps: tuple[Step, ...] = ()
    """Masking steps, applied in order."""
    output_data: str | None = None
    """Where to write the protected data (format by extension); None writes nothing."""
    output_report: str | None = "report.html"
    """Where to write the HTML report (the JSON sidecar goes beside it); None writes none."""
    source: str = "<dict>"
    """Where the config came from (for messages)."""
    extra: Mapping[str, Any] = field(default_factory=dict)

    @property
    def uses_adult(self) -> bool:
        """True when the input is the bundled Adult data."""
        return self.input is None or self.input.lower() == "adult"

    def to_dict(self) -> dict[str, Any]:
        """Plain data, for the report sidecar."""
        return {
            "input": self.input or "adult",
            "name": self.name,
            "quasi_identifiers": list(self.quasi_identifiers or ()),
            "numeric": list(self.numeric or ()),
            "k": self.k,
            "budget": self.budget,
            "bound_method": self.bound_method,
            "missing": self.missing,
            "seed": self.seed,
            "simulate_protocol": self.simulate_protocol,
            "steps": [{s.kind: {k: v for k, v in vars(s).items() if k != "kind"}} for s in self.steps],
            "output": {"data": self.output_data, "report": self.output_report},
        }


# --- validation helpers ------------------------------------------------------------------------


def _unknown(key: str, allowed: Sequence[str], where: str) -> ConfigError:
    near = difflib.get_close_matches(key, list(allowed), n=2, cutoff=0.6)
    hint = f" Did you mean {' or '.join(map(repr, near))}?" if near else f" Allowed: {', '.join(allowed)}."
    return ConfigError(f"{where}: unknown key {key!r}.{hint}")


def _check_keys(obj: Mapping[str, Any], allowed: Sequence[str], where: str) -> None:
    for key in obj:
        if key not in allowed:
            raise _unknown(str(key), allowed, where)


def _type_error(where: str, value: Any, expected: str) -> ConfigError:
    return ConfigError(f"{where}: expected {expected}, got {value!r} ({type(value).__name__}).")


def _int(obj: Mapping[str, Any], key: str, where: str, default: int, *, minimum: int) -> int:
    value = obj.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int):
        raise _type_error(f"{where}.{key}", value, "a whole number")
    if value < minimum:
        raise ConfigError(f"{where}.{key}: must be >= {minimum}, got {value}.")
    return value


def _float(obj: Mapping[str, Any], key: str, where: str, default: float, *, low: float, high: float) -> float:
    value = obj.get(key, default)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise _type_error(f"{where}.{key}", value, "a number")
    if not low <= float(value) <= high:
        raise ConfigError(f"{where}.{key}: must be between {low} and {high}, got {value}.")
    return float(value)


def _str(obj: Mapping[str, Any], key: str, where: str, default: str | None) -> str | None:
    value = obj.get(key, default)
    if value is not None and not isinstance(value, str):
        raise _type_error(f"{where}.{key}", value, "a string")
    return value


def _choice(obj: Mapping[str, Any], key: str, where: str, default: str, choices: Sequence[str]) -> str:
    value = obj.get(key, default)
    if value is False and "none" in choices:  # YAML reads `positivity: no` as False
        return "none"
    if not isinstance(value, str) or value not in choices:
        raise ConfigError(f"{where}.{key}: {value!r} is not one of {', '.join(choices)}.")
    return value


def _bool(obj: Mapping[str, Any], key: str, where: str, default: bool) -> bool:
    value = obj.get(key, default)
    if not isinstance(value, bool):
        raise _type_error(f"{where}.{key}", value, "true or false")
    return value


def _columns(obj: Mapping[str, Any], key: str, where: str) -> tuple[str, ...] | None:
    value = obj.get(key)
    if value is None:
        return None
    if isinstance(value, str):
        value = [c.strip() for c in value.split(",") if c.strip()]
    if not isinstance(value, list) or not all(isinstance(c, str) for c in value) or not value:
        raise _type_error(f"{where}.{key}", value, "a non-empty list of column names")
    return tuple(value)


def _mapping(value: Any, where: str) -> Mapping[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise _type_error(where, value, "a mapping of keys to values")
    return value


def _step(raw: Any, i: int) -> Step:
    where = f"steps[{i}]"
    kinds = ("microaggregate", "noise", "suppress")
    if isinstance(raw, str):
        raw = {raw: {}}
    if not isinstance(raw, Mapping) or len(raw) != 1:
        raise ConfigError(f"{where}: each step is one of {', '.join(kinds)} with its options, e.g. `- microaggregate: {{k: 3}}`.")
    kind, opts = next(iter(raw.items()))
    if kind not in kinds:
        raise _unknown(str(kind), kinds, where)
    where = f"{where}.{kind}"
    if kind == "suppress" and isinstance(opts, (str, list)):  # `- suppress: plan` shorthand
        opts = {"columns": opts}
    opts = _mapping(opts, where)
    if kind == "microaggregate":
        _check_keys(opts, ("method", "k", "columns", "restore_moments", "positivity"), where)
        return MicroaggregateStep(
            method=_choice(opts, "method", where, "mdav", MICROAGG_METHODS),
            k=_int(opts, "k", where, 3, minimum=2),
            columns=_columns(opts, "columns", where),
            restore_moments=_bool(opts, "restore_moments", where, True),
            positivity=_choice(opts, "positivity", where, "none", POSITIVITY_MODES),
        )
    if kind == "noise":
        _check_keys(opts, ("t", "distribution", "columns", "epsilon"), where)
        t_raw = opts.get("t", "recommended")
        t: float | Literal["recommended"]
        if t_raw == "recommended":
            t = "recommended"
        else:
            t = _float(opts, "t", where, 0.0, low=0.0, high=1e6)
        return NoiseStep(
            t=t,
            distribution=_choice(opts, "distribution", where, "gaussian", NOISE_DISTRIBUTIONS),
            columns=_columns(opts, "columns", where),
            epsilon=_float(opts, "epsilon", where, 1.0, low=1e-9, high=1e9),
        )
    _check_keys(opts, ("columns",), where)
    cols_raw = opts.get("columns", "plan")
    cols: Literal["plan"] | tuple[str, ...]
    if cols_raw == "plan":
        cols = "plan"
    else:
        found = _columns(opts, "columns", where)
        assert found is not None
        cols = found
    return SuppressStep(columns=cols)


TOP_KEYS = (
    "input",
    "name",
    "quasi_identifiers",
    "numeric",
    "k",
    "budget",
    "bound_method",
    "missing",
    "seed",
    "simulate_protocol",
    "steps",
    "output",
)


def parse_config(raw: Any, *, base: Path | None = None, source: str = "<dict>") -> PipelineConfig:
    """Validate a mapping (as read from YAML/JSON) into a :class:`PipelineConfig`.

    Relative paths are resolved against ``base`` (the config file's folder).
    """
    obj = _mapping(raw, source)
    _check_keys(obj, TOP_KEYS, source)
    where = source

    def resolve(p: str | None) -> str | None:
        if p is None or base is None or p.lower() == "adult" or Path(p).is_absolute():
            return p
        return str(base / p)

    output = _mapping(obj.get("output"), f"{where}.output")
    _check_keys(output, ("data", "report"), f"{where}.output")
    steps_raw = obj.get("steps", [])
    if not isinstance(steps_raw, list):
        raise _type_error(f"{where}.steps", steps_raw, "a list of steps")
    missing = _choice(obj, "missing", where, "value", ("value", "drop"))
    return PipelineConfig(
        input=resolve(_str(obj, "input", where, None)),
        name=_str(obj, "name", where, DEFAULT_NAME) or DEFAULT_NAME,
        quasi_identifiers=_columns(obj, "quasi_identifiers", where),
        numeric=_columns(obj, "numeric", where),
        k=_int(obj, "k", where, 5, minimum=1),
        budget=_float(obj, "budget", where, 0.05, low=0.0, high=1.0),
        bound_method=_choice(obj, "bound_method", where, "best", BOUND_METHODS),
        missing="drop" if missing == "drop" else "value",
        seed=_int(obj, "seed", where, DEFAULT_SEED, minimum=0),
        simulate_protocol=_int(obj, "simulate_protocol", where, 0, minimum=0),
        steps=tuple(_step(s, i) for i, s in enumerate(steps_raw)),
        output_data=resolve(_str(output, "data", f"{where}.output", None)),
        output_report=resolve(_str(output, "report", f"{where}.output", "report.html")),
        source=source,
    )


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
    return parse_config(raw, base=p.parent, source=p.name)
