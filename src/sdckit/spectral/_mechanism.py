"""The mechanism (local additive noise) and the aggregator's side (PCA on the noisy answers).

Each respondent adds i.i.d. noise of mean 0 and variance t to each numeric answer before sending it
[seed; spectral notes §1]: ``X_t = X + sqrt(t) Z``. The aggregator estimates Sigma by
``Sigma_hat_t - t I`` and reads the random-matrix diagnostics off the fitted spectrum.
"""

from __future__ import annotations

import inspect
import warnings
from collections.abc import Sequence
from typing import Any, Self

import narwhals as nw
import numpy as np
import polars as pl
import sklearn
from numpy.typing import NDArray

from sdckit._estimator import Estimator, RandomState, as_generator
from sdckit._io import DataSource, as_narwhals, check_numeric, like_input
from sdckit._scale import (
    collect_if_lazy,
    collect_small,
    engine_of,
    map_partitions,
    numeric_dtypes,
    restore_kind,
)
from sdckit._scale._engines import _as_float
from sdckit.errors import InputError, MissingValuesError, ParameterError
from sdckit.microagg._distributed import distributed_moments
from sdckit.spectral._design import fit_spiked
from sdckit.spectral._laws import DISTRIBUTIONS, NoiseDistribution, _check_t, draw_noise
from sdckit.spectral._model import SpikedModel
from sdckit.spectral._nongaussian import leakage_bound_of_data

_LAZY_NATIVE = ("LazyFrame", "DuckDBPyRelation")  # polars and DuckDB lazy frames (Dask, Spark: engine_of)

class _AcceptsOldSeed(type):
    """Maps ``AdditiveNoise(seed=...)``, the name before scikit-learn's, to ``random_state=``.

    A metaclass, so that the constructor's signature (which scikit-learn reads) has only
    ``random_state``; remove once no caller uses ``seed=``.
    """

    def __call__(cls, *args: Any, **kwargs: Any) -> Any:
        if "seed" in kwargs:
            warnings.warn(
                f"{cls.__name__}(seed=...) is now {cls.__name__}(random_state=...), scikit-learn's name.",
                DeprecationWarning,
                stacklevel=2,
            )
            kwargs.setdefault("random_state", kwargs.pop("seed"))
        return super().__call__(*args, **kwargs)


