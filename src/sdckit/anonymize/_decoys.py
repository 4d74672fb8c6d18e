"""Local suppression with decoys: every released row identical to at least k - 1 others.

The condition is on the release as a table of values, a suppressed cell being a value of its own
(``*``): every released row equals, cell for cell, at least k - 1 other released rows. With the rows
in random order, identical rows are exchangeable, so whatever the attacker knows of the algorithm
and of a person's true quasi-identifiers, the posterior that a given row of the group is that
person is at most 1/k (the statistical-anonymity seed, §8: "asking the other users to randomly
redact their value for that feature as well").

Greedy in rounds. In each round every option is scored: an option is a set S of key columns and
a *slice* (the rows equal on the other keys) holding rows in groups smaller than k ("deficient");
taking it suppresses S in every deficient row of the slice, so they join the group ``(slice, * on
S)``, and when that group still has fewer than k rows, tops it up with decoys: rows of the same
slice drawn at random from groups larger than k (never more than a group's surplus over k), S
suppressed in them too. Its cost is the (importance-weighted) cells it suppresses per deficient
row it protects; the cheapest options of the round are taken first, those touching a group an
earlier one changed are left for the next round. Groups never fall below k, so every round
protects rows and none loses protection.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from sdckit._scale._jit import njit

__all__ = ["DecoyPlan", "DecoyResult", "decoy_plan", "decoy_suppress", "exact_group_sizes", "suppressed_value_posterior"]

MAX_ALL_SUBSETS = 10
"""Up to this many keys every subset of columns is an option; beyond, subsets of up to 3 keys and all keys."""

ROUND_SLACK = 1.25
"""A round takes the options costing at most this factor times the round's cheapest (cheapest first)."""

_HASH_SEED = 0x5DC4
"""Seed of the fixed 64-bit hash of the rows (not a secret: it only names groups)."""


@dataclass(frozen=True)
class DecoyResult:
    """Cells suppressed: in protected rows (``suppressed``) and in decoys (``decoys``), each (n, p)."""

    suppressed: NDArray[np.bool_]
    """(n, p): the cells missing in the release that were present in the input."""
    decoys: NDArray[np.bool_]
    rounds: int
    decoy_cells: int = 0
    """Cells suppressed in decoys (rows of groups larger than k that joined a smaller group)."""


def _hash_tables(codes: NDArray[np.int32]) -> list[NDArray[np.uint64]]:
    rng = np.random.default_rng(_HASH_SEED)
    return [
        rng.integers(0, 2**63, size=int(codes[:, j].max(initial=-1)) + 2, dtype=np.uint64) * np.uint64(2) + np.uint64(1)
        for j in range(codes.shape[1])
    ]


def _row_hash(cur: NDArray[np.int32], tables: list[NDArray[np.uint64]]) -> NDArray[np.uint64]:
    out = np.zeros(cur.shape[0], dtype=np.uint64)
    for j, t in enumerate(tables):
        out += t[cur[:, j] + 1]
    return out


def exact_group_sizes(codes: NDArray[np.int32]) -> NDArray[np.int64]:
    """Per row, the rows identical to it (itself included), a missing cell (-1) a value of its own."""
    if codes.shape[0] == 0:
        return np.zeros(0, dtype=np.int64)
    _, inverse, counts = np.unique(codes, axis=0, return_inverse=True, return_counts=True)
    return counts[inverse.ravel()].astype(np.int64)


def _subsets(p: int) -> list[tuple[int, ...]]:
    if p <= MAX_ALL_SUBSETS:
        return [s for r in range(1, p + 1) for s in itertools.combinations(range(p), r)]
    small = [s for r in range(1, 4) for s in itertools.combinations(range(p), r)]
    return [*small, tuple(range(p))]


