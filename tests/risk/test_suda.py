"""SUDA2: MSUs against brute-force subset enumeration, scores against sdcMicro's suda2."""

from __future__ import annotations

import math
from itertools import combinations
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sdckit.datasets import ADULT_QUASI_IDENTIFIERS, load_adult
from sdckit.errors import MissingValuesError, ParameterError
from sdckit.risk import suda2

TESTDATA = Path(__file__).resolve().parents[1] / "data" / "sdcmicro_testdata.csv"
KEYS = ["urbrur", "roof", "walls", "water", "electcon", "relat", "sex"]

# sdcMicro 5.8.1, computed with
#   d <- read.csv("sdcmicro_testdata.csv")
#   s <- suda2(d, variables=c("urbrur","roof","walls","water","electcon","relat","sex"), DisFraction=0.01)
#   s$score[i]; s$disScore[i]            printed with sprintf("%.17g"); rows 0-based here
PEER_ROWS = [  # (row, SUDA score, DIS-SUDA score)
    (3824, 720.0, 0.67814255374299959),
    (2506, 144.0, 0.27995981594660185),
    (581, 132.0, 0.26191810959728845),
    (42, 2.0, 0.0043416048363729151),
    (209, 30.0, 0.069674016800348459),
    (250, 48.0, 0.10927152553183098),
]
PEER_SUM_SCORE, PEER_N_SPECIAL, PEER_SUM_DIS = 4890.0, 157, 9.8310909212751056

# sdcMicro 5.8.1 on Adult (the shared adult.csv = sdckit.datasets.load_adult()), computed with
#   a <- read.csv("adult.csv", stringsAsFactors=TRUE, check.names=FALSE)
#   s <- suda2(a, variables=c("age","workclass","education","marital-status","occupation","race",
#                             "sex","native-country"), DisFraction=0.01)
#   sum(s$score); sum(s$score > 0); sum(s$disScore); s$score[19610]; s$disScore[19610]
ADULT_KEYS = list(ADULT_QUASI_IDENTIFIERS)  # the report's 8 quasi-identifiers
ADULT_SUM_SCORE, ADULT_N_SPECIAL, ADULT_SUM_DIS = 3504117.0, 15480, 2963.0650093344029
ADULT_ROW, ADULT_ROW_SCORE, ADULT_ROW_DIS = 19609, 5042.0, 0.88986675685967376


def brute_msu(rows: list[tuple[object, ...]], *, ignore_missing: bool = False) -> np.ndarray:
    """MSU counts by size from the definition: every subset of columns, every record."""
    n, m = len(rows), len(rows[0])
    out = np.zeros((n, m), dtype=np.int64)

    def unique(i: int, cols: tuple[int, ...]) -> bool:
        key = tuple(rows[i][c] for c in cols)
        return sum(1 for q in rows if tuple(q[c] for c in cols) == key) == 1

    for i in range(n):
        usable = [c for c in range(m) if not (ignore_missing and rows[i][c] is None)]
        for size in range(1, len(usable) + 1):
            for cols in combinations(usable, size):
                if unique(i, cols) and not any(unique(i, sub) for sub in combinations(cols, size - 1) if sub):
                    out[i, size - 1] += 1
    return out


@settings(max_examples=60, deadline=None)
@given(
    st.integers(1, 5).flatmap(
        lambda m: st.lists(st.tuples(*[st.integers(0, 2)] * m), min_size=1, max_size=24)
    )
)
def test_msus_match_brute_force(rows: list[tuple[int, ...]]) -> None:
    m = len(rows[0])
    df = pl.DataFrame(
        {f"c{j}": [r[j] for r in rows] for j in range(m)}, schema={f"c{j}": pl.Int64 for j in range(m)}
    )
    got = suda2(df, list(df.columns))
    expected = brute_msu(rows)
    assert got.msu_counts.tolist() == expected.tolist()
    weights = np.array([math.factorial(m - s) for s in range(1, m + 1)], dtype=float)
    assert got.scores.tolist() == (expected @ weights).tolist()
    assert np.all((got.dis_scores >= 0) & (got.dis_scores <= 1))


@settings(max_examples=40, deadline=None)
@given(
    st.integers(2, 4).flatmap(
        lambda m: st.lists(st.tuples(*[st.sampled_from([0, 1, None])] * m), min_size=1, max_size=20)
    )
)
def test_missing_value_and_ignore_match_brute_force(rows: list[tuple[int | None, ...]]) -> None:
    m = len(rows[0])
    df = pl.DataFrame(
        {f"c{j}": [r[j] for r in rows] for j in range(m)}, schema={f"c{j}": pl.Int64 for j in range(m)}
    )
    assert suda2(df, list(df.columns)).msu_counts.tolist() == brute_msu(rows).tolist()
    ignored = suda2(df, list(df.columns), missing="ignore")
    assert ignored.msu_counts.tolist() == brute_msu(rows, ignore_missing=True).tolist()


def test_scores_match_sdcmicro_on_testdata() -> None:
    r = suda2(pl.read_csv(TESTDATA), KEYS, dis_fraction=0.01)
    for row, score, dis in PEER_ROWS:
        assert r.scores[row] == score
        assert r.dis_scores[row] == pytest.approx(dis, abs=1e-6)
    assert r.scores.sum() == PEER_SUM_SCORE
    assert r.n_special == PEER_N_SPECIAL
    assert r.dis_scores.sum() == pytest.approx(PEER_SUM_DIS, abs=1e-5)
    d = r.to_dict()
    assert d["n_special"] == 157
    assert sum(b["n_records"] for b in d["dis_histogram"]) == 4580
    assert r.to_frame().height == 4580


@pytest.mark.slow
def test_scores_match_sdcmicro_on_adult() -> None:
    r = suda2(load_adult(), ADULT_KEYS)
    assert r.scores.sum() == ADULT_SUM_SCORE
    assert r.n_special == ADULT_N_SPECIAL
    # sdcMicro computes Q = 1 + (8 - m) / 20 and dis in float32: each DIS score differs by < 1e-7
    assert r.dis_scores.sum() == pytest.approx(ADULT_SUM_DIS, abs=ADULT_N_SPECIAL * 1e-7)
    assert r.scores[ADULT_ROW] == ADULT_ROW_SCORE
    assert r.dis_scores[ADULT_ROW] == pytest.approx(ADULT_ROW_DIS, abs=1e-6)


def test_duplicates_have_no_msu_and_text_columns_work() -> None:
    df = pl.DataFrame({"a": ["x", "x", "x", "y"], "b": ["p", "p", "p", "q"]})
    r = suda2(df, ["a", "b"])
    assert r.msu_counts.tolist() == [[0, 0], [0, 0], [0, 0], [2, 0]]
    assert r.dis_scores[:3].tolist() == [0.0, 0.0, 0.0]
    assert r.min_msu_size.tolist() == [0, 0, 0, 1]


def test_errors() -> None:
    df = pl.DataFrame({"a": [1, None], "b": [1, 2]})
    with pytest.raises(ParameterError, match="dis_fraction"):
        suda2(df, ["a", "b"], dis_fraction=1.0)
    with pytest.raises(ParameterError, match="missing='nope'"):
        suda2(df, ["a", "b"], missing="nope")  # type: ignore[arg-type]
    with pytest.raises(MissingValuesError, match="'a'"):
        suda2(df, ["a", "b"], missing="error")
    assert suda2(df, ["a", "b"], missing="drop").n == 1
