"""The anonymisers as scikit-learn transformers: arrays in and out, feature names, set_output,
seeds, the boundary's errors, and their invariants as properties (hypothesis)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.base import clone
from sklearn.pipeline import make_pipeline

from sdckit.anonymize import PRAM, GlobalRecoder, Hierarchy, LocalSuppressor, TopBottomCoder
from sdckit.errors import InputError, ParameterError, SdcError
from sdckit.risk import wildcard_group_sizes

INF = float("inf")
ARRAY = np.array([[1.0, 10.0], [1.0, 20.0], [2.0, 20.0], [2.0, 30.0], [3.0, np.nan], [3.0, 10.0]])
FRAME = pl.DataFrame({"a": ARRAY[:, 0], "b": ARRAY[:, 1]}).fill_nan(None)

ESTIMATORS = [
    GlobalRecoder(rules={"x0": {"breaks": [-INF, 2, INF], "labels": [0, 1]}}),
    TopBottomCoder(top=25, bottom=1.5),
    LocalSuppressor(k=2),
    PRAM(random_state=0),
]
IDS = [type(e).__name__ for e in ESTIMATORS]


@pytest.mark.parametrize("est", ESTIMATORS, ids=IDS)
def test_array_in_array_out_and_feature_names(est: Any) -> None:
    est = clone(est)
    out = est.fit_transform(ARRAY)
    assert isinstance(out, np.ndarray)
    assert out.shape == ARRAY.shape
    assert np.isnan(out[4, 1])  # a NaN is a missing cell and stays missing
    assert est.n_features_in_ == 2
    assert not hasattr(est, "feature_names_in_")
    assert est.get_feature_names_out().tolist() == ["x0", "x1"]
    np.testing.assert_array_equal(est.transform(ARRAY), out)  # the same release (seeded, fitted table)
    named = clone(est)
    if isinstance(named, GlobalRecoder):
        named.set_params(rules={"a": named.rules["x0"]})
    frame_out = named.fit_transform(FRAME)
    assert isinstance(frame_out, pl.DataFrame)
    assert frame_out.columns == ["a", "b"]
    assert named.feature_names_in_.tolist() == ["a", "b"]
    assert named.get_feature_names_out().tolist() == ["a", "b"]
    with pytest.raises(InputError, match="should match those that were passed during fit"):
        named.transform(FRAME.rename({"a": "c"}))
    with pytest.raises(InputError, match=r"X has 1 features, but .* is expecting 2"):
        named.transform(FRAME.select("a"))


@pytest.mark.parametrize("est", ESTIMATORS, ids=IDS)
def test_set_output(est: Any) -> None:
    if est.get_params().get("random_state", 0) is None:  # two random fits differ: compare one seed
        est = clone(est).set_params(random_state=0)
    out = clone(est).set_output(transform="pandas").fit_transform(ARRAY)
    assert isinstance(out, pd.DataFrame)
    assert list(out.columns) == ["x0", "x1"]
    expected = clone(est).fit_transform(ARRAY)
    np.testing.assert_array_equal(out.to_numpy(dtype=float), expected.astype(float))
    polars_out = make_pipeline(clone(est)).set_output(transform="polars").fit_transform(ARRAY)
    assert isinstance(polars_out, pl.DataFrame)
    assert polars_out.columns == ["x0", "x1"]


def test_numeric_labels_keep_the_column_numeric_and_outside_values_refused() -> None:
    df = pl.DataFrame({"age": [5, 25, 47, None], "id": range(4)})
    rec = GlobalRecoder(rules={"age": {"breaks": [0, 20, 40, 60], "labels": [10, 30, 50]}}).fit(df)
    out = rec.transform(df)
    assert out["age"].to_list() == [10, 30, 50, None]
    assert out.schema["age"] == pl.Int64
    assert rec.changes_["age"] == {"cells_changed": 3, "values_merged": 0}
    mixed = GlobalRecoder(rules={"age": {"breaks": [0, 20, 60], "labels": [10, 40.5]}}).fit_transform(df)
    assert mixed.schema["age"] == pl.Float64
    assert mixed["age"].to_list() == [10.0, 40.5, 40.5, None]
    with pytest.raises(InputError, match=r"column 'age': value 75 is outside the breaks \[0, 60\).*-inf and inf"):
        GlobalRecoder(rules={"age": {"breaks": [0, 20, 60], "labels": [1, 2]}}).fit(
            pl.DataFrame({"age": [5, 75]})
        )
    text = GlobalRecoder(rules={"age": {"breaks": [0, 60], "labels": ["young"]}}).fit_transform(
        pl.DataFrame({"age": [5, 75]})
    )
    assert text["age"].to_list() == ["young", "[60, inf)"]  # text labels: the outer intervals as before


def test_hierarchy_values_unseen_in_fit_are_recoded_not_let_through() -> None:
    h = Hierarchy.from_rows([["a", "ab"], ["b", "ab"], ["c", "c"]])
    rec = GlobalRecoder(rules={"v": {"hierarchy": h, "level": 1}}).fit(pl.DataFrame({"v": ["a", "c"]}))
    assert rec.transform(pl.DataFrame({"v": ["b", "a", None]}))["v"].to_list() == ["ab", "ab", None]
    with pytest.raises(InputError, match="column 'v': value 'z' is not in the hierarchy"):
        rec.transform(pl.DataFrame({"v": ["z", "a"]}))


def test_boundary_errors_name_the_parameter_and_the_fix() -> None:
    with pytest.raises(ParameterError, match=r"random_state=-1: give a whole number >= 0"):
        PRAM(random_state=-1).fit(FRAME)
    with pytest.raises(ParameterError, match=r"random_state='x'"):
        LocalSuppressor(k=2, method="sdcmicro", random_redaction=0.1, random_state="x").fit(FRAME)  # type: ignore[arg-type]
    with pytest.raises(ParameterError, match=r"rules=\[.*\]: GlobalRecoder needs rules \{column: rule\}"):
        GlobalRecoder(rules=[("a", {"bins": 2})]).fit(FRAME)  # type: ignore[arg-type]
    with pytest.raises(ParameterError, match=r"matrix=\[1\]: give \{column:"):
        PRAM(matrix=[1]).fit(FRAME)  # type: ignore[arg-type]
    text = pl.DataFrame({"s": ["a", "b"], "t": ["c", "d"]})
    with pytest.raises(ParameterError, match=r"no numeric column to code among 's' \(String\), 't'"):
        TopBottomCoder(top=1).fit(text)
    with pytest.raises(ParameterError, match=r"larger than the 1 records \(n_samples = 1\)"):
        LocalSuppressor(k=2).fit(np.array([[1.0, 2.0]]))
    with pytest.raises(InputError, match="x1"):  # inf is not a missing cell: refused, column named
        TopBottomCoder(top=1).fit(np.array([[1.0, 2.0], [1.0, INF]]))
    with pytest.raises(ParameterError, match=r"top gives a threshold for column 'b', which is not among .*\['a'\]"):
        TopBottomCoder(columns=["a"], top={"b": 5}, bottom=1).fit(FRAME)  # b would go out uncoded
    with pytest.raises(ParameterError, match=r"matrix gives a transition matrix for column 'b'"):
        PRAM(columns=["a"], matrix={"b": {"10": {"10": 1.0}}}).fit(FRAME)
    for err in (ParameterError, InputError):
        assert issubclass(err, SdcError)
        assert issubclass(err, ValueError)


def test_generator_and_int_seeds_reproduce_and_params_stay_as_given() -> None:
    df = pl.DataFrame({"v": list("aabbbccccd") * 5, "w": list("xy") * 25})
    for make in (lambda rs: PRAM(random_state=rs),
                 lambda rs: LocalSuppressor(k=3, method="sdcmicro", random_redaction=0.3, random_state=rs)):
        a, b = make(7).fit_transform(df), make(7).fit_transform(df)
        assert a.equals(b)
        g1, g2 = make(np.random.default_rng(7)), make(np.random.default_rng(7))
        assert g1.fit_transform(df).equals(g2.fit_transform(df))
        est = make(7)
        before = est.get_params()
        est.fit(df)
        assert est.get_params() == before


# ---------------------------------------------------------------- invariants as properties

@settings(max_examples=40, deadline=None)
@given(
    values=st.lists(st.one_of(st.none(), st.integers(-50, 50)), min_size=1, max_size=40),
    bounds=st.tuples(st.integers(-60, 60), st.integers(-60, 60)).map(sorted),
    quantiles=st.booleans(),
)
def test_property_top_bottom_output_within_bounds(values: list[int | None], bounds: list[int], quantiles: bool) -> None:
    df = pl.DataFrame({"x": values}, schema={"x": pl.Int64})
    if quantiles:
        est = TopBottomCoder(bottom_quantile=0.2, top_quantile=0.8)
    else:
        est = TopBottomCoder(bottom=bounds[0], top=bounds[1])
    if all(v is None for v in values) and quantiles:
        return  # no values: nothing to learn a quantile from (thresholds stay unset)
    out = est.fit(df).transform(df)["x"].to_list()
    lo, hi = est.thresholds_["x"]
    if quantiles:  # numpy's linear interpolation, computed independently
        present = np.array([v for v in values if v is not None], dtype=float)
        assert (lo, hi) == (float(np.quantile(present, 0.2)), float(np.quantile(present, 0.8)))
    for before, after in zip(values, out, strict=True):
        if before is None:
            assert after is None
        else:
            assert after is not None
            assert lo <= after <= hi
            assert after == min(max(before, lo), hi)  # kept inside, the threshold beyond it
    assert est.changes_["x"]["n_top"] == sum(v is not None and v > hi for v in values)
    assert est.changes_["x"]["n_bottom"] == sum(v is not None and v < lo for v in values)


@settings(max_examples=40, deadline=None)
@given(
    values=st.lists(st.one_of(st.none(), st.sampled_from(["a", "b", "c", "d"])), min_size=1, max_size=60),
    pd_=st.floats(0.0, 1.0),
    seed=st.integers(0, 2**31),
)
def test_property_invariant_pram_keeps_the_categories(values: list[str | None], pd_: float, seed: int) -> None:
    df = pl.DataFrame({"v": values}, schema={"v": pl.String})
    est = PRAM(pd=pd_, random_state=seed).fit(df)
    out = est.transform(df)["v"].to_list()
    present = {v for v in values if v is not None}
    cats, P = est.transition_["v"]
    assert sorted(cats) == sorted(present)  # one row and column per category seen, no new one
    assert {v for v in out if v is not None} <= present
    assert [v is None for v in out] == [v is None for v in values]  # missing stays missing, only it
    if not present:
        return  # a column with only missing cells: nothing to redraw (checked above: all stay missing)
    pi = np.array([values.count(c) for c in cats], dtype=float) / sum(v is not None for v in values)
    assert np.allclose(P.sum(axis=1), 1.0)
    assert (P >= 0).all()
    assert np.allclose(pi @ P, pi)  # invariant: the expected counts after PRAM are the counts before
    assert P.diagonal().min() >= pd_ - 1e-12  # every value kept with probability >= pd


@settings(max_examples=30, deadline=None)
@given(
    rows=st.lists(
        st.tuples(st.sampled_from(["a", "b", "c", None]), st.integers(0, 3), st.sampled_from(["x", "y", "z"])),
        min_size=4,
        max_size=40,
    ),
    k=st.integers(2, 4),
    p_red=st.floats(0.0, 0.5),
    seed=st.integers(0, 2**31),
)
def test_property_suppression_with_redaction_is_k_anonymous(
    rows: list[tuple[Any, ...]], k: int, p_red: float, seed: int
) -> None:
    if len(rows) < k:
        return
    df = pl.DataFrame({"u": [r[0] for r in rows], "v": [r[1] for r in rows], "w": [r[2] for r in rows]},
                      schema={"u": pl.String, "v": pl.Int64, "w": pl.String})
    est = LocalSuppressor(k=k, method="sdcmicro", random_redaction=p_red, random_state=seed).fit(df)
    out = est.transform(df)
    sizes = wildcard_group_sizes(out, ["u", "v", "w"])  # measured on the release itself
    assert sizes.min() >= k
    np.testing.assert_array_equal(sizes, est.group_sizes_)
    blank = np.column_stack([out[c].is_null().to_numpy() for c in ("u", "v", "w")])
    was = np.column_stack([df[c].is_null().to_numpy() for c in ("u", "v", "w")])
    np.testing.assert_array_equal(blank, was | est.suppressed_ | est.redacted_)
    assert not (est.suppressed_ & est.redacted_).any()
