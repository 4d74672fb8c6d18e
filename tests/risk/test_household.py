"""Household (hierarchical) risk against sdcMicro 5.8.1, and entity counts against plain Python counting."""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from sdckit.cli import app
from sdckit.errors import InputError
from sdckit.risk import entity_group_sizes, household_risk, individual_risk

DATA = Path(__file__).resolve().parents[1] / "data"
KEYS = ["urbrur", "roof", "walls", "water", "electcon", "relat", "sex"]

# Reference: sdcMicro 5.8.1 (R 4.2.2), computed once with
#   d <- read.csv("sdcmicro_testdata.csv")
#   for (v in c("urbrur","roof","walls","water","electcon","relat","sex")) d[[v]] <- as.factor(d[[v]])
#   s <- createSdcObj(d, keyVars=c("urbrur","roof","walls","water","electcon","relat","sex"),
#                     weightVar="sampling_weight", hhId="ori_hid")
#   s@risk$global$hier_risk      # 0.011312866252393163
#   s@risk$global$hier_risk_ER   # 51.812927435960688
#   s@risk$global$hier_risk_pct  # 1.1312866252393163
#   s@risk$individual[, "hier_risk"]  -> one value per household in sdcmicro_testdata_hier_risk.csv.gz
#     (u <- !duplicated(d$ori_hid); write.csv(data.frame(ori_hid=d$ori_hid[u], hier_risk=sprintf("%.15g", ...))))
SDCMICRO_HIER_RISK = 0.011312866252393163
SDCMICRO_HIER_RISK_ER = 51.812927435960688


@pytest.fixture(scope="module")
def testdata() -> pl.DataFrame:
    return pl.read_csv(DATA / "sdcmicro_testdata.csv")


@pytest.mark.parametrize("missing", ["value", "wildcard"])
def test_household_risk_equals_sdcmicro_measure_risk(testdata: pl.DataFrame, missing: str) -> None:
    h = household_risk(testdata, KEYS, household="ori_hid", weights="sampling_weight", missing=missing)  # type: ignore[arg-type]
    assert h.global_risk == pytest.approx(SDCMICRO_HIER_RISK, rel=1e-12)
    assert h.expected_reidentifications == pytest.approx(SDCMICRO_HIER_RISK_ER, rel=1e-12)
    assert 100 * h.global_risk == pytest.approx(1.1312866252393163, rel=1e-12)
    assert h.n_households == 1000
    assert h.n == 4580
    ref = pl.read_csv(DATA / "sdcmicro_testdata_hier_risk.csv.gz")
    by_id = dict(zip(h.households.tolist(), h.household_risk.tolist(), strict=True))
    got = np.array([by_id[i] for i in ref["ori_hid"].to_list()])
    np.testing.assert_allclose(got, ref["hier_risk"].to_numpy(), rtol=1e-12, atol=1e-15)
    assert h.household_size.sum() == 4580


def test_household_risk_is_the_product_formula_written_out(testdata: pl.DataFrame) -> None:
    """An independent loop: r_h = 1 - prod(1 - r_i) over members, every member carrying r_h."""
    ind = individual_risk(testdata, KEYS, weights="sampling_weight").risk
    keep: dict[int, float] = defaultdict(lambda: 1.0)
    for hid, r in zip(testdata["ori_hid"].to_list(), ind.tolist(), strict=True):
        keep[hid] *= 1.0 - r
    per_record = [1.0 - keep[hid] for hid in testdata["ori_hid"].to_list()]
    h = household_risk(testdata, KEYS, household="ori_hid", weights="sampling_weight")
    np.testing.assert_allclose(h.risk, per_record, rtol=1e-12, atol=1e-15)
    assert h.expected_households == pytest.approx(sum(1.0 - v for v in keep.values()), rel=1e-12)


def test_household_of_one_is_the_individual_risk_and_a_sure_member_makes_it_one() -> None:
    df = pl.DataFrame({"a": [1, 2, 2, 3], "hh": ["x", "y", "z", "z"]})
    h = household_risk(df, ["a"], household="hh", weights=None)
    # a=1 unique (r=1), a=2 in two records (r=1/2 each), a=3 unique (r=1)
    assert h.risk.tolist() == [1.0, 0.5, 1.0, 1.0]
    assert h.to_dict()["n_households"] == 3


def test_missing_household_id_is_refused_with_the_row() -> None:
    df = pl.DataFrame({"a": [1, 2, 3], "hh": [1, None, 2]})
    with pytest.raises(InputError, match=r"'hh' is missing in 1 rows \(first: row 2"):
        household_risk(df, ["a"], household="hh", weights=None)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 2), st.sampled_from([None, "u", "v"]), st.integers(0, 5)), min_size=1, max_size=40))
def test_entity_group_sizes_count_distinct_entities(rows: list[tuple[int, str | None, int]]) -> None:
    frame = pl.DataFrame({"a": [r[0] for r in rows], "b": [r[1] for r in rows]}, schema={"a": pl.Int64, "b": pl.String})
    entities: dict[tuple[int, str | None], set[int]] = defaultdict(set)
    for a, b, e in rows:
        entities[(a, b)].add(e)
    got = entity_group_sizes(frame, ["a", "b"], [r[2] for r in rows])
    assert got.tolist() == [len(entities[(a, b)]) for a, b, _ in rows]


def test_cli_risk_and_suppress_take_a_household(tmp_path: Path) -> None:
    runner = CliRunner()
    data = str(DATA / "sdcmicro_testdata.csv")
    got = runner.invoke(app, ["risk", data, "-c", ",".join(KEYS), "--weights", "sampling_weight",
                              "--household", "ori_hid", "-k", "3", "--json"])
    assert got.exit_code == 0, got.output
    hh = json.loads(got.output)["households"]
    assert hh["global_risk"] == pytest.approx(SDCMICRO_HIER_RISK, rel=1e-12)
    frame = pl.read_csv(DATA / "sdcmicro_testdata.csv")
    groups: dict[tuple[object, ...], set[int]] = defaultdict(set)
    for row, h in zip(frame.select(KEYS).iter_rows(), frame["ori_hid"].to_list(), strict=True):
        groups[row].add(h)
    below = sum(1 for row in frame.select(KEYS).iter_rows() if len(groups[row]) < 3)
    assert hh["share_below_k"] == pytest.approx(below / frame.height, rel=1e-12)
    out = tmp_path / "s.csv"
    got = runner.invoke(app, ["suppress", data, "-c", ",".join(KEYS), "--household", "ori_hid", "--household-columns",
                              "urbrur,roof", "-k", "3", "-o", str(out)])
    assert got.exit_code == 0, got.output
    written = pl.read_csv(out)
    assert written["ori_hid"].to_list() != frame["ori_hid"].to_list()  # fresh ids
    assert written["ori_hid"].n_unique() == 1000
    groups = defaultdict(set)
    for row, h in zip(written.select(KEYS).iter_rows(), written["ori_hid"].to_list(), strict=True):
        groups[row].add(h)
    assert min(len(s) for s in groups.values()) >= 3
