"""Per-record risk columns on polars LazyFrames and DuckDB relations equal the in-memory measures."""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import polars as pl
import pytest

from sdckit.errors import InputError, ParameterError, SdcWarning
from sdckit.risk import (
    individual_risk,
    l_diversity,
    wildcard_group_sizes,
    with_group_sizes,
    with_individual_risk,
    with_suda2,
    with_wildcard_sizes,
)
from sdckit.risk._counts._wildcard import key_codes, wildcard_weight_sums

duckdb = pytest.importorskip("duckdb")


@pytest.fixture(scope="module")
def people() -> pl.DataFrame:
    rng = np.random.default_rng(7)
    n = 600
    df = pl.DataFrame(
        {
            "id": np.arange(n),
            "a": rng.choice(["x", "y", "z"], n),
            "b": rng.integers(0, 5, n).astype(float),
            "c": rng.choice([True, False], n),
            "w": rng.uniform(1.0, 9.0, n),
            "s": rng.choice(["p", "q", "r"], n, p=[0.7, 0.2, 0.1]),
        }
    )
    return df.with_columns(
        pl.when(pl.col("id") % 7 == 0).then(None).otherwise(pl.col("a")).alias("a"),
        pl.when(pl.col("id") % 5 == 0).then(float("nan")).otherwise(pl.col("b")).alias("b"),
        pl.when(pl.col("id") % 11 == 0).then(None).otherwise(pl.col("c")).alias("c"),
        pl.when(pl.col("id") == 3).then(None).otherwise(pl.col("s")).alias("s"),
    ).with_columns(  # one record missing every key: it matches everyone
        *[pl.when(pl.col("id") == 1).then(None).otherwise(pl.col(k)).alias(k) for k in ("a", "b", "c")]
    )


KEYS = ["a", "b", "c"]


def _lazy(kind: str, df: pl.DataFrame) -> Any:
    return df.lazy() if kind == "polars" else duckdb.from_arrow(df.to_arrow())


def _eager(out: Any) -> pl.DataFrame:
    frame = out.collect() if isinstance(out, pl.LazyFrame) else out.pl()
    return frame.sort("id")


@pytest.mark.parametrize("kind", ["polars", "duckdb"])
def test_sizes_as_columns_equal_the_in_memory_counts(people: pl.DataFrame, kind: str) -> None:
    wild = with_wildcard_sizes(_lazy(kind, people), KEYS, weights="w")
    assert type(wild) is type(_lazy(kind, people))  # the same lazy kind
    got = _eager(wild)
    assert got["wildcard_size"].to_list() == wildcard_group_sizes(people, KEYS).tolist()
    assert got.filter(pl.col("id") == 1)["wildcard_size"].item() == people.height
    codes, _ = key_codes(people, KEYS)
    np.testing.assert_allclose(got["wildcard_weight"].to_numpy(), wildcard_weight_sums(codes, people["w"].to_numpy()))
    sizes = _eager(with_group_sizes(_lazy(kind, people), KEYS))["group_size"].to_numpy()
    brute = np.array(  # every pair compared: equal values, missing (null or NaN) equal to missing
        [
            sum(
                all((x is None and y is None) or x == y for x, y in zip(r, q, strict=True))
                for q in people.select(KEYS).fill_nan(None).rows()
            )
            for r in people.select(KEYS).fill_nan(None).rows()
        ]
    )
    assert np.array_equal(sizes, brute)


@pytest.mark.parametrize("kind", ["polars", "duckdb"])
@pytest.mark.parametrize("missing", ["value", "wildcard"])
def test_individual_risk_columns(people: pl.DataFrame, kind: str, missing: str) -> None:
    want = individual_risk(people, KEYS, weights="w", missing=missing)  # type: ignore[arg-type]
    got = _eager(with_individual_risk(_lazy(kind, people), KEYS, weights="w", missing=missing))  # type: ignore[arg-type]
    np.testing.assert_allclose(got["risk_individual"].to_numpy(), want.risk, rtol=1e-12)
    assert got["risk_group_size"].to_list() == want.sample_frequency.tolist()
    unweighted = _eager(with_individual_risk(_lazy(kind, people), KEYS, weights=None, missing=missing))  # type: ignore[arg-type]
    np.testing.assert_allclose(unweighted["risk_individual"].to_numpy(), 1.0 / unweighted["risk_group_size"].to_numpy())


