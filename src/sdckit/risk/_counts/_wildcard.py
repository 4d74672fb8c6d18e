"""k-anonymity when a missing cell matches any value (sdcMicro's semantics for local suppression)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import narwhals as nw
import numpy as np
from numpy.typing import NDArray

from sdckit._io import DataSource, as_narwhals, check_columns
from sdckit._scale import collect_all
from sdckit._scale._jit import njit

MAX_PATTERNS = 1024
"""Up to this many distinct missing patterns the pattern-pair kernel runs; beyond, whichever of the
two kernels costs fewer operations."""


def key_codes(data: DataSource, columns: Sequence[str] | str | None) -> tuple[NDArray[np.int32], list[str]]:
    """Integer codes (n, p) of the key columns: 0..m_j - 1 per column, -1 for a missing cell.

    Missing is null (and NaN in a float column). Codes follow the sorted text of the values.
    """
    frame = as_narwhals(data)
    names = check_columns(frame, columns)
    frame = collect_all(
        frame, what="wildcard_group_sizes", instead="with_wildcard_sizes adds the sizes as a column where they live."
    )
    out = np.empty((len(frame), len(names)), dtype=np.int32)
    for j, name in enumerate(names):
        out[:, j] = column_codes(frame[name])
    return out, names


def column_codes(series: Any) -> NDArray[np.int32]:
    """Codes of one narwhals series: 0..m - 1 in the order of the values' text, -1 for missing."""
    missing = np.array(series.is_null().to_numpy(), dtype=bool)  # a copy: pandas gives read-only views
    if series.dtype.is_float():
        missing |= np.asarray(series.is_nan().fill_null(True).to_numpy(), dtype=bool)
    text = np.asarray(series.cast(nw.String).fill_null("").to_numpy(), dtype=object).astype(str)
    codes = np.full(text.shape[0], -1, dtype=np.int32)
    if (~missing).any():
        _, inverse = np.unique(text[~missing], return_inverse=True)
        codes[~missing] = inverse.astype(np.int32)
    return codes


@njit(cache=True, nogil=True)
def _pairwise_sizes(codes: NDArray[np.int32]) -> NDArray[np.int64]:  # pragma: no cover - compiled
    n, p = codes.shape
    out = np.zeros(n, dtype=np.int64)
    for i in range(n):
        out[i] += 1
        for s in range(i + 1, n):
            ok = True
            for j in range(p):
                a = codes[i, j]
                b = codes[s, j]
                if a >= 0 and b >= 0 and a != b:
                    ok = False
                    break
            if ok:
                out[i] += 1
                out[s] += 1
    return out


@njit(cache=True, nogil=True)
def _fill_keys(
    codes: NDArray[np.int32], rows: NDArray[np.int64], union: np.int64, radix: NDArray[np.int64], out: NDArray[np.int64]
) -> None:  # pragma: no cover - compiled
    """Mixed-radix key of each of ``rows`` on the keys missing in neither pattern (bits of ``union``)."""
    p = codes.shape[1]
    for t in range(rows.shape[0]):
        v = 0
        for j in range(p):
            if not (union >> j) & 1:
                v += codes[rows[t], j] * radix[j]
        out[t] = v


@njit(cache=True, nogil=True)
def _pattern_sizes(
    codes: NDArray[np.int32],
    radix: NDArray[np.int64],
    patterns: NDArray[np.int64],
    starts: NDArray[np.int64],
    rows: NDArray[np.int64],
) -> NDArray[np.int64]:  # pragma: no cover - compiled
    """For each pair of missing patterns (A, B): records of B equal to a record of A on the keys
    missing in neither, counted by sorting mixed-radix keys and binary search."""
    n = codes.shape[0]
    out = np.zeros(n, dtype=np.int64)
    n_pat = patterns.shape[0]
    for a in range(n_pat):
        ra = rows[starts[a] : starts[a + 1]]
        key_a = np.empty(ra.shape[0], dtype=np.int64)
        for b in range(n_pat):
            rb = rows[starts[b] : starts[b + 1]]
            union = patterns[a] | patterns[b]
            key_b = np.empty(rb.shape[0], dtype=np.int64)
            _fill_keys(codes, ra, union, radix, key_a)
            _fill_keys(codes, rb, union, radix, key_b)
            key_b.sort()
            lo = np.searchsorted(key_b, key_a, side="left")
            hi = np.searchsorted(key_b, key_a, side="right")
            for t in range(ra.shape[0]):
                out[ra[t]] += hi[t] - lo[t]
    return out


