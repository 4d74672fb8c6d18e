"""The report section on Adult's numeric columns."""

from __future__ import annotations

import time

import numpy as np
import pytest

from sdckit._io import check_numeric
from sdckit.datasets import ADULT_NUMERIC, load_adult
from sdckit.report import Report
from sdckit.report._spectral import spectral_section


def test_spectral_section_on_adult() -> None:
    X, names = check_numeric(load_adult(), list(ADULT_NUMERIC))
    t0 = time.perf_counter()
    sec = spectral_section(X, names, seed=1, budget_nats=1.0)
    assert time.perf_counter() - t0 < 20  # "a few seconds" on a quiet machine; generous when shared
    d = sec.data["design"]
    assert d["information_leakage_nats"] <= 1.0
    assert d["p"] == 5
    # eigenvalues of the correlation matrix sum to p (trace of a correlation matrix)
    assert float(np.sum(sec.data["eigenvalues"])) == pytest.approx(5.0, rel=1e-12)
    rep = Report("test")
    rep.add(sec)
    page = rep.render()
    assert "Private PCA" in page
    assert "<svg" in page
    assert sec.summary is not None
    assert "nat" in sec.summary


def test_spectral_section_says_which_bound_applies() -> None:
    X, names = check_numeric(load_adult(), list(ADULT_NUMERIC))
    sec = spectral_section(X, names, seed=1, budget_nats=1.0)
    rep = Report("test")
    rep.add(sec)
    html = rep.render()
    assert "Which bound applies: Gaussian noise on data of any law" in html
    assert "an estimate, not a bound" in html
