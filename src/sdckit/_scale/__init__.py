"""Running numeric masking where the rows live: Dask and Spark frames, partition by partition.

Three primitives, each returning a frame of the same kind that is still lazy, or a handful of
aggregates; rows never come to the driver:

* :func:`column_moments`: count, mean vector and covariance of numeric columns in one pass
  (per-partition count, mean and scatter, merged on the driver with Chan's pairwise formula;
  one small row per partition reaches it);
* :func:`map_blocks`: a pandas function applied to every block (the rows sharing the values of the
  key columns), Dask ``shuffle`` + ``map_partitions``, Spark ``groupBy(...).applyInPandas``;
* :func:`map_partitions`: a pandas function applied to every partition with the partition's
  number (Dask ``map_partitions``, Spark ``mapInPandas``).

:func:`engine_of` tells which engine a frame belongs to; :func:`collect_if_lazy` collects a polars
LazyFrame or DuckDB relation (with a warning that says so) where a method needs the rows in memory,
and :func:`restore_kind` gives the result back as the same lazy kind.
"""

from sdckit._scale._collect import collect_all, collect_small, count_driver_rows
from sdckit._scale._engines import (
    Engine,
    block_sizes,
    column_moments,
    driver_rows,
    engine_of,
    local_spark,
    map_blocks,
    map_partitions,
    null_counts,
    numeric_dtypes,
)
from sdckit._scale._lazy import collect_if_lazy, is_distributed, restore_kind

__all__ = [
    "Engine",
    "block_sizes",
    "collect_all",
    "collect_if_lazy",
    "collect_small",
    "column_moments",
    "count_driver_rows",
    "driver_rows",
    "engine_of",
    "is_distributed",
    "local_spark",
    "map_blocks",
    "map_partitions",
    "null_counts",
    "numeric_dtypes",
    "restore_kind",
]
