"""``suppress``: global suppression, dropping the quasi-identifiers the release plan excludes (or those named)."""

from __future__ import annotations

from typing import Any, ClassVar, Literal

import narwhals as nw
from pydantic import field_validator

from sdckit.pipeline._fields import Columns, split_columns
from sdckit.pipeline._steps._base import Step, StepContext, StepLog
from sdckit.plan import plan_release
from sdckit.risk import Marginals

__all__ = ["SuppressStep"]


class SuppressStep(Step):
    """Global suppression: drop quasi-identifiers that the release plan excludes (or those named)."""

    example: ClassVar[str] = "{columns: [native-country]}"
    drops_columns: ClassVar[bool] = True

    columns: Literal["plan"] | Columns = "plan"
    """``plan`` (drop what the planner excluded) or an explicit list of columns to drop."""

    kind: Literal["suppress"] = "suppress"

    @field_validator("columns", mode="before")
    @classmethod
    def _split_columns(cls, v: Any) -> Any:
        return v if v == "plan" else split_columns(v)

    def named_columns(self) -> tuple[str, ...]:
        return () if self.columns == "plan" else tuple(self.columns)

    def options(self) -> dict[str, Any]:
        return {"columns": self.columns if self.columns == "plan" else list(self.columns)}

    def apply(self, frame: Any, ctx: StepContext) -> tuple[Any, StepLog]:
        if ctx.engine is not None:
            return self._apply_lazy(frame, ctx)
        qis = ctx.quasi_identifiers
        if self.columns == "plan":
            assert ctx.plan is not None, "an in-memory run plans before its steps"
            plan = ctx.plan
            # a quasi-identifier already masked by an earlier step is no longer the raw value the plan judged
            dropped = tuple(c for c in qis if c not in plan.columns and c not in ctx.masked and c in frame.columns)
            kept_masked = [c for c in qis if c not in plan.columns and c in ctx.masked]
            what = f"Dropped {len(dropped)} quasi-identifier(s) the plan excludes: {', '.join(dropped) or 'none'}."
            if kept_masked:
                what += f" Kept {', '.join(kept_masked)}: masked by an earlier step."
        else:
            dropped = tuple(c for c in self.columns if c in frame.columns)
            what = f"Dropped {len(dropped)} column(s) as configured: {', '.join(dropped)}."
        kept = list(ctx.plan.columns) if ctx.plan is not None else []
        return frame.drop(dropped), StepLog("suppress", dropped, {"kept_quasi_identifiers": kept}, what)

    def _apply_lazy(self, data: Any, ctx: StepContext) -> tuple[Any, StepLog]:
        """Where the rows live: ``plan`` plans on the frame as it is now (its marginals, counted there)."""
        columns = list(nw.from_native(data).collect_schema().names())
        qis = list(ctx.quasi_identifiers)
        if self.columns == "plan":
            plan = plan_release(Marginals.from_data(data, qis, missing="value"), k=ctx.k, budget=ctx.budget,
                                method=ctx.bound_method)  # type: ignore[arg-type]
            dropped = tuple(c for c in qis if c not in plan.columns and c in columns)
        else:
            dropped = tuple(c for c in self.columns if c in columns)
        out = nw.from_native(data).drop(list(dropped)).to_native()
        return out, StepLog("suppress", dropped, {}, f"Dropped {len(dropped)} column(s): {', '.join(dropped) or 'none'}.")
