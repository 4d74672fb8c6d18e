"""Local suppression and the release pipeline on Spark (local[2]): the in-memory guarantee, Parquet
part files written by the workers, only group tables at the driver (collect calls counted by
patching Spark, not by sdckit). One Spark session for all Spark tests (tests/scale/conftest.py)."""

from __future__ import annotations

import shutil
from pathlib import Path
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

from sdckit.anonymize import LocalSuppressor
from sdckit.errors import ConfigError
from sdckit.pipeline import parse_config, run_distributed, write_distributed

from .conftest import people_table, spark_frame

pytestmark = [pytest.mark.slow, pytest.mark.spark]

KEYS = ["region", "sex", "band"]
K = 8



@pytest.fixture(scope="module")
def people() -> pl.DataFrame:
    return people_table(1_500, 20261203)



def _release_groups(frame: pl.DataFrame) -> pl.DataFrame:
    return frame.group_by(KEYS).len().sort(KEYS, nulls_last=True)


def test_suppression_on_spark_equals_the_in_memory_release(
    spark: SparkSession, people: pl.DataFrame, spark_driver_rows: Any
) -> None:
    in_memory = LocalSuppressor(k=K, columns=KEYS, random_state=11)
    here = in_memory.fit_transform(people)
    n_groups = people.group_by(KEYS).len().height  # counted by polars
    sdf = spark_frame(spark, people)
    model = LocalSuppressor(k=K, columns=KEYS, random_state=11).fit(sdf)
    out = model.transform(sdf)
    assert isinstance(out, SparkFrame)  # still lazy
    assert spark_driver_rows.rows == n_groups  # the group table; the verifying pass found no small group
    assert model.n_passes_ == 2
    released = pl.from_pandas(out.toPandas()).with_columns(pl.col("band").cast(pl.Int64))
    assert _release_groups(released)["len"].min() >= K
    assert _release_groups(released).equals(_release_groups(here))  # the in-memory release's groups
    joined = people.join(released, on="id", suffix="_r")
    assert joined.height == people.height == released.height
    assert np.allclose(joined["hours"].to_numpy(), joined["hours_r"].to_numpy())
    lost = 0
    for c in KEYS:
        kept = joined[f"{c}_r"].is_not_null()
        assert (joined.filter(kept)[c] == joined.filter(kept)[f"{c}_r"]).all()  # a cell kept is its own value
        lost += int((joined[c].is_not_null() & ~kept).sum())
    assert lost == model.n_suppressed_ == in_memory.n_suppressed_ > 0


def test_pipeline_on_spark_writes_parquet_parts(
    spark: SparkSession, people: pl.DataFrame, tmp_path: Path, spark_driver_rows: Any
) -> None:
    cfg = parse_config(
        {
            "quasi_identifiers": KEYS, "keep": ["hours", "id"], "k": K, "budget": 0.0,
            "steps": [{"local_suppression": {}}],
            "output": {"data": str(tmp_path / "release.parquet"), "report": None},
        }
    )
    result = run_distributed(cfg, spark_frame(spark, people))
    # on data this small, adaptive execution would coalesce the sorted output into one partition
    spark.conf.set("spark.sql.adaptive.coalescePartitions.enabled", "false")
    try:
        written = write_distributed(result)
    finally:
        spark.conf.unset("spark.sql.adaptive.coalescePartitions.enabled")
    assert not written.refused
    assert written.path is not None
    assert len(written.files) > 1  # part files, written by the workers
    back = pl.read_parquet(written.path / "*.parquet")  # an independent read
    sizes = back.group_by(KEYS).len()
    assert written.measure["n_rows"] == back.height == people.height
    assert written.measure["k_anonymity"] == sizes["len"].min() >= K
    assert sorted(back["id"].to_list()) == list(range(people.height))
    assert not back["id"].equals(pl.Series("id", np.arange(people.height)))  # shuffled
    # the group table, the (empty) table of small groups, the written release's two rows of figures
    # (measured by Spark reading the part files back), and the linked-column search's one-row
    # aggregates (the entropy of each key, each keep column and each pair): never a data row
    searched = len(KEYS) + len(cfg.keep or ()) + len(KEYS) * len(cfg.keep or ())
    assert spark_driver_rows.rows == people.group_by(KEYS).len().height + 2 + searched
    with pytest.raises(ConfigError, match=r"steps\[0\]\.noise does not run on a spark frame.*AdditiveNoise"):
        run_distributed(cfg.replace(steps=parse_config({"steps": [{"noise": {"t": 1.0}}]}).steps), spark_frame(spark, people))
