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
  lies within +- 5 % of an *original* standard deviation of the released one; sdckit's own figure:
  sdcMicro's ``dRisk`` uses the masked sd and is in ``numeric_risk``);
* numeric disclosure risk of the masked numeric columns (``numeric_risk``): distance-based record
  linkage (Euclidean on standardised columns and Mahalanobis), sdcMicro's ``dRisk`` and ``dRiskRMD``
  (:mod:`sdckit.risk._measures._linkage`);
* when over budget, what would fix it, with the exposure each fix reaches;
* the individual and global risk of the release with the sampling weights (the released
  quasi-identifiers, missing cells read as ``missing_semantics`` says;
  :func:`sdckit.risk.individual_risk`), the information loss of each categorical
  quasi-identifier, and the warnings a reviewer must see (near-unique released columns, l < 2,
  released columns no figure measures).

Pure logic, no I/O.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import narwhals as nw
import numpy as np
import polars as pl

from sdckit._checks import group_size
from sdckit._scale import collect_small
from sdckit.errors import InputError, ParameterError
from sdckit.risk._counts._lazy_keys import with_wildcard_sizes
from sdckit.risk._counts._wildcard import wildcard_group_sizes
from sdckit.risk._measures._attacks import AttackSettings, judge_attacks, release_attacks
from sdckit.risk._measures._household import entity_group_sizes, household_risk
from sdckit.risk._measures._individual import individual_risk, with_individual_risk
from sdckit.risk._measures._ldiversity import l_diversity
from sdckit.risk._measures._linkage import d_risk, d_risk_rmd, interval_disclosure, record_linkage

__all__ = ["ReleaseMeasure", "consistent_counts", "measure_lazy_release", "measure_release"]

SUPPRESSED_MARK = "*"
"""The released value of a stratum cell merged away by ``small_strata: merge``: for the consistent
count it hides the value as a missing cell does."""

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
    # --- the risk a reviewer signs, on the release (issue 22); new fields go at the end ---
    weights: str | None = None
    """The sampling-weight column of the individual risk (None: the release is taken as the population)."""
    individual_risk: dict[str, Any] | None = None
    """Individual and global risk of the release on the quasi-identifiers as released
    (:meth:`sdckit.risk.IndividualRisk.to_dict`: expected re-identifications, global risk, histogram),
    missing cells read as ``missing_semantics`` says; None without quasi-identifiers."""
    information_loss: dict[str, Any] | None = None
    """Per categorical quasi-identifier (not a masked numeric column): share of cells changed, share
    suppressed, and the entropy lost H(original | released) in bits (needs ``original``)."""
    warnings: tuple[str, ...] = ()
    """What a reviewer must see: near-unique released columns, sensitive columns with l < 2, released
    columns no figure measures."""
    # --- numeric disclosure risk of the masked numeric columns (issue 26) ---
    numeric_risk: dict[str, Any] | None = None
    """For masked numeric columns (records with a missing value left out): ``linkage`` (distance-based
    record linkage, :func:`sdckit.risk.record_linkage`: shares of released records whose own original
    is the nearest and within the k nearest, ``euclidean`` on standardised columns and
    ``mahalanobis``), ``d_risk`` (sdcMicro's ``dRisk``, :func:`sdckit.risk.d_risk`) and ``d_risk_rmd``
    (sdcMicro's ``dRiskRMD``, :func:`sdckit.risk.d_risk_rmd`); None when no numeric column is masked."""
    # --- households and entities (issue 35) ---
    entity: str | None = None
    """The column grouping rows into households/entities; when set, every group figure above
    (k-anonymity, exposure at k, uniques, the budget) counts distinct entities, not rows."""
    n_entities: int | None = None
    """Distinct households/entities in the release."""
    n_single_entity_rows: int | None = None
    """Rows in groups made of one entity's rows only (a firm's twelve months, one household)."""
    rows_below_k: int | None = None
    """With an entity: rows in groups of fewer than k rows (the row count beside the entity count)."""
    household_risk: dict[str, Any] | None = None
    """With an entity: sdcMicro's household risk of the release (:meth:`sdckit.risk.HouseholdRisk.to_dict`)."""
    # --- the attacks an outsider runs, every released column known (issue 34) ---
    attacks: dict[str, Any] | None = None
    """Singling out, linkability and inference on the release against a held-out control
    (:func:`sdckit.risk._measures._attacks.release_attacks`), each with its risk, interval, budget,
    and ``over_budget`` / ``shows_risk`` (:func:`~sdckit.risk._measures._attacks.judge_attacks`);
    None when not run."""

    @property
    def attacks_over_budget(self) -> tuple[str, ...]:
        """The attacks whose risk is above their budget (the refusal rule applies)."""
        return tuple(self.attacks.get("over_budget", ())) if self.attacks else ()

    @property
    def attacks_show_risk(self) -> tuple[str, ...]:
        """The attacks over budget, or without a budget with a risk above 5 % (interval clear of 0): the verdict warns."""
        return tuple(self.attacks.get("shows_risk", ())) if self.attacks else ()

    @property
    def within_budget(self) -> bool:
        """True when exposure at k is at most the budget and no attack is over its budget."""
        return self.exposure_at_k <= self.budget + 1e-12 and not self.attacks_over_budget

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
            "weights": self.weights,
            "individual_risk": self.individual_risk,
            "information_loss": self.information_loss,
            "warnings": list(self.warnings),
            "numeric_risk": self.numeric_risk,
            "entity": self.entity,
            "n_entities": self.n_entities,
            "n_single_entity_rows": self.n_single_entity_rows,
            "rows_below_k": self.rows_below_k,
            "household_risk": self.household_risk,
            "attacks": self.attacks,
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


