"""Exposure curve, exposure, record_risk and entropy against plain-Python counting."""

from __future__ import annotations

import math
import warnings
from collections import Counter

import duckdb
import numpy as np
import pandas as pd
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sdckit.datasets import load_adult
from sdckit.errors import ColumnNotFoundError, EmptyTableError, InputError, ParameterError, SdcWarning
from sdckit.risk import entropy, exposure, exposure_curve, record_risk

from .conftest import brute_exposure, table

rows_strategy = st.integers(1, 3).flatmap(
    lambda w: st.tuples(
        st.just(w), st.lists(st.tuples(*[st.integers(0, 3)] * w), min_size=1, max_size=40)
    )
)


@settings(max_examples=60, deadline=None)
@given(rows_strategy, st.integers(1, 45))
def test_curve_matches_brute_force(wr: tuple[int, list[tuple[int, ...]]], k: int) -> None:
    width, rows = wr
    df = table(rows, width)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SdcWarning)
        curve = exposure_curve(df, list(df.columns))
    n = len(rows)
    # brute force: Counter over tuples; fraction of rows in groups of <= k - 1
    assert curve.not_k_anonymous(k) == pytest.approx(brute_exposure(rows, k - 1), abs=1e-15)
    counts = Counter(rows)
    assert curve.k_anonymity == min(counts.values())
    assert curve.n_unique == sum(1 for c in counts.values() if c == 1)
    assert curve.n_groups == len(counts)
    assert curve.n == n
    # t = k / n must give back the integer threshold k (no float trap)
    assert curve.at(k / n if k <= n else 1.0) == pytest.approx(brute_exposure(rows, min(k, n)), abs=1e-15)
    # entropy: independent sum over the Counter, in bits
    h = sum((c / n) * math.log2(n / c) for c in counts.values())
    assert curve.entropy == pytest.approx(h, rel=1e-12, abs=1e-12)


@settings(max_examples=30, deadline=None)
@given(rows_strategy, st.lists(st.floats(0, 1), min_size=2, max_size=10))
def test_curve_non_decreasing_and_vectorised(wr: tuple[int, list[tuple[int, ...]]], ts: list[float]) -> None:
    width, rows = wr
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SdcWarning)
        curve = exposure_curve(table(rows, width), [f"c{j}" for j in range(width)])
    ts_sorted = np.sort(ts)
    q = curve.at(ts_sorted)
    assert np.all(np.diff(q) >= 0)
    assert q.tolist() == [curve.at(float(t)) for t in ts_sorted]
    assert curve.at(1.0) == 1.0
    assert curve.at(0.0) == 0.0


def test_adversarial_table() -> None:
    # anonymity notes §1: n/2 rows (0,1), one (0,0), n/2 (1,0): each column n/2-anonymous, joint 1-anonymous
    n = 100
    df = pl.DataFrame({"a": [0] * 50 + [0] + [1] * 50, "b": [1] * 50 + [0] + [0] * 50})
    assert exposure_curve(df, ["a"]).k_anonymity == 50
    assert exposure_curve(df, ["b"]).k_anonymity == 50
    joint = exposure_curve(df, ["a", "b"])
    assert joint.k_anonymity == 1
    assert joint.not_k_anonymous(2) == 1 / (n + 1)
    assert joint.not_k_anonymous(51) == 1.0


def test_threshold_is_integer_not_float() -> None:
    # 0.29 * 100 = 28.999999999999996 in float64; a group of 29 rows of 100 must count at t = 0.29
    df = pl.DataFrame({"a": [0] * 29 + [1] * 71})
    assert exposure(df, ["a"], t=0.29) == 0.29
    assert exposure(df, ["a"], t=0.28) == 0.0
    assert exposure(df, ["a"], k=30) == 0.29
    assert exposure(df, ["a"], k=29) == 0.0


