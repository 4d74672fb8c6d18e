"""Re-identification risk: exposure, bounds from marginals, statistical exposure, entropy, planning.

The measurement half of statistical anonymity (arXiv:2201.12306; mathematics in the anonymity
notes). Exposure Q_J(t) is the share of users whose group on the columns J holds at most
floor(t n) users; the share not k-anonymous is Q_J((k - 1) / n).
"""

from sdckit.risk._bounds import joint_exposure_bound
from sdckit.risk._checks import BoundMethod, IntervalMethod
from sdckit.risk._entropy import entropy_exposure_bound, entropy_exposure_bound_sharp
from sdckit.risk._exposure import ExposureCurve, entropy, exposure, exposure_curve, record_risk
from sdckit.risk._marginals import Marginals
from sdckit.risk._planner import ReleasePlan, Setting, plan_release
from sdckit.risk._statistical import (
    StatisticalExposure,
    estimate_statistical_exposure,
    plugin_exposure,
    statistical_exposure,
)
from sdckit.risk._statistical_bound import statistical_exposure_bound
from sdckit.risk._summary import ColumnRisk, RiskSummary, risk_summary
from sdckit.risk._wildcard import wildcard_group_sizes

__all__ = [
    "BoundMethod",
    "ColumnRisk",
    "ExposureCurve",
    "IntervalMethod",
    "Marginals",
    "ReleasePlan",
    "RiskSummary",
    "Setting",
    "StatisticalExposure",
    "entropy",
    "entropy_exposure_bound",
    "entropy_exposure_bound_sharp",
    "estimate_statistical_exposure",
    "exposure",
    "exposure_curve",
    "joint_exposure_bound",
    "plan_release",
    "plugin_exposure",
    "record_risk",
    "risk_summary",
    "statistical_exposure",
    "statistical_exposure_bound",
    "wildcard_group_sizes",
]
