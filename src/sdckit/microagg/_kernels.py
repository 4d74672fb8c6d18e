"""Compiled MDAV kernel (numba); it releases the GIL so blocks can run in parallel threads.

The kernel produces exactly the groups of the plain reference in :mod:`sdckit.microagg._reference`:
both compute the centroid of the remaining records from the same running column sums, distances
as sequential sums over the columns of ``(z_ij - c_j)**2`` in float64, and break ties by the lowest
row index. What makes the kernel fast is layout and fusion, not a different algorithm:

* the remaining records are kept *compacted* in a column-major ``(p, m)`` array; a removed record
  is overwritten by the last remaining one (O(k p) per group, no O(n) compaction pass), and the
  original row index travels with it so that ties still go to the lowest row index;
* one distance array to ``xr`` gives both ``xs`` (the farthest) and ``xr``'s ``k - 1`` nearest;
  distance passes sweep four contiguous columns at a time (LLVM vectorises them) and the k-nearest
  scan rejects most records with a single comparison;
* the centroid is updated from running sums (subtract the removed rows) instead of a new pass;
* the farthest record from the centroid is searched among the few records the triangle
  inequality cannot rule out (distances to an earlier centroid are kept), with exact distances
  for those; a full pass only when the centroid has drifted.

So each pair of groups costs two or three O(m p) passes; memory is O(n p).
"""

from __future__ import annotations

import numpy as np
from numba import njit
from numpy.typing import NDArray


@njit(cache=True)
def _insert_nearest(bd: NDArray[np.float64], bi: NDArray[np.int64], cnt: int, d: float, idx: int) -> int:
    """Insert (d, idx) into the ascending buffer (bd, bi) of capacity len(bd); return the new count.

    Order is lexicographic on (distance, row index), so among equal distances the lowest index wins.
    """
    cap = bd.shape[0]
    if cap == 0:
        return cnt
    if cnt == cap:
        last = cap - 1
        if d > bd[last] or (d == bd[last] and idx > bi[last]):
            return cnt
        pos = last
    else:
        pos = cnt
        cnt += 1
    while pos > 0 and (bd[pos - 1] > d or (bd[pos - 1] == d and bi[pos - 1] > idx)):
        bd[pos] = bd[pos - 1]
        bi[pos] = bi[pos - 1]
        pos -= 1
    bd[pos] = d
    bi[pos] = idx
    return cnt


@njit(cache=True)
def _distances(zc: NDArray[np.float64], m: int, point: NDArray[np.float64], out: NDArray[np.float64]) -> None:
    """out[i] = sum_j (zc[j, i] - point[j])**2 for the first m columns, summed in the order j = 0, 1, ...

    Four columns per sweep (one read and write of ``out`` per four columns, not per column); the
    additions keep their sequential order, so the result is bit-identical to a one-column loop.
    """
    p = zc.shape[0]
    for i in range(m):
        out[i] = 0.0
    j = 0
    while j + 4 <= p:
        c0, c1, c2, c3 = point[j], point[j + 1], point[j + 2], point[j + 3]
        r0, r1, r2, r3 = zc[j], zc[j + 1], zc[j + 2], zc[j + 3]
        for i in range(m):
            t0 = r0[i] - c0
            t1 = r1[i] - c1
            t2 = r2[i] - c2
            t3 = r3[i] - c3
            out[i] = (((out[i] + t0 * t0) + t1 * t1) + t2 * t2) + t3 * t3
        j += 4
    while j < p:
        c = point[j]
        row = zc[j]
        for i in range(m):
            t = row[i] - c
            out[i] += t * t
        j += 1


@njit(cache=True, fastmath={"nnan", "ninf", "nsz"})  # no NaN/inf here; lets the max vectorise
def _farthest(d: NDArray[np.float64], ids: NDArray[np.int64], m: int) -> int:
    """Position of the largest d (lowest row index among ties)."""
    mx = d[0]
    for i in range(1, m):  # a branch-free max first (vectorised), then the lowest index at the max
        mx = max(mx, d[i])
    best = -1
    for i in range(m):
        if d[i] == mx and (best < 0 or ids[i] < ids[best]):
            best = i
    return best


