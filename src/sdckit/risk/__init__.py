"""Re-identification risk: exposure, bounds from marginals, statistical exposure, entropy, planning.

The measurement half of statistical anonymity (arXiv:2201.12306; mathematics in the anonymity
notes, ``docs/theory/anonymity.md``, cited as "anonymity notes §n"). Exposure Q_J(t) is the share
of users whose group on the columns J holds at most floor(t n) users; the share not k-anonymous is
Q_J((k - 1) / n).
"""

from sdckit.risk._blocks import REDACTED, BlockCounts
from sdckit.risk._bounds import PairBoundCurve, joint_exposure_bound, pair_bound_curve
from sdckit.risk._checks import BoundMethod, IntervalMethod
from sdckit.risk._entropy import entropy_exposure_bound, entropy_exposure_bound_sharp
from sdckit.risk._exposure import ExposureCurve, entropy, exposure, exposure_curve, record_risk
from sdckit.risk._individual import IndividualRisk, benedetti_franconi, individual_risk, with_individual_risk
from sdckit.risk._lazy_keys import with_group_sizes, with_wildcard_sizes
from sdckit.risk._ldiversity import DiversityKind, LDiversity, SensitiveDiversity, l_diversity
from sdckit.risk._linkage import DRiskRMD, RecordLinkage, d_risk, d_risk_rmd, record_linkage
from sdckit.risk._marginals import Marginals
from sdckit.risk._planner import ReleasePlan, Setting, plan_release
from sdckit.risk._queries import BlockQuery, QueryPlan, choose_pair_queries, received_marginals
from sdckit.risk._release import ReleaseMeasure, consistent_counts, measure_release
from sdckit.risk._statistical import (
    StatisticalExposure,
    estimate_statistical_exposure,
    plugin_exposure,
    statistical_exposure,
)
from sdckit.risk._statistical_bound import statistical_exposure_bound
from sdckit.risk._suda import Suda2Result, SudaMissing, suda2
from sdckit.risk._suda_blocks import with_suda2
from sdckit.risk._summary import ColumnRisk, RiskSummary, risk_summary
from sdckit.risk._wildcard import wildcard_group_sizes

__all__ = [
    "REDACTED",
    "BlockCounts",
    "BlockQuery",
    "BoundMethod",
    "ColumnRisk",
    "DRiskRMD",
    "DiversityKind",
    "ExposureCurve",
    "IndividualRisk",
    "IntervalMethod",
    "LDiversity",
    "Marginals",
    "PairBoundCurve",
    "QueryPlan",
    "RecordLinkage",
    "ReleaseMeasure",
    "ReleasePlan",
    "RiskSummary",
    "SensitiveDiversity",
    "Setting",
    "StatisticalExposure",
    "Suda2Result",
    "SudaMissing",
    "benedetti_franconi",
    "choose_pair_queries",
    "consistent_counts",
    "d_risk",
    "d_risk_rmd",
    "entropy",
    "entropy_exposure_bound",
    "entropy_exposure_bound_sharp",
    "estimate_statistical_exposure",
    "exposure",
    "exposure_curve",
    "individual_risk",
    "joint_exposure_bound",
    "l_diversity",
    "measure_release",
    "pair_bound_curve",
    "plan_release",
    "plugin_exposure",
    "received_marginals",
    "record_linkage",
    "record_risk",
    "risk_summary",
    "statistical_exposure",
    "statistical_exposure_bound",
    "suda2",
    "wildcard_group_sizes",
    "with_group_sizes",
    "with_individual_risk",
    "with_suda2",
    "with_wildcard_sizes",
]
