"""MDAV and the microaggregation family: published values, invariants, kernel vs reference."""

from __future__ import annotations

import numpy as np
import pandas as pd
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numpy.testing import assert_allclose, assert_array_equal

from sdckit.errors import (
    ColumnNotFoundError,
    MissingValuesError,
    NonNumericColumnError,
    NotFittedError,
    ParameterError,
    TooFewRowsError,
)
from sdckit.microagg import (
    MDAV,
    Microaggregation,
    blocked_mdav_groups,
    information_loss,
    mdav_groups,
    standardize,
)
from sdckit.microagg._groups import group_centres, kd_blocks, sorted_groups, vmdav_groups
from sdckit.microagg._reference import mdav_reference


def partition(groups: np.ndarray) -> set[frozenset[int]]:
    """The groups as a set of row sets (ids are arbitrary labels)."""
    return {frozenset(np.flatnonzero(groups == g).tolist()) for g in np.unique(groups)}


def sse_sst(z: np.ndarray, groups: np.ndarray) -> float:
    """Independent IL: within-group SSE over SST, by explicit loops over groups."""
    sse = sum(((z[groups == g] - z[groups == g].mean(axis=0)) ** 2).sum() for g in np.unique(groups))
    return 100 * sse / ((z - z.mean(axis=0)) ** 2).sum()


# sdcMicro 5.8.1 microaggregation(method="mdav") on CASCrefmicrodata, SSE/SST on z-scores; equal
# to the MDAV rows quoted since Domingo-Ferrer et al., VLDB J. 15(4), 2006 (microaggregation notes §1).
@pytest.mark.parametrize(("k", "il"), [(3, 5.6922), (5, 9.0884), (10, 14.1559)])
def test_census_information_loss_matches_published(
    census: pl.DataFrame, census_x: np.ndarray, k: int, il: float
) -> None:
    model = MDAV(k=k).fit(census)
    assert round(model.information_loss_, 4) == il
    assert round(sse_sst(standardize(census_x), model.groups_), 4) == il


@pytest.mark.parametrize("k", [3, 5, 10])
def test_census_group_sizes(census: pl.DataFrame, k: int) -> None:
    sizes = np.bincount(MDAV(k=k).fit(census).groups_)
    assert sizes.min() >= k
    assert (sizes > k).sum() <= 1
    assert sizes.max() <= 2 * k - 1


@pytest.mark.parametrize("k", [3, 5])
def test_census_kernel_equals_reference(census_x: np.ndarray, k: int) -> None:
    z = standardize(census_x)
    assert_array_equal(mdav_groups(z, k), mdav_reference(z, k))


def test_hand_worked_example() -> None:
    # n = 7 < 3k = 9, so 2k <= 7 <= 3k - 1: xr = 12 (farthest from the mean 6.14), its 2 nearest
    # 11 and 10 form group 0, the rest {1, 2, 3, 4} group 1 (microaggregation notes §1, by hand).
    x = np.array([[1.0], [2.0], [3.0], [4.0], [10.0], [11.0], [12.0]])
    assert mdav_groups(standardize(x), 3).tolist() == [1, 1, 1, 1, 0, 0, 0]
    # SSE = 2 + 5 = 7, SST = 395 - 43^2 / 7 = 130.857..., IL = 700 / 130.857 = 5.3493 %
    assert_allclose(
        information_loss(x, group_centres(x, mdav_groups(standardize(x), 3))), 700 / (395 - 43**2 / 7)
    )


@settings(max_examples=40, deadline=None)
@given(
    n=st.integers(1, 120),
    p=st.integers(1, 5),
    k=st.integers(1, 8),
    seed=st.integers(0, 2**32 - 1),
    integer=st.booleans(),
)
def test_kernel_equals_reference_and_sizes(n: int, p: int, k: int, seed: int, integer: bool) -> None:
    rng = np.random.default_rng(seed)
    x = rng.integers(0, 4, (n, p)).astype(float) if integer else rng.standard_normal((n, p))  # ties or none
    if n < k:
        return
    z = standardize(x)
    g = mdav_groups(z, k)
    assert_array_equal(g, mdav_reference(z, k))
    sizes = np.bincount(g)
    assert sizes.sum() == n
    assert sizes.min() >= k
    assert (sizes > k).sum() <= 1
    assert sizes.max() <= max(2 * k - 1, k)