def _as_text(column: str, dtype: pl.DataType) -> pl.Expr:
    """A column as text, a whole number without its ``.0`` (``3.0`` -> ``"3"``, as a label shows a code)."""
    x = pl.col(column)
    if dtype.is_float():
        whole = x.is_finite() & (x == x.round(0))
        return pl.when(whole).then(x.cast(pl.Int64, strict=False).cast(pl.String)).otherwise(x.cast(pl.String)).alias(column)
    if dtype == pl.String:  # a code read as text keeps its ".0" ("3.0"): the same value as the number 3.0
        return x.str.replace(r"^(-?\d+)\.0+$", "${1}").alias(column)
    return x.cast(pl.String).alias(column)


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
    # a column typed differently in the release (labels read back as categories, codes as numbers) is
    # compared as text on both sides: 3.0 and "3" are one value, and no cast of a category to a number fails
    differ = [c for c in qis if rel.schema[c] != known.schema[c]
              and not (rel.schema[c].is_numeric() and known.schema[c].is_numeric())]
    if differ:
        rel = rel.with_columns(_as_text(c, rel.schema[c]) for c in differ)
    users = known.select(
        [_as_text(c, known.schema[c]) if c in differ else pl.col(c).cast(rel.schema[c], strict=False) for c in qis]
    ).with_row_index("__user")
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
    # every record with its original values (a cell suppressed in the release is not near its original)
    ok = ~np.isnan(x).any(axis=1)
    x, xm = x[ok], xm[ok]
    if x.shape[0] < 2:
        return None
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
    got = l_diversity(release, list(qis), cols, missing="value", t_closeness=True)
    out: dict[str, Any] = {}
    for row in got.to_dict()["per_column"]:
        out[row["column"]] = {"l": row["distinct_l"], **row, "n_groups": got.n_groups}
    note = ""
    if any(release[c].null_count() > 0 for c in qis):
        note = "l-diversity groups records by their released quasi-identifiers, a missing cell as a value of its own"
    return out, note


def _fixes(
    release: pl.DataFrame, qis: Sequence[str], k: int, budget: float, masked: Sequence[str], without: dict[str, float],
    categorical: Sequence[str] = (),
) -> tuple[str, ...]:
    out: list[str] = []
    best = sorted(without.items(), key=lambda kv: kv[1])
    for c, e in best[:3]:
        verdict = "within budget" if e <= budget + 1e-12 else "still over budget"
        out.append(f"withhold {c} (or coarsen it): exposure at k = {k} falls to {100 * e:.3g} % ({verdict})")
    numeric_raw = [c for c in qis if release.schema[c].is_numeric() and c not in set(masked) and c not in set(categorical)]
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


