"""Bounds on the joint exposure Q_J(t) from single-column marginals (anonymity notes §2).

The two upper bounds share one shape. Sacrifice the r_j rarest values of each column j (mass
S_j(r_j)); every exposed user either holds a sacrificed value or sits in one of at most
prod_j w_j(r_j) cells made of kept values, each holding at most floor(t n) users:

    Q_J(t) <= sum_j S_j(r_j) + tau * prod_j w_j(r_j),       tau = floor(t n) / n,

with w_j(r) = m_j - r (Theorem 2, support form) or w_j(r) = 1 / p_{j,(r+1)} (Theorem 3 optimised
over c, which never uses the support size). Any choice of (r_j) gives a valid bound; the best one is
found on the Pareto frontier of (sum_j S_j, sum_j log w_j), built column by column in log space (a
dynamic programme over the columns). The frontier is exact while it stays small; beyond
``_MAX_POINTS`` points it is thinned (still a valid bound) and the chosen point is polished by
coordinate descent.
"""

from __future__ import annotations

import math
import weakref
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from sdckit._checks import BoundMethod, as_scalar_or_array, check_method, threshold
from sdckit.risk._counts._blocks import (
    MAX_EXACT_BLOCK_COLUMNS,
    Atom,
    block_options,
    cell_options,
    partition_minimum,
)
from sdckit.risk._counts._marginals import Marginals

_MAX_POINTS = 4096  # frontier size kept per column step (exact below it)
_MAX_OPTIONS = 512  # sacrifice choices r_j tried per column in the frontier (all in the polish)
_ROUND_UP = 1.0 + 1e-12  # float sums of logs: round the bound toward privacy


@dataclass(frozen=True)
class _Options:
    """Sacrifice choices of one column: r = 0 .. m - 1 rarest values removed."""

    s: NDArray[np.int64]  # users holding the r rarest values (numerator of S_j(r))
    logw: NDArray[np.float64]  # log w_j(r)


def _options(counts: NDArray[np.int64], n: int, kind: str) -> _Options:
    m = counts.size
    s = np.concatenate([[0], np.cumsum(counts)[:-1]]).astype(np.int64)
    if kind == "theorem2":
        logw = np.log(np.arange(m, 0, -1, dtype=np.float64))  # m - r kept values
    else:
        logw = math.log(n) - np.log(counts.astype(np.float64))  # 1 / p_(r+1) = n / c_(r+1)
    return _Options(s, logw)


