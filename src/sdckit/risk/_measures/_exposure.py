"""Exposure Q_J(t) and k-anonymity of a table on a set of columns (anonymity notes §1)."""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any, NoReturn

import narwhals as nw
import numpy as np
import polars as pl
from numpy.typing import ArrayLike, NDArray

from sdckit._checks import (
    as_scalar_or_array,
    check_groupable,
    check_k,
    threshold,
    warn_identifier,
    warn_weight_columns,
)
from sdckit._io import DataSource, MissingPolicy, as_narwhals, check_columns, like_input, read_data
from sdckit.errors import EmptyTableError, InputError, ParameterError, UnreadableInputError
from sdckit.risk._counts._counting import n_distinct, size_histogram, weighted_group_sizes
from sdckit.risk._counts._weights import (
    check_population_counts,
    check_weight_column,
    group_frequencies,
    read_keys_and_weights,
)
from sdckit.risk._measures._individual import benedetti_franconi


class ExposureCurve:
    """The group-size histogram of a table on columns J, read as the exposure function Q_J.

    Q_J(t) = sum over groups g with |g| <= floor(t n) of |g| / n: the share of users whose group on
    J holds at most floor(t n) users [seed, made exact; anonymity notes §1]. The share not
    k-anonymous is Q_J((k - 1) / n). Sizes are compared as integers, never as floats.

    Attributes
    ----------
    columns : the columns J.
    n : number of users (rows; identical rows are different users).
    sizes : distinct group sizes, ascending (int64, shape (s,)).
    n_groups_of_size : number of groups of each size (int64, shape (s,)).
    weights : the sampling-weight column, when one was given (else None).
    group_sizes, population_sizes : with weights, per group (any order, aligned): f_k, the sample
        count, and F_k, the sum of the weights (the estimated population count); else None.

    Examples
    --------
    >>> import polars as pl
    >>> df = pl.DataFrame({"sex": ["F", "F", "M", "M", "M", "F"], "zip": [1, 1, 1, 2, 2, 3]})
    >>> curve = exposure_curve(df, ["sex", "zip"])
    >>> curve.k_anonymity, curve.n_unique, curve.n_groups
    (1, 2, 4)
    >>> curve.not_k_anonymous(3), curve.at(0.5)
    (1.0, 1.0)
    >>> curve.not_k_anonymous([1, 2, 3]).tolist()
    [0.0, 0.3333333333333333, 1.0]
    """

    def __init__(
        self,
        sizes: NDArray[np.int64],
        n_groups_of_size: NDArray[np.int64],
        *,
        columns: Sequence[str],
        weights: str | None = None,
        group_sizes: NDArray[np.int64] | None = None,
        population_sizes: NDArray[np.float64] | None = None,
    ) -> None:
        self.weights = weights
        self.group_sizes = None if group_sizes is None else np.asarray(group_sizes, dtype=np.int64)
        self.population_sizes = (
            None if population_sizes is None else np.asarray(population_sizes, dtype=np.float64)
        )
        self.sizes = np.asarray(sizes, dtype=np.int64)
        self.n_groups_of_size = np.asarray(n_groups_of_size, dtype=np.int64)
        self.columns = tuple(columns)
        users = self.sizes * self.n_groups_of_size
        self.n = int(users.sum())
        self._cum_users = np.concatenate([[0], np.cumsum(users)])

    def _share(self, thr: NDArray[np.int64]) -> NDArray[np.float64]:
        if self.n == 0:
            return np.zeros(np.shape(thr))
        idx = np.searchsorted(self.sizes, thr, side="right")
        return np.asarray(self._cum_users[idx] / self.n, dtype=np.float64)

    def at(self, t: ArrayLike) -> Any:
        """Q_J(t): share of users (0..1) in groups of at most floor(t n) users; t a share of rows."""
        thr = threshold(self.n, t=t)
        return as_scalar_or_array(self._share(thr), np.ndim(thr) == 0)

    def not_k_anonymous(self, k: ArrayLike) -> Any:
        """Share of users (0..1) in groups of fewer than k users: Q_J((k - 1) / n)."""
        thr = threshold(self.n, k=k)
        return as_scalar_or_array(self._share(thr), np.ndim(thr) == 0)

    def not_k_anonymous_population(self, k: ArrayLike) -> Any:
        """Share of users (0..1) whose key's estimated population count F_k is below k (needs weights).

        The sample-side figure is :meth:`not_k_anonymous` (f_k < k); F_k >= f_k, so this share is
        never larger. F_k is an estimate (a Horvitz-Thompson sum of sampling weights).
        """
        if self.population_sizes is None or self.group_sizes is None:
            raise ParameterError(
                "this curve was counted without weights; pass weights='COLUMN' to exposure_curve."
            )
        kk = check_k(k)
        order = np.argsort(self.population_sizes, kind="stable")
        big = self.population_sizes[order]
        cum = np.concatenate([[0], np.cumsum(self.group_sizes[order])])
        idx = np.searchsorted(big, kk.astype(np.float64), side="left")
        out = np.asarray(cum[idx] / max(self.n, 1), dtype=np.float64)
        return as_scalar_or_array(out, np.ndim(kk) == 0)

    @property
    def n_population_unique(self) -> int | None:
        """Sample uniques whose estimated population count is below 2 (None without weights)."""
        if self.population_sizes is None or self.group_sizes is None:
            return None
        return int(np.sum(self.group_sizes[(self.group_sizes == 1) & (self.population_sizes < 2)]))

    @property
    def k_anonymity(self) -> int:
        """The size of the smallest group: the table is k-anonymous for every k up to it."""
        return int(self.sizes[0]) if self.sizes.size else 0

    @property
    def n_unique(self) -> int:
        """Number of users alone in their group (unique on J)."""
        return int(self.n_groups_of_size[0]) if self.sizes.size and self.sizes[0] == 1 else 0

    @property
    def n_groups(self) -> int:
        """Number of distinct combinations of values on J."""
        return int(self.n_groups_of_size.sum())

    @property
    def entropy(self) -> float:
        """Shannon entropy of the empirical joint distribution on J, in bits: sum_g (|g|/n) log2(n/|g|)."""
        if self.n == 0:
            return 0.0
        p = self.sizes / self.n
        return float(np.sum(self.n_groups_of_size * p * np.log2(1.0 / p)))

    def to_frame(self) -> pl.DataFrame:
        """One row per group size: ``group_size``, ``n_groups``, ``n_users``, ``exposure`` = Q_J(size / n)."""
        users = self.sizes * self.n_groups_of_size
        return pl.DataFrame(
            {
                "group_size": self.sizes,
                "n_groups": self.n_groups_of_size,
                "n_users": users,
                "exposure": self._cum_users[1:] / max(self.n, 1),
            }
        )

    def to_dict(self) -> dict[str, Any]:
        """JSON form: the histogram and the headline figures (shares of users, entropy in bits)."""
        out: dict[str, Any] = {
            "columns": list(self.columns),
            "n": self.n,
            "k_anonymity": self.k_anonymity,
            "n_unique": self.n_unique,
            "n_groups": self.n_groups,
            "entropy_bits": self.entropy,
            "group_size": self.sizes.tolist(),
            "n_groups_of_size": self.n_groups_of_size.tolist(),
        }
        if self.population_sizes is not None:
            out["weights"] = self.weights
            out["n_population_unique"] = self.n_population_unique
            out["min_population_size"] = (
                float(self.population_sizes.min()) if self.population_sizes.size else 0.0
            )
        return out

    def plot(self, ax: Any = None, *, label: str | None = None, **kwargs: Any) -> Any:
        """Step plot of Q_J(t) against t on a log axis (t from 1/n to 1); returns the matplotlib Axes."""
        import matplotlib.pyplot as plt  # lazy: plotting (start-up time)

        if ax is None:
            _, ax = plt.subplots(figsize=(6, 4))
        n = max(self.n, 1)
        ts = np.concatenate([[1.0 / n], self.sizes / n, [1.0]])
        qs = np.concatenate([[self._share(np.asarray(1))], self._cum_users[1:] / n, [1.0]])
        ax.step(ts, qs, where="post", label=label or "true exposure Q_J(t)", **kwargs)
        ax.set_xscale("log")
        ax.set_xlabel("t (share of rows)")
        ax.set_ylabel("Q_J(t) (share of users)")
        ax.set_ylim(-0.02, 1.02)
        return ax

    def __bool__(self) -> NoReturn:  # else `if exposure_curve(df, cols):` would always be true
        msg = "an ExposureCurve is a function of t, not a number; use curve.at(t) or .not_k_anonymous(k)"
        raise TypeError(msg)

    def __repr__(self) -> str:
        return (
            f"ExposureCurve(columns={list(self.columns)}, n={self.n}, k_anonymity={self.k_anonymity}, "
            f"n_unique={self.n_unique}, n_groups={self.n_groups})"
        )


