"""``local_suppression``: cells of the quasi-identifiers set to missing until every row has k - 1
twins (:class:`sdckit.anonymize.LocalSuppressor`)."""

from __future__ import annotations

from dataclasses import replace
from typing import Annotated, Any, ClassVar, Literal

from pydantic import Field, field_validator

from sdckit.anonymize import LocalSuppressor
from sdckit.pipeline._fields import Columns, GroupSize, OpenShare, Share, Text, Whole, split_columns
from sdckit.pipeline._roles import Roles
from sdckit.pipeline._steps._anonymize import AnonymizeOptions
from sdckit.pipeline._steps._base import StepContext, StepLog

__all__ = ["LocalSuppressionStep"]

Seconds = Annotated[float, Field(strict=True, ge=0.0)]


class LocalSuppressionStep(AnonymizeOptions):
    """Local suppression: the fewest cells of the quasi-identifiers set to missing so that every row is
    identical to at least k - 1 others (decoys drawn among larger groups hide which cells were rare)."""

    example: ClassVar[str] = "{k: 5}"
    estimator: ClassVar[type] = LocalSuppressor
    filled: ClassVar[tuple[str, ...]] = ("k", "columns", "random_state", "entity", "household_columns")

    k: GroupSize | None = None
    """Group size every record must reach (default: the pipeline's ``k``)."""
    columns: Columns | None = None
    """The key variables (default: the pipeline's quasi-identifiers)."""
    importance: tuple[Text, ...] | tuple[Whole, ...] | None = None
    """Which keys to keep: column names from most to least important, or one number per key
    (1 = most important, sdcMicro's ``importance``); default: keys with more values go first."""
    method: Literal["decoys", "optimal", "sdcmicro"] = "decoys"
    """``decoys`` (suppressed cells hidden among random ones; runs where the rows live), ``optimal``
    (the same guarantee with the fewest cells: a mixed-integer program within ``time_limit``; in
    memory only) or ``sdcmicro`` (sdcMicro's algorithm: a missing cell matches any value; in memory only)."""
    time_limit: Seconds = 30.0
    """Seconds for the certificate's relaxation and the ``optimal`` program (best found and its gap when it runs out)."""
    random_redaction: Share | None = None
    """(``sdcmicro`` only) probability (0..1) of redacting the other cells of a column that lost cells."""
    delta: OpenShare = 0.05
    """Failure probability (0..1) of the redaction allowance."""

    kind: Literal["local_suppression"] = "local_suppression"

    @field_validator("columns", mode="before")
    @classmethod
    def _split_columns(cls, v: Any) -> Any:
        return split_columns(v)

    def is_random(self) -> bool:
        return self.method in ("decoys", "optimal") or bool(self.random_redaction)

    def fitted_details(self, estimator: Any) -> dict[str, Any]:
        return {"certificate": dict(estimator.certificate_)}

    def apply(self, frame: Any, ctx: StepContext) -> tuple[Any, StepLog]:
        out, log = super().apply(frame, ctx)
        cert = log.details.get("certificate")
        if cert:
            text = (f" Certificate: {cert['cells']:,} cell(s) suppressed; any release meeting the same guarantee needs "
                    f"at least {cert['lower_bound']:,} (proven by {cert['bound_method']}), a gap of at most "
                    f"{100 * cert['gap']:.1f} %.")
            log = replace(log, description=log.description + text)
        return out, log

    def moves_knowledge(self, column: str, log: StepLog) -> bool:
        return False  # a suppressed cell tells nothing new of the person: the attacker still knows the value

    def in_memory_reason(self) -> str | None:
        if self.method == "decoys":
            return None
        if self.method == "optimal":
            return "method: optimal solves a program over the rows in memory"
        return f"method: {self.method} compares every record with every other one"

    def refusal(self, engine: str) -> str | None:
        reason = self.in_memory_reason()
        if reason is None:
            return None
        return f": {reason} and does not run on a {engine} frame; use method: decoys (the default)."

    def columns_touched(self, roles: Roles) -> tuple[str, ...]:
        return self.named_columns() or tuple(roles.quasi_identifiers)

    def fill(self, ctx: StepContext, columns: list[str]) -> dict[str, Any]:
        qis = [q for q in ctx.quasi_identifiers if q in columns]  # the keys are the quasi-identifiers, not every column
        out: dict[str, Any] = {"k": ctx.k, "columns": qis, "random_state": ctx.seed}
        if ctx.household is not None and ctx.engine is None:  # k over households, household-level cells kept whole
            keys = self.named_columns() or qis
            out["entity"] = ctx.household
            out["household_columns"] = [c for c in ctx.household_columns if c in keys]
        return out

    def estimator_params(self, ctx: StepContext, columns: list[str]) -> dict[str, Any]:
        """The keys given (or the quasi-identifiers), with the linked columns of the run added: a key
        suppressed beside an unsuppressed copy of it would not be hidden."""
        params = super().estimator_params(ctx, columns)
        keys = list(params.get("columns") or [q for q in ctx.quasi_identifiers if q in columns])
        extra = [c for c in ctx.linked if c in columns and c not in keys]
        if extra:
            params["columns"] = [*keys, *extra]
            importance = params.get("importance")
            if importance and all(isinstance(v, int) for v in importance):  # one number per key: the linked last
                params["importance"] = [*importance, *[max(importance) + 1] * len(extra)]
        return params

    def describe(self, total: int, parts: str, params: dict[str, Any], ctx: StepContext) -> str:
        name = self.estimator.__name__
        what = f"{name} set {total:,} cell(s) to missing: {parts}." if total else f"{name} set no cell to missing."
        if total and self.method == "decoys" and params.get("entity"):
            what += (f" Every group of identical rows now holds at least {params.get('k', ctx.k)} distinct households "
                     f"({params['entity']}), suppressed cells included (decoys drawn at random among larger groups); a "
                     "household-level value suppressed for one member is suppressed for all.")
        elif total and self.method == "decoys":
            what += (f" Every row is now identical to at least {params.get('k', ctx.k) - 1} others, suppressed "
                     "cells included (decoys drawn at random among larger groups).")
        elif total:
            what += " sdcMicro's algorithm: a missing cell matches any value when its groups are counted."
        return what

    def lazy_details(self, estimator: Any) -> dict[str, Any]:
        return {"n_passes": int(estimator.n_passes_), "decoy_rounds": int(estimator.n_rounds_),
                "certificate": dict(estimator.certificate_)}

    def describe_lazy(self, total: int, parts: str, params: dict[str, Any], estimator: Any, ctx: StepContext) -> str:
        return (
            f"{self.estimator.__name__} set {total:,} cell(s) to missing" + (f": {parts}" if parts else "")
            + f", in {estimator.n_passes_} distributed pass(es) (group counts only reached the driver). Every row is "
            f"now identical to at least {params.get('k', ctx.k) - 1} others, suppressed cells included."
        )
