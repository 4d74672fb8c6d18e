"""``pram``: post-randomisation of categorical columns (:class:`sdckit.anonymize.PRAM`)."""

from __future__ import annotations

from typing import Any, ClassVar, Literal

from pydantic import field_validator

from sdckit.anonymize import PRAM
from sdckit.pipeline._fields import Columns, Share, split_columns
from sdckit.pipeline._steps._anonymize import AnonymizeOptions

__all__ = ["PramStep"]


class PramStep(AnonymizeOptions):
    """PRAM: each cell of the categorical columns is redrawn from a transition matrix published with
    the release (invariant matrices by default: the expected frequencies are kept)."""

    example: ClassVar[str] = "{columns: [race], pd: 0.8}"
    estimator: ClassVar[type] = PRAM
    filled: ClassVar[tuple[str, ...]] = ("random_state",)

    columns: Columns | None = None
    """The categorical columns (default: every column, or those of ``matrix``)."""
    pd: Share = 0.8
    """``invariant``: the smallest probability (0..1) that a cell keeps its value; ``sdcmicro``: the
    lower end of sdcMicro's U(pd, 1) diagonal draws."""
    matrix: dict[str, Any] | None = None
    """User transition matrices ``{column: {from: {to: probability}}}``, instead of invariant ones."""
    method: Literal["invariant", "sdcmicro"] = "invariant"
    """``invariant`` (the expected frequencies are kept) or ``sdcmicro`` (sdcMicro's ``pram``)."""
    alpha: Share = 0.5
    """sdcMicro's ``alpha`` (0..1), the weight of the invariant matrix against the identity (``sdcmicro`` only)."""

    kind: Literal["pram"] = "pram"

    @field_validator("columns", mode="before")
    @classmethod
    def _split_columns(cls, v: Any) -> Any:
        return split_columns(v)

    def is_random(self) -> bool:
        return True
