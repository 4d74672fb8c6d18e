"""Noise design and the spiked-model fit."""

from __future__ import annotations

import math

import numpy as np
import pytest

from sdckit.errors import InfeasibleError, ParameterError
from sdckit.spectral import SpikedModel, design_noise, fit_spiked, simulate_spectrum

S = 10.0
M = SpikedModel(0.5, 0.3, S)


def test_design_from_leakage_budget() -> None:
    d = design_noise(M, 50, max_leakage=12.0)
    assert d.t == pytest.approx(S / math.expm1(2 * 12.0 / 15), rel=1e-14)  # [seed] P_IT^-1
    assert d.information_leakage_nats <= 12.0
    assert d.separation == M.separation(d.t)
    assert d.n_separable == 15
    assert d.k == 15
    assert d.utility_share == pytest.approx(d.separation / M.separation(0.0))
    assert "keeps the 15" in d.note
    assert d.to_dict()["t"] == d.t


def test_design_budget_below_leakage_at_t_star_leaves_nothing() -> None:
    eps = 0.9 * M.information_leakage(M.critical_noise(), 50)
    d = design_noise(M, 50, max_leakage=eps)
    assert d.separation == 0.0
    assert d.n_separable == 0
    assert "cannot tell" in d.note


def test_design_from_mmse_floor_and_converse() -> None:
    d = design_noise(M, 50, min_mmse=20.0)
    assert d.estimation_mmse >= 20.0
    assert d.t == pytest.approx(20.0 * S / (15 * S - 20.0), rel=1e-14)  # [seed] P_ET^-1
    c = design_noise(M, 50, min_separation=1.0)
    assert c.separation == pytest.approx(1.0, rel=1e-9)
    assert M.separation(c.t * (1 + 1e-6)) < 1.0  # largest such t


def test_design_errors() -> None:
    with pytest.raises(ParameterError, match="exactly one"):
        design_noise(M, 50, max_leakage=1.0, min_mmse=1.0)
    with pytest.raises(InfeasibleError, match="lower the target"):
        design_noise(M, 50, min_separation=100.0)
    with pytest.raises(InfeasibleError, match="no noise level"):
        design_noise(M, 50, min_mmse=150.0)
    with pytest.raises(ParameterError, match="nats must be > 0"):
        design_noise(M, 50, max_leakage=0.0)


def test_design_with_floor_uses_full_gaussian_leakage() -> None:
    floor = 0.5
    d = design_noise(M, 50, max_leakage=20.0, floor=floor)
    # independent: (1/2) log det(I + Sigma / t) with Sigma = diag(s + b (x15), b (x35)) via slogdet
    sigma = np.diag(np.r_[np.full(15, S + floor), np.full(35, floor)])
    leak = 0.5 * np.linalg.slogdet(np.eye(50) + sigma / d.t)[1]
    assert leak == pytest.approx(20.0, rel=1e-12)
    assert leak <= 20.0 + 1e-12
    assert d.separation == M.separation(d.t + floor)


def test_fit_spiked_recovers_the_model() -> None:
    m = SpikedModel(0.5, 0.1, S)
    lam = simulate_spectrum(m, 1.0, 400, seed=5)
    fit = fit_spiked(lam, n=800, t=1.0)
    assert fit.k == 40
    assert fit.model.c == 0.5
    assert fit.model.r == 0.1
    # two moment equations (trace, lower-component mean of the limit law): s within 2 %, b = t + floor
    # within 1 % at p = 400 (sampling error of the eigenvalue means is O(1/p))
    assert fit.model.s == pytest.approx(S, rel=0.02)
    assert fit.t_effective == pytest.approx(1.0, rel=0.01)
    assert fit.floor < 0.01  # no structure beyond the noise
    assert "lower component" in fit.how
    with pytest.raises(ParameterError, match="number of spikes"):
        fit_spiked(lam, n=800, k=400)


def test_design_from_data_names_a_constant_column() -> None:
    import polars as pl

    from sdckit.errors import InputError
    from sdckit.spectral import design_noise_from_data

    rng = np.random.default_rng(20261130)
    frame = pl.DataFrame({"year": [96.0] * 50, "x": rng.normal(size=50), "y": rng.normal(size=50)})
    # Before: "column 0 is constant" (an index, not the name the user knows).
    with pytest.raises(InputError, match=r"^column 'year' is constant; .* Leave it out of the columns"):
        design_noise_from_data(frame, standardize=True, max_leakage=1.0)


def test_design_from_data_drops_missing_rows_on_request() -> None:
    import polars as pl

    from sdckit.errors import MissingValuesError
    from sdckit.spectral import design_noise_from_data

    rng = np.random.default_rng(20261130)
    x = rng.normal(size=(60, 3))
    frame = pl.DataFrame({"a": x[:, 0], "b": [None, *x[1:, 1]], "c": x[:, 2]})
    with pytest.raises(MissingValuesError, match="column 'b' has 1 missing"):
        design_noise_from_data(frame, max_leakage=1.0)
    fit, _ = design_noise_from_data(frame, max_leakage=1.0, missing="drop")
    fit_clean, _ = design_noise_from_data(
        pl.DataFrame({"a": x[1:, 0], "b": x[1:, 1], "c": x[1:, 2]}), max_leakage=1.0
    )
    assert fit.model.c == fit_clean.model.c == pytest.approx(3 / 59, rel=1e-15)  # c = p / n after the drop


def _leak_by_hand(t: float, p: int, k: int, floor: float) -> float:
    lam = np.r_[np.full(k, S + floor), np.full(p - k, floor)]  # the full spectrum of Sigma = s P_k + b I
    return float(np.sum(0.5 * np.log1p(lam / t)))


@pytest.mark.parametrize("floor", [0.0, 0.5])
def test_design_never_exceeds_a_leakage_budget(floor: float) -> None:
    # Issue 10: a budget of ~30 p nats or more once gave t = 0 (leakage inf). Sweep 1e-300 .. 1e9 nats.
    for budget in np.geomspace(1e-300, 1e9, 120):
        d = design_noise(M, 50, max_leakage=float(budget), floor=floor)
        assert 0 < d.t < math.inf
        assert d.information_leakage_nats <= budget
        assert _leak_by_hand(d.t, 50, 15, floor) <= budget * (1 + 1e-12)
        if (
            1e-250 < budget < 1e3
        ):  # away from the float range's ends t is the smallest: one ulp less leaks more
            assert _leak_by_hand(d.t * (1 - 1e-9), 50, 15, floor) > budget


@pytest.mark.parametrize("floor", [0.0, 0.5])
def test_design_budget_no_finite_noise_meets_raises(floor: float) -> None:
    with pytest.raises(
        InfeasibleError, match=r"max_leakage=4\.94066e-324 nats cannot be met.*smallest leakage reachable is"
    ):
        design_noise(M, 50, max_leakage=5e-324, floor=floor)
