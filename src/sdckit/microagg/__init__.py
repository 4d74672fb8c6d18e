"""Microaggregation, moment restoration, positivity and data-utility measures.

* :class:`MDAV` and :class:`Microaggregation` (MDAV, blocked MDAV, V-MDAV, individual ranking,
  first principal component, single-variable sort; mean or median centres; strata; missing
  values): each value becomes its group's centre, groups of at least k records.
* :class:`MomentRestorer`: T(x) = A x + b with the original mean and covariance (Woo, NISS).
* :class:`PositivityRestorer`: the same, keeping non-negative columns non-negative.
* :class:`RestoredMicroaggregation`: microaggregation then restoration, one ordinary transformer.
* :class:`RankSwap` (Moore's rank swapping, sdcMicro's parameters) and :class:`CorrelatedNoise`
  (noise proportional to the covariance, sdcMicro's ``correlated2``, or noise keeping the sample
  mean and covariance exactly): the other numeric masking methods.
* :class:`RestoredMasking`: any numeric masking then moment restoration, one transformer.
* :func:`distributed_microaggregate`: blocked MDAV on a Dask or Spark frame, block by block where
  the rows live (same groups as ``Microaggregation(method="mdav_blocked", blocks=...)``).
* :func:`utility_table`: IL, IL1s, eigenvalue distance, relative changes of moments and
  regressions, ECDF U_m/U_s, cluster U_c, propensity U_p, negative share, SDID risk.

Mathematics: the microaggregation notes (``docs/theory/microaggregation.md``; sources cited there).
"""

from sdckit.microagg._base import Centre, Missing
from sdckit.microagg._composed import RestoredMasking, RestoredMicroaggregation
from sdckit.microagg._distributed import distributed_microaggregate, distributed_moments
from sdckit.microagg._experiment import (
    EIGHT_TYPES,
    METHODS,
    VARIANTS,
    eight_types_data,
    eight_types_experiment,
    experiment,
)
from sdckit.microagg._groups import (
    block_mdav,
    blocked_mdav_groups,
    kd_blocks,
    keyed_mdav_groups,
    mdav_groups,
    standardize,
    vmdav_groups,
)
from sdckit.microagg._mdav import MDAV, Method, Microaggregation, information_loss
from sdckit.microagg._noise import CorrelatedNoise, NoiseLaw
from sdckit.microagg._positivity import (
    Fill,
    Partition,
    PositivityMode,
    PositivityRestorer,
    PositivityStats,
    SortKey,
)
from sdckit.microagg._rankswap import RankSwap
from sdckit.microagg._relations import (
    LinearRelation,
    LinearRelationError,
    check_linear_relations,
    find_linear_relations,
)
from sdckit.microagg._restore import MomentRestorer, RestoreMethod, map_from_moments, restoring_map
from sdckit.microagg._utility import (
    UtilityTable,
    cluster_utility,
    ecdf_utility,
    eigen_distance,
    il1s,
    interval_disclosure,
    propensity_utility,
    utility_measures,
    utility_table,
)

__all__ = [
    "EIGHT_TYPES",
    "MDAV",
    "METHODS",
    "VARIANTS",
    "Centre",
    "CorrelatedNoise",
    "Fill",
    "LinearRelation",
    "LinearRelationError",
    "Method",
    "Microaggregation",
    "Missing",
    "MomentRestorer",
    "NoiseLaw",
    "Partition",
    "PositivityMode",
    "PositivityRestorer",
    "PositivityStats",
    "RankSwap",
    "RestoreMethod",
    "RestoredMasking",
    "RestoredMicroaggregation",
    "SortKey",
    "UtilityTable",
    "block_mdav",
    "blocked_mdav_groups",
    "check_linear_relations",
    "cluster_utility",
    "distributed_microaggregate",
    "distributed_moments",
    "ecdf_utility",
    "eigen_distance",
    "eight_types_data",
    "eight_types_experiment",
    "experiment",
    "find_linear_relations",
    "il1s",
    "information_loss",
    "interval_disclosure",
    "kd_blocks",
    "keyed_mdav_groups",
    "map_from_moments",
    "mdav_groups",
    "propensity_utility",
    "restoring_map",
    "standardize",
    "utility_measures",
    "utility_table",
    "vmdav_groups",
]
