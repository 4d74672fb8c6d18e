"""MDAV over entities: every group holds records of at least k distinct entities.

A firm with twelve monthly rows is one unit to an attacker who knows it: a group of three of its
own months is not a group of three. :func:`entity_mdav_groups` is MDAV (Domingo-Ferrer &
Mateo-Sanz 2002) with one change: a group is the record r farthest from the centroid and the
records nearest to r *from k - 1 other entities, one record each*, so every group of k records
holds k distinct entities. Counted in distinct entities E of the records left: while E >= 3k, two
groups (r farthest from the centroid, s farthest from r); then one more group when E >= 2k; the
records left form the last group (they span at least k entities). A stratum with fewer than k
entities is refused.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from sdckit.errors import TooFewRowsError

__all__ = ["entity_mdav_groups"]


def _distinct(entities: NDArray[np.int64], left: NDArray[np.bool_]) -> int:
    return int(np.unique(entities[left]).size)


def _group_around(
    z: NDArray[np.float64], entities: NDArray[np.int64], left: NDArray[np.bool_], r: int, k: int
) -> NDArray[np.int64]:
    """r and the nearest records to r of k - 1 other entities (one each), among ``left``."""
    idx = np.flatnonzero(left)
    d = ((z[idx] - z[r]) ** 2).sum(axis=1)
    order = idx[np.argsort(d, kind="stable")]
    _, first = np.unique(entities[order], return_index=True)  # the nearest record of each entity
    nearest = order[np.sort(first)]
    others = nearest[entities[nearest] != entities[r]][: k - 1]
    return np.concatenate([[r], others]).astype(np.int64)


def entity_mdav_groups(z: NDArray[np.float64], entities: NDArray[np.int64], k: int) -> NDArray[np.int64]:
    """Group ids 0..g-1 of the rows of ``z`` (standardised, (n, p)); every group spans >= k entities."""
    n = z.shape[0]
    if _distinct(entities, np.ones(n, dtype=bool)) < k:
        raise TooFewRowsError(
            f"the rows hold {_distinct(entities, np.ones(n, dtype=bool))} distinct entities, fewer than k={k}: no group "
            "can hold k entities. Lower k, or merge strata."
        )
    groups = np.full(n, -1, dtype=np.int64)
    left = np.ones(n, dtype=bool)
    g = 0

    def take(rows: NDArray[np.int64]) -> None:
        nonlocal g
        groups[rows] = g
        left[rows] = False
        g += 1

    while _distinct(entities, left) >= 3 * k:
        idx = np.flatnonzero(left)
        centre = z[idx].mean(axis=0)
        r = int(idx[np.argmax(((z[idx] - centre) ** 2).sum(axis=1))])
        take(_group_around(z, entities, left, r, k))
        idx = np.flatnonzero(left)
        s = int(idx[np.argmax(((z[idx] - z[r]) ** 2).sum(axis=1))])
        take(_group_around(z, entities, left, s, k))
    if _distinct(entities, left) >= 2 * k:
        idx = np.flatnonzero(left)
        centre = z[idx].mean(axis=0)
        r = int(idx[np.argmax(((z[idx] - centre) ** 2).sum(axis=1))])
        take(_group_around(z, entities, left, r, k))
    if left.any():
        take(np.flatnonzero(left))
    return groups
