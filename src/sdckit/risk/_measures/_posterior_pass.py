"""Suppress what carries the posterior: the pass that makes the release's posterior figures bounds.

:func:`~sdckit.risk._measures._posterior.row_posterior` measures what an attacker who knows a person's
keys and reads every released column puts on the person's row and on each suppressed cell. This pass
runs after the masking steps, before the release is measured and written, and changes the release
until, for every person and every released row with a suppressed key:

* row:  the reference attacker's posterior on the person's own row is at most 1/k + ``tolerance``
  (people in a group of fewer than k identical rows are the headline's, not this pass's);
* cell: the posterior of the row's hidden key values (together) is at most ``cell_bound``, for two
  attackers: the reference one (the law within the released groups of each suppression pattern) and
  the *population* one (the law P(h | shown keys, y) of the whole input, as a model learnt from other
  data of the same population would estimate it; a row whose non-key values are suppressed reads
  P(h | shown keys)). The reference posterior is the share of the value in the group's true make-up,
  so it bounds how often any guess of the cell is right; a model from other data can believe more
  than the bound, not be right more often (docs/anonymize.md, measured in
  tests/pipeline/test_release_posterior.py).

How. A row that breaks either rule has the released non-key values the attacker reads (``features``)
set to missing in *every* row of its released group (the rows identical on the keys): the rows of the
group are then identical on every column the attacker reads, so they are exchangeable and the
posterior on any of them is at most 1/g <= 1/k (docs/anonymize.md, "What the other columns tell":
L = 1). A cell still above ``cell_bound`` once its group shows no non-key value is carried by the
shown keys themselves; one more key, drawn at random among the shown ones (OS entropy unless
``seed``), is suppressed in every row of the group, which only merges groups (k-anonymity holds).
The posteriors are recomputed after each round; after ``max_rounds`` rounds (default: keys + 2) with a row or a
cell still above, the pass refuses (:class:`PosteriorPassError`). Once both rules hold, a model learnt on half
the people guesses the other half's hidden key cells (:mod:`sdckit.risk._measures._outside`); where its guesses
of a key are right more often than the key's bound beyond sampling error, the cells it reads above the bound are
handled like cells above it and the check runs again (at most ``OUTSIDE_ROUNDS`` times, then refused).

Pure logic, no I/O.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import polars as pl

from sdckit.errors import SdcError
from sdckit.risk._measures._outside import OutsideGuesses, outside_model_guesses
from sdckit.risk._measures._posterior import (
    _MISSING,
    POSTERIOR_TOLERANCE,
    RowPosterior,
    _features,
    _lookup,
    _pattern_rows,
    _radix,
    _true_codes,
    row_posterior,
)

__all__ = ["PosteriorPass", "PosteriorPassError", "default_cell_bound", "population_cell_posterior", "suppress_posterior"]

OUTSIDE_ROUNDS = 3
"""Times the pass hides what an outside model reads above the bound before it refuses."""


class PosteriorPassError(SdcError, ValueError):
    """The pass could not bring every row and suppressed cell under its bound in its rounds."""


def column_bounds(known: pl.DataFrame, keys: Sequence[str], bound: float, tolerance: float) -> dict[str, float]:
    """Per key, max(``bound``, share of its commonest value in ``known`` + ``tolerance``), capped at 1."""
    out: dict[str, float] = {}
    for c in keys:
        counts = known[c].cast(pl.String).fill_null(_MISSING).value_counts()["count"].to_numpy()
        top = float(counts.max()) / known.height if known.height else 0.0
        out[c] = min(1.0, max(bound, top + tolerance))
    return out


def default_cell_bound(k: int) -> float:
    """The default bound on a suppressed cell's posterior: 1 - 1/k.

    The row rule says the attacker picks the person's row with probability at most about 1/k; the
    matching rule for a hidden value is that the attacker's best guess of it is wrong with
    probability at least 1/k (at k = 5: a guess is at most 80 % sure), the guarantee the hidden
    value of a person had in a group of k with at least one other value."""
    return 1.0 - 1.0 / k


@dataclass(frozen=True)
class PosteriorPass:
    """What the pass did and the posteriors that hold after it."""

    release: pl.DataFrame
    """The release after the pass (aligned with the input row for row, like its argument)."""
    posterior: RowPosterior
    """The reference attacker's posteriors on the release after the pass."""
    population_cell: np.ndarray
    """Per released row, the population attacker's posterior of its hidden keys (NaN: none hidden)."""
    cells: dict[str, int] = field(default_factory=dict)
    """Per column, the cells the pass set to missing."""
    rows: int = 0
    """Released rows the pass changed."""
    rounds: int = 0
    k: int = 2
    tolerance: float = POSTERIOR_TOLERANCE
    cell_bound: float = 0.5
    bare_rows: int = 0
    """Rows of groups that hide every key yet read a hidden value above its bound (the group's own make-up
    carries it; nothing is left to hide): their posterior is in ``max_cell_posterior``, not under the bound."""
    column_bounds: dict[str, float] = field(default_factory=dict)
    """Per key, the bound on the posterior of one of its suppressed cells: the larger of ``cell_bound`` and
    the share of the key's commonest value in the input + ``tolerance`` (no release hides a value better
    than the population does: a suppressed native-country is "United-States" for 90 % of people)."""
    outside_rounds: int = 0
    """Rounds that hid what the outside model read above the bound in a key whose guesses were right too often."""
    outside: OutsideGuesses | None = None
    """A model learnt on other people's rows, its guesses of every hidden key cell scored on the release
    (:func:`~sdckit.risk._measures._outside.outside_model_guesses`): how often they are right where it
    believes more than the bound."""

    @property
    def row_bound(self) -> float:
        return 1.0 / self.k + self.tolerance

    @property
    def max_row_posterior(self) -> float:
        """The largest posterior on a person's own row among people in groups of at least k."""
        p = self.posterior
        keep = p.group_sizes >= self.k if p.group_sizes is not None else np.ones(p.posterior.size, bool)
        return float(p.posterior[keep].max()) if keep.any() else 0.0

    @property
    def max_cell_posterior(self) -> float:
        """The largest posterior of a row's hidden keys, of either attacker."""
        ref = float(self.posterior.cell_posterior.max()) if self.posterior.cell_posterior.size else 0.0
        pop = self.population_cell[np.isfinite(self.population_cell)]
        return max(ref, float(pop.max()) if pop.size else 0.0)

    @property
    def n_cells(self) -> int:
        return int(sum(self.cells.values()))

    def _raised(self) -> str:
        up = {c: b for c, b in self.column_bounds.items() if b > self.cell_bound + 1e-12}
        return ", ".join(f"{c} {b:.3g}" for c, b in up.items()) or "none"

    def describe(self) -> str:
        if not self.n_cells:
            return (f"No cell needed suppressing: no row's posterior exceeds 1/k + {self.tolerance:g} = {self.row_bound:.3g} "
                    f"and no suppressed cell's exceeds {self.cell_bound:.3g} (or its column's commonest share + "
                    f"{self.tolerance:g}: {self._raised()}).{self._outside()}")
        cols = ", ".join(f"{n:,} of {c}" for c, n in self.cells.items() if n)
        return (f"{self.n_cells:,} cells ({cols}) in {self.rows:,} rows suppressed so that no row's posterior exceeds "
                f"1/k + {self.tolerance:g} = {self.row_bound:.3g} (now at most {self.max_row_posterior:.3f}) and no suppressed "
                f"cell's exceeds {self.cell_bound:.3g} or, above it, its column's commonest share + {self.tolerance:g} "
                f"({self._raised()}){self._bare()}; {self.rounds} round(s).{self._outside()}")

    def _outside(self) -> str:
        if self.outside is None:
            return ""
        again = (f" (after {self.outside_rounds} round(s) hiding the cells an earlier split's model read above the bound, "
                 "its guesses there having been right more often than the bound)") if self.outside_rounds else ""
        return f" {self.outside.describe()}{again}"

    def _bare(self) -> str:
        if not self.bare_rows:
            return ""
        return (f", except {self.bare_rows:,} rows of groups that hide every key (the group's make-up alone reads a hidden "
                f"value above its bound; at most {self.max_cell_posterior:.3f})")

    def to_dict(self) -> dict[str, Any]:
        return {
            "cells": dict(self.cells), "n_cells": self.n_cells, "rows": self.rows, "rounds": self.rounds,
            "row_bound": self.row_bound, "cell_bound": self.cell_bound, "column_bounds": dict(self.column_bounds),
            "max_row_posterior": self.max_row_posterior, "max_cell_posterior": self.max_cell_posterior,
            "bare_rows_above_cell_bound": self.bare_rows, "outside_rounds": self.outside_rounds,
            "outside_model": None if self.outside is None else self.outside.to_dict(),
            "description": self.describe(),
        }


