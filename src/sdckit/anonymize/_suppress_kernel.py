"""Compiled greedy local suppression under missing-as-wildcard (numba)."""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from sdckit._scale._jit import njit


@njit(cache=True, nogil=True)
def _conflicts(
    codes_t: NDArray[np.int32], i: int, skip: int, m: NDArray[np.int16]
) -> None:  # pragma: no cover
    """m[s] = number of keys (other than ``skip``) where records i and s both hold a value and differ
    Column-major so that the loop over records vectorises."""
    p, n = codes_t.shape
    m[:] = 0
    for j in range(p):
        a = codes_t[j, i]
        if a < 0 or j == skip:
            continue
        col = codes_t[j]
        for s in range(n):
            b = col[s]
            m[s] += (b >= 0) & (b != a)
    m[i] = 3


@njit(cache=True, nogil=True)
def _scan(
    codes_t: NDArray[np.int32],
    i: int,
    m: NDArray[np.int16],
    c1: NDArray[np.int64],
    c2: NDArray[np.int64],
    buf_s: NDArray[np.int64],
    buf_j1: NDArray[np.int64],
    buf_j2: NDArray[np.int64],
) -> int:  # pragma: no cover - compiled
    """Records at one or two conflicts from record i (a conflict: both cells present and different).

    Fills c1[j] (one conflict, at j), c2[j1, j2] (two, at j1 < j2) and the buffer of those records;
    returns how many are buffered.
    """
    p, n = codes_t.shape
    _conflicts(codes_t, i, -1, m)
    c1[:] = 0
    c2[:, :] = 0
    nb = 0
    for s in range(n):
        if m[s] == 0 or m[s] > 2:
            continue
        j1 = -1
        j2 = -1
        for j in range(p):
            a = codes_t[j, i]
            b = codes_t[j, s]
            if a >= 0 and b >= 0 and a != b:
                if j1 < 0:
                    j1 = j
                else:
                    j2 = j
                    break
        if j2 < 0:
            c1[j1] += 1
        else:
            c2[j1, j2] += 1
        buf_s[nb] = s
        buf_j1[nb] = j1
        buf_j2[nb] = j2
        nb += 1
    return nb


@njit(cache=True, nogil=True)
def greedy_suppress(
    codes: NDArray[np.int32],
    sizes: NDArray[np.int64],
    k: int,
    order: NDArray[np.int64],
    rank: NDArray[np.int64],
) -> int:  # pragma: no cover - compiled
    """Suppress cells (set codes to -1, in place) until every wildcard group size is >= k.

    ``sizes`` are the current wildcard group sizes (updated in place), ``order`` the records in
    the order they are treated, ``rank[j]`` the suppression preference of key j (higher is
    suppressed first). For a record below k: the single key whose suppression brings it to k
    (highest rank among those), else the pair that does (fewest important keys), else the key that
    gains the most compatible records. Sizes only grow, so every record treated stays >= k.
    Returns the number of cells suppressed.
    """
    p, n = codes.shape
    m = np.zeros(n, dtype=np.int16)
    c1 = np.zeros(p, dtype=np.int64)
    c2 = np.zeros((p, p), dtype=np.int64)
    buf_s = np.empty(n, dtype=np.int64)
    buf_j1 = np.empty(n, dtype=np.int64)
    buf_j2 = np.empty(n, dtype=np.int64)
    total = 0
    for t in range(order.shape[0]):
        i = order[t]
        while sizes[i] < k:
            kept = 0
            for j in range(p):
                if codes[j, i] >= 0:
                    kept += 1
            if kept == 0:
                break  # compatible with every record already
            nb = _scan(codes, i, m, c1, c2, buf_s, buf_j1, buf_j2)
            need = k - sizes[i]
            pick1 = -1
            pick2 = -1
            for j in range(p):  # one cell that suffices, least important first
                if codes[j, i] >= 0 and c1[j] >= need and (pick1 < 0 or rank[j] > rank[pick1]):
                    pick1 = j
            if pick1 < 0:  # two cells that suffice: the pair whose more important key is least important
                best_hi = -1
                best_lo = -1
                for j1 in range(p):
                    if codes[j1, i] < 0:
                        continue
                    for j2 in range(j1 + 1, p):
                        if codes[j2, i] < 0:
                            continue
                        if c1[j1] + c1[j2] + c2[j1, j2] >= need:
                            hi = min(rank[j1], rank[j2])
                            lo = max(rank[j1], rank[j2])
                            if hi > best_hi or (hi == best_hi and lo > best_lo):
                                best_hi = hi
                                best_lo = lo
                                pick1 = j1
                                pick2 = j2
            if pick1 < 0:  # no one or two cells suffice: the cell that gains the most
                for j in range(p):
                    if codes[j, i] < 0:
                        continue
                    if pick1 < 0 or c1[j] > c1[pick1] or (c1[j] == c1[pick1] and rank[j] > rank[pick1]):
                        pick1 = j
                if c1[pick1] == 0:  # nothing gains alone: the pair that gains the most
                    gain = 0
                    for j1 in range(p):
                        if codes[j1, i] < 0:
                            continue
                        for j2 in range(j1 + 1, p):
                            if codes[j2, i] >= 0 and c2[j1, j2] > gain:
                                gain = c2[j1, j2]
                                pick1 = j1
                                pick2 = j2
            codes[pick1, i] = -1
            total += 1
            if pick2 >= 0:
                codes[pick2, i] = -1
                total += 1
            gained = 0
            for b in range(nb):
                j1 = buf_j1[b]
                j2 = buf_j2[b]
                ok1 = j1 in (pick1, pick2)
                ok2 = j2 < 0 or j2 in (pick1, pick2)
                if ok1 and ok2:
                    sizes[buf_s[b]] += 1
                    gained += 1
            sizes[i] += gained
    return total


@njit(cache=True, nogil=True)
def restore_cells(
    codes: NDArray[np.int32],
    original: NDArray[np.int32],
    sizes: NDArray[np.int64],
    k: int,
    cells: NDArray[np.int64],
) -> int:  # pragma: no cover - compiled
    """Put back suppressed cells whose return keeps every wildcard group size >= k (in place).

    ``codes`` and ``original`` are column-major (p, n); ``cells`` lists (row, column) pairs as
    row * p + column, tried in order. Putting back cell (i, j) makes record i incompatible with the
    records that differ from it at j only; it is put back when i and each of them stay >= k.
    Returns the number of cells put back.
    """
    p, n = codes.shape
    m = np.zeros(n, dtype=np.int16)
    lost = np.empty(n, dtype=np.int64)
    back = 0
    for c in range(cells.shape[0]):
        i = cells[c] // p
        j = cells[c] % p
        v = original[j, i]
        if codes[j, i] >= 0 or v < 0:
            continue
        _conflicts(codes, i, j, m)
        col = codes[j]
        nl = 0
        ok = True
        for s in range(n):
            if m[s] == 0:
                b = col[s]
                if b >= 0 and b != v:
                    if sizes[s] - 1 < k:
                        ok = False
                        break
                    lost[nl] = s
                    nl += 1
        if ok and sizes[i] - nl >= k:
            codes[j, i] = v
            sizes[i] -= nl
            for t in range(nl):
                sizes[lost[t]] -= 1
            back += 1
    return back
