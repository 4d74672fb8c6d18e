"""Release decisions: which columns to release, at which recoding level, with which suppression.

The decision half of statistical anonymity (arXiv:2201.12306; anonymity notes §5 and §8). The
planner reads the measures and bounds of :mod:`sdckit.risk` and drives the methods of
:mod:`sdckit.anonymize` (global recoding, local suppression); neither of those imports it.
"""

from sdckit.plan._planner import ReleasePlan, Setting, plan_release
from sdckit.plan._queries import BlockQuery, QueryPlan, choose_pair_queries, received_marginals

__all__ = [
    "BlockQuery",
    "QueryPlan",
    "ReleasePlan",
    "Setting",
    "choose_pair_queries",
    "plan_release",
    "received_marginals",
]
