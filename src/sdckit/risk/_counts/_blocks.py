"""Joint counts of blocks of columns (pair and triple tables) and the bounds they give.

A *block* is a set of columns whose joint value counts the curator knows, e.g. the pair table of
(age, sex) received in the protocol's middle round. Theorems 2 and 3 of the anonymity notes hold for
any partition of J into blocks with known joint counts, each block treated as one feature
(docs/risk.md, "Bounds from blocks", has the proof):

    Q_J(t) <= sum_b p_b(E_b) + tau * prod_b W_b,

where E_b is a set of sacrificed cells of block b and W_b an upper bound on the number of its
non-sacrificed cells holding users. The best bound minimises over the partitions of J into known
blocks (singles are always known) and over the sacrificed cells.

A *redacted* cell is a cell of a partial table in which a rare value was replaced by the redaction
marker :data:`REDACTED`: its users are known in total but not which true cells they hold. A redacted
cell counts either as sacrificed whole (its users are counted as exposed, family A) or as kept with
at most min(users, prod of the supports of its redacted columns) unknown true cells (family B);
never as one cell.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Final

import numpy as np
from numpy.typing import NDArray

from sdckit._scale._jit import njit
from sdckit.errors import ColumnNotFoundError, InputError

MAX_EXACT_BLOCK_COLUMNS = 16
"""Up to this many columns the minimum over partitions into known blocks is exact (DP over subsets)."""

_MAX_BLOCK_OPTIONS = 512  # sacrifice choices per block in the DP (evenly thinned beyond: still valid)
_MAX_FRONT = 4096  # frontier points kept per DP state (thinned beyond: still valid)


class _Marker:
    """A named singleton that stands in for a value (pickled by its module-level name)."""

    _instances: ClassVar[dict[str, _Marker]] = {}
    name: str

    def __new__(cls, name: str) -> _Marker:
        if name not in cls._instances:
            obj = super().__new__(cls)
            obj.name = name
            cls._instances[name] = obj
        return cls._instances[name]

    def __repr__(self) -> str:
        return self.name

    def __reduce__(self) -> str:
        return self.name


REDACTED: Final = _Marker("REDACTED")
"""Marker of a redacted value in a block table key, e.g. ``(REDACTED, "Male")``: the user's value
was withheld because it is rare; the cell aggregates unknown true cells."""

MERGED: Final = _Marker("MERGED")
"""Label of the merged rare values of a column (what a redacting user's value becomes in the
table of the merged column; unlike :data:`REDACTED` it is one known value)."""


def is_redacted(value: Any) -> bool:
    """True only for the marker :data:`REDACTED` itself (the text ``"REDACTED"`` is an ordinary value)."""
    return value is REDACTED


@dataclass(frozen=True, eq=False)
class BlockCounts:
    """The joint counts of one block of columns, possibly with redacted cells.

    ``counts``/``values`` are the cells the curator knows exactly (all values present), ascending;
    ``redacted_counts``/``redacted_values`` the cells received with at least one :data:`REDACTED`
    component, as received (aggregates of unknown true cells).
    """

    columns: tuple[str, ...]
    """The block's columns, in the order of the cell tuples."""
    counts: NDArray[np.int64]
    """Users of each fully known cell, ascending (int64, all > 0)."""
    values: tuple[tuple[Any, ...], ...]
    """The cells aligned with ``counts``."""
    redacted_counts: NDArray[np.int64]
    """Users of each received cell with a redacted component (int64, all > 0)."""
    redacted_values: tuple[tuple[Any, ...], ...]
    """Those cells' keys (with :data:`REDACTED` in the withheld positions)."""
    redacted_max: NDArray[np.int64]
    """Per redacted cell, an upper bound on the true cells it aggregates: min(users, prod over its
    redacted positions of that column's support)."""

    @property
    def redacted_cells(self) -> int:
        """Upper bound on the number of distinct true cells the redacted users hold."""
        return int(self.redacted_max.sum())

    def exposure_bound(self, thr: int) -> int:
        """Users who can be in a true cell of at most ``thr`` users (the block's own exposure, times n):
        exact for known cells; a redacted cell of x users and at most M true cells adds min(x, thr M)."""
        known = int(self.counts[self.counts <= thr].sum())
        red = np.minimum(self.redacted_counts, thr * self.redacted_max)
        return known + int(red.sum())

    @property
    def redacted(self) -> int:
        """Users in redacted cells."""
        return int(self.redacted_counts.sum())

    @property
    def support(self) -> int:
        """Number of fully known cells."""
        return int(self.counts.size)