def _text(series: pl.Series) -> np.ndarray:
    """A column as text, missing (null or NaN) as None, so an original 38 and a released "38" agree."""
    if series.dtype.is_float():
        series = series.fill_nan(None)
        integral = series.drop_nulls()
        if integral.len() and bool((integral == integral.round(0)).all()):
            series = series.cast(pl.Int64)
    return np.asarray(series.cast(pl.String).to_numpy(), dtype=object)


def _conditional_entropy_bits(x: np.ndarray, y: np.ndarray) -> float:
    """H(X | Y) in bits from paired samples (missing as a category): what the release leaves unknown
    of the original value, on average over records."""
    df = pl.DataFrame({"x": [str(v) for v in x], "y": [str(v) for v in y]})
    n = df.height
    if not n:
        return 0.0
    joint = df.group_by(["x", "y"]).len()["len"].to_numpy().astype(np.float64)
    marg = df.group_by("y").len()["len"].to_numpy().astype(np.float64)
    h_joint = -float(np.sum(joint / n * np.log2(joint / n)))
    h_y = -float(np.sum(marg / n * np.log2(marg / n)))
    return max(h_joint - h_y, 0.0)


def _entropy_bits(x: np.ndarray) -> float:
    counts = pl.Series([str(v) for v in x]).value_counts()["count"].to_numpy().astype(np.float64)
    p = counts / counts.sum() if counts.size else counts
    return -float(np.sum(p * np.log2(p))) if p.size else 0.0


def _information_loss(
    original: pl.DataFrame, release: pl.DataFrame, qis: Sequence[str], masked: Sequence[str]
) -> dict[str, Any] | None:
    # a masked column still numeric in the release is measured by interval disclosure; a recoded
    # one (numeric age released as bands) is categorical now
    cols = [c for c in qis if c in original.columns and not (c in set(masked) and release.schema[c].is_numeric())]
    if not cols or original.height != release.height:
        return None
    per: dict[str, Any] = {}
    for c in cols:
        x, y = _text(original[c]), _text(release[c])
        x_none = np.array([v is None for v in x])
        y_none = np.array([v is None for v in y])
        suppressed = y_none & ~x_none
        changed = ~suppressed & ((x_none != y_none) | (~x_none & ~y_none & (x != y)))
        h = _entropy_bits(x)
        lost = _conditional_entropy_bits(x, y)
        per[c] = {
            "share_changed": float(changed.mean()),
            "share_suppressed": float(suppressed.mean()),
            "entropy_bits": h,
            "entropy_lost_bits": lost,
            "share_entropy_lost": lost / h if h > 0 else 0.0,
        }
    return {
        "per_column": per,
        "unit": "shares of records (0..1); entropy in bits; entropy lost = H(original | released), the "
        "uncertainty about a record's original value left after reading the release",
    }


NEAR_UNIQUE_SHARE = 0.5
"""A released column with more than 10 distinct values in at least this share of the rows is near-unique."""


def _warnings(
    release: pl.DataFrame,
    qis: Sequence[str],
    sensitive: Sequence[str],
    masked: Sequence[str],
    weights: str | None,
    l_div: dict[str, Any] | None,
) -> tuple[str, ...]:
    out: list[str] = []
    n = release.height
    masked_set = set(masked)
    for c in release.columns:
        if c in masked_set or n == 0:
            continue
        distinct = release[c].n_unique()
        if distinct > 10 and distinct >= NEAR_UNIQUE_SHARE * n:
            out.append(
                f"{c} is released near-unique ({distinct:,} values in {n:,} rows) and no step masks it: its "
                "values can link records back to a copy of the input; withhold it (identifiers), or coarsen it"
            )
    for c, row in (l_div or {}).items():
        l_value = row.get("l")
        if l_value is not None and l_value < 2:
            share = row.get("not_2_diverse", row.get("share_not_2_diverse"))
            share_text = f"{100 * float(share):.3g} % of users" if isinstance(share, (int, float)) else "some users"
            out.append(
                f"sensitive column {c} has l = {l_value}: {share_text} are in groups whose members share one "
                f"value of {c}, which an intruder who places them learns"
            )
    measured = set(qis) | set(sensitive) | masked_set | ({weights} if weights else set())
    unmeasured = [c for c in release.columns if c not in measured]
    if unmeasured:
        out.append(
            f"no figure of this report measures {', '.join(unmeasured)}: released as is, neither a "
            "quasi-identifier, nor sensitive, nor masked by a step; give each its role"
        )
    return tuple(out)