def test_backends_agree() -> None:
    adult = load_adult()
    cols = ["workclass", "marital-status", "race", "sex"]
    ref = exposure_curve(adult, cols).to_dict()
    for source in (adult.to_pandas(), adult.to_arrow(), adult.lazy(), duckdb.from_arrow(adult.to_arrow())):
        assert exposure_curve(source, cols).to_dict() == ref
    # the same counts by plain Python over the rows
    rows = list(zip(*[adult[c].to_list() for c in cols], strict=True))
    assert exposure_curve(adult, cols).not_k_anonymous(5) == pytest.approx(brute_exposure(rows, 4), abs=1e-15)


@pytest.mark.parametrize(
    "make",
    [
        lambda v: pl.Series(v, dtype=pl.Int64),
        lambda v: pl.Series([str(x) for x in v]),
        lambda v: pl.Series([str(x) for x in v]).cast(pl.Categorical),
        lambda v: pl.Series(v, dtype=pl.Float64),
        lambda v: pl.Series([x * 10**15 for x in v], dtype=pl.Int64),  # key range overflows: group_by path
        lambda v: pl.Series([x % 2 == 0 for x in v]),
    ],
)
def test_dtypes_and_nulls(make) -> None:  # type: ignore[no-untyped-def]
    rng = np.random.default_rng(20261130)
    a = rng.integers(0, 5, 300).tolist()
    b = rng.integers(0, 7, 300).tolist()
    sa = make(a)
    df = pl.DataFrame({"a": sa, "b": pl.Series(b, dtype=pl.Int64)})
    df = df.with_columns(pl.when(pl.int_range(pl.len()) % 17 == 0).then(None).otherwise(pl.col("a")).alias("a"))
    rows = list(zip(df["a"].to_list(), df["b"].to_list(), strict=True))  # None is a value, as in policy "value"
    curve = exposure_curve(df, ["a", "b"])
    for k in (1, 2, 3, 5, 8, 20):
        assert curve.not_k_anonymous(k) == pytest.approx(brute_exposure(rows, k - 1), abs=1e-15)
    kept = [r for r in rows if r[0] is not None]
    dropped = exposure_curve(df, ["a", "b"], missing="drop")
    assert dropped.n == len(kept)
    assert dropped.not_k_anonymous(5) == pytest.approx(brute_exposure(kept, 4), abs=1e-15)


def test_large_key_space_value_counts_path() -> None:
    # 8 columns of 200 values: 200^8 > 2^28 keys, counted with value_counts on the hashed key
    rng = np.random.default_rng(7)
    half = pl.DataFrame({f"c{j}": rng.integers(0, 200, 1000) for j in range(8)})
    df = pl.concat([half, half])  # every row twice
    rows = list(df.iter_rows())
    curve = exposure_curve(df, list(df.columns))
    assert curve.not_k_anonymous(3) == brute_exposure(rows, 2)
    assert curve.k_anonymity == 2


def test_to_frame_and_dict() -> None:
    df = pl.DataFrame({"a": [1, 1, 2, 3, 3, 3]})
    frame = exposure_curve(df, ["a"]).to_frame()
    assert frame["group_size"].to_list() == [1, 2, 3]
    assert frame["n_users"].to_list() == [1, 2, 3]
    assert frame["exposure"].to_list() == pytest.approx([1 / 6, 3 / 6, 1.0], abs=1e-15)
    d = exposure_curve(df, ["a"]).to_dict()
    assert d["n_unique"] == 1
    assert d["entropy_bits"] == pytest.approx((1 / 6) * math.log2(6) + (2 / 6) * math.log2(3) + 0.5, rel=1e-12)


def test_curve_is_not_a_bool() -> None:
    curve = exposure_curve(pl.DataFrame({"a": [1, 1]}), ["a"])
    with pytest.raises(TypeError, match=r"use curve.at\(t\)"):
        bool(curve)