def block_key(columns: Sequence[str]) -> tuple[str, ...]:
    """Canonical key of a block: its columns as given (a block is an ordered tuple of column names)."""
    return tuple(str(c) for c in columns)


def make_block(
    columns: Sequence[str],
    table: Mapping[Any, int] | Sequence[tuple[tuple[Any, ...], int]],
    *,
    n: int,
    singles: Mapping[str, Mapping[Any, int]],
    check: bool = True,
) -> BlockCounts:
    """Validate a block table ``{(v1, v2, ...): users}`` against the single-column counts.

    ``check=False`` skips the validation (for tables counted from the same data as the singles).

    Raises
    ------
    InputError : a key of the wrong length, a bad count, a total other than n, or a known cell
        whose marginal disagrees with the single-column counts.
    """
    cols = block_key(columns)
    name = "(" + ", ".join(cols) + ")"
    if len(cols) < 2 or len(set(cols)) != len(cols):
        raise InputError(f"block {name}: a block is 2 or more distinct columns, e.g. ('age', 'sex').")
    for c in cols:
        if c not in singles:
            raise ColumnNotFoundError(c, tuple(singles))
    if not check and isinstance(table, Mapping):
        return _assemble(cols, table, singles)
    items = list(table.items()) if isinstance(table, Mapping) else list(table)
    known: dict[tuple[Any, ...], int] = {}
    red: dict[tuple[Any, ...], int] = {}
    for key, raw in items:
        cell = tuple(key) if isinstance(key, (tuple, list)) else (key,)
        if len(cell) != len(cols):
            raise InputError(
                f"block {name}: cell {key!r} has {len(cell)} values; give one value per column, e.g. "
                f"{tuple('v' + str(i) for i in range(len(cols)))!r}."
            )
        try:
            x = float(raw)
        except (TypeError, ValueError):
            raise InputError(
                f"block {name}: the count of cell {key!r} is {raw!r}; counts are whole numbers of users."
            ) from None
        if not math.isfinite(x) or x < 0 or x != math.floor(x):
            raise InputError(
                f"block {name}: the count of cell {key!r} is {raw!r}; counts are whole numbers >= 0 of users."
            )
        if x == 0:
            continue
        target = red if any(is_redacted(v) for v in cell) else known
        target[cell] = target.get(cell, 0) + int(x)
    total = sum(known.values()) + sum(red.values())
    if total != n:
        raise InputError(
            f"block {name} counts {total:,} users but the single columns count {n:,}; every user is in one cell "
            "(a withheld value is the marker REDACTED, not a missing cell)."
        )
    # every fully known cell's marginal must fit the single-column counts (equal when nothing is redacted)
    for j, c in enumerate(cols):
        marg: dict[Any, int] = {}
        for cell, x in known.items():
            marg[cell[j]] = marg.get(cell[j], 0) + x
        for v, x in marg.items():
            have = singles[c].get(v, 0)
            if x > have or (not red and x != have):
                raise InputError(
                    f"block {name}: value {v!r} of column {c!r} has {x:,} users in the block but {have:,} in the "
                    "column's own counts; the tables must count the same users."
                )
    return _assemble(cols, {**known, **red}, singles)


def _assemble(
    cols: tuple[str, ...], table: Mapping[tuple[Any, ...], int], singles: Mapping[str, Mapping[Any, int]]
) -> BlockCounts:
    """The block of a checked (or trusted) table with positive counts."""
    support = {c: len(singles[c]) for c in cols}
    if any(REDACTED in cell for cell in table):
        known = {cell: x for cell, x in table.items() if x > 0 and REDACTED not in cell}
        red = {cell: x for cell, x in table.items() if x > 0 and REDACTED in cell}
    else:
        known, red = {cell: x for cell, x in table.items() if x > 0}, {}
    kv = sorted(known.items(), key=lambda kx: kx[1])
    rv = list(red.items())
    red_max = [
        min(x, math.prod(support[c] for c, v in zip(cols, cell, strict=True) if is_redacted(v)))
        for cell, x in rv
    ]
    return BlockCounts(
        columns=cols,
        counts=np.array([x for _, x in kv], dtype=np.int64),
        values=tuple(c for c, _ in kv),
        redacted_counts=np.array([x for _, x in rv], dtype=np.int64),
        redacted_values=tuple(c for c, _ in rv),
        redacted_max=np.array(red_max, dtype=np.int64),
    )


