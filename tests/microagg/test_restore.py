"""Moment restoration: exact mean and covariance, identities kept, rank errors, method choices."""

from __future__ import annotations

import numpy as np
import pandas as pd
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numpy.testing import assert_allclose

from sdckit.errors import InfeasibleError, NotFittedError, ParameterError
from sdckit.microagg import MDAV, MomentRestorer, restoring_map
from sdckit.microagg._groups import group_centres, mdav_groups, standardize


def rel_err(a: np.ndarray, b: np.ndarray) -> float:
    """Largest entry-wise error relative to the largest entry of the target (CASC entries ~1e10)."""
    return float(np.abs(a - b).max() / np.abs(b).max())


@pytest.mark.parametrize("method", ["svd", "procrustes"])
@pytest.mark.parametrize("k", [3, 10])
def test_census_moments_restored_and_identity_kept(census: pl.DataFrame, method: str, k: int) -> None:
    masked = MDAV(k=k).fit_transform(census)
    out = MomentRestorer(method=method).fit(census, masked).transform(masked)  # type: ignore[arg-type]
    x = census.to_numpy().astype(float)
    y = out.to_numpy()
    # target: numpy's own mean and covariance of the original (ddof=1), 1e-9 relative (issue 6)
    assert rel_err(y.mean(axis=0), x.mean(axis=0)) < 1e-9
    assert rel_err(np.cov(y, rowvar=False), np.cov(x, rowvar=False)) < 1e-9
    # the exact identity PTOTVAL = PEARNVAL + POTHVAL of every Census row survives
    gap = (out["PTOTVAL"] - out["PEARNVAL"] - out["POTHVAL"]).abs().max()
    assert gap / out["PTOTVAL"].abs().max() < 1e-9


def test_census_cholesky_fails_clearly(census: pl.DataFrame) -> None:
    masked = MDAV(k=3).fit_transform(census)
    with pytest.raises(InfeasibleError, match=r"singular .*rank 12 < 13.*method='svd'"):
        MomentRestorer(method="cholesky").fit(census, masked)


def test_rank_mismatch_raises() -> None:
    x = np.random.default_rng(0).standard_normal((20, 5))
    masked = group_centres(x, mdav_groups(standardize(x), 10))  # 2 groups: rank(S2) = 1 < 5
    with pytest.raises(InfeasibleError, match=r"rank\(S1\) = 5 but rank\(S2\) = 1"):
        restoring_map(x, masked)


def test_one_column_closed_form() -> None:
    # p = 1: A = sd1 / sd2 and b = E1 - A E2 (scalar square roots, by hand)
    x = np.array([[1.0], [4.0], [2.0], [8.0], [5.0], [7.0]])
    xm = np.array([[2.0], [5.0], [2.0], [7.0], [5.0], [7.0]])
    a, b, rank = restoring_map(x, xm)
    ratio = x.std(ddof=1) / xm.std(ddof=1)
    assert_allclose(a, [[ratio]], rtol=1e-14)
    assert_allclose(b, x.mean() - ratio * xm.mean(), rtol=1e-14)
    assert rank == 1


@settings(max_examples=25, deadline=None)
@given(n=st.integers(30, 150), p=st.integers(1, 5), k=st.integers(2, 5), seed=st.integers(0, 2**32 - 1))
def test_restored_moments_exact_all_methods(n: int, p: int, k: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, p)) @ rng.standard_normal((p, p)) * rng.uniform(0.1, 1e4, p) + rng.uniform(
        -1e3, 1e3, p
    )
    xm = group_centres(x, mdav_groups(standardize(x), k))
    moved = {}
    for method in ("svd", "cholesky", "procrustes"):
        a, b, _ = restoring_map(x, xm, method=method)  # type: ignore[arg-type]
        y = xm @ a.T + b
        s1 = np.cov(x, rowvar=False, ddof=1)
        # A S2 A^T = S1 and A E2 + b = E1: both checked on the transformed data itself
        assert_allclose(np.cov(y, rowvar=False, ddof=1), s1, rtol=1e-9, atol=1e-9 * np.abs(s1).max())
        assert_allclose(y.mean(axis=0), x.mean(axis=0), rtol=1e-9, atol=1e-9 * np.abs(x).max())
        sd = x.std(axis=0)
        moved[method] = float((((y - xm) / sd) ** 2).sum())
    # Procrustes picks, among all maps with these moments, the one that moves the records least
    assert moved["procrustes"] <= moved["svd"] * (1 + 1e-9)
    assert moved["procrustes"] <= moved["cholesky"] * (1 + 1e-9)


def test_identical_data_gives_identity_map(census_x: np.ndarray) -> None:
    a, b, _ = restoring_map(census_x, census_x)
    y = census_x @ a.T + b
    assert rel_err(y, census_x) < 1e-9


def test_frames_and_errors(census: pl.DataFrame) -> None:
    df = census.select("AGI", "FEDTAX", "STATETAX").with_columns(pl.lit("x").alias("tag"))
    masked = MDAV(k=5, columns=["AGI", "FEDTAX", "STATETAX"]).fit_transform(df.to_pandas())
    r = MomentRestorer(columns=["AGI", "FEDTAX", "STATETAX"])
    out = r.fit(df.to_pandas(), masked).transform(masked)
    assert isinstance(out, pd.DataFrame)
    assert list(out.columns) == df.columns
    assert (out["tag"] == "x").all()
    assert r.A_.shape == (3, 3)
    assert r.rank_ == 3
    with pytest.raises(NotFittedError):
        MomentRestorer().transform(masked)
    with pytest.raises(ParameterError, match="method='qr'"):
        MomentRestorer(method="qr").fit(df, df)  # type: ignore[arg-type]
