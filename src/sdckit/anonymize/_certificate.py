"""A certificate for local suppression: the cells suppressed, a proven lower bound on the fewest cells
any release meeting the same guarantee needs, and the gap between them; and the exact mode.

The problem (identical rows, the decoys' and the exact mode's guarantee). The input has n rows over
p key columns, each cell a value or missing. A release sets some present cells to missing
("suppresses" them; a cell missing in the input stays missing and costs nothing). A released row
is read cell for cell with a missing cell a value of its own (``*``, the same whether it was
missing in the input or suppressed). The release is *k-anonymous in identical rows* when every
released row equals at least k - 1 other released rows. Cost: the number of suppressed cells.

On the distinct input rows o (counts c_o) a row of o can be released as any pattern t "below" o
(t_j = o_j or t_j = ``*``), at cost(o, t) = the present cells of o that t hides. N(t), the input rows
that can be released as t (those equal to t on t's present cells, whatever elsewhere), bounds the
released group of t, so only patterns with N(t) >= k can occur. The mixed-integer program

    minimise   sum_(o,t) cost(o, t) x_(o,t)
    subject to sum_t x_(o,t) = c_o                 (every row released once)
               x_(o,t) <= c_o y_t                  (a row goes to t only if t is used)
               sum_o x_(o,t) >= k y_t              (a used pattern holds >= k rows)
               x_(o,t) integer >= 0, y_t in {0, 1}

is exact (its optimum is the fewest cells); its linear relaxation (y_t in [0, 1], x real) is a lower
bound, rounded up since cells are whole. The *floor* (every row at its own cheapest pattern with
N(t) >= k, groups ignored) is a weaker bound that scales to any size; it is what the relaxation
gives when it is too large to solve in the time allowed. Between the two, a Lagrangian relaxation
(:func:`lagrangian_bound`) reaches the relaxation's value by subgradient steps on millions of pairs.

The wildcard reading (``method="sdcmicro"``: a missing cell matches any value) has its own, weak,
bound (:func:`wildcard_floor`).

Every bound is checked against a brute-force minimum on small tables (tests/anonymize/test_certificate.py).
"""

from __future__ import annotations

import itertools
import math
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray

from sdckit._scale._jit import njit
from sdckit.anonymize._decoys import decoy_plan

__all__ = [
    "Candidates", "Certificate", "candidates", "certify", "lagrangian_bound", "optimal_release", "row_floor",
    "wildcard_floor",
]

MAX_LP_CANDIDATES = 400_000
"""Above this many (row, pattern) candidates the relaxation is not built; the Lagrangian bound is used."""

MAX_LAGRANGE_CANDIDATES = 4_000_000
"""Above this many (row, pattern) candidates no Lagrangian bound either; the floor is the bound."""


@dataclass(frozen=True)
class Certificate:
    """Cells suppressed, a proven lower bound on the fewest cells, and the gap (cells - bound) / cells."""

    cells: int
    lower_bound: int
    method: str
    """How the bound was proven: ``"mip"`` (the exact program's bound), ``"lp"`` (its relaxation),
    ``"lagrangian"`` (a Lagrangian relaxation of it), ``"floor"`` (each row's cheapest admissible pattern) or
    ``"wildcard-floor"``."""
    seconds: float = 0.0
    lagrange: tuple[Candidates, NDArray[np.float64]] | None = field(default=None, repr=False, compare=False)
    """The candidates and the best multipliers of a Lagrangian bound (they guide :func:`lagrangian_release`)."""

    @property
    def gap(self) -> float:
        """(cells - bound) / cells: the release is at most this share above the fewest cells (0 when optimal)."""
        return 0.0 if self.cells == 0 else max(0.0, (self.cells - self.lower_bound) / self.cells)

    def as_dict(self) -> dict[str, float | int | str]:
        return {
            "cells": self.cells,
            "lower_bound": self.lower_bound,
            "gap": round(self.gap, 6),
            "bound_method": self.method,
        }


def _group_ids(cols: NDArray[np.int32]) -> NDArray[np.int64]:
    """Per row, an id of its values on ``cols`` (exact: mixed radix, or numpy's row sort)."""
    n, m = cols.shape
    if m == 0:
        return np.zeros(n, dtype=np.int64)
    base = cols.max(axis=0, initial=-1).astype(np.int64) + 2
    if float(np.sum(np.log2(base.astype(np.float64)))) > 62:
        return np.unique(cols, axis=0, return_inverse=True)[1].ravel().astype(np.int64)
    key = np.zeros(n, dtype=np.int64)
    for j in range(m):
        key = key * base[j] + (cols[:, j].astype(np.int64) + 1)
    return key


