"""``top_code``: values beyond a threshold become the threshold or a label (:class:`sdckit.anonymize.TopBottomCoder`)."""

from __future__ import annotations

from typing import Any, ClassVar, Literal

from pydantic import field_validator

from sdckit.anonymize import TopBottomCoder
from sdckit.pipeline._fields import Columns, Number, Text, split_columns
from sdckit.pipeline._roles import Roles
from sdckit.pipeline._steps._anonymize import AnonymizeOptions
from sdckit.pipeline._steps._base import StepContext

__all__ = ["TopCodeStep"]


class TopCodeStep(AnonymizeOptions):
    """Top and bottom coding: values above ``top`` (below ``bottom``) become the threshold or a label."""

    example: ClassVar[str] = "{columns: [capital-gain], top_quantile: 0.99}"
    estimator: ClassVar[type] = TopBottomCoder
    filled: ClassVar[tuple[str, ...]] = ("columns",)
    masks_amounts: ClassVar[bool] = True

    columns: Columns | None = None
    """The numeric columns to code (default: those named in ``top``/``bottom`` mappings, else the
    pipeline's ``numeric`` columns)."""
    top: Number | dict[str, Number] | None = None
    """Upper threshold: a number, or ``{column: number}``."""
    bottom: Number | dict[str, Number] | None = None
    """Lower threshold: a number, or ``{column: number}``."""
    top_quantile: Number | None = None
    """Upper threshold as a quantile (0..1) of each column."""
    bottom_quantile: Number | None = None
    """Lower threshold as a quantile (0..1) of each column."""
    top_value: Number | Text | None = None
    """Replacement above the threshold (default: the threshold itself)."""
    bottom_value: Number | Text | None = None
    """Replacement below the threshold (default: the threshold itself)."""

    kind: Literal["top_code"] = "top_code"

    @field_validator("columns", mode="before")
    @classmethod
    def _split_columns(cls, v: Any) -> Any:
        return split_columns(v)

    def columns_touched(self, roles: Roles) -> tuple[str, ...]:
        return self.named_columns() or tuple(roles.numeric)

    def fill(self, ctx: StepContext, columns: list[str]) -> dict[str, Any]:
        if isinstance(self.top, dict) or isinstance(self.bottom, dict):
            return {}  # the mappings name the columns
        return {"columns": [c for c in ctx.numeric if c in columns]}  # not weights or kept columns