class AdditiveNoise(Estimator, metaclass=_AcceptsOldSeed):
    """Local additive noise: each respondent adds i.i.d. noise of variance ``t`` to each answer.

    ``X_t = X + sqrt(t) Z`` with Z of mean 0 and variance 1 [seed, arXiv:1801.03553 §II]. Applied row
    by row, it needs no trusted aggregator. Privacy of the spiked model: see
    :meth:`SpikedModel.information_leakage`.

    Parameters
    ----------
    t : noise variance per entry, in the squared units of the columns (>= 0).
    distribution : law of the noise (see ``NoiseDistribution``); ``"discrete"`` keeps integers integer.
    columns : numeric columns to perturb (default: all); other columns pass through unchanged.
    random_state : int, numpy Generator or RandomState, or None (default) for fresh OS entropy; an
        int gives the same noise on every ``transform`` call.

    Warnings
    --------
    A fixed ``random_state`` makes the noise reproducible, so anyone who knows it can subtract the
    noise: use it for tests and simulations only, never for a real release.

    Attributes
    ----------
    n_features_in_ : int, columns of ``X`` in fit. feature_names_in_ : object array of their names
        (input with column names only; a numpy array is read as ``x0, x1, ...``).
    columns_ : tuple of str, the perturbed columns.
    leakage_bound_ : :class:`LeakageBound` (None below 2 rows, and on a Dask or Spark frame): P_IT(t) <= 1/2 log det(I + Sigma/t)
        + p D(Z_1) nats per respondent, Sigma the fitted columns' sample covariance, any data law;
        its ``applies`` says which bound holds for this noise law (spectral notes §4).

    Notes
    -----
    On a Dask or Spark frame the noise is drawn partition by partition, where the rows live, from
    the seed sequence ``SeedSequence(random_state, spawn_key=(partition, batch))``; the result is a
    frame of the same kind, still lazy. A numpy array in gives a numpy array out.

    Examples
    --------
    >>> import polars as pl
    >>> df = pl.DataFrame({"a": [1.0, 2.0, 3.0], "b": ["x", "y", "z"]})
    >>> out = AdditiveNoise(t=0.5, columns=["a"], random_state=1).fit_transform(df)
    >>> out.columns, out["b"].to_list()
    (['a', 'b'], ['x', 'y', 'z'])
    """

    _not_fitted_message = "{name} is not fitted yet; call fit(X) or fit_transform(X) first."

    def __init__(
        self,
        *,
        t: float = 1.0,
        distribution: NoiseDistribution = "gaussian",
        columns: Sequence[str] | None = None,
        random_state: RandomState = None,
    ) -> None:
        self.t = t
        self.distribution = distribution
        self.columns = columns
        self.random_state = random_state

    def _check(self) -> None:
        _check_t(self.t)
        as_generator(self.random_state)  # a bad random_state fails here, before any data is read
        if self.distribution not in DISTRIBUTIONS:
            raise ParameterError(
                f"distribution={self.distribution!r}: use one of {', '.join(map(repr, DISTRIBUTIONS))}."
            )

    def __sklearn_tags__(self) -> Any:
        tags = super().__sklearn_tags__()
        tags.non_deterministic = self.random_state is None
        return tags

    def fit(self, X: DataSource, y: None = None) -> Self:
        """Validate the parameters and the columns (numeric, no missing values)."""
        self._check()
        if engine_of(X) is not None:
            _, names = distributed_moments(X, self.columns)  # one pass: numeric, no missing cells
            all_names = [str(c) for c in as_narwhals(X).collect_schema().names()]
            self.n_features_in_ = len(all_names)
            self.feature_names_in_ = np.asarray(all_names, dtype=object)
            self.columns_ = names
            self.leakage_bound_ = None  # the bound needs the covariance matrix, not computed distributed
            return self
        frame, _ = self._read_input(X, reset=True)
        frame = collect_if_lazy(frame, type(self).__name__)
        try:
            z, names = check_numeric(frame, self.columns)
        except MissingValuesError as err:  # the generic hint names an option this mechanism lacks
            raise MissingValuesError(
                err.column, err.count, err.first_row,
                fix="Additive noise needs every answer: impute the gaps, or drop those rows first "
                "(e.g. sdckit.read_data(data, missing='drop')).",
            ) from None
        self.columns_ = names

        self.leakage_bound_ = leakage_bound_of_data(z, self.t, self.distribution)
        return self

    def _noisy(self, z: NDArray[np.float64], names: Sequence[str], rng: np.random.Generator) -> dict[str, NDArray[Any]]:
        noise = draw_noise(z.shape, self.t, self.distribution, rng)
        out: dict[str, NDArray[Any]] = {}
        for j, name in enumerate(names):
            col = z[:, j] + noise[:, j]
            if self.distribution == "discrete" and np.all(z[:, j] == np.round(z[:, j])):
                col = col.astype(np.int64)  # integer answers stay integers
            out[name] = col
        return out

    def transform(self, X: DataSource) -> Any:
        """Return X with noise added to the fitted columns, as the caller's own frame type."""
        self.check_is_fitted("columns_")
        if engine_of(X) is not None:
            return self._transform_distributed(X)
        frame, was_array = self._read_input(X, reset=False)
        frame = collect_if_lazy(frame, type(self).__name__)
        z, names = check_numeric(frame, list(self.columns_))
        out = like_input(frame, self._noisy(z, names, as_generator(self.random_state)))
        return self._write_output(restore_kind(out, X), was_array)

    def _transform_distributed(self, X: DataSource) -> Any:
        rs = self.random_state
        if isinstance(rs, (int, np.integer)) and not isinstance(rs, bool):
            entropy = int(rs)
        elif rs is None:
            entropy = int(np.random.SeedSequence().entropy)  # type: ignore[arg-type]  # fresh OS entropy
        else:
            entropy = int(as_generator(rs).integers(0, 2**63 - 1))
        cols = list(self.columns_)
        keep_int = self.distribution == "discrete" and _integer_columns(X, cols)
        floats = [] if keep_int else cols
        numeric_dtypes(X, cols)

        def add(pdf: Any, key: tuple[int, int]) -> Any:
            rng = np.random.default_rng(np.random.SeedSequence(entropy, spawn_key=key))
            noisy = self._noisy(_as_float(pdf, cols), cols, rng)
            out = pdf.copy()
            for c in cols:
                out[c] = noisy[c].astype(np.int64) if keep_int else noisy[c].astype(np.float64)
            return out

        return map_partitions(X, add, floats=floats)

    def fit_transform(self, X: DataSource, y: None = None, **fit_params: Any) -> Any:
        """``fit(X).transform(X)``."""
        return self.fit(X).transform(X)