def _compatible_counts(origins: NDArray[np.int32], counts: NDArray[np.int64], kept: tuple[int, ...]) -> NDArray[np.int64]:
    """Per distinct row o, the input rows equal to o on the columns ``kept`` (N of o with the rest hidden)."""
    ids = _group_ids(np.ascontiguousarray(origins[:, list(kept)]))
    _, inv = np.unique(ids, return_inverse=True)
    inv = inv.ravel()
    return np.bincount(inv, weights=counts.astype(np.float64)).astype(np.int64)[inv]


def _subsets(p: int) -> list[tuple[int, ...]]:
    return [tuple(j for j in range(p) if mask >> j & 1) for mask in range(1 << p)]


MAX_FLOOR_SETS = 4096
"""Kept sets the floor examines, largest first; a row not settled by then is bounded by the sizes
left (every smaller kept set hides more cells)."""


def row_floor(origins: NDArray[np.int32], counts: NDArray[np.int64], k: int) -> NDArray[np.int64]:
    """Per distinct row, the fewest cells any admissible pattern hides: min over kept sets M of its
    present columns with N >= k of |present| - |M| (the empty M always qualifies when n >= k).

    Kept sets are examined from the largest down. Once every row's floor is at most what the next
    size would cost, or ``MAX_FLOOR_SETS`` sets were examined (many keys), the rows not settled get
    |present| - (size - 1), the least a smaller kept set can hide: still a proven lower bound.
    """
    g, p = origins.shape
    present = origins >= 0
    n_present = present.sum(axis=1).astype(np.int64)
    best = n_present.copy()
    settled = np.zeros(g, dtype=bool)
    examined = 0
    for size in range(p, 0, -1):
        if bool(np.all(settled | (best <= n_present - size))):
            return best
        if examined + math.comb(p, size) > MAX_FLOOR_SETS:
            # not examined: sizes <= size; an unsettled row hides at least |present| - size cells
            return np.where(settled, best, np.minimum(best, np.maximum(n_present - size, 0)))
        for kept in itertools.combinations(range(p), size):
            examined += 1
            inside = present[:, list(kept)].all(axis=1)
            if not inside.any():
                continue
            n_t = _compatible_counts(origins, counts, kept)
            ok = inside & (n_t >= k)
            best = np.where(ok, np.minimum(best, n_present - size), best)
            settled |= ok
    return best


@dataclass(frozen=True)
class Candidates:
    """The (row, pattern) pairs of the program: row ``origin[e]`` released as pattern ``pattern[e]``
    (an index into ``patterns``) at ``cost[e]`` cells."""

    origin: NDArray[np.int64]
    pattern: NDArray[np.int64]
    cost: NDArray[np.int64]
    patterns: NDArray[np.int32]


def candidates(origins: NDArray[np.int32], counts: NDArray[np.int64], k: int, limit: int | None = None) -> Candidates | None:
    """Every admissible (row, pattern) pair (N(pattern) >= k); None when there are more than ``limit``
    (or more than 2^12 kept sets to look at)."""
    g, p = origins.shape
    if p > 12:
        return None
    present = origins >= 0
    n_present = present.sum(axis=1)
    e_origin: list[NDArray[np.int64]] = []
    e_cost: list[NDArray[np.int64]] = []
    e_codes: list[NDArray[np.int32]] = []
    total = 0
    for kept in _subsets(p):
        inside = present[:, list(kept)].all(axis=1) if kept else np.ones(g, dtype=bool)
        n_t = _compatible_counts(origins, counts, kept) if kept else np.full(g, int(counts.sum()))
        rows = np.flatnonzero(inside & (n_t >= k))
        if rows.size == 0:
            continue
        total += rows.size
        if limit is not None and total > limit:
            return None
        codes = np.full((rows.size, p), -1, dtype=np.int32)
        codes[:, list(kept)] = origins[rows][:, list(kept)]
        e_origin.append(rows.astype(np.int64))
        e_cost.append((n_present[rows] - len(kept)).astype(np.int64))
        e_codes.append(codes)
    if not e_origin:
        return Candidates(np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros((0, p), np.int32))
    all_codes = np.concatenate(e_codes)
    patterns, pattern = np.unique(all_codes, axis=0, return_inverse=True)
    return Candidates(np.concatenate(e_origin), pattern.ravel().astype(np.int64), np.concatenate(e_cost), patterns)