def decoy_suppress(
    codes: NDArray[np.int32], k: int, weight: NDArray[np.float64], rng: np.random.Generator
) -> DecoyResult:
    """Suppress cells (and decoys) until every row is identical to >= k - 1 others (see the module).

    ``codes`` (n, p): integer codes, -1 for a cell already missing (a value like any other);
    ``weight[j]``: the cost of suppressing one cell of key j; ``rng``: the decoys' draw. Works on
    the distinct rows with their counts (:func:`decoy_plan`); the rows of one distinct row are
    identical, so which of them goes where is drawn at random at the end.
    """
    n, p = codes.shape
    if n == 0 or p == 0 or k <= 1:
        return DecoyResult(np.zeros((n, p), bool), np.zeros((n, p), bool), 0)
    origins, inverse = np.unique(codes, axis=0, return_inverse=True)
    inverse = inverse.ravel()
    plan = decoy_plan(origins, np.bincount(inverse, minlength=origins.shape[0]), k, weight, rng)
    result = plan.state.rows(codes, inverse)
    return DecoyResult(result.suppressed, result.decoys, plan.rounds, result.decoy_cells)


@dataclass(frozen=True)
class DecoyPlan:
    """The release of a table of distinct rows: for each distinct input row, where its rows go."""

    state: _State
    rounds: int

    @property
    def targets(self) -> dict[int, list[tuple[tuple[int, ...], int]]]:
        """Per distinct input row (its index in ``origins``), the released rows ``(codes, m)`` its
        rows become, m of them each; the m add up to its count."""
        out: dict[int, list[tuple[tuple[int, ...], int]]] = {}
        for t, comp in self.state.comp.items():
            for origin, m in comp.items():
                out.setdefault(origin, []).append((t, m))
        return out

    @property
    def decoy_cells(self) -> int:
        return self.state.decoy_cells


def decoy_plan(
    origins: NDArray[np.int32], counts: NDArray[np.int64], k: int, weight: NDArray[np.float64], rng: np.random.Generator
) -> DecoyPlan:
    """The decoy rounds on the distinct rows ``origins`` (sorted, as :func:`numpy.unique` gives them)
    and their ``counts``: every released group ends with >= k identical rows.

    Needs only the table of distinct rows and counts (one row per group), so it runs the same on
    a group table counted where the rows live (a distributed group-by) as on a table in memory.
    """
    state = _State(origins, np.asarray(counts, dtype=np.int64), k, rng)
    tables = _hash_tables(origins)
    subsets = _subsets(origins.shape[1])
    rounds = 0
    while True:
        pats, cnts = state.arrays()
        deficient = cnts < k
        if not deficient.any():
            break
        rounds += 1
        if not _round(state, pats, cnts, deficient, weight, subsets, tables):
            state.fallback(pats, cnts, deficient)
    state.restore(weight)
    return DecoyPlan(state, rounds)


