"""Risk measures on Spark (local[2]): computed where the rows live, equal to the in-memory results.

One Spark session for all Spark tests (tests/scale/conftest.py), few tests, ~2,000 rows. Rows reaching the driver are counted by the
patched collect calls (``spark_driver_rows``, conftest) and by sdckit's ``driver_rows()``.
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
from sdckit.risk import (
    individual_risk,
    l_diversity,
    suda2,
    wildcard_group_sizes,
    with_group_sizes,
    with_individual_risk,
    with_suda2,
    with_wildcard_sizes,
)
from sdckit.spectral import NoisyPCA

from ._risk_cases import KEYS, blocked_reference, by_id, canonical_groups, risk_table
from .conftest import NUMERIC, DriverRows, spark_frame

pytestmark = [pytest.mark.slow, pytest.mark.spark]




def _back(sdf: Any) -> pl.DataFrame:
    assert isinstance(sdf, SparkFrame)  # still a lazy Spark frame
    return pl.from_pandas(sdf.toPandas()).sort("id")


def _deltas(counter: DriverRows, start: tuple[int, int]) -> tuple[int, int]:
    return counter.rows - start[0], driver_rows() - start[1]


def test_sizes_and_individual_risk_on_spark(
    spark: SparkSession, table: pl.DataFrame, spark_driver_rows: DriverRows
) -> None:
    data = risk_table(table)
    sdf = spark_frame(spark, data)
    start = (spark_driver_rows.rows, driver_rows())
    sizes = with_group_sizes(sdf, KEYS)
    wild = with_wildcard_sizes(sdf, KEYS)
    risk = with_individual_risk(sdf, KEYS, weights="w", missing="wildcard")
    independent, ours = _deltas(spark_driver_rows, start)
    # two pattern passes (4 rows each) and the weight check (1 row; weights >= 1 need no F_k >= f_k pass)
    assert independent == ours == 4 + 4 + 1
    ref_sizes = data.with_columns(pl.len().over(KEYS).alias("r")).sort("id")["r"].to_numpy()
    assert np.array_equal(by_id(_back(sizes), "group_size"), ref_sizes)
    assert np.array_equal(by_id(_back(wild), "wildcard_size"), wildcard_group_sizes(data, KEYS))
    want = individual_risk(data, KEYS, weights="w", missing="wildcard")
    got = _back(risk)
    np.testing.assert_allclose(got["risk_individual"].to_numpy(), want.risk, rtol=1e-12)
    np.testing.assert_allclose(got["risk_population_size"].to_numpy(), want.population_frequency, rtol=1e-12)


def test_l_diversity_suda2_and_pca_on_spark(
    spark: SparkSession, table: pl.DataFrame, spark_driver_rows: DriverRows
) -> None:
    data = risk_table(table)
    sdf = spark_frame(spark, data)
    start = (spark_driver_rows.rows, driver_rows())
    got = l_diversity(sdf, KEYS, ["diagnosis", "age"])
    want = l_diversity(data, KEYS, ["diagnosis", "age"])
    assert _deltas(spark_driver_rows, start) == (want.n_groups, want.n_groups)  # one row per group
    assert canonical_groups(got) == canonical_groups(want)

    cols = ["region", "sex", "age_band", "diagnosis"]
    start = (spark_driver_rows.rows, driver_rows())
    scored = with_suda2(sdf, cols, block="region")
    independent, ours = _deltas(spark_driver_rows, start)
    assert independent == ours <= 64  # the size histogram and the DIS normaliser
    ref = blocked_reference(data, cols, "region")
    on_spark = _back(scored)
    assert np.array_equal(on_spark["suda_score"].to_numpy(), ref["suda_score"].to_numpy())
    assert float(np.mean(on_spark["suda_score"].to_numpy() != suda2(data, cols).scores)) < 0.05

    pca = NoisyPCA(t=0.1, columns=NUMERIC).fit(table)
    start = (spark_driver_rows.rows, driver_rows())
    out = pca.transform(spark_frame(spark, table))
    assert _deltas(spark_driver_rows, start) == (1, 1)  # the missing-cell counts
    names = list(pca.get_feature_names_out())
    np.testing.assert_allclose(_back(out).select(names).to_numpy(), pca.transform(table), rtol=1e-10, atol=1e-10)
