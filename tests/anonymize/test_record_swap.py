"""Targeted record swapping (issue 35): the invariants of sdcMicro's ``recordSwap``, checked by plain counting.

The requested share is swapped, households move whole, the households at risk go first, the
swap counts per stratum follow the swap rate, and the area margins stated are those of the output.
sdcMicro 5.8.1 side by side: ``benchmarks/anonymize_record_swap.py`` (with PEER_RLIB).
"""

from __future__ import annotations

import math
from collections import defaultdict
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from sdckit.anonymize import RecordSwapper
from sdckit.datasets import make_households
from sdckit.errors import InputError, ParameterError
from sdckit.pipeline import parse_config, run_pipeline

HIER = ["region", "district"]


@pytest.fixture(scope="module")
def households() -> pl.DataFrame:
    return make_households(1500, random_state=11)


def _swap(data: pl.DataFrame, seed: int | None = 3, **kw: object) -> tuple[RecordSwapper, pl.DataFrame]:
    params: dict[str, object] = {"household": "hid", "hierarchy": HIER, "similar": ["hsize"], "swap_rate": 0.1,
                                 "k_anonymity": 3, "risk_variables": ["age_group", "national"], "random_state": seed}
    params.update(kw)
    sw = RecordSwapper(**params)  # type: ignore[arg-type]
    return sw, sw.fit_transform(data)


def _at_risk(data: pl.DataFrame, k: int) -> set[int]:
    """Households with a member whose group on (age_group, national, areas down to some level) has < k records."""
    out: set[int] = set()
    for h in range(len(HIER)):
        cols = ["age_group", "national", *HIER[: h + 1]]
        counts: dict[tuple[object, ...], int] = defaultdict(int)
        for row in data.select(cols).iter_rows():
            counts[row] += 1
        for hid, row in zip(data["hid"].to_list(), data.select(cols).iter_rows(), strict=True):
            if counts[row] < k:
                out.add(hid)
    return out


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_households_move_whole_and_only_geography_changes(households: pl.DataFrame, seed: int) -> None:
    sw, out = _swap(households, seed=seed)
    assert out.drop(HIER).equals(households.drop(HIER))  # nothing but the geography changed
    per_household: dict[int, set[tuple[object, ...]]] = defaultdict(set)
    for hid, row in zip(out["hid"].to_list(), out.select(HIER).iter_rows(), strict=True):
        per_household[hid].add(row)
    assert all(len(v) == 1 for v in per_household.values())  # every member in one area
    before = dict(zip(households["hid"].to_list(), households.select(HIER).iter_rows(), strict=True))
    after = dict(zip(out["hid"].to_list(), out.select(HIER).iter_rows(), strict=True))
    moved = {h for h in before if before[h] != after[h]}
    assert len(moved) == sw.n_swapped_households_ == 2 * sw.n_swaps_
    size = households.group_by("hid").len().rows()
    assert sum(n for h, n in size if h in moved) == sw.n_swapped_records_
    # each swap is an exchange between households of equal size (the similarity profile)
    hsize = dict(zip(households["hid"].to_list(), households["hsize"].to_list(), strict=True))
    first = {h: i for i, h in reversed(list(enumerate(households["hid"].to_list())))}
    hid_of_row = households["hid"].to_list()
    for h in moved:
        partner = hid_of_row[int(sw.partner_[first[h]])]
        assert hsize[partner] == hsize[h]
        assert after[h] == before[partner]
        assert before[h][-1] != before[partner][-1]  # another area


def test_the_requested_share_is_swapped(households: pl.DataFrame) -> None:
    m = households["hid"].n_unique()
    for rate in (0.05, 0.1, 0.2):
        sw, _ = _swap(households, swap_rate=rate, k_anonymity=0)
        asked = m * rate / 2
        assert sw.target_swaps_ in (math.floor(asked), math.ceil(asked))
        assert sw.n_not_swapped_ == 0
        assert sw.n_swaps_ == sw.target_swaps_  # no household at risk: exactly the swap rate
        assert sw.n_swapped_households_ / m == pytest.approx(rate, abs=2 / m)


def test_households_at_risk_are_swapped_first(households: pl.DataFrame) -> None:
    risky = _at_risk(households, 3)
    assert 10 < len(risky) < 500
    sw, _ = _swap(households, swap_rate=0.02)
    moved = set(households.filter(pl.Series(sw.swapped_))["hid"].to_list())
    assert sw.n_at_risk_ == len(risky)
    assert risky <= moved  # every household at risk swapped, even beyond the swap rate
    assert sw.n_swaps_ >= len(risky) / 2
    # a household not at risk is chosen only to fill its area's share of the swap rate, after the risky ones
    chosen = {households["hid"][int(i)]: households["district"][int(i)] for i in sw.order_}
    for row in sw.strata_.iter_rows(named=True):
        in_area = [h for h, d in chosen.items() if d == row["district"]]
        risky_here = sum(1 for h in in_area if h in risky)
        assert len(in_area) - risky_here <= max(0, row["target"] - risky_here)
    assert sum(1 for h in chosen if h not in risky) < len(chosen)


