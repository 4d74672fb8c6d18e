"""Parameter checks and the one place where a share of rows becomes an integer group size.

One rule for a group size ``k`` in every package: a whole number of rows >= 1 (:func:`check_k`,
arrays; :func:`group_size`, one value); a k-anonymity *target* is such a k >= 2
(:func:`check_group_size`, with the one message :func:`k_message` of the command line and the
pipeline).
"""

from __future__ import annotations

import math
import re
import sys
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal, TypeAlias

import narwhals as nw
import numpy as np
from numpy.typing import ArrayLike, NDArray

from sdckit.errors import InputError, ParameterError, SdcWarning

BoundMethod: TypeAlias = Literal["lower", "support", "theorem2", "theorem3", "best"]
"""How the joint exposure is bounded from single-column marginals (anonymity notes §2)."""

BOUND_METHODS: tuple[str, ...] = ("lower", "support", "theorem2", "theorem3", "best")
UPPER_METHODS: tuple[str, ...] = ("support", "theorem2", "theorem3", "best")

IntervalMethod: TypeAlias = Literal["auto", "jackknife", "mcdiarmid"]
"""Confidence interval of the statistical-exposure estimate (anonymity notes §3)."""

# float64 t * n can land just below an integer (0.29 * 100 = 28.999999999999996); t = k / n must
# give back k, so the product is nudged up by a relative 1e-12 before flooring.
REL_TOL = 1e-12

_WEIGHT_NAME = re.compile(
    r"(^|[^a-z])(fnlwgt|wgt|wgtp|wt|perwt|hhwt|pweight|(sampling|survey|design|final|person)[_ ]?weights?|weight[_ ]?factor)([^a-z]|$)"
)  # survey weights by their usual names; a bare "weight" may be body weight, a real attribute


_PACKAGE = str(Path(__file__).resolve().parent) + "/"


def user_stacklevel() -> int:
    """``stacklevel`` for ``warnings.warn`` that points at the first caller outside sdckit.

    A fixed stacklevel points inside the library when the public function is reached through
    another one (``risk_summary`` -> ``exposure_curve`` -> the check); the warning should name the
    user's own line.
    """
    frame = sys._getframe(1)  # the function that will call warnings.warn: stacklevel 1
    level = 1
    while frame.f_back is not None and str(Path(frame.f_code.co_filename).resolve()).startswith(_PACKAGE):
        frame = frame.f_back
        level += 1
    return level


def check_method(method: str, allowed: Sequence[str] = BOUND_METHODS) -> str:
    """Return ``method`` or raise naming the choices."""
    if method not in allowed:
        raise ParameterError(f"method={method!r} is not a bound; use one of {', '.join(map(repr, allowed))}.")
    return method


_K_MAX = 2**62


def check_k(k: ArrayLike) -> NDArray[np.int64]:
    """Group sizes k >= 1 as int64 (any shape); raise for k < 1 or a non-integer k.

    A k above 2^62 (larger than any table) is clipped to 2^62 so int64 arithmetic cannot wrap; the
    caller's "k is larger than the n users" check then speaks.
    """
    if isinstance(k, int) and not isinstance(k, bool) and k > _K_MAX:
        k = _K_MAX
    arr = np.asarray(k)
    if np.issubdtype(arr.dtype, np.unsignedinteger) or np.issubdtype(arr.dtype, np.floating):
        arr = np.minimum(arr, _K_MAX)
    if arr.dtype == bool or not (
        np.issubdtype(arr.dtype, np.integer) or np.issubdtype(arr.dtype, np.floating)
    ):
        raise ParameterError(f"k={k!r} must be an integer group size >= 1, e.g. k=5.")
    if np.issubdtype(arr.dtype, np.floating) and (
        not np.all(np.isfinite(arr)) or not np.all(arr == np.round(arr))
    ):
        raise ParameterError(f"k={k!r} must be a whole number of rows >= 1, e.g. k=5.")
    out = arr.astype(np.int64)
    if np.any(out < 1):
        bad = int(out.flat[int(np.argmin(out))])
        raise ParameterError(f"k={bad} is below 1; k is a group size: use k >= 1 (k=1 means no requirement).")
    return out


def group_size(k: object) -> int:
    """One group size ``k`` as an int, on the rule of :func:`check_k` (a whole number >= 1), with its message."""
    out = check_k(k)  # type: ignore[arg-type]  # any object: check_k names what it got
    if out.ndim:
        raise ParameterError(f"k={k!r} must be one whole number of rows >= 1, e.g. k=5.")
    return int(out)