def _check_missing_semantics(missing_semantics: str) -> None:
    """The one reading of a missing cell, for the in-memory and the lazy measure."""
    if missing_semantics not in ("wildcard", "value"):
        raise InputError(
            f"missing_semantics={missing_semantics!r}: use 'wildcard' (a missing cell matches any value) or "
            "'value' (a missing cell is a value of its own)."
        )


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
    weights: str | None = None,
    categorical: Sequence[str] = (),
    entity: str | None = None,
    attacks: AttackSettings | None = None,
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
    weights : the sampling-weight column: the population figures (weighted shares, from the
        release's weights, and ``known``'s for the consistent count) and the individual and global
        risk (taken from the release, or from ``original`` when the release withholds it; None: the
        release is the population, r = 1 / f_k).
    categorical : columns whose values are categories even when numbers (``sex`` = 1/2): never
        advised to be microaggregated, never in interval disclosure.
    entity : the column grouping rows into households or entities (a firm's monthly rows), taken
        from the release, else from ``original`` (same rows, same order: a release that drops the
        id). Then a group's size is the number of distinct entities among its identical released
        rows (a missing cell a value of its own, in either reading: counting entities in the
        overlapping wildcard groups would only give larger counts), and the household risk of the
        release is measured (:func:`sdckit.risk.household_risk`).
    attacks : run singling out, linkability and inference on the release (needs ``original`` row for
        row; ``known``, when row for row too, gives the attacker's quasi-identifiers after the public
        recodings), with these sample sizes, seed and budget; None: not run.

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
    try:
        k = group_size(k)
    except ParameterError as err:  # a wrong argument of measure_release is an InputError here
        raise InputError(str(err)) from None
    if not 0.0 <= float(budget) <= 1.0:
        raise InputError(f"budget={budget!r} must be a share of users in [0, 1].")
    if weights is not None and weights not in release.columns and (original is None or weights not in original.columns):
        raise InputError(f"weights={weights!r} is neither a column of the release nor of the original rows; "
                         "name the sampling-weight column.")
    _check_missing_semantics(missing_semantics)
    qis = tuple(c for c in quasi_identifiers if c in release.columns)
    entities = _entity_ids(release, original, entity)

    def grouped(frame: pl.DataFrame, cols: Sequence[str]) -> np.ndarray:
        if entities is not None:
            return entity_group_sizes(frame, cols, entities)
        return (_group_sizes if missing_semantics == "wildcard" else _strict_group_sizes)(frame, cols)

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
    if entities is not None:
        wildcard = exposure  # one reading of entity groups (see ``entity``)
    w_release = _weights(release, weights)
    consistent = consistent_counts(release, known, qis) if known is not None else None
    w_known = _weights(known, weights) if known is not None and weights in known.columns else None
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
        weight_column=weights if w_release is not None else None,
        l_diversity=l_div,
        l_diversity_note=l_note,
        interval_disclosure=(
            _interval_disclosure(original, release, [c for c in masked if c not in set(categorical)])
            if original is not None
            else None
        ),
        exposure_without=without,
        fixes=() if exposure <= budget + 1e-12 else _fixes(release, qis, k, budget, masked, without, categorical),
        weights=weights,
        individual_risk=_individual(release, qis, weights, original, missing_semantics),
        information_loss=_information_loss(original, release, qis, masked) if original is not None else None,
        warnings=_warnings(release, qis, sensitive, masked, weights, l_div),
        numeric_risk=_numeric_risk(original, release, masked, k) if original is not None else None,
        entity=entity if entities is not None else None,
        n_entities=int(entities.n_unique()) if entities is not None else None,
        n_single_entity_rows=int(np.sum(sizes == 1)) if entities is not None else None,
        rows_below_k=int(np.sum(_strict_group_sizes(release, qis) < k)) if entities is not None else None,
        household_risk=_household(release, qis, weights, original, entities, missing_semantics),
        attacks=_attacks(original, release, known, qis, masked, sensitive, attacks, entity) if original is not None else None,
    )


