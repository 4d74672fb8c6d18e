"""An outside model's guesses of the suppressed key cells, scored on the release itself.

The posterior pass bounds the posterior of a suppressed cell for the reference attacker (the share of
the value in its released group's true make-up), which limits how often a guess of the cell is right.
An attacker with a model learnt from other people can *believe* more than that bound on some cells (a
combination it saw n times with one value gets (n + p) / (n + 1), whatever the release holds), so the
guarantee a reviewer signs is on its guesses being right, and this module measures exactly that on the
release: the people are split at random into ``folds`` parts; each part's released rows are attacked
with a model learnt on the other parts only (their true keys and their released non-key values), per
hidden cell c of a row with shown keys s and reading y,

    P(c = v | s, y) = (n(s, y, v) + P(v | s)) / (n(s, y) + 1),   P(v | s) = (n(s, v) + P(v)) / (n(s) + 1),
    P(v) = (n(v) + 1) / (n + |V|),

(a row whose non-key values are suppressed reads P(v | s)); the model's guess is the most probable v and
its belief that probability. Per key, over the cells the model reads above the key's bound: how many,
the mean belief, and how often the guess is right, with a 95 % Wilson interval. A key whose right share
is above its bound beyond sampling error (the lower end of the 99.9 % interval above it: the check runs
on every key of every release) fails the check: the release tells that model more than the bound says.

Pure logic, no I/O. Memory: at most ``chunk`` cells of rows x values at a time, plus linear in the rows.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import polars as pl

from sdckit.risk._measures._attacks import wilson_rate
from sdckit.risk._measures._posterior import _features, _lookup, _pattern_rows, _radix, _true_codes

__all__ = ["ColumnGuesses", "OutsideGuesses", "outside_model_guesses"]

_REFUSE = 0.999  # the check runs on every key of every release: a rarer false alarm than the 95 % shown


def wilson_interval(right: int, n: int, confidence: float = 0.95) -> tuple[float, float]:
    """The Wilson score interval of a share right / n (:func:`~sdckit.risk._measures._attacks.wilson_rate`),
    clipped to [0, 1]; NaN, NaN for n = 0."""
    if n == 0:
        return math.nan, math.nan
    rate, error = wilson_rate(n, right, confidence)
    return max(0.0, rate - error), min(1.0, rate + error)


@dataclass(frozen=True)
class ColumnGuesses:
    """One key's hidden cells under the outside model."""

    column: str
    bound: float
    cells: int
    """Hidden cells of this key in the release."""
    right_all: int
    """Of those, how many the model guesses right."""
    baseline_right: int
    """How many a guess of the key's commonest value (in the model's data) gets right."""
    above: int
    """Cells the model reads above ``bound``."""
    belief_above: float
    """The model's mean belief on those (NaN: none)."""
    right_above: int
    """Of those, how many it guesses right."""

    @property
    def share_right_above(self) -> float:
        return self.right_above / self.above if self.above else math.nan

    @property
    def interval(self) -> tuple[float, float]:
        """95 % Wilson interval of the right share above the bound."""
        return wilson_interval(self.right_above, self.above)

    @property
    def over(self) -> bool:
        """Right above the bound more often than the bound, beyond sampling error: the lower end of the
        99.9 % Wilson interval above the bound."""
        return bool(self.above) and wilson_interval(self.right_above, self.above, _REFUSE)[0] > self.bound

    def to_dict(self) -> dict[str, Any]:
        low, high = self.interval
        return {
            "column": self.column, "bound": self.bound, "cells": self.cells,
            "share_right": self.right_all / self.cells if self.cells else None,
            "baseline_share_right": self.baseline_right / self.cells if self.cells else None,
            "above_bound": self.above,
            "mean_belief_above": None if math.isnan(self.belief_above) else self.belief_above,
            "share_right_above": None if not self.above else self.share_right_above,
            "interval_above": None if not self.above else [low, high],
            "over": self.over,
        }


