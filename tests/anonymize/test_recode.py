"""Global recoding and top/bottom coding: intervals, mappings, hierarchies, changes_, frame types."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import polars as pl
import pytest

from sdckit.anonymize import GlobalRecoder, Hierarchy, TopBottomCoder, adult_hierarchies, recode
from sdckit.datasets import ADULT_QUASI_IDENTIFIERS, load_adult, load_adult_hierarchies
from sdckit.errors import InputError, NonNumericColumnError, ParameterError


def test_breaks_with_outer_intervals_and_labels() -> None:
    df = pl.DataFrame({"age": [5, 20, 39, 40, 75, None], "id": range(6)})
    out = recode(df, {"age": {"breaks": [18, 40, 65]}})
    assert out["age"].to_list() == ["(-inf, 18)", "[18, 40)", "[18, 40)", "[40, 65)", "[65, inf)", None]
    assert out["id"].to_list() == list(range(6))
    named = recode(df, {"age": {"breaks": [18, 40, 65], "labels": ["adult", "senior"]}})
    assert named["age"].to_list()[1:4] == ["adult", "adult", "senior"]


def test_bins_width_and_quantile() -> None:
    x = np.arange(100)
    df = pd.DataFrame({"x": x})
    width = GlobalRecoder(rules={"x": {"bins": 4}}).fit(df)
    assert width.rules_["x"]["breaks"] == [0.0, 24.75, 49.5, 74.25, 99.0]
    out = width.transform(df)
    assert isinstance(out, pd.DataFrame)
    assert out["x"].value_counts().sort_index().tolist() == [25, 25, 25, 25]
    assert out["x"].iloc[-1] == "[74.25, 99]"
    skewed = pl.DataFrame({"x": np.r_[np.zeros(50), np.arange(1, 51)]})
    q = GlobalRecoder(rules={"x": {"bins": 2, "method": "quantile"}}).fit_transform(skewed)
    counts = q["x"].value_counts()["count"].to_list()
    assert sorted(counts) == [50, 50]


def test_mapping_and_changes() -> None:
    df = pl.DataFrame({"c": ["a", "b", "c", "c", None]})
    rec = GlobalRecoder(rules={"c": {"mapping": {"a": "ab", "b": "ab"}}}).fit(df)
    assert rec.transform(df)["c"].to_list() == ["ab", "ab", "c", "c", None]
    assert rec.changes_ == {"c": {"cells_changed": 2, "values_merged": 1}}


def test_builtin_adult_hierarchies_cover_adult() -> None:
    adult = pl.concat([load_adult(), load_adult("test").with_columns(pl.col("income").str.strip_chars("."))])
    hs = load_adult_hierarchies()
    assert set(hs) == set(ADULT_QUASI_IDENTIFIERS)
    for col, h in hs.items():
        for level in range(h.n_levels + 1):
            out = recode(adult, {col: {"hierarchy": f"adult:{col}", "level": level}})
            n_before = adult[col].n_unique()
            assert out[col].n_unique() <= n_before
            if level == h.n_levels:
                assert out[col].n_unique() == 1
        # each level is a coarsening of the one below: one label below maps to one label above
        for level in range(1, h.n_levels):
            pairs = {(h.table[v][level - 1], h.table[v][level]) for v in h.table}
            assert len({a for a, _ in pairs}) == len(pairs)
    assert adult_hierarchies()["age"].label(37, 1) == "[35, 40)"


def test_hierarchy_csv_roundtrip_and_errors(tmp_path: Path) -> None:
    path = tmp_path / "h.csv"
    path.write_text("a;x;*\nb;x;*\nc;y;*\n", encoding="utf-8")
    h = Hierarchy.from_csv(path)
    assert h.n_levels == 2
    df = pl.DataFrame({"v": ["a", "b", "c"]})
    assert recode(df, {"v": {"hierarchy": str(path), "level": 1}})["v"].to_list() == ["x", "x", "y"]
    assert recode(df, {"v": {"hierarchy": {"a": ["x"], "b": ["x"], "c": ["c"]}}})["v"].to_list() == [
        "x",
        "x",
        "c",
    ]
    with pytest.raises(InputError, match="'d' is not in the hierarchy"):
        recode(pl.DataFrame({"v": ["d"]}), {"v": {"hierarchy": str(path), "level": 1}})
    with pytest.raises(ParameterError, match=r"levels 0 \(raw\) to 2"):
        recode(df, {"v": {"hierarchy": str(path), "level": 3}})
    path.write_text("a;x\nb\n", encoding="utf-8")
    with pytest.raises(InputError, match="row 2"):
        Hierarchy.from_csv(path)


def test_recode_errors() -> None:
    df = pl.DataFrame({"s": ["a", "b"], "x": [1, 2]})
    with pytest.raises(NonNumericColumnError):
        recode(df, {"s": {"breaks": [1, 2]}})
    with pytest.raises(ParameterError, match="not understood"):
        recode(df, {"x": {"brakes": [1]}})
    with pytest.raises(ParameterError, match="needs rules"):
        GlobalRecoder().fit(df)


def test_top_bottom_coding() -> None:
    df = pl.DataFrame({"inc": [1, 5, 10, 50, 100, None], "w": [1.0] * 6})
    tb = TopBottomCoder(top=50, bottom=5).fit(df)
    out = tb.transform(df)
    assert out["inc"].to_list() == [5, 5, 10, 50, 50, None]
    assert out.schema["inc"] == pl.Int64
    assert tb.changes_["inc"] == {"cells_changed": 2, "values_merged": 2, "n_top": 1, "n_bottom": 1}
    q = TopBottomCoder(columns=["inc"], top_quantile=0.75).fit(df)
    assert q.thresholds_["inc"] == (None, float(np.quantile([1, 5, 10, 50, 100], 0.75)))
    lab = TopBottomCoder(top={"inc": 50}, top_value=">= 50").fit_transform(df.drop_nulls().to_pandas())
    assert lab["inc"].tolist()[3:5] == ["50", ">= 50"]
    with pytest.raises(ParameterError, match="not both"):
        TopBottomCoder(top=1, top_quantile=0.5).fit(df)


# --- closed="right": sdcMicro's globalRecode classes (issue 22) ---------------------------------------
# Reference counts from sdcMicro 5.8.1 (R 4.x), on its package data `testdata`
# (tests/data/sdcmicro_testdata.csv):
#   testdata$age <- as.numeric(testdata$age)
#   sdc <- createSdcObj(testdata, keyVars = c("urbrur", "roof", "walls", "water", "electcon", "relat",
#                       "sex", "age"), numVars = c("expend", "income", "savings"), w = "sampling_weight")
#   sdc <- globalRecode(sdc, column = "age", breaks = c(0, 15, 30, 45, 60, 95))
#   table(get.sdcMicroObj(sdc, "manipKeyVars")$age, useNA = "always")
#   -> (0,15] 1871  (15,30] 1092  (30,45] 847  (45,60] 425  (60,95] 247  <NA> 98
#   table(sdcMicro:::globalRecodeWORK(testdata$income / 1e6, breaks = c(2.5, 10.25, 25.3, 57.8, 120.125)),
#         useNA = "always")
#   -> (2.5,10.25] 337  (10.25,25.3] 696  (25.3,57.8] 1460  (57.8,120.125] 1960  <NA> 127
SDCMICRO_AGE = {"(0, 15]": 1871, "(15, 30]": 1092, "(30, 45]": 847, "(45, 60]": 425, "(60, 95]": 247, None: 98}
SDCMICRO_INCOME = {"(2.5, 10.25]": 337, "(10.25, 25.3]": 696, "(25.3, 57.8]": 1460, "(57.8, 120.125]": 1960,
                   None: 127}


def _testdata() -> pl.DataFrame:
    from pathlib import Path

    path = Path(__file__).resolve().parents[1] / "data" / "sdcmicro_testdata.csv"
    return pl.read_csv(path).with_columns(income=pl.col("income") / 1e6)


def _counts(values: list[object]) -> dict[object, int]:
    out: dict[object, int] = {}
    for v in values:
        out[v] = out.get(v, 0) + 1
    return out


def test_right_closed_classes_are_sdcmicros_on_integers() -> None:
    df = _testdata()
    rec = GlobalRecoder(rules={"age": {"breaks": [0, 15, 30, 45, 60, 95]}}, closed="right").fit(df)
    assert _counts(rec.transform(df)["age"].to_list()) == SDCMICRO_AGE  # age 0 is outside (0, 95]: missing
    assert rec.changes_["age"]["outside_breaks"] == 98
    left = GlobalRecoder(rules={"age": {"breaks": [0, 15, 30, 45, 60, 95]}}).fit(df).transform(df)["age"]
    on_a_break = int(df["age"].is_in([15, 30, 45, 60, 95]).sum())  # 302 on the inner breaks, 1 at 95
    moved = sum(a != b.replace("[", "(").replace(")", "]") for a, b in zip(
        rec.transform(df)["age"].to_list(), left.to_list(), strict=True) if a is not None)
    assert moved == on_a_break == 303  # each record on a break lands one class lower than with [a, b)


def test_right_closed_classes_are_sdcmicros_on_real_values() -> None:
    df = _testdata()
    rule = {"income": {"breaks": [2.5, 10.25, 25.3, 57.8, 120.125], "closed": "right"}}  # closed per rule
    got = GlobalRecoder(rules=rule).fit(df).transform(df)["income"].to_list()
    assert _counts(got) == SDCMICRO_INCOME


def test_interval_labels_keep_full_precision() -> None:
    df = pl.DataFrame({"x": [1_000_000.0, 1_000_000.4, 1_000_000.7, 2.0]})
    out = GlobalRecoder(rules={"x": {"breaks": [0, 1_000_000.2, 1_000_000.5, 1_000_001]}}).fit(df).transform(df)
    labels = out["x"].to_list()
    assert labels == ["[0, 1000000.2)", "[1000000.2, 1000000.5)", "[1000000.5, 1000001)", "[0, 1000000.2)"]
    assert len(set(labels[:3])) == 3  # before: two intervals under one label '[1e+06, 1e+06)'


def test_closed_must_be_left_or_right() -> None:
    with pytest.raises(ParameterError, match="closed='middle'"):
        GlobalRecoder(rules={"age": {"breaks": [0, 10]}}, closed="middle").fit(pl.DataFrame({"age": [1]}))


def test_pipeline_recode_takes_closed_right(tmp_path: Path) -> None:
    from sdckit.pipeline import parse_config, run_pipeline

    csv = tmp_path / "t.csv"
    _testdata().head(400).write_csv(csv)
    cfg = parse_config({"input": str(csv), "quasi_identifiers": ["age", "sex"], "k": 2, "allow_over_budget": True,
                        "steps": [{"recode": {"rules": {"age": {"breaks": [10, 15, 30, 45, 60, 95]}}, "closed": "right"}}],
                        "output": {"report": None}})
    result = run_pipeline(cfg)
    expected = GlobalRecoder(rules={"age": {"breaks": [10, 15, 30, 45, 60, 95]}}, closed="right").fit_transform(
        _testdata().head(400))["age"].to_list()
    assert result.row_order is not None  # released in random order: released row i is input row row_order[i]
    assert result.protected["age"].to_list() == [expected[i] for i in result.row_order]
    assert "outside the breaks, now missing" in result.steps[0].description
