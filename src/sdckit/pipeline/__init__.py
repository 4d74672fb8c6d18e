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

__all__ = [
    "MicroaggregateStep",
    "NoiseStep",
    "PipelineConfig",
    "Step",
    "SuppressStep",
    "load_config",
    "parse_config",
]
