"""A declarative release pipeline: input, quasi-identifiers, k, budget, masking steps, outputs.

``sdckit run pipeline.yaml`` and ``sdckit report --config pipeline.yaml`` read one of these files;
see ``examples/pipelines/`` for complete examples.
"""

from sdckit.pipeline._config import (
    MicroaggregateStep,
    NoiseStep,
    PipelineConfig,
    Step,
    SuppressStep,
    load_config,
    parse_config,
)
from sdckit.pipeline._run import PipelineResult, StepLog, guess_columns, run_pipeline, write_outputs

__all__ = [
    "MicroaggregateStep",
    "NoiseStep",
    "PipelineConfig",
    "PipelineResult",
    "Step",
    "StepLog",
    "SuppressStep",
    "guess_columns",
    "load_config",
    "parse_config",
    "run_pipeline",
    "write_outputs",
]
