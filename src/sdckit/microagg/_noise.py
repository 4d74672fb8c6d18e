"""Correlated noise: noise whose covariance is proportional to the data's, and its exact-moment variant.

Three laws (sdcMicro 5.8.1 ``addNoise`` names where it has them; S the sample covariance, ddof=1):

* ``"correlated"`` (Kim 1986; sdcMicro ``method="correlated"`` with ``noise = 100 c``):
  ``x' = x + e``, ``e ~ N(0, c S)`` independently per record. E[x'] = E[x], Cov(x') = (1 + c) S:
  correlations are kept, variances inflated by 1 + c.
* ``"correlated2"`` (sdcMicro ``method="correlated2"``, Brand 2002): per column,
  ``x'_j = sqrt(1 - delta^2) x_j + delta (e_j + (1 - sqrt(1 - delta^2)) / delta * mean_j)``,
  ``e_j ~ N(0, s_j^2)`` independent across columns: means and variances kept in expectation,
  covariances shrunk by ``1 - delta^2`` (the noise itself is not correlated).
* ``"exact"``: ``x' = mean + (x_c + e*) / sqrt(1 + c)`` where ``e*`` is Gaussian noise made exactly
  orthogonal to the constant and to the centred data columns and rescaled so that its sample
  covariance is exactly ``c S``: the release has *exactly* the sample mean and covariance of the
  data (what sdcMicro's ``method="restr"`` is documented to do; sdcMicro 5.8.1's code for it adds no
  noise, it only shrinks each column towards its mean). Conditionally on x, ``e*`` is uniform on
  the matrices orthogonal to [1, x_c] with Gram matrix (n - 1) c S, so
  ``E[e*_i e*_i^T] = (n - 1) c S (1 - h_i) / (n - 1 - r)``, h_i the leverage of row i in [1, x_c]
  and r the rank of S (tested by simulation).

In every law the noise lies in the range of S, so exact linear identities among the columns
(CASC Census: PTOTVAL = PEARNVAL + POTHVAL) hold in the release.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, Literal

import numpy as np
from numpy.typing import NDArray

from sdckit._estimator import Estimator, RandomState, as_generator
from sdckit._io import DataSource, like_input
from sdckit.errors import InfeasibleError, ParameterError
from sdckit.microagg._base import collect_if_lazy, numeric_matrix, restore_kind

NoiseLaw = Literal["correlated", "correlated2", "exact"]
_LAWS = ("correlated", "correlated2", "exact")
_RANK_TOL = 1e-9


def _psd_root(s: NDArray[np.float64]) -> tuple[NDArray[np.float64], NDArray[np.float64], int]:
    """(S^{1/2}, S^{+1/2}, rank) of a symmetric PSD matrix, small eigenvalues as zero."""
    w, v = np.linalg.eigh((s + s.T) / 2)
    keep = w > _RANK_TOL * max(float(w.max()), 0.0)
    wk = np.where(keep, w, 1.0)
    root = (v * np.where(keep, np.sqrt(wk), 0.0)) @ v.T
    inv_root = (v * np.where(keep, 1.0 / np.sqrt(wk), 0.0)) @ v.T
    return root, inv_root, int(keep.sum())


def correlated_noise(x: NDArray[np.float64], c: float, rng: np.random.Generator) -> NDArray[np.float64]:
    """``x + e``, rows of e ~ N(0, c S) (S the sample covariance of x; drawn in standardised units)."""
    sd = x.std(axis=0, ddof=1)
    sd = np.where(sd > 0, sd, 1.0)
    root, _, _ = _psd_root(np.atleast_2d(np.cov(x / sd, rowvar=False, ddof=1)))
    return x + math.sqrt(c) * (rng.standard_normal(x.shape) @ root) * sd


def correlated2_noise(x: NDArray[np.float64], delta: float, rng: np.random.Generator) -> NDArray[np.float64]:
    """sdcMicro's ``correlated2``: ``d1 x + delta N((1 - d1) / delta * mean, sd)`` per column, d1 = sqrt(1 - delta^2)."""
    d1 = math.sqrt(1.0 - delta**2)
    mean = x.mean(axis=0)
    sd = x.std(axis=0, ddof=1)
    return d1 * x + (1.0 - d1) * mean + delta * sd * rng.standard_normal(x.shape)


