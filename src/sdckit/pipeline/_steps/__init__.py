"""The pipeline's masking steps: one class per kind, and the registry the pipeline file is parsed with.

A new masking method is its estimator, one :class:`Step` subclass (in a module of its own here) and
one line in :data:`STEPS`; ``tests/pipeline/test_steps_common.py`` then checks it with every other
step.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Union

from pydantic import Field

from sdckit.pipeline._steps._anonymize import AnonymizeOptions
from sdckit.pipeline._steps._base import Step, StepContext, StepLog, StepOption
from sdckit.pipeline._steps._correlated_noise import CorrelatedNoiseStep
from sdckit.pipeline._steps._local_suppression import LocalSuppressionStep
from sdckit.pipeline._steps._microaggregate import SUPPRESSED, MicroaggregateStep, merge_small_strata
from sdckit.pipeline._steps._noise import NoiseStep
from sdckit.pipeline._steps._pram import PramStep
from sdckit.pipeline._steps._rank_swap import RankSwapStep
from sdckit.pipeline._steps._recode import RecodeStep
from sdckit.pipeline._steps._record_swap import RecordSwapStep
from sdckit.pipeline._steps._suppress import SuppressStep
from sdckit.pipeline._steps._top_code import TopCodeStep

__all__ = [
    "STEPS",
    "SUPPRESSED",
    "AnonymizeOptions",
    "AnyStep",
    "CorrelatedNoiseStep",
    "LocalSuppressionStep",
    "MicroaggregateStep",
    "NoiseStep",
    "PramStep",
    "RankSwapStep",
    "RecodeStep",
    "RecordSwapStep",
    "Step",
    "StepContext",
    "StepLog",
    "StepOption",
    "SuppressStep",
    "TopCodeStep",
    "merge_small_strata",
]

_REGISTERED: tuple[type[Step], ...] = (
    MicroaggregateStep,
    NoiseStep,
    RankSwapStep,
    CorrelatedNoiseStep,
    SuppressStep,
    RecodeStep,
    TopCodeStep,
    LocalSuppressionStep,
    PramStep,
    RecordSwapStep,
)

STEPS: dict[str, type[Step]] = {cls.model_fields["kind"].default: cls for cls in _REGISTERED}
"""Every step kind (its YAML key) and its class, in the order the docs list them."""

if TYPE_CHECKING:  # a type checker sees a step; pydantic, the union of the registry's classes
    AnyStep = Step
else:
    AnyStep = Annotated[Union[_REGISTERED], Field(discriminator="kind")]  # noqa: UP007 - built from a tuple
"""Any registered step, told apart by its ``kind`` (pydantic's discriminated union; the JSON schema)."""
