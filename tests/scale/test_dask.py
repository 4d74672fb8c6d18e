"""Risk and masking on Dask frames: partition by partition, still lazy, equal to polars in memory."""

from __future__ import annotations

from typing import Any

import numpy as np
import polars as pl
import pytest

dd = pytest.importorskip("dask.dataframe", reason="dask[dataframe] is not installed (pip install sdckit[scale])")
import dask  # noqa: E402

from sdckit._scale import driver_rows  # noqa: E402
from sdckit.errors import ParameterError, SdcWarning, TooFewRowsError  # noqa: E402
from sdckit.microagg import (  # noqa: E402
    MDAV,
    Microaggregation,
    MomentRestorer,
    RestoredMicroaggregation,
    distributed_microaggregate,
)
from sdckit.plan import plan_release  # noqa: E402
from sdckit.risk import Marginals, exposure  # noqa: E402
from sdckit.spectral import AdditiveNoise, NoisyPCA  # noqa: E402

from .conftest import NUMERIC  # noqa: E402

PARTS = 5


@pytest.fixture(autouse=True)
def _synchronous() -> Any:
    with dask.config.set(scheduler="synchronous"):  # one thread: the machine is shared
        yield


def _dask(frame: pl.DataFrame, parts: int = PARTS) -> Any:
    return dd.from_pandas(frame.to_pandas(), npartitions=parts)


def _back(ddf: Any) -> pl.DataFrame:
    assert isinstance(ddf, dd.DataFrame)  # still a (lazy) Dask frame
    return pl.from_pandas(ddf.compute()).sort("id")


def test_exposure_and_release_plan_on_dask_equal_polars(table: pl.DataFrame) -> None:
    ddf = _dask(table)
    for cols in (["region", "sex"], ["region", "sex", "age"]):
        assert exposure(ddf, cols, k=5) == exposure(table, cols, k=5)
    on_dask = plan_release(Marginals.from_data(ddf, ["region", "sex", "age"]), k=5, budget=0.05)
    in_memory = plan_release(Marginals.from_data(table, ["region", "sex", "age"]), k=5, budget=0.05)
    assert on_dask.to_dict() == in_memory.to_dict()


def _groups_from_release(frame: pl.DataFrame, keys: list[str]) -> set[frozenset[int]]:
    """The partition of ids into groups: rows of one block sharing every released value."""
    parts: dict[tuple[Any, ...], set[int]] = {}
    for row in frame.iter_rows(named=True):
        key = tuple(row[k] for k in keys) + tuple(round(row[c], 9) for c in NUMERIC)
        parts.setdefault(key, set()).add(row["id"])
    return {frozenset(v) for v in parts.values()}


def test_blocked_mdav_on_dask_is_lazy_and_has_the_in_memory_groups(table: pl.DataFrame) -> None:
    ddf = _dask(table.sample(fraction=1.0, shuffle=True, seed=3))  # rows in another order
    before = driver_rows()
    out = distributed_microaggregate(ddf, k=4, blocks=["region"], columns=NUMERIC)
    came_back = driver_rows() - before
    assert came_back == PARTS + 4  # one moment row per partition, one size per block; no data row
    got = _back(out)
    want = Microaggregation(k=4, method="mdav_blocked", blocks=["region"], columns=NUMERIC).fit_transform(table)
    np.testing.assert_allclose(got.select(NUMERIC).to_numpy(), want.select(NUMERIC).to_numpy(), rtol=1e-12)
    assert got.select("id", "region", "sex").equals(want.select("id", "region", "sex"))
    groups = _groups_from_release(got, ["region"])
    assert groups == _groups_from_release(want, ["region"])
    assert min(len(g) for g in groups) >= 4  # k-anonymous in the microaggregated columns
    # brute force on one block: the same rows through exact MDAV in memory give the same groups
    north = table.filter(pl.col("region") == "north")
    z = (north.select(NUMERIC).to_numpy() - table.select(NUMERIC).to_numpy().mean(0)) / table.select(
        NUMERIC
    ).to_numpy().std(0)
    from sdckit.microagg import block_mdav, mdav_groups

    order = np.lexsort(z.T[::-1])
    ref = np.empty(len(north), dtype=np.int64)
    ref[order] = mdav_groups(np.ascontiguousarray(z[order]), 4, engine="reference")
    ids = north["id"].to_numpy()
    assert {frozenset(ids[ref == g]) for g in np.unique(ref)} == {
        g for g in groups if next(iter(g)) in set(ids)
    }
    assert np.array_equal(block_mdav(z, 4), ref)