def _entity_ids(release: pl.DataFrame, original: pl.DataFrame | None, entity: str | None) -> pl.Series | None:
    """The entity id of each released row: from the release, else from ``original`` (same rows, same order)."""
    if entity is None:
        return None
    source = release if entity in release.columns else original
    if source is None or entity not in source.columns or source.height != release.height:
        raise InputError(
            f"entity={entity!r} is neither a column of the release nor of the original rows (same rows, same order); "
            "name the household/entity column."
        )
    ids = source[entity]
    if ids.null_count():
        raise InputError(f"entity column {entity!r} is missing in {ids.null_count():,} rows; every row needs its entity id.")
    return ids


def _with_weights(
    frame: pl.DataFrame, release: pl.DataFrame, original: pl.DataFrame | None, weights: str | None
) -> pl.DataFrame:
    """``frame`` with the weight column taken from the release, else from the input's rows (None: unchanged)."""
    if weights is None:
        return frame
    source = release if weights in release.columns else original
    if source is None or weights not in source.columns or source.height != release.height:
        raise InputError(f"weights={weights!r}: the column is neither in the release nor in the original rows.")
    return frame.with_columns(source[weights].alias(weights))


def _household(
    release: pl.DataFrame, qis: Sequence[str], weights: str | None, original: pl.DataFrame | None,
    entities: pl.Series | None, missing: str,
) -> dict[str, Any] | None:
    """The release's household risk on its quasi-identifiers (None without an entity)."""
    if entities is None or not qis or not release.height:
        return None
    frame = release.select(qis).with_columns(entities.alias("__entity"))
    frame = _with_weights(frame, release, original, weights)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = household_risk(frame, list(qis), household="__entity", weights=weights,
                             missing="wildcard" if missing == "wildcard" else "value")
    out = got.to_dict()
    out["household"] = entities.name
    return out


def _attacks(
    original: pl.DataFrame, release: pl.DataFrame, known: pl.DataFrame | None, qis: Sequence[str],
    masked: Sequence[str], sensitive: Sequence[str], settings: AttackSettings | None, entity: str | None = None,
) -> dict[str, Any] | None:
    """The three attacks on the release, the targets being the original rows with the quasi-identifiers
    as the attacker knows them (after the public recodings, from ``known``; a masked numeric column's
    true value from ``original``)."""
    if settings is None or original.height != release.height or release.height < 20:
        return None
    # a household id goes out as fresh random numbers: the input's ids say nothing about the release's
    targets = original.select([c for c in release.columns if c in original.columns and c != entity])
    if known is not None and known.height == release.height:
        masked_set = set(masked)
        recoded = [known[c] for c in qis if c in known.columns and c in targets.columns and c not in masked_set]
        targets = targets.with_columns(recoded) if recoded else targets
    secrets = [c for c in sensitive if c in targets.columns] or None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        figures = release_attacks(
            targets, release.select(targets.columns), quasi_identifiers=qis, secrets=secrets,
            n_attacks=settings.n_attacks, n_control=settings.n_control, confidence=settings.confidence,
            seed=settings.seed,
        )
    return judge_attacks(figures, dict(settings.budget))


def _individual(
    release: pl.DataFrame, qis: Sequence[str], weights: str | None, original: pl.DataFrame | None, missing: str
) -> dict[str, Any] | None:
    """The release's individual and global risk on its quasi-identifiers (weights from the release, else the input)."""
    if not qis or not release.height:
        return None
    frame = release.select(qis)
    frame = _with_weights(frame, release, original, weights)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = individual_risk(frame, list(qis), weights=weights, missing="wildcard" if missing == "wildcard" else "value")
    return got.to_dict()


