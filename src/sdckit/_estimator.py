"""The scikit-learn contract every sdckit estimator shares, built on scikit-learn's own base classes.

:class:`Estimator` is a :class:`sklearn.base.BaseEstimator` and :class:`sklearn.base.TransformerMixin`:
``__init__`` only stores its keyword-only parameters, so ``get_params``/``set_params`` read them off
the signature and :func:`sklearn.base.clone` rebuilds an unfitted copy; ``fit`` validates them and
sets learned attributes ending in ``_``. On top of scikit-learn's contract it keeps sdckit's own:

* frames in, the same frame type out (pandas, polars, pyarrow; a path gives polars), other columns
  untouched; a numpy array (or anything array-like) is read as columns ``x0, x1, ...``, the names
  scikit-learn gives unnamed features, and comes back as a numpy array;
* ``n_features_in_`` and ``feature_names_in_`` (the latter only for input with column names, as in
  scikit-learn), ``get_feature_names_out``, ``set_output(transform="pandas" | "polars")``;
* errors derive from :class:`sdckit.errors.SdcError` and name the column, the value and the fix.
"""

from __future__ import annotations

import inspect
import os
import warnings
from collections.abc import Mapping
from typing import Any, Self

import narwhals as nw
import numpy as np
import polars as pl
from numpy.typing import NDArray
from sklearn.base import BaseEstimator, TransformerMixin
from sklearn.utils import check_array
from sklearn.utils.validation import _check_feature_names_in

from sdckit._io import as_narwhals
from sdckit.errors import (
    InputError,
    MissingValuesError,
    NonNumericColumnError,
    NotFittedError,
    ParameterError,
    UnreadableInputError,
)

RandomState = int | np.random.Generator | np.random.RandomState | None
"""What ``random_state`` takes: an int >= 0 (reproducible), a numpy Generator or RandomState, or
None for fresh OS entropy (the only choice for a real release)."""


def as_generator(random_state: RandomState, *, name: str = "random_state") -> np.random.Generator:
    """A numpy Generator from ``random_state`` (see :data:`RandomState`)."""
    if isinstance(random_state, np.random.Generator):
        return random_state
    if isinstance(random_state, np.random.RandomState):
        return np.random.default_rng(random_state.randint(0, 2**63 - 1, dtype=np.int64))
    if random_state is not None and (
        isinstance(random_state, bool) or not isinstance(random_state, (int, np.integer)) or random_state < 0
    ):
        raise ParameterError(
            f"{name}={random_state!r}: give a whole number >= 0, a numpy Generator, or None for fresh "
            "OS entropy."
        )
    return np.random.default_rng(random_state)


class InputTypeError(UnreadableInputError, TypeError):
    """Array input of a type no numeric method takes (sparse, or cells that are not numbers)."""


def _differs(value: object, default: object) -> bool:
    """Whether ``value`` is not the default (arrays and odd ``==`` count as different)."""
    if value is default:
        return False
    try:
        return not bool(value == default)
    except (TypeError, ValueError):  # e.g. a numpy array, whose == is element-wise
        return True


def is_array_input(X: object) -> bool:
    """True for input without column names (numpy arrays, lists): read as columns x0, x1, ..."""
    # lazy: start-up time
    import scipy.sparse as sp

    if sp.issparse(X):
        return True  # check_array refuses it with a clear message
    if isinstance(X, (str, os.PathLike, Mapping, nw.DataFrame, nw.LazyFrame)):
        return False
    if isinstance(X, (np.ndarray, list, tuple)):
        return True
    if hasattr(X, "__array__") and not hasattr(X, "columns") and not hasattr(X, "column_names"):
        return True  # e.g. a sparse matrix or a pandas Series: check_array decides
    return hasattr(X, "toarray") or hasattr(X, "tocsr")


