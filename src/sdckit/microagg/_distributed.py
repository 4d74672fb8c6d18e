"""Blocked MDAV and moment restoration on Dask and Spark frames, partition by partition.

Rows never come to the driver: only the moments (one pass: count, mean, scatter per partition)
and the size of each block do. The result is a frame of the same kind, still lazy.

With the same blocks, the groups are those of the in-memory
``Microaggregation(method="mdav_blocked", blocks=...)``: the z-scores use the global mean and
population sd, and each block's rows are put in the lexicographic order of their values before
MDAV runs (:func:`sdckit.microagg.block_mdav`), so the order in which a partition holds them does
not matter.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from sdckit._checks import group_size
from sdckit._io import DataSource, as_narwhals, check_columns
from sdckit._scale import block_sizes, column_moments, map_blocks, map_partitions, numeric_dtypes
from sdckit._scale._engines import _as_float
from sdckit.errors import MissingValuesError, NonNumericColumnError, ParameterError, TooFewRowsError
from sdckit.microagg._base import Centre
from sdckit.microagg._groups import block_mdav, group_centres, snapped_scale

Moments = tuple[int, NDArray[np.float64], NDArray[np.float64]]
"""(n, mean vector, covariance with ddof=1)."""


def _names(X: DataSource, columns: Sequence[str] | str | None) -> list[str]:
    return check_columns(as_narwhals(X), columns)


def distributed_moments(X: DataSource, columns: Sequence[str] | str | None) -> tuple[Moments, tuple[str, ...]]:
    """Count, mean and covariance (ddof=1) of numeric ``columns`` of a Dask or Spark frame, one pass.

    Non-numeric columns (read off the schema) and missing cells raise, naming the column.
    """
    names = _names(X, columns)
    for name, ok in numeric_dtypes(X, names).items():
        if not ok:
            raise NonNumericColumnError(name, f"<{as_narwhals(X).collect_schema()[name]} column>")
    n, mean, cov, nulls = column_moments(X, names)
    if nulls.any():
        j = int(np.argmax(nulls > 0))
        raise MissingValuesError(
            names[j], int(nulls[j]), None,
            fix="Impute them or filter those rows on the cluster first (e.g. df.dropna()).",
        )
    if n < 2:
        raise TooFewRowsError(f"need at least 2 rows; the table has {n} (n_samples = {n}).")
    return (n, mean, cov), tuple(names)


def distributed_linear_map(
    X: DataSource, columns: Sequence[str], A: NDArray[np.float64], b: NDArray[np.float64]
) -> Any:
    """``y = A x + b`` on ``columns`` of each row, partition by partition; a lazy frame of X's kind."""
    cols = list(columns)

    def apply(pdf: Any, _key: tuple[int, int]) -> Any:
        y = _as_float(pdf, cols) @ A.T + b
        out = pdf.copy()
        for j, c in enumerate(cols):
            out[c] = y[:, j]
        return out

    return map_partitions(X, apply, floats=cols)


class BlockedPlan:
    """What blocked MDAV needs from the driver: the columns, the global mean and population sd."""

    def __init__(
        self, columns: tuple[str, ...], keys: tuple[str, ...], mean: NDArray[np.float64], sd: NDArray[np.float64],
        n_blocks: int,
    ) -> None:
        self.columns = columns
        self.keys = keys
        self.mean = mean
        self.sd = sd
        self.n_blocks = n_blocks


def plan_blocked(
    X: DataSource, *, k: int, blocks: Sequence[str] | str, columns: Sequence[str] | str | None = None
) -> BlockedPlan:
    """Validate and measure: the moments in one pass, the size of every block (each >= k)."""
    k = group_size(k)
    keys = _names(X, blocks)
    names = [c for c in _names(X, columns) if c not in keys]
    if not names:
        raise ParameterError(f"no column left to microaggregate: columns={columns!r} are all block keys {keys}.")
    (n, mean, cov), _ = distributed_moments(X, names)
    sd = np.sqrt(np.clip(np.diag(cov) * (n - 1) / n, 0.0, None))  # population sd, as in memory
    mean, sd = snapped_scale(mean, sd)
    sizes = block_sizes(X, keys)
    small = sorted(((s, key) for key, s in sizes.items() if s < k), key=lambda t: t[0])
    if small:
        size, key = small[0]
        raise TooFewRowsError(
            f"block {dict(zip(keys, key, strict=True))} has {size} rows, fewer than k={k} ({len(small)} such "
            "block(s)). Use coarser block keys or lower k."
        )
    return BlockedPlan(tuple(names), tuple(keys), mean, sd, len(sizes))


def apply_blocked(X: DataSource, plan: BlockedPlan, *, k: int, centre: Centre = "mean") -> Any:
    """MDAV in every block with the plan's standardisation; a lazy frame of X's kind."""
    cols = list(plan.columns)
    mean, sd = plan.mean, plan.sd

    def block(pdf: Any) -> Any:
        x = _as_float(pdf, cols)
        groups = block_mdav((x - mean) / sd, k)
        centres = group_centres(x, groups, centre)
        out = pdf.copy()
        for j, c in enumerate(cols):
            out[c] = centres[:, j]
        return out

    return map_blocks(X, plan.keys, block, floats=cols)


def distributed_microaggregate(
    X: DataSource,
    *,
    k: int = 3,
    blocks: Sequence[str] | str,
    columns: Sequence[str] | str | None = None,
    centre: Centre = "mean",
) -> Any:
    """Blocked MDAV on a Dask or Spark frame: each block (rows sharing ``blocks``) is microaggregated
    where it lives; every value becomes its group's centre, groups of >= k rows inside a block.

    Parameters
    ----------
    X : a Dask or PySpark DataFrame.
    k : smallest group size. blocks : the key columns; every combination of their values is one
        block (>= k rows each). columns : numeric columns to microaggregate (default: all but the
        keys). centre : ``"mean"`` or ``"median"``.

    Returns
    -------
    A frame of the same kind, lazy: nothing runs until it is computed or written. Row order is
    that of the blocks (Dask shuffles, Spark groups), so carry an id column to join back.

    Notes
    -----
    Two passes reach the driver: the moments (one row per partition) and the block sizes (one value
    per block). The groups equal those of ``Microaggregation(method="mdav_blocked", blocks=blocks)``
    on the same rows in memory.
    """
    plan = plan_blocked(X, k=k, blocks=blocks, columns=columns)
    return apply_blocked(X, plan, k=group_size(k), centre=centre)
