"""``rank_swap``: rank swapping (Moore; sdcMicro ``rankSwap``), each column's values swapped within a rank window."""

from __future__ import annotations

from typing import Annotated, ClassVar, Literal

import polars as pl
from pydantic import Field, model_validator

from sdckit.microagg import RankSwap
from sdckit.pipeline._fields import Columns
from sdckit.pipeline._steps._base import StepContext, StepLog
from sdckit.pipeline._steps._numeric import NumericStep, numeric_columns, restore

__all__ = ["RankSwapStep"]

Percent = Annotated[float, Field(strict=True, ge=0.0, le=100.0)]


class RankSwapStep(NumericStep):
    """Rank swapping (Moore; sdcMicro ``rankSwap``): each column's values swapped within a rank window."""

    example: ClassVar[str] = "{columns: [capital-gain, hours-per-week], p: 5}"
    in_memory_only: ClassVar[str | None] = (
        "it swaps values between ranks of the whole column; run this pipeline in memory (engine: polars)"
    )

    p: Percent | None = None
    """Rank window in percent of the swapped records (two values swap only when their ranks differ by
    less than p % of them); give at most one of p, r0, k0 (none: r0 = 0.95, sdcMicro's default)."""
    r0: Annotated[float, Field(strict=True, ge=0.0, le=1.0)] | None = None
    """Multivariate preservation factor R0: the window is ``sqrt(2 V (1 - R0)) / D`` per column."""
    k0: Annotated[float, Field(strict=True, ge=0.0)] | None = None
    """Subset-mean preservation factor K0: the window is ``sqrt(8/3) K0 |mean| / D`` per column."""
    top_percent: Annotated[float, Field(strict=True, ge=0.0, le=50.0)] = 5.0
    """Percent of the largest values replaced by their mean before swapping."""
    bottom_percent: Annotated[float, Field(strict=True, ge=0.0, le=50.0)] = 5.0
    """Percent of the smallest values replaced by their mean before swapping."""
    columns: Columns | None = None
    """Columns to swap (default: the pipeline's ``numeric`` columns)."""
    kind: Literal["rank_swap"] = "rank_swap"

    @model_validator(mode="after")
    def _one_window(self) -> RankSwapStep:
        given = [name for name in ("p", "r0", "k0") if getattr(self, name) is not None]
        if len(given) > 1:
            raise ValueError(f"give one of p, r0 and k0 (the rank window), not {' and '.join(given)}.")
        return self

    def is_random(self) -> bool:
        return True

    def apply(self, frame: pl.DataFrame, ctx: StepContext) -> tuple[pl.DataFrame, StepLog]:
        columns = self.masking(frame, ctx)
        numeric_columns(frame, columns)  # precise error for text or missing values
        data = frame.select(columns).cast(pl.Float64)
        swap = RankSwap(
            p=self.p, r0=self.r0, k0=self.k0, top_percent=self.top_percent, bottom_percent=self.bottom_percent,
            random_state=ctx.seed,
        )
        masked = swap.fit_transform(data)
        window = {c: float(w) for c, w in swap.window_.items()}
        how = f"p = {self.p} %" if self.p is not None else (f"k0 = {self.k0}" if self.k0 is not None else f"r0 = {self.r0 or 0.95}")
        details = {"p": self.p, "r0": self.r0, "k0": self.k0, "top_percent": self.top_percent,
                   "bottom_percent": self.bottom_percent, "window_share": window}
        what = (f"Rank swapping ({how}; top/bottom {self.top_percent:g} %/{self.bottom_percent:g} % coded) on "
                f"{len(columns)} column(s), windows {min(window.values()):.3g}-{max(window.values()):.3g} of the records.")
        out = frame.with_columns(masked.select(columns))
        log = StepLog(self.kind, columns, details, what)
        return restore(frame, out, columns, log, positivity=self.positivity, restore_moments=self.restore_moments)
