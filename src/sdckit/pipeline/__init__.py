"""A declarative release pipeline: input, column roles, k, budget, masking steps, outputs.

``sdckit run pipeline.yaml`` runs one of these files: it masks, keeps only the columns with a
releasing role, measures the release as written (:func:`sdckit.risk.measure_release`) and
refuses, writing no data file, when the release is over its budget. ``sdckit report --config``
renders the same run without writing data. See ``examples/pipelines/`` and ``docs/pipeline.md``.
"""

from sdckit.pipeline._config import (
    ANONYMIZE_STEPS,
    AnonymizeStep,
    PipelineConfig,
    ReadSection,
    load_config,
    parse_config,
)
from sdckit.pipeline._distributed import (
    DistributedResult,
    WrittenRelease,
    measure_parquet,
    run_distributed,
    write_distributed,
)
from sdckit.pipeline._outputs import check_pipeline_outputs, pipeline_inputs, pipeline_outputs, write_outputs
from sdckit.pipeline._resolve import guess_columns
from sdckit.pipeline._result import PipelineResult
from sdckit.pipeline._roles import Flag, Roles, guess_roles
from sdckit.pipeline._run import run_pipeline
from sdckit.pipeline._steps import (
    STEPS,
    CorrelatedNoiseStep,
    LocalSuppressionStep,
    MicroaggregateStep,
    NoiseStep,
    PramStep,
    RankSwapStep,
    RecodeStep,
    Step,
    StepContext,
    StepLog,
    SuppressStep,
    TopCodeStep,
    merge_small_strata,
)

__all__ = [
    "ANONYMIZE_STEPS",
    "STEPS",
    "AnonymizeStep",
    "CorrelatedNoiseStep",
    "DistributedResult",
    "Flag",
    "LocalSuppressionStep",
    "MicroaggregateStep",
    "NoiseStep",
    "PipelineConfig",
    "PipelineResult",
    "PramStep",
    "RankSwapStep",
    "ReadSection",
    "RecodeStep",
    "Roles",
    "Step",
    "StepContext",
    "StepLog",
    "SuppressStep",
    "TopCodeStep",
    "WrittenRelease",
    "check_pipeline_outputs",
    "guess_columns",
    "guess_roles",
    "load_config",
    "measure_parquet",
    "merge_small_strata",
    "parse_config",
    "pipeline_inputs",
    "pipeline_outputs",
    "run_distributed",
    "run_pipeline",
    "write_distributed",
    "write_outputs",
]
