"""Which release is better: candidate releases of one input on one measured risk-utility map.

:func:`run_compare` runs each candidate (pipeline steps, or differentially private synthetic data
from :mod:`sdckit.synth`) ``repeat`` times, writes every release, reads it back and measures it
with the same figures (:data:`RISK_FIGURES`, :data:`UTILITY_FIGURES`); :func:`build_compare_report`
draws the map with the spread of each candidate, the frontier, epsilon and the budget. New risk
figures (the outsider attacks) plug in as :class:`Figure` entries passed to :func:`run_compare`.
"""

from sdckit.compare._figures import (
    RISK_FIGURES,
    UTILITY_FIGURES,
    Figure,
    Regression,
    ReleaseContext,
    measure_written,
)
from sdckit.compare._report import build_compare_report, summary_rows
from sdckit.compare._run import (
    Candidate,
    CandidateResult,
    CompareResult,
    CompareSpec,
    load_compare,
    pareto_frontier,
    parse_compare,
    planned_outputs,
    run_compare,
)

__all__ = [
    "RISK_FIGURES",
    "UTILITY_FIGURES",
    "Candidate",
    "CandidateResult",
    "CompareResult",
    "CompareSpec",
    "Figure",
    "Regression",
    "ReleaseContext",
    "build_compare_report",
    "load_compare",
    "measure_written",
    "pareto_frontier",
    "parse_compare",
    "planned_outputs",
    "run_compare",
    "summary_rows",
]
