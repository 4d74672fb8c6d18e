"""Linked columns in a run: released columns that reveal a key are the release's own problem.

A ``keep`` column linked to a quasi-identifier (declared under ``linked:``, or found on the data:
Theil's U(key | column) >= ``linked_threshold``, :func:`sdckit.risk._measures._linked.find_linked_columns`)
is, with ``linked_as: key`` (the default), counted as a quasi-identifier everywhere: the steps that
take the quasi-identifiers as keys (``local_suppression``) take it too, and the headline, the
consistent count, the budget and the refusal rule count it. With ``linked_as: ghost`` it is
suppressed in every row where a step suppressed a key it reveals (sdcMicro's ghost variables),
and still counted as a quasi-identifier by every figure, so a ghost that does not make the rows
identical again shows in the headline.

A wider attacker (``attacker_knows:``) is measured beside the headline: the keys plus the released
columns listed there.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import polars as pl

from sdckit.errors import ConfigError
from sdckit.pipeline._config import PipelineConfig
from sdckit.risk._measures._linked import LinkedColumn, linked_by, uncertainty_coefficient
from sdckit.risk._measures._release import consistent_counts

__all__ = ["LinkedPlan", "Scenario", "ghost_suppress", "link_by", "link_columns", "scenario"]


@dataclass(frozen=True)
class LinkedPlan:
    """The linked columns of a run and how they are treated."""

    columns: tuple[LinkedColumn, ...] = ()
    treatment: str = "key"
    """``key`` (counted as quasi-identifiers by every step and figure) or ``ghost``."""
    declared_keys: tuple[str, ...] = ()
    """The quasi-identifiers the pipeline file declares (before the linked columns were added)."""

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(c.column for c in self.columns)

    @property
    def step_keys(self) -> tuple[str, ...]:
        """The linked columns a key-taking step adds to its keys (none with ghosts)."""
        return self.names if self.treatment == "key" else ()

    def describe(self) -> str:
        """One sentence for the console and the report ('' when there is none)."""
        if not self.columns:
            return ""
        how = (
            "counted as quasi-identifiers (suppressed like keys, and in every figure)"
            if self.treatment == "key"
            else "suppressed with the key cell they reveal (ghost variables) and counted as quasi-identifiers"
        )
        return (
            f"Linked columns {how}: " + "; ".join(c.describe() for c in self.columns)
            + ". Released beside a suppressed key, a linked column would show the key's value."
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "treatment": self.treatment,
            "declared_quasi_identifiers": list(self.declared_keys),
            "columns": [c.to_dict() for c in self.columns],
        }


def link_columns(config: PipelineConfig, frame: pl.DataFrame) -> tuple[PipelineConfig, LinkedPlan]:
    """Find the linked ``keep`` columns (declared and on the data) and count them as quasi-identifiers:
    the returned config lists them under ``quasi_identifiers`` (no more under ``keep``)."""
    # a household's shared values are one observation, not one per member
    units = frame[config.household] if config.household is not None and config.household in frame.columns else None
    return link_by(config, lambda q, c: uncertainty_coefficient(frame[q], frame[c], units))


def link_by(config: PipelineConfig, coefficient: Callable[[str, str], float]) -> tuple[PipelineConfig, LinkedPlan]:
    """:func:`link_columns` with U(q | c) from ``coefficient(q, c)``: a frame in memory, or the group
    counts of a distributed frame (:func:`sdckit.pipeline.run_distributed`)."""
    qis = tuple(config.quasi_identifiers or ())
    keep = tuple(config.keep or ())
    declared: Mapping[str, Sequence[str]] = config.linked or {}
    for column, keys in declared.items():
        if column not in keep:
            raise ConfigError(
                f"{config.source}: linked: {column!r} is not a keep column; a linked column is one released as it "
                f"is (keep) that reveals a quasi-identifier. Put {column!r} under keep, or leave it out of linked."
            )
        unknown = [q for q in keys if q not in qis]
        if unknown:
            raise ConfigError(
                f"{config.source}: linked: {column!r} names {unknown[0]!r}, which is not a quasi-identifier; "
                f"list the keys it reveals among {list(qis)}."
            )
    found: dict[str, LinkedColumn] = {}
    for column, keys in declared.items():
        found[column] = LinkedColumn(column, tuple(keys), tuple(coefficient(q, column) for q in keys), declared=True)
    if config.linked_threshold is not None:
        for c in linked_by(coefficient, qis, [c for c in keep if c not in found], threshold=config.linked_threshold):
            found[c.column] = c
    plan = LinkedPlan(tuple(found.values()), config.linked_as, qis)
    if not found:
        return config, plan
    names = set(found)
    return config.replace(
        quasi_identifiers=(*qis, *[c for c in keep if c in names]),
        keep=tuple(c for c in keep if c not in names) or None,
    ), plan


def ghost_suppress(before: pl.DataFrame, after: pl.DataFrame, plan: LinkedPlan) -> pl.DataFrame:
    """With ghosts: each linked column set to missing in every row where the step just run set one of
    the keys it reveals to missing (sdcMicro's ``ghostVars``)."""
    if plan.treatment != "ghost" or not plan.columns or before.height != after.height:
        return after
    updates = []
    for link in plan.columns:
        if link.column not in after.columns:
            continue
        hit = np.zeros(after.height, dtype=bool)
        for q in link.keys:
            if q in after.columns and q in before.columns:
                hit |= after[q].is_null().to_numpy() & ~before[q].is_null().to_numpy()
        if hit.any():
            updates.append(pl.when(pl.Series(hit)).then(None).otherwise(pl.col(link.column)).alias(link.column))
    return after.with_columns(updates) if updates else after


@dataclass(frozen=True)
class Scenario:
    """The headline again for an attacker who knows ``columns`` (keys and more)."""

    name: str
    columns: tuple[str, ...]
    k: int
    exposure_at_k: float
    """Share of released rows in groups of fewer than k rows identical on ``columns``."""
    consistent_below_k: float | None
    consistent_n_one: int | None
    extra: tuple[str, ...] = field(default=())
    """The columns beyond the quasi-identifiers."""

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name, "columns": list(self.columns), "extra_columns": list(self.extra), "k": self.k,
            "exposure_at_k": self.exposure_at_k, "consistent_below_k": self.consistent_below_k,
            "consistent_n_one": self.consistent_n_one,
        }


def scenario(
    name: str, release: pl.DataFrame, known: pl.DataFrame | None, columns: Sequence[str], k: int,
    extra: Sequence[str] = (),
) -> Scenario:
    """Identical-row groups and consistent counts of ``release`` on ``columns`` (a missing cell a
    value of its own for the groups, consistent with anything for the count)."""
    cols = [c for c in columns if c in release.columns]
    if cols:
        sizes = release.select(pl.len().over(cols).alias("__g"))["__g"].to_numpy()
    else:
        sizes = np.full(release.height, release.height)
    exposure = float(np.mean(sizes < k)) if release.height else 0.0
    consistent = None
    if known is not None and all(c in known.columns for c in cols):
        consistent = consistent_counts(release, known, cols)
    return Scenario(
        name, tuple(cols), k, exposure,
        float(np.mean(consistent < k)) if consistent is not None and consistent.size else None,
        int(np.sum(consistent == 1)) if consistent is not None else None,
        tuple(extra),
    )
