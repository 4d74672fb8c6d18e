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


def distinct_rows(codes: NDArray[np.int32]) -> tuple[NDArray[np.int32], NDArray[np.int64], NDArray[np.int64]]:
    """The distinct rows of ``codes`` (sorted as :func:`numpy.unique` with ``axis=0`` sorts them), each
    row's index among them, and their counts; -1 (missing) a value of its own.

    The rows are read as numbers in mixed radix (column j's digit ``code + 1``, base ``max + 2``), so
    one 1-D sort replaces numpy's sort of whole rows (ten times slower on 10^6 rows); when the
    number would not fit in 63 bits, numpy's ``unique(axis=0)``.
    """
    n, p = codes.shape
    if n == 0:
        return codes[:0].copy(), np.zeros(0, np.int64), np.zeros(0, np.int64)
    base = codes.max(axis=0, initial=-1).astype(np.int64) + 2
    if float(np.sum(np.log2(base.astype(np.float64)))) > 62:
        origins, inverse, counts = np.unique(codes, axis=0, return_inverse=True, return_counts=True)
        return origins.astype(np.int32), inverse.ravel().astype(np.int64), counts.astype(np.int64)
    key = np.zeros(n, dtype=np.int64)
    for j in range(p):
        key = key * base[j] + (codes[:, j].astype(np.int64) + 1)
    uniq, inverse, counts = np.unique(key, return_inverse=True, return_counts=True)
    origins = np.empty((uniq.size, p), dtype=np.int32)
    rest = uniq.copy()
    for j in range(p - 1, -1, -1):
        origins[:, j] = rest % base[j] - 1
        rest //= base[j]
    return origins, inverse.ravel().astype(np.int64), counts.astype(np.int64)