def _thin(size: int, limit: int, logw: NDArray[np.float64]) -> NDArray[np.int64]:
    """At most ``limit`` indices of 0..size-1: the first ones, evenly spaced, and spaced in log w."""
    head = np.arange(min(size, limit // 4))
    even = np.linspace(0, size - 1, limit // 4).round().astype(np.int64)
    targets = np.linspace(logw[0], logw[-1], limit // 2)
    by_w = np.clip(np.searchsorted(-logw, -targets), 0, size - 1)
    return np.unique(np.concatenate([head, even, by_w]))


@dataclass
class _Frontier:
    s: NDArray[np.int64]
    logw: NDArray[np.float64]
    parents: list[tuple[NDArray[np.int64], NDArray[np.int64]]]  # per column: (row of previous, r)
    exact: bool

    def choice(self, i: int) -> list[int]:
        """The sacrifice vector r of frontier point i."""
        r: list[int] = []
        for parent, opt in reversed(self.parents):
            r.append(int(opt[i]))
            i = int(parent[i])
        return r[::-1]


def _frontier(options: Sequence[_Options], s_cap: float, logw_cap: float) -> _Frontier:
    """Pareto frontier of (sum S, sum log w) with sum S <= s_cap and sum log w <= logw_cap."""
    s = np.zeros(1, dtype=np.int64)
    lw = np.zeros(1)
    parents: list[tuple[NDArray[np.int64], NDArray[np.int64]]] = []
    exact = True
    for opt in options:
        r_idx = np.arange(opt.s.size)
        if opt.s.size > _MAX_OPTIONS:
            r_idx = _thin(opt.s.size, _MAX_OPTIONS, opt.logw)
            exact = False
        cs = (s[:, None] + opt.s[None, r_idx]).ravel()
        cl = (lw[:, None] + opt.logw[None, r_idx]).ravel()
        rows = np.repeat(np.arange(s.size), r_idx.size)
        rs = np.tile(r_idx, s.size)
        keep = (cs <= s_cap) & (cl <= logw_cap)
        cs, cl, rows, rs = cs[keep], cl[keep], rows[keep], rs[keep]
        if cs.size == 0:
            return _Frontier(cs, cl, [*parents, (rows, rs)], exact)
        order = np.lexsort((cl, cs))
        cs, cl, rows, rs = cs[order], cl[order], rows[order], rs[order]
        best_before = np.minimum.accumulate(cl)
        pareto = np.ones(cs.size, dtype=bool)
        pareto[1:] = cl[1:] < best_before[:-1]
        cs, cl, rows, rs = cs[pareto], cl[pareto], rows[pareto], rs[pareto]
        if cs.size > _MAX_POINTS:
            pick = np.unique(np.linspace(0, cs.size - 1, _MAX_POINTS).round().astype(np.int64))
            cs, cl, rows, rs = cs[pick], cl[pick], rows[pick], rs[pick]
            exact = False
        s, lw = cs, cl
        parents.append((rows, rs))
    return _Frontier(s, lw, parents, exact)


def _value(s: NDArray[np.int64] | int, logw: Any, n: int, tau: float) -> Any:
    return np.asarray(s) / n + tau * np.exp(logw)


def _polish(options: Sequence[_Options], r: list[int], n: int, tau: float) -> tuple[float, list[int]]:
    """Coordinate descent over each column's full set of choices, from ``r`` (never worse)."""
    r = list(r)
    s_tot = int(sum(o.s[ri] for o, ri in zip(options, r, strict=True)))
    l_tot = float(sum(o.logw[ri] for o, ri in zip(options, r, strict=True)))
    best = float(_value(s_tot, l_tot, n, tau))
    for _ in range(50):
        improved = False
        for j, o in enumerate(options):
            s_rest = s_tot - int(o.s[r[j]])
            l_rest = l_tot - float(o.logw[r[j]])
            f = _value(s_rest + o.s, l_rest + o.logw, n, tau)
            i = int(np.argmin(f))
            if f[i] < best * (1 - 1e-12):
                best, r[j] = float(f[i]), i
                s_tot, l_tot = s_rest + int(o.s[i]), l_rest + float(o.logw[i])
                improved = True
        if not improved:
            break
    return best, r


def _upper_min(options: Sequence[_Options], n: int, thr: int, cap: float | None = None) -> tuple[float, bool]:
    """min over r of sum_j S_j(r_j) + tau prod_j w_j(r_j), capped at 1, and whether it is exact.

    Any r gives a valid bound. With ``cap``, only values <= ``cap`` are searched for: a result above
    ``cap`` (then the value at r = 0) means there is none.
    """
    tau = thr / n
    if tau <= 0:
        return 0.0, True
    if cap is None:
        u, _ = _polish(options, [0] * len(options), n, tau)  # a good start makes the frontier small
        limit = u = min(u, 1.0)
    else:
        u = min(1.0, float(_value(0, sum(float(o.logw[0]) for o in options), n, tau)))
        limit = min(u, cap)
    logw_cap = math.log(limit / tau) + 1e-9 if limit > 0 else -math.inf
    front = _frontier(options, s_cap=limit * n, logw_cap=logw_cap)
    if front.s.size:
        f = _value(front.s, front.logw, n, tau)
        i = int(np.argmin(f))
        if f[i] < u:
            u = float(f[i])
            if not front.exact:
                u, _ = _polish(options, front.choice(i), n, tau)
    return min(1.0, u * _ROUND_UP), front.exact


def _curve_min(options: Sequence[_Options], n: int, thr: NDArray[np.int64]) -> NDArray[np.float64]:
    """The same minimum for many thresholds at once: one frontier, evaluated for every tau."""
    tau = thr.astype(np.float64) / n
    out = np.zeros(tau.shape)
    pos = tau > 0
    if not np.any(pos):
        return out
    front = _frontier(options, s_cap=n, logw_cap=math.log(1.0 / float(tau[pos].min())) + 1e-9)
    taus = tau[pos]
    if front.s.size == 0:
        out[pos] = 1.0
        return out
    vals = np.empty(taus.size)
    for a in range(0, taus.size, 256):  # blocks keep the (tau x frontier) matrix small
        f = front.s[None, :] / n + taus[a : a + 256, None] * np.exp(front.logw)[None, :]
        idx = np.argmin(f, axis=1)
        block = f[np.arange(idx.size), idx]
        if not front.exact:
            block = np.array(
                [
                    min(b, _polish(options, front.choice(int(i)), n, float(tt))[0])
                    for b, i, tt in zip(block, idx, taus[a : a + 256], strict=True)
                ]
            )
        vals[a : a + 256] = block
    out[pos] = np.minimum(1.0, vals * _ROUND_UP)
    return out


def _lower(marginals: Marginals, thr: NDArray[np.int64]) -> NDArray[np.float64]:
    """max over single columns and known blocks of their exposure: a column subset never has more
    exposure than the whole (anonymity notes §2). A block's redacted users are not counted (their
    true cells are unknown), which keeps it a lower bound."""
    out = np.zeros(thr.shape)
    parts = [marginals.counts[c] for c in marginals.columns] + [b.counts for b in marginals.blocks.values()]
    for counts in parts:
        csum = np.concatenate([[0], np.cumsum(counts)])
        out = np.maximum(out, csum[np.searchsorted(counts, thr, side="right")] / marginals.n)
    return out


def _atoms(marginals: Marginals) -> list[Atom]:
    """The single columns and the known blocks of ``marginals``, as parts of a partition of J."""
    index = {c: i for i, c in enumerate(marginals.columns)}
    atoms = []
    for c in marginals.columns:
        opt = _options(marginals.counts[c], marginals.n, "theorem2")
        atoms.append(Atom((index[c],), opt.s, opt.logw))
    for b in marginals.blocks.values():
        s, logw = block_options(b, marginals.n)
        atoms.append(Atom(tuple(sorted(index[c] for c in b.columns)), s, logw))
    return atoms


def _greedy_cover(marginals: Marginals, atoms: Sequence[Atom], thr: int) -> float:
    """A sound cover beyond 16 columns: blocks taken greedily, disjoint, in order of the support
    they save (log prod_j m_j - log W_b at r = 0), then the partition's bound by the frontier."""
    p = len(marginals.columns)
    singles, blocks = atoms[:p], atoms[p:]
    gain = [sum(float(singles[j].logw[0]) for j in b.columns) - float(b.logw[0]) for b in blocks]
    used: set[int] = set()
    chosen: list[Atom] = []
    for i in np.argsort(gain)[::-1]:
        b = blocks[int(i)]
        if gain[int(i)] > 0 and used.isdisjoint(b.columns):
            chosen.append(b)
            used.update(b.columns)
    parts = chosen + [a for a in singles if a.columns[0] not in used]
    value, _ = _upper_min([_Options(a.s, a.logw) for a in parts], marginals.n, thr)
    return value


MAX_ROOT_COLUMNS = 12
"""Conditioning on a root column is tried up to this many columns (it costs a search per root value)."""


def _block_bound(marginals: Marginals, thr: int, cap: float, planning: bool = False) -> float:
    """min over partitions of J into known blocks of the Theorem-2 bound (docs/risk.md, "Bounds from
    blocks"), searched at or below ``cap``; inf when no partition is at or below it."""
    if thr <= 0:
        return 0.0
    atoms = _atoms(marginals)
    if len(marginals.columns) <= MAX_EXACT_BLOCK_COLUMNS:
        value = partition_minimum(len(marginals.columns), atoms, marginals.n, thr, cap)
    else:
        value = _greedy_cover(marginals, atoms, thr)
    whole = set(marginals.columns)
    for b in marginals.blocks.values():
        if set(b.columns) == whole:  # a block that is J itself: its own exposure (exact if unredacted)
            value = min(value, b.exposure_bound(thr) / marginals.n)
    if len(marginals.columns) <= MAX_ROOT_COLUMNS and not planning:
        value = min(value, _conditional_bound(marginals, thr, min(cap, value)))
    return min(1.0, value * _ROUND_UP) if math.isfinite(value) else math.inf


def _conditional_bound(marginals: Marginals, thr: int, cap: float) -> float:
    """Theorem 2 within each value of a root column r whose pair with every other column is known.

    Users with r = u form their own table; a group on J lies inside one value of r. So
    Q_J(t) <= sum_u min(p(u), min_E [sum_j p(u, E_j) + tau prod_j W_j(u)]), where W_j(u) bounds the
    kept values of column j among the users with r = u, read off row u of the pair table (r, j)
    (docs/risk.md, "Conditioning on a root column"). Searched at or below ``cap``; inf when above.
    """
    cols = marginals.columns
    if len(cols) < 2:
        return math.inf
    by_set = {frozenset(key): b for key, b in marginals.blocks.items()}
    best = math.inf
    for r in cols:
        tables = [(j, by_set.get(frozenset((r, j)))) for j in cols if j != r]
        if any(b is None for _, b in tables):
            continue
        value = _star(marginals, r, tables, thr, min(cap, best))
        best = min(best, value)
    return best


_GROUPED: weakref.WeakKeyDictionary[Any, dict[int, tuple[NDArray[np.int64], NDArray[np.int64]]]] = (
    weakref.WeakKeyDictionary()
)


def _grouped(block: Any, pos: int, values: Sequence[Any]) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
    """The block's known cells by the value in position ``pos``: (value index into ``values``, count),
    sorted by index then count (cached per block)."""
    per = _GROUPED.setdefault(block, {})
    if pos not in per:
        index = {v: i for i, v in enumerate(values)}
        codes = np.array([index[cell[pos]] for cell in block.values], dtype=np.int64)
        counts = np.asarray(block.counts, dtype=np.int64)
        order = np.lexsort((counts, codes))
        per[pos] = (codes[order], counts[order])
    return per[pos]


def _star(marginals: Marginals, root: str, tables: Sequence[tuple[str, Any]], thr: int, cap: float) -> float:
    """The conditional bound with root column ``root``; inf as soon as it is known to exceed ``cap``.

    Column j alone within u costs at least sum_cells min(c, thr) + min(hidden, thr * min(hidden, m_j))
    users (sacrifice a cell exactly when it holds fewer than thr users; the choice is separable), so
    a root value whose cost already reaches its n_u users is settled without a search.
    """
    n = marginals.n
    n_u = marginals.counts[root].astype(np.int64)
    n_vals = n_u.size
    supports = marginals.supports
    grouped = []
    floor = np.zeros(n_vals, dtype=np.int64)
    known_any = np.zeros(n_vals, dtype=bool)
    for j, b in tables:
        codes, counts = _grouped(b, b.columns.index(root), marginals.values[root])
        total = np.bincount(codes, weights=counts, minlength=n_vals).astype(np.int64)
        hidden = n_u - total  # in a cell (u, REDACTED), or behind a redacted value of the root
        cost = np.bincount(codes, weights=np.minimum(counts, thr), minlength=n_vals).astype(np.int64)
        cost += np.minimum(hidden, thr * np.minimum(hidden, supports[j]))
        floor = np.maximum(floor, cost)
        known_any |= total > 0
        starts = np.searchsorted(codes, np.arange(n_vals + 1))
        grouped.append((j, codes, counts, starts, hidden))
    settled = (n_u <= thr) | ~known_any | (floor >= n_u)
    share = float(n_u[settled].sum()) / n  # a group on J inside u holds at most thr, or all of u's users
    todo = np.flatnonzero(~settled)
    todo = todo[np.argsort(-floor[todo], kind="stable")]  # the costliest first: an early exit comes sooner
    rest = float(floor[todo].sum()) / n  # what the values still to do cost at least
    if share + rest > cap * (1 + 1e-12):
        return math.inf
    for u in todo:
        rest -= float(floor[u]) / n
        options = []
        for j, _, counts, starts, hidden in grouped:
            cells = counts[starts[u] : starts[u + 1]]
            h = int(hidden[u])
            s_opt, l_opt = cell_options(cells, h, min(h, supports[j]), n)
            options.append(_Options(s_opt, l_opt))
        value, _ = _upper_min(options, n, thr, cap=float(n_u[u]) / n)
        share += min(float(n_u[u]) / n, value)
        if share + rest > cap * (1 + 1e-12):
            return math.inf
    return min(1.0, share * _ROUND_UP)


def has_blocks(marginals: Marginals) -> bool:
    """Whether any known block lies inside the marginals' columns (after :meth:`Marginals.select`)."""
    return bool(marginals.blocks)


def _with_blocks(
    marginals: Marginals, thr: NDArray[np.int64], single: NDArray[np.float64], cap: float | None
) -> NDArray[np.float64]:
    """The single-column bound ``single`` improved, threshold by threshold, by the block bound."""
    out = np.array(single, dtype=np.float64, copy=True).reshape(-1)
    flat = thr.reshape(-1)
    for i, t in enumerate(flat):
        if cap is not None and out[i] <= cap:
            continue  # the planner only asks "within the budget?": the singles already say yes
        limit = float(out[i]) if cap is None else min(float(out[i]), cap)
        out[i] = min(out[i], _block_bound(marginals, int(t), limit, planning=cap is not None))
    return out.reshape(thr.shape)


def _bound(
    marginals: Marginals,
    thr: NDArray[np.int64],
    method: str,
    cap: float | None = None,
    cache: dict[tuple[str, str], _Options] | None = None,
) -> NDArray[np.float64]:
    """The bound ``method`` at integer thresholds ``thr``; ``cap`` and ``cache`` serve the planner."""
    n = marginals.n
    flat = thr.reshape(-1)
    if not marginals.columns:  # one group of n users: exact
        return (n <= thr).astype(np.float64)
    if method == "lower":
        return _lower(marginals, thr)
    if method == "best" and marginals.blocks:
        single = _bound(marginals.singles(), thr, method, cap, cache)
        return _with_blocks(marginals, thr, single, cap)
    if method == "support":
        log_m = sum(math.log(marginals.counts[c].size) for c in marginals.columns)
        return np.minimum(1.0, thr / n * math.exp(min(log_m, 700.0)) * _ROUND_UP)
    kinds = ("theorem2", "theorem3") if method == "best" else (method,)
    results = []
    for kind in kinds:
        options = []
        for c in marginals.columns:
            if cache is None or (c, kind) not in cache:
                opt = _options(marginals.counts[c], n, kind)
                if cache is not None:
                    cache[(c, kind)] = opt
            else:
                opt = cache[(c, kind)]
            options.append(opt)
        if flat.size == 1:
            value, exact = _upper_min(options, n, int(flat[0]), cap)
            results.append(np.array([value]).reshape(thr.shape))
            if exact and kind == "theorem2":  # the exact theorem-2 minimum is never above theorem 3
                break
        else:
            results.append(_curve_min(options, n, flat).reshape(thr.shape))
    return np.minimum.reduce(results) if len(results) > 1 else results[0]


def joint_exposure_bound(
    marginals: Marginals,
    *,
    k: ArrayLike | None = None,
    t: ArrayLike | None = None,
    method: BoundMethod = "best",
    columns: Sequence[str] | None = None,
) -> Any:
    """Bound the joint exposure Q_J from the value counts: single columns, and known blocks if any.

    With tau = floor(t n) / n (or (k - 1) / n) and S_j(r) the share of users holding the r rarest
    values of column j:

    * ``"lower"``: max_j Q_j(t) <= Q_J(t), a lower bound (never use it as a guarantee);
    * ``"support"``: Q_J(t) <= min(1, tau prod_j m_j) (Theorem 2 with nothing sacrificed);
    * ``"theorem2"``: Q_J(t) <= min_r sum_j S_j(r_j) + tau prod_j (m_j - r_j);
    * ``"theorem3"``: Q_J(t) <= min_r sum_j S_j(r_j) + tau prod_j 1 / p_{j,(r_j+1)};
    * ``"best"`` (default): the minimum of the upper bounds; when ``marginals`` carries blocks
      (pair or triple tables, :attr:`Marginals.blocks`), also the minimum over the partitions of J
      into known blocks of Theorem 2 with each block as one feature, a known block equal to J
      (its own exposure), and, up to 12 columns, Theorem 2 inside each value of a column whose
      pair with every other column is known (docs/risk.md, "Bounds from blocks"). Never above the
      single-column best bound. A redacted cell (a key with :data:`REDACTED`) counts as
      sacrificed whole, or as kept with at most min(users, prod of its redacted columns'
      supports) true cells, never as one cell.

    With blocks, ``"lower"`` is the max over single columns and known blocks inside J of their
    exposure (redacted users left out); the other methods ignore the blocks.

    Parameters
    ----------
    marginals : the value counts (:class:`Marginals`).
    k : group size(s) >= 1; bounds the share of users in groups smaller than k.
    t : share(s) of rows in [0, 1]; a group of c rows counts when c <= floor(t n). Give k or t.
    method : which bound (see above).
    columns : a subset of the marginals' columns (default: all).

    Returns
    -------
    A share of users (0..1): a float for scalar k or t, an array of the same shape otherwise.

    Notes
    -----
    Theorem 2 [derived; anonymity notes §2]: Q_J(t) <= sum_j p_j(E_j) + t prod_j |supp p_j \\ E_j|;
    the best E_j are the r_j rarest values. Theorem 3 [derived; §2]: Q_J(c prod_j t_j) <= sum_j
    Q_j(t_j) + c, optimised over c. Theorem 2 at its best is never above Theorem 3. The minimum over
    the grid prod_j m_j is exact while the Pareto frontier of (sum S, sum log w) has at most 4,096
    points per step and each column at most 512 values; beyond, the frontier is thinned and the result
    polished by coordinate descent: still a valid upper bound, possibly not the smallest. Upper bounds
    are rounded up by a relative 1e-12 (float sums of logs). Cost O(p F m) for p columns.

    With blocks, the minimum over partitions is exact up to 16 columns (a dynamic programme over
    the subsets of J, numba-compiled once) and a greedy cover beyond (still a valid bound).

    References
    ----------
    .. [1] Bravo-Hermsdorff, G. et al. (2022). Statistical anonymity: quantifying reidentification
       risks without reidentifying users. arXiv:2201.12306 [seed], Theorems 2 and 3.

    Examples
    --------
    The adversarial table of anonymity notes §1 with n = 50: 25 rows (0, 1), one (0, 0), 25 (1, 0).
    Each column alone is 25-anonymous; the joint exposure at k = 2 is 1/51 = 0.0196.

    >>> m = Marginals.from_counts({"a": {0: 26, 1: 25}, "b": {0: 26, 1: 25}})
    >>> joint_exposure_bound(m, k=2, method="lower"), round(joint_exposure_bound(m, k=2), 4)
    (0.0, 0.0784)
    """
    check_method(method)
    cols = marginals.columns if columns is None else tuple(columns)
    marg = marginals if columns is None else marginals.select(cols)
    thr = threshold(marg.n, k=k, t=t)
    out = _bound(marg, np.asarray(thr), method)
    return as_scalar_or_array(out, np.ndim(thr) == 0)


@dataclass(frozen=True)
class PairBoundCurve:
    """The bounds on the share of users in groups smaller than k, against k, with and without blocks."""

    k: NDArray[np.int64]
    """Group sizes."""
    single: NDArray[np.float64]
    """Best bound from the single-column counts only (``method="best"`` without blocks)."""
    blocks: NDArray[np.float64]
    """Best bound using the known blocks too (the pair bound); never above ``single``."""
    lower: NDArray[np.float64]
    """max over single columns and known blocks of their exposure: a lower bound, never a guarantee."""

    def to_dict(self) -> dict[str, Any]:
        """JSON form: lists of equal length."""
        return {
            "k": self.k.tolist(),
            "single": self.single.tolist(),
            "blocks": self.blocks.tolist(),
            "lower": self.lower.tolist(),
        }


def pair_bound_curve(
    marginals: Marginals, k: ArrayLike | None = None, *, columns: Sequence[str] | None = None
) -> PairBoundCurve:
    """The single-column bound and the block (pair) bound over k, for the exposure plot.

    Parameters
    ----------
    marginals : the counts, with blocks (e.g. ``Marginals.from_data(df, cols, blocks=pairs)``).
    k : group sizes (default 2..50).
    columns : a subset of the columns (default: all); blocks inside it are used.

    Examples
    --------
    >>> m = Marginals.from_counts({"a": {0: 51, 1: 50}, "b": {0: 51, 1: 50}},
    ...                           blocks={("a", "b"): {(0, 1): 50, (0, 0): 1, (1, 0): 50}})
    >>> c = pair_bound_curve(m, k=[2, 3])
    >>> c.single.round(4).tolist(), c.blocks.round(4).tolist()
    ([0.0396, 0.0792], [0.0099, 0.0099])
    """
    ks = np.arange(2, 51) if k is None else np.atleast_1d(np.asarray(k))
    marg = marginals if columns is None else marginals.select(list(columns))
    thr = np.asarray(threshold(marg.n, k=ks))
    single = np.asarray(_bound(marg.singles(), thr, "best"), dtype=np.float64)
    blocks = np.asarray(_bound(marg, thr, "best"), dtype=np.float64) if marg.blocks else single.copy()
    lower = np.asarray(_lower(marg, thr), dtype=np.float64)
    return PairBoundCurve(k=ks.astype(np.int64), single=single, blocks=blocks, lower=lower)
