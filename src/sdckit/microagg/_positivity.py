"""Positivity-preserving moment restoration: transform only the records that stay in their domain."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any, Literal

import numpy as np
from numpy.typing import NDArray

from sdckit._estimator import Estimator
from sdckit._io import DataSource, like_input
from sdckit.errors import InfeasibleError, ParameterError
from sdckit.microagg._base import (
    check_two_tables,
    collect_if_lazy,
    fingerprint,
    is_distributed,
    numeric_matrix,
    read_two_tables,
    restore_kind,
)
from sdckit.microagg._restore import RANK_TOL, RestoreMethod, restoring_map

PositivityMode = Literal["same", "subset", "global"]
"""How the records of X2 (those not kept as microaggregated) are transformed:

* ``"same"``: with the global map T (fitted on all records); a record whose T(x) leaves the domain
  of a constrained column keeps its microaggregated value x instead;
* ``"subset"``: with a map fitted on X2 alone, sending X2's moments to those of the same records in
  the original data (rows must correspond);
* ``"global"``: with the map that makes the whole release (X1 kept, X2 transformed) have exactly
  the original mean E1 and covariance S1; raises :class:`InfeasibleError` when the covariance X2
  would need is not positive semi-definite or has the wrong rank.
"""

SortKey = Literal["violation", "deficit"]
"""Order in which records (or whole groups) are put into X1, most violating first:

* ``"violation"``: ascending ``min_j s_j y_ij / sd_j`` over the constrained columns;
* ``"deficit"``: descending ``sum_j max(0, -s_j y_ij) / sd_j`` (total shortfall, in sd units).

``y = T(x)``, ``s_j`` = +1 for a column kept >= 0, -1 for a column kept <= 0 (mirrored), ``sd_j``
the original sd.
"""

Partition = Literal["seed", "total"]
"""How many records X1 (kept as microaggregated) holds, n' being the records T pushes out of the domain:

* ``"seed"`` (default): ``ceil(n' (1 + buffer))``, the slides' "1st to (n + np)-th observations"
  (microaggregation seed, slide 9: ``buffer`` is a share of the violating records);
* ``"total"``: ``n' + ceil(buffer * N)``, ``buffer`` a share of all N records (sdckit's earlier rule).