# the constructor's own signature, not the metaclass's (*args, **kwargs): scikit-learn reads it
AdditiveNoise.__signature__ = inspect.Signature(
    list(inspect.signature(AdditiveNoise.__init__).parameters.values())[1:]
)


def _integer_columns(X: DataSource, cols: Sequence[str]) -> bool:
    schema = as_narwhals(X).collect_schema()
    return all(schema[c].is_integer() for c in cols)


class NoisyPCA(Estimator):
    """PCA for the aggregator of noisy answers, with the random-matrix diagnostics.

    Estimates Sigma by ``Sigma_hat_t - t I`` (E Sigma_hat_t = Sigma + t I) [seed §II], takes its
    eigen-decomposition, fits the spiked model to the spectrum (:func:`fit_spiked`) and predicts the
    support of the limit law: the gap expected at this t, the gap observed between lambda_k and
    lambda_{k+1}, and whether the k leading components are separable from the noise.

    Parameters
    ----------
    t : the noise variance the respondents used (known to the aggregator).
    n_components : number of spikes k (default: chosen by :func:`fit_spiked`).
    columns : numeric columns (default: all).
    center : subtract column means first (a rank-one change, negligible in the limit).

    Attributes
    ----------
    n_features_in_ : int; feature_names_in_ : object array of the input's names (named input only).
    columns_ : tuple of str, the columns analysed.
    eigenvalues_ : (p,) eigenvalues of Sigma_hat_t, descending (variance units).
    explained_variance_ : (p,) eigenvalues of the estimate Sigma_hat_t - t I.
    components_ : (p, p) unit eigenvectors, one per row, in the same order.
    model_ : SpikedModel fitted to the spectrum (c = p / n).
    n_spikes_ : the k used; observed_gap_ : lambda_k - lambda_{k+1};
    predicted_gap_ : U(t + floor) of the fitted model; n_separable_ : k if the model predicts a gap, else 0.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(2000, 40)) * np.r_[np.full(4, 3.0), np.full(36, 0.1)]
    >>> pca = NoisyPCA(t=1.0).fit(AdditiveNoise(t=1.0, random_state=1).fit_transform(X_frame(X)))
    >>> pca.n_spikes_, pca.n_separable_
    (4, 4)
    """

    _not_fitted_message = "{name} is not fitted yet; call fit(X) first."

    def __init__(
        self,
        *,
        t: float = 1.0,
        n_components: int | None = None,
        columns: Sequence[str] | None = None,
        center: bool = True,
    ) -> None:
        self.t = t
        self.n_components = n_components
        self.columns = columns
        self.center = center

    def fit(self, X: DataSource, y: None = None) -> Self:
        """Eigen-decompose the noisy sample covariance and compute the diagnostics.

        On a Dask or Spark frame the covariance comes from one distributed pass (no row reaches
        the driver); a numpy array is read as columns ``x0, x1, ...``.
        """
        t = _check_t(self.t)
        if engine_of(X) is not None:
            (n, mean, cov1), names = distributed_moments(X, self.columns)
            all_names = [str(c) for c in as_narwhals(X).collect_schema().names()]
            self.n_features_in_ = len(all_names)
            self.feature_names_in_ = np.asarray(all_names, dtype=object)
            p = len(names)
            cov = cov1 * (n - 1) / n  # the 1/n covariance of the centred columns
            if not self.center:
                cov = cov + np.outer(mean, mean)
        else:
            frame, _ = self._read_input(X, reset=True)
            frame = collect_if_lazy(frame, type(self).__name__)
            z, names = check_numeric(frame, self.columns, min_rows=2)
            n, p = z.shape
            if p < 2:
                raise InputError(
                    f"{type(self).__name__} needs at least 2 columns (a spiked model over 1 feature(s) has no "
                    "noise bulk to separate from); give two or more numeric columns."
                )
            if self.center:
                z = z - z.mean(axis=0)
            cov = z.T @ z / n
        vals, vecs = np.linalg.eigh(cov)
        order = np.argsort(vals)[::-1]
        self.columns_ = names
        self.eigenvalues_ = vals[order]
        self.explained_variance_ = self.eigenvalues_ - t
        self.components_ = vecs[:, order].T
        fit = fit_spiked(self.eigenvalues_, n=n, k=self.n_components, t=t)
        self.fit_ = fit
        self.model_ = fit.model
        self.n_spikes_ = fit.k
        self.observed_gap_ = float(self.eigenvalues_[fit.k - 1] - self.eigenvalues_[fit.k]) if fit.k < p else float("nan")
        self.predicted_gap_ = float(fit.model.separation(fit.t_effective))
        self.n_separable_ = fit.k if self.predicted_gap_ > 0 else 0
        return self

    def _n_out(self) -> int:
        return int(self.n_separable_ or self.n_spikes_)

    def transform(self, X: DataSource) -> Any:
        """Scores on the separable components (n, k) (all k spikes when none is separable).

        The columns are ``noisypca0, noisypca1, ...`` (:meth:`get_feature_names_out`); with
        ``set_output(transform="pandas" | "polars")`` they come as a frame of that kind.

        A lazy frame (polars LazyFrame, DuckDB, Dask, Spark) gets the scores as new columns,
        ``noisypca<i> = sum_j x_j components_[i, j]``, computed by the engine row by row: the
        result is the same kind of frame, still lazy, with every input column and the scores
        (one aggregate row, the missing-cell counts, reaches the driver).
        """
        self.check_is_fitted("components_")
        if engine_of(X) is not None or isinstance(X, nw.LazyFrame) or type(X).__name__ in _LAZY_NATIVE:
            return self._transform_lazy(X)
        frame, _ = self._read_input(X, reset=False)
        frame = collect_if_lazy(frame, type(self).__name__)
        z, _ = check_numeric(frame, list(self.columns_))
        return np.asarray(z @ self.components_[: self._n_out()].T, dtype=float)

    def _transform_lazy(self, X: DataSource) -> Any:
        wanted = getattr(self, "_sklearn_output_config", {}).get("transform", sklearn.get_config()["transform_output"])
        if wanted != "default":
            raise ParameterError(
                f"set_output(transform={wanted!r}) builds a frame in memory, but X is lazy: its scores are added as "
                "columns and it stays lazy. Use set_output(transform='default') for lazy input."
            )
        frame = as_narwhals(X)
        assert isinstance(frame, nw.LazyFrame)
        schema = frame.collect_schema()
        cols = [str(c) for c in self.columns_]
        absent = [c for c in cols if c not in schema]
        if absent:
            raise InputError(f"column {absent[0]!r} was seen in fit but is not in X; give the columns seen in fit.")
        bad = [c for c in cols if not (schema[c].is_numeric() and schema[c] != nw.Boolean)]
        if bad:
            raise InputError(f"column {bad[0]!r} is not numeric ({schema[bad[0]]}); NoisyPCA reads numeric columns.")
        names = [str(n) for n in self.get_feature_names_out()]
        taken = [n for n in names if n in schema]
        if taken:
            raise InputError(f"X already has a column {taken[0]!r}; rename it before adding the scores.")
        value = {c: nw.col(c).cast(nw.Float64) for c in cols}
        nulls = collect_small(
            frame.select(*[(value[c].is_null() | value[c].is_nan()).cast(nw.Int64).sum().alias(c) for c in cols]),
            what="missing-cell counts",
            limit=1,
        )
        for c in cols:
            if int(nulls[c][0] or 0):
                raise MissingValuesError(c, int(nulls[c][0]), fix="Impute them first (e.g. on the cluster).")
        scores = []
        for i, name in enumerate(names):
            expr: nw.Expr = nw.lit(0.0, dtype=nw.Float64)
            for j, c in enumerate(cols):
                expr = expr + value[c] * float(self.components_[i, j])
            scores.append(expr.alias(name))
        return frame.with_columns(*scores).to_native()

    def get_feature_names_out(self, input_features: Any = None) -> NDArray[np.object_]:
        """``noisypca0, noisypca1, ...``, one per score column of :meth:`transform`."""
        self.check_is_fitted("components_")
        return np.asarray([f"noisypca{i}" for i in range(self._n_out())], dtype=object)

    def diagnostics(self) -> dict[str, Any]:
        """The random-matrix diagnostics as a JSON-ready dict."""
        self.check_is_fitted("components_")
        m: SpikedModel = self.model_
        sup = m.support(self.fit_.t_effective)
        return {
            "t": float(self.t),
            "c": m.c,
            "n_spikes": self.n_spikes_,
            "spike_variance_s": m.s,
            "noise_floor": self.fit_.floor,
            "predicted_support": sup.to_dict(),
            "predicted_gap": self.predicted_gap_,
            "observed_gap": self.observed_gap_,
            "critical_noise": m.critical_noise(),
            "n_separable": self.n_separable_,
        }


def X_frame(X: NDArray[np.float64]) -> Any:
    """A polars frame with columns x0, x1, ... (for examples and tests)."""
    return pl.DataFrame({f"x{j}": X[:, j] for j in range(X.shape[1])})