class _State:
    """The release as distinct rows: their counts and, per distinct row, how many of each original it holds."""

    def __init__(self, origins: NDArray[np.int32], counts: NDArray[np.int64], k: int, rng: np.random.Generator) -> None:
        self.origins = origins
        self.k = k
        self.rng = rng
        self.count: dict[tuple[int, ...], int] = {}
        self.comp: dict[tuple[int, ...], dict[int, int]] = {}
        self.decoy_cells = 0
        for o in range(origins.shape[0]):
            t = tuple(int(v) for v in origins[o])
            self.count[t] = int(counts[o])
            self.comp[t] = {o: int(counts[o])}

    def arrays(self) -> tuple[NDArray[np.int32], NDArray[np.int64]]:
        keys = list(self.count)
        return np.asarray(keys, dtype=np.int32).reshape(len(keys), -1), np.asarray(
            [self.count[t] for t in keys], dtype=np.int64
        )

    def move(self, src: tuple[int, ...], dst: tuple[int, ...], origin: int, m: int = 1) -> None:
        for t, d in ((src, -m), (dst, m)):
            self.count[t] = self.count.get(t, 0) + d
            comp = self.comp.setdefault(t, {})
            comp[origin] = comp.get(origin, 0) + d
            if comp[origin] == 0:
                del comp[origin]
            if self.count[t] == 0:
                del self.count[t], self.comp[t]

    def move_group(self, src: tuple[int, ...], dst: tuple[int, ...]) -> None:
        for origin, m in list(self.comp[src].items()):
            self.move(src, dst, origin, m)

    def draw_row(self, group: tuple[int, ...]) -> int:
        """An original of one row of ``group``, drawn in proportion to the rows it holds."""
        items = list(self.comp[group].items())
        w = np.asarray([m for _, m in items], dtype=np.float64)
        return items[int(self.rng.choice(len(items), p=w / w.sum()))][0]

    def fallback(self, pats: NDArray[np.int32], counts: NDArray[np.int64], deficient: NDArray[np.bool_]) -> None:
        """No option fits: every key of the deficient rows suppressed, topped up to k with rows of other groups."""
        star = tuple([-1] * pats.shape[1])
        for i in np.flatnonzero(deficient):
            t = tuple(int(v) for v in pats[i])
            if t != star:
                self.move_group(t, star)
        while 0 < self.count.get(star, 0) < self.k:
            surplus = [t for t, c in self.count.items() if t != star and c > self.k]
            if surplus:
                w = np.asarray([self.count[t] for t in surplus], dtype=np.float64)
                g = surplus[int(self.rng.choice(len(surplus), p=w / w.sum()))]
                self.decoy_cells += sum(v >= 0 for v in g)
                self.move(g, star, self.draw_row(g))
            else:  # every other group has exactly k rows: the smallest joins whole
                g = min((t for t in self.count if t != star), key=lambda t: self.count[t])
                self.decoy_cells += sum(v >= 0 for v in g) * self.count[g]
                self.move_group(g, star)

    def restore(self, weight: NDArray[np.float64]) -> None:
        """Give back cells: a row of a group larger than k moves to an existing group that shows more of its
        true values (every group stays >= k; the one it joins already has >= k rows)."""
        for t in sorted(self.count, key=lambda g: -sum(v < 0 for v in g)):
            stars = [j for j, v in enumerate(t) if v < 0]
            if not stars or t not in self.count:
                continue
            for origin in list(self.comp.get(t, {})):
                true = self.origins[origin]
                back = [j for j in stars if true[j] >= 0]
                options = sorted(
                    (r for size in range(len(back), 0, -1) for r in itertools.combinations(back, size)),
                    key=lambda r: -float(sum(weight[j] for j in r)),
                )
                for r in options:
                    if self.count.get(t, 0) <= self.k or origin not in self.comp.get(t, {}):
                        break
                    q = list(t)
                    for j in r:
                        q[j] = int(true[j])
                    dst = tuple(q)
                    while dst in self.count and self.count[t] > self.k and self.comp[t].get(origin, 0) > 0:
                        self.move(t, dst, origin)

    def rows(self, codes: NDArray[np.int32], inverse: NDArray[np.int64]) -> DecoyResult:
        """Each original's rows, in random order, sent to the released rows that hold them."""
        released = codes.copy()
        by_origin: dict[int, list[tuple[tuple[int, ...], int]]] = {}
        for t, comp in self.comp.items():
            for origin, m in comp.items():
                by_origin.setdefault(origin, []).append((t, m))
        order = np.argsort(inverse, kind="stable")
        bounds = np.searchsorted(inverse[order], np.arange(self.origins.shape[0] + 1))
        for origin, targets in by_origin.items():
            rows = order[bounds[origin] : bounds[origin + 1]]
            rows = rows[self.rng.permutation(rows.size)]
            at = 0
            for t, m in targets:
                released[rows[at : at + m]] = np.asarray(t, dtype=np.int32)
                at += m
        hidden = (released < 0) & (codes >= 0)
        return DecoyResult(hidden, np.zeros_like(hidden), 0, self.decoy_cells)


