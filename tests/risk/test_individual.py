"""Sampling weights, individual risk and global risk against sdcMicro, closed forms and invariants."""

from __future__ import annotations

import warnings
from collections import Counter, defaultdict
from decimal import Decimal, localcontext
from pathlib import Path

import numpy as np
import pandas as pd
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sdckit.errors import (
    ColumnNotFoundError,
    InputError,
    MissingValuesError,
    NonNumericColumnError,
    SdcWarning,
)
from sdckit.risk import benedetti_franconi, exposure_curve, individual_risk, record_risk, risk_summary

TESTDATA = Path(__file__).resolve().parents[1] / "data" / "sdcmicro_testdata.csv"
KEYS = ["urbrur", "roof", "walls", "water", "electcon", "relat", "sex"]

# sdcMicro 5.8.1 (R 4.x), computed with
#   d <- read.csv("sdcmicro_testdata.csv")
#   sdc <- createSdcObj(d, keyVars=c("urbrur","roof","walls","water","electcon","relat","sex"),
#                       weightVar="sampling_weight")
#   ir <- sdc@risk$individual          # columns risk, fk, Fk (indivRisk, method "approx")
#   sdc@risk$global$risk_ER; sdc@risk$global$risk   (measure_risk gives the same)
# printed with sprintf("%.17g"); rows are 0-based here.
PEER_ROWS = [  # (row, fk, Fk, risk)
    (42, 1, 100.0, 0.046516870565536286),
    (209, 1, 100.0, 0.046516870565536286),
    (40, 2, 200.0, 0.0096311427215602409),
    (41, 2, 200.0, 0.0096311427215602409),
    (0, 107, 10700.0, 9.433072351664937e-05),
    (1, 102, 10200.0, 9.9000099000098993e-05),
]
PEER_ER = 10.778298918734835
PEER_GLOBAL = 0.0023533403752696146


@pytest.fixture(scope="module")
def testdata() -> pl.DataFrame:
    return pl.read_csv(TESTDATA)


def test_individual_risk_matches_sdcmicro(testdata: pl.DataFrame) -> None:
    r = individual_risk(testdata, KEYS, weights="sampling_weight")
    for row, fk, big_f, risk in PEER_ROWS:
        assert r.sample_frequency[row] == fk
        assert r.population_frequency[row] == pytest.approx(big_f, abs=1e-9)
        assert r.risk[row] == pytest.approx(risk, abs=1e-6, rel=1e-9)
    assert r.expected_reidentifications == pytest.approx(PEER_ER, abs=1e-6)
    assert r.global_risk == pytest.approx(PEER_GLOBAL, abs=1e-9)
    d = r.to_dict()
    assert d["expected_reidentifications"] == pytest.approx(PEER_ER, abs=1e-6)
    assert sum(c["n_records"] for c in d["histogram"]) == r.n == 4580


def test_risk_summary_and_record_risk_report_the_same_global_risk(testdata: pl.DataFrame) -> None:
    s = risk_summary(testdata, KEYS, k=3, weights="sampling_weight", per_column=False)
    assert s.expected_reidentifications == pytest.approx(PEER_ER, abs=1e-6)
    assert s.global_risk == pytest.approx(PEER_GLOBAL, abs=1e-9)
    assert s.to_dict()["weights"] == "sampling_weight"
    out = record_risk(testdata, KEYS, weights="sampling_weight")
    assert float(out["risk_individual"].sum()) == pytest.approx(PEER_ER, abs=1e-6)
    for row, _, big_f, risk in PEER_ROWS:
        assert out["risk_population_size"][row] == pytest.approx(big_f)
        assert out["risk_individual"][row] == pytest.approx(risk, abs=1e-6, rel=1e-9)


def _closed_form(f: int, big_f: float) -> float:
    """The Benedetti-Franconi approximation written straight from sdcMicro's indivRisk (R), in
    60-digit decimal arithmetic (the float64 form loses every digit when F_k is just above f_k)."""
    if big_f == f:
        return 1.0 / f
    with localcontext() as ctx:
        ctx.prec = 60
        p = Decimal(f) / Decimal(big_f)
        if f == 1:
            return float(p / (1 - p) * (1 / p).ln())
        if f == 2:
            return float(p / (1 - p) - (p / (1 - p)) ** 2 * (1 / p).ln())
        return float(p / (f - (1 - p)))


