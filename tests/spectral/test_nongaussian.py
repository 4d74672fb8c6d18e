"""Leakage beyond the Gaussian model (issue 10): bounds against direct numerical integration.

The truth I(X; X + sqrt(t) Z) = h(Y) - h(sqrt(t) Z) is computed without the code under test: the
density of Y by numerical convolution on a grid (FFT), its entropy by a Riemann sum, h of the noise
by quadrature. Data: Gaussian mixtures (1-D and 2-D) and Gaussians; noise: Gaussian, Laplace, uniform.
"""

from __future__ import annotations

import math

import numpy as np
import polars as pl
import pytest
from scipy import integrate, signal, stats

from sdckit.errors import InputError, ParameterError
from sdckit.spectral import (
    AdditiveNoise,
    SpikedModel,
    estimate_leakage,
    gaussian_leakage,
    information_leakage,
    knn_entropy,
    leakage_bound,
    noise_entropy,
    non_gaussianity,
)

DX = 2e-3


def _grid(t: float) -> np.ndarray:
    half = 30.0 + 14 * math.sqrt(t)  # the data's range plus the noise's
    return np.arange(-half, half + DX / 2, DX)


def _noise_pdf(law: str, t: float, x: np.ndarray) -> np.ndarray:
    if law == "gaussian":
        return stats.norm.pdf(x, scale=math.sqrt(t))
    if law == "laplace":
        return stats.laplace.pdf(x, scale=math.sqrt(t / 2))
    a = math.sqrt(3 * t)
    return np.where(np.abs(x) <= a, 1 / (2 * a), 0.0)


def _kernel(law: str, t: float, dx: float) -> np.ndarray:
    half = 12 * math.sqrt(t)
    x = np.arange(-half, half + dx / 2, dx)
    k = _noise_pdf(law, t, x)
    return k / (k.sum() * dx)  # a density on the grid: sums to 1 exactly


def _entropy_1d(f: np.ndarray, dx: float) -> float:
    f = np.clip(f, 0.0, None)
    f = f / (f.sum() * dx)
    pos = f > 0
    return float(-np.sum(f[pos] * np.log(f[pos])) * dx)


def _noise_entropy_quad(law: str, t: float) -> float:
    """-integral f log f of the noise density, by adaptive quadrature (f log f -> 0 where f = 0)."""
    a = 20 * math.sqrt(t) if law != "uniform" else math.sqrt(3 * t)

    def integrand(x: float) -> float:
        f = float(_noise_pdf(law, t, np.array(x)))
        return -f * math.log(f) if f > 0 else 0.0

    val, _ = integrate.quad(integrand, -a, a, points=[0.0] if law == "laplace" else None, limit=400)
    return float(val)


MIX1 = ([0.5, 0.3, 0.2], [-2.0, 1.0, 3.5], [0.5, 1.0, 0.3])  # weights, means, sds: bimodal and skewed


def _mix1_var() -> float:
    w, m, s = (np.array(v) for v in MIX1)
    mean = float(w @ m)
    return float(w @ (s**2 + m**2) - mean**2)


GAUSS1 = ([1.0], [0.0], [math.sqrt(_mix1_var())])  # a Gaussian of the mixture's variance


def _mi_1d(mix: tuple[list[float], list[float], list[float]], law: str, t: float) -> float:
    """h(Y) - h(noise), f_Y = the mixture convolved with the noise: in closed form for Gaussian noise
    (variances add) and uniform noise (differences of normal cdfs), on a grid by FFT for Laplace."""
    y = _grid(t)
    w, m, s = mix
    if law == "gaussian":
        f_y = sum(
            wi * stats.norm.pdf(y, mi, math.hypot(si, math.sqrt(t)))
            for wi, mi, si in zip(w, m, s, strict=True)
        )
    elif law == "uniform":
        a = math.sqrt(3 * t)
        f_y = sum(
            wi * (stats.norm.cdf((y - mi + a) / si) - stats.norm.cdf((y - mi - a) / si)) / (2 * a)
            for wi, mi, si in zip(w, m, s, strict=True)
        )
    else:
        f_x = sum(wi * stats.norm.pdf(y, mi, si) for wi, mi, si in zip(w, m, s, strict=True))
        f_y = signal.fftconvolve(f_x, _kernel(law, t, DX), mode="same") * DX
    return _entropy_1d(np.asarray(f_y), DX) - _noise_entropy_quad(law, t)


def test_non_gaussianity_closed_forms_by_quadrature() -> None:
    for law in ("laplace", "uniform", "gaussian"):
        h = _noise_entropy_quad(law, 1.0)
        # D(Z) = h(Z_G) - h(Z) for unit variance; and the entropy at any t
        assert non_gaussianity(law) == pytest.approx(0.5 * math.log(2 * math.pi * math.e) - h, abs=1e-9)
        for t in (0.3, 7.0):
            assert noise_entropy(law, t) == pytest.approx(_noise_entropy_quad(law, t), abs=1e-8)
    assert non_gaussianity("rademacher") == math.inf
    assert non_gaussianity("discrete") == math.inf
    with pytest.raises(ParameterError, match="no density"):
        noise_entropy("rademacher", 1.0)
    with pytest.raises(ParameterError, match="distribution='cauchy'"):
        non_gaussianity("cauchy")


