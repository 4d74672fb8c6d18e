"""``correlated_noise``: noise with the data's covariance, sdcMicro's ``correlated2``, or noise keeping
the sample mean and covariance exactly."""

from __future__ import annotations

from typing import Annotated, ClassVar, Literal

import polars as pl
from pydantic import Field

from sdckit.microagg import CorrelatedNoise
from sdckit.pipeline._fields import Columns
from sdckit.pipeline._steps._base import StepContext, StepLog
from sdckit.pipeline._steps._numeric import NumericStep, numeric_columns, restore

__all__ = ["CorrelatedNoiseStep"]


class CorrelatedNoiseStep(NumericStep):
    """Noise with the data's covariance (``correlated``), sdcMicro's ``correlated2``, or noise keeping
    the sample mean and covariance exactly (``exact``)."""

    example: ClassVar[str] = "{columns: [capital-gain, hours-per-week], law: correlated, noise: 0.1}"
    in_memory_only: ClassVar[str | None] = (
        "it draws noise from the covariance of all rows at once; run in memory (engine: polars)"
    )

    law: Literal["correlated", "correlated2", "exact"] = "correlated"
    """``correlated``: x + N(0, noise S); ``correlated2``: sdcMicro's per-column law with ``delta``;
    ``exact``: the release has exactly the sample mean and covariance."""
    noise: Annotated[float, Field(strict=True, gt=0.0, le=100.0)] = 0.1
    """Noise variance as a share of the data's covariance (sdcMicro's ``noise`` / 100)."""
    delta: Annotated[float, Field(strict=True, gt=0.0, lt=1.0)] = 0.1
    """``correlated2``'s delta."""
    columns: Columns | None = None
    """Columns to perturb together (default: the pipeline's ``numeric`` columns)."""
    kind: Literal["correlated_noise"] = "correlated_noise"

    def is_random(self) -> bool:
        return True

    def apply(self, frame: pl.DataFrame, ctx: StepContext) -> tuple[pl.DataFrame, StepLog]:
        columns = self.masking(frame, ctx)
        numeric_columns(frame, columns)  # precise error for text or missing values
        data = frame.select(columns).cast(pl.Float64)
        masked = CorrelatedNoise(law=self.law, noise=self.noise, delta=self.delta, random_state=ctx.seed).fit_transform(data)
        details = {"law": self.law, "noise": self.noise, "delta": self.delta}
        size = f"delta = {self.delta:g}" if self.law == "correlated2" else f"noise = {self.noise:g} of the covariance"
        what = f"Correlated noise ({self.law}, {size}) on {len(columns)} column(s)."
        out = frame.with_columns(masked.select(columns))
        log = StepLog(self.kind, columns, details, what)
        return restore(frame, out, columns, log, positivity=self.positivity, restore_moments=self.restore_moments)
