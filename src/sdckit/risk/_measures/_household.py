"""Households and entities: the unit an attacker recognises when one person or firm has several rows.

* :func:`household_risk`: sdcMicro's hierarchical risk (``measure_risk`` with ``hhId``): a
  household is re-identified when any of its members is, so its risk is
  r_h = 1 - prod_{i in h} (1 - r_i) over its members' individual risks r_i
  (:func:`sdckit.risk.individual_risk`). sdcMicro gives every member its household's risk and
  sums over records: ``hier_risk_ER`` = sum_i r_{h(i)} (expected re-identifications, each
  member of a re-identified household counted) and ``hier_risk`` = that sum / n.
* :func:`entity_group_sizes`: per row, the number of distinct entities (households, firms) among
  the rows sharing its key values: k-anonymity over entities asks it to be at least k, since
  twelve months of one utility in a group are one utility to an attacker who knows it.

Pure logic, no I/O.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import polars as pl
from numpy.typing import NDArray

from sdckit._io import DataSource, read_data
from sdckit.errors import InputError
from sdckit.risk._measures._individual import KeyMissing, individual_risk

__all__ = ["HouseholdRisk", "entity_codes", "entity_group_sizes", "household_risk"]


@dataclass(frozen=True, kw_only=True)
class HouseholdRisk:
    """Household (hierarchical) re-identification risk, sdcMicro's ``hier_risk``.

    Per-record arrays are in the input's row order (length n); per-household arrays in the order of
    :attr:`households`.
    """

    columns: tuple[str, ...]
    """The key columns."""
    household: str
    """The column that groups records into households (entities)."""
    weights: str | None
    n: int
    """Records measured."""
    households: NDArray[Any] = field(repr=False)
    """The distinct household ids (sorted)."""
    household_size: NDArray[np.int64] = field(repr=False)
    """Members of each household."""
    household_risk: NDArray[np.float64] = field(repr=False)
    """r_h = 1 - prod(1 - r_i) over the members of each household."""
    risk: NDArray[np.float64] = field(repr=False)
    """Per record: its household's risk r_{h(i)} (sdcMicro's ``individual[, "hier_risk"]``)."""
    individual: NDArray[np.float64] = field(repr=False)
    """Per record: its individual risk r_i."""

    @property
    def n_households(self) -> int:
        return int(self.households.size)

    @property
    def expected_reidentifications(self) -> float:
        """sum_i r_{h(i)} over records: sdcMicro's ``global$hier_risk_ER`` (people in re-identified households)."""
        return float(self.risk.sum())

    @property
    def global_risk(self) -> float:
        """sum_i r_{h(i)} / n: sdcMicro's ``global$hier_risk`` (share 0..1; ``hier_risk_pct`` is 100 times it)."""
        return self.expected_reidentifications / self.n if self.n else 0.0

    @property
    def expected_households(self) -> float:
        """sum_h r_h: the expected number of households re-identified (each household once)."""
        return float(self.household_risk.sum())

    @property
    def max_risk(self) -> float:
        return float(self.household_risk.max()) if self.household_risk.size else 0.0

    def to_dict(self) -> dict[str, Any]:
        """JSON form: the global figures (no per-household values)."""
        return {
            "columns": list(self.columns),
            "household": self.household,
            "weights": self.weights,
            "n": self.n,
            "n_households": self.n_households,
            "expected_reidentifications": self.expected_reidentifications,
            "global_risk": self.global_risk,
            "expected_households": self.expected_households,
            "max_risk": self.max_risk,
            "n_households_above": {f"{t:g}": int(np.count_nonzero(self.household_risk > t)) for t in (0.01, 0.05, 0.1, 0.5)},
        }


def _households_of(data: DataSource, household: str) -> pl.Series:
    frame = read_data(data, [household]).frame.to_native()  # checks the column, with its near matches
    if not isinstance(frame, pl.DataFrame):  # pragma: no cover - the input layer returns polars in memory
        frame = pl.DataFrame(frame)
    ids = frame[household]
    if ids.null_count():
        first = int(np.flatnonzero(ids.is_null().to_numpy())[0])
        raise InputError(
            f"household column {household!r} is missing in {ids.null_count():,} rows (first: row {first + 1}); every "
            "record needs its household id. Fill it (a one-person household gets an id of its own) or drop those rows."
        )
    return ids


