"""Microaggregation estimators: :class:`Microaggregation` (the family) and :class:`MDAV`."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

import narwhals as nw
import numpy as np
from numpy.typing import NDArray

from sdckit._checks import group_size
from sdckit._estimator import Estimator
from sdckit._io import DataSource, as_narwhals, check_columns, like_input
from sdckit.errors import ParameterError, TooFewRowsError
from sdckit.microagg._base import (
    Centre,
    Missing,
    collect_if_lazy,
    fingerprint,
    is_distributed,
    numeric_matrix,
    refuse_distributed,
    restore_kind,
)
from sdckit.microagg._distributed import apply_blocked, plan_blocked
from sdckit.microagg._entity import entity_mdav_groups
from sdckit.microagg._groups import (
    blocked_mdav_groups,
    first_component,
    group_centres,
    keyed_mdav_groups,
    keyed_standardize,
    mdav_groups,
    sorted_groups,
    standardize,
    vmdav_groups,
)
from sdckit.microagg._relations import guard_masking

Method = Literal["mdav", "mdav_blocked", "vmdav", "rank", "pca", "single"]
"""Grouping method (sdcMicro names in brackets):

* ``"mdav"`` exact MDAV ("mdav"), compiled kernel;
* ``"mdav_blocked"`` MDAV inside k-d blocks of ``block_size`` rows, in parallel (for n >= 1e5);
* ``"vmdav"`` V-MDAV, variable group sizes k..2k-1 with gain ``gamma``;
* ``"rank"`` individual ranking ("rankindiv"): each column on its own, k consecutive sorted values;
* ``"pca"`` projection on the first principal component of the z-scores ("pca"), then k consecutive;
* ``"single"`` single-variable sort ("single"): k consecutive rows in the order of ``sort_by``.
"""

_METHODS = ("mdav", "mdav_blocked", "vmdav", "rank", "pca", "single")


def information_loss(x: NDArray[np.float64], masked: NDArray[np.float64]) -> float:
    """IL = 100 * SSE / SST in percent, on z-scores of the original (microaggregation notes §1).

    ``SSE = sum_ij (z_ij - z'_ij)^2`` where ``z'`` is the masked value standardised with the
    original mean and population sd; ``SST = sum_ij z_ij^2``. With group means as the masked
    values this is the within-group SSE of MDAV. Missing cells (NaN) are left out of both sums.
    Constant columns are left out (their SST is 0).
    """
    mean = np.nanmean(x, axis=0)
    sd = np.nanstd(x, axis=0)
    use = sd > 0
    z = (x[:, use] - mean[use]) / sd[use]
    zm = (masked[:, use] - mean[use]) / sd[use]
    ok = ~(np.isnan(z) | np.isnan(zm))
    sst = float(np.sum(np.where(~np.isnan(z), z, 0.0) ** 2))
    sse = float(np.sum(np.where(ok, z - zm, 0.0) ** 2))
    return 100.0 * sse / sst if sst > 0 else 0.0


def _as_list(names: Sequence[str] | str | None) -> list[str]:
    if names is None:
        return []
    return [c.strip() for c in names.split(",")] if isinstance(names, str) else [str(c) for c in names]


def _strata_codes(source: DataSource, strata: Sequence[str] | str | None, n: int) -> NDArray[np.int64]:
    if strata is None:
        return np.zeros(n, dtype=np.int64)
    frame = as_narwhals(source)
    names = check_columns(frame, strata)
    if isinstance(frame, nw.LazyFrame):
        frame = frame.collect()
    key = frame.select(
        nw.concat_str([nw.col(name).cast(nw.String).fill_null("<missing>") for name in names], separator="\x1f")
        .alias("__key")
    )["__key"]
    # dense ranks of the joined key: codes 0, 1, ... in the keys' sorted order (vectorised)
    return np.asarray(key.rank(method="dense").to_numpy(), dtype=np.int64) - 1


class Microaggregation(Estimator):
    """Microaggregation: each value becomes the centre of its group of at least k similar records.

    Grouping works on z-scores (population sd) with squared Euclidean distance; the released
    value is the group mean (default) or median on the original scale, so k-anonymity holds for
    the microaggregated columns. IL = 100 * SSE / SST (percent, z-scores; notes §1).

    The output keeps the input's row order (scikit-learn's row alignment); shuffle the rows before
    publishing (``sdckit run`` and every CLI command that writes rows do), or the unchanged columns
    link each released row to its input row by position.

    Parameters
    ----------
    k : smallest group size (>= 1).
    method : grouping method, see :data:`Method`; ``"mdav"`` is exact MDAV [lit].
    columns : the numeric columns to microaggregate (default: all); other columns are untouched.
    centre : ``"mean"`` or ``"median"`` group centre.
    strata : columns whose every combination is microaggregated separately (each needs >= k rows).
    gamma : V-MDAV gain (``method="vmdav"``); 0 gives fixed-size groups, larger values grow more.
    sort_by : the column ``method="single"`` sorts by (default: the first of ``columns``).
    block_size : rows per block for ``method="mdav_blocked"`` (at least 2k), k-d splits.
    blocks : columns whose every combination is one block of ``method="mdav_blocked"``, instead of
        k-d splits (each block needs >= k rows); the standardisation stays global. These are the
        blocks a Dask or Spark frame is processed in, partition by partition, with the same groups
        (:func:`sdckit.microagg.distributed_microaggregate`; identical records are interchangeable
        between groups, so with ties the release is the same set of records).
    missing : ``"error"`` or ``"keep"`` (see :data:`sdckit.microagg.Missing`).
    allow_linear_relations : release anyway when a linear relation ties the microaggregated columns
        to numeric columns the frame keeps unchanged (default False: ``fit_transform`` and
        ``transform`` raise :class:`~sdckit.microagg.LinearRelationError`, naming the relation).
    entity : (``method="mdav"`` only) the column grouping rows into households or entities (a
        utility's monthly rows): every group then holds records of at least k distinct entities,
        never one entity's rows (:func:`sdckit.microagg._entity.entity_mdav_groups`); a stratum with
        fewer than k entities is refused with the reason.

    Attributes
    ----------
    n_features_in_ : int, columns of ``X`` in fit. feature_names_in_ : object array of their names
        (only for input with column names; a numpy array is read as ``x0, x1, ...``).
    columns_ : tuple of str, the microaggregated columns.
    groups_ : int64 array (n,), group id per row (ids restart after each stratum's offset); for
        ``method="rank"`` an (n, p) array, one grouping per column.
    n_groups_ : int, number of groups (per column for ``"rank"``: the maximum).
    information_loss_ : float, IL in percent on the fitted data.

    Notes
    -----
    ``fit_transform(X)`` is the operation: ``transform`` accepts only the rows seen in ``fit``
    (microaggregation has no map for new rows) and raises for others. In a scikit-learn
    :class:`~sklearn.pipeline.Pipeline` the estimator is the step that releases the training rows.
    MDAV ties go to the lowest row index; all groups have k rows except one of k..2k-1 per stratum.
    Cost O(n^2 p / k) time, O(n p) memory for MDAV and V-MDAV; O(n log n) for the sorting methods.

    References
    ----------
    .. [1] Domingo-Ferrer, J. and Mateo-Sanz, J. M. (2002). Practical data-oriented microaggregation
       for statistical disclosure control. IEEE TKDE 14(1).
    .. [2] Solanas, A. and Martinez-Balleste, A. (2006). V-MDAV: a multivariate microaggregation
       with variable group size. COMPSTAT 2006.

    Examples
    --------
    >>> import polars as pl
    >>> df = pl.DataFrame({"id": [1, 2, 3, 4, 5, 6], "x": [1.0, 2.0, 3.0, 10.0, 11.0, 12.0]})
    >>> Microaggregation(k=3, columns=["x"]).fit_transform(df)["x"].to_list()
    [2.0, 2.0, 2.0, 11.0, 11.0, 11.0]
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
        missing: Missing = "error",
        allow_linear_relations: bool = False,
        entity: str | None = None,
    ) -> None:
        self.k = k
        self.entity = entity
        self.method = method
        self.columns = columns
        self.centre = centre
        self.strata = strata
        self.gamma = gamma
        self.sort_by = sort_by
        self.block_size = block_size
        self.blocks = blocks
        self.missing = missing
        self.allow_linear_relations = allow_linear_relations

    def _method(self) -> str:
        return str(self.method)

    def _blocks(self) -> Sequence[str] | None:
        return getattr(self, "blocks", None)  # MDAV has no blocks

    def _check_params(self) -> int:
        k = group_size(self.k)
        method = self._method()
        if method not in _METHODS:
            raise ParameterError(
                f"method={method!r} is not a microaggregation method; use one of {', '.join(_METHODS)}."
            )
        if self.centre not in ("mean", "median"):
            raise ParameterError(f"centre={self.centre!r}: use 'mean' or 'median'.")
        if method == "vmdav" and not (isinstance(self.gamma, (int, float)) and self.gamma >= 0):
            raise ParameterError(f"gamma={self.gamma!r} must be a number >= 0 (V-MDAV gain, e.g. 0.2).")
        if method == "mdav_blocked" and self._blocks() is None and (
            isinstance(self.block_size, bool) or not isinstance(self.block_size, int) or self.block_size < 2 * k
        ):
            raise ParameterError(f"block_size={self.block_size!r} must be an integer >= 2k = {2 * k}.")
        if self._blocks() is not None and method != "mdav_blocked":
            raise ParameterError(
                f"blocks={self.blocks!r} names block columns, which only method='mdav_blocked' uses "
                f"(method={method!r}); drop blocks or use method='mdav_blocked'."
            )
        return k

    def _group(
        self,
        z: NDArray[np.float64],
        x: NDArray[np.float64],
        names: tuple[str, ...],
        k: int,
        blocks: NDArray[np.int64] | None = None,
    ) -> NDArray[np.int64]:
        method = self._method()
        if method == "mdav":
            return mdav_groups(z, k)
        if method == "mdav_blocked":
            if blocks is not None:  # the standardisation a cluster reproduces bit for bit
                sizes = np.bincount(blocks)
                small = np.flatnonzero((sizes > 0) & (sizes < k))
                if small.size:
                    raise TooFewRowsError(
                        f"{small.size} block(s) of blocks={self._blocks()!r} have fewer than k={k} rows "
                        f"(the smallest has {int(sizes[small].min())}). Use coarser block keys or lower k."
                    )
                return keyed_mdav_groups(keyed_standardize(x), k, blocks)
            return blocked_mdav_groups(z, k, block_size=self.block_size)
        if method == "vmdav":
            return vmdav_groups(z, k, float(self.gamma))
        if method == "pca":
            return sorted_groups(first_component(z), k)
        if method == "single":
            col = names[0] if self.sort_by is None else self.sort_by
            if col not in names:
                raise ParameterError(
                    f"sort_by={col!r} is not one of the microaggregated columns {list(names)}."
                )
            return sorted_groups(z[:, names.index(col)], k)
        return np.stack([sorted_groups(z[:, j], k) for j in range(z.shape[1])], axis=1)  # rank

    def _allow_nan(self) -> bool:
        return self.missing == "keep"

    def __sklearn_tags__(self) -> Any:
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = self.missing == "keep"
        # fit_transform is the operation: transform gives the release of the rows seen in fit only
        tags.non_deterministic = False
        return tags

    def fit(self, X: DataSource, y: None = None) -> Microaggregation:
        """Learn the groups of the rows of ``X`` (validated: numeric columns, n >= k per stratum).

        A numpy array is read as columns ``x0, x1, ...``. Exact MDAV, V-MDAV and the sorting
        methods need every row in memory; a Dask or Spark frame is refused (use
        ``method="mdav_blocked"`` with ``blocks=``, see :func:`sdckit.microagg.distributed_microaggregate`).
        """
        k = self._check_params()
        if is_distributed(X):
            return self._fit_distributed(X, k)
        frame, _ = self._read_input(X, reset=True)
        frame = collect_if_lazy(frame, type(self).__name__)
        x, names = numeric_matrix(frame, self._columns(frame), missing=self.missing, min_rows=k)
        n = x.shape[0]
        codes = _strata_codes(frame, self.strata, n)
        entities = self._entities(frame, names, n)
        blocks = None if self._blocks() is None else _strata_codes(frame, self._blocks(), n)
        rank = self._method() == "rank"
        groups = np.full((n, len(names)) if rank else n, -1, dtype=np.int64)
        offset = 0
        for s in range(int(codes.max()) + 1):
            rows = np.flatnonzero(codes == s)
            if rows.shape[0] < k:
                raise TooFewRowsError(
                    f"stratum {s} of {self.strata!r} has {rows.shape[0]} rows (n_samples = {rows.shape[0]}), "
                    f"fewer than k={k}. Merge small strata or lower k."
                )
            z = standardize(x[rows])
            z = np.where(np.isnan(z), 0.0, z)  # missing="keep": a missing cell counts as the mean
            if entities is not None:
                try:
                    g = entity_mdav_groups(np.ascontiguousarray(z), entities[rows], k)
                except TooFewRowsError as err:
                    raise TooFewRowsError(f"stratum {s} of {self.strata!r}: {err}" if self.strata else str(err)) from None
            else:
                g = self._group(np.ascontiguousarray(z), x[rows], names, k, None if blocks is None else blocks[rows])
            groups[rows] = g + offset
            offset += int(g.max()) + 1
        self.columns_ = names
        self.groups_ = groups
        self.n_groups_ = offset if not rank else int(groups.max()) + 1
        self._release = self._centres(x)
        self._fingerprint = fingerprint(x)
        self.information_loss_ = information_loss(x, self._release)
        return self

    def _entities(self, frame: DataSource, names: Sequence[str], n: int) -> NDArray[np.int64] | None:
        """Entity codes per row (None without ``entity``), checked."""
        entity = getattr(self, "entity", None)
        if entity is None:
            return None
        if self._method() != "mdav":
            raise ParameterError(
                f"entity={entity!r} works with method='mdav' (groups of k distinct entities); method={self._method()!r} "
                "does not keep entities apart. Use method='mdav'."
            )
        if entity in names:
            raise ParameterError(f"entity={entity!r} is among the microaggregated columns; the entity id is not masked.")
        return _strata_codes(frame, [entity], n)

    def _columns(self, frame: DataSource) -> Sequence[str] | None:
        """``columns``, or every column but the strata, block keys and the entity."""
        if self.columns is not None:
            return self.columns
        keys = [*_as_list(self.strata), *_as_list(self._blocks()), *_as_list(getattr(self, "entity", None))]
        if not keys:
            return None
        return [c for c in check_columns(as_narwhals(frame), None) if c not in keys]

    def _fit_distributed(self, X: DataSource, k: int) -> Microaggregation:
        name = type(self).__name__
        blocks = self._blocks()
        if self._method() != "mdav_blocked" or blocks is None:
            refuse_distributed(X, name, self._method())
        if self.strata is not None or self.missing != "error":
            raise ParameterError(
                f"{name} on a distributed frame takes neither strata nor missing='keep': put the strata "
                "among the block keys (blocks=[...]) and filter or impute missing cells on the cluster."
            )
        assert blocks is not None
        plan = plan_blocked(X, k=k, blocks=blocks, columns=self.columns)
        names = [str(c) for c in as_narwhals(X).collect_schema().names()]
        self.n_features_in_ = len(names)
        self.feature_names_in_ = np.asarray(names, dtype=object)
        self.columns_ = plan.columns
        self.n_blocks_ = plan.n_blocks
        self._plan = plan
        return self

    def _centres(self, x: NDArray[np.float64]) -> NDArray[np.float64]:
        if self.groups_.ndim == 1:
            return group_centres(x, self.groups_, self.centre)
        out = np.empty_like(x)
        for j in range(x.shape[1]):
            out[:, [j]] = group_centres(x[:, [j]], self.groups_[:, j], self.centre)
        return out

    def transform(self, X: DataSource) -> Any:
        """The release of the rows seen in ``fit``: the fitted columns replaced by their group centres.

        Microaggregation groups the rows it was fitted on, so ``fit_transform(X)`` is the operation
        and ``transform`` accepts only those rows (the same values in the same order); other rows
        raise :class:`~sdckit.errors.ParameterError`. Same frame type out, other columns untouched.
        """
        if is_distributed(X):
            self.check_is_fitted("columns_")
            if not hasattr(self, "_plan"):
                raise ParameterError(
                    f"this {type(self).__name__} was fitted in memory; fit it on the distributed frame "
                    "itself (fit_transform), so that the rows stay where they are."
                )
            return apply_blocked(X, self._plan, k=group_size(self.k), centre=self.centre)
        self.check_is_fitted("groups_")
        frame, was_array = self._read_input(X, reset=False)
        frame = collect_if_lazy(frame, type(self).__name__)
        x, names = numeric_matrix(frame, list(self.columns_), missing=self.missing)
        guard_masking(frame, names, allow=bool(self.allow_linear_relations))
        if x.shape[0] != self.groups_.shape[0] or fingerprint(x) != self._fingerprint:
            raise ParameterError(
                f"{type(self).__name__} releases the rows it was fitted on ({self.groups_.shape[0]} rows), and "
                f"these {x.shape[0]} rows are not those rows: microaggregation groups records, it has no map "
                "for new ones. Use fit_transform(X) on the new table."
            )
        out = like_input(frame, {name: self._release[:, j] for j, name in enumerate(names)})
        return self._write_output(restore_kind(out, X), was_array)

    def fit_transform(self, X: DataSource, y: None = None, **fit_params: Any) -> Any:
        """Microaggregate ``X``: ``fit(X)`` then the release of those rows."""
        return self.fit(X).transform(X)


class MDAV(Microaggregation):
    """Microaggregate numeric columns with exact MDAV (maximum distance to average vector).

    Each row becomes the mean of its group of >= k rows (z-scores, squared Euclidean distance);
    ties go to the lowest row index; all groups have k rows except one of k..2k-1.
    IL = 100 * SSE / SST, in percent. Memory O(n p); time O(n^2 p / k) in a compiled kernel.
    The same as ``Microaggregation(method="mdav")``; see :class:`Microaggregation` for the
    parameters and attributes.

    References
    ----------
    .. [1] Domingo-Ferrer, J. and Torra, V. (2005). Ordinal, continuous and heterogeneous
       k-anonymity through microaggregation. Data Min. Knowl. Discov. 11(2).

    Examples
    --------
    >>> import polars as pl
    >>> df = pl.DataFrame({"x": [1.0, 2.0, 3.0, 4.0, 10.0, 11.0, 12.0]})
    >>> m = MDAV(k=3).fit(df)
    >>> m.groups_.tolist(), round(m.information_loss_, 4)
    ([1, 1, 1, 1, 0, 0, 0], 5.3493)
    """

    def __init__(
        self,
        *,
        k: int = 3,
        columns: Sequence[str] | None = None,
        centre: Centre = "mean",
        strata: Sequence[str] | None = None,
        missing: Missing = "error",
        allow_linear_relations: bool = False,
        entity: str | None = None,
    ) -> None:
        self.k = k
        self.columns = columns
        self.centre = centre
        self.strata = strata
        self.missing = missing
        self.allow_linear_relations = allow_linear_relations
        self.entity = entity

    def _method(self) -> str:
        return "mdav"
