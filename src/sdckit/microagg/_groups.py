"""Grouping algorithms on standardised matrices: MDAV (exact and blocked), V-MDAV, sorting methods.

Pure array functions: ``z`` is a float64 (n, p) matrix of z-scores without missing values; each
function returns an int64 group id per row, numbered 0, 1, ... Callers check ``n >= k >= 1``.
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from typing import Literal

import numpy as np
from numpy.typing import NDArray

from sdckit.microagg._kernels import mdav_kernel
from sdckit.microagg._reference import mdav_reference

Engine = Literal["compiled", "reference"]
"""``"compiled"``: the numba kernel; ``"reference"``: the plain numpy implementation (same groups)."""


def standardize(x: NDArray[np.float64]) -> NDArray[np.float64]:
    """z-scores with the population sd (ddof=0); a constant column becomes 0 (it cannot separate rows).

    Missing values (NaN) are ignored in the mean and sd and stay NaN.
    """
    mean = np.nanmean(x, axis=0)
    sd = np.nanstd(x, axis=0)
    sd = np.where(sd > 0, sd, 1.0)
    return np.ascontiguousarray((x - mean) / sd)


def mdav_groups(z: NDArray[np.float64], k: int, *, engine: Engine = "compiled") -> NDArray[np.int64]:
    """Exact MDAV groups (microaggregation notes §1): k records per group, one group of k..2k-1.

    Ties go to the lowest row index. Cost O(n^2 p / k) time, O(n p) memory.
    """
    z = np.ascontiguousarray(z, dtype=np.float64)
    if engine == "reference":
        return mdav_reference(z, k)
    return np.asarray(mdav_kernel(z, k))


def kd_blocks(z: NDArray[np.float64], block_size: int) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
    """Partition rows into blocks of at most ``block_size`` rows by recursive median splits.

    Each split cuts a block in two halves (sizes differ by at most one) at the median of its
    column with the largest spread, like a k-d tree, so blocks hold nearby records and every block
    has at least ``block_size // 2`` rows. Returns ``(order, starts)``: block b is
    ``order[starts[b]:starts[b + 1]]``.
    """
    n = z.shape[0]
    pieces: list[NDArray[np.int64]] = []
    stack = [np.arange(n, dtype=np.int64)]
    while stack:
        rows = stack.pop()
        if rows.shape[0] <= block_size:
            pieces.append(rows)
            continue
        sub = z[rows]
        axis = int(np.argmax(sub.max(axis=0) - sub.min(axis=0)))
        half = rows.shape[0] // 2
        part = np.argpartition(sub[:, axis], half)
        stack.append(rows[part[half:]])
        stack.append(rows[part[:half]])
    starts = np.zeros(len(pieces) + 1, dtype=np.int64)
    starts[1:] = np.cumsum([len(r) for r in pieces])
    order = np.concatenate(pieces) if pieces else np.empty(0, dtype=np.int64)
    return order.astype(np.int64), starts


def blocked_mdav_groups(
    z: NDArray[np.float64], k: int, *, block_size: int = 10_000, workers: int | None = None
) -> NDArray[np.int64]:
    """MDAV inside k-d blocks of at most ``block_size`` rows, blocks processed in parallel.

    Cost O(n block_size p / k) instead of O(n^2 p / k); groups never cross a block boundary, so
    the information loss is somewhat higher than exact MDAV (measured in the benchmark).
    ``workers`` threads (default: the number of CPUs) process the blocks; the result does not
    depend on it. Block b's groups are numbered after block b-1's.
    """
    z = np.ascontiguousarray(z, dtype=np.float64)
    order, starts = kd_blocks(z, max(block_size, 2 * k))
    blocks = [order[starts[b] : starts[b + 1]] for b in range(starts.shape[0] - 1)]

    def run(rows: NDArray[np.int64]) -> NDArray[np.int64]:
        return np.asarray(mdav_kernel(np.ascontiguousarray(z[rows]), k))

    # the kernel releases the GIL: threads, not OpenMP, whose spinning workers slow BLAS afterwards
    with ThreadPoolExecutor(max_workers=workers or os.cpu_count() or 1) as pool:
        local = list(pool.map(run, blocks))
    groups = np.empty(z.shape[0], dtype=np.int64)
    offset = 0
    for rows, g in zip(blocks, local, strict=True):
        groups[rows] = g + offset
        offset += int(g.max()) + 1
    return groups


def sorted_groups(key: NDArray[np.float64], k: int) -> NDArray[np.int64]:
    """Groups of k consecutive rows in the order of ``key`` (stable: ties by row index).

    The last group takes the remainder (k..2k-1 rows).
    """
    n = key.shape[0]
    order = np.argsort(key, kind="stable")
    rank_group = np.minimum(np.arange(n) // k, max(n // k - 1, 0))
    groups = np.empty(n, dtype=np.int64)
    groups[order] = rank_group
    return groups


def first_component(z: NDArray[np.float64]) -> NDArray[np.float64]:
    """Scores on the first principal component of ``z`` (sign fixed: largest loading positive)."""
    centred = z - z.mean(axis=0)
    _, _, vt = np.linalg.svd(centred, full_matrices=False)
    v = vt[0]
    v = v if v[np.argmax(np.abs(v))] >= 0 else -v
    return np.asarray(centred @ v)


def vmdav_groups(z: NDArray[np.float64], k: int, gamma: float) -> NDArray[np.int64]:
    """V-MDAV (Solanas and Martinez-Balleste 2006): groups of k..2k-1 records, grown while useful.

    Repeat while at least k records are unassigned: ``e`` := the unassigned record farthest from
    the centroid of the unassigned records; its group := ``e`` + its k-1 nearest unassigned.
    Then, while the group has fewer than 2k-1 records, the unassigned record ``u`` nearest to the
    group (distance to its closest member, ``d_in``) joins when ``d_in < gamma * d_out``,
    ``d_out`` being the distance from ``u`` to its nearest other unassigned record. At the end the
    fewer than k records left join the group with the nearest centroid (such a group may then
    exceed 2k-1 records). Squared Euclidean distances; ties by the lowest row index.
    O(n^2 p / k) time, O(n p) memory.
    """
    n = z.shape[0]
    groups = np.full(n, -1, dtype=np.int64)
    alive = np.ones(n, dtype=bool)
    g = 0
    near_group = np.full(n, np.inf)  # distance of each unassigned record to the current group
    while alive.sum() >= k:
        rows = np.flatnonzero(alive)
        cen = z[rows].mean(axis=0)
        e = int(rows[np.argmax(((z[rows] - cen) ** 2).sum(axis=1))])
        d_e = ((z[rows] - z[e]) ** 2).sum(axis=1)
        members = rows[np.argsort(d_e, kind="stable")[:k]]
        if e not in members:  # ties at distance 0: e must be in its own group
            members = np.append(members[: k - 1], e)
        groups[members] = g
        alive[members] = False
        rest = np.flatnonzero(alive)
        if rest.shape[0]:
            near_group[rest] = np.min(
                ((z[rest][:, None, :] - z[members][None, :, :]) ** 2).sum(axis=2), axis=1
            )
        size = k
        while size < 2 * k - 1 and rest.shape[0] > 1:
            u_pos = int(np.argmin(near_group[rest]))
            u = int(rest[u_pos])
            d_in = near_group[u]
            d_u = ((z[rest] - z[u]) ** 2).sum(axis=1)
            d_u[u_pos] = np.inf
            d_out = float(d_u.min())
            if not d_in < gamma * d_out:
                break
            groups[u] = g
            alive[u] = False
            size += 1
            rest = np.flatnonzero(alive)
            near_group[rest] = np.minimum(near_group[rest], ((z[rest] - z[u]) ** 2).sum(axis=1))
        near_group[:] = np.inf
        g += 1
    left = np.flatnonzero(alive)
    if left.shape[0]:
        if g == 0:
            groups[left] = 0
        else:
            sizes = np.bincount(groups[groups >= 0], minlength=g).astype(np.float64)
            cents = (
                np.stack(
                    [
                        np.bincount(groups[groups >= 0], weights=z[groups >= 0, j], minlength=g)
                        for j in range(z.shape[1])
                    ],
                    axis=1,
                )
                / sizes[:, None]
            )
            for r in left:
                groups[r] = int(np.argmin(((cents - z[r]) ** 2).sum(axis=1)))
    return groups


def group_sizes(groups: NDArray[np.int64]) -> NDArray[np.int64]:
    """Rows per group id."""
    return np.bincount(groups).astype(np.int64)


def group_centres(
    x: NDArray[np.float64], groups: NDArray[np.int64], centre: Literal["mean", "median"] = "mean"
) -> NDArray[np.float64]:
    """Replace each value by its group's mean or median, column by column, ignoring NaN cells.

    A cell that was NaN stays NaN; a group whose column is all NaN keeps NaN there.
    """
    n, p = x.shape
    out = np.empty_like(x)
    n_groups = int(groups.max()) + 1 if n else 0
    for j in range(p):
        col = x[:, j]
        ok = ~np.isnan(col)
        if centre == "mean":
            cnt = np.bincount(groups[ok], minlength=n_groups).astype(np.float64)
            tot = np.bincount(groups[ok], weights=col[ok], minlength=n_groups)
            with np.errstate(invalid="ignore", divide="ignore"):
                cen = tot / cnt
        else:
            g_ok, v_ok = groups[ok], col[ok]
            order = np.lexsort((v_ok, g_ok))
            cnt_i = np.bincount(g_ok, minlength=n_groups)
            start = np.concatenate(([0], np.cumsum(cnt_i)[:-1]))
            cen = np.full(n_groups, np.nan)
            has = cnt_i > 0
            sv = v_ok[order]
            lo = start[has] + (cnt_i[has] - 1) // 2
            hi = start[has] + cnt_i[has] // 2
            cen[has] = (sv[lo] + sv[hi]) / 2
        out[:, j] = np.where(ok, cen[groups], np.nan)
    return out


def snapped_scale(mean: NDArray[np.float64], sd: NDArray[np.float64]) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Mean and sd rounded to 10 significant digits, a zero sd replaced by 1.

    The mean of a column summed in one pass (memory) and merged from partitions (Dask, Spark)
    differ in the last bits; MDAV on integer-valued data meets exact ties, which such bits can
    break differently. Both paths standardise with the rounded constants, so their z-scores are
    bit for bit the same (unless a constant lies within ~1e-16 of a rounding boundary).
    """
    m = np.array([float(f"{v:.10g}") for v in mean])
    s = np.array([float(f"{v:.10g}") for v in sd])
    return m, np.where(s > 0, s, 1.0)