@pytest.mark.parametrize("f", [1, 2, 3, 7])
@pytest.mark.parametrize("ratio", [1.0, 1.5, 10.0, 1000.0])
def test_formula_against_plain_python(f: int, ratio: float) -> None:
    assert benedetti_franconi(f, f * ratio) == pytest.approx(_closed_form(f, f * ratio), rel=1e-12, abs=1e-15)


@settings(max_examples=60, deadline=None)
@given(
    st.integers(1, 60),
    st.floats(1e-9, 1e7, allow_nan=False),
    st.floats(1e-9, 1e7, allow_nan=False),
)
def test_risk_in_unit_interval_and_falls_as_weights_grow(f: int, extra_a: float, extra_b: float) -> None:
    lo, hi = sorted([extra_a, extra_b])
    r_lo, r_hi = benedetti_franconi([f, f], [f + lo, f + hi])
    assert 0.0 <= r_hi <= r_lo <= 1.0
    assert r_lo <= benedetti_franconi(f, f) + 1e-12  # no weight beats the census (1 / f)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 2), st.sampled_from(["x", "y"])), min_size=1, max_size=40))
def test_unit_weights_give_one_over_fk(rows: list[tuple[int, str]]) -> None:
    df = pl.DataFrame({"a": [r[0] for r in rows], "b": [r[1] for r in rows], "w": [1.0] * len(rows)})
    counts = Counter(rows)
    expected = [1.0 / counts[r] for r in rows]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SdcWarning)
        weighted = individual_risk(df, ["a", "b"], weights="w")
        unweighted = individual_risk(df, ["a", "b"], weights=None)
    assert weighted.risk.tolist() == pytest.approx(expected, rel=1e-12)
    assert unweighted.risk.tolist() == pytest.approx(expected, rel=1e-12)
    assert unweighted.expected_reidentifications == pytest.approx(len(counts))  # sum 1/f_k = groups


@settings(max_examples=30, deadline=None)
@given(
    st.lists(st.tuples(st.integers(0, 3), st.floats(1.0, 500.0, allow_nan=False)), min_size=1, max_size=40),
    st.floats(1.0, 20.0),
)
def test_weighted_risk_matches_groupwise_python(rows: list[tuple[int, float]], scale: float) -> None:
    df = pl.DataFrame({"a": [r[0] for r in rows], "w": [r[1] for r in rows]})
    f: Counter[int] = Counter(r[0] for r in rows)
    big: defaultdict[int, float] = defaultdict(float)
    for a, w in rows:
        big[a] += w
    r = individual_risk(df, ["a"], weights="w")
    assert r.risk.tolist() == pytest.approx(
        [_closed_form(f[a], big[a]) for a, _ in rows], rel=1e-9, abs=1e-12
    )
    heavier = individual_risk(df.with_columns(pl.col("w") * scale), ["a"], weights="w")
    assert np.all(heavier.risk <= r.risk + 1e-12)


def test_exposure_curve_with_weights_eager_and_lazy_agree(testdata: pl.DataFrame) -> None:
    eager = exposure_curve(testdata, KEYS, weights="sampling_weight")
    lazy = exposure_curve(testdata.lazy(), KEYS, weights="sampling_weight")
    for c in (eager, lazy):
        assert c.not_k_anonymous(3) == pytest.approx(281 / 4580)
        # every weight is 100 here: F_k = 100 f_k, so F_k < 1000 exactly when f_k < 10
        assert c.not_k_anonymous_population(1000) == pytest.approx(c.not_k_anonymous(10))
        assert c.n_population_unique == 0
    assert eager.to_dict()["weights"] == "sampling_weight"
    plain = exposure_curve(testdata, KEYS)
    assert plain.population_sizes is None
    with pytest.raises(ValueError, match="without weights"):
        plain.not_k_anonymous_population(2)


