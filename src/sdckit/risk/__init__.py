"""Re-identification risk: exposure, bounds from marginals, statistical exposure, entropy.

The measurement half of statistical anonymity (arXiv:2201.12306; mathematics in the anonymity
notes, ``docs/theory/anonymity.md``, cited as "anonymity notes §n"). Exposure Q_J(t) is the share
of users whose group on the columns J holds at most floor(t n) users; the share not k-anonymous is
Q_J((k - 1) / n).
"""

import importlib
import warnings
from typing import Any

from sdckit._checks import BoundMethod, IntervalMethod
from sdckit.risk._bounds._entropy import entropy_exposure_bound, entropy_exposure_bound_sharp
from sdckit.risk._bounds._joint import PairBoundCurve, joint_exposure_bound, pair_bound_curve
from sdckit.risk._bounds._statistical import (
    StatisticalExposure,
    estimate_statistical_exposure,
    plugin_exposure,
    statistical_exposure,
)
from sdckit.risk._bounds._statistical_bound import statistical_exposure_bound
from sdckit.risk._counts._blocks import REDACTED, BlockCounts
from sdckit.risk._counts._lazy_keys import with_group_sizes, with_wildcard_sizes
from sdckit.risk._counts._marginals import Marginals
from sdckit.risk._counts._wildcard import wildcard_group_sizes
from sdckit.risk._measures._attacks import AttackResult, AttackSettings, held_out_attacks, release_attacks
from sdckit.risk._measures._exposure import ExposureCurve, entropy, exposure, exposure_curve, record_risk
from sdckit.risk._measures._household import HouseholdRisk, entity_group_sizes, household_risk
from sdckit.risk._measures._individual import (
    IndividualRisk,
    benedetti_franconi,
    individual_risk,
    with_individual_risk,
)
from sdckit.risk._measures._ldiversity import DiversityKind, LDiversity, SensitiveDiversity, l_diversity
from sdckit.risk._measures._linkage import DRiskRMD, RecordLinkage, d_risk, d_risk_rmd, record_linkage
from sdckit.risk._measures._population import (
    GaussianCopulaUniqueness,
    PopulationUniques,
    pitman_uniques,
    sample_class_sizes,
    snb_uniques,
    zayatz_uniques,
)
from sdckit.risk._measures._release import (
    ReleaseMeasure,
    consistent_counts,
    measure_lazy_release,
    measure_release,
)
from sdckit.risk._measures._suda import Suda2Result, SudaMissing, suda2
from sdckit.risk._measures._suda_blocks import with_suda2
from sdckit.risk._summary import ColumnRisk, RiskSummary, risk_summary

_MOVED = {  # name -> the package it moved to (issue 33: decisions sit above the measures)
    "BlockQuery": "sdckit.plan",
    "QueryPlan": "sdckit.plan",
    "ReleasePlan": "sdckit.plan",
    "Setting": "sdckit.plan",
    "choose_pair_queries": "sdckit.plan",
    "plan_release": "sdckit.plan",
    "received_marginals": "sdckit.plan",
}


def __getattr__(name: str) -> Any:
    """The planning names moved to :mod:`sdckit.plan`: still importable from here, with a warning."""
    home = _MOVED.get(name)
    if home is None:
        raise AttributeError(f"module 'sdckit.risk' has no attribute {name!r}")
    warnings.warn(
        f"sdckit.risk.{name} moved to {home}.{name}; import it from {home}",
        DeprecationWarning,
        stacklevel=2,
    )
    return getattr(importlib.import_module(home), name)


__all__ = [
    "REDACTED",
    "AttackResult",
    "AttackSettings",
    "BlockCounts",
    "BoundMethod",
    "ColumnRisk",
    "DRiskRMD",
    "DiversityKind",
    "ExposureCurve",
    "GaussianCopulaUniqueness",
    "HouseholdRisk",
    "IndividualRisk",
    "IntervalMethod",
    "LDiversity",
    "Marginals",
    "PairBoundCurve",
    "PopulationUniques",
    "RecordLinkage",
    "ReleaseMeasure",
    "RiskSummary",
    "SensitiveDiversity",
    "StatisticalExposure",
    "Suda2Result",
    "SudaMissing",
    "benedetti_franconi",
    "consistent_counts",
    "d_risk",
    "d_risk_rmd",
    "entity_group_sizes",
    "entropy",
    "entropy_exposure_bound",
    "entropy_exposure_bound_sharp",
    "estimate_statistical_exposure",
    "exposure",
    "exposure_curve",
    "held_out_attacks",
    "household_risk",
    "individual_risk",
    "joint_exposure_bound",
    "l_diversity",
    "measure_lazy_release",
    "measure_release",
    "pair_bound_curve",
    "pitman_uniques",
    "plugin_exposure",
    "record_linkage",
    "record_risk",
    "release_attacks",
    "risk_summary",
    "sample_class_sizes",
    "snb_uniques",
    "statistical_exposure",
    "statistical_exposure_bound",
    "suda2",
    "wildcard_group_sizes",
    "with_group_sizes",
    "with_individual_risk",
    "with_suda2",
    "with_wildcard_sizes",
    "zayatz_uniques",
]
