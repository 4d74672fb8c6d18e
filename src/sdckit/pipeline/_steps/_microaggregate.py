"""``microaggregate``: replace the numeric columns by group means (k-anonymity for continuous attributes)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar, Literal

import numpy as np
import polars as pl
from numpy.typing import NDArray
from pydantic import field_validator

from sdckit.errors import ConfigError, TooFewRowsError
from sdckit.microagg import Microaggregation, MomentRestorer, PositivityRestorer
from sdckit.pipeline._fields import Columns, Flag, GroupSize, split_columns
from sdckit.pipeline._steps._base import StepContext, StepLog
from sdckit.pipeline._steps._base import check_columns_exist as _check
from sdckit.pipeline._steps._numeric import NumericStep, Positivity, numeric_columns

__all__ = ["SUPPRESSED", "MicroaggregateStep", "merge_small_strata"]

SUPPRESSED = "*"
"""The released value of a stratum cell merged away by ``small_strata: merge`` (a category of its own)."""


def merge_small_strata(frame: pl.DataFrame, columns: Sequence[str], k: int) -> tuple[pl.DataFrame, dict[str, int]]:
    """Suppress strata values (to ``*``) until every combination of ``columns`` has at least k rows.

    Greedy local suppression: while some rows are in a combination of fewer than k rows, each such
    row has its next column suppressed, the column with most distinct values first. If the rows
    with every column suppressed are fewer than k, rows of the smallest other combinations join
    them. The columns become text. Returns the frame and the cells suppressed per column.
    """
    cols = list(columns)
    if not cols or frame.height < k:
        return frame, {}
    order = sorted(cols, key=lambda c: -frame[c].n_unique())
    values = {c: np.asarray(frame[c].cast(pl.String).fill_null("<missing>").to_numpy(), dtype=object) for c in cols}
    counts = dict.fromkeys(cols, 0)

    def sizes() -> NDArray[np.int64]:
        df = pl.DataFrame({c: values[c].astype(str) for c in cols})
        return np.asarray(df.select(pl.len().over(cols).alias("n"))["n"].to_numpy(), dtype=np.int64)

    for _ in range(len(cols)):
        small = sizes() < k
        if not small.any():
            break
        done = np.zeros(frame.height, dtype=bool)
        for c in order:
            sel = small & ~done & (values[c] != SUPPRESSED)
            values[c][sel] = SUPPRESSED
            counts[c] += int(sel.sum())
            done |= sel
    all_star = np.logical_and.reduce([values[c] == SUPPRESSED for c in cols])
    if 0 < all_star.sum() < k:
        # too few fully suppressed rows: whole smallest combinations join them (never part of one)
        df = pl.DataFrame({c: values[c].astype(str) for c in cols}).with_row_index("__row")
        groups = (
            df.filter(~pl.Series(all_star))
            .group_by(cols)
            .agg(pl.col("__row"), pl.len().alias("__n"))
            .sort(["__n", pl.col("__row").list.first()])
        )
        for rows in groups["__row"].to_list():
            if all_star.sum() >= k:
                break
            for c in cols:
                counts[c] += int(np.sum(values[c][rows] != SUPPRESSED))
                values[c][rows] = SUPPRESSED
            all_star[rows] = True
    out = frame.with_columns(
        [pl.Series(c, values[c].astype(str)).replace("<missing>", None) for c in cols]
    )
    return out, {c: n for c, n in counts.items() if n}


class MicroaggregateStep(NumericStep):
    """Replace the numeric columns by group means (k-anonymity for continuous attributes)."""

    example: ClassVar[str] = (
        "{columns: [capital-gain, capital-loss, hours-per-week], method: mdav, k: 3, restore_moments: true}"
    )
    in_memory_only: ClassVar[str | None] = (
        "it groups every record with its nearest neighbours; in Python use "
        "sdckit.microagg.distributed_microaggregate(frame, k=..., blocks=[...]) (MDAV within key blocks), or run "
        "this pipeline in memory (engine: polars, the default)"
    )
    verb: ClassVar[str] = "average"

    method: Literal["mdav", "mdav_blocked", "vmdav", "rank", "pca", "single"] = "mdav"
    """MDAV or one of its family (see ``sdckit.microagg``)."""
    k: GroupSize = 3
    """Smallest group size."""
    columns: Columns | None = None
    """Columns to microaggregate together (default: the pipeline's ``numeric`` columns)."""
    restore_moments: Flag = True
    """Apply the linear transformation that restores the original mean and covariance."""
    positivity: Positivity = "none"
    """Positivity-preserving variant: ``none``, ``same``, ``subset`` or ``global``."""
    strata: Columns | Literal["quasi_identifiers"] | None = None
    """Microaggregate separately within each combination of these columns; ``quasi_identifiers``
    means the categorical quasi-identifiers, so the combined quasi-identifier set reaches k."""
    small_strata: Literal["merge", "error"] = "merge"
    """Strata with fewer than k rows: ``merge`` suppresses their strata values (to ``*``, the
    column with most distinct values first) until every stratum has k rows; ``error`` refuses."""

    kind: Literal["microaggregate"] = "microaggregate"

    @field_validator("columns", "strata", mode="before")
    @classmethod
    def _split_columns(cls, v: Any) -> Any:
        return v if v == "quasi_identifiers" else split_columns(v)

    def named_strata(self) -> tuple[str, ...]:
        """The strata columns the options name (not ``quasi_identifiers``)."""
        return () if self.strata in (None, "quasi_identifiers") else tuple(self.strata or ())

    def check_names(self, columns_in_data: Sequence[str], source: str, index: int) -> None:
        super().check_names(columns_in_data, source, index)
        from_strata = self.named_strata()
        if from_strata:
            _check(columns_in_data, from_strata, f"steps[{index}].microaggregate.strata", source)

    def moves_knowledge(self, column: str, log: StepLog) -> bool:
        # a strata cell suppressed to '*' by small_strata: merge tells nothing new of the person
        return column not in (log.details.get("suppressed_cells") or {})

    def masked_columns(self, log: StepLog) -> tuple[str, ...]:
        merged = log.details.get("suppressed_cells") or {}
        return tuple(c for c in log.columns if c not in merged)

    def apply(self, frame: pl.DataFrame, ctx: StepContext) -> tuple[pl.DataFrame, StepLog]:
        columns = self.masking(frame, ctx)
        numeric_columns(frame, columns)  # precise error for text or missing values
        strata: list[str] = []
        if self.strata == "quasi_identifiers":
            strata = [q for q in ctx.quasi_identifiers if q in frame.columns and q not in columns]
        elif self.strata:
            strata = [c for c in self.strata if c in frame.columns]
        details: dict[str, Any] = {"method": self.method, "k": self.k}
        merged: dict[str, int] = {}
        if strata:
            details["strata"] = strata
            if self.small_strata == "merge":
                frame, merged = merge_small_strata(frame, strata, self.k)
                details["suppressed_cells"] = merged
        original = frame.select(columns)
        entity = ctx.household if ctx.household in frame.columns else None
        where = f"{ctx.where}.microaggregate"
        if entity is not None and self.method != "mdav":
            raise ConfigError(
                f"{where}: method: {self.method} does not keep households apart; with household: {entity} use "
                "method: mdav (every group then holds k distinct households)."
            )
        model = Microaggregation(
            k=self.k, method=self.method, columns=list(columns), strata=strata or None, allow_linear_relations=True,
            entity=entity,
        )
        try:
            masked = model.fit_transform(frame.select([*columns, *strata, *([entity] if entity else [])])).select(columns)
        except TooFewRowsError as err:
            if entity is None:
                raise
            raise ConfigError(f"{where}: refused: {err}") from None
        if entity is not None:
            details["entity"] = entity
        details["information_loss_percent"] = float(model.information_loss_)
        details["n_groups"] = int(model.n_groups_)
        what = f"{self.method.upper()} with k = {self.k} on {len(columns)} column(s): IL {model.information_loss_:.2f} %"
        if entity is not None:
            what += f"; every group holds at least {self.k} distinct households ({entity})"
        if strata:
            what += f", within strata of {', '.join(strata)}"
            if merged:
                total = sum(merged.values())
                what += (f" ({total:,} strata cells of rare combinations suppressed to '*': "
                         + ", ".join(f"{c} {n:,}" for c, n in merged.items()) + ")")
        if self.positivity != "none":
            restorer = PositivityRestorer(mode=self.positivity, columns=list(columns))
            restorer.fit(original, masked, groups=model.groups_)
            masked = restorer.transform(masked)
            stats = getattr(restorer, "stats_", None)
            if stats is not None and hasattr(stats, "to_dict"):
                details["positivity"] = stats.to_dict()
            what += f"; mean and covariance restored keeping signs ({self.positivity})"
        elif self.restore_moments:
            masked = MomentRestorer(columns=list(columns)).fit(original, masked).transform(masked)
            what += "; mean and covariance restored"
        out = frame.with_columns(masked.select(columns))
        return out, StepLog("microaggregate", (*columns, *merged), details, what + ".")
