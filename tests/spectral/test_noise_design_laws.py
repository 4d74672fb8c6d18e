"""Noise designed for its law (issue 23): the stated leakage against independent numerical integration.

The truth I(X; X + sqrt(t) Z) = h(Y) - h(sqrt(t) Z) for Gaussian data is computed here without the
code under test: in 1-D from the closed-form density of Y (normal convolved with Laplace or
uniform) by adaptive quadrature; in 2-D by convolving the data's density with the noise's on a
grid (FFT, one axis at a time). The noise entropies come from scipy.stats.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from scipy import integrate, signal, special, stats

from sdckit.errors import ConfigError, InfeasibleError
from sdckit.pipeline import parse_config, run_pipeline
from sdckit.spectral import (
    SpikedModel,
    design_noise,
    discrete_noise_entropy,
    integer_leakage_bound,
    leakage_bound,
    noise_for_covariance,
    non_gaussianity,
)


def _noise_scipy(law: str, t: float) -> stats.rv_continuous:
    if law == "laplace":
        return stats.laplace(scale=math.sqrt(t / 2))
    if law == "uniform":
        a = math.sqrt(3 * t)
        return stats.uniform(loc=-a, scale=2 * a)
    return stats.norm(scale=math.sqrt(t))


def _f_y_1d(law: str, t: float, sigma: float, y: float) -> float:
    """Density of Y = X + N, X ~ N(0, sigma^2), N the law's noise of variance t (closed forms)."""
    if law == "uniform":
        a = math.sqrt(3 * t)
        return float((stats.norm.cdf((y + a) / sigma) - stats.norm.cdf((y - a) / sigma)) / (2 * a))
    if law == "laplace":  # (1/4b) e^{-y^2/2s^2} [erfcx((s^2/b - y)/(s sqrt 2)) + erfcx((s^2/b + y)/(s sqrt 2))]
        b = math.sqrt(t / 2)
        r = sigma * math.sqrt(2)
        return float(math.exp(-(y**2) / (2 * sigma**2)) / (4 * b)
                     * (special.erfcx((sigma**2 / b - y) / r) + special.erfcx((sigma**2 / b + y) / r)))
    return float(stats.norm.pdf(y, scale=math.hypot(sigma, math.sqrt(t))))


def _mi_1d(law: str, t: float, sigma: float = 1.0) -> float:
    """I(X; X + N) for X ~ N(0, sigma^2): -int f log f by quad, minus scipy's entropy of the noise."""
    half = 12 * math.hypot(sigma, math.sqrt(t))

    def integrand(y: float) -> float:
        f = _f_y_1d(law, t, sigma, y)
        return -f * math.log(f) if f > 0 else 0.0

    h_y, _ = integrate.quad(integrand, -half, half, limit=500, epsabs=1e-11, epsrel=1e-11)
    return float(h_y - _noise_scipy(law, t).entropy())


@pytest.mark.parametrize(("budget", "law", "issue_figure"),
                         [(1.0, "laplace", 1.072), (1.0, "uniform", 1.176), (0.5, "laplace", 0.569), (0.5, "uniform", 0.676)])
def test_gaussian_design_leaks_more_with_other_laws_and_the_law_design_does_not(
    budget: float, law: str, issue_figure: float
) -> None:
    t_gauss = 1.0 / math.expm1(2 * budget)  # 1/2 log(1 + 1/t) = budget: the Gaussian design, unit variance
    assert _mi_1d("gaussian", t_gauss) == pytest.approx(budget, abs=1e-8)  # the integration is exact there
    # the audit's figure, over budget (its 0.569 is 0.5700 here, and on an FFT grid at dx = 5e-4)
    assert _mi_1d(law, t_gauss) == pytest.approx(issue_figure, abs=1.5e-3)
    t = noise_for_covariance([[1.0]], budget, noise=law)
    truth = _mi_1d(law, t)
    stated = leakage_bound([[1.0]], t, noise=law).upper
    assert stated <= budget
    assert truth <= stated + 1e-9
    # worst-noise lemma: Gaussian data leak at least the Gaussian term, so the bound is within D(Z_1)
    assert truth >= stated - non_gaussianity(law) - 1e-9


DX2 = 0.02