def test_estimator_on_dask_stays_lazy(table: pl.DataFrame) -> None:
    ddf = _dask(table)
    est = Microaggregation(k=4, method="mdav_blocked", blocks=["region", "sex"], columns=NUMERIC)
    out = est.fit_transform(ddf)
    want = Microaggregation(k=4, method="mdav_blocked", blocks=["region", "sex"], columns=NUMERIC).fit_transform(table)
    np.testing.assert_allclose(_back(out).select(NUMERIC).to_numpy(), want.select(NUMERIC).to_numpy(), rtol=1e-12)
    assert est.n_blocks_ == 8
    assert list(est.feature_names_in_) == table.columns


def test_exact_mdav_on_dask_is_refused_pointing_to_blocked(table: pl.DataFrame) -> None:
    with pytest.raises(ParameterError, match=r"needs every row in one place.*method='mdav_blocked', blocks="):
        MDAV(k=3).fit(_dask(table))
    with pytest.raises(ParameterError, match="mdav_blocked"):
        Microaggregation(k=3, method="vmdav").fit_transform(_dask(table))
    with pytest.raises(TooFewRowsError, match="fewer than k=3000"):
        distributed_microaggregate(_dask(table), k=3000, blocks=["region"], columns=NUMERIC)


def test_moment_restoration_on_dask_one_pass_moments(table: pl.DataFrame) -> None:
    masked = Microaggregation(k=5, method="mdav_blocked", blocks=["region"], columns=NUMERIC).fit_transform(table)
    on_dask = MomentRestorer(columns=NUMERIC).fit(_dask(table), _dask(masked, 3))
    in_memory = MomentRestorer(columns=NUMERIC).fit(table, masked)
    np.testing.assert_allclose(on_dask.A_, in_memory.A_, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(on_dask.b_, in_memory.b_, rtol=1e-9, atol=1e-9)
    got = _back(on_dask.transform(_dask(masked, 3)))
    want = in_memory.transform(masked)
    np.testing.assert_allclose(got.select(NUMERIC).to_numpy(), want.select(NUMERIC).to_numpy(), rtol=1e-9)
    # the promise, checked independently: the release has the original mean and covariance
    x, y = table.select(NUMERIC).to_numpy(), got.select(NUMERIC).to_numpy()
    np.testing.assert_allclose(y.mean(0), x.mean(0), rtol=1e-9)
    np.testing.assert_allclose(np.cov(y, rowvar=False), np.cov(x, rowvar=False), rtol=1e-8)


def test_restored_microaggregation_on_dask(table: pl.DataFrame) -> None:
    params: dict[str, Any] = {"k": 5, "method": "mdav_blocked", "blocks": ["region"], "columns": NUMERIC}
    got = _back(RestoredMicroaggregation(**params).fit_transform(_dask(table)))
    want = RestoredMicroaggregation(**params).fit_transform(table)
    np.testing.assert_allclose(got.select(NUMERIC).to_numpy(), want.select(NUMERIC).to_numpy(), rtol=1e-8)


def test_additive_noise_on_dask_partition_by_partition(table: pl.DataFrame) -> None:
    ddf = _dask(table)
    out = AdditiveNoise(t=2.0, columns=["income", "hours"], random_state=11).fit_transform(ddf)
    assert isinstance(out, dd.DataFrame)
    got = pl.from_pandas(out.compute())  # partition order is kept by map_partitions
    # polars, partition by partition, with the documented seed of each partition
    sizes = [len(p) for p in ddf.partitions]  # type: ignore[attr-defined]
    starts = np.concatenate([[0], np.cumsum(sizes)])
    pieces = []
    for i in range(PARTS):
        part = table.slice(int(starts[i]), int(sizes[i]))
        rng = np.random.default_rng(np.random.SeedSequence(11, spawn_key=(i, 0)))
        pieces.append(AdditiveNoise(t=2.0, columns=["income", "hours"], random_state=rng).fit_transform(part))
    want = pl.concat(pieces)
    np.testing.assert_allclose(got.select("income", "hours").to_numpy(), want.select("income", "hours").to_numpy())
    assert got.select("id", "age", "score").equals(table.select("id", "age", "score"))
    noise = got["hours"].to_numpy() - table["hours"].to_numpy()
    assert abs(noise.mean()) < 4 * np.sqrt(2.0 / len(table))
    assert abs(noise.var() / 2.0 - 1) < 0.15
    again = pl.from_pandas(AdditiveNoise(t=2.0, columns=["income", "hours"], random_state=11).fit_transform(ddf).compute())
    assert again.equals(got)


def test_noisy_pca_on_dask_matches_polars(table: pl.DataFrame) -> None:
    a = NoisyPCA(t=0.1, columns=NUMERIC).fit(_dask(table))
    b = NoisyPCA(t=0.1, columns=NUMERIC).fit(table)
    np.testing.assert_allclose(a.eigenvalues_, b.eigenvalues_, rtol=1e-9)


def test_polars_lazy_and_duckdb_collect_and_say_so(table: pl.DataFrame) -> None:
    duckdb = pytest.importorskip("duckdb")
    want = MDAV(k=4, columns=NUMERIC).fit_transform(table)
    with pytest.warns(SdcWarning, match="collects the polars LazyFrame"):
        lazy = MDAV(k=4, columns=NUMERIC).fit_transform(table.lazy())
    assert isinstance(lazy, pl.LazyFrame)
    assert lazy.collect().equals(want)
    arrow = table.to_arrow()  # noqa: F841  (duckdb reads the local by name)
    rel = duckdb.sql("select * from arrow")
    with pytest.warns(SdcWarning, match="collects the DuckDB relation"):
        out = MDAV(k=4, columns=NUMERIC).fit_transform(rel)
    assert type(out).__module__.split(".")[0] in ("duckdb", "_duckdb")
    np.testing.assert_allclose(pl.from_arrow(out.arrow()).sort("id").select(NUMERIC).to_numpy(), want.select(NUMERIC).to_numpy())  # type: ignore[union-attr]


def test_blocked_mdav_with_ties_releases_the_same_records() -> None:
    # integer answers with many identical records: exact ties in MDAV; the release is the same set
    # of records (identical records are interchangeable), in memory and on Dask
    rng = np.random.default_rng(5)
    n = 1_500
    frame = pl.DataFrame(
        {"id": np.arange(n), "g": rng.choice(["a", "b", "c"], n), "u": rng.integers(0, 6, n), "v": rng.integers(0, 4, n)}
    )
    cols = ["g", "u", "v"]
    got = _back(distributed_microaggregate(_dask(frame, 4), k=5, blocks=["g"], columns=["u", "v"]))
    want = Microaggregation(k=5, method="mdav_blocked", blocks=["g"], columns=["u", "v"]).fit_transform(frame)
    a, b = got.select(cols).sort(cols), want.select(cols).sort(cols)
    assert a["g"].equals(b["g"])
    np.testing.assert_allclose(a.select("u", "v").to_numpy(), b.select("u", "v").to_numpy(), rtol=1e-12)
    with pytest.raises(TooFewRowsError, match="fewer than k=600"):
        Microaggregation(k=600, method="mdav_blocked", blocks=["g"], columns=["u", "v"]).fit(frame)


def test_positivity_restorer_on_dask_is_refused_naming_the_alternative(table: pl.DataFrame) -> None:
    from sdckit.microagg import PositivityRestorer

    ddf = _dask(table)
    with pytest.raises(ParameterError, match="Use MomentRestorer there"):
        PositivityRestorer(columns=NUMERIC).fit(ddf, ddf)
