"""Marginal-based differentially private synthesizers on OpenDP's noise (the ``dp`` extra).

Privacy unit: one row (add/remove-one neighbours). A row moves one cell of every histogram by one,
so ``m`` histograms have L1 sensitivity ``m``; each set of histograms is released through OpenDP's
``make_laplace`` on an integer vector (the discrete Laplace, scale ``m / epsilon``), and its epsilon
is what OpenDP's privacy map returns for that sensitivity (never a formula of ours). The parts add
up by sequential composition. The column domains (the categories, and each numeric column's range
cut into equal-width bins) are taken as public: state them in the release notes, or give
``bounds``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import polars as pl
from numpy.typing import NDArray

from sdckit._io._optional import require
from sdckit.errors import InputError, NotFittedError, ParameterError

__all__ = ["DPMarginalSynthesizer", "DPTreeSynthesizer", "Discretizer"]


def _opendp() -> Any:
    dp = require("opendp.prelude", extra="dp", what="differentially private synthetic data")
    dp.enable_features("contrib")  # the noisy-max and Laplace constructors are behind OpenDP's contrib flag
    return dp


def noisy_counts(counts: NDArray[np.int64], *, sensitivity: int, epsilon: float) -> tuple[NDArray[np.int64], float]:
    """Release integer ``counts`` with OpenDP's discrete Laplace; returns (noisy counts, epsilon spent).

    ``sensitivity`` is the L1 distance one row moves the whole vector; the scale is
    ``sensitivity / epsilon`` and the epsilon returned is OpenDP's map of ``sensitivity``.
    """
    dp = _opendp()
    scale = sensitivity / epsilon
    meas = dp.m.make_laplace(dp.vector_domain(dp.atom_domain(T=int)), dp.l1_distance(T=int), scale=scale)
    out = np.asarray(meas([int(c) for c in counts]), dtype=np.int64)
    return out, float(meas.map(int(sensitivity)))


def noisy_argmax(scores: Sequence[float], *, sensitivity: float, epsilon: float) -> tuple[int, float]:
    """Index of the largest score by OpenDP's report-noisy-max (exponential mechanism); (index, epsilon spent)."""
    dp = _opendp()
    scale = 2.0 * sensitivity / epsilon  # scores are not monotonic in the data: OpenDP's map is 2 d_in / scale
    meas = dp.m.make_noisy_max(
        dp.vector_domain(dp.atom_domain(T=float, nan=False)), dp.linf_distance(T=float), dp.max_divergence(), scale=scale
    )
    return int(meas([float(s) for s in scores])), float(meas.map(float(sensitivity)))


@dataclass
class _Column:
    name: str
    kind: str  # "category" or "bins"
    categories: list[Any] = field(default_factory=list)
    edges: NDArray[np.float64] | None = None
    integer: bool = False

    @property
    def size(self) -> int:
        return len(self.categories) if self.kind == "category" else len(self.edges) - 1  # type: ignore[arg-type]


class Discretizer:
    """Codes every column as 0..size-1: a category per value, or equal-width bins of a numeric range.

    A numeric column (not listed in ``categorical``) with more than ``bins`` distinct values is cut
    into ``bins`` equal-width bins over ``bounds[column]`` or, without bounds, over its observed
    range (then the range is taken as public). Decoding draws a value uniformly within its bin
    (rounded for an integer column). A missing value is a category of its own.
    """

    def __init__(self, *, bins: int = 20, categorical: Sequence[str] = (), bounds: Mapping[str, tuple[float, float]] | None = None) -> None:
        self.bins = bins
        self.categorical = categorical
        self.bounds = bounds

    def fit(self, frame: pl.DataFrame) -> Discretizer:
        if self.bins < 2:
            raise ParameterError(f"bins={self.bins}: a numeric column needs at least 2 bins. Give bins >= 2.")
        cols: list[_Column] = []
        bounds = dict(self.bounds or {})
        for name in frame.columns:
            s = frame[name]
            numeric = s.dtype.is_numeric() and s.dtype != pl.Boolean and name not in set(self.categorical)
            if numeric and (s.n_unique() > self.bins or name in bounds):
                raw_lo, raw_hi = bounds.get(name, (s.min(), s.max()))
                if raw_lo is None or raw_hi is None or not np.isfinite([float(raw_lo), float(raw_hi)]).all():  # type: ignore[arg-type]
                    raise InputError(f"column {name!r}: no finite range to bin (all missing?). Give bounds for it.")
                lo, hi = float(raw_lo), float(raw_hi)  # type: ignore[arg-type]
                hi = hi if hi > lo else lo + 1.0
                cols.append(_Column(name, "bins", edges=np.linspace(lo, hi, self.bins + 1), integer=s.dtype.is_integer()))
            else:
                cats = s.unique(maintain_order=False).to_list()
                cats = sorted([c for c in cats if c is not None], key=lambda v: (str(type(v)), v)) + ([None] if s.null_count() else [])
                cols.append(_Column(name, "category", categories=cats))
        self.columns_ = cols
        self.feature_names_in_ = list(frame.columns)
        self.schema_ = frame.schema
        return self

    def transform(self, frame: pl.DataFrame) -> NDArray[np.int64]:
        """Codes, shape (n, d)."""
        if not hasattr(self, "columns_"):
            raise NotFittedError("Discretizer is not fitted: call fit(frame) first.")
        out = np.empty((frame.height, len(self.columns_)), dtype=np.int64)
        for j, col in enumerate(self.columns_):
            s = frame[col.name]
            if col.kind == "bins":
                x = s.cast(pl.Float64).to_numpy()
                assert col.edges is not None
                out[:, j] = np.clip(np.searchsorted(col.edges, x, side="right") - 1, 0, col.size - 1)
            else:
                index = {v: i for i, v in enumerate(col.categories)}
                out[:, j] = [index[v] for v in s.to_list()]
        return out

    def inverse(self, codes: NDArray[np.int64], rng: np.random.Generator) -> pl.DataFrame:
        """A frame of values from codes (a uniform draw within each numeric bin)."""
        series = []
        for j, col in enumerate(self.columns_):
            c = codes[:, j]
            if col.kind == "bins":
                assert col.edges is not None
                lo, hi = col.edges[c], col.edges[c + 1]
                x = lo + rng.random(c.shape[0]) * (hi - lo)
                values: Any = np.rint(x).astype(np.int64) if col.integer else x
                series.append(pl.Series(col.name, values).cast(self.schema_[col.name]))
            else:
                series.append(pl.Series(col.name, [col.categories[i] for i in c], dtype=self.schema_[col.name]))
        return pl.DataFrame(series)