def _pareto(s: NDArray[np.int64], logw: NDArray[np.float64]) -> tuple[NDArray[np.int64], NDArray[np.float64]]:
    """The points of (s, logw) not dominated (smaller s and smaller logw are better), s ascending."""
    order = np.lexsort((logw, s))
    s, logw = s[order], logw[order]
    keep = np.ones(s.size, dtype=bool)
    if s.size > 1:
        keep[1:] = logw[1:] < np.minimum.accumulate(logw)[:-1]
    return s[keep], logw[keep]


def block_options(block: BlockCounts, n: int) -> tuple[NDArray[np.int64], NDArray[np.float64]]:
    """Theorem-2 sacrifice choices of a block: (users sacrificed, log of the kept-cell bound W).

    Family A sacrifices every redacted user and the r rarest known cells (W = known - r); family B
    keeps the redacted users as at most ``redacted_cells`` unknown cells (W = known - r +
    redacted_cells). Theorem 3's W = 1 / p_(r+1) is never below known - r, so it adds nothing once
    the cells are known; the Pareto set of both families is returned (s ascending, logw descending).
    """
    return cell_options(block.counts, block.redacted, block.redacted_cells, n)


def cell_options(
    counts: NDArray[np.int64], redacted: int, redacted_cells: int, n: int
) -> tuple[NDArray[np.int64], NDArray[np.float64]]:
    """The choices of :func:`block_options` for known cell counts (ascending), ``redacted`` users in
    unknown cells and at most ``redacted_cells`` such cells."""
    c = counts
    m = c.size
    red = int(redacted)
    csum = np.concatenate([[0], np.cumsum(c)]).astype(np.int64)
    parts_s: list[NDArray[np.int64]] = []
    parts_l: list[NDArray[np.float64]] = []
    if m:
        parts_s.append(red + csum[:-1])
        parts_l.append(np.log(np.arange(m, 0, -1, dtype=np.float64)))
    if red:
        parts_s.append(csum)
        parts_l.append(np.log(np.arange(m, -1, -1, dtype=np.float64) + max(1, redacted_cells)))
    if not parts_s:  # no users at all: nothing to sacrifice, one (empty) cell
        return np.zeros(1, dtype=np.int64), np.zeros(1)
    return _pareto(np.concatenate(parts_s), np.concatenate(parts_l))