def _numeric_risk(original: pl.DataFrame, release: pl.DataFrame, masked: Sequence[str], k: int) -> dict[str, Any] | None:
    """Record linkage, sdcMicro's ``dRisk`` and ``dRiskRMD`` of the masked numeric columns (complete records)."""
    cols = [c for c in masked if c in release.columns and c in original.columns]
    cols = [c for c in cols if release.schema[c].is_numeric() and original.schema[c].is_numeric()]
    if not cols:
        return None
    x = original.select(cols).cast(pl.Float64).to_numpy()
    xm = release.select(cols).cast(pl.Float64).to_numpy()
    ok = ~(np.isnan(x).any(axis=1) | np.isnan(xm).any(axis=1))
    x, xm = x[ok], xm[ok]
    varies = [j for j in range(x.shape[1]) if x.shape[0] and np.ptp(x[:, j]) > 0]  # a constant column has no scale
    if len(varies) < len(cols):
        cols, x, xm = [cols[j] for j in varies], x[:, varies], xm[:, varies]
        if not cols:
            return None
    if x.shape[0] < max(2 * len(cols) + 2, k + 1):  # linkage within the k nearest needs more than k records
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


def _one_row(frame: Any, what: str) -> dict[str, Any]:
    """The single row of an aggregate, brought to the driver (refused above a few rows)."""
    got = collect_small(frame, what=what, limit=10)
    return {c: got[c].to_list()[0] for c in got.columns}


def _count_where(flag: Any, of: str) -> Any:
    return nw.when(flag).then(nw.col(of)).otherwise(0)