def k_message(k: object, name: str = "k") -> str:
    """The one message for a k-anonymity group size below 2, in every command and the pipeline."""
    return (
        f"{name}={k!r}: k-anonymity needs a group size k >= 2 (k = 1 asks nothing: every record is a group of its "
        "own). Use e.g. k=3 or k=5."
    )


def check_group_size(k: object, name: str = "k") -> int:
    """``k`` as a k-anonymity target: a whole number >= 2, else :class:`ParameterError` (:func:`k_message`)."""
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or int(k) < 2:
        raise ParameterError(k_message(k, name))
    return int(k)


def check_t(t: ArrayLike) -> NDArray[np.float64]:
    """Shares t in [0, 1] as float64 (any shape); raise naming the bad value."""
    try:
        arr = np.asarray(t, dtype=np.float64)
    except (TypeError, ValueError):
        raise ParameterError(f"t={t!r} must be a share of rows between 0 and 1, e.g. t=0.001.") from None
    bad = ~np.isfinite(arr) | (arr < 0) | (arr > 1)
    if np.any(bad):
        value = float(arr[bad].flat[0])
        raise ParameterError(
            f"t={value} is outside [0, 1]; t is a share of rows (a group of c rows counts when c <= t * n)."
        )
    return arr


def threshold(n: int, *, k: ArrayLike | None = None, t: ArrayLike | None = None) -> NDArray[np.int64]:
    """Largest group size that counts as exposed: ``k - 1`` for k, ``floor(t n)`` for t.

    Exactly one of ``k`` and ``t`` must be given. Q_J(t) counts groups of c rows with c <= floor(t n)
    (integer comparison, anonymity notes §1).
    """
    if (k is None) == (t is None):
        raise ParameterError("give exactly one of k (a group size >= 1) or t (a share of rows, 0..1).")
    if k is not None:
        return check_k(k) - 1
    tt = check_t(t)  # type: ignore[arg-type]  # t is not None here
    return np.floor(tt * n * (1.0 + REL_TOL)).astype(np.int64)


def check_budget(budget: float) -> float:
    """A budget, the largest share of users allowed in groups smaller than k, in [0, 1]; above 0.5 is legal but unusual (warned)."""
    try:
        b = float(budget)
    except (TypeError, ValueError):
        raise ParameterError(
            f"budget={budget!r} must be a share of users between 0 and 1, e.g. 0.05."
        ) from None
    if not math.isfinite(b) or b < 0 or b > 1:
        raise ParameterError(
            f"budget={budget!r} is outside [0, 1]; it is the largest share of users allowed in groups smaller than k."
        )
    if b > 0.5:
        warnings.warn(
            f"budget={b}: up to {b:.0%} of users may be in groups smaller than k",
            SdcWarning,
            stacklevel=user_stacklevel(),
        )
    return b


def check_groupable(frame: nw.DataFrame[Any] | nw.LazyFrame[Any], columns: Sequence[str]) -> None:
    """Raise for a column holding lists, arrays or records: a quasi-identifier needs one plain value per row."""
    schema = frame.collect_schema()
    for c in columns:
        dtype = schema[c]
        if dtype.is_nested() or dtype == nw.Object:
            raise InputError(
                f"column {c!r} holds {dtype} values, not one plain value per row; a quasi-identifier is "
                "counted by value. Convert it to text or leave it out."
            )


def warn_weight_columns(columns: Sequence[str]) -> None:
    """Warn when a column looks like a survey weight (e.g. Adult's fnlwgt) used as a quasi-identifier."""
    for c in columns:
        if _WEIGHT_NAME.search(str(c).lower()):
            warnings.warn(
                f"column {c!r} looks like a survey weight, not an attribute an attacker knows; weights are "
                "nearly unique per row and make almost everyone unique. Leave it out of the columns.",
                SdcWarning,
                stacklevel=user_stacklevel(),
            )


def warn_identifier(column: str, n_distinct: int, n: int) -> None:
    """Warn when every row has its own value: the column is probably an identifier."""
    warnings.warn(
        f"column {column!r} has a different value in every row ({n_distinct:,} of {n:,}): it is probably an "
        "identifier and makes every user unique. Drop it or generalise it before measuring.",
        SdcWarning,
        stacklevel=user_stacklevel(),
    )


def as_scalar_or_array(values: NDArray[Any], scalar: bool) -> Any:
    """A Python float for scalar input, the array otherwise."""
    return float(values.reshape(-1)[0]) if scalar else values
