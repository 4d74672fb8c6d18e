"""PRAM: the invariant marginal by simulation, user matrices, reproducibility."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from sdckit.anonymize import PRAM, invariant_matrix
from sdckit.errors import ParameterError


def test_invariant_pram_keeps_the_marginal_in_expectation() -> None:
    values = ["a"] * 500 + ["b"] * 300 + ["c"] * 150 + ["d"] * 50
    df = pl.DataFrame({"v": values, "other": np.arange(1000)})
    truth = np.array([500, 300, 150, 50])
    draws = []
    for seed in range(300):
        out = PRAM(columns=["v"], pd=0.6, random_state=seed).fit_transform(df)
        assert out["other"].to_list() == list(range(1000))
        counts = out["v"].value_counts().sort("v")["count"].to_numpy()
        draws.append(counts)
    draws_arr = np.array(draws)
    mean = draws_arr.mean(axis=0)
    se = draws_arr.std(axis=0, ddof=1) / np.sqrt(len(draws))
    assert (np.abs(mean - truth) < 4 * se + 1e-9).all()
    assert draws_arr.std(axis=0).min() > 1  # it did perturb


def test_invariant_matrix_closed_form() -> None:
    counts = np.array([60, 40])
    P = invariant_matrix(counts, 0.8)
    pi = counts / 100
    assert np.allclose(pi @ P, pi)
    assert np.allclose(P.sum(axis=1), 1)
    assert P.diagonal().min() == pytest.approx(0.8)


def test_user_matrix_and_missing() -> None:
    df = pl.DataFrame({"v": [1, 1, 2, None]})
    p = PRAM(matrix={"v": {"1": {"2": 1.0}, "2": {"2": 1.0}}}, random_state=0).fit(df)
    out = p.transform(df)
    assert out["v"].to_list() == [2, 2, 2, None]
    assert out.schema["v"] == pl.Int64
    assert p.changes_["v"] == {"cells_changed": 2, "values_merged": 1}
    with pytest.raises(ParameterError, match="sums to"):
        PRAM(matrix={"v": {"1": {"2": 0.5}, "2": {"2": 1.0}}}).fit(df)
    with pytest.raises(ParameterError, match="has no row"):
        PRAM(matrix={"v": {"1": {"1": 1.0}}}).fit(df)


def test_same_seed_same_release() -> None:
    df = pl.DataFrame({"v": list("aabbbcccc")})
    a = PRAM(random_state=3).fit_transform(df)
    b = PRAM(random_state=3).fit_transform(df)
    assert a.equals(b)