@njit(cache=True)
def _nearest(
    d: NDArray[np.float64],
    ids: NDArray[np.int64],
    m: int,
    skip: int,
    bd: NDArray[np.float64],
    bi: NDArray[np.int64],
) -> None:
    """Fill (bd, bi) with the len(bd) smallest (d, row index) among positions != skip."""
    cap = bd.shape[0]
    if cap == 0:
        return
    cnt = 0
    wd = np.inf  # the current worst kept (d, index): most records are rejected by one comparison
    wi = -1
    for i in range(m):
        di = d[i]
        if di > wd or i == skip:
            continue
        if cnt == cap and di == wd and ids[i] > wi:
            continue
        cnt = _insert_nearest(bd, bi, cnt, di, ids[i])
        if cnt == cap:
            wd = bd[cap - 1]
            wi = bi[cap - 1]


@njit(cache=True)
def _remove(
    zc: NDArray[np.float64],
    ids: NDArray[np.int64],
    pos_of: NDArray[np.int64],
    m: int,
    rows: NDArray[np.int64],
    sums: NDArray[np.float64],
    z: NDArray[np.float64],
    dc: NDArray[np.float64],
) -> int:
    """Remove the given row indices from the compacted set; update the running sums; return new m."""
    p = zc.shape[0]
    # descending positions, so the record moved from the end is never one still to remove
    pos = np.empty(rows.shape[0], dtype=np.int64)
    for t in range(rows.shape[0]):
        pos[t] = pos_of[rows[t]]
    pos = np.sort(pos)[::-1]
    for t in range(rows.shape[0]):
        q = pos[t]
        last = m - 1
        if q != last:
            for j in range(p):
                zc[j, q] = zc[j, last]
            ids[q] = ids[last]
            dc[q] = dc[last]
            pos_of[ids[q]] = q
        m -= 1
    for t in range(rows.shape[0]):  # in the order given (ascending row index): as the reference
        r = rows[t]
        pos_of[r] = -1
        for j in range(p):
            sums[j] -= z[r, j]
    return m


@njit(cache=True, fastmath={"nnan", "ninf", "nsz"})  # max and comparisons only; sums stay exact
def _farthest_from_centroid(
    zc: NDArray[np.float64],
    ids: NDArray[np.int64],
    m: int,
    cen: NDArray[np.float64],
    cref: NDArray[np.float64],
    dc: NDArray[np.float64],
    cand: NDArray[np.int64],
    fresh: bool,
) -> int:
    """Position of the record farthest from ``cen`` (lowest row index among ties), pruned.

    ``dc`` holds each remaining record's squared distance to an earlier centroid ``cref``. With
    ``delta = ||cen - cref||``, the triangle inequality bounds every true distance within
    ``sqrt(dc) +- delta``, so only records with ``sqrt(dc_i) >= max sqrt(dc) - 2 delta`` can be the
    farthest; their exact distances are computed with the arithmetic of :func:`_distances` (the
    same sums in the same order), so the answer is the unpruned one. When the candidates exceed
    m / 16 (the centroid drifted), all distances are recomputed and ``cref`` reset.
    """
    p = zc.shape[0]
    if not fresh:
        delta2 = 0.0
        for j in range(p):
            t = cen[j] - cref[j]
            delta2 += t * t
        delta = np.sqrt(delta2)
        mx = 0.0
        for i in range(m):
            mx = max(mx, dc[i])
        top = np.sqrt(mx)
        thr = top - 2.0 * delta - 1e-9 * (top + delta) - 1e-300  # a margin for rounding
        thr2 = thr * thr if thr > 0 else -1.0
        limit = m // 16 + 64
        c = 0
        for i in range(m):
            if dc[i] >= thr2:
                if c == limit:
                    c = -1
                    break
                cand[c] = i
                c += 1
        if c >= 0:
            best = -1
            bestd = -1.0
            for t_ in range(c):
                i = cand[t_]
                acc = 0.0
                for j in range(p):
                    t = zc[j, i] - cen[j]
                    acc = acc + t * t
                if acc > bestd or (acc == bestd and ids[i] < ids[best]):
                    best = i
                    bestd = acc
            return best
    _distances(zc, m, cen, dc)
    for j in range(p):
        cref[j] = cen[j]
    return _farthest(dc, ids, m)