def _program(
    cand: Candidates, counts: NDArray[np.int64], k: int
) -> tuple[Any, NDArray[np.float64], NDArray[np.float64], int, int]:
    """The constraints (A, lower, upper) over the variables [x_e ..., y_t ...]."""
    import scipy.sparse as sp  # lazy: start-up time (import sdckit.anonymize stays light)

    e, t, g = cand.origin.size, cand.patterns.shape[0], counts.size
    c_o = counts[cand.origin].astype(np.float64)
    ar = np.arange(e)
    # rows 0..g-1: sum_t x = c_o;  g..g+e-1: x_e - c_o y_t <= 0;  g+e..: k y_t - sum x <= 0
    rows = np.concatenate([cand.origin, g + ar, g + ar, g + e + cand.pattern, g + e + np.arange(t)])
    cols = np.concatenate([ar, ar, e + cand.pattern, ar, e + np.arange(t)])
    vals = np.concatenate([np.ones(e), np.ones(e), -c_o, -np.ones(e), np.full(t, float(k))])
    a = sp.csr_matrix((vals, (rows, cols)), shape=(g + e + t, e + t))
    lo = np.concatenate([counts.astype(np.float64), np.full(e + t, -np.inf)])
    hi = np.concatenate([counts.astype(np.float64), np.zeros(e + t)])
    return a, lo, hi, e, t


def lp_bound(cand: Candidates, counts: NDArray[np.int64], k: int, time_limit: float) -> float | None:
    """The relaxation's optimum (HiGHS), None when it does not finish within ``time_limit`` seconds."""
    import scipy.optimize as sopt  # lazy: start-up time (import sdckit.anonymize stays light)

    a, lo, hi, e, t = _program(cand, counts, k)
    eq = a[: counts.size]
    ub = a[counts.size :]
    cost = np.concatenate([cand.cost.astype(np.float64), np.zeros(t)])
    bounds = np.column_stack([np.zeros(e + t), np.concatenate([counts[cand.origin].astype(np.float64), np.ones(t)])])
    res = sopt.linprog(
        cost, A_ub=ub, b_ub=hi[counts.size :], A_eq=eq, b_eq=lo[: counts.size], bounds=bounds,
        method="highs", options={"time_limit": float(time_limit), "presolve": True},
    )
    if res.status != 0:
        return None
    return float(res.fun)


@njit(cache=True, nogil=True)
def _lagrange_value(
    ptr: NDArray[np.int64], origin: NDArray[np.int64], cost: NDArray[np.float64], count: NDArray[np.float64],
    lam: NDArray[np.float64], k: int,
) -> tuple[float, NDArray[np.float64]]:  # pragma: no cover - compiled
    """The Lagrangian subproblems, one per pattern (candidates sorted by pattern, ``ptr`` its CSR
    pointers): sum over patterns of min(0, best use of the pattern), and per distinct row the rows
    that use gives it. A used pattern takes every row of negative reduced cost and, while it holds
    fewer than k rows, the cheapest of the rest, one row at a time (rows of one distinct row are
    interchangeable, so this greedy is the exact integer minimum)."""
    used = np.zeros(count.size)
    total = 0.0
    for t in range(ptr.size - 1):
        a, b = ptr[t], ptr[t + 1]
        if b == a:
            continue
        rc = cost[a:b] - lam[origin[a:b]]
        if rc.min() >= 0.0:
            continue  # using the pattern costs >= 0: it is left unused
        idx = np.argsort(rc)
        held = 0.0
        value = 0.0
        takes = np.zeros(b - a)
        for q in idx:
            r = rc[q]
            c = count[origin[a + q]]
            take = c if r < 0.0 else min(c, max(0.0, k - held))
            if take <= 0.0:
                break
            takes[q] = take
            held += take
            value += take * r
        if value < 0.0:
            total += value
            for q in range(b - a):
                used[origin[a + q]] += takes[q]
    return total, used