def test_l_diversity_on_lazy_frames_equals_memory(people: pl.DataFrame) -> None:
    want = l_diversity(people, ["a", "c"], ["s", "b"], c=1.5)
    for lazy in (people.lazy(), duckdb.from_arrow(people.to_arrow())):
        got = l_diversity(lazy, ["a", "c"], ["s", "b"], c=1.5)
        assert got.n == want.n
        assert got.n_groups == want.n_groups
        for s in ("s", "b"):
            pairs = sorted(
                zip(got.group_sizes, got[s].distinct, got[s].recursive_l, np.round(got[s].entropy_l, 9), strict=True)
            )
            ref = sorted(
                zip(want.group_sizes, want[s].distinct, want[s].recursive_l, np.round(want[s].entropy_l, 9), strict=True)
            )
            assert pairs == ref
    with pytest.warns(SdcWarning, match=f"t_closeness needs the rows in memory: all {people.height} rows"):
        closed = l_diversity(people.lazy(), ["a", "c"], ["s"], t_closeness=True)
    assert closed["s"].t == l_diversity(people, ["a", "c"], ["s"], t_closeness=True)["s"].t


def test_lazy_only_and_clear_errors(people: pl.DataFrame) -> None:
    with pytest.raises(ParameterError, match="lazy frame"):
        with_wildcard_sizes(people, KEYS)
    with pytest.raises(ParameterError, match="already has a column 'w'"):
        with_group_sizes(people.lazy(), KEYS, name="w")
    with pytest.raises(ParameterError, match="missing="):
        with_individual_risk(people.lazy(), KEYS, weights=None, missing="drop")  # type: ignore[arg-type]
    with pytest.warns(SdcWarning, match=f"all {people.height} rows"):
        wildcard_group_sizes(people.lazy(), KEYS)
    halves = people.with_columns(pl.lit(0.5).alias("w")).lazy()  # F_k = f_k / 2 < f_k: not sampling weights
    with pytest.raises(InputError, match="fewer units than its sample"):
        with_individual_risk(halves, KEYS, weights="w")
    empty = with_wildcard_sizes(people.lazy().filter(pl.col("id") < 0), KEYS).collect()
    assert empty.height == 0
    assert "wildcard_size" in empty.columns


def test_suda2_blocks_on_a_polars_lazy_frame_warn_and_stay_lazy(people: pl.DataFrame) -> None:
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        out = with_suda2(people.lazy(), ["a", "c", "s"], block="c")
    assert isinstance(out, pl.LazyFrame)
    assert any("collects the 600 rows" in str(w.message) for w in seen)
    assert {"suda_score", "dis_suda_score", "min_msu_size", "msu_size_3"} <= set(out.collect_schema().names())


def test_noisy_pca_scores_on_a_polars_lazy_frame() -> None:
    from sdckit.spectral import NoisyPCA

    rng = np.random.default_rng(3)
    X = rng.normal(size=(300, 4)) @ rng.normal(size=(4, 4))
    df = pl.DataFrame({f"x{j}": X[:, j] for j in range(4)})
    pca = NoisyPCA(t=0.1).fit(df)
    out = pca.transform(df.lazy())
    assert isinstance(out, pl.LazyFrame)
    names = list(pca.get_feature_names_out())
    got = out.collect()
    assert got.columns == [*df.columns, *names]
    np.testing.assert_allclose(got.select(names).to_numpy(), X @ pca.components_[: len(names)].T, rtol=1e-10)
    with pytest.raises(ParameterError, match="set_output"):
        pca.set_output(transform="polars").transform(df.lazy())
