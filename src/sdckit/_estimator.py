"""The scikit-learn contract every sdckit estimator shares: parameters, repr, fitted checks.

``__init__`` only stores its keyword-only parameters, so ``get_params``/``set_params`` read them off
the signature and ``type(e)(**e.get_params())`` rebuilds an unfitted copy (what ``sklearn.base.clone``
does); ``fit`` validates them and sets learned attributes ending in ``_``.
"""

from __future__ import annotations

import inspect
from typing import Any, Self

from sdckit.errors import NotFittedError, ParameterError


def _differs(value: object, default: object) -> bool:
    """Whether ``value`` is not the default (arrays and odd ``==`` count as different)."""
    if value is default:
        return False
    try:
        return not bool(value == default)
    except (TypeError, ValueError):  # e.g. a numpy array, whose == is element-wise
        return True


class Estimator:
    """Minimal scikit-learn contract: keyword parameters stored by ``__init__``, ``get_params``.

    Subclasses store every ``__init__`` parameter under its own name and nothing else; learned
    attributes end in ``_``. ``_not_fitted_message`` (formatted with ``name``, the class name) is
    the :class:`~sdckit.errors.NotFittedError` message of :meth:`check_is_fitted`.
    """

    _not_fitted_message = "this {name} is not fitted yet; call fit(...) first."

    @classmethod
    def _param_names(cls) -> list[str]:
        sig = inspect.signature(cls.__init__)
        return [name for name in sig.parameters if name != "self"]

    def get_params(self, deep: bool = True) -> dict[str, Any]:
        """The constructor parameters and their current values."""
        return {name: getattr(self, name) for name in self._param_names()}

    def set_params(self, **params: Any) -> Self:
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
        defaults = inspect.signature(type(self).__init__).parameters
        args = ", ".join(
            f"{name}={value!r}"
            for name, value in self.get_params().items()
            if _differs(value, defaults[name].default)
        )
        return f"{type(self).__name__}({args})"

    def check_is_fitted(self, *attributes: str) -> None:
        """Raise :class:`~sdckit.errors.NotFittedError` unless ``fit`` has set ``attributes``.

        Without names, any public attribute ending in ``_`` counts as fitted.
        """
        if attributes:
            fitted = all(hasattr(self, name) for name in attributes)
        else:
            fitted = any(name.endswith("_") and not name.startswith("_") for name in vars(self))
        if not fitted:
            raise NotFittedError(self._not_fitted_message.format(name=type(self).__name__))