def population_cell_posterior(
    release: pl.DataFrame,
    known: pl.DataFrame,
    keys: Sequence[str],
    features: Sequence[str],
    *,
    masked: Sequence[str] = (),
    bins: int = 3,
    smoothing: float = 1.0,
    bounds: dict[str, float] | None = None,
    cache: dict[Any, Any] | None = None,
) -> np.ndarray:
    """Per released row (aligned with ``known``), the posterior of the row's hidden keys under the law of
    the whole input: max over h of P(h | s, y) / sum over h' of P(h' | s, y), h ranging over the hidden
    values seen with the shown keys s,

        P(h | s, y) = (n(s, y, h) + a P(h | s)) / (n(s, y) + a),  P(h | s) = (n(s, h) + 1/m) / (n(s) + 1),

    the counts over every person (true keys; y: the non-key values of the person's released row, read as
    :func:`row_posterior` reads them), a = ``smoothing``. A row whose features are all missing reads
    P(h | s) (the people whose features are suppressed are left out of the y counts: a suppressed y says
    nothing an attacker's outside model could know). NaN for a row with no hidden key.

    The counts leave out the rows of the row's suppression pattern (a model learnt on other people, whose
    rare combinations are not the target's), and h ranges over every hidden-value combination seen in the
    input for the pattern's hidden keys (m of them). Per row, the largest posterior of one hidden cell (the
    joint summed over the row's other hidden cells); with ``bounds`` ({column: bound}), the largest excess of a
    cell's posterior over its column's bound instead (above 0: above the bound).

    Summed over the row's other hidden cells, the scores of c = v are, with m_v the combinations with c = v,

        blank row:  P_v = (n(s, c=v) + m_v / m) / (n(s) + 1),  otherwise  (n(s, y, c=v) + a P_v) / (n(s, y) + a),

    and the scores of all h sum to 1: counts of (shown keys, c) suffice, in integer codes (no product of rows
    and combinations). ``cache`` (a dict kept by the caller between calls on the same ``known`` and ``keys``)
    keeps the counts of the true keys, which do not change."""
    keys = [c for c in keys if c in release.columns and c in known.columns]
    feats = [c for c in features if c in release.columns and c not in keys]
    n = release.height
    out = np.full(n, np.nan)
    if not keys or n == 0:
        return out
    cache = {} if cache is None else cache
    if cache.get("__keys") != (tuple(keys), n):
        cache.clear()
        cache["__keys"] = (tuple(keys), n)
        cache["__T"], cache["__card"] = _true_codes(known, keys)
    truth, cards = cache["__T"], cache["__card"]

    def dense(cols: tuple[int, ...]) -> tuple[np.ndarray, int]:
        """The people's true values of ``cols`` as one dense code (0 ..), and how many codes."""
        if cols not in cache:
            values, code = np.unique(_radix(truth[:, list(cols)], cards[list(cols)]), return_inverse=True)
            cache[cols] = (code, values.size)
        return cache[cols]

    y = _features(release, feats, masked, bins) if feats else pl.Series("__y", [""] * n)
    y_code = y.rank("dense").to_numpy().astype(np.int64) - 1
    n_y = int(y_code.max()) + 1
    blank = (release.select(pl.all_horizontal([pl.col(c).is_null() for c in feats])).to_series().to_numpy()
             if feats else np.zeros(n, bool))
    hidden = release.select([pl.col(c).is_null() for c in keys]).to_numpy()
    a = smoothing
    for idx in _pattern_rows(hidden):
        hid = tuple(j for j in range(len(keys)) if hidden[idx[0], j])
        if not hid:
            continue
        shown = tuple(j for j in range(len(keys)) if not hidden[idx[0], j])
        others = np.ones(n, bool)
        others[idx] = False  # the counts leave out the rows of this pattern
        s_code, n_s_codes = dense(shown)
        s_count = np.bincount(s_code[others], minlength=n_s_codes).astype(float)
        n_s = s_count[s_code[idx]]
        sy = s_code * n_y + y_code
        seen = others & ~blank
        sy_seen, sy_of_seen, sy_count = np.unique(sy[seen], return_inverse=True, return_counts=True)
        found = sy_seen.size > 0
        at, on_sy = _lookup(sy_seen, sy[idx])
        row_sy = np.where(on_sy, at, -1)  # each row's (shown keys, y) among those seen, -1: not seen
        n_sy = np.where(on_sy, sy_count[at] if found else 0, 0).astype(float)
        combo_code, m_all = dense(hid)
        _, first_of = np.unique(combo_code, return_index=True)
        row_blank = blank[idx]
        row_s = s_code[idx]
        best = np.full(idx.size, -np.inf)
        for j in hid:
            card = int(cards[j])
            m_v = np.bincount(truth[first_of, j], minlength=card).astype(float) / m_all
            # the (shown keys, value of c) seen among the others, sparse (no shown-keys x values table)
            pair, n_pair = np.unique(s_code[others] * card + truth[others, j], return_counts=True)
            pair_s, pair_v = pair // card, pair % card
            # per shown keys, the largest prior numerator n(s, c=v) + m_v / m over its values; a value never seen
            # with s has m_v / m alone, the largest of which (max m_v) bounds those and is exact
            top = np.full(n_s_codes, float(m_v.max()))
            np.maximum.at(top, pair_s, n_pair + m_v[pair_v])
            prior_top = top[row_s] / (n_s + 1.0)
            value = np.where(row_blank, prior_top, a * prior_top / (n_sy + a))
            if found:
                # (s, y, c = v) seen among the others: its score; per (s, y), the best
                triple, n_triple = np.unique(sy_of_seen * card + truth[seen, j], return_counts=True)
                t_sy, t_v = triple // card, triple % card
                t_s = sy_seen[t_sy] // n_y
                at_pair = np.searchsorted(pair, t_s * card + t_v)  # seen with y, so seen with s
                t_prior = (n_pair[at_pair] + m_v[t_v]) / (s_count[t_s] + 1.0)
                best_sy = np.full(sy_seen.size, -np.inf)
                np.maximum.at(best_sy, t_sy, (n_triple + a * t_prior) / (sy_count[t_sy] + a))
                on_y = (row_sy >= 0) & ~row_blank
                value[on_y] = np.maximum(value[on_y], best_sy[row_sy[on_y]])
            best = np.maximum(best, value - (0.0 if bounds is None else bounds[keys[j]]))
        out[idx] = best
    return out


