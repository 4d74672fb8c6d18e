"""The report sections of sdckit.risk."""

from __future__ import annotations

import warnings

import pytest

from sdckit.datasets import load_adult
from sdckit.errors import SdcWarning
from sdckit.plan import plan_release
from sdckit.report import Report
from sdckit.report._risk import plan_section, risk_section
from sdckit.risk import Marginals, exposure_curve


def test_risk_section_figures_match_library() -> None:
    adult = load_adult()
    cols = ["workclass", "marital-status", "race", "sex"]
    section = risk_section(adult, cols, k=5, budget=0.05)
    summary = section.data["summary"]
    assert summary["exposure"] == pytest.approx(exposure_curve(adult, cols).not_k_anonymous(5), abs=1e-15)
    assert section.data["plan"]["bound"] <= 0.05
    kinds = [b.kind for b in section.blocks]
    assert "figure" in kinds
    assert kinds.count("table") >= 3
    rep = Report("risk")
    rep.add(section)
    page = rep.render()
    assert "<svg" in page
    assert "n / 2^H" in page  # the entropy caveat is shown
    assert rep.to_dict()["sections"]["risk"]["data"]["summary"]["n_unique"] == 58


def test_plan_section() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SdcWarning)
        m = Marginals.from_data(load_adult(), ["sex", "race", "native-country", "age"])
    plan = plan_release(m, k=5, budget=0.01)
    section = plan_section(plan)
    assert section.id == "plan"
    assert section.data["plan"]["columns"] == list(plan.columns)
    assert "budget" in (section.summary or "")
