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


def brute_wildcard_sizes(rows: list[tuple[object, ...]]) -> list[int]:
    """For each row, the rows equal to it wherever both cells are present (None matches anything)."""
    return [
        sum(all(a is None or b is None or a == b for a, b in zip(r, s, strict=True)) for s in rows) for r in rows
    ]


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(st.one_of(st.none(), st.integers(0, 3)), st.one_of(st.none(), st.sampled_from(["a", "b"]))),
        min_size=1,
        max_size=40,
    ),
    st.integers(1, 5),
)
def test_a_missing_cell_matches_any_value(rows: list[tuple[int | None, str | None]], k: int) -> None:
    frame = pl.DataFrame(rows, schema={"x": pl.Int64, "s": pl.String}, orient="row")
    m = measure_release(frame, quasi_identifiers=["x", "s"], k=k, budget=0.05, missing_semantics="wildcard")
    sizes = brute_wildcard_sizes(rows)
    assert m.missing_semantics == "wildcard"
    # the default headline is identical rows (a missing cell a value); the wildcard figure is beside it
    default = measure_release(frame, quasi_identifiers=["x", "s"], k=k, budget=0.05)
    assert default.missing_semantics == "value"
    assert default.exposure_wildcard == pytest.approx(sum(s < k for s in sizes) / len(rows))
    strict = Counter(rows)
    assert default.exposure_at_k == pytest.approx(sum(strict[r] < k for r in rows) / len(rows))
    assert m.exposure_at_k == sum(s < k for s in sizes) / len(rows)
    assert m.k_anonymity == min(sizes)
    assert m.n_unique == sum(s == 1 for s in sizes)
    assert m.n_missing_cells == sum(v is None for r in rows for v in r)


def test_missing_cells_example() -> None:
    frame = pl.DataFrame({"a": [1, None, 2, 2], "b": ["x", "y", "y", "z"]})
    m = measure_release(frame, quasi_identifiers=["a", "b"], k=2, budget=0.5, missing_semantics="wildcard")
    # row 1 (None, y) matches row 2 (2, y); rows 0 and 3 are alone
    assert m.exposure_at_k == 0.5
    assert m.n_unique == 2


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


@settings(max_examples=40, deadline=None)
@given(
    st.lists(
        st.tuples(st.sampled_from(["a", "b", None]), st.integers(0, 2), st.sampled_from(["x", "y", "z"])),
        min_size=1,
        max_size=40,
    )
)
def test_l_diversity_matches_brute_force(rows: list[tuple[str | None, int, str]]) -> None:
    frame = pl.DataFrame(rows, schema={"q": pl.String, "r": pl.Int64, "s": pl.String}, orient="row")
    m = measure_release(frame, quasi_identifiers=["q", "r"], k=2, budget=1.0, sensitive=["s"])
    groups: dict[tuple[str | None, int], set[str]] = {}
    for q, r, s in rows:
        groups.setdefault((q, r), set()).add(s)
    distinct = [len(groups[(q, r)]) for q, r, _ in rows]
    assert m.l_diversity is not None
    got = m.l_diversity["s"]
    assert got["l"] == min(distinct)
    assert got["not_2_diverse"] == pytest.approx(sum(d < 2 for d in distinct) / len(rows))
    assert got["n_groups"] == len(groups)


def test_l_diversity_of_each_sensitive_column() -> None:
    frame = pl.DataFrame({"q": ["a", "a", "b", "b"], "s": ["x", "y", "x", "x"], "t": [1, 2, 3, 4]})
    m = measure_release(frame, quasi_identifiers=["q"], k=2, budget=0.0, sensitive=["s", "t", "gone"])
    assert m.l_diversity is not None
    assert set(m.l_diversity) == {"s", "t"}
    assert m.l_diversity["s"]["l"] == 1  # group b holds only x
    assert m.l_diversity["s"]["not_2_diverse"] == 0.5
    assert m.l_diversity["t"]["l"] == 2
    none = measure_release(frame, quasi_identifiers=["q"], k=2, budget=0.0)
    assert none.l_diversity is None
    assert none.l_diversity_note == "no sensitive column is released"


def test_bad_arguments() -> None:
    with pytest.raises(InputError, match="polars DataFrame"):
        measure_release({"a": [1]}, quasi_identifiers=["a"], k=2, budget=0.1)  # type: ignore[arg-type]
    with pytest.raises(InputError, match="k=0"):
        measure_release(pl.DataFrame({"a": [1]}), quasi_identifiers=["a"], k=0, budget=0.1)
    with pytest.raises(InputError, match="budget"):
        measure_release(pl.DataFrame({"a": [1]}), quasi_identifiers=["a"], k=2, budget=2.0)


def test_missing_cells_also_reported_as_a_value_of_their_own() -> None:
    # rows 0-3 share (a, x); row 4 has a suppressed cell: as a wildcard it joins them (group of 5),
    # as a value of its own it is alone.
    release = pl.DataFrame({"q1": ["a", "a", "a", "a", None, "b"], "q2": ["x", "x", "x", "x", "x", "y"]})
    m = measure_release(release, quasi_identifiers=["q1", "q2"], k=2, budget=0.5, missing_semantics="wildcard")
    assert m.n_missing_cells == 1
    assert m.exposure_at_k == pytest.approx(1 / 6)  # only the lone ("b", "y") row is below 2
    strict = {}
    for row in release.iter_rows():
        strict[row] = strict.get(row, 0) + 1
    expected = sum(strict[row] < 2 for row in release.iter_rows()) / release.height
    assert m.exposure_missing_as_value == pytest.approx(expected)  # 2/6: the null row is alone
    assert m.to_dict()["exposure_missing_as_value"] == pytest.approx(2 / 6)
    from sdckit.report._release_check import verdict

    assert "read as a value of its own, 33.3" in verdict(m, allow_over_budget=False)
    full = pl.DataFrame({"q1": ["a", "a"], "q2": ["x", "x"]})
    assert measure_release(full, quasi_identifiers=["q1", "q2"], k=2, budget=0.0,
                           missing_semantics="wildcard").exposure_missing_as_value is None