def test_weighted_exposure_brute_force() -> None:
    df = pl.DataFrame({"a": [1, 1, 2, 3, 3, 3], "w": [1.0, 1.5, 4.0, 1.0, 1.0, 1.0]})
    c = exposure_curve(df, ["a"], weights="w")
    # F: a=1 -> 2.5 (2 users), a=2 -> 4 (1 user), a=3 -> 3 (3 users)
    assert c.not_k_anonymous_population([3, 4, 5]).tolist() == pytest.approx([2 / 6, 5 / 6, 1.0])
    assert c.n_population_unique == 0
    assert (
        exposure_curve(df.with_columns(pl.lit(1.0).alias("w")), ["a"], weights="w").n_population_unique == 1
    )


def test_weight_errors_name_the_column(testdata: pl.DataFrame) -> None:
    with pytest.raises(ColumnNotFoundError, match="Did you mean 'sampling_weight'"):
        individual_risk(testdata, KEYS, weights="sampling_weigth")
    with pytest.raises(InputError, match="at least 1"):
        individual_risk(
            testdata.with_columns(pl.lit(0.5).alias("sampling_weight")), KEYS, weights="sampling_weight"
        )
    with pytest.raises(InputError, match="positive, finite"):
        individual_risk(
            testdata.with_columns(pl.lit(-1.0).alias("sampling_weight")), KEYS, weights="sampling_weight"
        )
    with pytest.raises(MissingValuesError, match="'sampling_weight' has 4580 missing"):
        exposure_curve(
            testdata.lazy().with_columns(pl.lit(None).cast(pl.Float64).alias("sampling_weight")),
            KEYS,
            weights="sampling_weight",
        )
    with pytest.raises(NonNumericColumnError, match="'sampling_weight'"):
        record_risk(
            testdata.with_columns(pl.lit("x").alias("sampling_weight")), KEYS, weights="sampling_weight"
        )
    with pytest.raises(InputError, match="both a key column and the weights"):
        individual_risk(testdata, [*KEYS, "sampling_weight"], weights="sampling_weight")


def test_missing_keys_and_pandas_input() -> None:
    pdf = pd.DataFrame({"a": [1.0, 1.0, np.nan, np.nan, 2.0], "w": [2.0, 2.0, 3.0, 3.0, 5.0]})
    r = individual_risk(pdf, ["a"], weights="w")
    assert r.sample_frequency.tolist() == [2, 2, 2, 2, 1]  # the two missing rows form a group
    dropped = individual_risk(pdf, ["a"], weights="w", missing="drop")
    assert dropped.n == 3
    assert dropped.n_dropped == 2
    assert dropped.population_frequency.tolist() == [4.0, 4.0, 5.0]
    out = record_risk(pdf, ["a"], weights="w", k=2)
    assert isinstance(out, pd.DataFrame)
    assert out["risk_population_size"].tolist() == [4.0, 4.0, 6.0, 6.0, 5.0]
    assert r.n_above(0.5) == 0
    assert r.above(0.0).all()


def test_lazy_and_duckdb_frames_give_the_same_risk(testdata: pl.DataFrame) -> None:
    import duckdb

    eager = individual_risk(testdata, KEYS, weights="sampling_weight")
    lazy = individual_risk(testdata.lazy(), KEYS, weights="sampling_weight")
    assert lazy.risk.tolist() == eager.risk.tolist()
    rel = duckdb.from_arrow(testdata.to_arrow())
    s = risk_summary(rel, KEYS, k=3, weights="sampling_weight", per_column=False)
    assert s.expected_reidentifications == pytest.approx(PEER_ER, abs=1e-6)


# --- missing keys (issue 23): the documented reading and sdcMicro's wildcard reading by name -------

