"""``recode``: global recoding of categories and intervals (:class:`sdckit.anonymize.GlobalRecoder`)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any, ClassVar, Literal

from sdckit.anonymize import GlobalRecoder
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