def exposure_curve(
    data: DataSource,
    columns: Sequence[str] | str,
    *,
    missing: MissingPolicy = "value",
    weights: str | None = None,
) -> ExposureCurve:
    """Count the groups the rows form on ``columns`` and return the exposure function Q_J.

    Parameters
    ----------
    data : a path or any frame the input layer accepts; lazy frames are counted where they live.
    columns : the quasi-identifiers J (a list or ``"a,b,c"``).
    missing : ``"value"`` (default) counts null as a value; ``"drop"`` drops rows with a missing
        value in J first (the curve is then over the remaining users).
    weights : a sampling-weight column: each group also gets F_k = sum of the weights of its
        records, the estimated population count (see :meth:`ExposureCurve.not_k_anonymous_population`).
        The curve itself stays the sample's, f_k.

    Warns
    -----
    SdcWarning : a column that looks like a survey weight, or a column with a different value in
        every row (probably an identifier).

    Notes
    -----
    Q_J(t) = sum_{v : p_J(v) <= t} p_J(v) [seed, made exact; anonymity notes §1], with the integer
    comparison |group| <= floor(t n). Identical rows are different users: nothing is deduplicated.
    Cost: one pass over the rows (mixed-radix key and ``np.bincount`` for eager tables of integer,
    categorical or text columns); memory O(n) for the key, O(groups) otherwise.

    References
    ----------
    .. [1] Bravo-Hermsdorff, G. et al. (2022). Statistical anonymity: quantifying reidentification
       risks without reidentifying users. arXiv:2201.12306.

    Examples
    --------
    >>> from sdckit.datasets import load_adult
    >>> curve = exposure_curve(load_adult(), ["workclass", "marital-status", "race", "sex"])
    >>> curve.n_unique, curve.k_anonymity, round(curve.not_k_anonymous(5), 6)
    (58, 1, 0.008753)
    """
    if weights is not None:
        frame = as_narwhals(data)
        cols = check_columns(frame, columns)
        d = read_data(frame, [*cols, weights] if weights not in cols else cols, missing=missing)
        check_weight_column(d.frame, weights, cols)
        frame = d.frame
    else:
        d = read_data(data, columns, missing=missing)
        cols = list(d.columns)
        frame = d.frame
    check_groupable(frame, cols)
    warn_weight_columns(cols)
    sizes, groups = size_histogram(frame, cols)
    if weights is not None:
        f_g, big_g = weighted_group_sizes(frame, cols, weights)
        check_population_counts(f_g, big_g, weights)
        curve = ExposureCurve(
            sizes, groups, columns=cols, weights=weights, group_sizes=f_g, population_sizes=big_g
        )
    else:
        curve = ExposureCurve(sizes, groups, columns=cols)
    if curve.n == 0:
        raise EmptyTableError("the table has no rows; there is nothing to measure.")
    if curve.n > 2 and curve.n_unique == curve.n:  # only then can a single column be all-unique
        for c, m in n_distinct(frame, cols).items():
            if m == curve.n:
                warn_identifier(c, m, curve.n)
    return curve


