"""SUDA2: minimal sample uniques (MSU) per record and the DIS-SUDA score.

A subset S of the key columns is a *minimal sample unique* of record r when r is the only record
with its values on S and no proper subset of S has that property (Elliot et al. 2002). The search
is the SUDA2 recursion of Manning, Haglin & Keane (2008): with the columns in a fixed order, an
itemset {i} ∪ M (i an item (column j, value v), M on columns after j) is an MSU of table T iff M is
an MSU of the sub-table T_i of the records holding i and M is *not* unique in T (the "special row"
check: some record without i agrees with r on M). Sub-tables in which no record is unique on the
remaining columns are pruned, and records identical on every column are cut to two copies first, so
the number of visited itemsets is far below 2^m per record. The kernel is compiled with numba.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, TypeAlias

import numpy as np
import polars as pl
from numpy.typing import NDArray

from sdckit._checks import check_groupable
from sdckit._io import DataSource, read_data
from sdckit._scale import collect_all
from sdckit._scale._jit import njit
from sdckit.errors import EmptyTableError, ParameterError
from sdckit.risk._counts._counting import sorted_codes

SudaMissing: TypeAlias = Literal["value", "ignore", "drop", "error"]
"""How a missing value in a key column is treated by :func:`suda2`: ``"value"`` (default) makes it
one more value; ``"ignore"`` is sdcMicro's rule (a missing value agrees with no value and is never
part of an MSU); ``"drop"`` removes the rows; ``"error"`` raises."""

_DIS_BINS = (0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7)


# --------------------------------------------------------------------------------------------- kernel


@njit(cache=True)
def _fill_shared(
    x: NDArray[np.int32],
    mask: int,
    card: NDArray[np.int64],
    out: NDArray[np.uint8],
    hkeys: NDArray[np.int64],
    hcnt: NDArray[np.int64],
    rowslot: NDArray[np.int64],
) -> bool:
    """out[r] = 1 when another row agrees with row r on the columns of ``mask`` (missing, code -1,
    agrees only with missing), by one pass with an open-addressing hash table; False when the
    mixed-radix key of the columns would overflow (the caller then scans)."""
    n, m = x.shape
    span = 1.0
    for j in range(m):
        if (mask >> j) & 1:
            span *= card[j] + 1
    if span > 4.0e18:
        return False
    size = hkeys.shape[0]
    bits = 0
    while (1 << bits) < size:
        bits += 1
    shift = np.uint64(64 - bits)
    golden = np.uint64(11400714819323198485)
    hkeys[:] = -1
    hcnt[:] = 0
    for r in range(n):
        key = 0
        for j in range(m):
            if (mask >> j) & 1:
                key = key * (card[j] + 1) + (x[r, j] + 1)
        h = np.int64((np.uint64(key) * golden) >> shift)
        while hkeys[h] != -1 and hkeys[h] != key:
            h = (h + 1) & (size - 1)
        hkeys[h] = key
        hcnt[h] += 1
        rowslot[r] = h
    for r in range(n):
        out[r] = 1 if hcnt[rowslot[r]] >= 2 else 0
    return True


@njit(cache=True)
def _is_minimal(
    x: NDArray[np.int32],
    r: int,
    depth: int,
    path_j: NDArray[np.int64],
    path_v: NDArray[np.int64],
    offs: NDArray[np.int64],
    item_ptr: NDArray[np.int64],
    item_rows: NDArray[np.int64],
    anc: NDArray[np.int64],
    anc_len: NDArray[np.int64],
    cache: tuple[Any, ...],
) -> bool:
    """Is the itemset path[0..depth] (unique for row r) minimal: is each subset without one of the
    items path[0..depth-2] shared by another row? (The caller checked the subset without the last
    path item with the parent's counts; without the new item it is the parent table itself.)

    A row sharing the subset without item ``drop`` lies in the ancestor table of depth ``drop``
    (rows holding path[0..drop-1]) and in the row list of every remaining item: the shorter of the
    ancestor table and the rarest item's list is scanned -- unless the column set is in ``cache``:
    (slot per column mask, shared flags per slot and row, slots used, column cardinalities, hash
    scratch), filled once per column set that occurs, after which each check is one lookup.
    Checks run from the deepest ancestor up (a failure is usually found in a small table).
    """
    slot, shared, used, card, hkeys, hcnt, rowslot = cache
    full = 0
    for t in range(depth + 1):
        full |= 1 << path_j[t]
    for drop in range(depth - 2, -1, -1):
        if slot.shape[0] > 1:
            mask = full & ~(1 << path_j[drop])
            sl = slot[mask]
            if sl == -1:
                if used[0] < shared.shape[0] and _fill_shared(
                    x, mask, card, shared[used[0]], hkeys, hcnt, rowslot
                ):
                    sl = used[0]
                    used[0] += 1
                else:
                    sl = -2
                slot[mask] = sl
            if sl >= 0:
                if shared[sl, r] == 0:
                    return False
                continue
        best = -1
        best_len = 1 << 62
        for t in range(drop + 1, depth + 1):
            idx = offs[path_j[t]] + path_v[t]
            ln = item_ptr[idx + 1] - item_ptr[idx]
            if ln < best_len:
                best_len = ln
                best = idx
        found = False
        if anc_len[drop] < best_len:
            for a in range(anc_len[drop]):
                q = anc[drop, a]
                if q == r:
                    continue
                same = True
                for t in range(drop + 1, depth + 1):
                    if x[q, path_j[t]] != path_v[t]:
                        same = False
                        break
                if same:
                    found = True
                    break
        else:
            for a in range(item_ptr[best], item_ptr[best + 1]):
                q = item_rows[a]
                if q == r:
                    continue
                same = True
                for t in range(depth + 1):
                    if t != drop and x[q, path_j[t]] != path_v[t]:
                        same = False
                        break
                if same:
                    found = True
                    break
        if not found:
            return False
    return True


@njit(cache=True)
def _node(
    x: NDArray[np.int32],
    rows: NDArray[np.int64],
    j0: int,
    depth: int,
    path_j: NDArray[np.int64],
    path_v: NDArray[np.int64],
    offs: NDArray[np.int64],
    cnt: NDArray[np.int64],
    pos: NDArray[np.int64],
    suf: NDArray[np.int64],
    suf_offs: NDArray[np.int64],
    suf_cnt: NDArray[np.int64],
    item_ptr: NDArray[np.int64],
    item_rows: NDArray[np.int64],
    msu: NDArray[np.int64],
    anc: NDArray[np.int64],
    anc_len: NDArray[np.int64],
    cache: tuple[Any, ...],
    bufs: NDArray[np.int64],
) -> None:
    """Find the MSUs of the sub-table ``rows`` (records holding path[0..depth-1]) on columns >= j0.

    ``cnt[depth]`` holds this table's item counts; ``cnt[depth - 1]`` the parent's. An item whose
    count here equals its count in the parent occurs only with the last path item, so every itemset
    with both is not minimal (drop the path item): it is skipped, with its whole subtree.
    """
    m = x.shape[1]
    nr = rows.shape[0]
    here = cnt[depth]
    anc_len[depth] = nr
    for a in range(nr):
        r = rows[a]
        anc[depth, a] = r
        for j in range(j0, m):
            v = x[r, j]
            if v >= 0:
                here[offs[j] + v] += 1
    order = bufs[0, depth]
    gstart = bufs[1, depth]
    gsize = bufs[2, depth]
    for j in range(j0, m):
        base = offs[j]
        # items of column j held by one record of this table: candidate MSUs path + (j, v)
        path_j[depth] = j
        for a in range(nr):
            r = rows[a]
            v = x[r, j]
            if v >= 0 and here[base + v] == 1:
                if depth > 0 and cnt[depth - 1, base + v] == 1:
                    continue
                path_v[depth] = v
                if _is_minimal(x, r, depth, path_j, path_v, offs, item_ptr, item_rows, anc, anc_len, cache):
                    msu[r, depth] += 1
        if j + 1 < m:
            # counting sort of the rows whose item (j, v) is shared, one segment per value
            n_groups = 0
            total = 0
            for a in range(nr):
                v = x[rows[a], j]
                if v < 0:
                    continue
                c = here[base + v]
                if c >= 2 and pos[base + v] < 0 and (depth == 0 or c < cnt[depth - 1, base + v]):
                    pos[base + v] = total
                    gstart[n_groups] = total
                    gsize[n_groups] = c
                    n_groups += 1
                    total += c
            for a in range(nr):
                v = x[rows[a], j]
                if v >= 0 and pos[base + v] >= 0:
                    order[pos[base + v]] = rows[a]
                    pos[base + v] += 1
            for a in range(nr):
                v = x[rows[a], j]
                if v >= 0:
                    pos[base + v] = -1
            sbase = suf_offs[j + 1]
            for g in range(n_groups):
                s0 = gstart[g]
                s1 = s0 + gsize[g]
                # prune: a record with an MSU below must be unique on columns > j within the group
                for a in range(s0, s1):
                    suf_cnt[sbase + suf[order[a], j + 1]] += 1
                any_unique = False
                for a in range(s0, s1):
                    if suf_cnt[sbase + suf[order[a], j + 1]] == 1:
                        any_unique = True
                        break
                for a in range(s0, s1):
                    suf_cnt[sbase + suf[order[a], j + 1]] = 0
                if any_unique:
                    path_v[depth] = x[order[s0], j]
                    _node(
                        x,
                        order[s0:s1],
                        j + 1,
                        depth + 1,
                        path_j,
                        path_v,
                        offs,
                        cnt,
                        pos,
                        suf,
                        suf_offs,
                        suf_cnt,
                        item_ptr,
                        item_rows,
                        msu,
                        anc,
                        anc_len,
                        cache,
                        bufs,
                    )
                    path_j[depth] = j
    for a in range(nr):
        r = rows[a]
        for j in range(j0, m):
            v = x[r, j]
            if v >= 0:
                here[offs[j] + v] = 0


@njit(cache=True)
def suffix_codes(x: NDArray[np.int32]) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
    """Dense code of each row on the columns j..m-1, for every j (column m: all 0), and the number
    of codes per j. Missing (-1) is one more value. One pass per column with a remap table (a dense
    table while the key range stays below 8 n, a sort beyond)."""
    n, m = x.shape
    suf = np.zeros((n, m + 1), dtype=np.int64)
    ncodes = np.ones(m + 1, dtype=np.int64)
    for j in range(m - 1, -1, -1):
        radix = 1
        for r in range(n):
            radix = max(radix, x[r, j] + 2)
        size = ncodes[j + 1] * radix
        key = np.empty(n, dtype=np.int64)
        for r in range(n):
            key[r] = suf[r, j + 1] * radix + x[r, j] + 1
        nxt = 0
        if size <= 8 * n + 64:
            table = np.full(size, -1, dtype=np.int64)
            for r in range(n):
                k = key[r]
                if table[k] < 0:
                    table[k] = nxt
                    nxt += 1
                suf[r, j] = table[k]
        else:
            order = np.argsort(key)
            prev = -1
            for a in range(n):
                r = order[a]
                if a == 0 or key[r] != prev:
                    if a > 0:
                        nxt += 1
                    prev = key[r]
                suf[r, j] = nxt
            nxt += 1
        ncodes[j] = nxt
    return suf, ncodes


@njit(cache=True)
def _first_two(group: NDArray[np.int64], n_groups: int) -> NDArray[np.bool_]:
    """Keep the first two rows of each group."""
    seen = np.zeros(n_groups, dtype=np.int64)
    keep = np.zeros(group.shape[0], dtype=np.bool_)
    for r in range(group.shape[0]):
        g = group[r]
        if seen[g] < 2:
            keep[r] = True
        seen[g] += 1
    return keep


@njit(cache=True)
def _item_lists(x: NDArray[np.int32], offs: NDArray[np.int64]) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
    """CSR of the rows holding each item (column j, value v), item index offs[j] + v; counting sort."""
    n, m = x.shape
    n_items = offs[m]
    ptr = np.zeros(n_items + 1, dtype=np.int64)
    for r in range(n):
        for j in range(m):
            if x[r, j] >= 0:
                ptr[offs[j] + x[r, j] + 1] += 1
    for i in range(n_items):
        ptr[i + 1] += ptr[i]
    fill = ptr[:-1].copy()
    rows = np.empty(ptr[n_items], dtype=np.int64)
    for r in range(n):
        for j in range(m):
            if x[r, j] >= 0:
                idx = offs[j] + x[r, j]
                rows[fill[idx]] = r
                fill[idx] += 1
    return ptr, rows


def msu_counts(codes: NDArray[np.int32]) -> NDArray[np.int64]:
    """Number of MSUs of each size (column s-1 for size s) of each row of a dense code matrix.

    ``codes[i, j]`` is the value code of row i on column j (0..m_j-1), or -1 for a missing value that
    agrees with nothing and is never part of an MSU. Rows identical on every column are cut to two
    copies before the search (their MSU counts are 0 either way).
    """
    n, m = codes.shape
    out = np.zeros((n, m), dtype=np.int64)
    if n == 0 or m == 0:
        return out
    # columns by falling number of values: the recursion splits into small sub-tables early
    order = np.argsort(-codes.max(axis=0), kind="stable")
    x_all = np.ascontiguousarray(codes[:, order], dtype=np.int32)
    suf_all, ncodes = suffix_codes(x_all)
    keep = np.flatnonzero(_first_two(suf_all[:, 0], int(ncodes[0])))  # identical rows: two copies
    x = np.ascontiguousarray(x_all[keep])
    suf = np.ascontiguousarray(suf_all[keep])
    nk = x.shape[0]
    card = np.maximum(x.max(axis=0).astype(np.int64) + 1, 1)
    offs = np.concatenate([[0], np.cumsum(card)]).astype(np.int64)
    item_ptr, item_rows = _item_lists(x, offs)
    suf_offs = np.concatenate([[0], np.cumsum(ncodes)]).astype(np.int64)
    msu = np.zeros((nk, m), dtype=np.int64)
    bufs = np.zeros((3, m + 1, nk), dtype=np.int64)  # per depth: row order, group starts, group sizes
    bufs[0, m] = np.arange(nk)
    _node(
        x,
        bufs[0, m],
        0,
        0,
        np.zeros(m, dtype=np.int64),
        np.zeros(m, dtype=np.int64),
        offs,
        np.zeros((m, int(offs[-1])), dtype=np.int64),
        np.full(int(offs[-1]), -1, dtype=np.int64),
        suf,
        suf_offs,
        np.zeros(int(suf_offs[-1]), dtype=np.int64),
        item_ptr,
        item_rows,
        msu,
        np.zeros((m, nk), dtype=np.int64),
        np.zeros(m, dtype=np.int64),
        _shared_cache(x, card),
        bufs,
    )
    out[keep] = msu  # counts by MSU size do not depend on the column order
    return out


_CACHE_MAX_COLUMNS = 20  # a slot per column mask: 2^20 int64 = 8 MB
_CACHE_BYTES = 1 << 28  # shared flags: at most 256 MB (one byte per row and cached column set)


def _shared_cache(x: NDArray[np.int32], card: NDArray[np.int64]) -> tuple[Any, ...]:
    """The minimality cache of :func:`_is_minimal` (disabled beyond 20 columns)."""
    n, m = x.shape
    if m > _CACHE_MAX_COLUMNS:
        slots = 0
        slot = np.full(1, -2, dtype=np.int64)
    else:
        slots = int(min(1 << m, max(1, _CACHE_BYTES // max(n, 1))))
        slot = np.full(1 << m, -1, dtype=np.int64)
    size = 1 << max(4, int(2 * n - 1).bit_length())
    return (
        slot,
        np.zeros((max(slots, 1), n if slots else 1), dtype=np.uint8),
        np.zeros(1, dtype=np.int64),
        card.astype(np.int64),
        np.empty(size if slots else 1, dtype=np.int64),
        np.empty(size if slots else 1, dtype=np.int64),
        np.empty(n if slots else 1, dtype=np.int64),
    )


def suda_weights(m: int) -> NDArray[np.float64]:
    """Score of one MSU of size s (index s-1) among m key columns: (m - s)! (Elliot et al. 2002)."""
    return np.array([math.factorial(m - s) for s in range(1, m + 1)], dtype=np.float64)


def dis_scores(
    scores: NDArray[np.float64],
    *,
    n_pair_rows: int,
    m: int,
    dis_fraction: float,
) -> NDArray[np.float64]:
    """DIS-SUDA score of each record from its SUDA score (as sdcMicro's suda2 computes it).

    dis = U f / (U f + P (1 - f)) estimates the probability that a sample unique is a population
    unique (U sample uniques, P records in pairs, f the ``dis_fraction``); with Q = 1 + (8 - m) / 20,
    DIS_i = 1 / (1 + (U / dis - U) / (score_i^Q * sum_j score_j^-Q)) for score_i > 0, else 0.
    U / dis - U = P (1 - f) / f, so U cancels and is not needed.
    """
    out = np.zeros_like(scores, dtype=np.float64)
    pos = scores > 0
    if not pos.any():
        return out
    gap = n_pair_rows * (1.0 - dis_fraction) / dis_fraction
    q = 1.0 + (8.0 - m) / 20.0
    powered = scores[pos] ** q
    adj = float(np.sum(1.0 / powered))
    out[pos] = 1.0 / (1.0 + gap / (powered * adj))
    return out


# --------------------------------------------------------------------------------------------- public


@dataclass(frozen=True, kw_only=True)
class Suda2Result:
    """Special uniques of a table on key columns: MSUs per record, SUDA and DIS-SUDA scores.

    Attributes are per-record arrays in the input's row order (length n) and table figures.
    """

    columns: tuple[str, ...]
    """The key columns (m of them)."""
    n: int
    """Records measured."""
    msu_counts: NDArray[np.int64] = field(repr=False)
    """Shape (n, m): number of MSUs of size s (column s - 1) of each record."""
    scores: NDArray[np.float64] = field(repr=False)
    """SUDA score of each record: sum over its MSUs of (m - size)!; 0 for a record with no MSU."""
    dis_scores: NDArray[np.float64] = field(repr=False)
    """DIS-SUDA score of each record (0..1): an estimate of its probability of re-identification."""
    n_uniques: int
    """Records unique on all the key columns (U of the DIS formula)."""
    n_pair_rows: int
    """Records in groups of exactly two on all the key columns (P of the DIS formula)."""
    dis_fraction: float
    """Sampling fraction f used by the DIS score."""

    @property
    def n_msu(self) -> int:
        """Total number of MSUs over all records."""
        return int(self.msu_counts.sum())

    @property
    def n_special(self) -> int:
        """Records with at least one MSU (score > 0)."""
        return int(np.count_nonzero(self.scores))

    @property
    def min_msu_size(self) -> NDArray[np.int64]:
        """Size of each record's smallest MSU (0 when it has none)."""
        has = self.msu_counts > 0
        first = np.argmax(has, axis=1) + 1
        return np.where(has.any(axis=1), first, 0).astype(np.int64)

    def dis_histogram(self) -> list[tuple[str, int]]:
        """Records per DIS-score interval, as sdcMicro prints them: ``== 0``, (0, 0.1], ..., ``> 0.7``."""
        eps = np.finfo(float).eps
        edges = np.array([-1.0, *[b + eps for b in _DIS_BINS], np.inf])
        counts, _ = np.histogram(self.dis_scores, bins=edges)
        labels = ["== 0"] + [f"({a:.1f}, {b:.1f}]" for a, b in itertools.pairwise(_DIS_BINS)]
        labels.append("> 0.7")
        return list(zip(labels, counts.astype(int).tolist(), strict=True))

    def to_frame(self) -> pl.DataFrame:
        """One row per record: ``suda_score``, ``dis_suda_score``, ``min_msu_size``, ``msu_size_<s>``."""
        cols: dict[str, Any] = {
            "suda_score": self.scores,
            "dis_suda_score": self.dis_scores,
            "min_msu_size": self.min_msu_size,
        }
        for s in range(1, len(self.columns) + 1):
            cols[f"msu_size_{s}"] = self.msu_counts[:, s - 1]
        return pl.DataFrame(cols)

    def to_dict(self) -> dict[str, Any]:
        """JSON form: table figures, MSUs by size, the DIS histogram (no per-record values)."""
        return {
            "columns": list(self.columns),
            "n": self.n,
            "n_msu": self.n_msu,
            "n_special": self.n_special,
            "msu_by_size": self.msu_counts.sum(axis=0).astype(int).tolist(),
            "max_score": float(self.scores.max()) if self.n else 0.0,
            "max_dis_score": float(self.dis_scores.max()) if self.n else 0.0,
            "mean_dis_score": float(self.dis_scores.mean()) if self.n else 0.0,
            "n_uniques": self.n_uniques,
            "n_pair_rows": self.n_pair_rows,
            "dis_fraction": self.dis_fraction,
            "dis_histogram": [{"interval": a, "n_records": c} for a, c in self.dis_histogram()],
        }


def suda2(
    data: DataSource,
    columns: Sequence[str] | str,
    *,
    missing: SudaMissing = "value",
    dis_fraction: float = 0.01,
) -> Suda2Result:
    """Minimal sample uniques (MSU) of each record on ``columns`` and its SUDA and DIS-SUDA scores.

    A record's SUDA score is sum over its MSUs S of (m - |S|)! (m key columns; the "original" scores
    of Elliot et al. 2002, sdcMicro's default): a small MSU -- few columns that single the record out
    -- weighs much more than a large one. The DIS-SUDA score calibrates the scores into an estimate
    of each record's re-identification probability from the share of sample uniques that are
    population uniques, dis = U f / (U f + P (1 - f)) (U records unique on all columns, P records in
    pairs, f = ``dis_fraction``): DIS_i = 1 / (1 + (U / dis - U) / (score_i^Q sum_j score_j^-Q)),
    Q = 1 + (8 - m) / 20 (Elliot, Manning & Ford 2002; as in sdcMicro's ``suda2``).

    Parameters
    ----------
    data : a path or any frame the input layer accepts (collected into memory).
    columns : the key columns (quasi-identifiers).
    missing : ``"value"`` (default: missing is one more value), ``"ignore"`` (sdcMicro's rule: a
        missing value agrees with nothing and is never part of an MSU), ``"drop"`` or ``"error"``.
    dis_fraction : sampling fraction f in (0, 1) for the DIS score (sdcMicro's ``DisFraction``).

    Notes
    -----
    Search: the SUDA2 recursion (Manning, Haglin & Keane 2008) over items (column, value) in column
    order, with the special-row check for minimality, records identical on all columns cut to two
    copies, and sub-tables without a record unique on the remaining columns pruned. Memory O(n m).
    With 1 or 2 columns sdcMicro pads the table with constant columns (changing m in the scores);
    sdckit does not.

    References
    ----------
    .. [1] Elliot, M. J., Manning, A. M. & Ford, R. W. (2002). A computational algorithm for handling
       the special uniques problem. Int. J. Uncertain. Fuzziness Knowl.-Based Syst. 10(5), 493-509.
    .. [2] Manning, A. M., Haglin, D. J. & Keane, J. A. (2008). A recursive search algorithm for
       statistical disclosure assessment. Data Min. Knowl. Discov. 16, 165-196.
    .. [3] Templ, M., Kowarik, A. & Meindl, B. (2015). Statistical disclosure control for
       micro-data using the R package sdcMicro. J. Stat. Softw. 67(4).

    Examples
    --------
    >>> import polars as pl
    >>> df = pl.DataFrame({"a": [1, 1, 2, 2], "b": [1, 2, 1, 1], "c": [1, 1, 1, 2]})
    >>> r = suda2(df, ["a", "b", "c"])
    >>> r.msu_counts.tolist()   # MSUs {a, b}, {b}, {a, c}, {c}: sizes 2, 1, 2, 1
    [[0, 1, 0], [1, 0, 0], [0, 1, 0], [1, 0, 0]]
    >>> r.scores.tolist()       # (m - size)! with m = 3
    [1.0, 2.0, 1.0, 2.0]
    """
    if missing not in ("value", "ignore", "drop", "error"):
        raise ParameterError(f"missing={missing!r}: use 'value', 'ignore', 'drop' or 'error'.")
    f = float(dis_fraction)
    if not (0.0 < f < 1.0):
        raise ParameterError(
            f"dis_fraction={dis_fraction!r} must be a sampling fraction strictly between 0 and 1."
        )
    policy = "value" if missing == "ignore" else missing
    d = read_data(data, columns, missing=policy)
    cols = list(d.columns)
    check_groupable(d.frame, cols)
    frame = collect_all(
        d.frame, what="suda2", instead="with_suda2(frame, columns, block=...) runs within blocks where they live."
    )
    df = frame.to_polars()
    n = df.height
    if n == 0:
        raise EmptyTableError("the table has no rows; there is nothing to measure.")
    m = len(cols)
    codes = np.column_stack(
        [sorted_codes(df[c], missing_code=-1 if missing == "ignore" else None)[0] for c in cols]
    ).astype(np.int32)
    counts = msu_counts(codes)
    scores = counts @ suda_weights(m)
    full_key = suffix_codes(codes)[0][:, 0]  # missing as a value on the full key (as sdcMicro)
    row_size = np.bincount(full_key)[full_key]
    n_pair_rows = int(np.sum(row_size == 2))
    n_uniques = int(np.sum(row_size == 1))
    dis = dis_scores(scores, n_pair_rows=n_pair_rows, m=m, dis_fraction=f)
    return Suda2Result(
        columns=tuple(cols),
        n=n,
        msu_counts=counts,
        scores=scores,
        dis_scores=dis,
        n_uniques=n_uniques,
        n_pair_rows=n_pair_rows,
        dis_fraction=f,
    )
