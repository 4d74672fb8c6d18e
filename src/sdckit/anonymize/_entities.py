"""Local suppression over entities: every released group of identical key values holds k distinct entities.

A household (or a firm with twelve monthly rows) is the unit an attacker recognises: a group of k
identical rows that are all one utility's months protects no one. :func:`entity_suppress` takes the
row-level release of the decoy algorithm (:func:`sdckit.anonymize._decoys.decoy_suppress`) and adds
suppressions until

* every group of identical released rows (a missing cell a value of its own) holds rows of at
  least k distinct entities, and
* a household-level key column (one value per household) is missing for every member of a
  household or for none.

Greedy and monotone: each pass only adds missing cells, so it ends (at worst every key of every
row missing: one group of all entities). A pass takes the group with the fewest entities and
suppresses in all its rows the key that brings it, merged with the group it joins, to k entities
(the cheapest such key; else the key that gathers the most entities), then tops the merged group
up with *decoys*: entities drawn at random (``rng``) from groups of the same slice holding more
than k entities, all their rows of that group suppressed on the same key, never taking a group
below k. Then every shared (household-level) cell suppressed for one member is suppressed for all.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from sdckit.errors import ParameterError

__all__ = ["EntitySuppression", "entity_counts", "entity_suppress"]


def _groups(cur: NDArray[np.int32]) -> NDArray[np.int64]:
    _, inverse = np.unique(cur, axis=0, return_inverse=True)
    return np.asarray(inverse.ravel(), dtype=np.int64)


class _Keys:
    """Exact row keys: mixed-radix integers of the codes (-1 shifted to 0), one int per row."""

    def __init__(self, codes: NDArray[np.int32]) -> None:
        radix = (codes.max(axis=0, initial=-1).astype(np.int64) + 2)
        total = float(np.prod(radix.astype(np.float64)))
        if total >= 2.0**62:
            self.weights: NDArray[np.int64] | None = None
        else:
            self.weights = np.concatenate([[1], np.cumprod(radix[:-1])]).astype(np.int64)

    def of(self, cur: NDArray[np.int32]) -> NDArray[np.int64]:
        if self.weights is None:
            return _groups(cur)
        return np.asarray((cur.astype(np.int64) + 1) @ self.weights, dtype=np.int64)


def entity_counts(cur: NDArray[np.int32], entities: NDArray[np.int64]) -> NDArray[np.int64]:
    """Per row, the distinct entities among the rows identical to it (-1 a value of its own)."""
    if cur.shape[0] == 0:
        return np.zeros(0, dtype=np.int64)
    gid = _groups(cur)
    per_group = _per_group(gid, entities)
    return per_group[gid]


def _per_group(gid: NDArray[np.int64], entities: NDArray[np.int64]) -> NDArray[np.int64]:
    m = int(entities.max()) + 1 if entities.size else 1
    pairs = np.unique(gid * m + entities)
    return np.bincount(pairs // m, minlength=int(gid.max()) + 1 if gid.size else 0).astype(np.int64)


class EntitySuppression:
    """The outcome: the cells missing in the release (``suppressed``, (n, p)) and the counts."""

    def __init__(self, suppressed: NDArray[np.bool_], passes: int, decoy_entities: int, shared_cells: int) -> None:
        self.suppressed = suppressed
        self.passes = passes
        self.decoy_entities = decoy_entities
        """Entities whose rows were suppressed as decoys."""
        self.shared_cells = shared_cells
        """Cells suppressed to keep a household-level column the same for every member."""


def _propagate(cur: NDArray[np.int32], original: NDArray[np.int32], entities: NDArray[np.int64],
               shared: NDArray[np.bool_]) -> int:
    """Suppress a shared column for every member of an entity where one member lost it; cells added."""
    added = 0
    m = int(entities.max()) + 1
    for j in np.flatnonzero(shared):
        lost = (cur[:, j] < 0) & (original[:, j] >= 0)
        if not lost.any():
            continue
        hit = np.zeros(m, dtype=bool)
        hit[entities[lost]] = True
        rows = hit[entities] & (cur[:, j] >= 0)
        added += int(rows.sum())
        cur[rows, j] = -1
    return added


def entity_suppress(
    codes: NDArray[np.int32],
    suppressed: NDArray[np.bool_],
    entities: NDArray[np.int64],
    k: int,
    weight: NDArray[np.float64],
    rng: np.random.Generator,
    shared: NDArray[np.bool_] | None = None,
) -> EntitySuppression:
    """Add suppressions to ``suppressed`` until every group holds >= k entities (see the module).

    ``codes`` (n, p): integer codes, -1 for a cell missing in the input; ``suppressed`` (n, p): the
    cells already suppressed; ``entities`` (n,): entity codes 0..m-1; ``weight[j]``: the cost of a
    cell of key j; ``shared[j]``: key j is household-level (one value per entity).
    """
    n, p = codes.shape
    shared = np.zeros(p, dtype=bool) if shared is None else np.asarray(shared, dtype=bool)
    m = int(entities.max()) + 1 if n else 0
    if n and np.unique(entities).size < k:
        raise ParameterError(
            f"k={k} is larger than the {np.unique(entities).size} households/entities in the data; no release holds "
            f"{k} distinct entities in a group. Lower k."
        )
    cur = np.where(suppressed, -1, codes).astype(np.int32)
    if n == 0 or p == 0 or k <= 1:
        return EntitySuppression((cur < 0) & (codes >= 0), 0, 0, 0)
    shared_cells = _propagate(cur, codes, entities, shared)
    passes = decoys = 0
    keys = _Keys(codes)
    while True:
        row_keys = keys.of(cur)
        _, gid = np.unique(row_keys, return_inverse=True)
        gid = gid.ravel().astype(np.int64)
        count = _per_group(gid, entities)
        if count.min() >= k:
            break
        passes += 1
        g = int(np.argmin(count))
        rows = np.flatnonzero(gid == g)
        pattern = cur[rows[0]].copy()
        present = np.flatnonzero(pattern >= 0).tolist()
        col = -1
        if present:
            best: tuple[float, float, int] | None = None
            for j in present:
                target = pattern.copy()
                target[j] = -1
                joined = row_keys == int((target.astype(np.int64) + 1) @ keys.weights) if keys.weights is not None \
                    else np.all(cur == target, axis=1)
                got = np.unique(np.concatenate([entities[rows], entities[joined]])).size
                score = (0.0 if got >= k else 1.0, -got if got < k else float(weight[j]), int(j))
                if best is None or score < best:
                    best = score
            assert best is not None
            col = best[2]
            cur[rows, col] = -1
            target = cur[rows[0]].copy()
            slice_rows = np.all((cur == target) | (np.arange(p) == col), axis=1) & (cur[:, col] >= 0)
        else:
            target = pattern
            slice_rows = np.any(cur >= 0, axis=1)  # every row that still shows a value
        added = _top_up(cur, entities, gid, count, target, slice_rows, col, k, rng, m)
        if not added and not present:
            # the all-missing group is short and no group can spare an entity: blank whole entities,
            # drawn at random, until it holds k (always possible: there are at least k entities)
            inside = np.all(cur < 0, axis=1)
            have = set(np.unique(entities[inside]).tolist())
            for e in rng.permutation(np.setdiff1d(np.unique(entities), list(have))):
                if len(have) >= k:
                    break
                cur[entities == e, :] = -1
                have.add(int(e))
                added += 1
        decoys += added
        shared_cells += _propagate(cur, codes, entities, shared)
    final = (cur < 0) & (codes >= 0)
    return EntitySuppression(final, passes, decoys, shared_cells)


def _top_up(
    cur: NDArray[np.int32], entities: NDArray[np.int64], gid: NDArray[np.int64], count: NDArray[np.int64],
    target: NDArray[np.int32], slice_rows: NDArray[np.bool_], j: int, k: int, rng: np.random.Generator, m: int,
) -> int:
    """Decoys: bring the group with pattern ``target`` to k entities with entities drawn at random from
    the groups of ``slice_rows`` holding more than k entities (all their rows of that group moved)."""
    inside = np.asarray(np.all(cur == target, axis=1))
    have = set(np.unique(entities[inside]).tolist())
    if len(have) >= k:
        return 0
    spare = count[gid] > k
    cand = slice_rows & spare & ~inside
    # candidate (group, entity) pairs, one draw each, in random order
    pairs = np.unique(np.stack([gid[cand], entities[cand]], axis=1), axis=0) if cand.any() else np.zeros((0, 2), np.int64)
    order = rng.permutation(pairs.shape[0])
    given: dict[int, int] = {}
    added = 0
    for idx in order:
        g, e = int(pairs[idx, 0]), int(pairs[idx, 1])
        if e in have or count[g] - given.get(g, 0) <= k:
            continue
        moved = (gid == g) & (entities == e)
        if j >= 0:
            cur[moved, j] = -1
        else:
            cur[moved, :] = -1
        given[g] = given.get(g, 0) + 1
        have.add(e)
        added += 1
        if len(have) >= k:
            break
    return added
