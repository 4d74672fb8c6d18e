"""Shared data of the distributed-frame tests: a seeded table with block keys and numeric columns."""

from __future__ import annotations

import warnings
from collections.abc import Iterator

import numpy as np
import polars as pl
import pytest

N = 2_000


@pytest.fixture(scope="session")
def table() -> pl.DataFrame:
    rng = np.random.default_rng(20261201)
    return pl.DataFrame(
        {
            "id": np.arange(N),
            "region": rng.choice(["north", "south", "east", "west"], N),
            "sex": rng.choice(["f", "m"], N),
            "age": rng.integers(18, 90, N),
            "income": rng.lognormal(10, 0.7, N),
            "hours": rng.normal(38, 8, N),
            "score": rng.gamma(2.0, 3.0, N),
        }
    )


@pytest.fixture(autouse=True)
def _quiet_narwhals() -> None:
    # narwhals announces that its Dask support moves to a separate package; not our warning
    warnings.filterwarnings("ignore", message=".*narwhals-dask.*", category=FutureWarning)


NUMERIC = ["age", "income", "hours", "score"]


@pytest.fixture(scope="session")
def spark() -> Iterator[object]:
    """One local[2] Spark session for every Spark test of a worker: starting Spark costs ~20 s.
    The Spark modules skip themselves (naming why) without PySpark or Java before asking for it."""
    from sdckit._scale import local_spark

    session = local_spark("sdckit-tests", cores=2)
    yield session
    session.stop()


def spark_frame(spark: object, frame: pl.DataFrame, parts: int = 3) -> object:
    """``frame`` as a Spark DataFrame in ``parts`` partitions."""
    return spark.createDataFrame(frame.to_pandas()).repartition(parts)  # type: ignore[attr-defined]


def people_table(n: int, seed: int) -> pl.DataFrame:
    """Keys with small groups (age in 4-year bands), missing region cells, and a non-key payload."""
    rng = np.random.default_rng(seed)
    region = rng.choice(["north", "south", "east", "west"], n).astype(object)
    region[rng.random(n) < 0.03] = None
    return pl.DataFrame(
        {
            "id": np.arange(n),
            "region": region,
            "sex": rng.choice(["f", "m"], n),
            "band": rng.integers(18, 90, n) // 4,
            "hours": rng.normal(38, 8, n),
        },
        schema_overrides={"region": pl.String},
    )


# --- Independent counters of the rows that reach the driver (not sdckit's own driver_rows()) -------


def _rows_in(value: object) -> int:
    """Rows in one object a scheduler or collect call hands back to the driver."""
    import numpy as _np

    if isinstance(value, tuple) and hasattr(value, "asDict"):  # a pyspark Row
        return 1
    num_rows = getattr(value, "num_rows", None)  # an Arrow table or record batch
    if isinstance(num_rows, int):
        return num_rows
    if isinstance(value, (list, tuple)):
        return sum(_rows_in(v) for v in value)
    if isinstance(value, dict):
        return sum(_rows_in(v) for v in value.values())
    shape = getattr(value, "shape", None)
    if shape is not None and not isinstance(value, _np.generic):
        return int(shape[0]) if len(shape) else 1
    return 1


class DriverRows:
    """Rows handed to the driver while the context is active, counted at the engine's boundary.

    * Dask: a scheduler ``get`` that wraps the synchronous scheduler and counts the rows of every
      result it returns to the caller (a DataFrame or array by its length, a scalar as one row);
    * Spark: ``DataFrame.collect``/``toPandas``/``toLocalIterator``/``take`` and ``RDD.collect``
      patched at class level to count what they return (an outer call only: ``toPandas`` calling
      ``collect`` counts once).
    """

    def __init__(self) -> None:
        self.rows = 0
        self.calls = 0

    def _add(self, value: object) -> None:
        self.calls += 1
        self.rows += _rows_in(value)


@pytest.fixture
def dask_driver_rows() -> Iterator[DriverRows]:
    dask = pytest.importorskip("dask")
    from dask.local import get_sync

    counter = DriverRows()

    def counting_get(dsk: object, keys: object, **kwargs: object) -> object:
        result = get_sync(dsk, keys, **kwargs)
        counter._add(result)
        return result

    with dask.config.set(scheduler=counting_get):
        yield counter


@pytest.fixture
def spark_driver_rows() -> Iterator[DriverRows]:
    pytest.importorskip("pyspark")
    from pyspark.rdd import RDD
    from pyspark.sql import DataFrame as SparkFrame

    counter = DriverRows()
    depth = [0]
    patched: list[tuple[type, str, object]] = []

    def wrap(cls: type, name: str) -> None:
        original = getattr(cls, name)

        def counting(self: object, *args: object, **kwargs: object) -> object:
            depth[0] += 1
            try:
                result = original(self, *args, **kwargs)
            finally:
                depth[0] -= 1
            if depth[0] == 0:
                if name == "toLocalIterator":
                    result = list(result)  # type: ignore[call-overload]
                counter._add(result)
            return result

        patched.append((cls, name, original))
        setattr(cls, name, counting)

    classes: list[type] = [SparkFrame]
    try:  # Spark 4: the classic implementation overrides the abstract DataFrame's methods
        from pyspark.sql.classic.dataframe import DataFrame as ClassicFrame

        classes = list(ClassicFrame.__mro__)
    except ImportError:
        classes = list(SparkFrame.__mro__)
    for cls in classes:
        for name in ("collect", "toPandas", "toLocalIterator", "take", "tail", "_collect_as_arrow"):
            if name in vars(cls):
                wrap(cls, name)
    wrap(RDD, "collect")
    try:
        yield counter
    finally:
        for cls, name, original in patched:
            setattr(cls, name, original)
