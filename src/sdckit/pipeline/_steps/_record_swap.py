"""``record_swap``: targeted record swapping of whole households between areas
(:class:`sdckit.anonymize.RecordSwapper`, sdcMicro's ``recordSwap``)."""

from __future__ import annotations

from collections.abc import Collection
from typing import Annotated, Any, ClassVar, Literal

import polars as pl
from pydantic import Field, field_validator

from sdckit._io._survey import SurveyLabels
from sdckit.anonymize import RecordSwapper
from sdckit.errors import ConfigError, SdcError
from sdckit.pipeline._fields import Columns, Share, split_columns
from sdckit.pipeline._roles import Roles
from sdckit.pipeline._steps._base import Step, StepContext, StepLog

__all__ = ["RecordSwapStep"]

_ROW = "__sdckit_row_household"


def _largest(moved: pl.DataFrame) -> int:
    """The largest change of an area's records."""
    if not moved.height:
        return 0
    diff = (moved["records_after"].cast(pl.Int64) - moved["records_before"].cast(pl.Int64)).abs()
    return int(diff.max() or 0)  # type: ignore[arg-type]


class RecordSwapStep(Step):
    """Targeted record swapping (sdcMicro's ``recordSwap``): a share of households, riskiest first, exchange
    their geography with similar households in another area; every member moves with its household."""

    example: ClassVar[str] = "{hierarchy: [native-country], similar: [sex], swap_rate: 0.1}"
    in_memory_only: ClassVar[str | None] = (
        "it pairs households across the whole table; run this pipeline in memory (engine: polars)"
    )

    hierarchy: Columns
    """The geography columns, highest level first (``[region, district]``); household-level."""
    similar: tuple[Columns, ...] | Columns | None = None
    """Similarity profile(s): household-level columns a donor must share (``[hsize]``), or a list of
    profiles tried in turn (``[[hsize, tenure], [hsize]]``); none: any household is similar."""
    swap_rate: Share = 0.05
    """Share of households (0..1) to swap (each swap moves two households; ONS swapped 7-10 % in 2021)."""
    k_anonymity: Annotated[int, Field(strict=True, ge=0)] | None = None
    """A household is at risk (swapped first, across the level where it is rare) when a member's group on
    ``risk_variables`` and its areas holds fewer records than this (default: the pipeline's ``k``; 0: none)."""
    risk_variables: Columns | None = None
    """Columns of the at-risk counts (default: the quasi-identifiers outside ``hierarchy``)."""
    carry_along: Columns | None = None
    """Further household-level columns that move with the geography."""
    kind: Literal["record_swap"] = "record_swap"

    @field_validator("hierarchy", "risk_variables", "carry_along", mode="before")
    @classmethod
    def _split(cls, v: Any) -> Any:
        return split_columns(v)

    @field_validator("similar", mode="before")
    @classmethod
    def _profiles(cls, v: Any) -> Any:
        if isinstance(v, str):
            return split_columns(v)
        return v

    def is_random(self) -> bool:
        return True

    def moves_knowledge(self, column: str, log: StepLog) -> bool:
        return False  # a swapped area is not the person's: the attacker still knows the true one

    def _profile_list(self) -> list[list[str]]:
        if self.similar is None:
            return []
        if all(isinstance(s, str) for s in self.similar):
            return [[str(c) for c in self.similar]]
        return [[str(c) for c in p] for p in self.similar]

    def named_columns(self) -> tuple[str, ...]:
        named = [*self.hierarchy, *[c for p in self._profile_list() for c in p], *(self.risk_variables or ()),
                 *(self.carry_along or ())]
        return tuple(dict.fromkeys(named))

    def columns_touched(self, roles: Roles) -> tuple[str, ...]:
        return tuple(dict.fromkeys([*self.hierarchy, *(self.carry_along or ())]))

    def check(
        self, frame: pl.DataFrame, roles: Roles, labels: SurveyLabels | None, *, source: str, index: int,
        declared_categorical: Collection[str] = (),
    ) -> None:
        if roles.household is not None and roles.household in self.columns_touched(roles):
            raise ConfigError(f"{source}: steps[{index}].record_swap: {roles.household!r} is the household id; it is "
                              "never swapped.")

    def apply(self, frame: pl.DataFrame, ctx: StepContext) -> tuple[pl.DataFrame, StepLog]:
        where = f"{ctx.where}.record_swap"
        household = ctx.household
        work = frame
        if household is None:  # no household role: every row is a household of one
            household = _ROW
            work = frame.with_row_index(_ROW)
        risk_vars = list(self.risk_variables or [q for q in ctx.quasi_identifiers
                                                  if q in frame.columns and q not in self.hierarchy])
        k = ctx.k if self.k_anonymity is None else self.k_anonymity
        swapper = RecordSwapper(
            household=household, hierarchy=list(self.hierarchy), similar=self._profile_list() or None,
            swap_rate=float(self.swap_rate), k_anonymity=k if risk_vars else 0, risk_variables=risk_vars,
            carry_along=list(self.carry_along or ()), random_state=ctx.seed,
        )
        try:
            out = swapper.fit_transform(work)
        except SdcError as err:
            raise ConfigError(f"{where}: {err}") from None
        if household == _ROW:
            out = out.drop(_ROW)
        strata = swapper.strata_
        changed = {c: v["cells_changed"] for c, v in swapper.changes_.items()}
        details: dict[str, Any] = {
            "household": ctx.household, "hierarchy": list(self.hierarchy), "swap_rate": float(self.swap_rate),
            "k_anonymity": k, "risk_variables": risk_vars, "similar": self._profile_list(),
            "n_households": swapper.n_households_, "target_swaps": swapper.target_swaps_, "n_swaps": swapper.n_swaps_,
            "n_swapped_households": swapper.n_swapped_households_, "n_swapped_records": swapper.n_swapped_records_,
            "n_at_risk": swapper.n_at_risk_, "n_not_swapped": swapper.n_not_swapped_,
            "changes": {c: {"cells_changed": n} for c, n in changed.items()},
            "strata": strata.to_dicts(),
            "margins": swapper.margins_.to_dicts(),
        }
        moved = swapper.margins_.filter(pl.col("records_before") != pl.col("records_after"))
        unit = "households" if ctx.household is not None else "rows (no household role: each row its own household)"
        what = (
            f"Targeted record swapping on {', '.join(self.hierarchy)}: {swapper.n_swapped_households_:,} of "
            f"{swapper.n_households_:,} {unit} swapped ({swapper.n_swaps_:,} swaps; swap rate "
            f"{100 * float(self.swap_rate):g} % asked, {swapper.n_at_risk_:,} households at risk at k = {k} swapped "
            f"first), {swapper.n_swapped_records_:,} records moved whole with their household; "
            f"{moved.height:,} of {swapper.margins_.height:,} area margins changed (largest change "
            f"{_largest(moved):,} "
            f"records)" + (f"; {swapper.n_not_swapped_:,} households found no donor" if swapper.n_not_swapped_ else "")
            + "."
        )
        columns = tuple(c for c in swapper.columns_ if changed.get(c)) or tuple(self.hierarchy)
        return out, StepLog(self.kind, columns, details, what)
