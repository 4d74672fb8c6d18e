"""Loss a reviewer must see: a step that suppresses or changes most of a column, a key with too many
categories for its rows, a key missing in every row.

The pipeline adds these to the release's warnings (the console, the report's Summary and the sidecar's
``summary.warnings``), beside the near-unique and l-diversity warnings of
:func:`sdckit.risk.measure_release`. The shares are the pipeline's ``warn_loss_share`` (default 25 %)
and ``warn_key_categories_share`` (default 20 %).
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

import polars as pl

from sdckit.pipeline._steps import SUPPRESSED, StepLog

__all__ = ["DEFAULT_KEY_CATEGORIES_SHARE", "DEFAULT_LOSS_SHARE", "key_warnings", "step_loss_warnings"]

DEFAULT_LOSS_SHARE = 0.25
"""A step that suppresses or changes more than this share of a column's cells is flagged."""
DEFAULT_KEY_CATEGORIES_SHARE = 0.2
"""A quasi-identifier with more distinct values than this share of the rows is flagged (recode it first)."""


def _lost(before: pl.Series, after: pl.Series) -> int:
    """Cells set to missing or to ``*`` by the step (present before, suppressed after)."""
    was = before.is_not_null()
    gone = after.is_null()
    if after.dtype in (pl.String, pl.Categorical):
        star = after.cast(pl.String) == SUPPRESSED
        gone = gone | (star.fill_null(False) & (before.cast(pl.String) != SUPPRESSED).fill_null(True))
    return int((was & gone).sum())


def step_loss_warnings(
    index: int, log: StepLog, before: pl.DataFrame, after: pl.DataFrame, released: Collection[str], share: float,
) -> list[str]:
    """Columns of which step ``index`` suppressed, or (PRAM) changed, more than ``share`` of the cells."""
    n = before.height
    if n == 0 or after.height != n:
        return []
    out = []
    changes = log.details.get("changes") or {}
    redraws = "transition_matrices" in log.details  # PRAM: a changed cell is another category, a loss too
    for c in after.columns:
        if c not in before.columns or c not in released:
            continue
        lost = _lost(before[c], after[c])
        what = "suppressed"
        if redraws and c in changes:
            changed = int(changes[c].get("cells_changed", 0))
            if changed > lost:
                lost, what = changed, "changed"
        if lost > share * n:
            out.append(
                f"step {index + 1} ({log.kind}) {what} {lost:,} of the {n:,} cells of {c} ({100 * lost / n:.3g} %, "
                f"more than {100 * share:g} %): most of what {c} said is gone; recode it into fewer categories first, "
                f"give it a lower importance, or withhold it (warn_loss_share sets this share)"
            )
    return out


def key_warnings(
    frame: pl.DataFrame, quasi_identifiers: Sequence[str], coarsened: Collection[str], share: float,
) -> list[str]:
    """Keys no step recodes whose distinct values exceed ``share`` of the rows, and keys missing in every row."""
    n = frame.height
    out = []
    for c in quasi_identifiers:
        if c not in frame.columns or n == 0:
            continue
        present = frame[c].drop_nulls()
        if present.len() == 0:
            out.append(
                f"quasi-identifier {c} is missing in every one of the {n:,} rows: it tells nothing and cannot be "
                f"measured; leave it out of quasi_identifiers, or check how the file was read (read: {{na_values: ...}})"
            )
            continue
        distinct = present.n_unique()
        if c not in coarsened and distinct > 10 and distinct > share * n:
            out.append(
                f"quasi-identifier {c} has {distinct:,} categories in {n:,} rows ({100 * distinct / n:.3g} %, more than "
                f"{100 * share:g} %): most of its values are rare, so k-anonymity costs most of its cells; recode it "
                f"into fewer categories first (a recode step) (warn_key_categories_share sets this share)"
            )
    return out
