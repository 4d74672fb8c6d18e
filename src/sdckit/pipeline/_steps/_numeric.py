"""What the numeric masking steps share: their columns, their data checks, and the optional
restoration of the mean and covariance (``restore_moments``, ``positivity``)."""

from __future__ import annotations

import re
from collections.abc import Collection, Sequence
from typing import Any, ClassVar, Literal

import numpy as np
import polars as pl
from numpy.typing import NDArray
from pydantic import field_validator

from sdckit._io import check_numeric
from sdckit._io._survey import SurveyLabels
from sdckit.errors import ConfigError, NonNumericColumnError
from sdckit.microagg import MomentRestorer, PositivityRestorer
from sdckit.pipeline._fields import Flag, split_columns
from sdckit.pipeline._roles import Roles
from sdckit.pipeline._steps._base import Step, StepContext, StepLog

__all__ = ["NumericStep", "Positivity", "numeric_columns", "restore"]

Positivity = Literal["none", "same", "subset", "global"]


def numeric_columns(frame: pl.DataFrame, columns: Sequence[str]) -> NDArray[np.float64]:
    """The columns as floats; a text column or a missing value raises its precise error."""
    try:
        X, _ = check_numeric(frame, list(columns), missing="error")
    except NonNumericColumnError as err:  # often a reading option: a decimal comma, a missing-value marker
        value = str(err.value).strip()
        if re.fullmatch(r"[-+]?\d[\d.]*,\d+", value):
            hint = "The file's decimal mark looks like a comma: read it with read: {decimal: ','}."
        else:
            hint = (f"If {value!r} means missing, list it under read, e.g. read: {{na_values: ['{value}', NA, '']}}; "
                    "otherwise leave the column out of the numeric columns.")
        raise NonNumericColumnError(err.column, err.value, err.row, fix=hint) from None
    return X


def declared_missing_in(frame: pl.DataFrame, column: str, labels: SurveyLabels | None) -> tuple[float | str, int] | None:
    """The first SPSS declared missing code (or range) found in a numeric column, and how often."""
    if labels is None or column not in frame.columns or not frame.schema[column].is_numeric():
        return None
    cells = labels.declared.get(column)
    if cells is not None:  # read as missing; the codes kept beside the data
        codes = [v for v in cells.tolist() if v is not None]
        if codes:
            first = codes[0]
            return (float(first) if not isinstance(first, str) else first), len(codes)
    values = frame[column].cast(pl.Float64)
    for spec in labels.missing_ranges.get(column, ()):
        lo, hi = (spec["lo"], spec["hi"]) if isinstance(spec, dict) else (spec, spec)
        if not isinstance(lo, (int, float)):
            continue
        hit = values.filter((values >= lo) & (values <= hi))
        if hit.len():
            return float(hit[0]), int(hit.len())
    return None


def restore(
    before: pl.DataFrame, after: pl.DataFrame, columns: tuple[str, ...], log: StepLog, *,
    positivity: Positivity, restore_moments: bool,
) -> tuple[pl.DataFrame, StepLog]:
    """A numeric step's ``restore_moments`` / ``positivity``: T(x) = A x + b fitted on (before, after)."""
    if positivity == "none" and not restore_moments:
        return after, log
    original, masked = before.select(columns), after.select(columns)
    details = dict(log.details)
    if positivity != "none":
        restorer = PositivityRestorer(mode=positivity, columns=list(columns))
        restorer.fit(original, masked, groups=np.arange(original.height))  # no groups: each record its own
        restored = restorer.transform(masked)
        details["positivity"] = restorer.stats_.to_dict()
        what = f" Mean and covariance restored keeping signs ({positivity})."
    else:
        restored = MomentRestorer(columns=list(columns)).fit(original, masked).transform(masked)
        what = " Mean and covariance restored."
    details["restore_moments"] = True
    return after.with_columns(restored.select(columns)), StepLog(log.kind, log.columns, details, log.description + what)


class NumericStep(Step):
    """A step that masks numeric columns: its ``columns``, or the pipeline's ``numeric``."""

    masks_amounts = True
    verb: ClassVar[str] = "perturb"
    """What the step does to an amount, in the message refusing a categorical column."""

    restore_moments: Flag = False
    """Then apply the linear transformation that restores the original mean and covariance."""
    positivity: Positivity = "none"
    """Restore keeping non-negative columns non-negative: ``none``, ``same``, ``subset`` or ``global``."""

    @field_validator("columns", mode="before", check_fields=False)
    @classmethod
    def _split_columns(cls, v: Any) -> Any:
        return split_columns(v)

    @field_validator("positivity", mode="before")
    @classmethod
    def _yaml_no(cls, v: Any) -> Any:
        return "none" if v is False else v  # YAML reads `positivity: no` as False

    def named_columns(self) -> tuple[str, ...]:
        return tuple(getattr(self, "columns", None) or ())

    def columns_of(self, roles: Roles) -> tuple[str, ...]:
        """The step's ``columns``, or the pipeline's numeric columns."""
        return self.named_columns() or tuple(roles.numeric)

    def columns_touched(self, roles: Roles) -> tuple[str, ...]:
        return self.columns_of(roles)

    def masking(self, frame: pl.DataFrame, ctx: StepContext) -> tuple[str, ...]:
        """The columns this run masks: the step's, or the pipeline's numeric ones, present in ``frame``."""
        cols = self.named_columns() or ctx.numeric
        return tuple(c for c in cols if c in frame.columns)

    def check(
        self, frame: pl.DataFrame, roles: Roles, labels: SurveyLabels | None, *, source: str, index: int,
        declared_categorical: Collection[str] = (),
    ) -> None:
        cols = self.columns_of(roles)
        cat = next((c for c in cols if c in roles.categorical), None)
        if cat is not None:
            why = "is listed under categorical" if cat in declared_categorical else "has value labels in the input file"
            raise ConfigError(
                f"{source}: steps[{index}].{self.kind}.columns: {cat!r} {why}: its values are categories, not amounts to "
                f"{self.verb}. Leave it out of the step (recode or "
                "pram it instead), or, if it is a number, list it under numeric."
            )
        for c in cols:
            found = declared_missing_in(frame, c, labels)
            if found is not None:
                code, n = found
                shown = f".{code}" if isinstance(code, str) else f"{code:g}"
                how = (f"Stata: replace {c} = . if {c} == .{code}" if isinstance(code, str)
                       else f"SPSS: RECODE {c} ({code:g}=SYSMIS)")
                raise ConfigError(
                    f"{source}: steps[{index}].{self.kind}.columns: {c!r} holds the declared missing code {shown} in {n:,} "
                    f"row(s) of the input file: a code, not an amount, that {self.kind} would mix into the masked "
                    f"values. Leave the column out of the step, or make the code system-missing before sdckit ({how})."
                )
        if not cols:
            raise ConfigError(
                f"{source}: steps[{index}].{self.kind}: no columns to mask; list them in `numeric` or in the step's `columns`."
            )
