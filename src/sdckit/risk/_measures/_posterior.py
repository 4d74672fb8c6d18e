"""The attacker's posterior on a person's released row, given every released column.

Identical released rows are exchangeable, so an attacker who sees only the keys puts at most 1/g
on any row of a group of g. The columns that are not keys (income, microaggregated amounts) differ
between the rows of a group, and where the group mixes people whose true keys differ (a group
formed by suppression, with decoys) they tell the rows apart: a row whose income is high is more
likely the married man's than the never-married one's.

:func:`row_posterior` computes, for every person, the posterior of the *reference attacker* on the
person's own released row. The attacker knows the person's keys x (after the public recoding) and
the population's joint law of the keys and the released non-key values, taken here as the input
itself (the best model there is of it; a model learnt from other data of the same population is
at best as sharp), and reads every released column:

    score_r(x) = P(true hidden keys of r = x_H(r) | shown keys of r, y_r),
    posterior(t) = score_t(x_t) / sum over released rows r consistent with x_t of score_r(x_t),

H(r) being the keys suppressed in row r and y_r its released non-key values (categorical columns
as released; masked numeric ones in ``bins`` quantile bins of the release). A row with no
suppressed key has score 1. A row's shown keys are read as released: after record swapping a row
shows another area than its person's, and is consistent with a person only where it shows that
person's keys (a swapped person's own row, showing the swapped area, gets 0). P is the empirical
law on the input, smoothed:

    P(h | s, y) = (n(s, y, h) + a P(h | s)) / (n(s, y) + a),  P(h | s) = (n(s, h) + 1/m) / (n(s) + 1)

with a = ``smoothing`` (m: the distinct h seen with s). Bound (docs/anonymize.md, "What the
other columns tell"): if every ratio P(y | x) / P(y | x') between two people of a group is at most
L, the posterior on a row of a group of g is at most L^2 / (L^2 + g - 1); with L = 1 (no
non-key column, or a group of people with the same true keys) that is 1/g.

Pure logic, no I/O. Cost: one join per pattern of suppressed keys, O(n * patterns).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import polars as pl

from sdckit.risk._measures._release import SUPPRESSED_MARK

__all__ = ["POSTERIOR_TOLERANCE", "RowPosterior", "row_posterior"]

POSTERIOR_TOLERANCE = 0.05
"""How far above 1/k the reference attacker's posterior on a person's row may be before the person
counts as exposed by the non-key columns (the release's posterior figure)."""

_Y = "__y"


def _suppressed(column: str, dtype: pl.DataType) -> pl.Expr:
    """A released cell that shows nothing: missing, or the ``*`` of a string column."""
    expr = pl.col(column).is_null()
    if dtype == pl.String:
        expr = expr | (pl.col(column) == SUPPRESSED_MARK)
    return expr


@dataclass(frozen=True)
class RowPosterior:
    """The reference attacker's posterior on each person's own released row."""

    posterior: np.ndarray
    """Per person (input row), the posterior on the person's own released row."""
    k: int
    tolerance: float
    features: tuple[str, ...]
    """The released non-key columns the attacker reads."""
    cell_posterior: np.ndarray
    """Per released row with a suppressed key, the attacker's largest posterior of its hidden keys."""
    cell_right: np.ndarray
    """Per such row, whether that most probable value is the true one."""
    group_sizes: np.ndarray | None = None
    """Per person, the rows identical on the keys to the person's own released row (None: not given)."""
    cell_rows: np.ndarray | None = None
    """Per entry of ``cell_posterior``, its released row (None: not given)."""

    @property
    def exposed(self) -> np.ndarray:
        """Per person: in a group of at least k identical rows (safe by the headline), yet given more
        than 1/k + tolerance on the own row by the attacker who reads every released column."""
        above = self.posterior > 1 / self.k + self.tolerance
        return above if self.group_sizes is None else above & (self.group_sizes >= self.k)

    @property
    def share_above(self) -> float:
        """Share of people the headline counts safe (group >= k) on whose row the attacker puts more than
        1/k + tolerance: what the other released columns add to the exposure at k."""
        return float(np.mean(self.exposed)) if self.posterior.size else 0.0

    @property
    def max(self) -> float:
        return float(self.posterior.max()) if self.posterior.size else 0.0

    def to_dict(self) -> dict[str, Any]:
        cells = self.cell_posterior
        high = cells > 2 / 3
        return {
            "k": self.k,
            "tolerance": self.tolerance,
            "features": list(self.features),
            "max_row_posterior": self.max,
            "share_above_1_over_k_plus_tolerance": self.share_above,
            "n_above_1_over_k_plus_tolerance": int(np.sum(self.exposed)),
            "n_suppressed_rows": int(cells.size),
            "max_cell_posterior": float(cells.max()) if cells.size else 0.0,
            "mean_cell_posterior": float(cells.mean()) if cells.size else 0.0,
            "n_cells_above_2_3": int(high.sum()),
            "share_right_above_2_3": float(self.cell_right[high].mean()) if high.any() else None,
        }


def _features(release: pl.DataFrame, features: Sequence[str], masked: Sequence[str], bins: int) -> pl.Series:
    """One categorical value per row: the released non-key columns, masked numbers in quantile bins."""
    parts: list[pl.Series] = []
    for c in features:
        if c in masked and release.schema[c].is_numeric():
            values = release[c].cast(pl.Float64).to_numpy()
            finite = values[np.isfinite(values)]
            edges = np.unique(np.quantile(finite, np.linspace(0, 1, bins + 1)[1:-1])) if finite.size else np.zeros(0)
            binned = np.where(np.isfinite(values), np.searchsorted(edges, values, side="right"), -1)
            parts.append(pl.Series(c, binned.astype(np.int64)).cast(pl.String))
        else:
            parts.append(release[c].cast(pl.String).fill_null("\x00"))
    if not parts:
        return pl.Series(_Y, [""] * release.height)
    return pl.DataFrame(parts).select(pl.concat_str(pl.all(), separator="\x1f").alias(_Y))[_Y]


def _score(frame: pl.DataFrame, tables: tuple[pl.DataFrame, ...], shown: list[str], smoothing: float) -> pl.DataFrame:
    """P(h | s, y) for the (s, y, h) of each row of ``frame`` (the module's smoothed share)."""
    n_syh, n_sy, n_sh, n_s = tables
    out = frame.join(n_syh, on=[*shown, _Y, "__h"], how="left").join(n_sy, on=[*shown, _Y], how="left")
    out = out.join(n_sh, on=[*shown, "__h"] if shown else ["__h"], how="left")
    out = out.join(n_s, on=shown, how="left") if shown else out.join(n_s, how="cross")
    prior = (pl.col("__nsh").fill_null(0) + 1.0 / pl.col("__m")) / (pl.col("__ns") + 1.0)
    return out.with_columns(
        ((pl.col("__nsyh").fill_null(0) + smoothing * prior) / (pl.col("__nsy").fill_null(0) + smoothing)).alias("__score")
    )


def row_posterior(
    release: pl.DataFrame,
    known: pl.DataFrame,
    keys: Sequence[str],
    *,
    k: int,
    features: Sequence[str] | None = None,
    masked: Sequence[str] = (),
    bins: int = 3,
    smoothing: float = 1.0,
    tolerance: float = POSTERIOR_TOLERANCE,
) -> RowPosterior:
    """The reference attacker's posterior on every person's own row (see the module).

    ``release`` and ``known`` are aligned row for row (released row i is person i's: the pipeline
    measures before it shuffles); ``known`` holds the people's true keys. ``features``: the
    released non-key columns the attacker reads (default: every released column that is not a key).
    """
    keys = [c for c in keys if c in release.columns and c in known.columns]
    if release.height != known.height:
        raise ValueError("row_posterior needs the release and the people's keys aligned row for row.")
    feats = tuple(c for c in (features if features is not None else release.columns) if c not in keys and c in release.columns)
    n = release.height
    if not keys or n == 0:
        return RowPosterior(np.zeros(n), k, tolerance, feats, np.zeros(0), np.zeros(0, bool), None)
    # the people's keys in the release's types, so that a value written alike compares alike
    known = known.select([pl.col(c).cast(release.schema[c], strict=False) for c in keys])
    str_keys = [pl.col(c).cast(pl.String).fill_null("\x00missing") for c in keys]
    truth = known.select(str_keys).with_columns(_features(release, feats, masked, bins).alias(_Y))
    shown_as = release.select(str_keys)
    # every released missing cell is hidden to the attacker, suppressed or missing in the input alike (the
    # file does not say which); a person whose key was missing has the value "\x00missing" behind it
    hidden = release.select([_suppressed(c, release.schema[c]).alias(c) for c in keys])
    # a shown cell is matched as released, not as its person's true value: after record swapping a row
    # shows another area than its person's, and the attacker who knows the person's true area finds the
    # rows that show it (the person's own row is then not among them)
    rel = shown_as.with_columns([pl.when(hidden[c]).then(None).otherwise(shown_as[c]).alias(c) for c in keys])
    # row i is consistent with its own person i when every shown cell equals the person's value
    own_consistent = np.asarray(
        pl.DataFrame([(hidden[c] | (shown_as[c] == truth[c])).alias(c) for c in keys])
        .select(pl.all_horizontal(pl.all()).alias("__ok"))["__ok"].to_numpy(),
        dtype=bool,
    )
    rel = rel.with_columns(truth[_Y]).with_row_index("__row")
    persons = truth.with_row_index("__person")
    own = np.ones(n)
    denom = np.zeros(n)
    cell_post: list[np.ndarray] = []
    cell_right: list[np.ndarray] = []
    cell_rows: list[np.ndarray] = []
    patterns = hidden.with_row_index("__row").group_by(keys).agg(pl.col("__row"))
    for row in patterns.iter_rows(named=True):
        hid = [c for c in keys if row[c]]
        shown = [c for c in keys if not row[c]]
        rows = rel[row["__row"]]
        if not hid:  # fully shown rows: score 1, consistent with the people of the same keys
            counts = rows.group_by(shown).len("__n")
            got = persons.join(counts, on=shown, how="inner")
            np.add.at(denom, got["__person"].to_numpy(), got["__n"].to_numpy().astype(float))
            continue
        h = pl.concat_str([pl.col(c) for c in hid], separator="\x1f").alias("__h")
        on_s = shown or None
        # the law within the released groups of this pattern (the rows' true hidden keys): what an attacker
        # who knows the algorithm and the population of each released group faces
        base = rows.select("__row", *shown, _Y).join(
            truth.with_columns(h).with_row_index("__row").select("__row", "__h"), on="__row")
        n_syh = base.group_by([*shown, _Y, "__h"]).len("__nsyh")
        n_sy = base.group_by([*shown, _Y]).len("__nsy")
        n_sh = base.group_by([*shown, "__h"]).len("__nsh") if shown else base.group_by("__h").len("__nsh")
        n_s = (base.group_by(shown).agg(pl.len().alias("__ns"), pl.col("__h").n_unique().alias("__m")) if shown
               else base.select(pl.len().alias("__ns"), pl.col("__h").n_unique().alias("__m")))

        tables = (n_syh, n_sy, n_sh, n_s)

        def score(frame: pl.DataFrame, tables: tuple[pl.DataFrame, ...] = tables, shown: list[str] = shown) -> pl.DataFrame:
            return _score(frame, tables, shown, smoothing)

        # the released rows of this pattern, per (shown, y): how many
        rel_counts = rows.group_by([*shown, _Y]).len("__n")
        # every person consistent with them: same shown keys; their own hidden values
        cand = (persons.with_columns(h).drop(_Y).join(rel_counts, on=on_s, how="inner") if shown
                else persons.with_columns(h).drop(_Y).join(rel_counts, how="cross"))
        cand = score(cand)
        got = cand.group_by("__person").agg((pl.col("__n") * pl.col("__score")).sum().alias("__d"))
        np.add.at(denom, got["__person"].to_numpy(), got["__d"].to_numpy())
        # each row's own person: the score of the person's true hidden values
        mine = score(rows.select("__row", *shown, _Y).join(
            truth.with_columns(h).with_row_index("__row").select("__row", "__h"), on="__row"))
        own[mine["__row"].to_numpy()] = mine["__score"].to_numpy()
        # the attacker's best guess of the hidden values of each row of this pattern
        options = base.select([*shown, "__h"]).unique()
        guess = score(rows.select("__row", *shown, _Y).join(options, on=on_s, how="inner") if shown
                      else rows.select("__row", *shown, _Y).join(options, how="cross"))
        best = guess.group_by("__row").agg(
            (pl.col("__score").max() / pl.col("__score").sum()).alias("__p"),
            pl.col("__h").sort_by("__score", descending=True).first().alias("__best"),
        ).join(truth.with_columns(h).with_row_index("__row").select("__row", "__h"), on="__row")
        cell_post.append(best["__p"].to_numpy())
        cell_right.append((best["__best"] == best["__h"]).to_numpy())
        cell_rows.append(best["__row"].to_numpy())
    own = np.where(own_consistent, own, 0.0)  # a row that does not show its person's keys is not read as theirs
    posterior = np.divide(own, denom, out=np.zeros(n), where=denom > 0)
    sizes = release.select(pl.len().over(keys).alias("__g"))["__g"].to_numpy().astype(np.int64)
    return RowPosterior(
        posterior, k, tolerance, feats,
        np.concatenate(cell_post) if cell_post else np.zeros(0),
        np.concatenate(cell_right) if cell_right else np.zeros(0, bool),
        sizes,
        np.concatenate(cell_rows).astype(np.int64) if cell_rows else np.zeros(0, np.int64),
    )
