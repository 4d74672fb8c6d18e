"""Individual re-identification risk (Benedetti-Franconi) and global risk, with sampling weights."""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import narwhals as nw
import numpy as np
import polars as pl
from numpy.typing import ArrayLike, NDArray

from sdckit._checks import warn_weight_columns
from sdckit._io import DataSource, check_columns
from sdckit._scale import collect_small
from sdckit.errors import InputError, ParameterError
from sdckit.risk._counts._lazy_keys import (
    attach_group_counts,
    attach_wildcard_sizes,
    check_new_columns,
    drop_keys,
    lazy_frame,
    with_keys,
)
from sdckit.risk._counts._weights import (
    check_population_counts,
    check_weight_column,
    group_frequencies,
    read_keys_and_weights,
)
from sdckit.risk._counts._wildcard import key_codes, wildcard_sizes, wildcard_weight_sums

KeyMissing = Literal["value", "wildcard", "drop", "error"]
"""How :func:`individual_risk` reads a missing key cell: ``value`` (a value of its own, the default, as
the release check's ``missing_semantics: value``), ``wildcard`` (it matches any value, sdcMicro's
``freqCalc``/``measure_risk``), or the reading policies ``drop`` and ``error``."""

_SERIES_FROM = 1e4  # fk = 2 and x = f/(F - f) above this: the asymptotic series, free of cancellation
_HIST_EDGES = (0.0, 0.001, 0.01, 0.05, 0.1, 0.2, 0.5, 1.0)


def benedetti_franconi(fk: ArrayLike, big_f: ArrayLike) -> NDArray[np.float64]:
    """Per-record risk r_k of the negative-binomial model, Benedetti-Franconi approximation.

    With p_k = f_k / F_k (sample over estimated population count of the record's key) [1, 2]:

    * f_k = 1:  r = p / (1 - p) * log(1 / p)
    * f_k = 2:  r = p / (1 - p) - (p / (1 - p))^2 * log(1 / p)
    * f_k >= 3: r = p / (f_k - (1 - p))
    * F_k = f_k (a census of the key): r = 1 / f_k,

    exactly as sdcMicro's ``indivRisk(method = "approx")``. Computed as x = f / (F - f) and
    log(1 / p) = log1p(1 / x), with a series for f = 2 and large x, so r stays in [0, 1].
    """
    f = np.asarray(fk, dtype=np.float64)
    big = np.asarray(big_f, dtype=np.float64)
    out = np.empty(np.broadcast(f, big).shape, dtype=np.float64)
    f, big = np.broadcast_arrays(f, big)
    census = big <= f
    gap = np.where(census, 1.0, big - f)
    x = f / gap  # p / (1 - p)
    log_inv_p = np.log1p(gap / f)  # log(1 / p) = log(F / f)
    one = f == 1
    two = f == 2
    out[one] = (x * log_inv_p)[one]
    r2 = x - x * x * log_inv_p
    inv = 1.0 / np.where(x > 0, x, 1.0)
    series = 0.5 - inv / 3 + inv**2 / 4 - inv**3 / 5 + inv**4 / 6 - inv**5 / 7
    r2 = np.where(x > _SERIES_FROM, series, r2)
    out[two] = r2[two]
    many = f >= 3
    p = f / big
    out[many] = (p / (f - (1.0 - p)))[many]
    out[census] = 1.0 / f[census]
    return out


