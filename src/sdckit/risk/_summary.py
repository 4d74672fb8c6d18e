"""Everything ``sdckit risk`` and the report show about one table, computed once."""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from sdckit._checks import BOUND_METHODS, threshold
from sdckit._io import DataSource, MissingPolicy, as_narwhals, check_columns, read_data
from sdckit.errors import ParameterError, SdcWarning
from sdckit.risk._bounds._entropy import entropy_exposure_bound, entropy_exposure_bound_sharp
from sdckit.risk._bounds._joint import joint_exposure_bound
from sdckit.risk._counts._marginals import Marginals
from sdckit.risk._measures._exposure import ExposureCurve, exposure_curve
from sdckit.risk._measures._individual import benedetti_franconi


@dataclass(frozen=True, kw_only=True)
class ColumnRisk:
    """One column's part in the risk of the whole set."""

    column: str
    """Column name."""
    support: int
    """Number of observed values m_j."""
    exposure_alone: float
    """Share of users (0..1) exposed on this column alone (a lower bound on the joint exposure)."""
    exposure_without: float
    """Share of users (0..1) exposed on the other columns (NaN for a single column)."""

    def to_dict(self) -> dict[str, Any]:
        return {f: getattr(self, f) for f in self.__dataclass_fields__}


@dataclass(frozen=True, kw_only=True)
class RiskSummary:
    """Re-identification risk of a table on quasi-identifiers J at one threshold.

    ``exposure`` is the true share of users in groups of at most ``max_exposed_size`` users (groups
    smaller than k); ``bounds`` are what a curator holding only the marginals could guarantee.
    """

    columns: tuple[str, ...]
    """The quasi-identifiers J."""
    n: int
    """Users (rows) measured."""
    n_dropped: int | None
    """Rows dropped for missing values (policy ``"drop"``; None for lazy frames)."""
    k: int | None
    """Group size asked for (None when t was given)."""
    t: float | None
    """Share of rows asked for (None when k was given)."""
    max_exposed_size: int
    """Largest group size counted as exposed: k - 1 or floor(t n)."""
    k_anonymity: int
    """Smallest group size."""
    n_unique: int
    """Users unique on J."""
    n_groups: int
    """Distinct combinations on J."""
    exposure: float
    """True exposure: share of users (0..1) in groups of <= max_exposed_size users."""
    bounds: dict[str, float]
    """Bounds from the marginals: ``lower``, ``support``, ``theorem2``, ``theorem3``, ``best`` (shares)."""
    entropy_bits: float
    """Shannon entropy of the joint distribution on J, in bits."""
    entropy_bound: float
    """H / log2(1/t): what the entropy alone guarantees (share of users)."""
    entropy_bound_sharp: float
    """The sharp entropy bound (share of users)."""
    per_column: tuple[ColumnRisk, ...] = field(default_factory=tuple)
    """Each column's support, exposure alone and the exposure without it."""
    curve: ExposureCurve | None = None
    """The exposure curve (for plots; not in ``to_dict``)."""
    marginals: Marginals | None = None
    """The single-column counts behind the bounds (not in ``to_dict``)."""
    weights: str | None = None
    """The sampling-weight column (None: the table is taken as the population)."""
    exposure_population: float | None = None
    """With weights: share of users (0..1) whose key's estimated population count F_k is below k
    (None without weights, or when t was given)."""
    expected_reidentifications: float = float("nan")
    """Global risk as a count: sum of the individual risks (Benedetti-Franconi with weights, 1 / f_k
    without, where it equals the number of groups)."""
    global_risk: float = float("nan")
    """Global risk as a share (0..1): expected re-identifications / n."""

    def to_dict(self) -> dict[str, Any]:
        """JSON form with stable keys (shares of users in 0..1; entropy in bits)."""
        out = {
            f: getattr(self, f)
            for f in self.__dataclass_fields__
            if f not in ("curve", "marginals", "per_column")
        }
        out["columns"] = list(self.columns)
        out["per_column"] = [c.to_dict() for c in self.per_column]
        return out