def wildcard_sizes(codes: NDArray[np.int32]) -> NDArray[np.int64]:
    """:func:`wildcard_group_sizes` on integer codes (-1 = missing); see there."""
    codes = np.ascontiguousarray(codes, dtype=np.int32)
    n, p = codes.shape
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    if p == 0:
        return np.full(n, n, dtype=np.int64)
    layout = _pattern_layout(codes)
    if layout is None:
        return _pairwise_sizes(codes)
    return _pattern_sizes(codes, *layout)


def _pattern_layout(
    codes: NDArray[np.int32],
) -> tuple[NDArray[np.int64], NDArray[np.int64], NDArray[np.int64], NDArray[np.int64]] | None:
    """``(radix, patterns, starts, rows)`` for the by-pattern kernels: mixed-radix weights of the
    keys, the distinct missingness patterns (bit j = key j missing), and the rows grouped by pattern
    (pattern a is ``rows[starts[a]:starts[a + 1]]``); None when the keys do not fit in 62 bits or the
    pairwise count is cheaper."""
    n, p = codes.shape
    sizes = np.maximum(codes.max(axis=0).astype(np.float64) + 1, 1)
    if p > 62 or float(np.prod(sizes)) >= 2.0**62:
        return None
    bits = ((codes < 0).astype(np.int64) << np.arange(p, dtype=np.int64)).sum(axis=1)
    patterns, inverse = np.unique(bits, return_inverse=True)
    pattern_cost = patterns.shape[0] * n * (2.0 * p + np.log2(n + 1))  # pairs of patterns, keys and sorts
    if patterns.shape[0] > MAX_PATTERNS and pattern_cost >= n * n * p / 2.0:
        return None
    rows = np.argsort(inverse, kind="stable").astype(np.int64)
    starts = np.concatenate([[0], np.cumsum(np.bincount(inverse, minlength=patterns.shape[0]))]).astype(np.int64)
    radix = np.concatenate([[1], np.cumprod(sizes[:-1])]).astype(np.int64)
    return radix, patterns.astype(np.int64), starts, rows


def wildcard_group_sizes(data: DataSource, columns: Sequence[str] | str | None = None) -> NDArray[np.int64]:
    """For each record, the number of records compatible with it, a missing cell matching any value.

    Records r and s are compatible when, in every key column j, r_j = s_j or r_j or s_j is missing.
    This is the frequency sdcMicro's ``localSuppression`` and ``kAnon`` use (a suppressed cell, NA,
    matches any value); every record counts itself. The table is k-anonymous with missing as a
    wildcard when ``wildcard_group_sizes(data, columns).min() >= k``. Without missing cells it is
    the ordinary size of each record's group on ``columns``.

    Parameters
    ----------
    data : a path or a frame (pandas, polars, pyarrow; lazy frames are collected).
    columns : the key columns (default: all). Missing is null (or NaN in a float column).

    Returns
    -------
    int64 array (n,), each entry >= 1.

    Notes
    -----
    Records are grouped by their pattern of missing keys; for each pair of patterns (A, B) the
    records of B are matched with those of A on the keys missing in neither, by sorting integer
    keys. Time O(P n (p + log n)) for P distinct patterns, memory O(n p). With more than
    1024 patterns and a pairwise scan cheaper, or keys too many to pack in 62 bits, a pairwise
    kernel runs instead (time O(n^2 p), memory O(n p)).

    See Also
    --------
    sdckit.anonymize.LocalSuppressor : suppresses the fewest cells to make every size >= k.

    Examples
    --------
    >>> import polars as pl
    >>> df = pl.DataFrame({"sex": ["m", "m", "f", None], "age": [30, 40, 30, 30]})
    >>> wildcard_group_sizes(df, ["sex", "age"]).tolist()
    [2, 1, 2, 3]
    """
    codes, _ = key_codes(data, columns)
    return wildcard_sizes(codes)


