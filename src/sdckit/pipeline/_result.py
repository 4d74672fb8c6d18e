"""The outcome of a pipeline run, as data: the release in memory, its measures and what each step did."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
from numpy.typing import NDArray

from sdckit.microagg._relations import LinearRelation
from sdckit.pipeline._config import PipelineConfig
from sdckit.pipeline._roles import Roles
from sdckit.pipeline._steps import StepLog
from sdckit.plan import ReleasePlan
from sdckit.risk._measures._release import ReleaseMeasure

__all__ = ["PipelineResult"]


@dataclass(frozen=True)
class PipelineResult:
    """The outcome of a pipeline run: the release, its plan, its measures and the step log (no report:
    :func:`sdckit.report.build_report` renders a finished result)."""

    config: PipelineConfig
    """The configuration, with defaults filled in (quasi-identifiers, numeric columns)."""
    protected: pl.DataFrame
    """The release: every row of the input, only the columns with a releasing role, masked columns replaced."""
    plan: ReleasePlan
    """The release plan on the quasi-identifiers at k and budget (from the input's marginals)."""
    steps: tuple[StepLog, ...]
    """What each masking step did, in order."""
    roles: Roles | None = None
    """Every column's role, with the guesses flagged."""
    not_released: dict[str, str] = field(default_factory=dict)
    """Columns of the input that are not in the release, and why."""
    input_measure: ReleaseMeasure | None = None
    """The input's risk, as if its role columns were released unmasked."""
    release_measure: ReleaseMeasure | None = None
    """The release's risk, measured on ``protected`` (the table as written)."""
    relations: tuple[LinearRelation, ...] = ()
    """Linear relations found among the numeric columns before masking."""
    source_name: str = ""
    """The input's name, for the report."""
    input_frame: pl.DataFrame | None = None
    """The input as read (for the report's input sections)."""
    n_dropped: int = 0
    """Rows removed by ``missing: drop``."""
    numeric_guessed: bool = False
    """True when the numeric columns were guessed (no ``numeric`` given): the experiments then run on
    at most ``EXPERIMENT_MAX_COLUMNS`` of them."""
    labels: Any = None
    """The input's value and variable labels and declared missing values (a
    :class:`~sdckit._io.SurveyLabels`, from an SPSS, Stata or SAS file), written with a ``.sav``/``.dta`` release."""
    known: pl.DataFrame | None = None
    """What an attacker knows of each person (the quasi-identifiers after the public recodings, before
    suppression; and the weight), for the consistent count; never written."""
    row_order: NDArray[np.int64] | None = None
    """The shuffle: released row i is input row ``row_order[i]`` (None: the input's order); kept in
    memory to measure the written file against the input row by row, never written."""

    linked: Any = None
    """The linked columns (:class:`sdckit.pipeline._linked.LinkedPlan`): released columns that reveal a key,
    counted as quasi-identifiers; None for a result built without them."""
    scenarios: tuple[Any, ...] = ()
    """The headline for the attacker the guarantee assumes and for a wider one (``attacker_knows``),
    :class:`sdckit.pipeline._linked.Scenario` each."""

    posterior: Any = None
    """The attacker's posterior on each person's row given every released column
    (:class:`sdckit.risk._measures._posterior.RowPosterior`); None when not measured."""
    posterior_pass: dict[str, Any] | None = None
    """What the posterior pass suppressed and the bounds that hold after it
    (:meth:`sdckit.risk._measures._posterior_pass.PosteriorPass.to_dict`); None when it did not run."""

    @property
    def posterior_within_budget(self) -> bool:
        """True when the exposure at k plus the share of people in groups of at least k on whose row the
        attacker who reads every released column puts more than 1/k + tolerance is at most the budget
        (or the posterior was not measured)."""
        if self.posterior is None:
            return True
        exposure = self.release_measure.exposure_at_k if self.release_measure is not None else 0.0
        return exposure + self.posterior.share_above <= self.config.budget + 1e-12

    @property
    def within_budget(self) -> bool:
        """True when the release's exposure at k, and the share of people whose row the other released
        columns single out (posterior above 1/k + tolerance), are both at most the budget."""
        return (self.release_measure is None or self.release_measure.within_budget) and self.posterior_within_budget

    @property
    def refused(self) -> bool:
        """True when the release is over budget and ``allow_over_budget`` is not set: no data file is written."""
        return not self.within_budget and not self.config.allow_over_budget

    @property
    def data_output(self) -> Path | None:
        """The data file :func:`~sdckit.pipeline.write_outputs` writes (None: none, or refused over budget).

        ``write_outputs`` reads it back and measures it again before it writes the report; a report
        built for ``write_outputs`` states the figures as verified on it
        (``build_report(result, verified_on=result.data_output)``)."""
        if not self.config.output_data or self.refused:
            return None
        return Path(self.config.output_data)