@dataclass(frozen=True, kw_only=True)
class IndividualRisk:
    """Per-record re-identification risk and the global risk of a table on key columns.

    Per-record arrays are in the input's row order (length n).
    """

    columns: tuple[str, ...]
    """The key columns (quasi-identifiers)."""
    weights: str | None
    """The sampling-weight column (None: the table is the population, r = 1 / f_k)."""
    n: int
    """Records measured."""
    n_dropped: int | None
    """Rows dropped for missing key values (policy ``"drop"``)."""
    missing: str = "value"
    """How a missing key cell was read: ``value`` (a value of its own) or ``wildcard`` (it matches any
    value, sdcMicro's reading); ``drop``/``error`` when those policies were asked."""
    risk: NDArray[np.float64] = field(repr=False)
    """r_i in [0, 1]: the probability that a record is correctly re-identified by an attacker who
    links it on the key columns to a population register (Benedetti-Franconi)."""
    sample_frequency: NDArray[np.int64] = field(repr=False)
    """f_k of each record: records in the sample sharing its key (itself included)."""
    population_frequency: NDArray[np.float64] = field(repr=False)
    """F_k of each record: the sum of the weights over its key, the estimated population count."""

    @property
    def expected_reidentifications(self) -> float:
        """Global risk as a count: the expected number of re-identifications, sum_i r_i."""
        return float(self.risk.sum())

    @property
    def global_risk(self) -> float:
        """Global risk as a share (0..1): sum_i r_i / n, sdcMicro's ``global$risk``."""
        return self.expected_reidentifications / self.n if self.n else 0.0

    @property
    def max_risk(self) -> float:
        """The largest individual risk."""
        return float(self.risk.max()) if self.n else 0.0

    def above(self, threshold: float) -> NDArray[np.bool_]:
        """Per record: is its risk strictly above ``threshold`` (0..1)?"""
        t = float(threshold)
        if not (0.0 <= t <= 1.0):
            raise ParameterError(f"threshold={threshold!r} is a risk between 0 and 1, e.g. 0.1.")
        return np.asarray(self.risk > t)

    def n_above(self, threshold: float) -> int:
        """Number of records whose risk is strictly above ``threshold``."""
        return int(np.count_nonzero(self.above(threshold)))

    def histogram(self) -> list[tuple[str, int]]:
        """Records per risk interval: [0, 0.001], (0.001, 0.01], ..., (0.5, 1]."""
        edges = np.asarray(_HIST_EDGES)
        idx = np.clip(np.searchsorted(edges, self.risk, side="left") - 1, 0, len(edges) - 2)
        counts = np.bincount(idx, minlength=len(edges) - 1)
        labels = [f"[0, {edges[1]:g}]"] + [f"({a:g}, {b:g}]" for a, b in itertools.pairwise(edges[1:])]
        return list(zip(labels, counts.astype(int).tolist(), strict=True))

    def to_frame(self) -> pl.DataFrame:
        """One row per record: ``risk_individual``, ``risk_group_size`` (f_k), ``risk_population_size`` (F_k)."""
        return pl.DataFrame(
            {
                "risk_individual": self.risk,
                "risk_group_size": self.sample_frequency,
                "risk_population_size": self.population_frequency,
            }
        )

    def to_dict(self) -> dict[str, Any]:
        """JSON form: global risk (count and share), the maximum, the histogram; no per-record values."""
        return {
            "columns": list(self.columns),
            "weights": self.weights,
            "n": self.n,
            "n_dropped": self.n_dropped,
            "missing": self.missing,
            "expected_reidentifications": self.expected_reidentifications,
            "global_risk": self.global_risk,
            "max_risk": self.max_risk,
            "n_above": {f"{t:g}": self.n_above(t) for t in (0.01, 0.05, 0.1, 0.5)},
            "histogram": [{"interval": a, "n_records": c} for a, c in self.histogram()],
        }