def measure_lazy_release(
    data: Any,
    quasi_identifiers: Sequence[str],
    *,
    k: int,
    budget: float,
    weights: str | None = None,
    sensitive: Sequence[str] = (),
    missing_semantics: str = "value",
) -> ReleaseMeasure:
    """Measure a release where it lies: a lazy or distributed frame (polars LazyFrame, Dask, Spark),
    aggregated by its engine; only rows of figures (one per missingness pattern) reach the driver.

    The figures of :func:`measure_release` that need nothing beside the release, in the same
    reading of a missing cell (``missing_semantics``): ``value`` (the default), a record's group is
    the released rows identical to it on the quasi-identifiers, a missing cell a value of its own;
    ``wildcard``, every row equal to it wherever both are present
    (:func:`sdckit.risk.with_wildcard_sizes`), and ``exposure_missing_as_value`` gives the other
    reading. ``n_groups`` counts distinct released rows. With ``weights``, the weighted share
    ``population_exposure_at_k`` and the expected re-identifications (the sum of the individual
    risks, :func:`sdckit.risk.with_individual_risk`, same reading) in ``individual_risk``; with
    sensitive columns, ``l_diversity`` (per column ``l``: the fewest distinct values in a group of
    identical rows). Not measured here (None or empty): the consistent count, interval disclosure,
    numeric risk, information loss, the effect of withholding a column, the fixes, and, in the
    ``value`` reading, ``exposure_wildcard``.

    Examples
    --------
    >>> import polars as pl
    >>> m = measure_lazy_release(pl.LazyFrame({"a": [1, 1, 1, 2]}), ["a"], k=2, budget=0.1)
    >>> m.exposure_at_k, m.n_unique, m.within_budget
    (0.25, 1, False)
    """
    _check_missing_semantics(missing_semantics)
    lf = nw.from_native(data)
    if isinstance(lf, nw.DataFrame):
        lf = lf.lazy()
    qis = list(quasi_identifiers)
    columns = tuple(lf.collect_schema().names())

    aggs = [nw.len().alias("__n")]
    if weights:
        aggs.append(nw.col("__w").sum())
    aggs += [nw.col(s).n_unique().alias(f"__l_{s}") for s in sensitive]
    base = lf.with_columns(nw.col(weights).cast(nw.Float64).alias("__w")) if weights else lf
    groups = base.group_by(qis, drop_null_keys=False).agg(*aggs)
    small = nw.col("__n") < k
    figures = [
        nw.col("__n").sum().alias("n_rows"), nw.col("__n").count().alias("n_groups"),
        nw.col("__n").min().alias("k_anonymity"), _count_where(small, "__n").sum().alias("n_below_k"),
        nw.when(nw.col("__n") == 1).then(1).otherwise(0).sum().alias("n_unique"),
    ]
    if weights:
        figures += [_count_where(small, "__w").sum().alias("w_below_k"), nw.col("__w").sum().alias("w_total")]
    figures += [nw.col(f"__l_{s}").min().alias(f"l_{s}") for s in sensitive]
    row = _one_row(groups.select(*figures), "figures of the written release")
    missing = _one_row(lf.select(*[nw.col(q).null_count().alias(q) for q in qis]), "missing cells of the written release")
    n = int(row["n_rows"] or 0)
    share_as_value = float(row["n_below_k"] or 0) / n if n else 0.0
    n_missing = int(sum(int(v or 0) for v in missing.values()))
    k_anonymity, n_below_k, n_unique = int(row["k_anonymity"] or 0), int(row["n_below_k"] or 0), int(row["n_unique"] or 0)
    exposure = share_as_value
    w_share = float(row["w_below_k"] or 0) / float(row["w_total"]) if weights and row["w_total"] else None
    if missing_semantics == "wildcard":
        cols = [*qis, weights] if weights else qis
        sized = nw.from_native(with_wildcard_sizes(lf.select(cols).to_native(), qis, name="__wild"))
        below = nw.col("__wild") < k
        wild_aggs = [
            nw.col("__wild").min().alias("k_anonymity"), _count_where(below, "__one").sum().alias("n_below_k"),
            nw.when(nw.col("__wild") == 1).then(1).otherwise(0).sum().alias("n_unique"),
        ]
        if weights:
            wild_aggs += [_count_where(below, weights).sum().alias("w_below"), nw.col(weights).sum().alias("w_total")]
        wild = _one_row(sized.with_columns(nw.lit(1).alias("__one")).select(*wild_aggs), "wildcard figures")
        k_anonymity, n_below_k, n_unique = int(wild["k_anonymity"] or 0), int(wild["n_below_k"] or 0), int(wild["n_unique"] or 0)
        exposure = float(wild["n_below_k"] or 0) / n if n else 0.0
        if weights:
            w_share = float(wild["w_below"] or 0) / float(wild["w_total"]) if wild["w_total"] else None
    risk: dict[str, Any] | None = None
    if weights:
        reading: Literal["value", "wildcard"] = "wildcard" if missing_semantics == "wildcard" else "value"
        scored = nw.from_native(with_individual_risk(lf.select(*qis, weights).to_native(), qis, weights=weights, missing=reading))
        total = _one_row(scored.select(nw.col("risk_individual").sum().alias("r")), "expected re-identifications")
        risk = {"columns": qis, "weights": weights, "missing": reading, "expected_reidentifications": float(total["r"])}
    return ReleaseMeasure(
        n=n,
        columns=columns,
        quasi_identifiers=tuple(qis),
        k=k,
        budget=budget,
        k_anonymity=k_anonymity,
        exposure_at_k=exposure,
        n_below_k=n_below_k,
        n_unique=n_unique,
        n_groups=int(row["n_groups"]),
        missing_semantics=missing_semantics,
        n_missing_cells=n_missing,
        exposure_missing_as_value=share_as_value if missing_semantics == "wildcard" else None,
        exposure_wildcard=exposure if missing_semantics == "wildcard" or not n_missing else None,
        population_exposure_at_k=w_share,
        weight_column=weights,
        l_diversity={s: {"l": int(row[f"l_{s}"] or 0)} for s in sensitive} if sensitive else None,
        l_diversity_note="l: the fewest distinct values in a group of identical released rows" if sensitive else "",
        weights=weights,
        individual_risk=risk,
    )
