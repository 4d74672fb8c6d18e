"""The mechanism (AdditiveNoise) and the aggregator's NoisyPCA."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import polars as pl
import pytest

from sdckit.errors import ColumnNotFoundError, NonNumericColumnError, NotFittedError, ParameterError
from sdckit.spectral import DISTRIBUTIONS, AdditiveNoise, NoisyPCA, SpikedModel, draw_noise, simulate_spectrum

SEED = 20261130


@pytest.mark.parametrize("distribution", DISTRIBUTIONS)
@pytest.mark.parametrize("t", [0.3, 2.5])
def test_noise_has_mean_zero_and_variance_t(distribution: str, t: float) -> None:
    n = 200_000
    z = draw_noise((n,), t, distribution, np.random.default_rng(SEED)).astype(float)  # type: ignore[arg-type]
    m2 = np.mean(z**2)  # the mean is known (0): second moment about 0
    # standard errors from the sample's own fourth moment; 5 SE bounds (0 for Rademacher: z^2 = t)
    se_m2 = math.sqrt(np.mean((z**2 - m2) ** 2) / n)
    assert abs(z.mean()) < 5 * math.sqrt(t / n)
    assert abs(m2 - t) <= 5 * se_m2 + 1e-12 * t


def test_discrete_noise_is_two_sided_geometric() -> None:
    t = 2.0
    q = ((t + 1) - math.sqrt(2 * t + 1)) / t
    assert 2 * q / (1 - q) ** 2 == pytest.approx(t, rel=1e-14)  # variance of the law is exactly t
    z = draw_noise((200_000,), t, "discrete", np.random.default_rng(SEED))
    assert z.dtype == np.int64
    # P(Z = 0) = (1 - q) / (1 + q) for the difference of two geometric laws (closed form)
    p0 = (1 - q) / (1 + q)
    assert abs(np.mean(z == 0) - p0) < 5 * math.sqrt(p0 * (1 - p0) / z.size)


def test_additive_noise_keeps_frame_type_and_other_columns() -> None:
    df = pd.DataFrame({"a": np.arange(50, dtype=float), "b": ["x"] * 50, "c": np.arange(50)})
    out = AdditiveNoise(t=1.0, columns=["a", "c"], random_state=1).fit_transform(df)
    assert isinstance(out, pd.DataFrame)
    assert list(out.columns) == ["a", "b", "c"]
    assert (out["b"] == "x").all()
    assert not np.allclose(out["a"], df["a"])
    pdf = pl.from_pandas(df)
    out_pl = AdditiveNoise(t=1.0, columns=["a", "c"], random_state=1).fit_transform(pdf)
    assert isinstance(out_pl, pl.DataFrame)
    np.testing.assert_array_equal(out_pl["a"].to_numpy(), out["a"].to_numpy())  # same seed, same noise


def test_seeded_and_integer_answers_stay_integers() -> None:
    df = pl.DataFrame({"q1": [1, 2, 3, 4, 5] * 20, "q2": [5, 4, 3, 2, 1] * 20})
    a = AdditiveNoise(t=1.0, distribution="discrete", random_state=7).fit_transform(df)
    b = AdditiveNoise(t=1.0, distribution="discrete", random_state=7).fit_transform(df)
    c = AdditiveNoise(t=1.0, distribution="discrete", random_state=8).fit_transform(df)
    assert a.equals(b)
    assert not a.equals(c)
    assert a.schema["q1"] == pl.Int64


def test_mechanism_errors() -> None:
    df = pl.DataFrame({"age": [30.0, 40.0], "sex": ["F", "M"]})
    with pytest.raises(ColumnNotFoundError, match="Did you mean 'age'"):
        AdditiveNoise(columns=["agee"]).fit(df)
    with pytest.raises(NonNumericColumnError, match="'sex'"):
        AdditiveNoise(columns=["sex"]).fit(df)
    with pytest.raises(ParameterError, match="t=-1"):
        AdditiveNoise(t=-1, columns=["age"]).fit(df)
    with pytest.raises(ParameterError, match="distribution='cauchy'"):
        AdditiveNoise(distribution="cauchy", columns=["age"]).fit(df)  # type: ignore[arg-type]
    with pytest.raises(NotFittedError, match="fit"):
        AdditiveNoise().transform(df)


def test_noisy_pca_diagnostics_match_the_limit() -> None:
    # A spiked survey (c = 0.5, r = 0.3, s = 10, p = 200) perturbed with t = 1.5: the fitted model
    # predicts the gap U(t) = 1.652 (SpikedModel), the observed lambda_k - lambda_{k+1} agrees within
    # 6 % of s at this small p (notes §5.6), and the k = 60 spikes are found.
    p, n, k, s, t = 200, 400, 60, 10.0, 1.5
    rng = np.random.default_rng(SEED)
    x = rng.normal(size=(n, p))
    x[:, :k] *= math.sqrt(s)
    x[:, k:] *= 0.0
    frame = pl.DataFrame({f"q{j}": x[:, j] for j in range(p)})
    noisy = AdditiveNoise(t=t, random_state=SEED + 1).fit_transform(frame)  # not the data's stream
    pca = NoisyPCA(t=t).fit(noisy)
    assert pca.n_spikes_ == k
    assert pca.n_separable_ == k
    assert pca.observed_gap_ == pytest.approx(SpikedModel(0.5, 0.3, s).separation(t), abs=0.06 * s)
    assert pca.predicted_gap_ == pytest.approx(SpikedModel(0.5, 0.3, s).separation(t), abs=0.06 * s)
    np.testing.assert_allclose(pca.explained_variance_, pca.eigenvalues_ - t)
    d = pca.diagnostics()
    assert d["n_separable"] == k
    assert d["predicted_support"]["n_components"] == 2
    assert pca.transform(noisy).shape == (n, k)


def test_simulated_spectrum_shape() -> None:
    lam = simulate_spectrum(SpikedModel(2.0, 0.2, 10.0), 0.1, 100, seed=1)
    assert lam.shape == (100,)
    assert np.sum(lam > 1e-9) == 50  # rank n = p / c


@pytest.mark.parametrize("seed", [-1, 1.5, "7", True])
def test_bad_seed_is_a_parameter_error(seed: object) -> None:
    from sdckit.spectral import simulate_gap

    # Before: numpy's "expected non-negative integer" ValueError (a traceback in the CLI).
    with pytest.raises(ParameterError, match=r"^random_state=.*: give a whole number >= 0"):
        AdditiveNoise(t=1.0, random_state=seed).fit(pl.DataFrame({"a": [1.0, 2.0]}))  # type: ignore[arg-type]
    with pytest.raises(ParameterError, match=r"^seed=.*: give a whole number >= 0"):
        simulate_gap(SpikedModel(0.5, 0.1, 5.0), 1.0, 50, reps=1, seed=seed)  # type: ignore[arg-type]


def test_missing_answers_get_a_fix_this_mechanism_offers() -> None:
    import polars as pl

    from sdckit.errors import MissingValuesError
    from sdckit.spectral import AdditiveNoise

    df = pl.DataFrame({"a": [1.0, None, 3.0], "b": [1.0, 2.0, 3.0]})
    with pytest.raises(MissingValuesError, match=r"column 'a' has 1 missing value\(s\), first at row 1\. Additive noise needs every answer"):
        AdditiveNoise(t=0.5, random_state=1).fit(df)