@settings(max_examples=15, deadline=None)
@given(n=st.integers(10, 200), k=st.integers(2, 6), seed=st.integers(0, 2**32 - 1))
def test_row_permutation_invariance(n: int, k: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, 3))  # continuous: no ties, so the order of rows cannot matter
    perm = rng.permutation(n)
    g = mdav_groups(standardize(x), k)
    gp = mdav_groups(standardize(x[perm]), k)
    assert partition(g) == {frozenset(int(perm[i]) for i in s) for s in partition(gp)}


def test_census_permutation_keeps_information_loss(census_x: np.ndarray) -> None:
    perm = np.random.default_rng(20261130).permutation(census_x.shape[0])
    a = MDAV(k=3).fit(pl.DataFrame(census_x)).information_loss_
    b = MDAV(k=3).fit(pl.DataFrame(census_x[perm])).information_loss_
    assert_allclose(a, b, rtol=1e-12)


@pytest.mark.parametrize("kind", ["normal", "ties", "skewed"])
def test_large_random_kernel_equals_reference(kind: str) -> None:
    # large enough for the kernel's pruned farthest-from-centroid search and its refreshes
    rng = np.random.default_rng(7)
    x = {
        "normal": lambda: rng.standard_normal((1500, 10)),
        "ties": lambda: rng.integers(0, 4, (1500, 3)).astype(float),
        "skewed": lambda: rng.lognormal(0, 1.5, (1500, 5)),
    }[kind]()
    z = standardize(x)
    assert_array_equal(mdav_groups(z, 3), mdav_reference(z, 3))


@pytest.mark.parametrize("frame", ["polars", "pandas"])
def test_transform_same_type_untouched_columns(census: pl.DataFrame, frame: str) -> None:
    df = census.with_columns(pl.Series("label", [f"r{i}" for i in range(census.height)]))
    native = df if frame == "polars" else df.to_pandas()
    cols = ["AFNLWGT", "AGI", "FEDTAX"]
    out = MDAV(k=4, columns=cols).fit_transform(native)
    assert type(out) is type(native)
    out_pl = out if frame == "polars" else pl.from_pandas(out)
    assert out_pl.columns == df.columns
    assert out_pl["label"].to_list() == df["label"].to_list()
    assert_array_equal(out_pl["PTOTVAL"].to_numpy(), df["PTOTVAL"].to_numpy())
    # every released combination appears at least k times (k-anonymity of the masked columns)
    assert out_pl.group_by(cols).len()["len"].min() >= 4
    # and the released value is the group mean of the original
    g = MDAV(k=4, columns=cols).fit(native).groups_
    for gid in np.unique(g)[:20]:
        rows = g == gid
        assert_allclose(out_pl["AGI"].to_numpy()[rows], df["AGI"].to_numpy()[rows].mean(), rtol=1e-12)


def test_median_centre() -> None:
    x = np.random.default_rng(3).standard_normal((40, 2))
    g = mdav_groups(standardize(x), 4)
    med = group_centres(x, g, "median")
    for gid in np.unique(g):
        assert_allclose(med[g == gid], np.broadcast_to(np.median(x[g == gid], axis=0), med[g == gid].shape))


def test_sorted_groups_and_methods(census: pl.DataFrame) -> None:
    key = np.array([5.0, 1.0, 3.0, 2.0, 4.0, 0.0, 6.0])
    # stable sort 5,1,3,0,4 ... : ranks 0..6 in groups of 3, the last holding 4 rows
    assert sorted_groups(key, 3).tolist() == [1, 0, 1, 0, 1, 0, 1]
    for method in ("rank", "pca", "single", "vmdav", "mdav_blocked"):
        m = Microaggregation(k=3, method=method, block_size=200).fit(census)  # type: ignore[arg-type]
        groups = m.groups_ if m.groups_.ndim == 2 else m.groups_[:, None]
        for j in range(groups.shape[1]):
            assert np.bincount(groups[:, j]).min() >= 3
        assert 0 < m.information_loss_ < 100
    # individual ranking keeps each column's order: it is the least lossy here
    assert (
        Microaggregation(k=3, method="rank").fit(census).information_loss_
        < MDAV(k=3).fit(census).information_loss_
    )


def test_vmdav_gamma_zero_gives_k_groups() -> None:
    x = np.random.default_rng(5).standard_normal((50, 2))
    g = vmdav_groups(standardize(x), 5, 0.0)  # d_in < 0 never holds: no group grows
    assert (np.bincount(g) == 5).all()
    g2 = vmdav_groups(standardize(x), 4, 10.0)
    sizes = np.bincount(g2)
    assert sizes.min() >= 4
    assert sizes.sum() == 50


