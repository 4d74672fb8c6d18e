"""The private-PCA report section: the structure test first, then a design whose two plots agree."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from sdckit._io import check_numeric
from sdckit.datasets import ADULT_NUMERIC, load_adult
from sdckit.report import Report
from sdckit.report._spectral import eigen_structure, spectral_section
from sdckit.spectral import fit_spiked

TESTDATA = Path(__file__).resolve().parents[1] / "data" / "sdcmicro_testdata.csv"


def _one_factor(n: int = 3000, p: int = 8, loading: float = 0.8, seed: int = 1) -> np.ndarray:
    """x = loading f 1' + e: correlation eigenvalues 1 + (p - 1) rho and (p - 1) times 1 - rho (a spike)."""
    rng = np.random.default_rng(seed)
    return rng.normal(size=(n, 1)) * loading + rng.normal(size=(n, p))


def _page(section: object) -> str:
    rep = Report("test")
    rep.add(section)  # type: ignore[arg-type]
    return rep.render()


def test_adult_numeric_columns_have_no_structure_and_nothing_is_recommended() -> None:
    X, names = check_numeric(load_adult(), list(ADULT_NUMERIC))
    sec = spectral_section(X, names, seed=1, budget_nats=1.0)
    # eigenvalues of a correlation matrix sum to p (its trace)
    assert float(np.sum(sec.data["eigenvalues"])) == pytest.approx(len(names), rel=1e-12)
    assert sec.data["structure"]["present"] is False
    assert "design" not in sec.data  # no noise level is designed, so none can be recommended
    assert sec.summary is not None
    assert "no noise recommended" in sec.summary
    page = _page(sec)
    assert "No structure to keep" in page
    assert "Marchenko–Pastur" in page
    assert "0.000153558" not in page
    assert "c = p/n = 0.00015" in page


def test_uncorrelated_testdata_fails_the_edge_test() -> None:
    df = pl.read_csv(TESTDATA, null_values=["NA"])
    cols = ["expend", "income", "savings"]
    X, names = check_numeric(df, cols, missing="drop")
    sec = spectral_section(X, names)
    reason = sec.data["structure"]["reason"]
    assert sec.data["structure"]["present"] is False
    assert "uncorrelated" in reason
    # the edge the test used: (1 + sqrt c)^2 is the Marchenko–Pastur edge; the TW margin lies above it
    c = len(names) / X.shape[0]
    assert sec.data["structure"]["null_edge"] > (1 + math.sqrt(c)) ** 2
    assert max(sec.data["eigenvalues"]) < sec.data["structure"]["null_edge"]


def test_edge_test_rejects_white_noise_about_one_percent_of_the_time() -> None:
    """Coverage of the null test: iid Gaussian columns are called structured in ~1 % of draws (TW1 99 %)."""
    rng = np.random.default_rng(7)
    n, p, draws, hits = 400, 6, 300, 0
    for _ in range(draws):
        x = rng.normal(size=(n, p))
        z = (x - x.mean(0)) / x.std(0)
        lam = np.sort(np.linalg.eigvalsh(z.T @ z / n))[::-1]
        fit = fit_spiked(lam, n=n)
        hits += eigen_structure(lam, n, k=fit.k, floor=fit.floor).present
    assert hits / draws <= 0.04  # ~1 % expected; binomial sd at 300 draws is 0.6 %


def test_one_factor_data_has_structure_and_the_two_plots_agree() -> None:
    x = _one_factor()
    names = [f"x{i}" for i in range(x.shape[1])]
    sec = spectral_section(x, names, seed=3, budget_nats=1.0)
    assert sec.data["structure"]["present"] is True
    d, fit = sec.data["design"], sec.data["fit"]
    assert fit["k"] == 1
    assert d["information_leakage_nats"] <= 1.0
    # the share kept, recomputed from the model: U(b + t) / U(b) (the U(t) plot's dot)
    from sdckit.spectral import SpikedModel

    m = SpikedModel(fit["c"], fit["r"], fit["s"])
    share = float(m.separation(d["t"] + fit["floor"])) / float(m.separation(fit["floor"]))
    assert d["utility_share"] == pytest.approx(share, rel=1e-9)
    assert 0 < share < 1
    assert sec.summary is not None
    assert f"{share:.0%}" in sec.summary
    page = _page(sec)
    assert page.count("<svg") == 2
    assert "Which bound applies: Gaussian noise on data of any law" in page
    assert "an estimate, not a bound" in page


def test_a_budget_that_keeps_nothing_says_why_and_recommends_nothing() -> None:
    x = _one_factor()
    sec = spectral_section(x, [f"x{i}" for i in range(x.shape[1])], budget_nats=0.05)
    assert sec.data["design"]["utility_share"] == 0.0
    assert sec.data["recommended"] is False
    eps_star = sec.data["leakage_at_critical_noise"]
    assert eps_star > 0.05
    page = _page(sec)
    assert "Nothing recommended" in page
    assert f"{eps_star:.3g} nats" in page
    assert sec.summary is not None
    assert "nothing recommended" in sec.summary


def test_leakage_at_critical_noise_is_where_the_gap_opens() -> None:
    """The stated threshold, checked by the designer itself: just above it some gap is kept, just below none."""
    from sdckit.spectral import SpikedModel, design_noise

    x = _one_factor()
    sec = spectral_section(x, [f"x{i}" for i in range(x.shape[1])], budget_nats=0.05)
    fit, eps_star = sec.data["fit"], sec.data["leakage_at_critical_noise"]
    m, p = SpikedModel(fit["c"], fit["r"], fit["s"]), x.shape[1]
    assert design_noise(m, p, max_leakage=eps_star * 1.02, floor=fit["floor"]).utility_share > 0
    assert design_noise(m, p, max_leakage=eps_star * 0.98, floor=fit["floor"]).utility_share == 0
