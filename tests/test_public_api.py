"""Every public name of sdckit at 012c944 (the names in each package's ``__all__`` then) still imports
from where it did (issue 33: the layout moved, the public API did not). A name that moved warns with
a ``DeprecationWarning`` naming its new home; none is gone. The list is written out, not read from the
code under test, so a name dropped from a package fails here."""

from __future__ import annotations

import importlib
import warnings

import pytest

PUBLIC_AT_012C944: dict[str, tuple[str, ...]] = {
    "sdckit": (
        "Data", "__version__", "check_numeric", "datasets", "errors", "read_data",
    ),
    "sdckit._io": (
        "Data", "DataSource", "MissingPolicy", "ReadOptions", "Staging", "SurveyLabels", "as_narwhals",
        "atomic_output", "check_columns", "check_numeric", "check_output_path", "check_outputs", "is_lazy",
        "like_input", "native_kind", "read_back_options", "read_data", "read_path", "set_aside",
        "staged_outputs", "write_table", "writing",
    ),
    "sdckit._scale": (
        "Engine", "block_sizes", "collect_all", "collect_if_lazy", "collect_small", "column_moments",
        "count_driver_rows", "driver_rows", "engine_of", "is_distributed", "local_spark", "map_blocks",
        "map_partitions", "null_counts", "numeric_dtypes", "restore_kind",
    ),
    "sdckit.anonymize": (
        "GlobalRecoder", "Hierarchy", "LocalSuppressor", "PRAM", "TopBottomCoder", "adult_hierarchies",
        "invariant_matrix", "local_suppression", "recode", "redaction_allowance", "sdcmicro_matrix",
        "wildcard_group_sizes",
    ),
    "sdckit.app": (
        "create_app", "free_port", "serve",
    ),
    "sdckit.cli": (
        "COMMANDS", "app", "load_command", "main",
    ),
    "sdckit.datasets": (
        "ADULT_COLUMNS", "ADULT_NUMERIC", "ADULT_QUASI_IDENTIFIERS", "load_adult", "load_adult_hierarchies",
    ),
    "sdckit.microagg": (
        "Centre", "CorrelatedNoise", "EIGHT_TYPES", "Fill", "LinearRelation", "LinearRelationError", "MDAV",
        "METHODS", "Method", "Microaggregation", "Missing", "MomentRestorer", "NoiseLaw", "Partition",
        "PositivityMode", "PositivityRestorer", "PositivityStats", "RankSwap", "RestoreMethod",
        "RestoredMasking", "RestoredMicroaggregation", "SortKey", "UtilityTable", "VARIANTS", "block_mdav",
        "blocked_mdav_groups", "check_linear_relations", "cluster_utility", "distributed_microaggregate",
        "distributed_moments", "ecdf_utility", "eigen_distance", "eight_types_data",
        "eight_types_experiment", "experiment", "find_linear_relations", "il1s", "information_loss",
        "interval_disclosure", "kd_blocks", "keyed_mdav_groups", "map_from_moments", "mdav_groups",
        "propensity_utility", "restoring_map", "standardize", "utility_measures", "utility_table",
        "vmdav_groups",
    ),
    "sdckit.pipeline": (
        "ANONYMIZE_STEPS", "AnonymizeStep", "CorrelatedNoiseStep", "DistributedResult", "Flag",
        "MicroaggregateStep", "NoiseStep", "PipelineConfig", "PipelineResult", "RankSwapStep",
        "ReadSection", "Roles", "Step", "StepLog", "SuppressStep", "WrittenRelease",
        "check_pipeline_outputs", "guess_columns", "guess_roles", "load_config", "measure_parquet",
        "merge_small_strata", "parse_config", "pipeline_inputs", "pipeline_outputs", "run_distributed",
        "run_pipeline", "write_distributed", "write_outputs",
    ),
    "sdckit.protocol": (
        "Analyst", "Client", "CollectionSpec", "Curator", "PairCurator", "PairQueries", "PairQuery",
        "PlanMethod", "PlanRefusedError", "PrivateKey", "PublicKey", "PublishedPlan", "REDACTED",
        "Redaction", "Setting", "Shuffler", "SimulationResult", "SuiteName", "Tally", "User",
        "choose_pairs", "decide_plan", "decode_value", "decoy_probability", "encode_value", "exposure_at_k",
        "generate_key_file", "info_label", "key_hierarchy", "open_sealed", "pack_batch", "pack_feature",
        "pack_row", "read_private_key", "seal", "sealed_length", "secure_permutation", "simulate",
        "suppress_rare", "unpack_batch", "unpack_feature", "unpack_row", "verify_pairs", "verify_plan",
        "verify_release", "write_private_key",
    ),
    "sdckit.protocol.parties": (
        "Analyst", "Curator", "PairCurator", "Shuffler", "Tally", "User", "count_redacted",
        "marginals_from_keys", "rows_to_frame", "secure_permutation",
    ),
    "sdckit.protocol.services": (
        "AnalystStore", "CuratorStore", "PostgresShufflerStore", "ROLES", "Role", "ServiceConfig",
        "ShufflerStore", "analyst_app", "build_app", "curator_app", "load_config", "open_shuffler_store",
        "serve", "shuffler_app",
    ),
    "sdckit.report": (
        "Block", "Report", "Section", "figure", "metrics", "paragraph", "table", "to_jsonable",
    ),
    "sdckit.risk": (
        "BlockCounts", "BlockQuery", "BoundMethod", "ColumnRisk", "DRiskRMD", "DiversityKind",
        "ExposureCurve", "IndividualRisk", "IntervalMethod", "LDiversity", "Marginals", "PairBoundCurve",
        "QueryPlan", "REDACTED", "RecordLinkage", "ReleaseMeasure", "ReleasePlan", "RiskSummary",
        "SensitiveDiversity", "Setting", "StatisticalExposure", "Suda2Result", "SudaMissing",
        "benedetti_franconi", "choose_pair_queries", "consistent_counts", "d_risk", "d_risk_rmd", "entropy",
        "entropy_exposure_bound", "entropy_exposure_bound_sharp", "estimate_statistical_exposure",
        "exposure", "exposure_curve", "individual_risk", "joint_exposure_bound", "l_diversity",
        "measure_release", "pair_bound_curve", "plan_release", "plugin_exposure", "received_marginals",
        "record_linkage", "record_risk", "risk_summary", "statistical_exposure",
        "statistical_exposure_bound", "suda2", "wildcard_group_sizes", "with_group_sizes",
        "with_individual_risk", "with_suda2", "with_wildcard_sizes",
    ),
    "sdckit.spectral": (
        "AdditiveNoise", "DISTRIBUTIONS", "DataLaw", "Gap", "GapSimulation", "Interval", "LeakageBound",
        "LeakageEstimate", "NON_GAUSSIANITY", "NoiseDesign", "NoiseDistribution", "NoisyPCA",
        "SeparationMethod", "SpikedFit", "SpikedModel", "SpikedSupport", "SupMethod", "Support",
        "cauchy_transform", "cdf", "companion_transform", "critical_noise_precise", "density",
        "design_noise", "design_noise_from_data", "discrete_noise_entropy", "discriminant_polynomial",
        "draw_noise", "estimate_leakage", "fit_spiked", "gaussian_leakage", "information_leakage",
        "integer_leakage_bound", "knn_entropy", "leakage_bound", "noise_entropy", "noise_for_covariance",
        "non_gaussianity", "separation_discriminant", "separation_precise", "simulate_gap",
        "simulate_spectrum", "spike_count", "support", "support_discriminant",
    ),
}


@pytest.mark.parametrize("module", sorted(PUBLIC_AT_012C944))
def test_every_public_name_of_012c944_still_imports(module: str) -> None:
    if module in ("sdckit.protocol", "sdckit.protocol.services", "sdckit.protocol.parties", "sdckit.app"):
        pytest.importorskip("fastapi" if module == "sdckit.app" else "cryptography")
    mod = importlib.import_module(module)
    missing = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # moved names warn; tests/risk/test_moved_names.py checks that
        for name in PUBLIC_AT_012C944[module]:
            if not hasattr(mod, name):
                missing.append(name)
    assert not missing, f"{module} no longer has {missing}"