def test_blocked_equals_exact_with_one_block_and_close_otherwise() -> None:
    z = standardize(np.random.default_rng(11).standard_normal((3000, 4)))
    assert_array_equal(blocked_mdav_groups(z, 3, block_size=5000), mdav_groups(z, 3))
    order, starts = kd_blocks(z, 400)
    sizes = np.diff(starts)
    assert sizes.max() <= 400
    assert sizes.min() >= 200
    assert sorted(order.tolist()) == list(range(3000))
    gb = blocked_mdav_groups(z, 3, block_size=400, workers=2)
    assert np.bincount(gb).min() >= 3
    assert_array_equal(gb, blocked_mdav_groups(z, 3, block_size=400, workers=1))  # threads do not matter
    il_exact = sse_sst(z, mdav_groups(z, 3))
    il_blocked = sse_sst(z, gb)
    assert il_exact <= il_blocked < 1.3 * il_exact


def test_strata_do_not_mix() -> None:
    rng = np.random.default_rng(2)
    df = pl.DataFrame(
        {"s": ["a"] * 10 + ["b"] * 7, "x": rng.standard_normal(17), "y": rng.standard_normal(17)}
    )
    m = Microaggregation(k=3, columns=["x", "y"], strata=["s"]).fit(df)
    ga, gb = set(m.groups_[:10].tolist()), set(m.groups_[10:].tolist())
    assert not ga & gb
    assert_array_equal(m.groups_[:10], mdav_groups(standardize(df["x", "y"].to_numpy()[:10]), 3))
    with pytest.raises(TooFewRowsError, match=r"stratum .* fewer than k=8"):
        Microaggregation(k=8, columns=["x", "y"], strata=["s"]).fit(df)


def test_missing_keep() -> None:
    df = pl.DataFrame({"x": [1.0, None, 3.0, 10.0, 11.0, 12.0], "y": [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]})
    with pytest.raises(MissingValuesError, match="'x'"):
        MDAV(k=3).fit(df)
    out = MDAV(k=3, missing="keep").fit_transform(df)
    assert out["x"].to_list()[1] is None or np.isnan(out["x"].to_list()[1])
    # the group {1, None, 3} releases the mean of its observed values, 2
    assert_allclose(out["x"].to_numpy()[[0, 2]], [2.0, 2.0])


def test_errors(census: pl.DataFrame) -> None:
    with pytest.raises(ParameterError, match="k=0 is below 1"):
        MDAV(k=0).fit(census)
    with pytest.raises(TooFewRowsError, match="need at least 2000 rows"):
        MDAV(k=2000).fit(census)
    with pytest.raises(ColumnNotFoundError, match="Did you mean 'PTOTVAL'"):
        MDAV(columns=["PTOTVA"]).fit(census)
    with pytest.raises(NonNumericColumnError, match="'s'"):
        MDAV(k=1).fit(pl.DataFrame({"s": ["a", "b"]}))
    with pytest.raises(NotFittedError, match="call fit"):
        MDAV().transform(census)
    with pytest.raises(ParameterError, match="method='kmeans'"):
        Microaggregation(method="kmeans").fit(census)  # type: ignore[arg-type]
    with pytest.raises(ParameterError, match=r"releases the rows it was fitted on \(1080 rows\)"):
        MDAV().fit(census).transform(census.head(10))


def test_params_round_trip() -> None:
    m = MDAV(k=7, columns=["a"])
    assert m.get_params() == {"k": 7, "columns": ["a"], "centre": "mean", "strata": None, "missing": "error",
                              "allow_linear_relations": False, "entity": None}
    assert m.set_params(k=4).k == 4
    assert "MDAV(k=4" in repr(m)
    with pytest.raises(ParameterError, match="no parameter 'q'"):
        m.set_params(q=1)


def test_pandas_result_values_equal_polars(census: pl.DataFrame) -> None:
    a = MDAV(k=3).fit_transform(census).to_numpy()
    b = MDAV(k=3).fit_transform(census.to_pandas()).to_numpy()
    assert isinstance(MDAV(k=3).fit_transform(census.to_pandas()), pd.DataFrame)
    assert_allclose(a, b, rtol=0, atol=0)
