"""``noise``: independent noise of variance ``t`` per entry (the local mechanism of private PCA)."""

from __future__ import annotations

import math
from typing import Annotated, Any, ClassVar, Literal

import numpy as np
import polars as pl
from pydantic import Field

from sdckit.errors import ConfigError, InfeasibleError
from sdckit.pipeline._fields import Columns
from sdckit.pipeline._steps._base import StepContext, StepLog
from sdckit.pipeline._steps._numeric import NumericStep, numeric_columns, restore
from sdckit.spectral import AdditiveNoise
from sdckit.spectral._design import design_noise_from_data, noise_for_covariance
from sdckit.spectral._nongaussian import integer_leakage_bound, leakage_bound, non_gaussianity

__all__ = ["NoiseStep"]


class NoiseStep(NumericStep):
    """Add independent noise of variance ``t`` per entry (the local mechanism of private PCA)."""

    example: ClassVar[str] = "{columns: [capital-gain, hours-per-week], t: recommended, max_leakage_nats: 1.0}"
    in_memory_only: ClassVar[str | None] = (
        "its t is designed from the columns' covariance in memory; in Python use "
        "sdckit.spectral.AdditiveNoise(t=...).fit_transform(frame) (partition by partition), or run in memory"
    )
    renamed: ClassVar[dict[str, str]] = {"epsilon": "max_leakage_nats"}
    why_renamed: ClassVar[str] = "it is information leakage in nats, not differential privacy's epsilon"

    t: Annotated[float, Field(strict=True, ge=0.0, le=1e6)] | Literal["recommended"] = "recommended"
    """Noise variance per entry (on standardised columns), or ``recommended`` from the design."""
    distribution: Literal["gaussian", "laplace", "uniform", "rademacher", "discrete"] = "gaussian"
    """Noise law: gaussian, laplace, uniform, rademacher, discrete."""
    columns: Columns | None = None
    """Columns to perturb (default: the pipeline's ``numeric`` columns)."""
    max_leakage_nats: Annotated[float, Field(strict=True, gt=0.0, le=1e9)] = 1.0
    """Largest information leakage per respondent, in nats, used when ``t`` is ``recommended``."""
    kind: Literal["noise"] = "noise"

    def is_random(self) -> bool:
        return True

    def apply(self, frame: pl.DataFrame, ctx: StepContext) -> tuple[pl.DataFrame, StepLog]:
        columns = self.masking(frame, ctx)
        out, log = self._perturb(frame, columns, ctx.seed)
        return restore(frame, out, columns, log, positivity=self.positivity, restore_moments=self.restore_moments)

    def _perturb(self, frame: pl.DataFrame, columns: tuple[str, ...], seed: int | None) -> tuple[pl.DataFrame, StepLog]:
        X = numeric_columns(frame, columns)
        mean, sd = X.mean(axis=0), X.std(axis=0)
        sd = np.where(sd > 0, sd, 1.0)
        corr = np.atleast_2d(np.cov((X - mean) / sd, rowvar=False, ddof=0))  # the covariance t is in units of
        law = self.distribution
        details: dict[str, Any] = {"distribution": law}
        if self.t == "recommended":
            if len(columns) < 2:
                raise ConfigError("noise: t: recommended needs at least two columns (a spectrum to protect); give t.")
            if not math.isfinite(non_gaussianity(law)):
                raise ConfigError(
                    f"noise: t: recommended with distribution: {law}: {law} noise has no density, so its leakage "
                    "bound is infinite on continuous data (given the noisy answer, the true one is one of "
                    "countably many points) and no t meets max_leakage_nats. Use gaussian, laplace or uniform, "
                    "or give t (discrete noise suits integer answers)."
                )
            try:
                _, design = design_noise_from_data(X, standardize=True, max_leakage=self.max_leakage_nats, noise=law)
                # the spiked model is a fit: t also meets the budget on the columns' own covariance
                t = max(float(design.t), noise_for_covariance(corr, self.max_leakage_nats, noise=law))
            except InfeasibleError as exc:
                raise ConfigError(f"noise: t: recommended: {exc}") from None
            details.update(
                {"recommended_by": "design_noise", "max_leakage_nats": self.max_leakage_nats, "design": design.to_dict()}
            )
        else:
            t = float(self.t)
        details["t"] = t
        if law == "discrete":
            # integer noise on the raw scale, of variance t times each column's variance (t in the same
            # units as for the other laws); integer answers stay integers
            rng = np.random.default_rng(seed)
            raw = frame.select(columns)
            noisy = pl.DataFrame([
                AdditiveNoise(t=t * float(v), distribution="discrete", random_state=rng).fit_transform(raw.select(c))[c]
                for c, v in zip(columns, X.var(axis=0), strict=True)
            ])
            details["scale"] = "raw units, integer noise of variance t times each column's variance"
            if np.all(np.round(X) == X):
                details["information_leakage_nats"] = integer_leakage_bound(X.var(axis=0), t * X.var(axis=0))
                details["leakage_bound"] = (
                    "integer answers and discrete noise: I(X; Y) <= sum_j 1/2 log(2 pi e (Var Y_j + 1/12)) - H(K_j)"
                )
            else:
                details["information_leakage_nats"] = None
                details["leakage_bound"] = (
                    "unbounded: discrete noise on non-integer answers (no density; the leakage bound is infinite)"
                )
        else:
            Z = pl.DataFrame(((X - mean) / sd), schema=list(columns), orient="row")
            Zn = AdditiveNoise(t=t, distribution=law, random_state=seed).fit_transform(Z)
            noisy = pl.DataFrame(Zn.to_numpy() * sd + mean, schema=list(columns), orient="row")
            details["scale"] = "standardised columns: t in units of each column's variance"
            bound = leakage_bound(corr, t, noise=law) if t > 0 else None
            finite = bound is not None and math.isfinite(bound.upper)
            details["information_leakage_nats"] = bound.upper if bound is not None and finite else None
            details["leakage_bound"] = bound.applies if bound is not None else "unbounded: no noise (t = 0)"
        out = frame.with_columns(noisy.select(columns))
        leak = details["information_leakage_nats"]
        said = f"information leakage <= {leak:.4g} nats" if leak is not None else "information leakage unbounded"
        what = f"{law.capitalize()} noise of variance t = {t:.3g} on {len(columns)} column(s), {details['scale']}; {said}."
        return out, StepLog("noise", columns, details, what)