def suppress_posterior(
    release: pl.DataFrame,
    known: pl.DataFrame,
    keys: Sequence[str],
    *,
    k: int,
    features: Sequence[str],
    masked: Sequence[str] = (),
    bins: int = 3,
    tolerance: float = POSTERIOR_TOLERANCE,
    cell_bound: float | None = None,
    max_rounds: int | None = None,
    seed: int | None = None,
) -> PosteriorPass:
    """Suppress the released values that carry a posterior above its bound (see the module).

    ``release`` and ``known`` are aligned row for row (released row i is person i's); ``known`` holds the
    people's true keys (after the public recodings). Returns the changed release and the posteriors that
    now hold; raises :class:`PosteriorPassError` when ``max_rounds`` rounds leave one above."""
    keys = [c for c in keys if c in release.columns and c in known.columns]
    feats = [c for c in features if c in release.columns and c not in keys]
    bound = default_cell_bound(k) if cell_bound is None else float(cell_bound)
    bounds = column_bounds(known, keys, bound, tolerance)
    # a round blanks the non-key values or hides one more key of a group: a group needs at most one round for its
    # non-key values and one per key
    rounds_allowed = len(keys) + 2 if max_rounds is None else max_rounds
    rng = np.random.default_rng(seed)
    counts: dict[Any, Any] = {}  # the counts of the true keys, the same every round
    start = release
    n = release.height
    touched = np.zeros(n, bool)
    bare = np.zeros(n, bool)  # rows of groups that hide every key and are still read above the bound
    rounds = 0
    outside_rounds = 0
    while True:
        post = row_posterior(release, known, keys, k=k, features=feats, masked=masked, bins=bins, tolerance=tolerance)
        excess = population_cell_posterior(release, known, keys, feats, masked=masked, bins=bins, bounds=bounds,
                                           cache=counts)
        cell = np.full(n, np.nan)
        if post.cell_rows is not None and post.cell_rows.size:
            hidden_bound = release.select(pl.max_horizontal([
                pl.when(pl.col(c).is_null()).then(pl.lit(bounds[c])).otherwise(pl.lit(0.0)) for c in keys]))
            cell[post.cell_rows] = post.cell_posterior - hidden_bound.to_series().to_numpy()[post.cell_rows]
        cell = np.fmax(cell, excess)  # above 0: a cell read above its column's bound
        bad_row = post.exposed
        bad_cell = (np.nan_to_num(cell, nan=-1.0) > 1e-12) & ~bare
        if not (bad_row.any() or bad_cell.any()):
            # the bound is on the reference posterior, so on how often a guess is right; a model learnt on other
            # people may believe more, and where its guesses are right more often than the bound, what it reads
            # above the bound is hidden like any cell above it (then scored again)
            outside = outside_model_guesses(release, known, keys, feats, bounds=bounds, masked=masked, bins=bins, seed=rng)
            if not outside.over:
                break
            bad_cell = outside.rows_over(n) & ~bare
            if outside_rounds >= OUTSIDE_ROUNDS or not bad_cell.any():
                raise PosteriorPassError(
                    f"{outside.describe()} Lower posterior_bound (the pass then hides more), release fewer non-key "
                    "columns, or recode those keys more coarsely."
                )
            outside_rounds += 1
        if rounds >= rounds_allowed + outside_rounds:
            raise PosteriorPassError(
                f"after {rounds} rounds of suppression, {int(bad_row.sum()):,} people still have a posterior above 1/k + "
                f"{tolerance:g} = {1 / k + tolerance:.3g} on their own row and {int(bad_cell.sum()):,} rows a hidden value "
                f"read above its bound (posterior_bound {bound:.3g} or its column's commonest share + {tolerance:g}); raise posterior_bound, release fewer non-key columns, or "
                "recode the keys more coarsely."
            )
        rounds += 1
        group = release.select(pl.struct([pl.col(c).cast(pl.String) for c in keys]).rank("dense").alias("__g"))["__g"].to_numpy()
        blank = (release.select(pl.all_horizontal([pl.col(c).is_null() for c in feats])).to_series().to_numpy()
                 if feats else np.ones(n, bool))
        # a row above either bound whose group still shows non-key values: blank the group's non-key values
        show = (bad_row | bad_cell) & ~blank
        blank_groups = np.isin(group, np.unique(group[show]))
        # a cell above its bound in a group that shows no non-key value: the shown keys carry it; hide one more
        deeper = bad_cell & blank
        changes: dict[str, np.ndarray] = {}
        if blank_groups.any():
            for c in feats:
                changes[c] = blank_groups
        for g in np.unique(group[deeper]):
            members = group == g
            first = int(np.flatnonzero(members)[0])
            shown = [c for c in keys if release[c][first] is not None]
            if not shown:  # nothing left to hide: the group's own make-up carries it; stated, not hidden
                bare |= members
                continue
            c = shown[int(rng.integers(len(shown)))]
            changes[c] = changes.get(c, np.zeros(n, bool)) | members
        touched |= np.logical_or.reduce(list(changes.values())) if changes else False
        release = release.with_columns([
            pl.when(pl.Series(mask)).then(None).otherwise(pl.col(c)).alias(c) for c, mask in changes.items()
        ])
    cells = {c: int((release[c].is_null() & ~start[c].is_null()).sum()) for c in release.columns}
    pop = population_cell_posterior(release, known, keys, feats, masked=masked, bins=bins, cache=counts)
    return PosteriorPass(
        release=release, posterior=post, population_cell=pop, column_bounds=bounds, cells={c: v for c, v in cells.items() if v},
        rows=int(touched.sum()), rounds=rounds, bare_rows=int(bare.sum()), k=k, tolerance=tolerance, cell_bound=bound,
        outside=outside, outside_rounds=outside_rounds,
    )
