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

Computed from counts in integer codes, per pattern of suppressed keys: the rows' scores directly;
the best guess of each row's hidden values as the best seen with its (s, y), or the commonest seen
with s where that scores more; and each person's denominator in closed form,

    sum over the pattern's rows r with s_r = s of score_r(x) = V(s, h) + a P(h | s) W(s),
    W(s) = sum_y n(s, y) / (n(s, y) + a),  V(s, h) = sum_y n(s, y, h) n(s, y) / (n(s, y) + a).

Pure logic, no I/O. Cost: O(n log n) per pattern of suppressed keys.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
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
_MISSING = "\x00missing"  # a missing true key, read as a value of its own


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


def _codes(truth: pl.DataFrame, released: pl.DataFrame, keys: Sequence[str]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per key, one integer code per value in a space shared by the people's true values and the released
    ones (dense ranks of both together); the number of codes per key."""
    both = pl.concat([truth, released]).select([pl.col(c).rank("dense").cast(pl.Int64) - 1 for c in keys]).to_numpy()
    n = truth.height
    return both[:n], both[n:], both.max(axis=0) + 1


def _true_codes(known: pl.DataFrame, keys: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """The people's true keys as dense integer codes (rows x keys; a missing value a code of its own), and
    the number of codes per key."""
    codes = [known[c].cast(pl.String).fill_null(_MISSING).rank("dense").to_numpy().astype(np.int64) - 1 for c in keys]
    truth = np.stack(codes, axis=1) if codes and known.height else np.zeros((known.height, len(keys)), np.int64)
    return truth, (truth.max(axis=0) + 1 if known.height else np.ones(len(keys), np.int64))


def _radix(codes: np.ndarray, bases: np.ndarray) -> np.ndarray:
    """Each row's codes (columns with ``bases`` values each) as one integer, equal where the rows are equal:
    mixed radix while it fits in 62 bits, else kept dense column by column."""
    out = np.zeros(codes.shape[0], np.int64)
    span = 1
    for j in range(codes.shape[1]):
        base = int(bases[j])
        if span * base >= 2**62:  # re-rank: the codes so far are at most n distinct
            _, out = np.unique(out, return_inverse=True)
            span = int(out.max()) + 1 if out.size else 1
        out = out * base + codes[:, j]
        span *= base
    return out


def _pattern_rows(hidden: np.ndarray) -> Iterator[np.ndarray]:
    """The rows of each pattern of hidden keys (``hidden``: rows x keys, True where hidden), each ascending."""
    pattern = hidden.astype(np.int64) @ (np.int64(1) << np.arange(hidden.shape[1], dtype=np.int64))
    order = np.argsort(pattern, kind="stable")
    starts = np.flatnonzero(np.r_[True, np.diff(pattern[order]) != 0]) if order.size else np.zeros(0, np.int64)
    for first, last in zip(starts, [*starts[1:], order.size], strict=True):
        yield order[first:last]


def _lookup(values: np.ndarray, queries: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Where each query stands in the sorted ``values``, and whether it is there."""
    if not values.size:
        return np.zeros(queries.size, np.int64), np.zeros(queries.size, bool)
    at = np.minimum(np.searchsorted(values, queries), values.size - 1)
    return at, values[at] == queries


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
    # every released missing cell is hidden to the attacker, suppressed or missing in the input alike (the
    # file does not say which); a person whose key was missing has the value "\x00missing" behind it
    hidden = release.select([_suppressed(c, release.schema[c]).alias(c) for c in keys]).to_numpy()
    # integer codes per key, one space for the people's true values and the released ones: a shown cell is
    # matched as released, not as its person's true value (after record swapping a row shows another area
    # than its person's, and the attacker who knows the person's true area finds the rows that show it)
    truth, shown_as, bases = _codes(known.select(str_keys), release.select(str_keys), keys)
    y = _features(release, feats, masked, bins).rank("dense").to_numpy().astype(np.int64) - 1
    # row i is consistent with its own person i when every shown cell equals the person's value
    own_consistent = np.all(hidden | (shown_as == truth), axis=1)
    own = np.ones(n)
    denom = np.zeros(n)
    cells: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
    n_y = int(y.max()) + 1
    a = smoothing
    for idx in _pattern_rows(hidden):
        hid = [j for j in range(len(keys)) if hidden[idx[0], j]]
        shown = [j for j in range(len(keys)) if not hidden[idx[0], j]]
        # the shown keys as one code, the same for the rows (as released) and the people (true values)
        both = _radix(np.concatenate([shown_as[idx][:, shown], truth[:, shown]]), bases[shown])
        row_s, person_s = both[:idx.size], both[idx.size:]
        s_values, s_local = np.unique(row_s, return_inverse=True)
        at, match = _lookup(s_values, person_s)  # the people whose true shown keys some row of the pattern shows
        people, people_s = np.flatnonzero(match), at[match]
        if not hid:  # fully shown rows: score 1, consistent with the people of the same keys
            denom[people] += np.bincount(s_local, minlength=s_values.size)[people_s]
            continue
        # the law within the released groups of this pattern (the rows' true hidden keys): what an attacker
        # who knows the algorithm and the population of each released group faces
        h_values, h_code = np.unique(_radix(truth[:, hid], bases[hid]), return_inverse=True)
        n_h = h_values.size
        row_h = h_code[idx]
        sy, sy_local = np.unique(s_local * n_y + y[idx], return_inverse=True)
        sh, sh_local = np.unique(s_local * n_h + row_h, return_inverse=True)
        syh, syh_local = np.unique(sy_local * n_h + row_h, return_inverse=True)
        n_sy = np.bincount(sy_local)
        n_sh = np.bincount(sh_local)
        n_syh = np.bincount(syh_local)
        n_s = np.bincount(s_local, minlength=s_values.size)
        sh_s, sh_h = sh // n_h, sh % n_h
        m = np.bincount(sh_s, minlength=s_values.size)  # distinct hidden values seen with each s
        # each row's own person: the score of the person's true hidden values
        own[idx] = (n_syh[syh_local] + a * (n_sh[sh_local] + 1.0 / m[s_local]) / (n_s[s_local] + 1.0)) / (n_sy[sy_local] + a)
        # per (s, y, h) seen: its score; per (s, y): the best (a hidden value seen with s but not with y scores
        # by its n(s, h) alone, the largest of which bounds those and is exact: seen with y, it scores more)
        t_sy, t_h = syh // n_h, syh % n_h
        sy_s = sy // n_y
        t_s = sy_s[t_sy]
        t_sh = np.searchsorted(sh, t_s * n_h + t_h)
        t_score = (n_syh + a * (n_sh[t_sh] + 1.0 / m[t_s]) / (n_s[t_s] + 1.0)) / (n_sy[t_sy] + a)
        best_sy = np.full(sy.size, -np.inf)
        np.maximum.at(best_sy, t_sy, t_score)
        best_h_sy = np.full(sy.size, -1)
        at_best = t_score == best_sy[t_sy]
        best_h_sy[t_sy[at_best]] = t_h[at_best]
        top_sh = np.zeros(s_values.size)
        np.maximum.at(top_sh, sh_s, n_sh.astype(float))
        top_h = np.full(s_values.size, -1)
        at_top = n_sh == top_sh[sh_s]
        top_h[sh_s[at_top]] = sh_h[at_top]
        unseen = a * (top_sh[sy_s] + 1.0 / m[sy_s]) / (n_s[sy_s] + 1.0) / (n_sy + a)
        p_sy = np.maximum(best_sy, unseen)
        guess = np.where(best_sy >= unseen, best_h_sy, top_h[sy_s])
        cells.append((idx, p_sy[sy_local], guess[sy_local] == row_h))
        # every person consistent with the rows: the sum over the rows of their scores of the person's values,
        #   sum over y of n(s, y) score(s, y, h) = V(s, h) + a prior(s, h) W(s),
        # W(s) = sum over y of n(s, y) / (n(s, y) + a), V(s, h) = sum over y of n(s, y, h) n(s, y) / (n(s, y) + a)
        w = np.bincount(sy_s, weights=n_sy / (n_sy + a), minlength=s_values.size)
        v = np.bincount(t_sh, weights=n_syh * n_sy[t_sy] / (n_sy[t_sy] + a), minlength=sh.size)
        person_sh = people_s * n_h + h_code[people]
        pos, seen = _lookup(sh, person_sh)
        n_sh_person = np.where(seen, n_sh[pos], 0)
        prior = (n_sh_person + 1.0 / m[people_s]) / (n_s[people_s] + 1.0)
        denom[people] += np.where(seen, v[pos], 0.0) + a * prior * w[people_s]
    if cells:
        cell_rows = np.concatenate([c[0] for c in cells]).astype(np.int64)
        cell_post = np.concatenate([c[1] for c in cells])
        cell_right = np.concatenate([c[2] for c in cells])
        ordered = np.argsort(cell_rows)
        cell_rows, cell_post, cell_right = cell_rows[ordered], cell_post[ordered], cell_right[ordered]
    else:
        cell_rows, cell_post, cell_right = np.zeros(0, np.int64), np.zeros(0), np.zeros(0, bool)
    own = np.where(own_consistent, own, 0.0)  # a row that does not show its person's keys is not read as theirs
    posterior = np.divide(own, denom, out=np.zeros(n), where=denom > 0)
    sizes = release.select(pl.len().over(keys).alias("__g"))["__g"].to_numpy().astype(np.int64)
    return RowPosterior(posterior, k, tolerance, feats, cell_post, cell_right, sizes, cell_rows)
