"""Positivity-preserving restoration: no value leaves its domain, counts add up, options behave."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest
from hypothesis import HealthCheck, given, reject, settings
from hypothesis import strategies as st
from numpy.testing import assert_allclose, assert_array_equal

from sdckit.errors import InfeasibleError, ParameterError
from sdckit.microagg import MDAV, PositivityRestorer, eight_types_data, restoring_map
from sdckit.microagg._groups import group_centres, mdav_groups, standardize
from sdckit.microagg._positivity import positivity_restore

# (seed, type) pairs of eight_types_data(n=400, p=5, log_sd=1.0) where MDAV k=15 + T(x) gives negatives
VIOLATING = [
    (0, "non-symmetric low negative"),
    (0, "non-symmetric high positive"),
    (2, "non-symmetric low positive"),
]


def case(seed: int, name: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    x = eight_types_data(n=400, p=5, log_sd=1.0, seed=seed)[name]
    g = mdav_groups(standardize(x), 15)
    return x, group_centres(x, g), g


@pytest.mark.parametrize(("seed", "name"), VIOLATING)
@pytest.mark.parametrize("mode", ["same", "subset", "global"])
@pytest.mark.parametrize("sort_key", ["violation", "deficit"])
def test_no_negative_values_and_counts(seed: int, name: str, mode: str, sort_key: str) -> None:
    x, masked, g = case(seed, name)
    a, b, _ = restoring_map(x, masked)
    restored = masked @ a.T + b
    assert (restored < 0).any()  # the case does exercise the procedure
    out, stats, kept = positivity_restore(
        x,
        masked,
        signs=np.ones(5, dtype=np.int64),
        groups=g,
        mode=mode,
        buffer=0.05,
        sort_key=sort_key,  # type: ignore[arg-type]
    )
    assert (out >= 0).all()
    assert stats.n_negative_records == int((restored < 0).any(axis=1).sum())
    assert stats.n_negative_cells == int((restored < 0).sum())
    # the seed's partition: X1 = first n'(1 + p) records, rounded up to whole groups (size < 2k = 30)
    need = int(np.ceil(stats.n_negative_records * 1.05 - 1e-9))
    assert need <= stats.n_kept < need + 30
    assert stats.n_kept + stats.n_transformed + stats.n_reverted == 400
    # whole groups: a group is either entirely kept or entirely transformed
    for gid in np.unique(g):
        assert kept[g == gid].all() or not kept[g == gid].any()
    assert_array_equal(out[kept], masked[kept])  # X1 is released as microaggregated


def test_same_mode_uses_global_map_where_it_stays_positive() -> None:
    x, masked, g = case(0, "non-symmetric high positive")
    a, b, _ = restoring_map(x, masked)
    restored = masked @ a.T + b
    out, stats, kept = positivity_restore(x, masked, signs=np.ones(5, dtype=np.int64), groups=g, mode="same")
    assert stats.n_filled_cells == 0
    moved = ~kept & (restored >= 0).all(axis=1)
    assert_allclose(out[moved], restored[moved], rtol=0, atol=0)


def test_global_mode_has_exact_moments_when_nothing_is_filled() -> None:
    x, masked, g = case(0, "non-symmetric high positive")
    out, stats, _ = positivity_restore(
        x, masked, signs=np.ones(5, dtype=np.int64), groups=g, mode="global", buffer=0.05
    )
    assert stats.n_filled_cells == 0
    assert stats.n_kept > 0
    # the whole release (X1 kept + X2 transformed) has the original mean and covariance (notes §3)
    assert_allclose(out.mean(axis=0), x.mean(axis=0), rtol=1e-9)
    assert_allclose(np.cov(out, rowvar=False), np.cov(x, rowvar=False), rtol=1e-9, atol=1e-12)


def test_fill_options() -> None:
    x, masked, g = case(0, "non-symmetric low positive")
    sign = np.ones(5, dtype=np.int64)
    out_min, st_min, _ = positivity_restore(x, masked, signs=sign, groups=g, mode="subset", buffer=0.05)
    out_zero, st_zero, _ = positivity_restore(
        x, masked, signs=sign, groups=g, mode="subset", buffer=0.05, fill="zero"
    )
    assert st_min.n_filled_cells == st_zero.n_filled_cells > 0
    filled = out_min != out_zero
    assert filled.sum() == st_zero.n_filled_cells
    assert_allclose(out_zero[filled], 0.0)
    assert_allclose(out_min[filled], np.broadcast_to(x.min(axis=0), x.shape)[filled])


def test_nothing_negative_means_plain_restoration() -> None:
    x = 50 + np.random.default_rng(9).standard_normal((300, 3))  # far from zero: T keeps it positive
    g = mdav_groups(standardize(x), 5)
    masked = group_centres(x, g)
    a, b, _ = restoring_map(x, masked)
    out, stats, kept = positivity_restore(x, masked, signs=np.ones(3, dtype=np.int64), groups=g)
    assert stats.n_negative_records == 0
    assert not kept.any()
    assert_allclose(out, masked @ a.T + b, rtol=0, atol=0)


def test_mirrored_negative_column() -> None:
    x, masked, g = case(0, "non-symmetric high positive")
    flip = np.array([1.0, -1.0, 1.0, 1.0, -1.0])
    out, stats, _ = positivity_restore(x, masked, signs=np.ones(5, dtype=np.int64), groups=g, buffer=0.05)
    out_f, stats_f, _ = positivity_restore(
        x * flip, masked * flip, signs=flip.astype(np.int64), groups=g, buffer=0.05
    )
    # T commutes with the sign flip, so the mirrored release is the mirror of the release
    assert_allclose(out_f, out * flip, rtol=1e-9, atol=1e-9)
    assert stats_f == stats
    assert (out_f[:, [1, 4]] <= 0).all()


def test_estimator_frames_default_constraints(tarragona: pl.DataFrame) -> None:
    cols = ["FIXED.ASSETS", "CURRENT.ASSETS", "SALES", "NET.PROFIT", "LABOR.COSTS"]
    mdav = MDAV(k=10, columns=cols).fit(tarragona)
    masked = mdav.transform(tarragona)
    pr = PositivityRestorer(columns=cols, buffer=0.02).fit(tarragona, masked, groups=mdav.groups_)
    out = pr.transform(masked)
    assert isinstance(out, pl.DataFrame)
    assert out.columns == tarragona.columns
    # columns with negative values in the original (NET.PROFIT, ...) are left unconstrained
    expected = tuple(c for c in cols if tarragona[c].min() >= 0 or tarragona[c].max() <= 0)  # type: ignore[operator]
    assert "NET.PROFIT" not in expected
    assert len(expected) >= 2
    assert pr.constrained_ == expected
    assert (out.select(pr.constrained_).to_numpy() >= 0).all()
    assert pr.stats_.constrained == pr.constrained_
    assert pr.stats_.to_dict()["n_records"] == 834


def test_estimator_errors(census: pl.DataFrame) -> None:
    mdav = MDAV(k=3).fit(census)
    masked = mdav.transform(census)
    with pytest.raises(ParameterError, match="buffer=2"):
        PositivityRestorer(buffer=2).fit(census, masked)
    with pytest.raises(ParameterError, match="mode='all'"):
        PositivityRestorer(mode="all").fit(census, masked)  # type: ignore[arg-type]
    with pytest.raises(ParameterError, match="partition='seeds'"):
        PositivityRestorer(partition="seeds").fit(census, masked, groups=mdav.groups_)  # type: ignore[arg-type]
    with pytest.raises(ParameterError, match="one group id per row"):
        PositivityRestorer().fit(census, masked, groups=mdav.groups_[:10])
    with pytest.raises(ParameterError, match="row i of masked"):
        PositivityRestorer().fit(census, masked.head(100))
    with pytest.raises(ParameterError, match="constrained column 'X'"):
        PositivityRestorer(constrained=["X"]).fit(census, masked, groups=mdav.groups_)


def test_seed_partition_counted_by_hand() -> None:
    # 100 one-record groups, scores known: records 0..19 are pushed below zero by T (n' = 20).
    x, masked, _ = case(0, "non-symmetric high positive")
    a, b, _ = restoring_map(x, masked)
    n_neg = int(((masked @ a.T + b) < 0).any(axis=1).sum())
    ones, rows = np.ones(5, dtype=np.int64), np.arange(400)
    for p in (0.0, 0.1, 0.25, 0.5):
        _, seed_stats, _ = positivity_restore(x, masked, signs=ones, groups=rows, buffer=p)
        _, total_stats, _ = positivity_restore(
            x, masked, signs=ones, groups=rows, buffer=p, partition="total"
        )
        # seed slide 9: "Y1 has 1st to (n + np)-th observations", n = count of negative records
        assert seed_stats.n_kept == min(400, n_neg + int(np.ceil(round(n_neg * p, 9))))
        # the earlier rule: n' + ceil(p N), N = all records
        assert total_stats.n_kept == min(400, n_neg + int(np.ceil(round(400 * p, 9))))
    _, st10, _ = positivity_restore(x, masked, signs=ones, groups=rows, buffer=0.1)
    assert st10.n_kept == n_neg + -(-n_neg // 10)  # integer ceil(n' / 10), no float rounding
    with pytest.raises(ParameterError, match="partition='x'"):
        positivity_restore(x, masked, signs=ones, groups=rows, partition="x")  # type: ignore[arg-type]


def _smallest_identical_set(release: np.ndarray) -> int:
    return int(np.unique(release, axis=0, return_counts=True)[1].min())


def test_groups_required_unless_opted_out() -> None:
    # The audit's case: k = 10, n = 600, buffer > 0; cutting record by record splits a group.
    x = eight_types_data(n=600, p=5, log_sd=1.0, seed=0)["non-symmetric high positive"]
    frame = pl.DataFrame(x, schema=[f"c{j}" for j in range(5)])
    mdav = MDAV(k=10).fit(frame)
    masked = mdav.transform(frame)
    with pytest.raises(ParameterError, match=r"groups=model\.groups_"):
        PositivityRestorer(buffer=0.05).fit(frame, masked)
    split = PositivityRestorer(buffer=0.05, split_groups=True).fit(frame, masked)
    assert _smallest_identical_set(split.transform(masked).to_numpy()) < 10  # the defect the default avoids
    whole = PositivityRestorer(buffer=0.05).fit(frame, masked, groups=mdav.groups_)
    assert _smallest_identical_set(whole.transform(masked).to_numpy()) >= 10
    # per-column ids (method="rank"): rows with the same ids are one group
    ids2 = np.stack([mdav.groups_, mdav.groups_], axis=1)
    again = PositivityRestorer(buffer=0.05).fit(frame, masked, groups=ids2)
    assert_array_equal(again.kept_, whole.kept_)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.integers(2, 6),
    st.integers(0, 2**31 - 1),
    st.sampled_from(["same", "subset", "global"]),
    st.sampled_from([0.0, 0.05, 0.3]),
    st.sampled_from(["violation", "deficit"]),
    st.integers(0, 5),
)
def test_default_keeps_every_group_of_size_k(
    k: int, seed: int, mode: str, buffer: float, sort_key: str, type_index: int
) -> None:
    """Default PositivityRestorer on MDAV output: every set of identical released rows has >= k rows."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(3 * k, 12 * k + 1))
    x = eight_types_data(n=n, p=3, log_sd=1.0, seed=seed % 1000)
    name = sorted(x)[type_index]
    frame = pl.DataFrame(x[name], schema=["a", "b", "c"])
    mdav = MDAV(k=k).fit(frame)
    masked = mdav.transform(frame)
    assert _smallest_identical_set(masked.to_numpy()) >= k
    try:
        pr = PositivityRestorer(mode=mode, buffer=buffer, sort_key=sort_key).fit(  # type: ignore[arg-type]
            frame, masked, groups=mdav.groups_
        )
    except InfeasibleError:  # "subset"/"global" refuse when X2 cannot carry a full-rank map
        reject()
    out = pr.transform(masked).to_numpy()
    assert _smallest_identical_set(out) >= k
    for gid in np.unique(mdav.groups_):  # each group kept or transformed whole, and identical
        rows = out[mdav.groups_ == gid]
        assert (rows == rows[0]).all()
        assert pr.kept_[mdav.groups_ == gid].all() or not pr.kept_[mdav.groups_ == gid].any()