def individual_risk(
    data: DataSource,
    columns: Sequence[str] | str,
    *,
    weights: str | None,
    missing: KeyMissing = "value",
) -> IndividualRisk:
    """Per-record re-identification risk on ``columns`` and the global risk (expected re-identifications).

    Each record's key k (its values on ``columns``) has sample count f_k and estimated population
    count F_k = sum of the sampling weights over the key. Under the negative-binomial
    super-population model the record's risk is E[1 / F | f_k], approximated as Benedetti & Franconi
    do (see :func:`benedetti_franconi`), the measure behind sdcMicro's ``indivRisk`` and
    ``measure_risk``. Without weights (``weights=None``) the table is taken as the population and
    r = 1 / f_k. The global risk is sum_i r_i (expected re-identifications) and its share of n.

    Parameters
    ----------
    data : a path or any frame the input layer accepts (collected into memory).
    columns : the key columns.
    weights : the sampling-weight column (positive; at least 1 in total over each key), or None.
    missing : how a missing key cell (a suppressed cell, or missing in the input) is read.

        * ``"value"`` (default): a value of its own, so f_k counts the records with the same
          pattern of missing cells. This is the reading of the release check's default
          (``missing_semantics: value``): an attacker who reads "suppressed" as a category.
        * ``"wildcard"``: a missing cell matches any value, sdcMicro's ``freqCalc`` and
          ``measure_risk`` (``alpha = 1``): f_k counts every record equal to this one on the keys
          present in both, F_k sums their weights (:func:`sdckit.risk.wildcard_group_sizes`).
        * ``"drop"`` drops the records with a missing key; ``"error"`` refuses them.

        On tables without missing keys every reading gives the same figures.

    Notes
    -----
    A risk of 0.03 means: an intruder who matches this record on the key columns against the
    population picks the right person with probability about 3 %. Cost: one group-by, O(n).

    References
    ----------
    .. [1] Benedetti, R. & Franconi, L. (1998). Statistical and technological solutions for
       controlled data dissemination. Proc. NTTS, 225-232.
    .. [2] Franconi, L. & Polettini, S. (2004). Individual risk estimation in mu-Argus: a review.
       Privacy in Statistical Databases, LNCS 3050, 262-272.

    Examples
    --------
    >>> import polars as pl
    >>> df = pl.DataFrame({"sex": ["F", "F", "M"], "age": [30, 30, 41], "w": [50.0, 50.0, 20.0]})
    >>> r = individual_risk(df, ["sex", "age"], weights="w")
    >>> r.risk.round(6).tolist(), round(r.expected_reidentifications, 6)
    ([0.018779, 0.018779, 0.15767], 0.195228)
    >>> individual_risk(df, ["sex", "age"], weights=None).risk.tolist()
    [0.5, 0.5, 1.0]
    >>> gap = pl.DataFrame({"sex": ["F", None, "M"], "age": [30, 30, 41]})
    >>> individual_risk(gap, ["sex", "age"], weights=None).risk.tolist()
    [1.0, 1.0, 1.0]
    >>> individual_risk(gap, ["sex", "age"], weights=None, missing="wildcard").risk.tolist()
    [0.5, 0.5, 1.0]
    """
    if missing not in ("value", "wildcard", "drop", "error"):
        raise ParameterError(
            f"missing={missing!r}: use 'value' (a missing key cell is a value of its own), 'wildcard' (it matches "
            "any value, sdcMicro's reading), 'drop' or 'error'."
        )
    df, cols, w, n_dropped = read_keys_and_weights(
        data, columns, weights, missing="value" if missing == "wildcard" else missing, what="individual_risk"
    )
    warn_weight_columns(cols)
    if missing == "wildcard":
        codes, _ = key_codes(df, list(cols))
        fk_rec = wildcard_sizes(codes)
        big_f_rec = fk_rec.astype(np.float64) if w is None else wildcard_weight_sums(codes, w)
        if weights is not None:
            check_population_counts(fk_rec, big_f_rec, weights)
        return IndividualRisk(
            columns=tuple(cols), weights=weights, n=df.height, n_dropped=n_dropped, missing="wildcard",
            risk=benedetti_franconi(fk_rec, big_f_rec), sample_frequency=fk_rec, population_frequency=big_f_rec,
        )
    fk, big_f, ids = group_frequencies(df, cols, w)
    if weights is not None:
        check_population_counts(fk, big_f, weights)
    return IndividualRisk(
        columns=tuple(cols),
        weights=weights,
        n=df.height,
        n_dropped=n_dropped,
        missing=missing,
        risk=benedetti_franconi(fk, big_f)[ids],  # one value per key, then per record
        sample_frequency=fk[ids],
        population_frequency=big_f[ids],
    )


def benedetti_franconi_expr(fk: str, big_f: str) -> nw.Expr:
    """:func:`benedetti_franconi` as a narwhals expression on the columns ``fk`` and ``big_f``, for
    lazy frames (the engine evaluates it row by row). log(1 / p) is log(F / f), which for F within
    a relative 1e-12 of f differs from the in-memory log1p in its last digits."""
    f = nw.col(fk).cast(nw.Float64)
    big = nw.col(big_f).cast(nw.Float64)
    census = big <= f
    gap = nw.when(census).then(nw.lit(1.0)).otherwise(big - f)
    x = f / gap
    log_inv_p = ((f + gap) / f).log()
    safe_x = nw.when(x > 0).then(x).otherwise(nw.lit(1.0))
    inv = 1.0 / safe_x
    series = 0.5 - inv / 3 + inv**2 / 4 - inv**3 / 5 + inv**4 / 6 - inv**5 / 7
    r2 = nw.when(x > _SERIES_FROM).then(series).otherwise(x - x * x * log_inv_p)
    p = f / nw.when(big > 0).then(big).otherwise(nw.lit(1.0))
    return (
        nw.when(census)
        .then(1.0 / f)
        .when(f == 1)
        .then(x * log_inv_p)
        .when(f == 2)
        .then(r2)
        .otherwise(p / (f - (1.0 - p)))
    )


