"""A run's column roles: declared in the pipeline file, the Adult defaults, or guessed (and flagged),
with every named column checked against the data and each step's own data checks."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import polars as pl

from sdckit._io._survey import SurveyLabels
from sdckit.datasets import ADULT_NUMERIC, ADULT_QUASI_IDENTIFIERS
from sdckit.errors import ConfigError
from sdckit.pipeline._config import PipelineConfig
from sdckit.pipeline._roles import Flag, Roles, flag_declared, guess_roles
from sdckit.pipeline._steps._base import check_columns_exist

__all__ = ["check_household", "guess_columns", "resolve_roles"]


def check_household(frame: pl.DataFrame, household: str, columns: Sequence[str], source: str) -> None:
    """Refuse a missing household id, and a household-level column whose value differs within a household
    (naming the column, the household and two of its values)."""
    nulls = frame[household].null_count()
    if nulls:
        raise ConfigError(
            f"{source}: household: column {household!r} is missing in {nulls:,} rows; every row needs its household "
            "id (a one-person household gets an id of its own)."
        )
    for c in columns:
        bad = (
            frame.group_by(household)
            .agg(pl.col(c).n_unique().alias("__n"), pl.col(c).unique(maintain_order=True).head(2).alias("__v"))
            .filter(pl.col("__n") > 1)
            .sort(household)
        )
        if bad.height:
            first = bad.row(0, named=True)
            raise ConfigError(
                f"{source}: household_columns: column {c!r} is not constant within households: household "
                f"{first[household]!r} has the values {first['__v'][0]!r} and {first['__v'][1]!r} "
                f"({bad.height:,} households differ). A household-level column holds one value per household; fix the "
                f"data or remove {c!r} from household_columns."
            )


def guess_columns(frame: pl.DataFrame) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """Guessed (quasi-identifiers, numeric columns to mask) for data without roles; see :func:`guess_roles`."""
    roles = guess_roles(frame)
    return roles.quasi_identifiers, roles.numeric


def _categorical(config: PipelineConfig, frame: pl.DataFrame, labels: SurveyLabels | None) -> tuple[str, ...]:
    """The declared categorical columns, and the labelled columns of the input file not declared numeric."""
    declared = set(config.categorical or ())
    numeric = set(config.numeric or ())
    labelled = {c for c in (labels.labelled if labels is not None else ()) if c not in numeric}
    return tuple(c for c in frame.columns if c in declared | labelled)


def declared_roles(config: PipelineConfig) -> Roles:
    """The roles exactly as ``config`` declares them (nothing guessed, nothing checked against data)."""
    return Roles(
        quasi_identifiers=tuple(config.quasi_identifiers or ()),
        numeric=tuple(config.numeric or ()),
        sensitive=tuple(config.sensitive or ()),
        weight=tuple(config.weight or ()),
        identifiers=tuple(config.identifiers or ()),
        keep=tuple(config.keep or ()),
        categorical=tuple(config.categorical or ()),
    )


def resolve_roles(
    config: PipelineConfig, frame: pl.DataFrame, labels: SurveyLabels | None = None
) -> tuple[PipelineConfig, Roles]:
    """Fill in the roles (Adult defaults, or guesses flagged with their fix) and check every column exists."""
    src = config.source
    for key in ("quasi_identifiers", "numeric", "sensitive", "weight", "identifiers", "keep", "categorical",
                "attacker_knows", "household_columns"):
        check_columns_exist(frame.columns, getattr(config, key) or (), key, src)
    if config.household is not None:
        check_columns_exist(frame.columns, [config.household], "household", src)
        check_household(frame, config.household, config.household_columns or (), src)
    categorical = _categorical(config, frame, labels)
    for i, step in enumerate(config.steps):
        step.check_names(frame.columns, src, i)
    if config.uses_adult and not config.declares_roles:
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
        roles = declared_roles(config)
    else:
        declared = (*(config.numeric or ()), *(config.keep or ()))
        guess = guess_roles(
            frame,
            exclude=(*declared, *([config.household] if config.household else [])),
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
            keep=(*(config.keep or ()), *guess.keep),  # a guessed constant is released as is, beside those declared
        )
    roles = replace(roles, categorical=categorical, household=config.household,
                    household_columns=tuple(config.household_columns or ()), household_id=config.household_id)
    roles = replace(roles, flags=(*roles.flags, *flag_declared(frame, roles)))
    for i, step in enumerate(config.steps):
        step.check(frame, roles, labels, source=src, index=i, declared_categorical=config.categorical or ())
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



_resolve_roles = resolve_roles  # the name the app used