def array_to_frame(X: Any, *, allow_nan: bool = False) -> Any:
    """A polars frame with columns ``x0, x1, ...`` from an array-like, validated like scikit-learn.

    1-d input, sparse matrices, complex and text values raise a ``ValueError`` (an sdckit
    :class:`~sdckit.errors.InputError`); NaN (a missing cell) raises unless ``allow_nan``; inf raises.
    """
    try:
        arr = check_array(X, dtype="numeric", ensure_all_finite=False, input_name="X")
    except TypeError as err:  # sparse input, or a value that is not a number (a dict, ...)
        raise InputTypeError(str(err)) from None
    except ValueError as err:
        raise UnreadableInputError(str(err)) from None
    if arr.dtype.kind == "f":
        inf = np.isinf(arr)
        if inf.any():
            j = int(np.argmax(inf.any(axis=0)))
            raise NonNumericColumnError(f"x{j}", float(arr[inf[:, j], j][0]), int(np.argmax(inf[:, j])))
        nan = np.isnan(arr)
        if nan.any() and not allow_nan:
            j = int(np.argmax(nan.any(axis=0)))
            raise MissingValuesError(
                f"x{j}", int(nan[:, j].sum()), int(np.argmax(nan[:, j])),
                fix="NaN marks a missing cell in an array: impute it or drop those rows first.",
            )
    return pl.DataFrame({f"x{j}": arr[:, j] for j in range(arr.shape[1])})


def frame_columns(X: Any) -> list[str]:
    """Column names of a frame, a path or a mapping (lazy frames are not collected)."""
    return [str(c) for c in as_narwhals(X).collect_schema().names()]