def _clip_normalise(counts: NDArray[Any]) -> NDArray[np.float64]:
    p = np.clip(np.asarray(counts, dtype=np.float64), 0.0, None)
    total = p.sum()
    return np.full(p.shape, 1.0 / p.size) if total <= 0 else p / total


class _DPBase:
    """Shared parameters and the one-way measurements."""

    n_rows_: float
    epsilon_: float
    marginals_: list[NDArray[np.float64]]

    def __init__(
        self,
        *,
        epsilon: float = 1.0,
        bins: int = 20,
        categorical: Sequence[str] = (),
        bounds: Mapping[str, tuple[float, float]] | None = None,
        random_state: int | None = None,
    ) -> None:
        self.epsilon = epsilon
        self.bins = bins
        self.categorical = categorical
        self.bounds = bounds
        self.random_state = random_state

    def _start(self, frame: pl.DataFrame) -> NDArray[np.int64]:
        if not (isinstance(self.epsilon, (int, float)) and self.epsilon > 0 and np.isfinite(self.epsilon)):
            raise ParameterError(f"epsilon={self.epsilon!r}: a positive, finite number. Give e.g. epsilon=1.0.")
        if frame.height == 0 or frame.width == 0:
            raise InputError("the table is empty: nothing to synthesize.")
        self.discretizer_ = Discretizer(bins=self.bins, categorical=self.categorical, bounds=self.bounds).fit(frame)
        return self.discretizer_.transform(frame)

    def _one_way(self, codes: NDArray[np.int64], epsilon: float) -> tuple[list[NDArray[np.float64]], float, float]:
        """Noisy one-way histograms of every column (sensitivity d); (probabilities, noisy total, epsilon spent)."""
        sizes = [c.size for c in self.discretizer_.columns_]
        counts = np.concatenate([np.bincount(codes[:, j], minlength=s) for j, s in enumerate(sizes)])
        noisy, spent = noisy_counts(counts, sensitivity=len(sizes), epsilon=epsilon)
        parts = np.split(noisy, np.cumsum(sizes)[:-1])
        total = float(np.mean([max(p.sum(), 1) for p in parts]))  # post-processing of the noisy counts
        return [_clip_normalise(p) for p in parts], total, spent

    def _n_rows(self, n: int | None) -> int:
        if not hasattr(self, "epsilon_"):
            raise NotFittedError(f"{type(self).__name__} is not fitted: call fit(frame) first.")
        return max(1, round(self.n_rows_)) if n is None else int(n)


class DPMarginalSynthesizer(_DPBase):
    """Independent columns from their noisy one-way histograms (epsilon-DP).

    Each of the d histograms gets the discrete Laplace of scale ``d / epsilon`` (one row moves d
    cells by one); synthetic rows draw every column independently from its clipped, normalised
    noisy histogram. It keeps every marginal and none of the dependence.

    Attributes
    ----------
    epsilon_ : Epsilon spent, by OpenDP's privacy map (at most ``epsilon``).
    marginals_ : Per column, the released probabilities.
    n_rows_ : The noisy row count (the default size of a sample).
    """

    def fit(self, frame: pl.DataFrame) -> DPMarginalSynthesizer:
        codes = self._start(frame)
        self.marginals_, self.n_rows_, self.epsilon_ = self._one_way(codes, float(self.epsilon))
        return self

    def sample(self, n: int | None = None) -> pl.DataFrame:
        """``n`` synthetic rows (default: the noisy row count), drawn from the released histograms."""
        n_rows = self._n_rows(n)
        rng = np.random.default_rng(self.random_state)
        codes = np.column_stack([rng.choice(p.size, size=n_rows, p=p) for p in self.marginals_])
        return self.discretizer_.inverse(codes, rng)


