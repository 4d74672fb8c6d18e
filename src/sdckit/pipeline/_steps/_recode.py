"""``recode``: global recoding of categories and intervals (:class:`sdckit.anonymize.GlobalRecoder`)."""

from __future__ import annotations

from typing import Any, ClassVar, Literal

from sdckit.anonymize import GlobalRecoder
from sdckit.pipeline._steps._anonymize import AnonymizeOptions

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