@pytest.mark.parametrize("law", ["gaussian", "laplace", "uniform"])
@pytest.mark.parametrize("t", [0.25, 1.0, 4.0])
def test_bounds_hold_1d_mixture_and_gaussian(law: str, t: float) -> None:
    var = _mix1_var()
    truth = _mi_1d(MIX1, law, t)
    b = leakage_bound([[var]], t, noise=law)
    assert truth <= b.upper + 1e-6  # holds for the mixture
    assert truth > 0
    if law == "gaussian":
        assert truth <= b.asymptotic + 1e-6  # 1/2 log(1 + v/t) <= v/(2t)
        assert b.upper - truth > 0.01  # strict for non-Gaussian data
    # Gaussian data of the same variance: the bound is tight for Gaussian noise, two-sided otherwise
    gauss = _mi_1d(GAUSS1, law, t)
    bg = leakage_bound([[var]], t, noise=law, data_law="gaussian")
    assert bg.lower - 1e-6 <= gauss <= bg.upper + 1e-6
    if law == "gaussian":
        assert bg.exact
        assert gauss == pytest.approx(bg.upper, abs=1e-7)
        assert gauss == pytest.approx(0.5 * math.log1p(var / t), abs=1e-7)
    else:
        assert not bg.exact
        assert bg.upper - bg.lower == pytest.approx(non_gaussianity(law))


def test_high_privacy_asymptotics_1d() -> None:
    var = _mix1_var()
    ratios = []
    for t in (10.0, 100.0, 1000.0):
        truth = _mi_1d(MIX1, "gaussian", t)
        ratios.append(truth / (var / (2 * t)))
    assert all(r <= 1 + 1e-4 for r in ratios)  # below Tr(Sigma)/(2t) ...
    assert ratios[0] < ratios[1] < ratios[2]  # ... and approaching it
    assert ratios[2] == pytest.approx(1.0, abs=0.01)


# 2-D: a mixture of axis-aligned Gaussians whose means make the covariance non-diagonal; product noise
# convolves each component coordinate by coordinate, so f_Y is a sum of products of 1-D convolutions.
DX2 = 0.01
GRID2 = np.arange(-16.0, 16.0 + DX2 / 2, DX2)
MIX2 = [
    (0.4, (-1.5, -1.0), (0.6, 0.5)),
    (0.35, (1.5, 1.2), (0.8, 0.4)),
    (0.25, (0.5, 2.5), (0.3, 0.9)),
]


def _mix2_cov() -> np.ndarray:
    w = np.array([c[0] for c in MIX2])
    mu = np.array([c[1] for c in MIX2])
    sd = np.array([c[2] for c in MIX2])
    mean = w @ mu
    second = sum(wi * (np.diag(si**2) + np.outer(mi, mi)) for wi, mi, si in zip(w, mu, sd, strict=True))
    return np.asarray(second - np.outer(mean, mean))


def _mi_2d_mixture(law: str, t: float) -> float:
    ker = _kernel(law, t, DX2)
    f = np.zeros((GRID2.size, GRID2.size))
    for w, mu, sd in MIX2:
        gx = signal.fftconvolve(stats.norm.pdf(GRID2, mu[0], sd[0]), ker, mode="same") * DX2
        gy = signal.fftconvolve(stats.norm.pdf(GRID2, mu[1], sd[1]), ker, mode="same") * DX2
        f += w * np.outer(gx, gy)
    f = np.clip(f, 0, None)
    f /= f.sum() * DX2**2
    pos = f > 0
    h_y = float(-np.sum(f[pos] * np.log(f[pos])) * DX2**2)
    return h_y - 2 * _noise_entropy_quad(law, t)


@pytest.mark.parametrize("law", ["gaussian", "laplace", "uniform"])
def test_bounds_hold_2d_mixture(law: str) -> None:
    cov = _mix2_cov()
    assert abs(cov[0, 1]) > 0.3  # correlated
    for t in (0.5, 2.0):
        truth = _mi_2d_mixture(law, t)
        b = leakage_bound(cov, t, noise=law)
        assert 0 < truth <= b.upper + 1e-5
        assert b.gaussian_term == pytest.approx(0.5 * math.log(np.linalg.det(np.eye(2) + cov / t)), rel=1e-12)
        assert b.non_gaussian_term == pytest.approx(2 * non_gaussianity(law))


def test_gaussian_2d_is_tight_by_integration() -> None:
    cov = np.array([[2.0, 0.9], [0.9, 1.0]])
    t = 0.7
    yy = np.meshgrid(GRID2[::2], GRID2[::2], indexing="ij")
    pts = np.stack([yy[0].ravel(), yy[1].ravel()], axis=1)
    f = stats.multivariate_normal(cov=cov + t * np.eye(2)).pdf(pts)
    dA = (2 * DX2) ** 2
    h_y = float(-np.sum(f * np.log(np.where(f > 0, f, 1.0))) * dA)
    truth = h_y - 2 * _noise_entropy_quad("gaussian", t)
    b = leakage_bound(cov, t, data_law="gaussian")
    assert b.exact
    assert truth == pytest.approx(b.upper, abs=1e-6)
    assert b.upper == b.lower == gaussian_leakage(cov, t)
    assert gaussian_leakage(np.linalg.eigvalsh(cov), t) == pytest.approx(b.upper, rel=1e-14)