def test_missing_semantics_value_groups_a_missing_cell_as_a_value_everywhere() -> None:
    release = pl.DataFrame({"q1": ["a", "a", "a", "a", None, "b"], "q2": ["x", "x", "x", "x", "x", "y"]})
    m = measure_release(release, quasi_identifiers=["q1", "q2"], k=2, budget=0.2, missing_semantics="value")
    # brute force: a missing cell is one more value
    sizes = [sum(r == s for s in release.iter_rows()) for r in release.iter_rows()]
    assert m.missing_semantics == "value"
    assert m.exposure_at_k == pytest.approx(sum(x < 2 for x in sizes) / len(sizes))  # 2/6
    assert m.k_anonymity == min(sizes) == 1
    assert m.n_unique == sum(x == 1 for x in sizes)
    assert m.exposure_missing_as_value is None  # the headline already is that reading
    assert not m.within_budget  # 2/6 > 0.2, while the wildcard reading (1/6) is within it
    assert measure_release(release, quasi_identifiers=["q1", "q2"], k=2, budget=0.2,
                           missing_semantics="wildcard").within_budget
    assert m.exposure_wildcard == pytest.approx(1 / 6)  # stated beside the headline
    from sdckit.report._release_check import verdict

    text = verdict(m, allow_over_budget=False)  # the headline in plain words, sdcMicro's figure beside it
    assert "33.3 % of released rows are in groups of fewer than 2 identical rows" in text
    assert "matching any value (sdcMicro's reading), 16.7 %" in text
    with pytest.raises(InputError, match="missing_semantics"):
        measure_release(release, quasi_identifiers=["q1"], k=2, budget=0.2, missing_semantics="strict")


def brute_consistent(known: list[tuple[object, ...]], released: list[tuple[object, ...]]) -> list[int]:
    """Per user, the released rows equal to the user's values wherever the released cell is present."""
    return [sum(all(b is None or a == b for a, b in zip(u, r, strict=True)) for r in released) for u in known]


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(st.integers(0, 3), st.sampled_from(["a", "b", "c"]), st.booleans(), st.booleans(),
                  st.floats(1.0, 3.0)),  # sampling weights: population units per record, >= 1
        min_size=1,
        max_size=50,
    ),
    st.integers(1, 4),
    st.randoms(use_true_random=False),
)
def test_consistent_count_matches_brute_force(rows: list[tuple[int, str, bool, bool, float]], k: int, rnd: object) -> None:
    known = [(x, s) for x, s, _, _, _ in rows]
    released = [(None if hx else x, None if hs else s) for x, s, hx, hs, _ in rows]
    weights = [w for *_, w in rows]
    order = list(range(len(rows)))
    rnd.shuffle(order)  # type: ignore[attr-defined]
    release = pl.DataFrame([(*released[i], weights[i]) for i in order], schema={"x": pl.Int64, "s": pl.String,
                           "w": pl.Float64}, orient="row")  # shuffled: the count needs no alignment
    users = pl.DataFrame([(*u, w) for u, w in zip(known, weights, strict=True)],
                         schema={"x": pl.Int64, "s": pl.String, "w": pl.Float64}, orient="row")
    m = measure_release(release, quasi_identifiers=["x", "s"], k=k, budget=0.05, known=users, weights="w")
    counts = brute_consistent(known, released)
    assert m.consistent_below_k == pytest.approx(sum(c < k for c in counts) / len(counts))
    assert m.consistent_n_below_k == sum(c < k for c in counts)
    assert m.consistent_n_one == sum(c == 1 for c in counts)
    w = np.asarray(weights)
    assert m.population_consistent_below_k == pytest.approx(float(w[np.asarray(counts) < k].sum() / w.sum()))
    strict = Counter(released)
    sizes = np.asarray([strict[r] for r in released])
    assert m.population_exposure_at_k == pytest.approx(float(w[sizes < k].sum() / w.sum()))
    assert m.weight_column == "w"
    assert min(counts) >= 1  # every user's own row is consistent with them


def test_consistent_count_sees_what_the_wildcard_misses() -> None:
    # the example: a rare man whose race was suppressed matches 3 rows by the wildcard rule,
    # but the other rows say White: he is the only row consistent with what the attacker knows
    known = pl.DataFrame({"sex": ["m"] * 4, "race": ["Amer-Indian", "White", "White", "White"]})
    release = known.with_columns(pl.when(pl.int_range(4) == 0).then(None).otherwise(pl.col("race")).alias("race"))
    m = measure_release(release, quasi_identifiers=["sex", "race"], k=3, budget=0.0, known=known,
                        missing_semantics="wildcard")
    assert m.exposure_at_k == 0.0  # wildcard: every row in a group of >= 3
    assert m.consistent_n_one == 1
    assert m.consistent_below_k == pytest.approx(0.25)
    assert measure_release(release, quasi_identifiers=["sex", "race"], k=3, budget=0.0).exposure_at_k == 0.25