def _mi_2d(law: str, t: float, cov: np.ndarray) -> float:
    """I(X; X + N) for X ~ N(0, cov) in 2-D, N i.i.d. coordinates of the law: grid density, FFT."""
    half = 9 * math.sqrt(float(np.max(np.diag(cov))) + t)
    g = np.arange(-half, half + DX2 / 2, DX2)
    yy = np.meshgrid(g, g, indexing="ij")
    f_x = stats.multivariate_normal(cov=cov).pdf(np.stack(yy, axis=-1))
    kh = 10 * math.sqrt(t)
    kx = np.arange(-kh, kh + DX2 / 2, DX2)
    ker = _noise_scipy(law, t).pdf(kx)
    ker = ker / (ker.sum() * DX2)
    f = signal.fftconvolve(f_x, ker[:, None], mode="same", axes=0) * DX2
    f = signal.fftconvolve(f, ker[None, :], mode="same", axes=1) * DX2
    f = np.clip(f, 0.0, None)
    f /= f.sum() * DX2**2
    pos = f > 0
    h_y = float(-np.sum(f[pos] * np.log(f[pos])) * DX2**2)
    return h_y - 2 * float(_noise_scipy(law, t).entropy())


@pytest.fixture(scope="module")
def correlated_csv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    rng = np.random.default_rng(5)
    n = 600
    z = rng.normal(size=(n, 2)) @ np.linalg.cholesky(np.array([[1.0, 0.7], [0.7, 1.0]])).T
    frame = pl.DataFrame({
        "region": rng.choice(["a", "b", "c"], size=n),
        "x": 40.0 + 12.0 * z[:, 0],          # raw scales differ: t is in units of each column's variance
        "y": 3000.0 + 900.0 * z[:, 1],
        "count": rng.poisson(20.0, size=n),  # integer answers for discrete noise
        "visits": rng.poisson(4.0, size=n),
    })
    path = tmp_path_factory.mktemp("noise") / "correlated.csv"
    frame.write_csv(path)
    return path


def _run(csv: Path, noise: dict[str, object], numeric: list[str]) -> tuple[dict[str, object], pl.DataFrame]:
    # a reproducible run, so the law checks below are deterministic (the default draws from OS entropy)
    raw = {"input": str(csv), "quasi_identifiers": ["region"], "numeric": numeric, "steps": [{"noise": noise}],
           "reproducible": True, "seed": 20261201}
    result = run_pipeline(parse_config(raw))
    protected = result.protected  # released in random order: put each row back beside its own input row
    return result.steps[0].details, protected if result.row_order is None else protected[np.argsort(result.row_order)]


@pytest.mark.parametrize("law", ["gaussian", "laplace", "uniform"])
def test_pipeline_recommended_noise_leaks_at_most_what_it_states(correlated_csv: Path, law: str) -> None:
    budget = 1.0
    details, protected = _run(correlated_csv, {"t": "recommended", "distribution": law, "max_leakage_nats": budget},
                              ["x", "y"])
    t, stated = float(details["t"]), float(details["information_leakage_nats"])  # type: ignore[arg-type]
    assert stated <= budget
    raw = pl.read_csv(correlated_csv).select("x", "y").to_numpy()
    z = (raw - raw.mean(axis=0)) / raw.std(axis=0)
    cov = np.cov(z, rowvar=False, ddof=0)  # the covariance the stated figure is for, computed here
    truth = _mi_2d(law, t, cov)
    assert truth <= stated + 2e-3  # grid error ~1e-4
    assert truth >= 0.5 * math.log(np.linalg.det(np.eye(2) + cov / t)) - 2e-3  # worst-noise lemma
    # the noise added is of variance t in units of each column's variance
    resid = (protected.select("x", "y").to_numpy() - raw) / raw.std(axis=0)
    assert resid.var(axis=0) == pytest.approx([t, t], rel=0.2)


@pytest.mark.parametrize("law", ["rademacher", "discrete"])
def test_recommended_refused_for_laws_without_density(correlated_csv: Path, law: str) -> None:
    with pytest.raises(ConfigError, match=r"no density, so its leakage bound is infinite on continuous data"):
        _run(correlated_csv, {"t": "recommended", "distribution": law}, ["x", "y"])


def test_budget_below_the_non_gaussian_term_is_refused_with_the_figure(correlated_csv: Path) -> None:
    # 2 columns of uniform noise: the bound is at least 2 * 0.1765 = 0.353 nats at any t
    with pytest.raises(ConfigError, match=r"at least p D\(Z_1\) = 0\.35"):
        _run(correlated_csv, {"t": "recommended", "distribution": "uniform", "max_leakage_nats": 0.3}, ["x", "y"])


