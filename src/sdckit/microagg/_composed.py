"""Microaggregation then moment restoration, as one ordinary scikit-learn transformer."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from sklearn.base import clone

from sdckit._estimator import Estimator
from sdckit._io import DataSource
from sdckit.errors import ParameterError
from sdckit.microagg._base import Centre, collect_if_lazy, is_distributed, numeric_matrix, restore_kind
from sdckit.microagg._mdav import Method, Microaggregation, information_loss
from sdckit.microagg._positivity import PositivityRestorer
from sdckit.microagg._restore import MomentRestorer


class RestoredMicroaggregation(Estimator):
    """Microaggregation (MDAV by default), then restoration of the original mean and covariance.

    The restorers fit on two tables, the original and the masked one, so on their own they are not
    a :class:`~sklearn.pipeline.Pipeline` step (a step sees only the output of the step before).
    This estimator is both steps in one: ``fit_transform(X)`` microaggregates ``X`` into groups of
    at least k records, fits ``restorer`` on ``(X, masked)`` and returns the restored release,
    ``T(x) = A x + b`` with ``A S2 A^T = S1`` and ``A E2 + b = E1`` (microaggregation notes §2).

    Parameters
    ----------
    k, method, columns, centre, strata, gamma, sort_by, block_size, blocks : as in
        :class:`Microaggregation`.
    restorer : a :class:`MomentRestorer` (default ``MomentRestorer()``) or a
        :class:`PositivityRestorer` (given the groups, so whole groups stay together); cloned at
        fit, its ``columns`` set to the microaggregated columns when left at None.

    Attributes
    ----------
    n_features_in_, feature_names_in_ : as in scikit-learn (names only for named input).
    columns_ : tuple of str, the microaggregated and restored columns.
    microaggregation_ : the fitted :class:`Microaggregation`. restorer_ : the fitted restorer.
    information_loss_ : float, IL = 100 SSE / SST in percent of the restored release (in memory).

    Notes
    -----
    As for any microaggregation, ``fit_transform`` is the operation and ``transform`` accepts only
    the rows seen in ``fit``. The restored values are no longer group centres, so the groups of
    the release are not k-anonymous in the restored columns; the restoration keeps the moments.
    On a Dask or Spark frame use ``method="mdav_blocked"`` with ``blocks``; the restorer's moments
    then come from one distributed pass and the result stays lazy.

    Examples
    --------
    >>> import numpy as np
    >>> X = np.random.default_rng(0).normal(size=(60, 3))
    >>> out = RestoredMicroaggregation(k=3).fit_transform(X)
    >>> bool(np.allclose(np.cov(out, rowvar=False), np.cov(X, rowvar=False)))
    True
    """

    def __init__(
        self,
        *,
        k: int = 3,
        method: Method = "mdav",
        columns: Sequence[str] | None = None,
        centre: Centre = "mean",
        strata: Sequence[str] | None = None,
        gamma: float = 0.2,
        sort_by: str | None = None,
        block_size: int = 10_000,
        blocks: Sequence[str] | None = None,
        restorer: MomentRestorer | PositivityRestorer | None = None,
    ) -> None:
        self.k = k
        self.method = method
        self.columns = columns
        self.centre = centre
        self.strata = strata
        self.gamma = gamma
        self.sort_by = sort_by
        self.block_size = block_size
        self.blocks = blocks
        self.restorer = restorer

    def _microaggregation(self) -> Microaggregation:
        params = {name: getattr(self, name) for name in Microaggregation._param_names() if hasattr(self, name)}
        return Microaggregation(**params)

    def fit(self, X: DataSource, y: None = None) -> RestoredMicroaggregation:
        """Microaggregate ``X`` and fit the restorer on ``(X, masked)``."""
        restorer = MomentRestorer() if self.restorer is None else self.restorer
        if not isinstance(restorer, (MomentRestorer, PositivityRestorer)):
            raise ParameterError(
                f"restorer={restorer!r}: give a MomentRestorer or a PositivityRestorer (or None)."
            )
        mic = self._microaggregation()
        if is_distributed(X):
            frame = X
            mic.fit(frame)
            self.n_features_in_ = mic.n_features_in_
            self.feature_names_in_ = mic.feature_names_in_
        else:
            frame, _ = self._read_input(X, reset=True)
            frame = collect_if_lazy(frame, type(self).__name__)
            mic.fit(frame)
        masked = mic.transform(frame)
        restorer = clone(restorer)
        if restorer.columns is None:
            restorer.set_params(columns=list(mic.columns_))
        if isinstance(restorer, PositivityRestorer):
            groups = mic.groups_ if mic.groups_.ndim == 1 else None
            restorer.fit(frame, masked, groups=groups)
        else:
            restorer.fit(frame, masked)
        self.microaggregation_ = mic
        self.restorer_ = restorer
        self.columns_ = mic.columns_
        if hasattr(mic, "groups_"):
            release = restorer.transform(masked)
            x = _matrix(frame, mic.columns_)
            self.information_loss_ = information_loss(x, _matrix(release, mic.columns_))
        return self

    def transform(self, X: DataSource) -> Any:
        """The restored release of the rows seen in ``fit`` (other rows raise, as for microaggregation)."""
        self.check_is_fitted("restorer_")
        if is_distributed(X):
            return self.restorer_.transform(self.microaggregation_.transform(X))
        frame, was_array = self._read_input(X, reset=False)
        frame = collect_if_lazy(frame, type(self).__name__)
        out = self.restorer_.transform(self.microaggregation_.transform(frame))
        return self._write_output(restore_kind(out, X), was_array)

    def fit_transform(self, X: DataSource, y: None = None, **fit_params: Any) -> Any:
        """Microaggregate and restore ``X``: the release."""
        return self.fit(X).transform(X)

    def __sklearn_tags__(self) -> Any:
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = False
        return tags


def _matrix(frame: Any, columns: Sequence[str]) -> Any:
    return np.asarray(numeric_matrix(frame, list(columns))[0])


class RestoredMasking(Estimator):
    """Any numeric masking, then restoration of the original mean and covariance (microaggregation notes §2).

    The seed's question, "can we improve data utility of other SDLs through linear
    transformation?", as one transformer: ``fit_transform(X)`` masks ``X`` with ``masker`` (e.g.
    :class:`RankSwap`, :class:`CorrelatedNoise`, :class:`~sdckit.spectral.AdditiveNoise`,
    :class:`Microaggregation`), fits ``restorer`` on ``(X, masked)`` and returns
    ``T(masked)`` with ``A S2 A^T = S1`` and ``A E2 + b = E1``. A :class:`PositivityRestorer` gets
    the microaggregation groups when the masker has them (so groups stay whole) and otherwise
    treats each record as its own group (there is nothing to keep together).

    Parameters
    ----------
    masker : a fitted-on-call sdckit masking transformer (cloned at fit).
    restorer : :class:`MomentRestorer` (default) or :class:`PositivityRestorer`; its ``columns``
        default to the masker's ``columns_``.

    Attributes
    ----------
    masker_, restorer_ : the fitted estimators. columns_ : tuple of str, the restored columns.

    Examples
    --------
    >>> import numpy as np
    >>> from sdckit.microagg import RankSwap
    >>> X = np.random.default_rng(0).lognormal(size=(300, 3))
    >>> out = RestoredMasking(masker=RankSwap(p=10, random_state=0)).fit_transform(X)
    >>> bool(np.allclose(np.cov(out, rowvar=False), np.cov(X, rowvar=False)))
    True
    """

    def __init__(self, *, masker: Any = None, restorer: MomentRestorer | PositivityRestorer | None = None) -> None:
        self.masker = masker
        self.restorer = restorer

    def fit(self, X: DataSource, y: None = None) -> RestoredMasking:
        """Mask ``X`` and fit the restorer on ``(X, masked)``; the release is kept for ``transform``."""
        if self.masker is None or not hasattr(self.masker, "fit_transform"):
            raise ParameterError(
                f"masker={self.masker!r}: give a masking transformer, e.g. RankSwap(p=5) or CorrelatedNoise()."
            )
        restorer = MomentRestorer() if self.restorer is None else self.restorer
        if not isinstance(restorer, (MomentRestorer, PositivityRestorer)):
            raise ParameterError(f"restorer={restorer!r}: give a MomentRestorer or a PositivityRestorer (or None).")
        frame, _ = self._read_input(X, reset=True)
        frame = collect_if_lazy(frame, type(self).__name__)
        masker = clone(self.masker)
        masked = masker.fit_transform(frame)
        columns = list(getattr(masker, "columns_", None) or _numeric_names(frame))
        restorer = clone(restorer)
        if restorer.columns is None:
            restorer.set_params(columns=columns)
        if isinstance(restorer, PositivityRestorer):
            groups = getattr(masker, "groups_", None)
            if groups is None or np.ndim(groups) != 1:
                groups = np.arange(len(_matrix(frame, columns)))
            restorer.fit(frame, masked, groups=groups)
        else:
            restorer.fit(frame, masked)
        self.masker_ = masker
        self.restorer_ = restorer
        self.columns_ = tuple(restorer.columns_)
        self._release = restorer.transform(masked)
        return self

    def transform(self, X: DataSource) -> Any:
        """The restored release of ``fit`` (masking is random: a new table needs ``fit_transform``)."""
        self.check_is_fitted("restorer_")
        _frame, was_array = self._read_input(X, reset=False)
        return self._write_output(restore_kind(self._release, X), was_array)

    def fit_transform(self, X: DataSource, y: None = None, **fit_params: Any) -> Any:
        """Mask and restore ``X``: the release."""
        _frame, was_array = self._read_input(X, reset=True)
        self.fit(X)
        return self._write_output(restore_kind(self._release, X), was_array)


def _numeric_names(frame: Any) -> list[str]:
    return list(numeric_matrix(frame, None)[1])