def lagrangian_bound(
    cand: Candidates, counts: NDArray[np.int64], k: int, *, upper: float, time_limit: float, max_iter: int = 3000,
) -> tuple[float, NDArray[np.float64]]:
    """A lower bound on the program's optimum by Lagrangian relaxation of "every row released once".

    With multipliers lam_o (one per distinct row), the program without the constraints
    sum_t x_(o,t) = c_o splits into one problem per pattern t:

        L(lam) = sum_o lam_o c_o + sum_t min(0, min { sum_o (cost(o,t) - lam_o) x_(o,t) :
                                                     k <= sum_o x_(o,t), 0 <= x_(o,t) <= c_o integer })

    and L(lam) <= the optimum for *every* lam (weak duality: an optimal release is feasible for each
    pattern's problem and the added term sum_o lam_o (c_o - sum_t x_(o,t)) is 0 on it). Its maximum
    over lam equals the linear relaxation's optimum (each pattern's problem is a fractional knapsack
    with an integral optimum). lam starts at each row's floor (then L is the floor) and is improved by
    subgradient steps (Polyak, towards ``upper``, the cells of a known release) within
    ``time_limit`` seconds; the best L seen is returned (with its multipliers), a proven bound
    whatever the iterations did.
    Source: Fisher (1981), "The Lagrangian relaxation method for solving integer programming
    problems", Management Science 27(1).
    """
    t0 = time.perf_counter()
    order = np.argsort(cand.pattern, kind="stable")
    origin = cand.origin[order]
    cost = cand.cost[order].astype(np.float64)
    ptr = np.searchsorted(cand.pattern[order], np.arange(cand.patterns.shape[0] + 1)).astype(np.int64)
    count = counts.astype(np.float64)
    lam = np.full(counts.size, np.inf)
    np.minimum.at(lam, origin, cost)
    lam[~np.isfinite(lam)] = 0.0  # a row with no candidate: never happens when n >= k (all hidden fits)
    best, best_lam = -np.inf, lam.copy()
    theta, stalled = 2.0, 0
    for _ in range(max_iter):
        total, used = _lagrange_value(ptr, origin, cost, count, lam, k)
        value = float(lam @ count + total)
        if value > best + 1e-9:
            best, best_lam, stalled = value, lam.copy(), 0
        else:
            stalled += 1
            if stalled >= 20:
                theta, stalled = theta / 2.0, 0
        step = count - used
        norm = float(step @ step)
        if norm == 0.0 or theta < 1e-4 or time.perf_counter() - t0 > time_limit:
            break
        lam = lam + theta * max(upper - value, 1.0) / norm * step
    return best, best_lam


def certify(
    origins: NDArray[np.int32], counts: NDArray[np.int64], k: int, cells: int, *, time_limit: float = 30.0,
    max_candidates: int = MAX_LP_CANDIDATES, lagrangian: bool = True,
) -> Certificate:
    """The certificate of a release with ``cells`` suppressed cells meeting identical-row k on the
    distinct input rows ``origins`` (counts ``counts``): the relaxation's bound when it is small
    enough to solve in ``time_limit`` seconds, else (``lagrangian``) the Lagrangian bound within the
    time left, else the floor."""
    t0 = time.perf_counter()
    if k <= 1 or origins.shape[0] == 0:
        return Certificate(cells, 0, "floor", 0.0)
    floor = int(np.dot(row_floor(origins, counts, k), counts))
    bound, method = floor, "floor"
    lagrange = None
    if cells > floor and time_limit > 0:
        cand = candidates(origins, counts, k, limit=max(max_candidates, MAX_LAGRANGE_CANDIDATES if lagrangian else 0))
        if cand is not None and cand.origin.size <= max_candidates:
            lp = lp_bound(cand, counts, k, time_limit)
            if lp is not None and math.ceil(lp - 1e-6) > bound:
                bound, method = math.ceil(lp - 1e-6), "lp"
            elif lp is not None:
                method = "lp"
        if cand is not None and method == "floor" and lagrangian:
            left = max(0.0, time_limit - (time.perf_counter() - t0))
            lag, lam = lagrangian_bound(cand, counts, k, upper=float(cells), time_limit=left)
            lagrange = (cand, lam)
            if math.ceil(lag - 1e-6) > bound:
                bound, method = math.ceil(lag - 1e-6), "lagrangian"
    return Certificate(cells, min(bound, cells), method, time.perf_counter() - t0, lagrange)


