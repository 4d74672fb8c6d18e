"""What the microaggregation estimators share: parameters, fitted checks, numeric input."""

from __future__ import annotations

import inspect
from collections.abc import Sequence
from typing import Any, Literal

import narwhals as nw
import numpy as np
from numpy.typing import NDArray

from sdckit._io import DataSource, as_narwhals, check_columns, check_numeric
from sdckit.errors import MissingValuesError, NonNumericColumnError, NotFittedError, ParameterError

Centre = Literal["mean", "median"]
"""Group centre: the attribute ``"mean"`` (default; keeps column means exactly) or ``"median"``."""

Missing = Literal["error", "keep"]
"""``"error"``: missing values raise, naming the column. ``"keep"``: a missing cell counts as the
column mean when grouping, is left out of its group's centre, and stays missing in the output."""


class Estimator:
    """Minimal scikit-learn contract: keyword parameters stored by ``__init__``, ``get_params``."""

    @classmethod
    def _param_names(cls) -> list[str]:
        sig = inspect.signature(cls.__init__)
        return [name for name in sig.parameters if name != "self"]

    def get_params(self, deep: bool = True) -> dict[str, Any]:
        """The constructor parameters and their current values."""
        return {name: getattr(self, name) for name in self._param_names()}

    def set_params(self, **params: Any) -> Estimator:
        """Set constructor parameters (unknown names raise :class:`ParameterError`)."""
        valid = set(self._param_names())
        for name, value in params.items():
            if name not in valid:
                raise ParameterError(
                    f"{type(self).__name__} has no parameter {name!r}; it has {sorted(valid)}."
                )
            setattr(self, name, value)
        return self

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.get_params().items())
        return f"{type(self).__name__}({args})"

    def _check_fitted(self, attribute: str) -> None:
        if not hasattr(self, attribute):
            raise NotFittedError(f"this {type(self).__name__} is not fitted yet; call fit(...) first.")


def numeric_matrix(
    source: DataSource, columns: Sequence[str] | str | None, *, missing: Missing = "error", min_rows: int = 1
) -> tuple[NDArray[np.float64], tuple[str, ...]]:
    """Numeric (n, p) float64 matrix of ``columns``; with ``missing="keep"`` NaN marks missing cells."""
    if missing not in ("error", "keep"):
        raise ParameterError(f"missing={missing!r} is not a policy here; use 'error' or 'keep'.")
    try:
        return check_numeric(source, columns, missing="error", min_rows=min_rows)
    except MissingValuesError:
        if missing == "error":
            raise
    frame = as_narwhals(source)
    names = check_columns(frame, columns)
    if isinstance(frame, nw.LazyFrame):
        frame = frame.collect()
    cols = []
    for name in names:
        series = frame[name]
        if not (series.dtype.is_numeric() or series.dtype == nw.Boolean):
            raise NonNumericColumnError(name, series.drop_nulls()[0] if len(series.drop_nulls()) else None)
        cols.append(np.asarray(series.cast(nw.Float64).fill_null(float("nan")).to_numpy(), dtype=np.float64))
    x = np.ascontiguousarray(np.column_stack(cols))
    if np.isinf(x).any():
        j = int(np.argmax(np.isinf(x).any(axis=0)))
        raise NonNumericColumnError(names[j], float(x[np.isinf(x[:, j]), j][0]))
    return x, tuple(names)


def check_k(k: object) -> int:
    """k as a positive int, else :class:`ParameterError` with the fix."""
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1:
        raise ParameterError(f"k={k!r} must be a whole number >= 1 (the smallest group size), e.g. k=3.")
    return int(k)
