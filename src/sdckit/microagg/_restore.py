"""Moment restoration: the linear map T(x) = A x + b giving masked data the original mean and covariance."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

import numpy as np
from numpy.typing import NDArray

from sdckit._estimator import Estimator, frame_columns
from sdckit._io import DataSource, like_input
from sdckit.errors import InfeasibleError, ParameterError
from sdckit.microagg._base import (
    check_two_tables,
    collect_if_lazy,
    is_distributed,
    numeric_matrix,
    read_two_tables,
    restore_kind,
)
from sdckit.microagg._distributed import distributed_linear_map, distributed_moments

RestoreMethod = Literal["svd", "cholesky", "procrustes"]
"""How A is chosen among the maps with ``A S2 A^T = S1`` (all ``S1^{1/2} Q S2^{-1/2}``, Q orthogonal):

* ``"svd"`` (default) the symmetric roots, ``A = S1^{1/2} S2^{-1/2}`` with pseudo-inverse roots;
  works with singular covariances that share their null space;
* ``"cholesky"`` ``A = L1 L2^{-1}`` with Cholesky factors; fails on singular covariances;
* ``"procrustes"`` the Q that moves the masked records least: it minimises
  ``sum_i ||(A - I)(x_i - E2)||^2`` in standardised units (orthogonal Procrustes,
  ``Q = V U^T`` from ``S2^{1/2} S1^{1/2} = U diag(s) V^T``).