@njit(cache=True, nogil=True)
def _lagrange_greedy(
    ptr: NDArray[np.int64], origin: NDArray[np.int64], rc: NDArray[np.float64], rem: NDArray[np.int64],
    order: NDArray[np.int64], k: int,
) -> tuple[NDArray[np.int64], NDArray[np.int64], NDArray[np.int64]]:  # pragma: no cover - compiled
    """Patterns in ``order``: each takes, among the rows not yet placed, those of negative reduced
    cost and the cheapest others up to k rows, when that makes at least k rows at a negative total.
    Returns the (pattern, origin, rows) taken; ``rem`` is left with the rows not placed."""
    out_t, out_o, out_m = [0], [0], [0]
    for t in order:
        a, b = ptr[t], ptr[t + 1]
        for sweep in range(2):  # 0: is it worth it; 1: take the rows
            held = 0
            value = 0.0
            for q in range(a, b):
                avail = rem[origin[q]]
                if avail == 0:
                    continue
                take = avail if rc[q] < 0.0 else min(avail, max(0, k - held))
                if take <= 0:
                    break
                held += take
                value += take * rc[q]
                if sweep == 1:
                    rem[origin[q]] -= take
                    out_t.append(t)
                    out_o.append(origin[q])
                    out_m.append(take)
            if held < k or value >= 0.0:
                break
    return np.asarray(out_t[1:]), np.asarray(out_o[1:]), np.asarray(out_m[1:])


def lagrangian_release(
    origins: NDArray[np.int32], counts: NDArray[np.int64], k: int, cand: Candidates, lam: NDArray[np.float64],
    weight: NDArray[np.float64], rng: np.random.Generator,
) -> tuple[NDArray[np.int64], NDArray[np.int32], NDArray[np.int64]] | None:
    """A release guided by Lagrangian multipliers (a Lagrangian heuristic; Fisher 1981, section 6):
    per distinct row the released rows (origin, pattern codes, rows) it becomes, every pattern used
    by >= k rows.

    1. Patterns from the most profitable (the most negative subproblem value at ``lam``; ties in an
       order drawn from ``rng``) take the rows not yet placed as their subproblem would, when they
       get >= k rows at a negative reduced cost.
    2. A row left over joins a used pattern when that costs no more than its floor (the group only
       grows, so it stays >= k).
    3. The rest get the decoys among themselves (:func:`sdckit.anonymize._decoys.decoy_plan`, its
       random draws): groups of >= k rows; a pattern shared with step 1 only makes a group larger.
       None when fewer than k rows are left for it (the caller keeps the decoys' release).
    """
    rc = cand.cost.astype(np.float64) - lam[cand.origin]
    tie = np.asarray(rng.random(cand.origin.size))
    order = np.lexsort((tie, rc, cand.pattern))
    pat, org, rcs = cand.pattern[order], cand.origin[order], rc[order]
    n_pat = cand.patterns.shape[0]
    ptr = np.searchsorted(pat, np.arange(n_pat + 1)).astype(np.int64)
    count = counts.astype(np.float64)
    # each pattern's subproblem value (the Lagrangian kernel on one multiplier set, per pattern)
    value = np.zeros(n_pat)
    first = np.repeat(ptr[:-1], np.diff(ptr))
    before = np.cumsum(count[org]) - count[org]
    before -= before[first] if org.size else 0.0
    take = np.where(rcs < 0, count[org], np.clip(k - before, 0.0, count[org]))
    np.add.at(value, pat, take * rcs)
    p_order = np.lexsort((np.asarray(rng.random(n_pat)), value)).astype(np.int64)
    rem = counts.astype(np.int64).copy()
    t_1, o_1, m_1 = _lagrange_greedy(ptr, org, rcs, rem, p_order, k)
    codes_1 = cand.patterns[t_1]
    # 2. leftovers join a used pattern at no more than their floor
    used = np.zeros(n_pat, dtype=bool)
    used[t_1] = True
    floor = np.full(counts.size, np.iinfo(np.int64).max)
    np.minimum.at(floor, cand.origin, cand.cost)
    fits = used[cand.pattern] & (rem[cand.origin] > 0) & (cand.cost <= floor[cand.origin])
    e = np.flatnonzero(fits)
    e = e[np.lexsort((rng.random(e.size), cand.origin[e]))]
    e = e[np.r_[True, cand.origin[e][1:] != cand.origin[e][:-1]]] if e.size else e  # one per row
    o_2 = cand.origin[e]
    m_2 = rem[o_2].copy()
    rem[o_2] = 0
    codes_2 = cand.patterns[cand.pattern[e]]
    # 3. decoys among the rest
    rest = np.flatnonzero(rem > 0)
    o_3: list[int] = []
    m_3: list[int] = []
    c_3: list[tuple[int, ...]] = []
    if rest.size:
        if int(rem[rest].sum()) < k:  # too few to make a group of their own: the caller keeps the decoys
            return None
        plan = decoy_plan(origins[rest], rem[rest], k, weight, rng)
        for sub, lst in plan.targets.items():
            for t, m in lst:
                o_3.append(int(rest[sub]))
                m_3.append(int(m))
                c_3.append(t)
    codes_3 = np.asarray(c_3, dtype=np.int32).reshape(len(c_3), origins.shape[1])
    return (
        np.concatenate([o_1, o_2, np.asarray(o_3, dtype=np.int64)]).astype(np.int64),
        np.concatenate([codes_1, codes_2, codes_3]).astype(np.int32),
        np.concatenate([m_1, m_2, np.asarray(m_3, dtype=np.int64)]).astype(np.int64),
    )


