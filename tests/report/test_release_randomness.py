"""The release check states the identical-rows headline in plain words, the consistent count and
sdcMicro's figure beside it, and marks a reproducible run (and rows in input order) (issue 21)."""

from __future__ import annotations

import polars as pl

from sdckit.report._release_check import release_check_section, verdict
from sdckit.risk import measure_release


def _release() -> tuple[object, object]:
    known = pl.DataFrame({"q": ["a", "a", "a", "b", "b", "b", "c"]})
    released = pl.DataFrame({"q": ["a", "a", "a", None, None, None, None]})  # c hidden among b's
    before = measure_release(known, quasi_identifiers=["q"], k=3, budget=0.2)
    after = measure_release(released, quasi_identifiers=["q"], k=3, budget=0.2, known=known)
    return before, after


def test_headline_and_the_two_figures_beside_it() -> None:
    _, after = _release()
    text = verdict(after, allow_over_budget=False)  # type: ignore[arg-type]
    assert "every released row looks exactly like at least 2 others" in text
    # consistent count: a's 3 rows + 4 missing rows = 7 for a, 4 for b and c: nobody below 3
    assert "fewer than 3 consistent released rows for 0 % of users (0 with a single one)" in text
    assert "sdcMicro's reading), 0 % of users" in text


def test_reproducible_runs_and_input_order_are_marked() -> None:
    before, after = _release()
    plain = release_check_section(before, after)  # type: ignore[arg-type]
    assert "NOT FOR PUBLICATION" not in plain.summary
    assert plain.data["reproducible"] is False
    marked = release_check_section(before, after, reproducible=True, shuffled=False)  # type: ignore[arg-type]
    assert "NOT FOR PUBLICATION" in marked.summary
    assert "shuffle_rows: false" in marked.summary
    assert marked.data["rows_shuffled"] is False
    assert 'class="alert"' in "".join(b.html for b in marked.blocks)
