"""Risk measures on Dask frames: computed where the rows live, equal to the in-memory results.

Each test counts the rows reaching the driver twice: with an independent counting scheduler
(``dask_driver_rows``, conftest) and with sdckit's own ``driver_rows()``; they must agree, and only
aggregates (one row per missingness pattern, per group, per histogram bin) may arrive.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import polars as pl
import pytest

dd = pytest.importorskip("dask.dataframe", reason="dask[dataframe] is not installed (pip install sdckit[scale])")

from sdckit._scale import driver_rows  # noqa: E402
from sdckit.errors import SdcWarning  # noqa: E402
from sdckit.risk import (  # noqa: E402
    exposure,
    individual_risk,
    l_diversity,
    suda2,
    wildcard_group_sizes,
    with_group_sizes,
    with_individual_risk,
    with_suda2,
    with_wildcard_sizes,
)
from sdckit.risk._counts._wildcard import key_codes, wildcard_weight_sums  # noqa: E402
from sdckit.spectral import NoisyPCA  # noqa: E402

from ._risk_cases import KEYS, blocked_reference, by_id, canonical_groups, risk_table  # noqa: E402
from .conftest import NUMERIC, DriverRows  # noqa: E402

PARTS = 4


@pytest.fixture
def data(table: pl.DataFrame) -> pl.DataFrame:
    return risk_table(table)


def _dask(frame: pl.DataFrame) -> Any:
    return dd.from_pandas(frame.to_pandas(), npartitions=PARTS)


def _back(ddf: Any) -> pl.DataFrame:
    assert isinstance(ddf, dd.DataFrame)  # still a lazy Dask frame
    return pl.from_pandas(ddf.compute())


class _Counted:
    """Rows reaching the driver during the block, by the independent counter and by sdckit."""

    def __init__(self, counter: DriverRows) -> None:
        self.counter = counter

    def __enter__(self) -> _Counted:
        self.start = (self.counter.rows, driver_rows())
        return self

    def __exit__(self, *exc: object) -> None:
        self.independent = self.counter.rows - self.start[0]
        self.sdckit = driver_rows() - self.start[1]


def test_group_and_wildcard_sizes_stay_on_dask(data: pl.DataFrame, dask_driver_rows: DriverRows) -> None:
    ddf = _dask(data)
    with _Counted(dask_driver_rows) as c:
        sizes = with_group_sizes(ddf, KEYS)
        wild = with_wildcard_sizes(ddf, KEYS, weights="w")
    n_patterns = data.select(pl.col("sex").is_null(), pl.col("age_band").is_null()).unique().height
    assert n_patterns == 4
    assert c.independent == c.sdckit == n_patterns + 1  # the patterns and the weight check's one row
    ref_sizes = data.with_columns(pl.len().over(KEYS).alias("r")).sort("id")["r"].to_numpy()
    assert np.array_equal(by_id(_back(sizes), "group_size"), ref_sizes)
    got = _back(wild)
    assert np.array_equal(by_id(got, "wildcard_size"), wildcard_group_sizes(data, KEYS))
    codes, _ = key_codes(data, KEYS)
    np.testing.assert_allclose(by_id(got, "wildcard_weight"), wildcard_weight_sums(codes, data["w"].to_numpy()))
    assert set(got.columns) == {*data.columns, "wildcard_size", "wildcard_weight"}


@pytest.mark.parametrize("missing", ["value", "wildcard"])
def test_individual_risk_column_on_dask(data: pl.DataFrame, dask_driver_rows: DriverRows, missing: str) -> None:
    ddf = _dask(data)
    with _Counted(dask_driver_rows) as c:
        out = with_individual_risk(ddf, KEYS, weights="w", missing=missing)  # type: ignore[arg-type]
    # the patterns (wildcard) and the weight check; weights >= 1 need no F_k >= f_k pass
    assert c.independent == c.sdckit == (4 + 1 if missing == "wildcard" else 1)
    want = individual_risk(data, KEYS, weights="w", missing=missing)  # type: ignore[arg-type]
    got = _back(out)
    np.testing.assert_allclose(by_id(got, "risk_individual"), want.risk, rtol=1e-12)
    assert np.array_equal(by_id(got, "risk_group_size"), want.sample_frequency)
    np.testing.assert_allclose(by_id(got, "risk_population_size"), want.population_frequency, rtol=1e-12)


def test_l_diversity_on_dask_brings_one_row_per_group(data: pl.DataFrame, dask_driver_rows: DriverRows) -> None:
    ddf = _dask(data)
    with _Counted(dask_driver_rows) as c:
        got = l_diversity(ddf, KEYS, ["diagnosis", "age"], c=2.0)
    want = l_diversity(data, KEYS, ["diagnosis", "age"], c=2.0)
    assert c.independent == c.sdckit == want.n_groups  # the group table, nothing else
    assert canonical_groups(got) == canonical_groups(want)
    assert got.n == want.n
    assert got.l == want.l
    assert got.not_diverse(3) == pytest.approx(want.not_diverse(3), abs=1e-15)


def test_suda2_within_blocks_on_dask(data: pl.DataFrame, dask_driver_rows: DriverRows) -> None:
    cols = ["region", "sex", "age_band", "diagnosis"]
    ddf = _dask(data)
    with _Counted(dask_driver_rows) as c:
        out = with_suda2(ddf, cols, block="region")
    # the size histogram on all keys and the DIS normaliser: O(sqrt n) rows, no data row
    assert c.independent == c.sdckit <= 64
    got = _back(out).sort("id")
    ref = blocked_reference(data, cols, "region")
    assert np.array_equal(got["suda_score"].to_numpy(), ref["suda_score"].to_numpy())
    for s in range(1, len(cols) + 1):
        assert np.array_equal(got[f"msu_size_{s}"].to_numpy(), ref[f"msu_size_{s}"].to_numpy())
    exact = suda2(data, cols)
    # the block is a key column: a record is unique on all keys in its block iff in the table, so the
    # records with an MSU are the same; their scores may differ (docs/scale.md measures it on Adult)
    assert np.array_equal(got["suda_score"].to_numpy() > 0, exact.scores > 0)
    differ = float(np.mean(got["suda_score"].to_numpy() != exact.scores))
    assert 0 < differ < 0.05


def test_suda2_with_one_block_is_exact(data: pl.DataFrame) -> None:
    cols = ["region", "sex", "age_band", "diagnosis"]
    one = data.with_columns(pl.lit("all").alias("everything"))
    got = _back(with_suda2(_dask(one), cols, block="everything")).sort("id")
    exact = suda2(data, cols)
    assert np.array_equal(got["suda_score"].to_numpy(), exact.scores)
    np.testing.assert_allclose(got["dis_suda_score"].to_numpy(), exact.dis_scores, rtol=1e-12, atol=1e-15)


def test_noisy_pca_scores_are_a_lazy_column_on_dask(table: pl.DataFrame, dask_driver_rows: DriverRows) -> None:
    pca = NoisyPCA(t=0.1, columns=NUMERIC).fit(table)
    ddf = _dask(table)
    with _Counted(dask_driver_rows) as c:
        out = pca.transform(ddf)
    assert c.independent == c.sdckit == 1  # the missing-cell counts
    got = _back(out).sort("id")
    names = list(pca.get_feature_names_out())
    np.testing.assert_allclose(got.select(names).to_numpy(), pca.transform(table), rtol=1e-10, atol=1e-10)
    assert set(table.columns) <= set(got.columns)


def test_counts_agree_and_whole_table_collects_warn(data: pl.DataFrame, dask_driver_rows: DriverRows) -> None:
    ddf = _dask(data)
    with _Counted(dask_driver_rows) as c:
        assert exposure(ddf, KEYS, k=5) == exposure(data, KEYS, k=5)
    assert c.independent == c.sdckit > 0  # the size histogram
    with _Counted(dask_driver_rows) as c, pytest.warns(SdcWarning, match=f"all {data.height:,} rows"):
        sizes = wildcard_group_sizes(ddf, KEYS)
    assert c.independent == c.sdckit == data.height  # said, and counted
    assert sorted(sizes.tolist()) == sorted(wildcard_group_sizes(data, KEYS).tolist())