@njit(cache=True, nogil=True)
def _score_slices(
    pats: NDArray[np.int32],
    h: NDArray[np.uint64],
    counts: NDArray[np.int64],
    deficient: NDArray[np.bool_],
    subset: NDArray[np.int64],
    table: NDArray[np.uint64],
    offsets: NDArray[np.int64],
    weight: NDArray[np.float64],
    k: int,
) -> tuple[NDArray[np.uint64], NDArray[np.float64], NDArray[np.uint64], NDArray[np.int64]]:  # pragma: no cover
    """Per slice (distinct rows of one target) with deficient rows: its target and cost per protected row.

    Cost = (cells of the deficient rows + need * mean cells of a decoy) / deficient rows, need = k -
    deficient rows - rows already at the target; a slice whose donors' surplus over k is short of
    need is left out. Also returns every distinct row's target and the order that sorts it.
    """
    g = pats.shape[0]
    target = h.copy()
    present = np.zeros(g, dtype=np.float64)
    at_target = np.ones(g, dtype=np.bool_)
    for r in range(g):
        for j in subset:
            v = pats[r, j]
            target[r] = target[r] - table[offsets[j] + v + 1] + table[offsets[j]]
            if v >= 0:
                present[r] += weight[j]
                at_target[r] = False
    order = np.argsort(target)
    out_t = np.empty(g, dtype=np.uint64)
    out_s = np.empty(g, dtype=np.float64)
    m = 0
    i = 0
    while i < g:
        t = target[order[i]]
        j = i
        nd = 0.0
        cd = 0.0
        ex = 0.0
        cap = 0.0
        dc = 0.0
        while j < g and target[order[j]] == t:
            r = order[j]
            c = float(counts[r])
            if deficient[r]:
                nd += c
                cd += c * present[r]
            elif at_target[r]:
                ex += c
            elif c > k:
                cap += c - k
                dc += (c - k) * present[r]
            j += 1
        if nd > 0:
            need = max(0.0, k - nd - ex)
            if need <= cap + 1e-9:
                mean_cost = dc / cap if cap > 0 else 0.0
                out_t[m] = t
                out_s[m] = (cd + need * mean_cost) / nd
                m += 1
        i = j
    return out_t[:m], out_s[:m], target, order


def _round(
    state: _State,
    pats: NDArray[np.int32],
    counts: NDArray[np.int64],
    deficient: NDArray[np.bool_],
    weight: NDArray[np.float64],
    subsets: list[tuple[int, ...]],
    tables: list[NDArray[np.uint64]],
) -> int:
    """Score every option, take the cheapest ones that do not collide; returns how many were taken."""
    k, rng = state.k, state.rng
    h = _row_hash(pats, tables)
    # per subset only the deficient slices' targets and costs: a full (target, order) pair per subset
    # would hold 2 x subsets x groups integers (on 10^7 rows, 42,000 groups x 255 subsets: 170 MB);
    # the few subsets a pick uses are scored again (the same deterministic figures)
    scored: list[tuple[NDArray[np.uint64], NDArray[np.float64]]] = []
    full: dict[int, tuple[NDArray[np.uint64], NDArray[np.int64]]] = {}
    best = np.inf
    table = np.concatenate(tables)
    offsets = np.cumsum([0] + [t.size for t in tables[:-1]]).astype(np.int64)
    for s in subsets:
        got = _score_slices(pats, h, counts, deficient, np.asarray(s, dtype=np.int64), table, offsets, weight, k)
        scored.append((got[0], got[1]))
        if got[1].size:
            best = min(best, float(got[1].min()))
    if not np.isfinite(best):
        return 0
    limit = best * ROUND_SLACK + 1e-9
    kept = [score <= limit for _, score in scored]
    pick_score = np.concatenate([score[m] for (_, score), m in zip(scored, kept, strict=True)])
    pick_subset = np.concatenate([np.full(int(m.sum()), si, dtype=np.int64) for si, m in enumerate(kept)])
    pick_slice = np.concatenate([slices[m] for (slices, _), m in zip(scored, kept, strict=True)])
    # cheapest first; among equal costs, an order drawn at random (no row is favoured by its position)
    tie = rng.permutation(pick_score.size)
    order = np.lexsort((tie, pick_score))
    tuples = [tuple(r) for r in pats.tolist()]
    locked: set[tuple[int, ...]] = set()
    taken = 0
    for i in order.tolist():
        si, t = int(pick_subset[i]), int(pick_slice[i])
        s = subsets[si]
        if si not in full:
            got = _score_slices(pats, h, counts, deficient, np.asarray(s, dtype=np.int64), table, offsets, weight, k)
            full[si] = (got[2], got[3])
        target, idx = full[si]
        lo = _first(target, idx, np.uint64(t))
        hi = lo
        while hi < idx.size and target[idx[hi]] == t:
            hi += 1
        slice_rows = idx[lo:hi].tolist()
        groups = [tuples[r] for r in slice_rows]
        dst_list = list(groups[0])
        for j in s:
            dst_list[j] = -1
        dst = tuple(dst_list)
        d_groups = [g for g, r in zip(groups, slice_rows, strict=True) if deficient[r]]
        if dst in locked or any(g in locked for g in d_groups):
            continue
        n_def = sum(state.count[g] for g in d_groups)
        existing = state.count.get(dst, 0) if dst not in d_groups else 0
        need = max(0, k - n_def - existing)
        donors = [
            g for g, r in zip(groups, slice_rows, strict=True)
            if not deficient[r] and g != dst and g in state.count and state.count[g] > k
        ]
        if need > sum(state.count[g] - k for g in donors):
            continue
        for g in d_groups:
            if g != dst:
                state.move_group(g, dst)
        for _ in range(need):  # decoys: rows drawn at random among the donor groups' rows
            live = [g for g in donors if state.count[g] > k]
            w = np.asarray([state.count[g] for g in live], dtype=np.float64)
            g = live[int(rng.choice(len(live), p=w / w.sum()))]
            state.decoy_cells += sum(1 for j in s if g[j] >= 0)
            state.move(g, dst, state.draw_row(g))
        locked.add(dst)
        locked.update(d_groups)
        taken += 1
    return taken


