"""The risk section's exposure plot against k, its bounds, and 'no guarantee' for a bound of 1."""

from __future__ import annotations

import re

import numpy as np
import pytest

from sdckit.datasets import load_adult
from sdckit.report import Report
from sdckit.report._fmt import bound_text, pct
from sdckit.report._risk import exposure_against_k, exposure_figure, risk_review_section, risk_section
from sdckit.risk import exposure_curve, risk_summary

FEW = ["workclass", "marital-status", "race", "sex"]
EVERY = ["age", "workclass", "education", "marital-status", "occupation", "race", "sex", "native-country"]
# phrasings of a guarantee of 100 % (the bound of 1, printed as if it said something)
HUNDRED = re.compile(r"(at most|≤|<=|bound|sharper)\s*100(\.0*)?\s*%")


def _brute_force_exposure(rows: list[tuple[object, ...]], k: int) -> float:
    """Share of rows whose combination occurs fewer than k times, by counting with a dict."""
    counts: dict[tuple[object, ...], int] = {}
    for r in rows:
        counts[r] = counts.get(r, 0) + 1
    return sum(1 for r in rows if counts[r] < k) / len(rows)


def test_bound_text() -> None:
    assert bound_text(1.0) == "no guarantee"
    assert bound_text(0.0421) == "at most 4.21 %"
    assert pct(0.5) == "50 %"


def test_curves_against_k_truth_and_bounds() -> None:
    adult = load_adult()
    s = risk_summary(adult, FEW, k=5)
    c = exposure_against_k(s, adult, budget=0.05)
    rows = list(adult.select(FEW).iter_rows())
    for k in (2, 5, 17, 50):
        i = int(np.searchsorted(c.k, k))
        assert c.truth[i] == pytest.approx(_brute_force_exposure(rows, k), abs=1e-12)
    b = c.bounds
    assert np.all(b.single >= c.truth - 1e-12), "an upper bound below the truth"
    assert np.all(b.blocks >= c.truth - 1e-12), "the pair bound below the truth"
    assert np.all(b.blocks <= b.single + 1e-12)
    assert np.all(b.lower <= c.truth + 1e-12)
    assert c.pairs, "within 5 % some pair table is asked for on these four columns"
    assert np.any(b.blocks < b.single - 1e-6), "the pair tables sharpen the bound somewhere"
    assert c.k[0] == 2
    assert c.k[-1] == 50
    # without data there are no pair tables: the pair bound is the single-column bound
    alone = exposure_against_k(s)
    assert alone.pairs == ()
    assert np.array_equal(alone.bounds.blocks, alone.bounds.single)
    exposure_figure(s)  # the CLI's call (risk --plot) still works


def test_vacuous_bounds_read_no_guarantee() -> None:
    adult = load_adult()
    section = risk_section(adult, EVERY, k=5, budget=0.05)
    assert section.data["summary"]["bounds"]["best"] == pytest.approx(1.0)
    rep = Report("risk")
    rep.add(section)
    page = rep.render()
    assert "no guarantee" in page
    assert not HUNDRED.search(page), HUNDRED.search(page)
    truth = exposure_curve(adult, EVERY).not_k_anonymous(5)
    assert f"truth {pct(truth)}" in page
    assert section.data["exposure_against_k"]["truth"][3] == pytest.approx(truth, abs=1e-15)  # k = 5 is 4th


def test_review_section_adds_measures_with_roles() -> None:
    adult = load_adult()
    section = risk_review_section(adult, FEW, k=5, sensitive=["income"], plot=False)
    assert {"individual_risk", "l_diversity"} <= set(section.data)
    rep = Report("risk")
    rep.add(section)
    page = rep.render()
    assert "t-closeness is the largest distance" in page


def test_planner_reasonsin_percent() -> None:
    from sdckit.report._fmt import in_percent

    assert in_percent("with the chosen columns the bound would be 0.2126 > budget 0.05") == (
        "with the chosen columns the bound would be 21.3 % > budget 5 %"
    )
    assert in_percent("alone its bound is 1 > budget 0.05") == "alone its bound is 1 (no guarantee) > budget 5 %"
    assert in_percent("not chosen (weight 2); adding it gives bound 1.5e-05") == (
        "not chosen (weight 2); adding it gives bound 0.0015 %"
    )
