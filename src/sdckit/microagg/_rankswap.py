"""Rank swapping (Moore 1996), as sdcMicro 5.8.1's ``rankSwap`` does it.

Each column on its own: sort the values from highest to lowest; replace the top ``top_percent`` and
the bottom ``bottom_percent`` of the values by their means (top and bottom coding, left out of the
swapping); then walk the remaining N' values in rank order and swap each value not yet swapped
with one chosen uniformly among the values not yet swapped whose rank is below it by less than
``P N'`` (sdcMicro ``src/RankSwapping.h``). Every swapped value stays in the release, so each column's
middle values are only permuted: its mean and variance are those of the top/bottom-coded column.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
from numba import njit
from numpy.typing import NDArray

from sdckit._estimator import Estimator, RandomState, as_generator
from sdckit._io import DataSource, like_input
from sdckit.errors import ParameterError
from sdckit.microagg._base import collect_if_lazy, numeric_matrix, restore_kind


@njit(cache=True)
def _fenwick_add(tree: NDArray[np.int64], i: int, delta: int) -> None:
    i += 1
    n = tree.shape[0] - 1
    while i <= n:
        tree[i] += delta
        i += i & (-i)


@njit(cache=True)
def _fenwick_prefix(tree: NDArray[np.int64], i: int) -> int:
    """Sum of positions [0, i)."""
    s = 0
    while i > 0:
        s += tree[i]
        i -= i & (-i)
    return s


@njit(cache=True)
def _fenwick_find(tree: NDArray[np.int64], target: int, log: int) -> int:
    """Smallest position i with prefix(i + 1) >= target (target >= 1)."""
    pos = 0
    n = tree.shape[0] - 1
    step = 1 << log
    while step > 0:
        nxt = pos + step
        if nxt <= n and tree[nxt] < target:
            pos = nxt
            target -= tree[nxt]
        step >>= 1
    return pos


@njit(cache=True)
def swap_partners(n: int, window: float, u: NDArray[np.float64]) -> NDArray[np.int64]:
    """The swap of ranks 0..n-1 (0 = highest): ``out[j]`` is the rank whose value rank j receives.

    For j = 0, 1, ... not yet swapped: r = min(n, int(j + window)); among ranks j+1..r-1 not yet
    swapped one is chosen uniformly (``u[j]`` in [0, 1)) and swapped with j; a rank with no free
    partner keeps its value (sdcMicro ``RankSwapping.h``). A Fenwick tree over the free ranks makes
    the choice O(log n), so the whole column costs O(n log n) for any window.
    """
    out = np.arange(n)
    free = np.ones(n, dtype=np.bool_)
    tree = np.zeros(n + 1, dtype=np.int64)
    for i in range(n):
        _fenwick_add(tree, i, 1)
    log = 0
    while (1 << (log + 1)) <= n:
        log += 1
    for j in range(n):
        if not free[j]:
            continue
        r = min(n, int(j + window))
        if r <= j + 1:
            continue
        before = _fenwick_prefix(tree, j + 1)
        count = _fenwick_prefix(tree, r) - before
        if count <= 0:
            continue
        m = min(int(u[j] * count), count - 1)
        k = _fenwick_find(tree, before + m + 1, log)
        out[j] = k
        out[k] = j
        free[j] = False
        free[k] = False
        _fenwick_add(tree, j, -1)
        _fenwick_add(tree, k, -1)
    return out


def _f32(x: float) -> np.float32:
    return np.float32(x)


def rank_swap_column(
    x: NDArray[np.float64],
    rng: np.random.Generator,
    *,
    p: float | None = None,
    r0: float | None = None,
    k0: float | None = None,
    top_percent: float = 5.0,
    bottom_percent: float = 5.0,
) -> tuple[NDArray[np.float64], float]:
    """One column rank-swapped, and the window P used (a share of the swapped values N').

    Exactly one of ``p`` (percent of N'), ``r0`` or ``k0``; the two latter give P as sdcMicro
    derives it from the middle values' population variance V, mean m and the span
    D = |bottom value - top value| of the coded column: ``P = sqrt(2 V (1 - R0)) / D`` and
    ``P = sqrt(8/3) K0 |m| / D``. Counts use sdcMicro's single-precision arithmetic.
    """
    n = x.shape[0]
    order = np.argsort(-x, kind="stable")  # highest first; ties by row
    v = x[order].copy()
    top_ratio = min(max(_f32(top_percent) * _f32(0.01), _f32(0.0)), _f32(1.0))
    bottom_ratio = min(max(_f32(bottom_percent) * _f32(0.01), _f32(0.0)), _f32(1.0))
    n_top = int(_f32(n) * top_ratio)
    n_bottom = math.floor(_f32(n) * bottom_ratio)
    bottom = n - n_bottom
    top_value = v[n_top - 1] if n_top else v[0]
    bottom_value = v[bottom] if n_bottom else v[bottom - 1]
    if n_top:
        v[:n_top] = v[:n_top].mean()
    if n_bottom and bottom < n:
        v[bottom:] = v[bottom:].mean()
    lo, hi = min(n_top, bottom), max(n_top, bottom)
    middle = v[lo:hi]
    n_mid = middle.shape[0]
    delta = abs(bottom_value - top_value)
    if r0 is not None:
        var = float(np.mean(middle**2) - np.mean(middle) ** 2) if n_mid else 0.0
        window = float(_f32(math.sqrt(2.0 * var * (1.0 - r0)) / delta)) if delta else 0.0
    elif k0 is not None:
        window = float(_f32(math.sqrt(8.0 / 3.0) * k0 * abs(float(np.mean(middle))) / delta)) if delta and n_mid else 0.0
    else:
        window = float(_f32(float(p or 0.0) / 100.0))
    if n_mid > 1:
        partner = swap_partners(n_mid, float(_f32(n_mid) * _f32(window)), rng.random(n_mid))  # type: ignore[arg-type]
        v[lo:hi] = middle[partner]
    out = np.empty_like(x)
    out[order] = v
    return out, window


class RankSwap(Estimator):
    """Rank swapping (Moore 1996) with sdcMicro's parameters: each column's values swapped within a rank window.

    Per column: the top ``top_percent`` and bottom ``bottom_percent`` of the values are replaced
    by their means and left out; the other N' values, in rank order, are each swapped with a value
    chosen uniformly among those not yet swapped whose rank is lower by less than P N'
    (sdcMicro 5.8.1 ``rankSwap``, ``src/RankSwapping.h``). Columns are swapped independently, so
    correlations between columns weaken; each column keeps its (coded) values exactly.

    The output keeps the input's row order (scikit-learn's row alignment); shuffle the rows before
    publishing (``sdckit run`` and every CLI command that writes rows do), or the unchanged columns
    link each released row to its input row by position.

    Parameters
    ----------
    p : float, the rank window P in percent of N': two values may swap when their ranks i, j
        satisfy ``|i - j| < p N' / 100`` (sdcMicro's documented meaning of ``P``; note that its
        code reads ``P`` as a fraction, so sdckit ``p=5`` is sdcMicro ``P=0.05``).
    r0 : float, the multivariate preservation factor R0 (sdcMicro's default 0.95 when none of
        ``p``, ``r0``, ``k0`` is given): ``P = sqrt(2 V (1 - R0)) / D`` per column, V the middle
        values' population variance, D the span between the top and bottom coded values.
    k0 : float, the subset-mean preservation factor: ``P = sqrt(8/3) K0 |mean| / D``.
    top_percent, bottom_percent : float, percent of the largest and smallest values replaced by
        their mean before swapping (sdcMicro default 5 each).
    columns : columns to swap (default: all).
    random_state : None (default: fresh OS entropy, the only choice for a real release), or an
        int / Generator for a reproducible run (anyone who knows it can undo the swap).

    Attributes
    ----------
    columns_ : tuple of str. window_ : dict, the P used per column on the fitted table (share of N').
    n_features_in_, feature_names_in_ : as in scikit-learn.

    Examples
    --------
    >>> import numpy as np
    >>> x = np.arange(100.0).reshape(-1, 1)
    >>> out = RankSwap(p=5, top_percent=0, bottom_percent=0, random_state=0).fit_transform(x)
    >>> bool(np.array_equal(np.sort(out[:, 0]), x[:, 0])), int(np.abs(out - x).max()) < 5
    (True, True)
    """

    def __init__(
        self,
        *,
        p: float | None = None,
        r0: float | None = None,
        k0: float | None = None,
        top_percent: float = 5.0,
        bottom_percent: float = 5.0,
        columns: Sequence[str] | None = None,
        random_state: RandomState = None,
    ) -> None:
        self.p = p
        self.r0 = r0
        self.k0 = k0
        self.top_percent = top_percent
        self.bottom_percent = bottom_percent
        self.columns = columns
        self.random_state = random_state

    def _params(self) -> dict[str, float | None]:
        given = {name: getattr(self, name) for name in ("p", "r0", "k0") if getattr(self, name) is not None}
        if len(given) > 1:
            raise ParameterError(f"RankSwap: give one of p, r0 and k0, not {' and '.join(given)}.")
        for name, value in given.items():
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
                raise ParameterError(f"RankSwap: {name}={value!r} must be a number >= 0.")
        if "p" in given and given["p"] > 100:
            raise ParameterError(f"RankSwap: p={given['p']!r} is a percentage of the records; give 0..100, e.g. p=5.")
        if "r0" in given and given["r0"] > 1:
            raise ParameterError(f"RankSwap: r0={given['r0']!r} is a correlation ratio; give 0..1, e.g. r0=0.95.")
        for name in ("top_percent", "bottom_percent"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= 50:
                raise ParameterError(f"RankSwap: {name}={value!r} must be a percentage in 0..50, e.g. 5.")
        if not given:
            given = {"r0": 0.95}
        return {"p": given.get("p"), "r0": given.get("r0"), "k0": given.get("k0")}

    def __sklearn_tags__(self) -> Any:
        tags = super().__sklearn_tags__()
        tags.non_deterministic = self.random_state is None  # fresh OS entropy: two calls differ
        return tags

    def fit(self, X: DataSource, y: None = None) -> RankSwap:
        """Check the parameters and the columns (rank swapping learns nothing from the data)."""
        self._params()
        as_generator(self.random_state)
        frame, _ = self._read_input(X, reset=True)
        x, names = numeric_matrix(collect_if_lazy(frame, type(self).__name__), self.columns, min_rows=2)
        self.columns_ = names
        params = self._params()
        # the window depends on the column only, not on the draws
        self.window_ = {
            name: rank_swap_column(
                x[:, j], np.random.default_rng(0), top_percent=float(self.top_percent),
                bottom_percent=float(self.bottom_percent), **params,
            )[1]
            for j, name in enumerate(names)
        }
        return self

    def transform(self, X: DataSource) -> Any:
        """``X`` with each fitted column rank-swapped (fresh randomness on every call)."""
        self.check_is_fitted("columns_")
        params = self._params()
        rng = as_generator(self.random_state)
        frame, was_array = self._read_input(X, reset=False)
        frame = collect_if_lazy(frame, type(self).__name__)
        x, names = numeric_matrix(frame, list(self.columns_), min_rows=2)
        out = np.empty_like(x)
        for j, _name in enumerate(names):
            out[:, j], _ = rank_swap_column(
                x[:, j], rng, top_percent=float(self.top_percent), bottom_percent=float(self.bottom_percent), **params
            )
        result = like_input(frame, {name: out[:, j] for j, name in enumerate(names)})
        return self._write_output(restore_kind(result, X), was_array)
