"""Measure a release itself: the table exactly as it goes out, not the input it came from.

:func:`measure_release` is the one measurement of a release. The pipeline calls it on the
protected table (and again on the file as written), ``sdckit report`` renders its result, and
the refusal rule reads its ``within_budget``:

* k-anonymity, exposure at k (the share of users in groups smaller than k) and uniques on the
  quasi-identifiers *as released*: masked numeric quasi-identifiers enter with their released
  values; by default a missing (suppressed) cell is a value of its own, so the headline reads
  "every released row looks exactly like at least k - 1 others" (identical rows); sdcMicro's
  reading (a missing cell matches any value, :func:`sdckit.risk.wildcard_group_sizes`) is always
  given beside it, and can be the headline by name; a ``*`` left by ``small_strata: merge`` is a
  value of its own;
* given the users' true quasi-identifiers (what an attacker knows), the *consistent count*: per
  user, the released rows consistent with them (a missing cell consistent with anything), with
  the share of users below k and the users with a single candidate;
* l-diversity of each sensitive column within the quasi-identifier groups
  (:func:`sdckit.risk.l_diversity`);
* interval disclosure of the masked numeric columns (share of records whose every original value
  lies within +- 5 % of a standard deviation of the released one; sdcMicro ``dRisk``);
* when over budget, what would fix it, with the exposure each fix reaches.

Pure logic, no I/O.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import polars as pl

from sdckit.errors import InputError
from sdckit.risk._ldiversity import l_diversity
from sdckit.risk._wildcard import wildcard_group_sizes

__all__ = ["ReleaseMeasure", "consistent_counts", "measure_release"]

SUPPRESSED_MARK = "*"
"""The released value of a stratum cell merged away by ``small_strata: merge``: for the consistent
count it hides the value as a missing cell does."""

INTERVAL_WIDTH = 0.05
"""Half-width of interval disclosure, in original standard deviations (sdcMicro ``dRisk`` default)."""


@dataclass(frozen=True)
class ReleaseMeasure:
    """The risk of one release, measured on the table as released. Shares are of users, 0..1."""

    n: int
    """Rows (users) in the release."""
    columns: tuple[str, ...]
    """Every column of the release, in order."""
    quasi_identifiers: tuple[str, ...]
    """The quasi-identifiers measured (those present in the release)."""
    k: int
    """Group size of k-anonymity."""
    budget: float
    """The largest share of users allowed in groups smaller than k."""
    k_anonymity: int
    """Size of the smallest group on the quasi-identifiers (the release is k-anonymous up to it)."""
    exposure_at_k: float
    """Share of users (0..1) in groups smaller than k on the quasi-identifiers: the headline figure."""
    n_below_k: int
    """Users in groups smaller than k."""
    n_unique: int
    """Users alone in their group."""
    n_groups: int
    """Distinct combinations of the quasi-identifiers (with ``*`` or a missing value as a value)."""
    missing_semantics: str
    """How a missing (suppressed) cell is counted in every figure above and in the budget:
    ``wildcard`` (it matches any value, sdcMicro's convention) or ``value`` (a value of its own)."""
    n_missing_cells: int = 0
    """Missing cells among the released quasi-identifiers (suppressed, or missing in the input)."""
    exposure_missing_as_value: float | None = None
    """The exposure at k when a missing cell counts as a value of its own (what an attacker who reads
    "suppressed" as a category sees); None when no quasi-identifier cell is missing (then it equals
    ``exposure_at_k``). Reported beside the headline, never instead of it."""
    exposure_wildcard: float | None = None
    """The exposure at k when a missing cell matches any value (sdcMicro's reading, for comparison
    with sdcMicro); equal to ``exposure_at_k`` when no quasi-identifier cell is missing."""
    consistent_below_k: float | None = None
    """Share of users (0..1) whose true quasi-identifiers are consistent with fewer than k released
    rows (a missing cell consistent with anything); None when the users' values were not given."""
    consistent_n_below_k: int | None = None
    """Users consistent with fewer than k released rows."""
    consistent_n_one: int | None = None
    """Users consistent with exactly one released row (the attacker finds them)."""
    population_exposure_at_k: float | None = None
    """With a sampling weight: the weighted share of ``exposure_at_k`` (of the population the sample
    stands for); None without a weight."""
    population_consistent_below_k: float | None = None
    """With a sampling weight: the weighted share of ``consistent_below_k``."""
    weight_column: str | None = None
    """The sampling weight behind the population figures."""
    l_diversity: dict[str, Any] | None = None
    """Per sensitive column, l-diversity within the quasi-identifier groups (``l`` = distinct l, ``entropy_l``,
    ``recursive_l``, ``not_2_diverse`` = share of users in groups with a single sensitive value); None
    when no sensitive column is released."""
    l_diversity_note: str = ""
    """Why l-diversity is missing, or how its groups are formed."""
    interval_disclosure: dict[str, Any] | None = None
    """``{"share": ..., "per_column": {...}, "width_sd": 0.05, "columns": [...]}`` for masked numeric columns."""
    exposure_without: dict[str, float] = field(default_factory=dict)
    """Exposure at k with each quasi-identifier withheld (the effect of withholding it)."""
    fixes: tuple[str, ...] = ()
    """What would bring the release within budget (empty when it is)."""

    @property
    def within_budget(self) -> bool:
        """True when exposure at k is at most the budget."""
        return self.exposure_at_k <= self.budget + 1e-12

    def to_dict(self) -> dict[str, Any]:
        return {
            "unit": "share of users (0..1)",
            "n": self.n,
            "columns": list(self.columns),
            "quasi_identifiers": list(self.quasi_identifiers),
            "k": self.k,
            "budget": self.budget,
            "k_anonymity": self.k_anonymity,
            "exposure_at_k": self.exposure_at_k,
            "n_below_k": self.n_below_k,
            "n_unique": self.n_unique,
            "n_groups": self.n_groups,
            "missing_semantics": self.missing_semantics,
            "n_missing_cells": self.n_missing_cells,
            "exposure_missing_as_value": self.exposure_missing_as_value,
            "exposure_wildcard": self.exposure_wildcard,
            "consistent_below_k": self.consistent_below_k,
            "consistent_n_below_k": self.consistent_n_below_k,
            "consistent_n_one": self.consistent_n_one,
            "population_exposure_at_k": self.population_exposure_at_k,
            "population_consistent_below_k": self.population_consistent_below_k,
            "weight_column": self.weight_column,
            "within_budget": self.within_budget,
            "l_diversity": self.l_diversity,
            "l_diversity_note": self.l_diversity_note,
            "interval_disclosure": self.interval_disclosure,
            "exposure_without": dict(self.exposure_without),
            "fixes": list(self.fixes),
        }


def _group_sizes(frame: pl.DataFrame, qis: Sequence[str]) -> np.ndarray:
    """Per-row group size on ``qis``, a missing cell matching any value (exact grouping when none is missing)."""
    if not qis:
        return np.full(frame.height, frame.height, dtype=np.int64)
    if any(frame[c].null_count() > 0 for c in qis) or any(
        frame.schema[c].is_float() and frame[c].is_nan().any() for c in qis
    ):
        return np.asarray(wildcard_group_sizes(frame.select(qis), list(qis)), dtype=np.int64)
    return np.asarray(frame.select(pl.len().over(list(qis)).alias("__g"))["__g"].to_numpy(), dtype=np.int64)


def _strict_group_sizes(frame: pl.DataFrame, qis: Sequence[str]) -> np.ndarray:
    """Per-row group size on ``qis`` with a missing cell as a value of its own (polars groups nulls together)."""
    if not qis:
        return np.full(frame.height, frame.height, dtype=np.int64)
    return np.asarray(frame.select(pl.len().over(list(qis)).alias("__g"))["__g"].to_numpy(), dtype=np.int64)


def _exposure(sizes: np.ndarray, k: int) -> float:
    return float(np.mean(sizes < k)) if sizes.size else 0.0


def _weighted(flags: np.ndarray, weights: np.ndarray | None) -> float | None:
    if weights is None or not flags.size:
        return None
    total = float(weights.sum())
    return float(weights[flags].sum() / total) if total > 0 else None


def _suppressed(column: str, dtype: pl.DataType) -> pl.Expr:
    """A released cell that hides its value: missing (NaN too), or the ``*`` of ``small_strata: merge``."""
    expr = pl.col(column).is_null()
    if dtype.is_float():
        expr = expr | pl.col(column).is_nan()
    if dtype == pl.String:
        expr = expr | (pl.col(column) == SUPPRESSED_MARK)
    return expr.fill_null(True)


def consistent_counts(release: pl.DataFrame, known: pl.DataFrame, quasi_identifiers: Sequence[str]) -> np.ndarray:
    """Per user (row of ``known``), the released rows consistent with the user's values.

    A released row is consistent with a user when, on every quasi-identifier, the released cell
    is missing or ``*`` (a suppressed cell is consistent with anything) or equals the user's value. Counted
    by missingness pattern: for each distinct set M of missing columns among the released rows,
    the rows of that pattern are grouped by the other columns and the users joined on them
    (O(n p) per pattern, never pairwise). ``known`` need not be in the release's order: the count
    of a user depends on the user's values and the released table only. A user's missing value
    matches only a missing released cell.
    """
    qis = [c for c in quasi_identifiers if c in release.columns and c in known.columns]
    n_users = known.height
    if not qis:
        return np.full(n_users, release.height, dtype=np.int64)
    rel = release.select(qis)
    users = known.select([pl.col(c).cast(rel.schema[c], strict=False) for c in qis]).with_row_index("__user")
    miss = rel.select([_suppressed(c, rel.schema[c]).alias(c) for c in qis])
    patterns = miss.with_row_index("__row").group_by(qis).agg(pl.col("__row"))
    out = np.zeros(n_users, dtype=np.int64)
    for row in patterns.iter_rows(named=True):
        present = [c for c in qis if not row[c]]
        rows = row["__row"]
        if not present:
            out += len(rows)
            continue
        counts = rel[rows].group_by(present).len("__n")
        got = users.join(counts, on=present, how="inner")
        np.add.at(out, got["__user"].to_numpy(), got["__n"].to_numpy())
    return out


def _weights(frame: pl.DataFrame, weight: str | None) -> np.ndarray | None:
    if weight is None or weight not in frame.columns or not frame.schema[weight].is_numeric():
        return None
    w = frame[weight].cast(pl.Float64).fill_null(0.0).fill_nan(0.0).to_numpy()
    return np.asarray(w, dtype=np.float64)


def _interval_disclosure(
    original: pl.DataFrame, release: pl.DataFrame, masked: Sequence[str]
) -> dict[str, Any] | None:
    cols = [c for c in masked if c in release.columns and c in original.columns]
    cols = [c for c in cols if release.schema[c].is_numeric() and original.schema[c].is_numeric()]
    if not cols:
        return None
    x = original.select(cols).cast(pl.Float64).to_numpy()
    xm = release.select(cols).cast(pl.Float64).to_numpy()
    ok = ~(np.isnan(x).any(axis=1) | np.isnan(xm).any(axis=1))
    x, xm = x[ok], xm[ok]
    if x.shape[0] < 2:
        return None
    from sdckit.microagg._utility import interval_disclosure

    return {
        "columns": cols,
        "width_sd": INTERVAL_WIDTH,
        "share": interval_disclosure(x, xm, k=INTERVAL_WIDTH),
        "per_column": {c: interval_disclosure(x[:, [j]], xm[:, [j]], k=INTERVAL_WIDTH) for j, c in enumerate(cols)},
        "unit": "share of records (0..1) whose original value lies within +- width_sd sd of the released one",
    }


def _l_diversity(release: pl.DataFrame, qis: Sequence[str], sensitive: Sequence[str]) -> tuple[dict[str, Any] | None, str]:
    cols = [c for c in sensitive if c in release.columns and c not in qis]
    if not cols:
        return None, "no sensitive column is released"
    got = l_diversity(release, list(qis), cols, missing="value")
    out: dict[str, Any] = {}
    for row in got.to_dict()["per_column"]:
        out[row["column"]] = {"l": row["distinct_l"], **row, "n_groups": got.n_groups}
    note = ""
    if any(release[c].null_count() > 0 for c in qis):
        note = "l-diversity groups records by their released quasi-identifiers, a missing cell as a value of its own"
    return out, note


def _fixes(
    release: pl.DataFrame, qis: Sequence[str], k: int, budget: float, masked: Sequence[str], without: dict[str, float]
) -> tuple[str, ...]:
    out: list[str] = []
    best = sorted(without.items(), key=lambda kv: kv[1])
    for c, e in best[:3]:
        verdict = "within budget" if e <= budget + 1e-12 else "still over budget"
        out.append(f"withhold {c} (or coarsen it): exposure at k = {k} falls to {100 * e:.3g} % ({verdict})")
    numeric_raw = [c for c in qis if release.schema[c].is_numeric() and c not in set(masked)]
    if numeric_raw:
        out.append(
            f"mask the numeric quasi-identifier(s) {', '.join(numeric_raw)}: microaggregate them within strata "
            "of the categorical quasi-identifiers (microaggregate: {columns: [...], strata: quasi_identifiers})"
        )
    elif any(c in set(masked) for c in qis):
        out.append(
            "microaggregate the numeric quasi-identifiers within strata of the categorical ones "
            "(strata: quasi_identifiers), so groups form on the combined set, or raise the step's k"
        )
    out.append(
        "recode the categorical quasi-identifiers into fewer categories (step recode) or suppress rare "
        "combinations (step local_suppression)"
    )
    return tuple(out)


def measure_release(
    release: pl.DataFrame,
    *,
    quasi_identifiers: Sequence[str],
    k: int,
    budget: float,
    sensitive: Sequence[str] = (),
    original: pl.DataFrame | None = None,
    masked: Sequence[str] = (),
    missing_semantics: str = "value",
    known: pl.DataFrame | None = None,
    weight: str | None = None,
) -> ReleaseMeasure:
    """Measure ``release`` (the table exactly as it goes out) against k and the budget.

    Parameters
    ----------
    release : the released table (polars), row for row what is written.
    quasi_identifiers : the declared quasi-identifiers; those not in the release are withheld and
        not measured.
    k : group size (>= 1).
    budget : the largest share of users (0..1) allowed in groups smaller than k.
    sensitive : sensitive columns, for l-diversity.
    original : the input rows in the same order, for interval disclosure of ``masked`` columns.
    masked : numeric columns a masking step changed.
    missing_semantics : ``"value"`` (default): a missing cell is a value of its own, so a group is
        a set of identical released rows ("every released row looks exactly like at least k - 1
        others"); ``"wildcard"``: a missing cell matches any value (sdcMicro's rule for
        suppressed cells). Every group figure (k-anonymity, exposure, uniques, the effect of
        withholding) and the budget use this reading; the wildcard figure is always given
        (``exposure_wildcard``), and with ``"wildcard"`` the identical-rows one too
        (``exposure_missing_as_value``).
    known : the users' true quasi-identifiers (what an attacker knows: after the public recoding,
        before suppression), one row per user, in any order; gives the consistent count
        (:func:`consistent_counts`).
    weight : a sampling-weight column of ``release`` (and of ``known``): the population figures.

    Notes
    -----
    exposure at k = (1/n) * #{users whose group on the quasi-identifiers has fewer than k users}
    [arXiv:2201.12306 §1]. Values are compared exactly as released (a microaggregated 38.666667
    is one value). By default a record's group is the records identical to it, a missing cell a
    value of its own: with the rows in random order, identical rows are exchangeable and the
    posterior that a row of a group of g is a given person is at most 1/g, whatever the attacker
    knows of the algorithm. With wildcards (:func:`sdckit.risk.wildcard_group_sizes`, sdcMicro's
    convention) a record's group is every record equal to it where both are present. A ``*``
    (from ``small_strata: merge``) is a value like any other.

    Examples
    --------
    >>> import polars as pl
    >>> m = measure_release(pl.DataFrame({"a": [1, 1, 1, 2]}), quasi_identifiers=["a"], k=2, budget=0.1)
    >>> m.exposure_at_k, m.n_unique, m.within_budget
    (0.25, 1, False)
    """
    if not isinstance(release, pl.DataFrame):
        raise InputError(f"measure_release takes a polars DataFrame (the release as written); got {type(release).__name__}.")
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise InputError(f"k={k!r} must be a whole number >= 1.")
    if not 0.0 <= float(budget) <= 1.0:
        raise InputError(f"budget={budget!r} must be a share of users in [0, 1].")
    if weight is not None and weight not in release.columns:
        raise InputError(f"weight={weight!r} is not a column of the release; name the sampling-weight column.")
    if missing_semantics not in ("wildcard", "value"):
        raise InputError(
            f"missing_semantics={missing_semantics!r}: use 'wildcard' (a missing cell matches any value) or "
            "'value' (a missing cell is a value of its own)."
        )
    grouped = _group_sizes if missing_semantics == "wildcard" else _strict_group_sizes
    qis = tuple(c for c in quasi_identifiers if c in release.columns)
    sizes = grouped(release, qis)
    n_missing = int(sum(release[c].null_count() for c in qis))
    exposure = _exposure(sizes, k)
    without: dict[str, float] = {}
    if len(qis) > 1 and exposure > budget:
        for c in qis:
            rest = [q for q in qis if q != c]
            without[c] = _exposure(grouped(release, rest), k)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        l_div, l_note = _l_diversity(release, qis, sensitive)
    n_groups = release.select(qis).unique().height if qis else (1 if release.height else 0)
    wildcard = _exposure(_group_sizes(release, qis), k) if n_missing and missing_semantics == "value" else exposure
    w_release = _weights(release, weight)
    consistent = consistent_counts(release, known, qis) if known is not None else None
    w_known = _weights(known, weight) if known is not None and weight in known.columns else None
    return ReleaseMeasure(
        n=release.height,
        columns=tuple(release.columns),
        quasi_identifiers=qis,
        k=k,
        budget=float(budget),
        k_anonymity=int(sizes.min()) if sizes.size else 0,
        exposure_at_k=exposure,
        n_below_k=int(np.sum(sizes < k)),
        n_unique=int(np.sum(sizes == 1)),
        n_groups=int(n_groups),
        missing_semantics=missing_semantics,
        n_missing_cells=n_missing,
        exposure_missing_as_value=(
            _exposure(_strict_group_sizes(release, qis), k) if n_missing and missing_semantics == "wildcard" else None
        ),
        exposure_wildcard=wildcard,
        consistent_below_k=float(np.mean(consistent < k)) if consistent is not None and consistent.size else None,
        consistent_n_below_k=int(np.sum(consistent < k)) if consistent is not None else None,
        consistent_n_one=int(np.sum(consistent == 1)) if consistent is not None else None,
        population_exposure_at_k=_weighted(sizes < k, w_release),
        population_consistent_below_k=_weighted(consistent < k, w_known) if consistent is not None else None,
        weight_column=weight if w_release is not None else None,
        l_diversity=l_div,
        l_diversity_note=l_note,
        interval_disclosure=_interval_disclosure(original, release, masked) if original is not None else None,
        exposure_without=without,
        fixes=() if exposure <= budget + 1e-12 else _fixes(release, qis, k, budget, masked, without),
    )