def exact_moment_noise(x: NDArray[np.float64], c: float, rng: np.random.Generator) -> NDArray[np.float64]:
    """Noise of share ``c`` keeping the sample mean and covariance of ``x`` exactly (module docstring).

    Raises :class:`InfeasibleError` when n - 1 - rank(S) < rank(S) (too few rows for noise
    orthogonal to the data with the data's covariance).
    """
    n, p = x.shape
    mean = x.mean(axis=0)
    xc = x - mean
    sd = xc.std(axis=0, ddof=1)
    sd = np.where(sd > 0, sd, 1.0)
    z = xc / sd  # work in standardised units (CASC covariances are ~1e10)
    s = np.atleast_2d(np.cov(z, rowvar=False, ddof=1))
    root, _, rank = _psd_root(s)
    if n - 1 - rank < rank:
        raise InfeasibleError(
            f"exact-moment noise needs at least 2 r + 1 rows for covariance rank r = {rank}; there are {n}. "
            "Use law='correlated' or mask fewer columns."
        )
    e = rng.standard_normal((n, p)) @ root
    u, sv, _ = np.linalg.svd(np.column_stack([np.ones(n), z]), full_matrices=False)
    basis = u[:, sv > _RANK_TOL * sv.max()]  # orthonormal basis of span[1, z]
    e = e - basis @ (basis.T @ e)
    se = e.T @ e / (n - 1)
    _, se_inv_root, _ = _psd_root(se)
    e = e @ se_inv_root @ root * math.sqrt(c)  # sample covariance exactly c S, in range(S)
    return mean + (z + e) / math.sqrt(1.0 + c) * sd


class CorrelatedNoise(Estimator):
    """Noise with covariance proportional to the data's (``law="correlated"``), sdcMicro's
    ``correlated2``, or noise that keeps the sample mean and covariance exactly (``law="exact"``).

    The laws, their moments and their sources are in the module docstring of
    ``sdckit.microagg._noise``. ``fit`` only checks the parameters and columns; ``transform(X)``
    masks ``X`` with S estimated on ``X`` itself (fresh randomness on every call).

    The output keeps the input's row order (scikit-learn's row alignment); shuffle the rows before
    publishing (``sdckit run`` and every CLI command that writes rows do), or the unchanged columns
    link each released row to its input row by position.

    Parameters
    ----------
    law : ``"correlated"`` (default), ``"correlated2"`` or ``"exact"``.
    noise : float > 0, the noise variance as a share c of the data's covariance (``correlated``,
        ``exact``); sdcMicro's ``noise`` is 100 c. Default 0.1.
    delta : float in (0, 1), ``correlated2``'s delta (sdcMicro default 0.1).
    columns : columns to mask together (default: all).
    random_state : None (default: fresh OS entropy, the only choice for a real release), or an
        int / Generator for a reproducible run (anyone who knows it can subtract the noise).

    Attributes
    ----------
    columns_ : tuple of str. n_features_in_, feature_names_in_ : as in scikit-learn.

    Examples
    --------
    >>> import numpy as np
    >>> x = np.random.default_rng(0).normal(size=(200, 3))
    >>> out = CorrelatedNoise(law="exact", noise=0.2, random_state=1).fit_transform(x)
    >>> bool(np.allclose(np.cov(out, rowvar=False), np.cov(x, rowvar=False))), bool(np.allclose(out, x))
    (True, False)
    """

    def __init__(
        self,
        *,
        law: NoiseLaw = "correlated",
        noise: float = 0.1,
        delta: float = 0.1,
        columns: Sequence[str] | None = None,
        random_state: RandomState = None,
    ) -> None:
        self.law = law
        self.noise = noise
        self.delta = delta
        self.columns = columns
        self.random_state = random_state

    def _check(self) -> None:
        if self.law not in _LAWS:
            raise ParameterError(f"CorrelatedNoise: law={self.law!r}: use one of {', '.join(_LAWS)}.")
        c = self.noise
        if isinstance(c, bool) or not isinstance(c, (int, float)) or not math.isfinite(c) or c <= 0:
            raise ParameterError(
                f"CorrelatedNoise: noise={c!r} must be a number > 0 (the noise variance as a share of the "
                "data's, e.g. 0.1; sdcMicro's noise=10)."
            )
        d = self.delta
        if isinstance(d, bool) or not isinstance(d, (int, float)) or not 0 < d < 1:
            raise ParameterError(f"CorrelatedNoise: delta={d!r} must be in (0, 1), e.g. 0.1.")

    def __sklearn_tags__(self) -> Any:
        tags = super().__sklearn_tags__()
        tags.non_deterministic = self.random_state is None  # fresh OS entropy: two calls differ
        return tags

    def fit(self, X: DataSource, y: None = None) -> CorrelatedNoise:
        """Check the parameters and the columns."""
        self._check()
        as_generator(self.random_state)
        frame, _ = self._read_input(X, reset=True)
        _, names = numeric_matrix(collect_if_lazy(frame, type(self).__name__), self.columns, min_rows=2)
        self.columns_ = names
        return self

    def transform(self, X: DataSource) -> Any:
        """``X`` with the fitted columns masked by the chosen law."""
        self.check_is_fitted("columns_")
        self._check()
        rng = as_generator(self.random_state)
        frame, was_array = self._read_input(X, reset=False)
        frame = collect_if_lazy(frame, type(self).__name__)
        x, names = numeric_matrix(frame, list(self.columns_), min_rows=2)
        if self.law == "correlated":
            out = correlated_noise(x, float(self.noise), rng)
        elif self.law == "correlated2":
            out = correlated2_noise(x, float(self.delta), rng)
        else:
            out = exact_moment_noise(x, float(self.noise), rng)
        result = like_input(frame, {name: out[:, j] for j, name in enumerate(names)})
        return self._write_output(restore_kind(result, X), was_array)
