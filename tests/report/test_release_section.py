"""The section 'Input and release, side by side' renders measures; it computes nothing itself."""

from __future__ import annotations

import polars as pl

from sdckit.pipeline._roles import Flag, Roles
from sdckit.report import Report
from sdckit.report._release_check import release_check_section
from sdckit.risk import measure_release


def _measures(budget: float) -> tuple[object, object]:
    raw = pl.DataFrame({"q": ["a", "b", "c", "d", "d", "d"], "x": [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]})
    released = pl.DataFrame({"q": ["*", "*", "*", "d", "d", "d"], "x": [2.0, 2.0, 2.0, 5.0, 5.0, 5.0]})
    before = measure_release(raw, quasi_identifiers=["q"], k=3, budget=budget)
    after = measure_release(released, quasi_identifiers=["q"], k=3, budget=budget, original=raw, masked=["x"])
    return before, after


def test_side_by_side_with_roles_and_flags() -> None:
    before, after = _measures(0.05)
    roles = Roles(quasi_identifiers=("q",), numeric=("x",), identifiers=("id",),
                  flags=(Flag("id", "id-like", "'id' looks like an identifier"),))
    section = release_check_section(before, after, roles=roles, not_released={"id": "identifier (never released)"})  # type: ignore[arg-type]
    rep = Report("t")
    rep.add(section)
    page = rep.render()
    assert "<th>input, as is</th><th>release, as written</th>" in page
    assert "Within budget" in page
    assert 'class="alert"' not in page
    assert section.data["input"]["exposure_at_k"] == 0.5
    assert section.data["release"]["exposure_at_k"] == 0.0
    assert section.data["release"]["interval_disclosure"]["per_column"]["x"] < 1.0
    assert "id-like" in page
    assert "no: identifier (never released)" in page


def test_over_budget_is_red_and_lists_fixes() -> None:
    before, _ = _measures(0.05)
    section = release_check_section(before, before)  # type: ignore[arg-type]
    html = "".join(b.html for b in section.blocks)
    assert 'class="alert"' in html
    assert "NOT SAFE TO RELEASE" in html
    assert "What would bring the release within budget" in html
    assert section.data["refused"] is True