@njit(cache=True, nogil=True)
def _pairwise_weight_sums(codes: NDArray[np.int32], weights: NDArray[np.float64]) -> NDArray[np.float64]:  # pragma: no cover - compiled
    n, p = codes.shape
    out = np.zeros(n, dtype=np.float64)
    for i in range(n):
        out[i] += weights[i]
        for s in range(i + 1, n):
            ok = True
            for j in range(p):
                a = codes[i, j]
                b = codes[s, j]
                if a >= 0 and b >= 0 and a != b:
                    ok = False
                    break
            if ok:
                out[i] += weights[s]
                out[s] += weights[i]
    return out


@njit(cache=True, nogil=True)
def _pattern_weight_sums(
    codes: NDArray[np.int32],
    weights: NDArray[np.float64],
    radix: NDArray[np.int64],
    patterns: NDArray[np.int64],
    starts: NDArray[np.int64],
    rows: NDArray[np.int64],
) -> NDArray[np.float64]:  # pragma: no cover - compiled
    """:func:`_pattern_sizes` with each compatible record counted by its weight (prefix sums of the
    weights in key order)."""
    n = codes.shape[0]
    out = np.zeros(n, dtype=np.float64)
    n_pat = patterns.shape[0]
    for a in range(n_pat):
        ra = rows[starts[a] : starts[a + 1]]
        key_a = np.empty(ra.shape[0], dtype=np.int64)
        for b in range(n_pat):
            rb = rows[starts[b] : starts[b + 1]]
            union = patterns[a] | patterns[b]
            key_b = np.empty(rb.shape[0], dtype=np.int64)
            _fill_keys(codes, ra, union, radix, key_a)
            _fill_keys(codes, rb, union, radix, key_b)
            order = np.argsort(key_b, kind="mergesort")
            key_b = key_b[order]
            cum = np.zeros(rb.shape[0] + 1, dtype=np.float64)
            for t in range(rb.shape[0]):
                cum[t + 1] = cum[t] + weights[rb[order[t]]]
            lo = np.searchsorted(key_b, key_a, side="left")
            hi = np.searchsorted(key_b, key_a, side="right")
            for t in range(ra.shape[0]):
                out[ra[t]] += cum[hi[t]] - cum[lo[t]]
    return out


def wildcard_weight_sums(codes: NDArray[np.int32], weights: NDArray[np.float64]) -> NDArray[np.float64]:
    """For each record, the sum of the weights of the records compatible with it (itself included),
    a missing cell (code -1) matching any value: F_k of sdcMicro's ``freqCalc`` with missing keys.

    The weighted twin of :func:`wildcard_sizes` (same kernels, same cost); with unit weights it
    equals ``wildcard_sizes(codes)``.
    """
    codes = np.ascontiguousarray(codes, dtype=np.int32)
    w = np.ascontiguousarray(weights, dtype=np.float64)
    n, p = codes.shape
    if n == 0:
        return np.zeros(0, dtype=np.float64)
    if p == 0:
        return np.full(n, float(w.sum()), dtype=np.float64)
    layout = _pattern_layout(codes)
    if layout is None:
        return _pairwise_weight_sums(codes, w)
    return _pattern_weight_sums(codes, w, *layout)
