"""Masking methods on Spark (local[2]): fitted from aggregates, transformed lazily, equal to memory.

One Spark session for all of them (tests/scale/conftest.py) and few tests: starting Spark costs ~20 s. The rows
reaching the driver are counted by the conftest's patched collect calls, not by sdckit.
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

from sdckit.anonymize import PRAM, GlobalRecoder, TopBottomCoder
from sdckit.plan import plan_release
from sdckit.risk import Marginals

from .conftest import DriverRows, spark_frame
from .test_mask_dask import HIERARCHIES, RULES, _adult, _pram_table, _same_cells, transition_pvalue

pytestmark = [pytest.mark.slow, pytest.mark.spark]
PARTS = 3




def _back(sdf: Any, key: str = "id") -> pl.DataFrame:
    assert isinstance(sdf, SparkFrame)  # still a (lazy) Spark frame
    return pl.from_pandas(sdf.toPandas()).sort(key)


def test_recoding_and_top_coding_on_spark_equal_memory(
    spark: SparkSession, table: pl.DataFrame, spark_driver_rows: DriverRows
) -> None:
    sdf = spark_frame(spark, table, PARTS)
    rec = GlobalRecoder(rules=RULES).fit(sdf)
    out = rec.transform(sdf)
    coder = TopBottomCoder(columns=["age", "income"], top_quantile=0.95, bottom={"income": 15_000.0}).fit(sdf)
    coded = coder.transform(sdf)
    distinct = table["age"].n_unique()
    # value counts of age (quantile bins, then the top quantile), summary rows, region's 4 values twice
    assert distinct <= spark_driver_rows.rows <= 2 * distinct + table["income"].n_unique() + 2 * 4 + 8
    memory = GlobalRecoder(rules=RULES).fit(table)
    assert rec.rules_ == memory.rules_
    assert rec.changes_ == memory.changes_
    _same_cells(_back(out), memory.transform(table).sort("id"), list(RULES))
    top_memory = TopBottomCoder(columns=["age", "income"], top_quantile=0.95, bottom={"income": 15_000.0}).fit(table)
    assert coder.thresholds_ == top_memory.thresholds_
    assert coder.changes_ == top_memory.changes_
    _same_cells(_back(coded), top_memory.transform(table).sort("id"), ["age", "income"])


def test_pram_on_spark_follows_the_matrix(spark: SparkSession, spark_driver_rows: DriverRows) -> None:
    frame = _pram_table()
    sdf = spark_frame(spark, frame, PARTS)
    pram = PRAM(columns=["region", "kids"], pd=0.6, random_state=2026)
    out = pram.fit_transform(sdf)
    assert isinstance(out, SparkFrame)
    m = {c: frame[c].n_unique() for c in pram.columns_}
    assert spark_driver_rows.rows <= sum(m.values()) + PARTS * sum(v * v for v in m.values())
    memory = PRAM(columns=["region", "kids"], pd=0.6, random_state=2026).fit(frame)
    released = _back(out)
    for c in pram.columns_:
        values, P = memory.transition_[c]
        assert pram.transition_[c][0] == values
        np.testing.assert_allclose(pram.transition_[c][1], P, rtol=0, atol=1e-15)
        assert transition_pvalue(frame[c].to_list(), released[c].to_list(), values, P) > 1e-3
        assert pram.changes_[c]["cells_changed"] == int((released[c] != frame[c]).sum())
    assert _back(pram.transform(sdf)).equals(released)  # a seed: the same draw per partition and batch
    fresh = PRAM(columns=["region"], pd=0.5).fit(sdf)
    assert not _back(fresh.transform(sdf)).equals(_back(fresh.transform(sdf)))  # OS entropy by default


def test_release_plan_on_spark(spark: SparkSession, spark_driver_rows: DriverRows) -> None:
    adult = _adult().with_row_index("id")
    cols = ["age", "sex", "race", "native-country"]
    marginals = Marginals.from_data(adult, cols)
    sdf = spark_frame(spark, adult, PARTS)
    plan = plan_release(marginals, k=5, budget=0.02, hierarchies=HIERARCHIES, data=sdf)
    memory = plan_release(marginals, k=5, budget=0.02, hierarchies=HIERARCHIES, data=adult)
    assert plan.to_dict() == memory.to_dict()
    distinct = sum(adult[c].n_unique() for c in cols)
    assert spark_driver_rows.rows <= plan.n_evaluated * int(np.sqrt(2 * len(adult))) + distinct + 1
    out = plan.apply(sdf)
    assert isinstance(out, SparkFrame)
    assert _back(out).equals(memory.apply(adult).sort("id"))