class DPTreeSynthesizer(_DPBase):
    """A spanning tree of column pairs, chosen and measured under epsilon-DP (MST-like).

    The budget is split in three equal parts: (1) the d one-way histograms (discrete Laplace,
    sensitivity d); (2) d - 1 rounds of Kruskal's algorithm, each picking among the pairs that join
    two components the one whose two-way histogram M_ij departs most from independence,
    score_ij = ||M_ij - n p_i p_j^T||_1 with p from part (1), by report-noisy-max (the score moves
    by at most 1 when a row is added or removed; epsilon/3/(d-1) per round); (3) the d - 1 chosen
    two-way histograms (discrete Laplace, sensitivity d - 1). Rows are drawn from the root's
    one-way histogram, then each child from its parent by the noisy two-way table's conditional.

    References
    ----------
    .. [1] McKenna, R., Miklau, G. and Sheldon, D. (2021). Winning the NIST contest: a scalable and
       general approach to differentially private synthetic data. J. Privacy and Confidentiality 11(3).
    """

    def fit(self, frame: pl.DataFrame) -> DPTreeSynthesizer:
        codes = self._start(frame)
        d = codes.shape[1]
        if d == 1:
            self.marginals_, self.n_rows_, self.epsilon_ = self._one_way(codes, float(self.epsilon))
            self.tree_, self.pairs_ = [], {}
            return self
        third = float(self.epsilon) / 3.0
        self.marginals_, self.n_rows_, spent = self._one_way(codes, third)
        sizes = [c.size for c in self.discretizer_.columns_]
        table: dict[tuple[int, int], NDArray[np.int64]] = {}

        def two_way(i: int, j: int) -> NDArray[np.int64]:
            if (i, j) not in table:
                flat = codes[:, i] * sizes[j] + codes[:, j]
                table[(i, j)] = np.bincount(flat, minlength=sizes[i] * sizes[j]).reshape(sizes[i], sizes[j])
            return table[(i, j)]

        component = list(range(d))

        def root(a: int) -> int:
            while component[a] != a:
                a = component[a]
            return a

        edges: list[tuple[int, int]] = []
        for _ in range(d - 1):
            candidates = [(i, j) for i in range(d) for j in range(i + 1, d) if root(i) != root(j)]
            scores = [
                float(np.abs(two_way(i, j) - self.n_rows_ * np.outer(self.marginals_[i], self.marginals_[j])).sum())
                for i, j in candidates
            ]
            pick, eps = noisy_argmax(scores, sensitivity=1.0, epsilon=third / (d - 1))
            spent += eps
            i, j = candidates[pick]
            edges.append((i, j))
            component[root(j)] = root(i)
        counts = np.concatenate([two_way(i, j).ravel() for i, j in edges])
        noisy, eps = noisy_counts(counts, sensitivity=d - 1, epsilon=third)
        spent += eps
        parts = np.split(noisy, np.cumsum([sizes[i] * sizes[j] for i, j in edges])[:-1])
        self.pairs_ = {e: p.reshape(sizes[e[0]], sizes[e[1]]) for e, p in zip(edges, parts, strict=True)}
        self.tree_ = edges
        self.epsilon_ = spent
        return self

    def sample(self, n: int | None = None) -> pl.DataFrame:
        """``n`` synthetic rows (default: the noisy row count), drawn along the tree."""
        n_rows = self._n_rows(n)
        rng = np.random.default_rng(self.random_state)
        d = len(self.marginals_)
        codes = np.full((n_rows, d), -1, dtype=np.int64)
        neighbours: dict[int, list[tuple[int, NDArray[np.float64]]]] = {i: [] for i in range(d)}
        for (i, j), m in self.pairs_.items():
            table = np.clip(m.astype(np.float64), 0.0, None)
            neighbours[i].append((j, table))  # rows: i's value
            neighbours[j].append((i, table.T))
        done = [False] * d
        for start in range(d):  # every component of the forest (a tree when d > 1)
            if done[start]:
                continue
            codes[:, start] = rng.choice(self.marginals_[start].size, size=n_rows, p=self.marginals_[start])
            done[start] = True
            queue = [start]
            while queue:
                parent = queue.pop()
                for child, cond in neighbours[parent]:
                    if done[child]:
                        continue
                    fallback = self.marginals_[child]
                    for value in np.unique(codes[:, parent]):
                        rows = np.flatnonzero(codes[:, parent] == value)
                        row = cond[value]
                        p = row / row.sum() if row.sum() > 0 else fallback
                        codes[rows, child] = rng.choice(p.size, size=rows.size, p=p)
                    done[child] = True
                    queue.append(child)
        return self.discretizer_.inverse(codes, rng)