SUPPRESSED = Path(__file__).resolve().parents[1] / "data" / "testdata_suppressed_k3.csv"
# sdcMicro 5.8.1 (R 4.x) on the file (testdata after sdcMicro's localSuppression at k = 3, 293 cells
# missing; see tests/data/README.md), computed with
#   x <- read.csv("testdata_suppressed_k3.csv")
#   r <- measure_risk(x, keyVars=c("urbrur","roof","walls","water","electcon","relat","sex"),
#                     w="sampling_weight")
#   r$Res[i, ]  (risk, fk, Fk); r$global_risk_ER; r$global_risk   printed with sprintf("%.17g")
#   measure_risk(x, keyVars=...)  (no w) for the unweighted figures; rows are 0-based here.
SUPPRESSED_ROWS = [  # (row, fk, Fk, risk); rows 40-42 have a missing key
    (40, 84, 8400.0, 0.00012046741356463077),
    (41, 84, 8400.0, 0.00012046741356463077),
    (42, 88, 8800.0, 0.00011492931846914148),
    (209, 3, 300.0, 0.0049751243781094535),
    (0, 109, 10900.0, 9.2584019998148313e-05),
]
SUPPRESSED_ER = 2.1208039565636674
SUPPRESSED_GLOBAL = 0.00046305763243748195
SUPPRESSED_ER_UNWEIGHTED = 185.81028978081875


def test_wildcard_reading_matches_sdcmicro_measure_risk() -> None:
    x = pl.read_csv(SUPPRESSED)
    assert sum(x[c].null_count() for c in KEYS) == 293
    r = individual_risk(x, KEYS, weights="sampling_weight", missing="wildcard")
    assert r.missing == "wildcard"
    for row, fk, big_f, risk in SUPPRESSED_ROWS:
        assert r.sample_frequency[row] == fk
        assert r.population_frequency[row] == pytest.approx(big_f, abs=1e-9)
        assert r.risk[row] == pytest.approx(risk, abs=1e-12)
    assert r.expected_reidentifications == pytest.approx(SUPPRESSED_ER, abs=1e-9)
    assert r.global_risk == pytest.approx(SUPPRESSED_GLOBAL, abs=1e-9)
    flat = individual_risk(x, KEYS, weights=None, missing="wildcard")
    assert flat.expected_reidentifications == pytest.approx(SUPPRESSED_ER_UNWEIGHTED, abs=1e-9)


def test_value_reading_is_the_default_and_counts_missing_as_a_category() -> None:
    x = pl.read_csv(SUPPRESSED)
    r = individual_risk(x, KEYS, weights="sampling_weight")
    assert r.missing == "value"
    assert r.to_dict()["missing"] == "value"
    # independent count: pandas groups with the missing cells as one more value (dropna=False)
    pdf = x.to_pandas()
    grouped = pdf.groupby(KEYS, dropna=False)
    fk = grouped["sampling_weight"].transform("size").to_numpy()
    big_f = grouped["sampling_weight"].transform("sum").to_numpy()
    np.testing.assert_array_equal(r.sample_frequency, fk)
    np.testing.assert_allclose(r.population_frequency, big_f, rtol=0, atol=1e-9)
    # a missing cell that matches nothing can only make groups smaller: the value reading is never below
    wild = individual_risk(x, KEYS, weights="sampling_weight", missing="wildcard")
    assert np.all(r.sample_frequency <= wild.sample_frequency)
    assert r.expected_reidentifications > wild.expected_reidentifications


def test_wildcard_equals_value_without_missing_keys(testdata: pl.DataFrame) -> None:
    a = individual_risk(testdata, KEYS, weights="sampling_weight", missing="wildcard")
    b = individual_risk(testdata, KEYS, weights="sampling_weight")
    np.testing.assert_allclose(a.risk, b.risk, rtol=0, atol=1e-15)


def test_wildcard_weight_sums_brute_force() -> None:
    from sdckit.risk._counts._wildcard import wildcard_sizes, wildcard_weight_sums

    rng = np.random.default_rng(7)
    codes = rng.integers(-1, 3, size=(200, 4)).astype(np.int32)
    w = rng.uniform(1, 9, 200)
    compatible = np.all((codes[:, None, :] == codes[None, :, :]) | (codes[:, None, :] < 0) | (codes[None, :, :] < 0), axis=2)
    np.testing.assert_allclose(wildcard_weight_sums(codes, w), compatible @ w, rtol=1e-12)
    np.testing.assert_array_equal(wildcard_sizes(codes), compatible.sum(axis=1))


def test_unknown_missing_reading_is_refused() -> None:
    from sdckit.errors import ParameterError

    with pytest.raises(ParameterError, match=r"missing='any'.*'wildcard'"):
        individual_risk(pl.DataFrame({"a": [1, 2]}), ["a"], weights=None, missing="any")  # type: ignore[arg-type]