def keyed_standardize(x: NDArray[np.float64]) -> NDArray[np.float64]:
    """z-scores for :func:`keyed_mdav_groups`: population sd, constants from :func:`snapped_scale`."""
    mean, sd = snapped_scale(np.nanmean(x, axis=0), np.nanstd(x, axis=0))
    z = (x - mean) / sd
    return np.ascontiguousarray(np.where(np.isnan(z), 0.0, z))  # a missing cell counts as the mean


def keyed_mdav_groups(
    z: NDArray[np.float64], k: int, blocks: NDArray[np.int64], *, workers: int | None = None
) -> NDArray[np.int64]:
    """MDAV inside given blocks (``blocks[i]`` the block code of row i, codes 0, 1, ...).

    ``z`` from :func:`keyed_standardize` (or the same constants computed on a cluster).
    The rows of a block are put in the lexicographic order of their values before MDAV runs, so
    the groups do not depend on the order the rows arrive in (the order a Dask or Spark partition
    holds them in): the same blocks give the same groups in memory and partition by partition.
    Block b's groups are numbered after block b-1's; blocks run in ``workers`` threads (default:
    the number of CPUs). Callers check that each block has >= k rows.
    """
    z = np.ascontiguousarray(z, dtype=np.float64)
    order = np.argsort(blocks, kind="stable")
    bounds = np.flatnonzero(np.diff(blocks[order])) + 1
    pieces = [p for p in np.split(order, bounds) if p.shape[0]] if order.shape[0] else []
    with ThreadPoolExecutor(max_workers=workers or os.cpu_count() or 1) as pool:
        local = list(pool.map(lambda rows: block_mdav(z[rows], k), pieces))
    groups = np.empty(z.shape[0], dtype=np.int64)
    offset = 0
    for rows, g in zip(pieces, local, strict=True):
        groups[rows] = g + offset
        offset += int(g.max()) + 1
    return groups


def block_mdav(z: NDArray[np.float64], k: int) -> NDArray[np.int64]:
    """MDAV groups of one block, independent of the order of its rows (lexicographic order first)."""
    order = np.lexsort(z.T[::-1]) if z.shape[1] else np.arange(z.shape[0])
    local = np.asarray(mdav_kernel(np.ascontiguousarray(z[order]), k))
    out = np.empty_like(local)
    out[order] = local
    return np.asarray(out, dtype=np.int64)