@njit(cache=True, nogil=True)
def mdav_kernel(z: NDArray[np.float64], k: int) -> NDArray[np.int64]:
    """MDAV group ids (0, 1, ... in creation order) for the rows of ``z`` (n, p), float64.

    Assumes n >= k >= 1 (checked by the caller). See the module docstring for the layout.
    """
    n, p = z.shape
    groups = np.full(n, -1, dtype=np.int64)
    if n == 0:
        return groups
    zc = np.empty((p, n), dtype=np.float64)
    for i in range(n):
        for j in range(p):
            zc[j, i] = z[i, j]
    ids = np.arange(n, dtype=np.int64)
    pos_of = np.arange(n, dtype=np.int64)
    sums = np.zeros(p, dtype=np.float64)
    for i in range(n):  # sequential sum in row order, as the reference's cumulative sum
        for j in range(p):
            sums[j] += z[i, j]
    d = np.empty(n, dtype=np.float64)
    dr = np.empty(n, dtype=np.float64)
    cen = np.empty(p, dtype=np.float64)
    pt = np.empty(p, dtype=np.float64)
    bd = np.empty(k - 1, dtype=np.float64)
    bi = np.empty(k - 1, dtype=np.int64)
    grp = np.empty(k, dtype=np.int64)
    dc = np.empty(n, dtype=np.float64)  # squared distance of each remaining record to cref
    cref = np.empty(p, dtype=np.float64)
    cand_buf = np.empty(n // 16 + 64, dtype=np.int64)
    fresh = True
    m = n
    g = 0
    while m >= 3 * k:
        for j in range(p):
            cen[j] = sums[j] / m
        r_pos = _farthest_from_centroid(zc, ids, m, cen, cref, dc, cand_buf, fresh)
        fresh = False
        xr = ids[r_pos]
        for j in range(p):
            pt[j] = zc[j, r_pos]
        _distances(zc, m, pt, dr)
        s_pos = _farthest(dr, ids, m)
        xs = ids[s_pos]
        _nearest(dr, ids, m, r_pos, bd, bi)
        grp[0] = xr
        for t in range(k - 1):
            grp[t + 1] = bi[t]
        in_gr = False
        for t in range(k):
            if grp[t] == xs:
                in_gr = True
        if in_gr:  # degenerate ties only: take the farthest from xr among those left
            best = -1
            for i in range(m):
                cand = ids[i]
                taken = False
                for t in range(k):
                    if grp[t] == cand:
                        taken = True
                if not taken and (best < 0 or dr[i] > dr[best] or (dr[i] == dr[best] and cand < ids[best])):
                    best = i
            xs = ids[best]
        rows = np.sort(grp.copy())
        for t in range(k):
            groups[rows[t]] = g
        g += 1
        m = _remove(zc, ids, pos_of, m, rows, sums, z, dc)
        s_pos = pos_of[xs]
        for j in range(p):
            pt[j] = zc[j, s_pos]
        _distances(zc, m, pt, d)
        _nearest(d, ids, m, s_pos, bd, bi)
        grp[0] = xs
        for t in range(k - 1):
            grp[t + 1] = bi[t]
        rows = np.sort(grp.copy())
        for t in range(k):
            groups[rows[t]] = g
        g += 1
        m = _remove(zc, ids, pos_of, m, rows, sums, z, dc)
    if m >= 2 * k:
        for j in range(p):
            cen[j] = sums[j] / m
        _distances(zc, m, cen, d)
        r_pos = _farthest(d, ids, m)
        xr = ids[r_pos]
        for j in range(p):
            pt[j] = zc[j, r_pos]
        _distances(zc, m, pt, dr)
        _nearest(dr, ids, m, r_pos, bd, bi)
        groups[xr] = g
        for t in range(k - 1):
            groups[bi[t]] = g
        g += 1
    for i in range(m):
        if groups[ids[i]] < 0:
            groups[ids[i]] = g
    return groups
