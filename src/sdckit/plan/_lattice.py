"""The planner's search over recoding levels (a generalisation lattice), with Flash-style pruning.

Each quasi-identifier j has levels 0 (raw) .. L_j (its hierarchy's top; a column without a
hierarchy has levels 0 and 1 = withheld). A node gives a level per column. Recoding is a function of
each cell alone, so a node's single-column counts follow from the raw ones (values with the same
label add up): the curator can bound the exposure of every node from marginals alone.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import narwhals as nw
import numpy as np
from numpy.typing import NDArray

from sdckit.errors import InfeasibleError, ParameterError
from sdckit.risk._counts._counting import size_histogram
from sdckit.risk._counts._marginals import Marginals

LossMeasure = Literal["entropy", "precision"]
"""Information loss of a recoding, per column in 0..1, averaged with the column weights:

* ``"entropy"``: non-uniform entropy, -sum_v c_v log2(c_v / C_g(v)) (C_g the count of v's label),
  divided by the column's own entropy n H_j, so 0 = raw and 1 = one value (computable from marginals);
* ``"precision"``: Sweeney's precision loss, level / top level.
"""

WITHHELD = "*"
"""The one label of a column recoded to its top (or withheld when it has no hierarchy)."""


@dataclass(frozen=True)
class ColumnLevels:
    """One column's labels at each level: ``labels[l][value]`` for the values of the marginals."""

    name: str
    labels: tuple[Mapping[Any, Any], ...]
    hierarchy: Any  # a Hierarchy, or None (levels 0 and 1 = withheld)

    @property
    def top(self) -> int:
        return len(self.labels) - 1


def column_levels(marginals: Marginals, column: str, hierarchy: Any) -> ColumnLevels:
    """Labels of every observed value of ``column`` at every level of ``hierarchy`` (or withheld)."""
    values = marginals.values[column]
    levels: list[Mapping[Any, Any]] = [{v: v for v in values}]
    if hierarchy is None:
        levels.append({v: WITHHELD for v in values})
    else:
        for level in range(1, hierarchy.n_levels + 1):
            levels.append({v: hierarchy.label(v, level, column) for v in values})
    return ColumnLevels(column, tuple(levels), hierarchy)


def recoded_counts(marginals: Marginals, col: ColumnLevels, level: int) -> dict[Any, int]:
    """The single-column counts after recoding ``col`` to ``level`` (labels add their values' counts)."""
    out: dict[Any, int] = {}
    mapping = col.labels[level]
    for v, c in zip(marginals.values[col.name], marginals.counts[col.name].tolist(), strict=True):
        label = mapping[v]
        out[label] = out.get(label, 0) + int(c)
    return out


def column_loss(marginals: Marginals, col: ColumnLevels, measure: str) -> NDArray[np.float64]:
    """Loss (0..1) of each level of one column."""
    if measure == "precision":
        return np.arange(col.top + 1, dtype=np.float64) / max(col.top, 1)
    counts = marginals.counts[col.name].astype(np.float64)
    n = counts.sum()
    raw = -float(np.sum(counts * np.log2(counts / n)))
    out = np.zeros(col.top + 1)
    for level in range(1, col.top + 1):
        merged = recoded_counts(marginals, col, level)
        mapping = col.labels[level]
        total = np.array([merged[mapping[v]] for v in marginals.values[col.name]], dtype=np.float64)
        nue = -float(np.sum(counts * np.log2(counts / total)))
        out[level] = nue / raw if raw > 0 else 0.0
    return out


@dataclass
class LatticeResult:
    """The chosen node, its loss and exposure figure, and the search's effort."""

    levels: dict[str, int]
    loss: float
    exposure: float
    n_nodes: int
    n_evaluated: int
    feasible: list[tuple[float, tuple[int, ...], float]]
    """Up to ``keep`` acceptable nodes met in loss order: (loss, levels, exposure)."""


def search_lattice(
    cols: Sequence[ColumnLevels],
    losses: Sequence[NDArray[np.float64]],
    weights: Sequence[float],
    evaluate: Callable[[tuple[int, ...]], float],
    limit: float,
    *,
    keep: int = 1,
    progress: Callable[[int], None] | None = None,
) -> LatticeResult:
    """The least-loss node whose figure ``evaluate(node)`` is <= ``limit`` (Flash-style pruning).

    Nodes are visited in ascending loss (loss is monotone: a generalisation never loses less). The
    exposure of a table only falls when a column is coarsened, so a node over the limit makes all
    its specialisations (every level <= its own) over the limit too: they are skipped without
    evaluation. From a node over the limit the search first climbs (binary search along each
    column in turn, as Flash's paths) to a maximal node over the limit, which prunes its whole
    down-set. A node within the limit makes all its generalisations within it, but they lose more
    and are never needed. The first node within the limit is the answer; every node returned
    has been evaluated, so the answer's figure is a computed one whatever the pruning assumed.
    """
    tops = [c.top for c in cols]
    w = np.asarray(weights, dtype=np.float64)
    wsum = float(w.sum()) if w.sum() > 0 else 1.0
    grids = list(itertools.product(*[range(t + 1) for t in tops]))
    nodes = np.array(grids, dtype=np.int64).reshape(len(grids), len(cols))
    loss = np.zeros(len(grids))
    for j in range(len(cols)):
        loss += w[j] * losses[j][nodes[:, j]]
    loss /= wsum
    height = nodes.sum(axis=1)
    order = np.lexsort((height, loss))
    cache: dict[tuple[int, ...], float] = {}

    def value_of(node: tuple[int, ...]) -> float:
        if node not in cache:
            cache[node] = evaluate(node)
            if progress is not None:
                progress(len(cache))
        return cache[node]

    def climb(node: list[int]) -> tuple[int, ...]:
        """A maximal node over the limit above ``node`` (over it itself): binary search per column."""
        for j in range(len(tops)):
            lo, hi = node[j], tops[j]  # lo is over the limit
            while lo < hi:
                mid = (lo + hi + 1) // 2
                trial = tuple([*node[:j], mid, *node[j + 1:]])
                if value_of(trial) > limit:
                    lo = mid
                else:
                    hi = mid - 1
            node[j] = lo
        return tuple(node)

    inf_arr = np.zeros((0, len(cols)), dtype=np.int64)
    found: list[tuple[float, tuple[int, ...], float]] = []
    for idx in order:
        node = nodes[idx]
        if inf_arr.shape[0] and bool(np.any(np.all(node[None, :] <= inf_arr, axis=1))):
            continue  # a specialisation of a node over the limit
        if found and any(all(a >= b for a, b in zip(node, f[1], strict=True)) for f in found):
            continue  # a generalisation of an accepted node: more loss, nothing new
        key = tuple(int(x) for x in node)
        value = value_of(key)
        if value <= limit:
            found.append((float(loss[idx]), key, value))
            if len(found) >= keep:
                break
        else:
            top_node = climb(list(key))
            inf_arr = np.vstack([inf_arr, np.asarray(top_node, dtype=np.int64)[None, :]])
    evaluated = len(cache)
    if not found:
        raise InfeasibleError("no node of the recoding lattice meets the limit.")
    best = found[0]
    return LatticeResult(
        levels={c.name: lvl for c, lvl in zip(cols, best[1], strict=True)},
        loss=best[0],
        exposure=best[2],
        n_nodes=len(grids),
        n_evaluated=evaluated,
        feasible=found,
    )


class DataExposure:
    """Exact exposure of each node on the table itself: share of records in groups smaller than k.

    The records are reduced once to their distinct raw tuples with multiplicities; a node's groups
    are then counted on those tuples (mixed-radix keys of the recoded codes, one sort).
    """

    def __init__(self, codes: NDArray[np.int64], maps: Sequence[Sequence[NDArray[np.int64]]], k: int) -> None:
        self.codes, self.maps, self.k = codes, maps, k
        self.n = codes.shape[0]
        self.distinct, self.inverse, counts = np.unique(
            codes, axis=0, return_inverse=True, return_counts=True
        )
        self.inverse = self.inverse.reshape(-1)
        self.weight = counts.astype(np.int64)
        self.radix_ok = float(np.prod([float(m[0].max() + 1) for m in maps])) < 2.0**62

    def recoded(self, node: tuple[int, ...]) -> NDArray[np.int64]:
        """Integer codes (n, p) of the recoded table."""
        return np.column_stack([self.maps[j][lvl][self.codes[:, j]] for j, lvl in enumerate(node)])

    def __call__(self, node: tuple[int, ...]) -> float:
        key = np.zeros(self.distinct.shape[0], dtype=np.int64)
        for j, lvl in enumerate(node):
            mapped = self.maps[j][lvl]
            m = int(mapped.max()) + 1
            if not self.radix_ok and key.max(initial=0) > (2**62) // max(m, 1):
                _, key = np.unique(key, return_inverse=True)
                key = key.reshape(-1).astype(np.int64)
            key = key * m + mapped[self.distinct[:, j]]
        _, inverse = np.unique(key, return_inverse=True)
        inverse = inverse.reshape(-1)
        sizes = np.bincount(inverse, weights=self.weight)[inverse]
        return float(self.weight[sizes < self.k].sum()) / self.n


class LazyExposure:
    """Exact exposure of each node on a lazy table (polars LazyFrame, DuckDB, Dask, Spark).

    Per node the columns are recoded where the rows live (each raw value to its label's code,
    ``replace_strict``) and grouped twice (as :func:`~sdckit.risk._counts._counting.size_histogram`): only the
    histogram of group sizes reaches the driver. Exposure = sum_{s < k} s g_s / n, g_s the groups of
    size s: the share of records in groups smaller than k, as :class:`DataExposure` computes it.
    """

    def __init__(
        self,
        frame: Any,
        names: Sequence[str],
        values: Sequence[Sequence[Any]],
        maps: Sequence[Sequence[NDArray[np.int64]]],
        k: int,
        n: int,
    ) -> None:
        self.frame, self.names, self.values, self.maps, self.k, self.n = frame, list(names), values, maps, k, n

    def _code(self, j: int, level: int) -> Any:
        mapped = self.maps[j][level]
        col = nw.col(self.names[j])
        old = [v for v in self.values[j] if v is not None]
        new = [int(mapped[i]) for i, v in enumerate(self.values[j]) if v is not None]
        expr = col.replace_strict(old, new, default=nw.lit(-1, dtype=nw.Int64), return_dtype=nw.Int64)
        if any(v is None for v in self.values[j]):
            none = int(mapped[next(i for i, v in enumerate(self.values[j]) if v is None)])
            expr = nw.when(col.is_null()).then(nw.lit(none, dtype=nw.Int64)).otherwise(expr)
        return expr.alias(f"__sdckit_code{j}")

    def __call__(self, node: tuple[int, ...]) -> float:
        varied = [j for j, lvl in enumerate(node) if int(self.maps[j][lvl].max(initial=0)) > 0]
        if not varied:  # every column recoded to one label: one group of n
            return float(self.n < self.k)
        coded = self.frame.select(*[self._code(j, node[j]) for j in varied])
        sizes, groups = size_histogram(coded, [f"__sdckit_code{j}" for j in varied])  # counted (driver_rows)
        small = sizes < self.k
        return float((sizes[small] * groups[small]).sum()) / self.n


def label_codes(cols: Sequence[ColumnLevels], marginals: Marginals) -> list[list[NDArray[np.int64]]]:
    """Per column and level, the code of each raw value's label (raw values coded in marginals order)."""
    out = []
    for col in cols:
        per_level = []
        for mapping in col.labels:
            labels = [mapping[v] for v in marginals.values[col.name]]
            index: dict[Any, int] = {}
            per_level.append(np.array([index.setdefault(lab, len(index)) for lab in labels], dtype=np.int64))
        out.append(per_level)
    return out


def check_loss(loss: str) -> str:
    if loss not in ("entropy", "precision"):
        raise ParameterError(f"loss={loss!r}: use 'entropy' (non-uniform entropy) or 'precision'.")
    return loss


def fmt_share(x: float) -> str:
    return f"{100 * x:.4g}%" if math.isfinite(x) else "-"