def test_record_risk_keeps_type_and_columns() -> None:
    pdf = pd.DataFrame({"sex": ["F", "F", "M", "M", "F"], "zip": [1, 1, 1, 2, 3], "income": [1, 2, 3, 4, 5]})
    out = record_risk(pdf, ["sex", "zip"], k=2)
    assert isinstance(out, pd.DataFrame)
    assert out["income"].tolist() == [1, 2, 3, 4, 5]
    assert out["risk_group_size"].tolist() == [2, 2, 1, 1, 1]
    assert out["risk_is_unique"].tolist() == [False, False, True, True, True]
    assert out["risk_below_k"].tolist() == [False, False, True, True, True]
    pl_out = record_risk(pl.from_pandas(pdf), "sex,zip")
    assert isinstance(pl_out, pl.DataFrame)
    assert "risk_below_k" not in pl_out.columns
    with pytest.raises(InputError, match="already has a column 'risk_group_size'"):
        record_risk(out, ["sex"])


def test_entropy_function() -> None:
    df = pl.DataFrame({"a": [0, 0, 1, 1], "b": [0, 1, 0, 1]})
    assert entropy(df, ["a"]) == 1.0
    assert entropy(df, ["a", "b"]) == 2.0


def test_errors_and_warnings() -> None:
    df = pl.DataFrame({"marital-status": ["a", "b", "a"], "x": [1, 1, 1]})
    with pytest.raises(ColumnNotFoundError, match="Did you mean 'marital-status'"):
        exposure(df, ["martial-status"], k=2)
    with pytest.raises(ParameterError, match="k=0 is below 1"):
        exposure(df, ["x"], k=0)
    with pytest.raises(ParameterError, match=r"t=1.5 is outside \[0, 1\]"):
        exposure(df, ["x"], t=1.5)
    with pytest.raises(ParameterError, match="exactly one of k"):
        exposure(df, ["x"], k=2, t=0.1)
    with pytest.raises(ParameterError, match="exactly one of k"):
        exposure(df, ["x"])
    with pytest.raises(EmptyTableError):
        exposure_curve(df.head(0), ["x"])
    with pytest.raises(EmptyTableError):
        exposure_curve(df.head(0).lazy(), ["x"])
    ids = pl.DataFrame({"id": list(range(10)), "sex": [0, 1] * 5})
    with pytest.warns(SdcWarning, match="'id' has a different value in every row"):
        exposure_curve(ids, ["id", "sex"])
    with pytest.warns(SdcWarning, match="'fnlwgt' looks like a survey weight"):
        exposure_curve(pl.DataFrame({"fnlwgt": [1, 1, 2]}), ["fnlwgt"])


def test_plot_returns_axes() -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ax = exposure_curve(pl.DataFrame({"a": [1, 1, 2]}), ["a"]).plot()
    assert ax.get_xscale() == "log"
    plt.close(ax.figure)


def test_record_risk_pandas_nulls_are_a_value() -> None:
    pdf = pd.DataFrame({"a": [1.0, 1.0, np.nan, np.nan, 2.0], "b": ["x", "x", None, None, "y"]})
    out = record_risk(pdf, ["a", "b"], k=2)
    assert out["risk_group_size"].tolist() == [2, 2, 2, 2, 1]  # the two all-missing rows form a group
    assert out["risk_below_k"].tolist() == [False, False, False, False, True]


@settings(max_examples=30, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 2), st.sampled_from(["x", "y", None])), min_size=1, max_size=30))
def test_record_risk_matches_counter(rows: list[tuple[int, str | None]]) -> None:
    df = pl.DataFrame({"a": [r[0] for r in rows], "b": [r[1] for r in rows]}, schema={"a": pl.Int64, "b": pl.String})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SdcWarning)
        out = record_risk(df, ["a", "b"], k=3)
    counts = Counter(rows)  # None is an ordinary value, as under missing="value"
    assert out["risk_group_size"].to_list() == [counts[r] for r in rows]
    assert out["risk_below_k"].to_list() == [counts[r] < 3 for r in rows]


@pytest.mark.parametrize(
    ("name", "warns"),
    [("fnlwgt", True), ("PERWT", True), ("final weight", True), ("body_weight", False), ("height", False)],
)
def test_weight_names(name: str, warns: bool) -> None:
    df = pl.DataFrame({name: [1, 1, 2, 2]})
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        exposure_curve(df, [name])
    assert any("survey weight" in str(w.message) for w in seen) == warns
