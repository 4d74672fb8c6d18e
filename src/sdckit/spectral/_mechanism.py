"""The mechanism (local additive noise) and the aggregator's side (PCA on the noisy answers).

Each respondent adds i.i.d. noise of mean 0 and variance t to each numeric answer before sending it
[seed; spectral notes §1]: ``X_t = X + sqrt(t) Z``. The aggregator estimates Sigma by
``Sigma_hat_t - t I`` and reads the random-matrix diagnostics off the fitted spectrum.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, Literal, Self

import numpy as np
from numpy.typing import NDArray

from sdckit._estimator import Estimator
from sdckit._io import DataSource, check_numeric, like_input
from sdckit.errors import MissingValuesError, ParameterError
from sdckit.spectral._model import SpikedModel

NoiseDistribution = Literal["gaussian", "laplace", "uniform", "rademacher", "discrete"]
"""Law of the unit noise Z (mean 0, variance 1 before scaling by sqrt(t)); ``"discrete"`` is the
two-sided geometric law (integers) with variance exactly t, for integer survey answers."""

DISTRIBUTIONS: tuple[str, ...] = ("gaussian", "laplace", "uniform", "rademacher", "discrete")

Seed = int | np.random.Generator | None


def as_rng(seed: Seed) -> np.random.Generator:
    """A numpy Generator from ``seed``: a Generator as is, an int >= 0, or None for OS entropy."""
    if isinstance(seed, np.random.Generator):
        return seed
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0):
        raise ParameterError(
            f"seed={seed!r}: give a whole number >= 0, a numpy Generator, or None for fresh OS entropy."
        )
    return np.random.default_rng(seed)


def _check_t(t: float) -> float:
    if isinstance(t, bool) or not isinstance(t, (int, float, np.integer, np.floating)) or not math.isfinite(t) or t < 0:
        raise ParameterError(f"t={t!r}: the noise variance per entry must be a finite number >= 0.")
    return float(t)


def draw_noise(shape: tuple[int, ...], t: float, distribution: NoiseDistribution, rng: np.random.Generator) -> NDArray[Any]:
    """I.i.d. noise of mean 0 and variance ``t`` (variance units of the data).

    gaussian N(0, t); laplace with scale sqrt(t/2); uniform on [-sqrt(3t), sqrt(3t)]; rademacher
    +-sqrt(t); discrete: G1 - G2, G_i geometric on {0, 1, ...} with P(G = g) = (1-q) q^g, variance
    2q/(1-q)^2 = t, i.e. q = ((t+1) - sqrt(2t+1)) / t (int64 values).
    """
    t = _check_t(t)
    if distribution == "gaussian":
        return rng.normal(0.0, math.sqrt(t), size=shape)
    if distribution == "laplace":
        return rng.laplace(0.0, math.sqrt(t / 2.0), size=shape)
    if distribution == "uniform":
        a = math.sqrt(3.0 * t)
        return rng.uniform(-a, a, size=shape)
    if distribution == "rademacher":
        return math.sqrt(t) * (2.0 * rng.integers(0, 2, size=shape) - 1.0)
    if distribution == "discrete":
        if t == 0:
            return np.zeros(shape, dtype=np.int64)
        q = ((t + 1.0) - math.sqrt(2.0 * t + 1.0)) / t
        g = rng.geometric(1.0 - q, size=(2, *shape)) - 1  # numpy counts trials from 1
        return (g[0] - g[1]).astype(np.int64)
    raise ParameterError(f"distribution={distribution!r}: use one of {', '.join(map(repr, DISTRIBUTIONS))}.")


class AdditiveNoise(Estimator):
    """Local additive noise: each respondent adds i.i.d. noise of variance ``t`` to each answer.

    ``X_t = X + sqrt(t) Z`` with Z of mean 0 and variance 1 [seed, arXiv:1801.03553 §II]. Applied row
    by row, it needs no trusted aggregator. Privacy of the spiked model: see
    :meth:`SpikedModel.information_leakage`.

    Parameters
    ----------
    t : noise variance per entry, in the squared units of the columns (>= 0).
    distribution : law of the noise (see ``NoiseDistribution``); ``"discrete"`` keeps integers integer.
    columns : numeric columns to perturb (default: all); other columns pass through unchanged.
    seed : int or numpy Generator; an int gives the same noise on every ``transform`` call.
        None draws fresh OS entropy.

    Warnings
    --------
    A fixed seed makes the noise reproducible, so anyone who knows the seed can subtract it: use
    seeds for tests and simulations only, never for a real release.

    Attributes
    ----------
    feature_names_in_ : tuple of str, the perturbed columns.
    n_features_in_ : int.
    leakage_bound_ : :class:`LeakageBound` (or None below 2 rows): P_IT(t) <= 1/2 log det(I + Sigma/t)
        + p D(Z_1) nats per respondent, Sigma the fitted columns' sample covariance, any data law;
        its ``applies`` says which bound holds for this noise law (spectral notes §4).

    Examples
    --------
    >>> import polars as pl
    >>> df = pl.DataFrame({"a": [1.0, 2.0, 3.0], "b": ["x", "y", "z"]})
    >>> out = AdditiveNoise(t=0.5, columns=["a"], seed=1).fit_transform(df)
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
        seed: Seed = None,
    ) -> None:
        self.t = t
        self.distribution = distribution
        self.columns = columns
        self.seed = seed

    def fit(self, X: DataSource, y: None = None) -> Self:
        """Validate the parameters and the columns (numeric, no missing values)."""
        _check_t(self.t)
        as_rng(self.seed)  # a bad seed fails here, before any data is read
        if self.distribution not in DISTRIBUTIONS:
            raise ParameterError(
                f"distribution={self.distribution!r}: use one of {', '.join(map(repr, DISTRIBUTIONS))}."
            )
        try:
            z, names = check_numeric(X, self.columns)
        except MissingValuesError as err:  # the generic hint names an option this mechanism lacks
            raise MissingValuesError(
                err.column, err.count, err.first_row,
                fix="Additive noise needs every answer: impute the gaps, or drop those rows first "
                "(e.g. sdckit.read_data(data, missing='drop')).",
            ) from None
        self.feature_names_in_ = names
        self.n_features_in_ = len(names)
        from sdckit.spectral._nongaussian import leakage_bound_of_data

        self.leakage_bound_ = leakage_bound_of_data(z, self.t, self.distribution)
        return self

    def transform(self, X: DataSource) -> Any:
        """Return X with noise added to the fitted columns, as the caller's own frame type."""
        self.check_is_fitted("feature_names_in_")
        z, names = check_numeric(X, list(self.feature_names_in_))
        rng = as_rng(self.seed)
        noise = draw_noise(z.shape, self.t, self.distribution, rng)
        out: dict[str, NDArray[Any]] = {}
        for j, name in enumerate(names):
            col = z[:, j] + noise[:, j]
            if self.distribution == "discrete" and np.all(z[:, j] == np.round(z[:, j])):
                col = col.astype(np.int64)  # integer answers stay integers
            out[name] = col
        return like_input(X, out)

    def fit_transform(self, X: DataSource, y: None = None) -> Any:
        """``fit(X).transform(X)``."""
        return self.fit(X).transform(X)


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
    >>> pca = NoisyPCA(t=1.0).fit(AdditiveNoise(t=1.0, seed=1).fit_transform(X_frame(X)))
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
        """Eigen-decompose the noisy sample covariance and compute the diagnostics."""
        from sdckit.spectral._design import fit_spiked

        t = _check_t(self.t)
        z, names = check_numeric(X, self.columns, min_rows=2)
        n, p = z.shape
        if self.center:
            z = z - z.mean(axis=0)
        cov = z.T @ z / n
        vals, vecs = np.linalg.eigh(cov)
        order = np.argsort(vals)[::-1]
        self.feature_names_in_ = names
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

    def transform(self, X: DataSource) -> NDArray[np.float64]:
        """Scores on the separable components (n, k) (all k spikes when none is separable)."""
        self.check_is_fitted("components_")
        z, _ = check_numeric(X, list(self.feature_names_in_))
        k = self.n_separable_ or self.n_spikes_
        return np.asarray(z @ self.components_[:k].T, dtype=float)

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
    import polars as pl

    return pl.DataFrame({f"x{j}": X[:, j] for j in range(X.shape[1])})