def exposure(
    data: DataSource,
    columns: Sequence[str] | str,
    *,
    k: int | None = None,
    t: float | None = None,
    missing: MissingPolicy = "value",
) -> float:
    """Share of users (0..1) not k-anonymous on ``columns`` (give k), or Q_J(t) (give t).

    Exactly one of ``k`` (group size >= 1) and ``t`` (share of rows in [0, 1]) must be given.

    Examples
    --------
    >>> import polars as pl
    >>> df = pl.DataFrame({"a": [0] * 5 + [0] + [1] * 5, "b": [1] * 5 + [0] + [0] * 5})
    >>> exposure(df, ["a", "b"], k=2)       # the adversarial table: one unique user of 11
    0.09090909090909091
    >>> exposure(df, ["a"], k=5), exposure(df, ["b"], t=0.5)
    (0.0, 0.45454545454545453)
    """
    threshold(1, k=k, t=t)  # checks exactly one of k, t and its domain before any counting
    curve = exposure_curve(data, columns, missing=missing)
    return float(curve.not_k_anonymous(k) if k is not None else curve.at(t))  # type: ignore[arg-type]


def record_risk(
    data: DataSource,
    columns: Sequence[str] | str,
    *,
    k: int | None = None,
    weights: str | None = None,
) -> Any:
    """Per-row risk: the size of each row's group on ``columns`` and flags, in the input's frame type.

    Adds ``risk_group_size`` (int f_k: users sharing the row's values on J, itself included),
    ``risk_is_unique`` (group of 1), when ``k`` is given ``risk_below_k`` (group smaller than k),
    ``risk_individual`` (the re-identification risk of :func:`~sdckit.risk.individual_risk`:
    1 / f_k without weights) and, with ``weights`` (a sampling-weight column),
    ``risk_population_size`` (F_k, the sum of the weights over the group). Other columns and the
    row order are untouched; missing values count as a value. Lazy frames must be collected first
    (per-row output lives in memory).

    Examples
    --------
    >>> import pandas as pd
    >>> df = pd.DataFrame({"sex": ["F", "F", "M"], "age": [30, 30, 41]})
    >>> record_risk(df, ["sex", "age"], k=2)
      sex  age  risk_group_size  risk_is_unique  risk_below_k  risk_individual
    0   F   30                2           False         False              0.5
    1   F   30                2           False         False              0.5
    2   M   41                1            True          True              1.0
    """
    thr = None if k is None else int(threshold(1, k=k))
    if isinstance(as_narwhals(data) if not isinstance(data, (str, os.PathLike)) else None, nw.LazyFrame):
        raise UnreadableInputError(
            "record_risk adds a column per row of a frame in memory; on a lazy frame use "
            "sdckit.risk.with_group_sizes (the group size as a lazy column) or with_individual_risk, "
            "or collect the frame first."
        )
    existing = (
        set(as_narwhals(data).collect_schema().names()) if not isinstance(data, (str, os.PathLike)) else set()
    )
    for name in (
        "risk_group_size",
        "risk_is_unique",
        "risk_below_k",
        "risk_individual",
        "risk_population_size",
    ):
        if name in existing:
            raise InputError(
                f"the table already has a column {name!r}; rename it before calling record_risk."
            )
    df, cols, w, _ = read_keys_and_weights(data, columns, weights, what="record_risk")
    f_g, big_g, ids = group_frequencies(df, cols, w)
    if weights is not None:
        check_population_counts(f_g, big_g, weights)
    size = f_g[ids]
    out: dict[str, NDArray[Any]] = {"risk_group_size": size, "risk_is_unique": size == 1}
    if thr is not None:
        out["risk_below_k"] = size <= thr
    out["risk_individual"] = benedetti_franconi(f_g, big_g)[ids]
    if weights is not None:
        out["risk_population_size"] = big_g[ids]
    return like_input(data, out)


def entropy(data: DataSource, columns: Sequence[str] | str, *, missing: MissingPolicy = "value") -> float:
    """Shannon entropy of the rows on ``columns``, in bits: H = sum_g (|g|/n) log2(n/|g|).

    Examples
    --------
    >>> import polars as pl
    >>> entropy(pl.DataFrame({"a": [1, 1, 2, 2, 3, 3, 4, 4]}), ["a"])
    2.0
    """
    return exposure_curve(data, columns, missing=missing).entropy