@dataclass(frozen=True)
class OptimalResult:
    """The exact mode's release on the distinct rows: per candidate, how many rows take it."""

    cand: Candidates
    x: NDArray[np.int64]
    certificate: Certificate
    optimal: bool


def optimal_release(
    origins: NDArray[np.int32], counts: NDArray[np.int64], k: int, *, upper: int | None, rng: np.random.Generator,
    time_limit: float, tiebreak: NDArray[np.float64] | None = None,
) -> OptimalResult | None:
    """Solve the program with HiGHS (``scipy.optimize.milp``) within ``time_limit`` seconds.

    ``upper``: the cells of a known release (the decoys'), a cut-off that prunes the search. Among
    releases with the fewest cells one is chosen at random: every candidate's cost gets a
    perturbation drawn from ``rng`` (plus ``tiebreak[j]`` per hidden cell of key j, the importance),
    together below half a cell, so it only orders releases of equal cell count. Returns None when
    the program is too large or no release better than ``upper`` is found in time.
    """
    import scipy.optimize as sopt  # lazy: start-up time (import sdckit.anonymize stays light)

    t0 = time.perf_counter()
    cand = candidates(origins, counts, k, limit=MAX_LP_CANDIDATES)
    if cand is None or cand.origin.size == 0:
        return None
    n = int(counts.sum())
    a, lo, hi, e, t = _program(cand, counts, k)
    hidden = (origins[cand.origin] >= 0) & (cand.patterns[cand.pattern] < 0)
    extra = rng.random(e)
    if tiebreak is not None:
        extra = extra + hidden @ np.asarray(tiebreak, dtype=np.float64)
    extra = extra / (2.0 * n * (1.0 + float(extra.max(initial=0.0))))  # at most 0.5 cells in all
    cost = np.concatenate([cand.cost + extra, np.zeros(t)])
    constraints = [sopt.LinearConstraint(a, lo, hi)]
    if upper is not None:
        cut = np.concatenate([cost[:e], np.zeros(t)])
        constraints.append(sopt.LinearConstraint(cut[None, :], -np.inf, upper + 0.5))
    ub = np.concatenate([counts[cand.origin].astype(np.float64), np.ones(t)])
    res = sopt.milp(
        cost, constraints=constraints, integrality=np.ones(e + t), bounds=sopt.Bounds(np.zeros(e + t), ub),
        options={"time_limit": float(time_limit), "mip_rel_gap": min(1e-4, 0.4 / max(1.0, float(upper or n)))},
    )
    if res.x is None:
        return None
    x = np.rint(res.x[:e]).astype(np.int64)
    cells = int(np.dot(x, cand.cost))
    dual = getattr(res, "mip_dual_bound", None)
    optimal = res.status == 0
    bound = cells if optimal else (math.ceil(float(dual) - 1e-6) if dual is not None and np.isfinite(dual) else 0)
    cert = Certificate(cells, min(bound, cells), "mip", time.perf_counter() - t0)
    return OptimalResult(cand, x, cert, optimal)


def wildcard_floor(sizes: NDArray[np.int64], k: int) -> int:
    """A lower bound on the cells any release needs for every wildcard group (a missing cell matching
    any value) to reach k, from the input's wildcard group sizes.

    A row i below k either loses a cell itself or gains at least k - size_i compatible rows, each of
    which must lose a cell (suppression only adds matches through the suppressed row's cells). So
    if fewer than m = min_i (k - size_i) rows lose cells, every unsafe row loses one: the rows that
    lose cells, and so the cells, number at least min(unsafe rows, m). Weak but proven.
    """
    below = sizes[sizes < k]
    if below.size == 0:
        return 0
    return int(min(below.size, int((k - below).min())))