@dataclass(frozen=True)
class OutsideGuesses:
    """An outside model's guesses of every hidden key cell of a release (see the module)."""

    columns: tuple[ColumnGuesses, ...]
    folds: int
    rows_above: dict[str, np.ndarray] = field(default_factory=dict, repr=False, compare=False)
    """Per key, per released row: True where the model reads the row's hidden cell of that key above its bound
    (what the posterior pass hides when the key's guesses are right too often)."""

    @property
    def over(self) -> tuple[ColumnGuesses, ...]:
        return tuple(c for c in self.columns if c.over)

    def rows_over(self, n: int) -> np.ndarray:
        """The released rows with a hidden cell read above its bound in a key whose guesses are over."""
        out = np.zeros(n, bool)
        for c in self.over:
            out |= self.rows_above[c.column]
        return out

    @property
    def cells(self) -> int:
        return sum(c.cells for c in self.columns)

    @property
    def above(self) -> int:
        return sum(c.above for c in self.columns)

    @property
    def share_right_above(self) -> float:
        return sum(c.right_above for c in self.columns) / self.above if self.above else math.nan

    @property
    def belief_above(self) -> float:
        return sum(c.above * c.belief_above for c in self.columns if c.above) / self.above if self.above else math.nan

    def describe(self) -> str:
        if not self.cells:
            return "No key cell is hidden: nothing for an outside model to guess."
        head = (f"A model learnt on other people of this file ({self.folds} random parts, each attacked with a model "
                f"from the rest) guesses the {self.cells:,} hidden key cells right "
                f"{sum(c.right_all for c in self.columns) / self.cells:.0%} of the time (its commonest values: "
                f"{sum(c.baseline_right for c in self.columns) / self.cells:.0%})")
        if not self.above:
            return head + "; it reads none above its bound."
        over = self.over
        tail = (f"; on the {self.above:,} cells it reads above their bound it believes {self.belief_above:.2f} on "
                f"average and is right {self.share_right_above:.0%} of the time")
        if over:
            tail += " -- above the bound beyond sampling error for " + ", ".join(
                f"{c.column} ({c.right_above:,} of {c.above:,} right, 95 % interval {c.interval[0]:.2f}-{c.interval[1]:.2f}, "
                f"bound {c.bound:.3g})" for c in over)
        else:
            tail += ", within every column's bound up to sampling error"
        return head + tail + "."

    def to_dict(self) -> dict[str, Any]:
        return {
            "folds": self.folds, "cells": self.cells, "above_bound": self.above,
            "mean_belief_above": None if not self.above else self.belief_above,
            "share_right_above": None if not self.above else self.share_right_above,
            "over": [c.column for c in self.over],
            "columns": {c.column: c.to_dict() for c in self.columns},
            "description": self.describe(),
        }


def _counts(seen: np.ndarray, counts: np.ndarray, queries: np.ndarray) -> np.ndarray:
    """The count of each query among the sorted ``seen`` codes (0 where not seen), in the queries' shape."""
    if not seen.size:
        return np.zeros(queries.shape, np.int64)
    at, on = _lookup(seen, queries.ravel())
    return np.where(on, counts[at], 0).reshape(queries.shape)