def test_per_stratum_counts_follow_the_swap_rate(households: pl.DataFrame) -> None:
    sw, out = _swap(households, swap_rate=0.1, k_anonymity=0)
    strata = sw.strata_
    m = households["hid"].n_unique()
    total = sw.target_swaps_
    for row in strata.iter_rows(named=True):
        share = row["households"] / m * total  # sdcMicro's distributeDraws: floor, or one more
        assert row["target"] in (math.floor(share), math.floor(share) + 1)
        assert row["chosen"] == row["target"]  # donors exist for everyone here
    assert strata["target"].sum() == total
    assert strata["swapped"].sum() == sw.n_swapped_households_
    # the stated margins are those of the output, counted again
    for level, cols in (("region", ["region"]), ("district", HIER)):
        got = out.group_by(cols).len().sort(cols)["len"].to_list()
        stated = sw.margins_.filter(pl.col("level") == level).sort("area")["records_after"].to_list()
        assert sorted(got) == sorted(stated)
    assert strata["records_out"].sum() == strata["records_in"].sum()


def test_random_draws_from_os_entropy_by_default(households: pl.DataFrame) -> None:
    a, _ = _swap(households, seed=None)
    b, _ = _swap(households, seed=None)
    assert not np.array_equal(a.swapped_, b.swapped_)
    c, _ = _swap(households, seed=5)
    d, _ = _swap(households, seed=5)
    assert np.array_equal(c.swapped_, d.swapped_)


def test_bad_input_names_the_column() -> None:
    df = pl.DataFrame({"hid": [1, 1, 2], "region": ["a", "b", "a"], "hsize": [2, 2, 1]})
    with pytest.raises(InputError, match="'region' differs within household 1"):
        RecordSwapper(household="hid", hierarchy=["region"], k_anonymity=0).fit(df)
    with pytest.raises(ParameterError, match=r"swap_rate=1\.5"):
        RecordSwapper(household="hid", hierarchy=["region"], swap_rate=1.5).fit(df)
    with pytest.raises(InputError, match="'distrct' is not in the data"):
        RecordSwapper(household="hid", hierarchy=["distrct"]).fit(df)


@pytest.mark.filterwarnings("ignore:budget=1.0")
def test_record_swap_step_in_a_household_pipeline(households: pl.DataFrame, tmp_path: Path) -> None:
    path = tmp_path / "hh.csv"
    households.write_csv(path)
    cfg = parse_config({
        "input": str(path), "quasi_identifiers": ["region", "district", "hsize", "age_group", "sex", "national"],
        "categorical": ["region", "district"], "weight": ["weight"], "keep": ["income"], "household": "hid",
        "household_columns": ["region", "district", "hsize"], "k": 3, "budget": 1.0,
        "steps": [{"record_swap": {"hierarchy": HIER, "similar": ["hsize"], "swap_rate": 0.1,
                                   "risk_variables": ["age_group", "national"]}}],
        "output": {"data": None, "report": None}, "shuffle_rows": False,
    }, source="hh.yaml")
    result = run_pipeline(cfg)
    log = result.steps[0]
    assert log.details["n_swapped_households"] >= 0.1 * 1500 - 2
    assert "moved whole with their household" in log.description
    assert log.details["randomness"] == "OS entropy (secret)"
    released = result.protected
    assert released.height == households.height
    per_household: dict[int, set[tuple[object, ...]]] = defaultdict(set)
    for hid, row in zip(released["hid"].to_list(), released.select(HIER).iter_rows(), strict=True):
        per_household[hid].add(row)
    assert all(len(v) == 1 for v in per_household.values())
    assert result.release_measure is not None
    assert result.release_measure.entity == "hid"


def test_params_round_trip() -> None:
    params = {"household": "hh", "hierarchy": ["region", "district"], "similar": [["size"], ["tenure"]],
              "swap_rate": 0.1, "k_anonymity": 2, "risk_variables": ["age"], "carry_along": ["roof"], "risk": "r",
              "risk_threshold": 0.2, "random_state": 3}
    sw = RecordSwapper(**params)  # type: ignore[arg-type]
    assert sw.get_params() == params
    assert RecordSwapper(**sw.get_params()).get_params() == params


def test_a_household_at_risk_at_the_higher_level_is_swapped_across_it(households: pl.DataFrame) -> None:
    """sdcMicro's setLevels: rare in its region (fewer than k records on the risk variables and the
    region) means swapped with a household of another region, not only of another district."""
    counts: dict[tuple[object, ...], int] = defaultdict(int)
    for row in households.select("age_group", "national", "region").iter_rows():
        counts[row] += 1
    rare_in_region = {h for h, row in zip(households["hid"].to_list(),
                                          households.select("age_group", "national", "region").iter_rows(), strict=True)
                      if counts[row] < 3}
    assert rare_in_region
    sw, _ = _swap(households, swap_rate=0.02)
    hid_of_row = households["hid"].to_list()
    region_of = dict(zip(hid_of_row, households["region"].to_list(), strict=True))
    first = {h: i for i, h in reversed(list(enumerate(hid_of_row)))}
    for h in rare_in_region:
        partner = hid_of_row[int(sw.partner_[first[h]])]
        assert sw.partner_[first[h]] >= 0
        assert region_of[partner] != region_of[h]