def test_information_leakage_data_law_and_noise() -> None:
    k, s, p = 3, 5.0, 10
    base = information_leakage(2.0, k=k, s=s)
    assert base == pytest.approx(gaussian_leakage(np.r_[np.full(k, s), np.zeros(p - k)], 2.0), rel=1e-14)
    assert information_leakage(2.0, k=k, s=s, data_law="any") == base  # the same value, read as a bound
    lap = information_leakage(2.0, k=k, s=s, noise="laplace", p=p)
    assert lap == pytest.approx(base + p * non_gaussianity("laplace"), rel=1e-14)
    assert information_leakage(2.0, k=k, s=s, noise="rademacher", p=p) == math.inf
    with pytest.raises(ParameterError, match="give p"):
        information_leakage(2.0, k=k, s=s, noise="uniform")
    with pytest.raises(ParameterError, match="data_law='student'"):
        information_leakage(2.0, k=k, s=s, data_law="student")
    m = SpikedModel(0.5, 0.3, 10.0)
    assert m.information_leakage(1.5, 50, noise="uniform") == pytest.approx(
        m.information_leakage(1.5, 50) + 50 * non_gaussianity("uniform"), rel=1e-14
    )


def test_which_bound_applies() -> None:
    assert "exactly" in leakage_bound([1.0], 1.0, data_law="gaussian").applies
    assert "any law" in leakage_bound([1.0], 1.0).applies
    assert "D(Z_1)" in leakage_bound([1.0], 1.0, noise="laplace").applies
    rad = leakage_bound([1.0, 2.0], 1.0, noise="rademacher")
    assert rad.upper == math.inf
    assert "infinite" in rad.applies
    with pytest.raises(InputError, match="negative eigenvalue"):
        leakage_bound([[1.0, 2.0], [2.0, 1.0]], 1.0)


def test_additive_noise_leakage_bound_attribute() -> None:
    rng = np.random.default_rng(3)
    x = rng.normal(size=(500, 3)) @ np.array([[1.0, 0.5, 0.0], [0.0, 1.0, 0.2], [0.0, 0.0, 0.5]])
    frame = pl.DataFrame({"a": x[:, 0], "b": x[:, 1], "c": x[:, 2], "tag": ["u"] * 500})
    for law in ("gaussian", "laplace", "uniform", "rademacher"):
        noise = AdditiveNoise(t=0.8, distribution=law, columns=["a", "b", "c"], random_state=1).fit(frame)
        expected = 0.5 * math.log(
            np.linalg.det(np.eye(3) + np.cov(x, rowvar=False) / 0.8)
        ) + 3 * non_gaussianity(law)
        assert noise.leakage_bound_.upper == pytest.approx(expected, rel=1e-12)
        assert noise.leakage_bound_.noise == law
        assert noise.leakage_bound_.data_law == "any"


def test_knn_entropy_against_closed_form() -> None:
    rng = np.random.default_rng(8)
    cov = np.array([[1.0, 0.6], [0.6, 2.0]])
    y = rng.multivariate_normal([0, 0], cov, size=20_000)
    exact = 0.5 * math.log(np.linalg.det(2 * math.pi * math.e * cov))
    assert knn_entropy(y) == pytest.approx(exact, abs=0.02)
    with pytest.raises(InputError, match="repeated rows"):
        knn_entropy(np.zeros((10, 2)))


def test_estimate_coverage_gaussian_2d() -> None:
    # 200 draws of n = 2,000 rows: the 95 % interval holds the exact 1/2 log det(I + Sigma/t) in >= 88 %.
    cov = np.array([[2.0, 0.8], [0.8, 1.0]])
    t = 1.0
    exact = gaussian_leakage(cov, t)
    rng = np.random.default_rng(2026)
    hits = 0
    for _ in range(200):
        x = rng.multivariate_normal([0, 0], cov, size=2000)
        est = estimate_leakage(x, t=t, seed=rng)
        hits += est.lower <= exact <= est.upper
    assert hits / 200 >= 0.88


@pytest.mark.parametrize("law", ["laplace", "uniform"])
def test_estimate_matches_integration_for_non_gaussian_noise(law: str) -> None:
    rng = np.random.default_rng(5)
    w, m, s = MIX1
    comp = rng.choice(3, size=20_000, p=w)
    x = rng.normal(np.array(m)[comp], np.array(s)[comp])
    truth = _mi_1d(MIX1, law, 1.0)
    est = estimate_leakage(x, t=1.0, noise=law, seed=6)
    assert abs(est.estimate - truth) <= 4 * est.std_error + 0.01
    assert est.estimate <= leakage_bound([[_mix1_var()]], 1.0, noise=law).upper
