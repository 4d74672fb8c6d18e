"""Positivity-preserving restoration: no value leaves its domain, counts add up, options behave."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest
from numpy.testing import assert_allclose, assert_array_equal

from sdckit.errors import ParameterError
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
    assert stats.n_kept >= stats.n_negative_records + np.ceil(0.05 * 400)
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
    masked = MDAV(k=3).fit_transform(census)
    with pytest.raises(ParameterError, match="buffer=2"):
        PositivityRestorer(buffer=2).fit(census, masked)
    with pytest.raises(ParameterError, match="mode='all'"):
        PositivityRestorer(mode="all").fit(census, masked)  # type: ignore[arg-type]
    with pytest.raises(ParameterError, match="row i of masked"):
        PositivityRestorer().fit(census, masked.head(100))
    with pytest.raises(ParameterError, match="constrained column 'X'"):
        PositivityRestorer(constrained=["X"]).fit(census, masked)
