"""Measure a release itself: the table exactly as it goes out, not the input it came from.

:func:`measure_release` is the one measurement of a release. The pipeline calls it on the
protected table (and again on the file as written), ``sdckit report`` renders its result, and
the refusal rule reads its ``within_budget``:

* k-anonymity, exposure at k (the share of users in groups smaller than k) and uniques on the
  quasi-identifiers *as released*: masked numeric quasi-identifiers enter with their released
  values; a missing (suppressed) cell matches any value (:func:`sdckit.risk.wildcard_group_sizes`,
  sdcMicro's convention), a ``*`` left by ``small_strata: merge`` is a value of its own;
* l-diversity of each sensitive column within the quasi-identifier groups
  (:func:`sdckit.risk.l_diversity`);
* interval disclosure of the masked numeric columns (share of records whose every original value
  lies within +- 5 % of an *original* standard deviation of the released one; sdckit's own figure:
  sdcMicro's ``dRisk`` uses the masked sd and is in ``numeric_risk``);
* numeric disclosure risk of the masked numeric columns (``numeric_risk``): distance-based record
  linkage (Euclidean on standardised columns and Mahalanobis), sdcMicro's ``dRisk`` and ``dRiskRMD``
  (:mod:`sdckit.risk._linkage`);
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

__all__ = ["ReleaseMeasure", "measure_release"]

INTERVAL_WIDTH = 0.05
"""Half-width of interval disclosure, in original standard deviations (the default k of sdcMicro's ``dRisk``)."""


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
    # --- numeric disclosure risk of the masked numeric columns (issue 26) ---
    numeric_risk: dict[str, Any] | None = None
    """For masked numeric columns (records with a missing value left out): ``linkage`` (distance-based
    record linkage, :func:`sdckit.risk.record_linkage`: shares of released records whose own original
    is the nearest and within the k nearest, ``euclidean`` on standardised columns and
    ``mahalanobis``), ``d_risk`` (sdcMicro's ``dRisk``, :func:`sdckit.risk.d_risk`) and ``d_risk_rmd``
    (sdcMicro's ``dRiskRMD``, :func:`sdckit.risk.d_risk_rmd`); None when no numeric column is masked."""

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
            "within_budget": self.within_budget,
            "l_diversity": self.l_diversity,
            "l_diversity_note": self.l_diversity_note,
            "interval_disclosure": self.interval_disclosure,
            "exposure_without": dict(self.exposure_without),
            "fixes": list(self.fixes),
            "numeric_risk": self.numeric_risk,
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
    missing_semantics: str = "wildcard",
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
    missing_semantics : ``"wildcard"`` (default): a missing cell matches any value (sdcMicro's rule
        for suppressed cells); ``"value"``: a missing cell is a value of its own, as an attacker
        who reads "suppressed" as a category would group it. Every group figure (k-anonymity,
        exposure, uniques, the effect of withholding) and the budget use this reading; with
        ``"wildcard"`` the other reading is also given (``exposure_missing_as_value``).

    Notes
    -----
    exposure at k = (1/n) * #{users whose group on the quasi-identifiers has fewer than k users}
    [arXiv:2201.12306 §1]. Values are compared exactly as released (a microaggregated 38.666667
    is one value). A missing cell (from suppression) matches any value
    (:func:`sdckit.risk.wildcard_group_sizes`, sdcMicro's convention): a record's group is every
    record equal to it on the quasi-identifiers where both are present. A ``*`` (from
    ``small_strata: merge``) is a value like any other.

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
        l_diversity=l_div,
        l_diversity_note=l_note,
        interval_disclosure=_interval_disclosure(original, release, masked) if original is not None else None,
        exposure_without=without,
        fixes=() if exposure <= budget + 1e-12 else _fixes(release, qis, k, budget, masked, without),
        numeric_risk=_numeric_risk(original, release, masked, k) if original is not None else None,
    )


def _numeric_risk(original: pl.DataFrame, release: pl.DataFrame, masked: Sequence[str], k: int) -> dict[str, Any] | None:
    """Record linkage, sdcMicro's ``dRisk`` and ``dRiskRMD`` of the masked numeric columns (complete records)."""
    from sdckit.risk._linkage import d_risk, d_risk_rmd, record_linkage

    cols = [c for c in masked if c in release.columns and c in original.columns]
    cols = [c for c in cols if release.schema[c].is_numeric() and original.schema[c].is_numeric()]
    if not cols:
        return None
    x = original.select(cols).cast(pl.Float64).to_numpy()
    xm = release.select(cols).cast(pl.Float64).to_numpy()
    ok = ~(np.isnan(x).any(axis=1) | np.isnan(xm).any(axis=1))
    x, xm = x[ok], xm[ok]
    if x.shape[0] < 2 * len(cols) + 2:
        return None
    linkage = {metric: record_linkage(x, xm, k=k, metric=metric).to_dict() for metric in ("euclidean", "mahalanobis")}
    try:
        rmd: dict[str, Any] | None = d_risk_rmd(x, xm).to_dict()
    except (np.linalg.LinAlgError, ValueError):  # a singular robust covariance (exact linear relations)
        rmd = None
    return {
        "columns": cols,
        "n": int(x.shape[0]),
        "k": k,
        "linkage": linkage,
        "d_risk": {"share": d_risk(x, xm, k=INTERVAL_WIDTH), "k": INTERVAL_WIDTH},
        "d_risk_rmd": rmd,
        "unit": "share of records (0..1)",
    }