def outside_model_guesses(
    release: pl.DataFrame,
    known: pl.DataFrame,
    keys: Sequence[str],
    features: Sequence[str],
    *,
    bounds: dict[str, float],
    masked: Sequence[str] = (),
    bins: int = 3,
    folds: int = 2,
    seed: int | np.random.Generator | None = None,
    chunk: int = 4_000_000,
) -> OutsideGuesses:
    """Attack every hidden key cell of ``release`` with a model learnt on the other people (see the module).

    ``release`` and ``known`` are aligned row for row (released row i is person i's); ``known`` holds the
    people's true keys after the public recodings; ``bounds`` the bound per key; ``features`` the released
    non-key columns the attacker reads (masked numbers in ``bins`` quantile bins, as
    :func:`~sdckit.risk._measures._posterior.row_posterior` reads them). The split is drawn from OS entropy
    unless ``seed``."""
    if folds < 2:
        raise ValueError(f"folds must be at least 2 (got {folds}): the model is learnt on other people")
    keys = [c for c in keys if c in release.columns and c in known.columns]
    feats = [c for c in features if c in release.columns and c not in keys]
    n = release.height
    fold = np.random.default_rng(seed).permutation(n) % folds  # a Generator passes through: the caller's stream
    truth, cards = _true_codes(known, keys)
    y = _features(release, feats, masked, bins) if feats else pl.Series("__y", [""] * n)
    y_code = y.rank("dense").to_numpy().astype(np.int64) - 1 if n else np.zeros(0, np.int64)
    n_y = int(y_code.max()) + 1 if n else 1
    blank = (release.select(pl.all_horizontal([pl.col(c).is_null() for c in feats])).to_series().to_numpy()
             if feats else np.ones(n, bool))
    hidden = release.select([pl.col(c).is_null() for c in keys]).to_numpy() if keys else np.zeros((n, 0), bool)
    tally = {c: np.zeros(6) for c in keys}  # cells, right, baseline right, above, belief above, right above
    rows_above = {c: np.zeros(n, bool) for c in keys}
    learn = [np.flatnonzero(fold != f) for f in range(folds)]  # the people each part's model is learnt on
    learn_y = [i[~blank[i]] for i in learn]  # of those, the ones whose non-key values are released
    prior = [[(np.bincount(truth[i, j], minlength=int(cards[j])) + 1.0) / (i.size + cards[j]) for j in range(len(keys))]
             for i in learn]
    for idx in _pattern_rows(hidden):
        hid = [j for j in range(len(keys)) if hidden[idx[0], j]]
        if not hid:
            continue
        shown = [j for j in range(len(keys)) if not hidden[idx[0], j]]
        s_code = (np.unique(_radix(truth[:, shown], cards[shown]), return_inverse=True)[1] if shown
                  else np.zeros(n, np.int64))
        sy_code = s_code * n_y + y_code
        for f in range(folds):
            rows = idx[fold[idx] == f]
            if not rows.size:
                continue
            s_learn, sy_learn = s_code[learn[f]], sy_code[learn_y[f]]
            s_seen, s_count = np.unique(s_learn, return_counts=True)
            sy_seen, sy_count = np.unique(sy_learn, return_counts=True)
            n_s = _counts(s_seen, s_count, s_code[rows]).astype(float)
            n_sy = np.where(blank[rows], 0, _counts(sy_seen, sy_count, sy_code[rows])).astype(float)
            for j in hid:
                card = int(cards[j])
                p_v = prior[f][j]
                pair, n_pair = np.unique(s_learn * card + truth[learn[f], j], return_counts=True)
                triple, n_triple = np.unique(sy_learn * card + truth[learn_y[f], j], return_counts=True)
                values = np.arange(card, dtype=np.int64)
                step = max(1, chunk // card)
                for start in range(0, rows.size, step):
                    part = rows[start:start + step]
                    n_sv = _counts(pair, n_pair, (s_code[part] * card)[:, None] + values[None, :])
                    base = (n_sv + p_v[None, :]) / (n_s[start:start + step, None] + 1.0)
                    n_syv = _counts(triple, n_triple, (sy_code[part] * card)[:, None] + values[None, :])
                    n_syv[blank[part]] = 0  # a row whose non-key values are suppressed reads P(v | s)
                    score = (n_syv + base) / (n_sy[start:start + step, None] + 1.0)
                    guess = score.argmax(axis=1)
                    belief = score[np.arange(part.size), guess]
                    right = guess == truth[part, j]
                    above = belief > bounds[keys[j]]
                    rows_above[keys[j]][part] = above
                    tally[keys[j]] += [part.size, right.sum(), (truth[part, j] == p_v.argmax()).sum(), above.sum(),
                                       belief[above].sum(), right[above].sum()]
    columns = []
    for c in keys:
        cells, right, base, above, belief, right_above = tally[c]
        if cells:
            columns.append(ColumnGuesses(
                column=c, bound=bounds[c], cells=int(cells), right_all=int(right), baseline_right=int(base),
                above=int(above), belief_above=belief / above if above else math.nan, right_above=int(right_above),
            ))
    return OutsideGuesses(columns=tuple(columns), folds=folds, rows_above=rows_above)