def exact_group_sizes(codes: NDArray[np.int32]) -> NDArray[np.int64]:
    """Per row, the rows identical to it (itself included), a missing cell (-1) a value of its own."""
    if codes.shape[0] == 0:
        return np.zeros(0, dtype=np.int64)
    _, inverse, counts = distinct_rows(codes)
    return counts[inverse]


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
    origins, inverse, counts = distinct_rows(codes)
    plan = decoy_plan(origins, counts, k, weight, rng)
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
        self.keys: list[tuple[int, ...]] = []
        for o in range(origins.shape[0]):
            t = tuple(int(v) for v in origins[o])
            self.count[t] = int(counts[o])
            self.comp[t] = {o: int(counts[o])}

    def arrays(self) -> tuple[NDArray[np.int32], NDArray[np.int64]]:
        keys = list(self.count)
        self.keys = keys  # the rows of the arrays, as tuples (the round reads them)
        return np.asarray(keys, dtype=np.int32).reshape(len(keys), -1), np.fromiter(
            self.count.values(), dtype=np.int64, count=len(keys)
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
        entry_origin: list[int] = []
        entry_m: list[int] = []
        entry_codes: list[tuple[int, ...]] = []
        for t, comp in self.comp.items():
            for origin, m in comp.items():
                entry_origin.append(origin)
                entry_m.append(m)
                entry_codes.append(t)
        by_origin = np.argsort(np.asarray(entry_origin, dtype=np.int64), kind="stable")
        targets = np.asarray(entry_codes, dtype=np.int32).reshape(len(entry_codes), -1)
        # every original's rows in random order, originals one after the other; the entries of one
        # original (sorted by origin) take its rows in turn, m each: both sides list the same counts
        perm = self.rng.permutation(inverse.size)
        order = perm[np.argsort(inverse[perm], kind="stable")]
        entry_of_row = np.repeat(by_origin, np.asarray(entry_m, dtype=np.int64)[by_origin])
        released = np.empty_like(codes)
        released[order] = targets[entry_of_row]
        hidden = (released < 0) & (codes >= 0)
        return DecoyResult(hidden, np.zeros_like(hidden), 0, self.decoy_cells)


@njit(cache=True, nogil=True)
def _targets(
    pats: NDArray[np.int32],
    h: NDArray[np.uint64],
    subset: NDArray[np.int64],
    table: NDArray[np.uint64],
    offsets: NDArray[np.int64],
    weight: NDArray[np.float64],
    target: NDArray[np.uint64],
    present: NDArray[np.float64],
    at_target: NDArray[np.bool_],
) -> None:  # pragma: no cover - compiled
    """Per distinct row, the hash of its row with ``subset`` suppressed, the weight of the cells that
    suppressing costs, and whether it costs nothing (every cell of ``subset`` already missing)."""
    for r in range(pats.shape[0]):
        t = h[r]
        w = 0.0
        free = True
        for j in subset:
            v = pats[r, j]
            t = t - table[offsets[j] + v + 1] + table[offsets[j]]
            if v >= 0:
                w += weight[j]
                free = False
        target[r] = t
        present[r] = w
        at_target[r] = free


@njit(cache=True, nogil=True)
def _slot(keys: NDArray[np.uint64], used: NDArray[np.int64], t: np.uint64) -> int:  # pragma: no cover - compiled
    """Open addressing (linear probing) in a table of a power of two slots: the slot of ``t`` or the
    empty slot where it goes. The keys are already uniform 64-bit hashes, so their remainder indexes."""
    n = keys.size
    i = np.int64(t % np.uint64(n))
    while used[i] >= 0 and keys[i] != t:
        i += 1
        if i == n:
            i = np.int64(0)
    return int(i)


@njit(cache=True, nogil=True)
def _score_all(
    pats: NDArray[np.int32],
    h: NDArray[np.uint64],
    counts: NDArray[np.int64],
    deficient: NDArray[np.bool_],
    sub_cols: NDArray[np.int64],
    sub_ptr: NDArray[np.int64],
    table: NDArray[np.uint64],
    offsets: NDArray[np.int64],
    weight: NDArray[np.float64],
    k: int,
    slack: float,
) -> tuple[NDArray[np.int64], NDArray[np.uint64], NDArray[np.float64]]:  # pragma: no cover - compiled
    """Every option of a round in one pass over the key subsets: (subset, slice target, cost per
    protected row) of the options costing at most ``slack`` times the cheapest.

    Per subset, the deficient rows' targets go into a hash table (one slot per slice), then every
    other distinct row adds to its slice if it has one: O(g) per subset, no sort. Cost = (cells of
    the deficient rows + need * mean cells of a decoy) / deficient rows, need = k - deficient rows -
    rows already at the target; a slice whose donors' surplus over k is short of need is left out.
    Options are kept while they cost at most ``slack`` times the cheapest seen so far, and filtered
    against the final cheapest at the end, so memory stays at the options of the round.
    """
    g = pats.shape[0]
    n_def = 0
    for r in range(g):
        if deficient[r]:
            n_def += 1
    size = 1
    while size < 2 * n_def + 2:
        size *= 2
    keys = np.zeros(size, dtype=np.uint64)
    used = np.full(size, -1, dtype=np.int64)
    slot_of = np.empty(n_def, dtype=np.int64)
    nd = np.zeros(n_def, dtype=np.float64)
    cd = np.zeros(n_def, dtype=np.float64)
    ex = np.zeros(n_def, dtype=np.float64)
    cap = np.zeros(n_def, dtype=np.float64)
    dc = np.zeros(n_def, dtype=np.float64)
    target = np.empty(g, dtype=np.uint64)
    present = np.empty(g, dtype=np.float64)
    at_target = np.empty(g, dtype=np.bool_)
    cap_out = 1024
    out_s = np.empty(cap_out, dtype=np.int64)
    out_t = np.empty(cap_out, dtype=np.uint64)
    out_c = np.empty(cap_out, dtype=np.float64)
    m = 0
    best = np.inf
    for si in range(sub_ptr.size - 1):
        subset = sub_cols[sub_ptr[si] : sub_ptr[si + 1]]
        _targets(pats, h, subset, table, offsets, weight, target, present, at_target)
        n_sl = 0
        for r in range(g):
            if deficient[r]:
                i = _slot(keys, used, target[r])
                if used[i] < 0:
                    keys[i] = target[r]
                    used[i] = n_sl
                    slot_of[n_sl] = i
                    nd[n_sl] = 0.0
                    cd[n_sl] = 0.0
                    ex[n_sl] = 0.0
                    cap[n_sl] = 0.0
                    dc[n_sl] = 0.0
                    n_sl += 1
                c = float(counts[r])
                nd[used[i]] += c
                cd[used[i]] += c * present[r]
        for r in range(g):
            if deficient[r]:
                continue
            i = _slot(keys, used, target[r])
            sl = used[i]
            if sl < 0:
                continue
            c = float(counts[r])
            if at_target[r]:
                ex[sl] += c
            elif c > k:
                cap[sl] += c - k
                dc[sl] += (c - k) * present[r]
        for sl in range(n_sl):
            need = max(0.0, k - nd[sl] - ex[sl])
            if need > cap[sl] + 1e-9:
                continue
            mean_cost = dc[sl] / cap[sl] if cap[sl] > 0 else 0.0
            score = (cd[sl] + need * mean_cost) / nd[sl]
            if score > best * slack + 1e-9:
                continue
            best = min(best, score)
            if m == cap_out:
                cap_out *= 2
                out_s = np.concatenate((out_s, np.empty(cap_out - m, dtype=np.int64)))
                out_t = np.concatenate((out_t, np.empty(cap_out - m, dtype=np.uint64)))
                out_c = np.concatenate((out_c, np.empty(cap_out - m, dtype=np.float64)))
            out_s[m] = si
            out_t[m] = keys[slot_of[sl]]
            out_c[m] = score
            m += 1
        for sl in range(n_sl):  # empty the table for the next subset (only the slots used)
            used[slot_of[sl]] = -1
    keep = out_c[:m] <= best * slack + 1e-9
    return out_s[:m][keep], out_t[:m][keep], out_c[:m][keep]


@njit(cache=True, nogil=True)
def _members(
    pats: NDArray[np.int32],
    h: NDArray[np.uint64],
    subset: NDArray[np.int64],
    table: NDArray[np.uint64],
    offsets: NDArray[np.int64],
    wanted: NDArray[np.uint64],
) -> NDArray[np.int64]:  # pragma: no cover - compiled
    """Per distinct row, the index in ``wanted`` of its slice target under ``subset`` (-1: none)."""
    g = pats.shape[0]
    size = 1
    while size < 2 * wanted.size + 2:
        size *= 2
    keys = np.zeros(size, dtype=np.uint64)
    used = np.full(size, -1, dtype=np.int64)
    for w in range(wanted.size):
        i = _slot(keys, used, wanted[w])
        keys[i] = wanted[w]
        used[i] = w
    target = np.empty(g, dtype=np.uint64)
    present = np.empty(g, dtype=np.float64)
    at_target = np.empty(g, dtype=np.bool_)
    _targets(pats, h, subset, table, offsets, np.zeros(pats.shape[1]), target, present, at_target)
    out = np.empty(g, dtype=np.int64)
    for r in range(g):
        out[r] = used[_slot(keys, used, target[r])]
    return out


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
    table = np.concatenate(tables)
    offsets = np.cumsum([0] + [t.size for t in tables[:-1]]).astype(np.int64)
    sub_cols = np.asarray([j for s in subsets for j in s], dtype=np.int64)
    sub_ptr = np.cumsum([0] + [len(s) for s in subsets]).astype(np.int64)
    pick_subset, pick_slice, pick_score = _score_all(
        pats, h, counts, deficient, sub_cols, sub_ptr, table, offsets, weight, k, ROUND_SLACK
    )
    if pick_score.size == 0:
        return 0
    # the rows of each picked slice, found in one pass per subset used
    slice_rows: dict[int, list[int]] = {}
    for si in np.unique(pick_subset).tolist():
        at = np.flatnonzero(pick_subset == si)
        member = _members(pats, h, np.asarray(subsets[si], dtype=np.int64), table, offsets, pick_slice[at])
        rows = np.flatnonzero(member >= 0)
        order = np.argsort(member[rows], kind="stable")
        rows, which = rows[order], member[rows][order]
        bounds = np.searchsorted(which, np.arange(at.size + 1)).tolist()
        listed = rows.tolist()
        for pos, i in enumerate(at.tolist()):
            slice_rows[i] = listed[bounds[pos] : bounds[pos + 1]]
    # cheapest first; among equal costs, an order drawn at random (no row is favoured by its position)
    tie = rng.permutation(pick_score.size)
    order = np.lexsort((tie, pick_score))
    tuples = state.keys
    locked: set[tuple[int, ...]] = set()
    taken = 0
    for i in order.tolist():
        s = subsets[int(pick_subset[i])]
        rows_i = slice_rows[i]
        groups = [tuples[r] for r in rows_i]
        dst_list = list(groups[0])
        for j in s:
            dst_list[j] = -1
        dst = tuple(dst_list)
        d_groups = [g for g, r in zip(groups, rows_i, strict=True) if deficient[r]]
        if dst in locked or any(g in locked for g in d_groups):
            continue
        n_def = sum(state.count[g] for g in d_groups)
        existing = state.count.get(dst, 0) if dst not in d_groups else 0
        need = max(0, k - n_def - existing)
        donors = [
            g for g, r in zip(groups, rows_i, strict=True)
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