class Estimator(TransformerMixin, BaseEstimator):
    """scikit-learn estimator with sdckit's input and output contract.

    Subclasses store every ``__init__`` parameter under its own name and nothing else; learned
    attributes end in ``_``. ``_not_fitted_message`` (formatted with ``name``, the class name) is
    the :class:`~sdckit.errors.NotFittedError` message of :meth:`check_is_fitted`. Subclasses call
    :meth:`_read_input` at the start of ``fit`` (``reset=True``) and of ``transform``, and
    :meth:`_write_output` on what they return.
    """

    _not_fitted_message = "this {name} is not fitted yet; call fit(...) first."
    n_features_in_: int
    feature_names_in_: NDArray[np.object_]

    @classmethod
    def _param_names(cls) -> list[str]:
        sig = inspect.signature(cls.__init__)
        return [
            name
            for name, p in sig.parameters.items()
            if name != "self" and p.kind not in (p.VAR_KEYWORD, p.VAR_POSITIONAL)
        ]

    def get_params(self, deep: bool = True) -> dict[str, Any]:
        """The constructor parameters and their current values, in the signature's order.

        With ``deep``, the parameters of estimator-valued parameters too, as ``name__param``.
        """
        out: dict[str, Any] = {}
        for name in self._param_names():
            value = getattr(self, name)
            out[name] = value
            if deep and hasattr(value, "get_params") and not isinstance(value, type):
                out.update({f"{name}__{k}": v for k, v in value.get_params(deep=True).items()})
        return out

    def set_params(self, **params: Any) -> Self:
        """Set constructor parameters (unknown names raise :class:`ParameterError`)."""
        valid = set(self._param_names())
        for name in params:
            if name.split("__")[0] not in valid:
                raise ParameterError(
                    f"{type(self).__name__} has no parameter {name!r}; it has {sorted(valid)}."
                )
        super().set_params(**params)
        return self

    def __repr__(self, N_CHAR_MAX: int = 700) -> str:
        defaults = inspect.signature(type(self).__init__).parameters
        args = ", ".join(
            f"{name}={value!r}"
            for name, value in self.get_params(deep=False).items()
            if _differs(value, defaults[name].default)
        )
        return f"{type(self).__name__}({args})"

    def __sklearn_is_fitted__(self) -> bool:
        return any(name.endswith("_") and not name.startswith("_") for name in vars(self))

    def check_is_fitted(self, *attributes: str) -> None:
        """Raise :class:`~sdckit.errors.NotFittedError` unless ``fit`` has set ``attributes``.

        Without names, any public attribute ending in ``_`` counts as fitted.
        """
        fitted = all(hasattr(self, name) for name in attributes) if attributes else self.__sklearn_is_fitted__()
        if not fitted:
            raise NotFittedError(self._not_fitted_message.format(name=type(self).__name__))

    # ------------------------------------------------------------------ input and output

    def _allow_nan(self) -> bool:
        return False

    def _read_input(self, X: Any, *, reset: bool) -> tuple[Any, bool]:
        """``(frame, was_array)``: X as a frame sdckit reads (arrays become columns x0, x1, ...).

        With ``reset`` sets ``n_features_in_`` and ``feature_names_in_`` (only for input with
        names); otherwise checks X against them as scikit-learn does (a count that differs raises,
        names that differ raise, names present on one side only warn).
        """
        was_array = is_array_input(X)
        frame = array_to_frame(X, allow_nan=self._allow_nan()) if was_array else X
        names = frame_columns(frame)
        if reset:
            self.n_features_in_ = len(names)
            if was_array:
                if hasattr(self, "feature_names_in_"):
                    del self.feature_names_in_
            else:
                self.feature_names_in_ = np.asarray(names, dtype=object)
            self._fitted_on_array = was_array
            return frame, was_array
        expected = getattr(self, "n_features_in_", None)
        if expected is not None and len(names) != expected:
            raise InputError(
                f"X has {len(names)} features, but {type(self).__name__} is expecting {expected} "
                f"features as input (the columns seen in fit). Give the same columns as in fit."
            )
        fitted_names = getattr(self, "feature_names_in_", None)
        if was_array and fitted_names is not None:
            warnings.warn(
                f"X does not have valid feature names, but {type(self).__name__} was fitted with feature "
                f"names; reading its columns as {list(fitted_names)} by position.",
                UserWarning,
                stacklevel=3,
            )
            frame = frame.rename(dict(zip(frame.columns, [str(c) for c in fitted_names], strict=True)))
        elif not was_array and fitted_names is None and getattr(self, "_fitted_on_array", False):
            warnings.warn(
                f"X has feature names, but {type(self).__name__} was fitted without feature names",
                UserWarning,
                stacklevel=3,
            )
            frame = _renamed_positionally(frame, [f"x{j}" for j in range(len(names))])
        elif fitted_names is not None and list(fitted_names) != names:
            unseen = sorted(set(names) - set(fitted_names))
            missing = sorted(set(fitted_names) - set(names))
            detail = ""
            if unseen:
                detail += "Feature names unseen at fit time:\n" + "".join(f"- {c}\n" for c in unseen[:5])
            if missing:
                detail += "Feature names seen at fit time, yet now missing:\n" + "".join(
                    f"- {c}\n" for c in missing[:5]
                )
            if not detail:
                detail = "Feature names must be in the same order as they were in fit.\n"
            raise InputError("The feature names should match those that were passed during fit.\n" + detail)
        return frame, was_array

    @staticmethod
    def _write_output(out: Any, was_array: bool) -> Any:
        """The result as the caller gave the input: a numpy array for array input, else as is."""
        if not was_array:
            return out
        if isinstance(out, np.ndarray):
            return out
        return np.asarray(nw.from_native(out, eager_only=True).to_numpy())

    def get_feature_names_out(self, input_features: Any = None) -> NDArray[np.object_]:
        """Output column names: the input columns (masking replaces values and keeps every column)."""
        self.check_is_fitted("n_features_in_")
        return np.asarray(_check_feature_names_in(self, input_features), dtype=object)


def _renamed_positionally(frame: Any, names: list[str]) -> Any:
    nwf = as_narwhals(frame)
    old = nwf.collect_schema().names()
    return nwf.rename(dict(zip(old, names, strict=True))).to_native()