def _first(target: NDArray[np.uint64], order: NDArray[np.int64], t: np.uint64) -> int:
    """Position in ``order`` (which sorts ``target``) of the first row whose target is ``t``."""
    lo, hi = 0, int(order.size)
    while lo < hi:
        mid = (lo + hi) // 2
        if target[order[mid]] < t:
            lo = mid + 1
        else:
            hi = mid
    return lo


def suppressed_value_posterior(
    original: NDArray[np.int32], released: NDArray[np.int32]
) -> dict[str, float | int]:
    """How far the composition of each released group gives its suppressed values away: an observation
    of this release, **not a bound**.

    An attacker who knows every original row (a public original) and the algorithm knows, for each
    released group with suppressed cells, the multiset of its members' true values on the
    suppressed keys, but not which member holds which (the rows are exchangeable on the keys). The
    posterior that a member's hidden values are v is then the share of v among the group's members;
    guessing the most common one is right with probability max_v share(v). Returns, over the rows
    with a suppressed cell, the mean of that probability (``mean``) and its largest value (``max``).

    Nothing bounds ``max`` below 1: a group of five rows of which four hold the same true value gives
    4/5 at k = 3, and a group whose members all hold it (a value already missing in the input, or
    decoys drawn from one group) gives 1. It is the keys alone; the other released columns can tell
    the members apart, which :func:`sdckit.risk._measures._posterior.row_posterior` measures.
    """
    hidden = (released < 0) & (original >= 0)
    rows = np.flatnonzero(hidden.any(axis=1))
    if rows.size == 0:
        return {"rows": 0, "mean": 0.0, "max": 0.0}
    rel = released[rows]
    orig = np.where(released[rows] < 0, original[rows], -1)  # true values of the hidden cells only
    _, g_inv = np.unique(rel, axis=0, return_inverse=True)
    g_inv = g_inv.ravel()
    both = np.concatenate([g_inv[:, None], orig], axis=1)
    _, v_inv, v_cnt = np.unique(both, axis=0, return_inverse=True, return_counts=True)
    g_size = np.bincount(g_inv)
    share = v_cnt[v_inv.ravel()] / g_size[g_inv]
    # per group, the most common hidden value's share
    best = np.zeros(g_size.size)
    np.maximum.at(best, g_inv, share)
    return {"rows": int(rows.size), "mean": float(best[g_inv].mean()), "max": float(best.max())}
