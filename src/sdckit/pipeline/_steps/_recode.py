"""``recode``: global recoding of categories and intervals (:class:`sdckit.anonymize.GlobalRecoder`)."""

from __future__ import annotations

import re
from collections.abc import Collection
from dataclasses import replace
from typing import Any, ClassVar, Literal

import polars as pl

from sdckit._io._survey import SurveyLabels
from sdckit.anonymize import GlobalRecoder
from sdckit.anonymize._recode import value_text
from sdckit.errors import ConfigError
from sdckit.pipeline._roles import Roles
from sdckit.pipeline._steps._anonymize import AnonymizeOptions
from sdckit.pipeline._steps._base import StepContext, StepLog

__all__ = ["RecodeStep"]


class RecodeStep(AnonymizeOptions):
    """Global recoding: each rule maps a column's values to coarser ones (intervals, a hierarchy level,
    merged categories), the same mapping for every row."""

    example: ClassVar[str] = '{rules: {age: {hierarchy: "adult:age", level: 2}}}'
    estimator: ClassVar[type] = GlobalRecoder

    rules: dict[str, dict[str, Any]] | None = None
    """``{column: rule}``: ``breaks`` (with ``labels``), ``bins``, ``mapping``, or ``hierarchy`` with
    ``level``; other columns are untouched (see :class:`sdckit.anonymize.GlobalRecoder`)."""
    closed: Literal["left", "right"] = "left"
    """``left`` (``[a, b)``) or ``right`` (``(a, b]``, sdcMicro's classes) for the ``breaks`` rules."""

    kind: Literal["recode"] = "recode"

    def check(
        self, frame: pl.DataFrame, roles: Roles, labels: SurveyLabels | None, *, source: str, index: int,
        declared_categorical: Collection[str] = (),
    ) -> None:
        """Before any work: an interval rule (``breaks``, ``bins``) on a column that does not hold numbers,
        named with the value that is not one and the fix (a labelled column, a Stata ``.b``)."""
        for col, rule in (self.rules or {}).items():
            if col not in frame.columns or not isinstance(rule, dict) or not ({"breaks", "bins"} & set(rule)):
                continue
            if frame.schema[col].is_numeric():
                continue
            value = next((v for v in frame[col].drop_nulls().cast(pl.String).unique(maintain_order=True).to_list()
                          if not _is_number_text(v)), None)
            if value is None:
                continue
            if re.fullmatch(r"\.[a-z_]", value):
                why = (f"{value!r} is a Stata extended missing value: in the default reading a numeric variable keeps "
                       "numbers only when its value labels sit on missing codes alone, and this one has other labels. "
                       "Read the file with read: {labels: codes} (its codes are numbers, its extended missing values "
                       "missing), or recode it by a mapping")
            elif labels is not None and col in labels.labelled:
                why = (f"{col!r} has value labels in the input file, so it reads as its labels ({value!r}). Read the file "
                       "with read: {labels: codes} to band its codes, or recode it by a mapping of its labels")
            else:
                why = (f"{value!r} is not a number. If it means missing, list it under read: {{na_values: [...]}}; "
                       "otherwise recode the column by a mapping")
            raise ConfigError(f"{source}: steps[{index}].recode.rules.{col}: intervals need numbers. {why}.")

    def coarsened_columns(self, roles: Roles) -> tuple[str, ...]:
        """The columns recoded into intervals (``breaks``, ``bins``) or merged by a mapping or hierarchy."""
        return tuple(str(c) for c in (self.rules or {}))

    def estimator_params(self, ctx: StepContext, columns: list[str]) -> dict[str, Any]:
        """The rules, a mapping of a labelled column also keyed by the labels of the codes it names
        (``{3: "3-8"}`` on a column holding ``"borehole"``, the label of 3, merges it too)."""
        params = super().estimator_params(ctx, columns)
        rules = params.get("rules")
        if not isinstance(rules, dict) or not ctx.value_labels:
            return params
        out = {}
        for col, rule in rules.items():
            labels = ctx.value_labels.get(col)
            mapping = rule.get("mapping") if isinstance(rule, dict) else None
            if labels and isinstance(mapping, dict):
                extra = {labels[value_text(k)]: v for k, v in mapping.items()
                         if value_text(k) in labels and labels[value_text(k)] not in mapping}
                rule = {**rule, "mapping": {**mapping, **extra}}
            out[col] = rule
        return {**params, "rules": out}

    def apply(self, frame: Any, ctx: StepContext) -> tuple[Any, StepLog]:
        out, log = super().apply(frame, ctx)
        kept = {c: ctx.declared_missing[c] for c in (self.rules or {}) if c in ctx.declared_missing}
        if not kept or ctx.engine is not None:
            return out, log
        counts = {c: int(frame[c].is_null().sum()) for c in kept}
        text = "; ".join(f"{c}: {counts[c]:,} cell(s) missing ({kept[c]})" for c in kept)
        return out, replace(
            log,
            details={**log.details, "declared_missing_kept": counts},
            description=f"{log.description} Declared missing codes stay missing, never recoded as values: {text}.",
        )


def _is_number_text(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True