def household_risk(
    data: DataSource,
    columns: Sequence[str] | str,
    *,
    household: str,
    weights: str | None,
    missing: KeyMissing = "value",
) -> HouseholdRisk:
    """Household re-identification risk on ``columns``: a household is re-identified if any member is.

    r_h = 1 - prod_{i in h} (1 - r_i), r_i the individual risk of member i (Benedetti-Franconi,
    :func:`sdckit.risk.individual_risk`, with the same ``weights`` and ``missing`` reading). As in
    sdcMicro's ``measure_risk`` with ``hhId`` (``fast_hier``, sdcMicro 5.8.1, R/measure_risk.R):
    every member carries its household's risk, ``expected_reidentifications`` = sum_i r_{h(i)}
    (``hier_risk_ER``) and ``global_risk`` = that sum / n (``hier_risk``);
    ``expected_households`` = sum_h r_h counts each household once.

    Parameters
    ----------
    data : a path or any frame the input layer accepts.
    columns : the key columns (quasi-identifiers).
    household : the column of household (entity) ids; no missing values.
    weights : the sampling-weight column, or None (the table is the population).
    missing : how a missing key cell is read (see :func:`sdckit.risk.individual_risk`);
        ``"wildcard"`` is sdcMicro's reading.

    Notes
    -----
    The product is summed in logs (1 - exp(sum log1p(-r_i))), exact to rounding; a member with
    r_i = 1 gives r_h = 1. Cost: one group-by, O(n).

    References
    ----------
    .. [1] Templ, M., Kowarik, A. & Meindl, B. (2015). Statistical disclosure control for
       micro-data using the R package sdcMicro. J. Stat. Softw. 67(4), §3.3 (household risk).

    Examples
    --------
    >>> import polars as pl
    >>> df = pl.DataFrame({"sex": ["F", "F", "M", "M"], "hh": [1, 1, 2, 2]})
    >>> h = household_risk(df, ["sex"], household="hh", weights=None)
    >>> h.household_risk.tolist(), h.risk.tolist()
    ([0.75, 0.75], [0.75, 0.75, 0.75, 0.75])
    """
    ind = individual_risk(data, columns, weights=weights, missing=missing)
    ids = _households_of(data, household)
    if ind.n_dropped:
        raise InputError(
            f"household_risk: missing={missing!r} dropped {ind.n_dropped:,} records, which would split households; "
            "use missing='value' or 'wildcard'."
        )
    codes, households = entity_codes(ids)
    log_keep = np.zeros(households.size, dtype=np.float64)
    with np.errstate(divide="ignore"):
        np.add.at(log_keep, codes, np.log1p(-np.clip(ind.risk, 0.0, 1.0)))
    hh_risk = -np.expm1(log_keep)
    return HouseholdRisk(
        columns=ind.columns,
        household=household,
        weights=weights,
        n=ind.n,
        households=households,
        household_size=np.bincount(codes, minlength=households.size).astype(np.int64),
        household_risk=hh_risk,
        risk=hh_risk[codes],
        individual=ind.risk,
    )


def entity_codes(ids: pl.Series | NDArray[Any] | Sequence[Any]) -> tuple[NDArray[np.int64], NDArray[Any]]:
    """Dense codes 0..m-1 of entity ids (sorted distinct ids) and the ids."""
    s = ids if isinstance(ids, pl.Series) else pl.Series("entity", list(ids) if not isinstance(ids, np.ndarray) else ids)
    uniq = s.unique().sort()
    codes = pl.DataFrame({"v": s}).join(
        pl.DataFrame({"v": uniq, "c": np.arange(uniq.len(), dtype=np.int64)}), on="v", how="left", nulls_equal=True,
        maintain_order="left",
    )["c"]
    return np.asarray(codes.to_numpy(), dtype=np.int64), np.asarray(uniq.to_numpy())


def entity_group_sizes(
    frame: pl.DataFrame, quasi_identifiers: Sequence[str], entities: pl.Series | NDArray[Any] | Sequence[Any]
) -> NDArray[np.int64]:
    """Per row, the number of distinct entities among the rows identical to it on ``quasi_identifiers``.

    A missing cell is a value of its own (rows are grouped exactly as released). ``entities`` holds
    each row's entity id (same length as ``frame``). k-anonymity over entities holds when every row's
    count is at least k.

    Examples
    --------
    >>> import polars as pl
    >>> f = pl.DataFrame({"state": ["AK", "AK", "AK", "AL"]})
    >>> entity_group_sizes(f, ["state"], [7, 7, 8, 9]).tolist()
    [2, 2, 2, 1]
    """
    ent = entities if isinstance(entities, pl.Series) else pl.Series("e", np.asarray(entities))
    if ent.len() != frame.height:
        raise InputError(f"entities: {ent.len():,} ids for {frame.height:,} rows; give one entity id per row.")
    qis = [c for c in quasi_identifiers if c in frame.columns]
    if not qis:
        return np.full(frame.height, ent.n_unique(), dtype=np.int64)
    tagged = frame.select(qis).with_columns(ent.alias("__entity"))
    out = tagged.select(pl.col("__entity").n_unique().over(qis).alias("__n"))["__n"]
    return np.asarray(out.to_numpy(), dtype=np.int64)