def risk_summary(
    data: DataSource,
    columns: Sequence[str] | str,
    *,
    k: int | None = None,
    t: float | None = None,
    missing: MissingPolicy = "value",
    per_column: bool = True,
    weights: str | None = None,
) -> RiskSummary:
    """Measure the risk of ``data`` on ``columns`` at group size k (default 5) or share t.

    Computes the exposure curve (one pass), the marginals (one pass per column), every bound of
    :func:`joint_exposure_bound`, the entropy and its bounds and, with ``per_column``, the exposure
    without each column (one pass per column). With ``weights`` (a sampling-weight column) it
    also reports the population side: F_k = sum of the weights over each key, the share of users
    whose F_k is below k, and the global risk (expected re-identifications) of
    :func:`~sdckit.risk.individual_risk`.

    Examples
    --------
    >>> from sdckit.datasets import load_adult
    >>> s = risk_summary(load_adult(), ["workclass", "marital-status", "race", "sex"], k=5)
    >>> s.k_anonymity, s.n_unique, round(s.exposure, 5), round(s.bounds["best"], 5)
    (1, 58, 0.00875, 0.05018)
    """
    if k is None and t is None:
        k = 5
    threshold(1, k=k, t=t)  # validate before counting
    if t is not None and k is not None:
        raise ParameterError("give exactly one of k (a group size >= 1) or t (a share of rows, 0..1).")
    if weights is not None:
        frame = as_narwhals(data)
        cols = check_columns(frame, columns)
        d = read_data(frame, [*cols, weights] if weights not in cols else cols, missing=missing)
    else:
        d = read_data(data, columns, missing=missing)
        cols = list(d.columns)
    curve = exposure_curve(d.frame, cols, weights=weights)
    with warnings.catch_warnings():  # already warned by exposure_curve
        warnings.simplefilter("ignore", SdcWarning)
        marg = Marginals.from_data(d.frame, cols)
    n = curve.n
    if k is not None and int(k) > n:
        raise ParameterError(
            f"k={int(k)} is larger than the {n:,} users measured: every user would be in a group smaller "
            f"than k. Use k <= {n}."
        )
    thr = int(threshold(n, k=k, t=t))
    truth = float(curve.not_k_anonymous(thr + 1))
    bounds = {m: float(joint_exposure_bound(marg, k=thr + 1, method=m)) for m in BOUND_METHODS}  # type: ignore[arg-type]
    t_equiv = thr / n if n else 0.0
    parts: list[ColumnRisk] = []
    if per_column:
        for c in cols:
            rest = [x for x in cols if x != c]
            without = float("nan")
            if rest:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", SdcWarning)
                    without = float(exposure_curve(d.frame, rest).not_k_anonymous(thr + 1))
            parts.append(
                ColumnRisk(
                    column=c,
                    support=int(marg.counts[c].size),
                    exposure_alone=float(marg.exposure(c, k=thr + 1)),
                    exposure_without=without,
                )
            )
    if curve.group_sizes is not None and curve.population_sizes is not None:
        expected = float(
            np.sum(curve.group_sizes * benedetti_franconi(curve.group_sizes, curve.population_sizes))
        )
        pop_exposure = float(curve.not_k_anonymous_population(thr + 1)) if k is not None else None
    else:
        expected, pop_exposure = float(curve.n_groups), None
    return RiskSummary(
        weights=weights,
        exposure_population=pop_exposure,
        expected_reidentifications=expected,
        global_risk=expected / n,
        columns=tuple(cols),
        n=n,
        n_dropped=d.n_dropped,
        k=None if k is None else int(k),
        t=None if t is None else float(t),
        max_exposed_size=thr,
        k_anonymity=curve.k_anonymity,
        n_unique=curve.n_unique,
        n_groups=curve.n_groups,
        exposure=truth,
        bounds=bounds,
        entropy_bits=curve.entropy,
        entropy_bound=float(entropy_exposure_bound(curve.entropy, t_equiv)),
        entropy_bound_sharp=float(entropy_exposure_bound_sharp(curve.entropy, t_equiv)),
        per_column=tuple(parts),
        curve=curve,
        marginals=marg,
    )