"""

_METHODS = ("svd", "cholesky", "procrustes")
RANK_TOL = 1e-9
"""Eigenvalues below RANK_TOL * largest (standardised covariance, unitless) count as zero."""


def _sym_roots(
    s: NDArray[np.float64], tol: float
) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]:
    """(S^{1/2}, S^{+1/2} pseudo-inverse root, projector on range(S)) of a symmetric PSD matrix."""
    w, v = np.linalg.eigh((s + s.T) / 2)
    keep = w > tol * max(float(w.max()), 0.0)
    wk = np.where(keep, w, 1.0)
    root = (v * np.where(keep, np.sqrt(wk), 0.0)) @ v.T
    inv_root = (v * np.where(keep, 1.0 / np.sqrt(wk), 0.0)) @ v.T
    proj = (v * keep) @ v.T
    return root, inv_root, proj


def restoring_map(
    x1: NDArray[np.float64],
    x2: NDArray[np.float64],
    *,
    method: RestoreMethod = "svd",
    target_mean: NDArray[np.float64] | None = None,
    target_cov: NDArray[np.float64] | None = None,
) -> tuple[NDArray[np.float64], NDArray[np.float64], int]:
    """A (p, p), b (p,) and rank with ``A S2 A^T = S1`` and ``A E2 + b = E1`` [seed; notes §2].

    E and S are column means and sample covariances (ddof=1) of ``x1`` (original) and ``x2``
    (masked); ``target_mean``/``target_cov`` replace E1/S1 when given. The work is done in
    coordinates standardised by the original sd (CASC covariances are ~1e10), then mapped back:
    ``A = D A_z D^{-1}``, ``b = E1 - A E2``.

    Raises
    ------
    InfeasibleError
        rank(S1) != rank(S2), or S1 and S2 have different null spaces (then no A exists), or
        ``method="cholesky"`` on a singular covariance.
    """
    e1 = x1.mean(axis=0) if target_mean is None else np.asarray(target_mean, dtype=np.float64)
    s1 = np.cov(x1, rowvar=False, ddof=1).reshape(x1.shape[1], -1) if target_cov is None else target_cov
    e2 = x2.mean(axis=0)
    s2 = np.cov(x2, rowvar=False, ddof=1).reshape(x2.shape[1], -1)
    return map_from_moments(e1, s1, e2, s2, method=method)


def map_from_moments(
    e1: NDArray[np.float64],
    s1: NDArray[np.float64],
    e2: NDArray[np.float64],
    s2: NDArray[np.float64],
    *,
    method: RestoreMethod = "svd",
) -> tuple[NDArray[np.float64], NDArray[np.float64], int]:
    """A, b and rank of :func:`restoring_map` from the moments alone (means E, covariances S, ddof=1).

    The map needs nothing else, so on a distributed frame one pass that sums x and x x^T suffices.
    """
    sd = np.sqrt(np.clip(np.diag(s1), 0.0, None))
    sd = np.where(sd > 0, sd, 1.0)
    s1z = s1 / np.outer(sd, sd)
    s2z = s2 / np.outer(sd, sd)
    r1, _, p1 = _sym_roots(s1z, RANK_TOL)
    r2, r2inv, p2 = _sym_roots(s2z, RANK_TOL)
    rank1, rank2 = round(np.trace(p1)), round(np.trace(p2))
    if rank1 != rank2:
        raise InfeasibleError(
            f"rank(S1) = {rank1} but rank(S2) = {rank2}: no linear map restores the covariance. "
            "Microaggregation with fewer than p + 1 groups, or a constant masked column, loses rank; "
            "lower k or drop the collinear columns."
        )
    if np.abs(p1 - p2).max() > 1e-6:
        raise InfeasibleError(
            "S1 and S2 have the same rank but different null spaces (a linear identity holds in one "
            "data set and not in the other), so no linear map restores the covariance exactly."
        )
    if method == "svd":
        az = r1 @ r2inv
    elif method == "cholesky":
        try:
            if rank1 < s1z.shape[0]:  # rounding can let a singular matrix through numpy's Cholesky
                raise np.linalg.LinAlgError
            l1 = np.linalg.cholesky(s1z)
            l2 = np.linalg.cholesky(s2z)
        except np.linalg.LinAlgError:
            raise InfeasibleError(
                "the Cholesky route needs positive definite covariances, and these are singular "
                f"(rank {rank1} < {s1z.shape[0]} columns). Use method='svd' (pseudo-inverse roots)."
            ) from None
        az = l1 @ np.linalg.inv(l2)
    elif method == "procrustes":
        u, _, vt = np.linalg.svd(r2 @ r1)
        az = r1 @ (vt.T @ u.T) @ r2inv
    else:
        raise ParameterError(f"method={method!r}: use one of {', '.join(_METHODS)}.")
    a = az * sd[:, None] / sd[None, :]
    b = e1 - a @ e2
    return a, b, rank1


class MomentRestorer(Estimator):
    """Linear transformation T(x) = A x + b restoring the original mean and covariance [seed].

    ``A = S1^{1/2} S2^{-1/2}`` (SVD, pseudo-inverse roots) and ``b = E1 - A E2``, so that
    ``A S2 A^T = S1`` and ``A E2 + b = E1`` (microaggregation notes §2, formula derived). Exact
    linear identities among the columns (S1 and S2 sharing their null space, e.g. CASC Census
    PTOTVAL = PEARNVAL + POTHVAL) survive: ``w^T A = 0`` for every null vector ``w`` of S1.

    Parameters
    ----------
    method : ``"svd"``, ``"cholesky"`` or ``"procrustes"`` (see :data:`RestoreMethod`).
    columns : columns to restore (default: all); both tables need them.

    Attributes
    ----------
    n_features_in_ : int, columns of ``masked`` in fit. feature_names_in_ : object array of their
        names (input with column names only).
    columns_ : tuple of str, the restored columns.
    A_ : (p, p) float64 matrix (original units). b_ : (p,) float64 offset (original units).
    rank_ : rank of the covariance of the original columns.

    Notes
    -----
    ``fit`` takes two tables, the original and the masked one, so the restorer is not a step of
    a scikit-learn :class:`~sklearn.pipeline.Pipeline` on its own (a step sees only the previous
    step's output); :class:`RestoredMicroaggregation` is MDAV then this restoration as one ordinary
    transformer. After a Pipeline of masking steps, fit it on ``(X, pipeline.fit_transform(X))``.
    Covariances use ddof=1. The transformed data match E1 and S1 up to rounding (~1e-12
    relative). A linear map does not preserve positivity [seed]; see :class:`PositivityRestorer`.

    Examples
    --------
    >>> import polars as pl
    >>> from sdckit.microagg import MDAV
    >>> orig = pl.DataFrame({"x": [1.0, 2.0, 3.0, 10.0, 11.0, 12.0]})
    >>> masked = MDAV(k=3).fit_transform(orig)
    >>> out = MomentRestorer().fit(orig, masked).transform(masked)
    >>> round(out["x"].var(), 6) == round(orig["x"].var(), 6)
    True
    """

    def __init__(self, *, method: RestoreMethod = "svd", columns: Sequence[str] | None = None) -> None:
        self.method = method
        self.columns = columns

    def fit(self, original: DataSource, masked: DataSource) -> MomentRestorer:
        """Learn A and b from the original and the masked tables (rows need not correspond).

        Both are frames with the same columns, or arrays of the same width (columns ``x0, x1, ...``);
        ``n_features_in_``/``feature_names_in_`` describe ``masked``, the table ``transform`` takes.
        On Dask or Spark frames the moments come from one distributed pass over each table.
        """
        if self.method not in _METHODS:
            raise ParameterError(f"method={self.method!r}: use one of {', '.join(_METHODS)}.")
        if is_distributed(original) or is_distributed(masked):
            (_, e1, s1), names = distributed_moments(original, self.columns)
            (_, e2, s2), _ = distributed_moments(masked, list(names))
            self.A_, self.b_, self.rank_ = map_from_moments(e1, s1, e2, s2, method=self.method)
            self.columns_ = names
            self.n_features_in_ = len(frame_columns(masked))
            self.feature_names_in_ = np.asarray(frame_columns(masked), dtype=object)
            return self
        x1, x2, names = read_two_tables(self, original, masked)
        self.A_, self.b_, self.rank_ = restoring_map(x1, x2, method=self.method)
        self.columns_ = names
        return self

    def transform(self, masked: DataSource) -> Any:
        """Apply T to the fitted columns of ``masked``; same frame type, other columns untouched.

        A Dask or Spark frame stays distributed and lazy: T is applied partition by partition.
        """
        self.check_is_fitted("A_")
        if is_distributed(masked):
            return distributed_linear_map(masked, self.columns_, self.A_, self.b_)
        frame, was_array = self._read_input(masked, reset=False)
        frame = collect_if_lazy(frame, type(self).__name__)
        x2, names = numeric_matrix(frame, list(self.columns_))
        y = x2 @ self.A_.T + self.b_
        out = like_input(frame, {name: y[:, j] for j, name in enumerate(names)})
        return self._write_output(restore_kind(out, masked), was_array)

    def fit_transform(self, original: DataSource, masked: DataSource | None = None, **fit_params: Any) -> Any:
        """``fit(original, masked).transform(masked)``: the restored release."""
        if masked is None:
            check_two_tables(type(self).__name__, original, masked)
        return self.fit(original, masked).transform(masked)
