"""What the microaggregation estimators share: parameter types, checks, numeric input."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Any, Literal

import narwhals as nw
import numpy as np
from numpy.typing import NDArray

from sdckit._estimator import Estimator as Estimator  # re-exported for imports of the old private name
from sdckit._io import DataSource, as_narwhals, check_columns, check_numeric
from sdckit._scale import collect_if_lazy as collect_if_lazy
from sdckit._scale import is_distributed as is_distributed
from sdckit._scale import restore_kind as restore_kind
from sdckit.errors import MissingValuesError, NonNumericColumnError, ParameterError

Centre = Literal["mean", "median"]
"""Group centre: the attribute ``"mean"`` (default; keeps column means exactly) or ``"median"``."""

Missing = Literal["error", "keep"]
"""``"error"``: missing values raise, naming the column. ``"keep"``: a missing cell counts as the
column mean when grouping, is left out of its group's centre, and stays missing in the output."""


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


def refuse_distributed(X: object, name: str, method: str) -> None:
    """Raise for methods that need every row in memory when X is a Dask or Spark frame."""
    if not is_distributed(X):
        return
    raise ParameterError(
        f"{name}(method={method!r}) needs every row in one place and this is a distributed "
        f"{type(X).__module__.split('.')[0]} frame, which sdckit never collects. Use blocked MDAV, "
        "which runs partition by partition: Microaggregation(method='mdav_blocked', blocks=[...]) or "
        "sdckit.microagg.distributed_microaggregate(frame, k=..., blocks=[...])."
    )


def fingerprint(x: NDArray[np.float64]) -> str:
    """A digest of a matrix's shape and bytes: "the same rows" for transform-after-fit checks."""
    h = hashlib.blake2b(digest_size=16)
    h.update(repr(x.shape).encode())
    h.update(np.ascontiguousarray(x).tobytes())
    return h.hexdigest()


def check_two_tables(name: str, original: object, masked: object) -> None:
    """Raise unless ``masked`` is a table (a restorer's fit takes the original and the masked one)."""
    shape = getattr(masked, "shape", None)
    if masked is None or (isinstance(masked, np.ndarray) and masked.ndim != 2) or (
        shape is not None and len(shape) == 1
    ):
        got = "nothing" if masked is None else f"a 1-d vector of {shape[0] if shape else '?'} values"
        raise ParameterError(
            f"{name}.fit(original, masked) takes two tables with the same columns, the original and "
            f"its masked release; masked is {got}. Pass the masked table, or use "
            "RestoredMicroaggregation, which masks and restores in one step."
        )


def read_two_tables(
    est: Any, original: DataSource, masked: DataSource
) -> tuple[NDArray[np.float64], NDArray[np.float64], tuple[str, ...]]:
    """(original matrix, masked matrix, columns) of a restorer's ``fit(original, masked)``.

    The original is validated first (so bad input gets the message scikit-learn's checks expect),
    then ``masked`` must be a table with its columns; ``n_features_in_``/``feature_names_in_`` end
    up describing ``masked``, the table ``transform`` takes.
    """
    name = type(est).__name__
    original_frame, _ = est._read_input(original, reset=True)
    x1, names = numeric_matrix(collect_if_lazy(original_frame, name), est.columns, min_rows=2)
    check_two_tables(name, original, masked)
    masked_frame, _ = est._read_input(masked, reset=True)
    x2, _ = numeric_matrix(collect_if_lazy(masked_frame, name), list(names), min_rows=2)
    return x1, x2, names