Either count is then rounded up to whole groups.
"""

Fill = Literal["min", "zero"]
"""What replaces a value still outside its domain at the end: ``"min"`` the original column's
smallest value (its largest for a mirrored non-positive column), ``"zero"`` zero."""


@dataclass(frozen=True)
class PositivityStats:
    """How many records and cells each step of the positivity procedure touched."""

    n_records: int
    """Rows in the release."""
    constrained: tuple[str, ...]
    """Columns kept in their sign domain."""
    n_negative_records: int
    """n': records with a value outside the domain after the global transform T (step 3)."""
    n_negative_cells: int
    """Cells outside the domain after T (constrained columns)."""
    n_kept: int
    """Records in X1, released as microaggregated (n' plus the buffer per ``partition``, rounded up to whole groups)."""
    n_transformed: int
    """Records of X2 released transformed."""
    n_reverted: int
    """Records of X2 that kept their microaggregated value (mode ``same``: T(x) left the domain)."""
    n_filled_cells: int
    """Cells still outside the domain at the end, replaced per ``fill``."""

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-ready dict."""
        return asdict(self)


def _moments(x: NDArray[np.float64]) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    return x.mean(axis=0), x.T @ (x - x.mean(axis=0))  # mean and scatter (n - 1) * S


def positivity_restore(
    original: NDArray[np.float64],
    masked: NDArray[np.float64],
    *,
    signs: NDArray[np.int64],
    groups: NDArray[np.int64] | None = None,
    mode: PositivityMode = "same",
    buffer: float = 0.0,
    fill: Fill = "min",
    sort_key: SortKey = "violation",
    method: RestoreMethod = "svd",
    partition: Partition = "seed",
) -> tuple[NDArray[np.float64], PositivityStats, NDArray[np.bool_]]:
    """The positivity-constrained release, its step counts and the mask of kept (X1) rows.

    Steps [seed, reconstructed; microaggregation notes §3]: (1) ``Y = A X + b`` with the global map;
    (2) sort the records (or whole groups) by ``sort_key``, most violating first; (3) n' = number
    of records outside the domain; (4) X1 = the first ``ceil(n' (1 + buffer))`` records
    (``partition="seed"``; ``n' + ceil(buffer * n)`` for ``"total"``), whole groups when ``groups``
    is given, kept as microaggregated; (5) X2 = the rest, transformed per ``mode``; (6) any value
    still outside its domain is replaced per ``fill``.
    ``signs[j]`` is +1 (keep >= 0), -1 (keep <= 0) or 0 (unconstrained). With ``groups=None`` every
    record is its own group (the cut may then split a microaggregation group).

    Every step maps equal rows of ``masked`` to equal rows of the release (the same T, the same
    domain test, the same fill), so when each group's masked rows are identical (MDAV centroids)
    and X1 is made of whole groups, each group is released whole and identical: its size, >= k,
    is kept.
    """
    n = masked.shape[0]
    a, b, _ = restoring_map(original, masked, method=method)
    y = masked @ a.T + b
    con = signs != 0
    sd = original.std(axis=0)
    sd = np.where(sd > 0, sd, 1.0)
    scaled = (y * signs)[:, con] / sd[con]
    bad = scaled < 0
    n_neg_rec = int(bad.any(axis=1).sum())
    if not con.any():
        score = np.zeros(n)
    elif sort_key == "violation":
        score = scaled.min(axis=1)  # ascending: most violating first
    else:
        score = -np.where(scaled < 0, -scaled, 0.0).sum(axis=1)
    if partition == "seed":
        extra = n_neg_rec * buffer
    elif partition == "total":
        extra = n * buffer
    else:
        raise ParameterError(
            f"partition={partition!r}: use 'seed' (n'(1 + buffer)) or 'total' (n' + buffer N)."
        )
    # float64 products like 10 * 0.1 can land a hair above an integer: drop 1e-9 before rounding up
    target = min(n, n_neg_rec + max(0, math.ceil(extra - 1e-9))) if n_neg_rec else 0
    kept = np.zeros(n, dtype=bool)
    if target:
        if groups is None:
            kept[np.argsort(score, kind="stable")[:target]] = True
        else:
            n_groups = int(groups.max()) + 1
            g_score = np.full(n_groups, np.inf)
            np.minimum.at(g_score, groups, score)
            sizes = np.bincount(groups, minlength=n_groups)
            g_order = np.argsort(g_score, kind="stable")
            take = g_order[: int(np.searchsorted(np.cumsum(sizes[g_order]), target)) + 1]
            kept = np.isin(groups, take)
    out = masked.copy()
    x2 = ~kept
    n_reverted = 0
    if x2.any():
        if mode == "same" or kept.sum() == 0:
            t2 = y[x2]
            if mode == "same":
                leaves = ((t2 * signs)[:, con] < 0).any(axis=1)
                t2[leaves] = masked[x2][leaves]
                n_reverted = int(leaves.sum())
        elif mode == "subset":
            a2, b2, _ = restoring_map(original[x2], masked[x2], method=method)
            t2 = masked[x2] @ a2.T + b2
        elif mode == "global":
            e1, w_all = _moments(original)
            mu1, w1 = _moments(masked[kept])
            n1, n2 = int(kept.sum()), int(x2.sum())
            if n2 < 2:
                raise InfeasibleError("mode='global' needs at least 2 transformed records; lower the buffer.")
            mu2 = (n * e1 - n1 * mu1) / n2
            d1, d2 = mu1 - e1, mu2 - e1
            w2 = w_all - w1 - n1 * np.outer(d1, d1) - n2 * np.outer(d2, d2)
            s2 = w2 / (n2 - 1)
            sd2 = np.sqrt(np.abs(np.diag(s2)))
            sd2 = np.where(sd2 > 0, sd2, 1.0)
            ev = np.linalg.eigvalsh(s2 / np.outer(sd2, sd2))
            if ev.min() < -RANK_TOL * max(float(ev.max()), 1.0):
                raise InfeasibleError(
                    "mode='global': the kept records already carry more spread than the original "
                    "covariance allows (the covariance X2 would need is not positive semi-definite). "
                    "Use mode='subset' or 'same', or a smaller buffer."
                )
            a2, b2, _ = restoring_map(original, masked[x2], method=method, target_mean=mu2, target_cov=s2)
            t2 = masked[x2] @ a2.T + b2
        else:
            raise ParameterError(f"mode={mode!r}: use 'same', 'subset' or 'global'.")
        out[x2] = t2
    lo = (
        np.where(signs > 0, np.nanmin(original, axis=0), np.nanmax(original, axis=0))
        if fill == "min"
        else np.zeros(masked.shape[1])
    )
    viol = (out * signs < 0) & con[None, :]
    out = np.where(viol, lo[None, :], out)
    stats = PositivityStats(
        n_records=n,
        constrained=(),
        n_negative_records=n_neg_rec,
        n_negative_cells=int(bad.sum()),
        n_kept=int(kept.sum()),
        n_transformed=int(x2.sum()) - n_reverted,
        n_reverted=n_reverted,
        n_filled_cells=int(viol.sum()),
    )
    return out, stats, kept


class PositivityRestorer(Estimator):
    """Moment restoration that keeps constrained columns in their sign domain [seed, reconstructed].

    "The middle of non-transformed and transformed microaggregated data" (Woo, NISS slides): the
    records the global map T(x) = A x + b would push below zero are released as microaggregated
    (X1), the others transformed (X2); whatever is still negative is then filled.

    Parameters
    ----------
    mode : how X2 is transformed: ``"same"`` reuses T and reverts records it pushes out of the
        domain; ``"subset"`` maps X2's moments to those of the same original records;
        ``"global"`` makes the whole release have exactly E1 and S1 (see :data:`PositivityMode`).
    buffer : p, the extra records put into X1 beyond the n' violating ones, "to reduce the
        possibility of negative values after transforming X2" [seed]: X1 holds ``ceil(n'(1 + p))``
        records by default (``partition="seed"``), ``n' + ceil(p N)`` with ``partition="total"``.
    partition : ``"seed"`` (default) or ``"total"``, see :data:`Partition`.
    split_groups : False (default): ``fit`` needs the microaggregation groups and cuts only at
        group boundaries, so each group is released whole and identical (k-anonymity is kept).
        True: the explicit opt-out; with ``groups=None`` records are cut one by one and a group
        may be split (the release may then hold rows seen fewer than k times).
    fill : ``"min"`` (the original column's minimum) or ``"zero"`` for values still out of domain.
    sort_key : ``"violation"`` or ``"deficit"``: which records enter X1 first (see :data:`SortKey`).
    columns : the columns to transform (default: all).
    constrained : the columns kept in their sign domain; default: those whose original values
        are all >= 0 (kept >= 0) or all <= 0 (kept <= 0, by mirroring).
    method : the restoring map's choice of A (see :data:`RestoreMethod`).

    Attributes
    ----------
    n_features_in_ : int, columns of ``masked``; feature_names_in_ : their names (named input only).
    columns_, constrained_ : tuples of str, the transformed and the sign-constrained columns. A_, b_ : the global map (original units).
    kept_ : bool array (n,), rows released as microaggregated (X1).
    stats_ : :class:`PositivityStats`, records and cells each step touched.

    Notes
    -----
    ``fit(original, masked, groups)`` needs rows that correspond (row i of ``masked`` masks row i of
    ``original``) and the microaggregation ``groups_`` (1-D ids, or the (n, p) per-column ids of
    ``method="rank"``, where rows with the same ids form a group). Restoration keeps groups
    identical: X1 is made of whole groups, and T, the domain test and the fill map equal rows to
    equal rows, so every microaggregation group is released either kept or transformed, whole and
    identical, and a k-anonymous input stays k-anonymous. Without groups ``fit`` refuses unless
    ``split_groups=True``. ``transform`` returns the release for those rows.

    Examples
    --------
    >>> import polars as pl
    >>> from sdckit.microagg import MDAV
    >>> orig = pl.DataFrame({"x": [0.1, 0.2, 0.3, 5.0, 5.5, 9.0], "y": [9.0, 5.0, 4.0, 1.0, 0.5, 0.1]})
    >>> mdav = MDAV(k=2).fit(orig)
    >>> pr = PositivityRestorer().fit(orig, mdav.transform(orig), groups=mdav.groups_)
    >>> bool((pr.transform(mdav.transform(orig)).to_numpy() >= 0).all())
    True
    """

    def __init__(
        self,
        *,
        mode: PositivityMode = "same",
        buffer: float = 0.0,
        fill: Fill = "min",
        sort_key: SortKey = "violation",
        columns: Sequence[str] | None = None,
        constrained: Sequence[str] | None = None,
        method: RestoreMethod = "svd",
        partition: Partition = "seed",
        split_groups: bool = False,
    ) -> None:
        self.mode = mode
        self.buffer = buffer
        self.fill = fill
        self.sort_key = sort_key
        self.columns = columns
        self.constrained = constrained
        self.method = method
        self.partition = partition
        self.split_groups = split_groups

    def _check(self) -> None:
        if self.mode not in ("same", "subset", "global"):
            raise ParameterError(f"mode={self.mode!r}: use 'same', 'subset' or 'global'.")
        if self.fill not in ("min", "zero"):
            raise ParameterError(f"fill={self.fill!r}: use 'min' or 'zero'.")
        if self.sort_key not in ("violation", "deficit"):
            raise ParameterError(f"sort_key={self.sort_key!r}: use 'violation' or 'deficit'.")
        if not (isinstance(self.buffer, (int, float)) and 0 <= self.buffer <= 1):
            raise ParameterError(f"buffer={self.buffer!r} must be a share of records in [0, 1], e.g. 0.05.")
        if self.partition not in ("seed", "total"):
            raise ParameterError(
                f"partition={self.partition!r}: use 'seed' (n'(1 + buffer)) or 'total' (n' + buffer N)."
            )
        if not isinstance(self.split_groups, bool):
            raise ParameterError(f"split_groups={self.split_groups!r} must be True or False.")

    def fit(
        self, original: DataSource, masked: DataSource, groups: NDArray[np.int64] | None = None
    ) -> PositivityRestorer:
        """Learn the maps and which rows are kept; rows of ``original`` and ``masked`` correspond."""
        self._check()
        if is_distributed(original) or is_distributed(masked):
            raise ParameterError(
                f"{type(self).__name__} chooses which records to keep one by one, so it needs every row in "
                "memory, and sdckit never collects a Dask or Spark frame. Use MomentRestorer there "
                "(its moments come from one distributed pass), or restore a sample in memory."
            )
        x1, x2, names = read_two_tables(self, original, masked)
        if x1.shape[0] != x2.shape[0]:
            raise ParameterError(
                f"original has {x1.shape[0]} rows and masked {x2.shape[0]}: the positivity procedure "
                "needs row i of masked to mask row i of original."
            )
        if groups is None:
            if not self.split_groups:
                raise ParameterError(
                    "PositivityRestorer.fit needs the microaggregation groups to cut only at group "
                    "boundaries (each group kept or transformed whole, so k-anonymity holds): pass "
                    "groups=model.groups_, or PositivityRestorer(split_groups=True) to allow splitting groups."
                )
        else:
            groups = np.asarray(groups, dtype=np.int64)
            if groups.ndim == 2 and groups.shape[0] == x1.shape[0]:  # per-column ids (method="rank")
                groups = np.unique(groups, axis=0, return_inverse=True)[1].reshape(-1).astype(np.int64)
            if groups.shape != (x1.shape[0],):
                raise ParameterError(
                    f"groups must hold one group id per row ({x1.shape[0]}) or one per row and column, "
                    f"got shape {groups.shape}."
                )
            if groups.min() < 0:
                raise ParameterError(f"groups must be ids >= 0; found {int(groups.min())}.")
        if self.constrained is None:
            signs = np.where((x1 >= 0).all(axis=0), 1, np.where((x1 <= 0).all(axis=0), -1, 0))
        else:
            missing = [c for c in self.constrained if c not in names]
            if missing:
                raise ParameterError(
                    f"constrained column {missing[0]!r} is not among the columns {list(names)}."
                )
            signs = np.array(
                [
                    (1 if (x1[:, j] >= 0).all() or not (x1[:, j] <= 0).all() else -1)
                    if name in self.constrained
                    else 0
                    for j, name in enumerate(names)
                ]
            )
        signs = signs.astype(np.int64)
        out, stats, kept = positivity_restore(
            x1,
            x2,
            signs=signs,
            groups=groups,
            mode=self.mode,
            buffer=float(self.buffer),
            fill=self.fill,
            sort_key=self.sort_key,
            method=self.method,
            partition=self.partition,
        )
        self.A_, self.b_, _ = restoring_map(x1, x2, method=self.method)
        self.columns_ = names
        self._fingerprint = fingerprint(x2)
        self.constrained_ = tuple(n for n, s in zip(names, signs, strict=True) if s != 0)
        self.signs_ = signs
        self.kept_ = kept
        self.stats_ = PositivityStats(**{**stats.to_dict(), "constrained": self.constrained_})
        self._release = out
        return self

    def transform(self, masked: DataSource) -> Any:
        """The positivity-constrained release for the rows seen in ``fit``, as ``masked``'s frame type."""
        self.check_is_fitted("kept_")
        frame, was_array = self._read_input(masked, reset=False)
        frame = collect_if_lazy(frame, type(self).__name__)
        x2, names = numeric_matrix(frame, list(self.columns_))
        if x2.shape[0] != self.kept_.shape[0] or fingerprint(x2) != self._fingerprint:
            raise ParameterError(
                f"{type(self).__name__} releases the masked rows seen in fit ({self.kept_.shape[0]} rows), and "
                f"these {x2.shape[0]} rows are not those rows. Fit it on (original, masked) of this table, "
                "or use fit_transform(original, masked)."
            )
        out = like_input(frame, {name: self._release[:, j] for j, name in enumerate(names)})
        return self._write_output(restore_kind(out, masked), was_array)

    def fit_transform(
        self,
        original: DataSource,
        masked: DataSource | None = None,
        groups: NDArray[np.int64] | None = None,
        **fit_params: Any,
    ) -> Any:
        """``fit(original, masked, groups).transform(masked)``: the positivity-constrained release."""
        check_two_tables(type(self).__name__, original, masked)
        return self.fit(original, masked, groups=groups).transform(masked)