RISK_COLUMNS = ("risk_individual", "risk_group_size", "risk_population_size")
"""The columns :func:`with_individual_risk` adds (those of :meth:`IndividualRisk.to_frame`)."""


def with_individual_risk(
    data: DataSource,
    columns: Sequence[str] | str,
    *,
    weights: str | None,
    missing: Literal["value", "wildcard"] = "value",
) -> Any:
    """The lazy frame ``data`` with each record's individual risk, computed where the rows live.

    The figures of :func:`individual_risk` (same formula, same readings of a missing key) as the
    columns ``risk_individual`` (r_k), ``risk_group_size`` (f_k) and ``risk_population_size`` (F_k)
    of a lazy frame of the same kind (polars LazyFrame, DuckDB, Dask, Spark): f_k and F_k by one
    ``group_by`` and one join (``missing="wildcard"``: per missingness pattern, see
    :func:`sdckit.risk.with_wildcard_sizes`), r_k as an expression. Nothing but one row per
    missingness pattern and the weight check's one aggregate row reach the driver (and, when a
    weight is below 1, one more: the check that F_k >= f_k). The global
    risk is then one sum: ``out.select(nw.col("risk_individual").sum())`` on the engine.

    Examples
    --------
    >>> import polars as pl
    >>> lf = pl.LazyFrame({"sex": ["F", "F", "M"], "age": [30, 30, 41], "w": [50.0, 50.0, 20.0]})
    >>> out = with_individual_risk(lf, ["sex", "age"], weights="w").collect().sort("age")
    >>> out["risk_individual"].round(6).to_list()
    [0.018779, 0.018779, 0.15767]
    """
    if missing not in ("value", "wildcard"):
        raise ParameterError(
            f"missing={missing!r}: on a lazy frame use 'value' (a missing key cell is a value of its own) or "
            "'wildcard' (it matches any value); filter the rows first to drop them."
        )
    frame = lazy_frame(data, "with_individual_risk")
    cols = check_columns(frame, columns)
    warn_weight_columns(tuple(cols))
    original = frame.collect_schema().names()
    check_new_columns(original, RISK_COLUMNS)
    lightest = check_weight_column(frame, weights, cols) if weights is not None else None
    risk, size, pop = RISK_COLUMNS
    keyed = with_keys(frame, cols, weights)
    if missing == "wildcard":
        out = attach_wildcard_sizes(keyed, cols, size=size, weights=weights, weight_sum=pop)
    else:
        out = attach_group_counts(keyed, len(cols), size=size, weights=weights, weight_sum=pop)
    if weights is None:
        out = out.with_columns(nw.col(size).cast(nw.Float64).alias(pop))
    elif lightest is not None and lightest < 1.0:  # weights >= 1 give F_k >= f_k: no pass needed
        _check_lazy_population(out, size, pop, weights)
    out = out.with_columns(benedetti_franconi_expr(size, pop).alias(risk))
    return drop_keys(out, original, RISK_COLUMNS).to_native()


def _check_lazy_population(out: nw.LazyFrame[Any], size: str, pop: str, weights: str) -> None:
    """:func:`check_population_counts` on the engine: one aggregate row (the worst F_k / f_k)."""
    ratio = (nw.col(pop) - nw.col(size).cast(nw.Float64) * (1.0 - 1e-12)).min().alias("gap")
    worst = collect_small(out.select(ratio), what=f"the smallest F_k - f_k of {weights!r}", limit=1)
    gap = worst["gap"][0]
    if gap is not None and gap < 0:
        raise InputError(
            f"the weights {weights!r} of the records sharing a key add up to fewer units than its sample "
            "records (F_k < f_k): sampling weights count population units per record and are at least 1. "
            "Check the column (is it a probability instead of its inverse?)."
        )
