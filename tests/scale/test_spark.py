"""Risk and masking on Spark (local[2]): partition by partition, still distributed, equal to polars.

One Spark session for all of them (tests/scale/conftest.py) and few tests: starting Spark costs ~20 s.
"""

from __future__ import annotations

import shutil
from typing import Any

import numpy as np
import polars as pl
import pytest

pytest.importorskip("pyspark", reason="pyspark is not installed (pip install sdckit[scale])")
if shutil.which("java") is None:
    pytest.skip("Java not found: PySpark needs it (apt-get install default-jre-headless; .ci/run does)",
                allow_module_level=True)

from pyspark.sql import DataFrame as SparkFrame
from pyspark.sql import SparkSession

from sdckit._scale import driver_rows
from sdckit.errors import ParameterError
from sdckit.microagg import MDAV, Microaggregation, MomentRestorer, distributed_microaggregate
from sdckit.plan import plan_release
from sdckit.risk import Marginals, exposure
from sdckit.spectral import AdditiveNoise

from .conftest import NUMERIC, spark_frame

pytestmark = [pytest.mark.slow, pytest.mark.spark]




def _back(sdf: Any) -> pl.DataFrame:
    assert isinstance(sdf, SparkFrame)  # still a (lazy) Spark frame
    return pl.from_pandas(sdf.toPandas()).sort("id")


def test_exposure_and_release_plan_on_spark_equal_polars(spark: SparkSession, table: pl.DataFrame) -> None:
    sdf = spark_frame(spark, table)
    assert exposure(sdf, ["region", "sex", "age"], k=5) == exposure(table, ["region", "sex", "age"], k=5)
    on_spark = plan_release(Marginals.from_data(sdf, ["region", "sex", "age"]), k=5, budget=0.05)
    in_memory = plan_release(Marginals.from_data(table, ["region", "sex", "age"]), k=5, budget=0.05)
    assert on_spark.to_dict() == in_memory.to_dict()


def test_blocked_mdav_and_moment_restoration_on_spark(spark: SparkSession, table: pl.DataFrame) -> None:
    sdf = spark_frame(spark, table)
    with pytest.raises(ParameterError, match="mdav_blocked"):
        MDAV(k=3).fit(sdf)
    before = driver_rows()
    masked = distributed_microaggregate(sdf, k=4, blocks=["region", "sex"], columns=NUMERIC)
    assert driver_rows() - before == 3 + 8  # moment rows per partition, sizes per block: no data row
    got = _back(masked)
    want = Microaggregation(k=4, method="mdav_blocked", blocks=["region", "sex"], columns=NUMERIC).fit_transform(
        table
    )
    np.testing.assert_allclose(got.select(NUMERIC).to_numpy(), want.select(NUMERIC).to_numpy(), rtol=1e-12)
    restorer = MomentRestorer(columns=NUMERIC).fit(sdf, masked)
    reference = MomentRestorer(columns=NUMERIC).fit(table, want)
    np.testing.assert_allclose(restorer.A_, reference.A_, rtol=1e-9, atol=1e-12)
    restored = _back(restorer.transform(masked))
    np.testing.assert_allclose(
        restored.select(NUMERIC).to_numpy(), reference.transform(want).select(NUMERIC).to_numpy(), rtol=1e-9
    )


def test_additive_noise_on_spark(spark: SparkSession, table: pl.DataFrame) -> None:
    sdf = spark_frame(spark, table)
    est = AdditiveNoise(t=2.0, columns=["hours"], random_state=5)
    out = est.fit_transform(sdf)
    got, again = _back(out), _back(est.transform(sdf))
    assert got.equals(again)  # reproducible with a fixed random_state (tests only)
    assert got.drop("hours").equals(table.drop("hours"))
    noise = got["hours"].to_numpy() - table["hours"].to_numpy()
    assert abs(noise.mean()) < 4 * np.sqrt(2.0 / len(table))
    assert abs(noise.var() / 2.0 - 1) < 0.15
