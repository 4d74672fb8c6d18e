"""Plain numpy MDAV: the readable reference the compiled kernel is tested against.

It follows the pseudo-code of the microaggregation notes §1 line by line, keeping the remaining
records as a sorted index array (so ``argmax`` and stable ``argsort`` give the lowest row index
among ties). The centroid comes from running column sums (a sequential sum over the rows, then the
removed rows subtracted in ascending row order), exactly as the kernel computes it, so both produce
the same groups bit for bit. Memory O(n p); cost O(n^2 p / k) with a large constant.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray


def _dist(z: NDArray[np.float64], rows: NDArray[np.int64], point: NDArray[np.float64]) -> NDArray[np.float64]:
    d = np.zeros(rows.shape[0])
    for j in range(z.shape[1]):  # sequential in j, like the kernel
        d += (z[rows, j] - point[j]) ** 2
    return d


def _k_nearest(d: NDArray[np.float64], rows: NDArray[np.int64], exclude: int, k: int) -> NDArray[np.int64]:
    keep = rows != exclude
    cand, dc = rows[keep], d[keep]
    return np.asarray(cand[np.argsort(dc, kind="stable")[: k - 1]], dtype=np.int64)


def mdav_reference(z: NDArray[np.float64], k: int) -> NDArray[np.int64]:
    """MDAV group ids in creation order for the rows of ``z`` (already standardised)."""
    n = z.shape[0]
    groups = np.full(n, -1, dtype=np.int64)
    alive = np.ones(n, dtype=bool)
    sums = np.cumsum(z, axis=0)[-1].copy() if n else np.zeros(z.shape[1])
    g = 0

    def take(members: NDArray[np.int64]) -> None:
        nonlocal g
        members = np.sort(members)
        groups[members] = g
        alive[members] = False
        for r in members:
            sums[:] -= z[r]
        g += 1

    while alive.sum() >= 3 * k:
        rows = np.flatnonzero(alive)
        cen = sums / rows.shape[0]
        xr = int(rows[np.argmax(_dist(z, rows, cen))])
        dr = _dist(z, rows, z[xr])
        xs = int(rows[np.argmax(dr)])
        gr = np.append(_k_nearest(dr, rows, xr, k), xr)
        if xs in gr:  # degenerate ties: farthest from xr among the records left
            rest = ~np.isin(rows, gr)
            xs = int(rows[rest][np.argmax(dr[rest])])
        take(gr)
        rows = np.flatnonzero(alive)
        ds = _dist(z, rows, z[xs])
        take(np.append(_k_nearest(ds, rows, xs, k), xs))
    m = int(alive.sum())
    if m >= 2 * k:
        rows = np.flatnonzero(alive)
        cen = sums / m
        xr = int(rows[np.argmax(_dist(z, rows, cen))])
        dr = _dist(z, rows, z[xr])
        take(np.append(_k_nearest(dr, rows, xr, k), xr))
    if alive.any():
        take(np.flatnonzero(alive))
    return groups
