"""measure_release: the risk of the table as released, checked against brute force (issue 14)."""

from __future__ import annotations

from collections import Counter

import numpy as np
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sdckit.errors import InputError
from sdckit.risk import measure_release


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.tuples(st.integers(0, 4), st.sampled_from(["a", "b", "c"]), st.floats(0, 3)), min_size=1, max_size=60),
    st.integers(1, 6),
)
def test_exposure_uniques_and_k_anonymity_match_brute_force(rows: list[tuple[int, str, float]], k: int) -> None:
    frame = pl.DataFrame(rows, schema=["x", "s", "v"], orient="row")
    m = measure_release(frame, quasi_identifiers=["x", "s", "v"], k=k, budget=0.05)
    counts = Counter(rows)
    sizes = [counts[r] for r in rows]
    assert m.exposure_at_k == sum(s < k for s in sizes) / len(rows)
    assert m.n_unique == sum(s == 1 for s in sizes)
    assert m.k_anonymity == min(sizes)
    assert m.n_groups == len(counts)
    assert m.within_budget == (m.exposure_at_k <= 0.05)
    assert bool(m.fixes) == (not m.within_budget)


def test_withheld_quasi_identifiers_are_not_measured_and_fixes_give_figures() -> None:
    frame = pl.DataFrame({"a": [1, 1, 1, 2, 2, 2], "b": [1, 2, 3, 1, 2, 3]})
    m = measure_release(frame, quasi_identifiers=["a", "b", "gone"], k=2, budget=0.0)
    assert m.quasi_identifiers == ("a", "b")
    assert m.exposure_at_k == 1.0
    assert m.exposure_without == {"a": 0.0, "b": 0.0}
    assert any("withhold a" in f and "0 %" in f for f in m.fixes)
    d = m.to_dict()
    assert d["unit"] == "share of users (0..1)"
    assert d["within_budget"] is False


def test_missing_cells_without_wildcard_counting_are_a_value() -> None:
    frame = pl.DataFrame({"a": [1, None, None, 2]})
    m = measure_release(frame, quasi_identifiers=["a"], k=2, budget=0.5)
    import sdckit.risk as risk

    if hasattr(risk, "wildcard_group_sizes"):
        assert m.missing_semantics == "wildcard"
        # a missing cell matches any value: every row's group is at least as large as with nulls as a value
        assert m.exposure_at_k <= 0.5
    else:
        assert m.missing_semantics == "value"
        assert m.exposure_at_k == 0.5  # the two nulls form one group of 2


def test_interval_disclosure_recomputed_by_hand() -> None:
    rng = np.random.default_rng(3)
    x = rng.normal(50, 10, 300)
    y = x + rng.normal(0, 1.0, 300)
    orig = pl.DataFrame({"x": x, "q": ["a"] * 300})
    rel = pl.DataFrame({"x": y, "q": ["a"] * 300})
    m = measure_release(rel, quasi_identifiers=["q"], k=5, budget=0.05, original=orig, masked=["x"])
    assert m.interval_disclosure is not None
    expected = float(np.mean(np.abs(x - y) <= 0.05 * np.std(x, ddof=1)))
    assert m.interval_disclosure["share"] == pytest.approx(expected)
    assert m.interval_disclosure["per_column"]["x"] == pytest.approx(expected)


def test_l_diversity_is_filled_when_the_build_has_it() -> None:
    frame = pl.DataFrame({"q": ["a", "a", "b", "b"], "s": ["x", "y", "x", "x"]})
    m = measure_release(frame, quasi_identifiers=["q"], k=2, budget=0.0, sensitive=["s"])
    import sdckit.risk as risk

    if not hasattr(risk, "l_diversity"):
        assert m.l_diversity is None
        assert "not in this build" in m.l_diversity_note
        pytest.skip("sdckit.risk.l_diversity is not in this build yet")
    assert m.l_diversity is not None
    assert "s" in m.l_diversity


def test_bad_arguments() -> None:
    with pytest.raises(InputError, match="polars DataFrame"):
        measure_release({"a": [1]}, quasi_identifiers=["a"], k=2, budget=0.1)  # type: ignore[arg-type]
    with pytest.raises(InputError, match="k=0"):
        measure_release(pl.DataFrame({"a": [1]}), quasi_identifiers=["a"], k=0, budget=0.1)
    with pytest.raises(InputError, match="budget"):
        measure_release(pl.DataFrame({"a": [1]}), quasi_identifiers=["a"], k=2, budget=2.0)