def test_discrete_noise_scaled_by_each_column_and_its_leakage_stated(correlated_csv: Path) -> None:
    t = 0.5
    details, protected = _run(correlated_csv, {"t": t, "distribution": "discrete"}, ["count", "visits"])
    raw = pl.read_csv(correlated_csv).select("count", "visits")
    resid = protected.select("count", "visits").to_numpy() - raw.to_numpy()
    assert protected["count"].dtype.is_integer()
    assert np.all(resid == np.round(resid))
    assert resid.var(axis=0) / raw.to_numpy().var(axis=0) == pytest.approx([t, t], rel=0.2)
    leak = details["information_leakage_nats"]
    var = raw.to_numpy().var(axis=0)
    assert leak == pytest.approx(integer_leakage_bound(var, t * var))
    # non-integer answers: no finite bound, said so
    details, _ = _run(correlated_csv, {"t": t, "distribution": "discrete"}, ["x", "y"])
    assert details["information_leakage_nats"] is None
    assert "unbounded" in str(details["leakage_bound"])


def _geometric_difference_pmf(t: float, kmax: int) -> tuple[np.ndarray, np.ndarray]:
    """pmf of G1 - G2 by convolving two geometric pmfs (scipy), q from the variance 2q/(1-q)^2 = t."""
    q = float(np.roots([t, -2 * (t + 1), t])[np.argmin(np.abs(np.roots([t, -2 * (t + 1), t])))])
    g = stats.geom(1 - q, loc=-1).pmf(np.arange(kmax + 1))
    pmf = np.convolve(g, g[::-1])
    return np.arange(-kmax, kmax + 1), pmf


@pytest.mark.parametrize("t", [0.05, 0.5, 3.0, 40.0])
def test_integer_bound_against_exact_summation(t: float) -> None:
    ks, pk = _geometric_difference_pmf(t, 2000)
    assert float(ks**2 @ pk) == pytest.approx(t, rel=1e-9)
    h_noise = float(-np.sum(pk[pk > 0] * np.log(pk[pk > 0])))
    assert discrete_noise_entropy(t) == pytest.approx(h_noise, rel=1e-9)
    # X ~ Binomial(8, 0.3): I(X; X + K) = H(X + K) - H(K), by summation
    px = stats.binom(8, 0.3).pmf(np.arange(9))
    py = np.convolve(px, pk)
    truth = float(-np.sum(py[py > 0] * np.log(py[py > 0]))) - h_noise
    var = 8 * 0.3 * 0.7
    assert 0 < truth <= integer_leakage_bound([var], [t])
    assert truth <= float(-np.sum(px * np.log(px)))  # and I <= H(X)


def test_the_audit_case_discrete_income_gets_its_variance() -> None:
    _, protected = _run(Path("examples/data/survey.csv"), {"t": 0.5, "distribution": "discrete"}, ["income"])
    raw = pl.read_csv("examples/data/survey.csv")["income"].to_numpy()
    share = float(np.var(protected["income"].to_numpy() - raw) / np.var(raw))
    assert share == pytest.approx(0.5, rel=0.25)  # was 1.06e-8 (t on the raw scale)


@pytest.mark.parametrize("floor", [0.0, 0.5])
@pytest.mark.parametrize("law", ["gaussian", "laplace", "uniform"])
def test_design_noise_never_raises_for_a_valid_budget(floor: float, law: str) -> None:
    model = SpikedModel(0.5, 0.02, 10.0)  # one spike at p = 50
    p = 50
    least = p * non_gaussianity(law)
    for budget in [least + x for x in (1e-6, 1e-3, 0.5, 1.0, 10.0, 299.0, 300.0, 301.0, 1e4, 1e9)]:
        d = design_noise(model, p, max_leakage=budget, floor=floor, noise=law)
        assert 0 < d.t < math.inf
        assert d.information_leakage_nats <= budget
        assert d.information_leakage_nats == pytest.approx(d.gaussian_leakage_nats + least, rel=1e-12)
    if law != "gaussian":
        with pytest.raises(InfeasibleError, match=r"p D\(Z_1\)"):
            design_noise(model, p, max_leakage=least * 0.99, floor=floor, noise=law)
    with pytest.raises(InfeasibleError, match="no density"):
        design_noise(model, p, max_leakage=1.0, floor=floor, noise="rademacher")