def thin_options(
    s: NDArray[np.int64], logw: NDArray[np.float64], limit: int = _MAX_BLOCK_OPTIONS
) -> tuple[NDArray[np.int64], NDArray[np.float64]]:
    """At most ``limit`` of the choices (the first ones and evenly spaced): any subset stays valid."""
    if s.size <= limit:
        return s, logw
    idx = np.unique(
        np.concatenate(
            [np.arange(limit // 2), np.linspace(0, s.size - 1, limit // 2).round().astype(np.int64)]
        )
    )
    return s[idx], logw[idx]


# --- exact minimum over partitions: dynamic programme over subsets of columns -------------------

NumbaList: Any = None
"""``numba.typed.List``, set by :func:`_numba_names` before :func:`_partition_dp` compiles."""
types: Any = None
"""``numba.types``, likewise."""


def _numba_names() -> dict[str, Any]:
    # lazy: start-up time
    import numba  # lazy: start-up time
    from numba.typed import List

    return {"NumbaList": List, "types": numba.types}


@njit(cache=True)
def _filter(
    s: NDArray[np.int64], lw: NDArray[np.float64], limit: int
) -> tuple[NDArray[np.int64], NDArray[np.float64]]:
    order = np.argsort(s, kind="mergesort")
    keep = np.zeros(s.size, dtype=np.bool_)
    best = np.inf
    i = 0
    while i < order.size:  # ties of s: keep the smallest logw among them
        j = i
        lo = lw[order[i]]
        arg = order[i]
        while j + 1 < order.size and s[order[j + 1]] == s[order[i]]:
            j += 1
            if lw[order[j]] < lo:
                lo = lw[order[j]]
                arg = order[j]
        if lo < best:
            keep[arg] = True
            best = lo
        i = j + 1
    idx = order[keep[order]]
    if idx.size > limit:
        pick = np.unique(np.round(np.linspace(0, idx.size - 1, limit)).astype(np.int64))
        idx = idx[pick]
    return s[idx], lw[idx]


@njit(cache=True, names=lambda: _numba_names())
def _partition_dp(
    p: int,
    masks: NDArray[np.int64],
    low: NDArray[np.int64],
    starts: NDArray[np.int64],
    opt_s: NDArray[np.int64],
    opt_l: NDArray[np.float64],
    n: int,
    tau: float,
    cap: float,
    limit: int,
    hgrid: NDArray[np.float64],
    step: float,
) -> float:
    """min over partitions of the p columns into the atoms (bitmasks), over each atom's choices, of
    s / n + tau exp(logw); only values <= cap are searched (inf is returned when there is none).

    States are the sets of covered columns, visited in increasing order; the atom added to a state
    is one that holds its lowest uncovered column, so every partition is built exactly once.
    A state's point (s, L) is dropped when s / n + hgrid[j, floor(L / step)] > best for an uncovered
    column j: hgrid[j, g] = min over j's single choices of s_j / n + tau exp(g step + logw_j) is a
    lower bound on what the part holding j adds (a block holding j is never better than j alone).
    """
    size = 1 << p
    full = size - 1
    fs = NumbaList.empty_list(types.int64[:])
    fl = NumbaList.empty_list(types.float64[:])
    for _ in range(size):
        fs.append(np.zeros(0, dtype=np.int64))
        fl.append(np.zeros(0, dtype=np.float64))
    fs[0] = np.zeros(1, dtype=np.int64)
    fl[0] = np.zeros(1, dtype=np.float64)
    best = cap
    found = False
    s_cap = cap * n
    for state in range(full):
        cs = fs[state]
        if cs.size == 0:
            continue
        cl = fl[state]
        e = 0
        while (state >> e) & 1:
            e += 1
        keep = np.ones(cs.size, dtype=np.bool_)
        for i in range(cs.size):
            g = min(int(cl[i] / step), hgrid.shape[1] - 1)
            lb = 0.0
            for j in range(p):
                if not (state >> j) & 1 and hgrid[j, g] > lb:
                    lb = hgrid[j, g]
            if cs[i] / n + lb > best:
                keep[i] = False
        cs = cs[keep]
        cl = cl[keep]
        for a in range(masks.size):
            if low[a] != e or (masks[a] & state) != 0:
                continue
            target = state | masks[a]
            a0, a1 = starts[a], starts[a + 1]
            out_s = np.empty(cs.size * (a1 - a0), dtype=np.int64)
            out_l = np.empty(cs.size * (a1 - a0), dtype=np.float64)
            k = 0
            for i in range(cs.size):
                for o in range(a0, a1):
                    s = cs[i] + opt_s[o]
                    if s > s_cap:
                        break  # choices are sorted by s
                    lw = cl[i] + opt_l[o]
                    v = s / n + tau * math.exp(lw)
                    if v <= best:
                        if target == full:
                            best = v
                            found = True
                            s_cap = best * n
                        else:
                            out_s[k] = s
                            out_l[k] = lw
                            k += 1
            if target != full and k > 0:
                ms = np.concatenate((fs[target], out_s[:k]))
                ml = np.concatenate((fl[target], out_l[:k]))
                ms, ml = _filter(ms, ml, limit)
                fs[target] = ms
                fl[target] = ml
        fs[state] = np.zeros(0, dtype=np.int64)
        fl[state] = np.zeros(0, dtype=np.float64)
    return best if found else np.inf


@dataclass(frozen=True)
class Atom:
    """One part of a partition: its columns (indices into J) and its sacrifice choices."""

    columns: tuple[int, ...]
    s: NDArray[np.int64]
    logw: NDArray[np.float64]


def partition_minimum(p: int, atoms: Sequence[Atom], n: int, thr: int, cap: float) -> float:
    """Exact min over partitions of range(p) into ``atoms`` of the block bound at threshold ``thr``,
    searched below ``cap`` (returns inf when no partition is at or below it). Every single column must
    be an atom."""
    if thr <= 0:
        return 0.0
    tau = thr / n
    l_max = math.log(1.0 / tau) + 1.0
    grid = np.linspace(0.0, l_max, 257)
    step = float(grid[1])
    hgrid = np.empty((p, grid.size))
    for a in atoms:
        if len(a.columns) == 1:
            hgrid[a.columns[0]] = np.min(
                a.s[None, :] / n + tau * np.exp(grid[:, None] + a.logw[None, :]), axis=1
            )
    masks = np.array([sum(1 << j for j in a.columns) for a in atoms], dtype=np.int64)
    low = np.array([min(a.columns) for a in atoms], dtype=np.int64)
    thinned = [thin_options(a.s, a.logw) for a in atoms]
    starts = np.concatenate([[0], np.cumsum([t[0].size for t in thinned])]).astype(np.int64)
    opt_s = np.concatenate([t[0] for t in thinned]).astype(np.int64)
    opt_l = np.concatenate([t[1] for t in thinned]).astype(np.float64)
    return float(_partition_dp(p, masks, low, starts, opt_s, opt_l, n, tau, cap, _MAX_FRONT, hgrid, step))
