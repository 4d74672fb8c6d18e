"""Households and entities in the pipeline (issue 35): the role, k over entities, suppression and MDAV.

Every count here is made again with plain Python (sets of ids per group of written values), never
with sdckit's counting.
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pytest

from sdckit.errors import ConfigError, TooFewRowsError
from sdckit.microagg import MDAV
from sdckit.pipeline import parse_config, run_pipeline, write_outputs
from sdckit.pipeline._roles import guess_roles
from sdckit.risk import household_risk

DATA = Path(__file__).resolve().parents[1] / "data"
TESTDATA = str(DATA / "sdcmicro_testdata.csv")
KEYS = ["urbrur", "roof", "walls", "water", "electcon", "relat", "sex"]
SHARED = ["urbrur", "roof", "walls", "water", "electcon"]
EIA_AMOUNTS = ["TOTSALES"]


def _entities_per_group(frame: pl.DataFrame, keys: list[str], ids: list[Any]) -> dict[tuple[Any, ...], set[Any]]:
    groups: dict[tuple[Any, ...], set[Any]] = defaultdict(set)
    for row, e in zip(frame.select(keys).iter_rows(), ids, strict=True):
        groups[row].add(e)
    return groups


@pytest.fixture(scope="module")
def eia(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """CASC EIA with quarter (from MONTH) and a sales band (decimal order of magnitude of TOTSALES)."""
    d = pl.read_csv(DATA / "casc_eia_keys.csv.gz").with_columns(
        ((pl.col("MONTH") - 1) // 3 + 1).alias("quarter"),
        (pl.col("TOTSALES") + 1).log10().floor().cast(pl.Int64).alias("sales_band"),
    )
    path = tmp_path_factory.mktemp("eia") / "eia.csv"
    d.write_csv(path)
    return path


def _config(tmp: Path, **extra: Any) -> Any:
    raw = {"input": TESTDATA, "quasi_identifiers": KEYS, "categorical": KEYS, "weight": ["sampling_weight"],
           "k": 3, "output": {"data": str(tmp / "release.csv"), "report": None}, "reproducible": True, "seed": 5}
    raw.update(extra)
    return parse_config(raw, source="hh.yaml")


def test_entity_is_another_name_for_household(tmp_path: Path) -> None:
    assert _config(tmp_path, entity="ori_hid").household == "ori_hid"
    with pytest.raises(ConfigError, match="household or entity"):
        _config(tmp_path, entity="ori_hid", household="age")
    with pytest.raises(ConfigError, match=r"'ori_hid' is the household .* and under keep"):
        _config(tmp_path, household="ori_hid", keep=["ori_hid"])
    with pytest.raises(ConfigError, match="household_columns need household"):
        _config(tmp_path, household_columns=["roof"])


def test_a_household_column_that_varies_within_a_household_is_refused_by_name(tmp_path: Path) -> None:
    cfg = _config(tmp_path, household="ori_hid", household_columns=["roof", "sex"])
    with pytest.raises(ConfigError, match=r"column 'sex' is not constant within households: household 1 has the values"):
        run_pipeline(cfg)
    with pytest.raises(ConfigError, match=r"household: column 'ori_hdi' is not in the data\. Did you mean 'ori_hid'"):
        run_pipeline(_config(tmp_path, household="ori_hdi"))


def test_household_id_is_fresh_random_and_members_stay_together(tmp_path: Path) -> None:
    data = pl.read_csv(TESTDATA)
    cfg = _config(tmp_path, household="ori_hid", reproducible=False, seed=None, shuffle_rows=False)
    first, second = run_pipeline(cfg), run_pipeline(cfg)
    for result in (first, second):
        out = result.protected["ori_hid"].to_list()
        pairs = set(zip(data["ori_hid"].to_list(), out, strict=True))
        assert len(pairs) == data["ori_hid"].n_unique() == len(set(out))  # a bijection: households whole
        assert sum(a == b for a, b in pairs) < 20  # not the input's ids
    assert first.protected["ori_hid"].to_list() != second.protected["ori_hid"].to_list()  # OS entropy each run
    dropped = run_pipeline(_config(tmp_path, household="ori_hid", household_id="drop",
                                   steps=[{"local_suppression": {}}]))
    write_outputs(dropped)  # the written file is measured again, households taken from the input row by row
    assert "ori_hid" not in pl.read_csv(tmp_path / "release.csv").columns
    assert "ori_hid" not in dropped.protected.columns
    assert "dropped" in dropped.not_released["ori_hid"]
    assert dropped.release_measure is not None
    assert dropped.release_measure.n_entities == 1000


def test_release_household_risk_is_sdcmicros_on_the_release(tmp_path: Path) -> None:
    result = run_pipeline(_config(tmp_path, household="ori_hid"))
    m = result.release_measure
    assert m is not None
    assert m.household_risk is not None
    ref = household_risk(pl.read_csv(TESTDATA), KEYS, household="ori_hid", weights="sampling_weight")
    # no step: the release's keys are the input's, so its household risk is sdcMicro's figure
    assert m.household_risk["global_risk"] == pytest.approx(0.011312866252393163, rel=1e-12)
    assert m.household_risk["expected_households"] == pytest.approx(ref.expected_households, rel=1e-12)


def test_local_suppression_reaches_k_households_and_keeps_shared_values_whole(tmp_path: Path) -> None:
    cfg = _config(tmp_path, household="ori_hid", household_columns=SHARED, steps=[{"local_suppression": {}}])
    result = run_pipeline(cfg)
    write_outputs(result)
    written = pl.read_csv(tmp_path / "release.csv")
    groups = _entities_per_group(written, KEYS, written["ori_hid"].to_list())
    assert min(len(s) for s in groups.values()) >= 3
    for c in SHARED:  # a household's shared value: suppressed for every member or for none
        state: dict[Any, set[bool]] = defaultdict(set)
        for hid, value in zip(written["ori_hid"].to_list(), written[c].to_list(), strict=True):
            state[hid].add(value is None)
        assert all(len(s) == 1 for s in state.values()), c
    assert result.release_measure is not None
    assert result.release_measure.k_anonymity >= 3
    assert "distinct households" in result.steps[0].description


def test_eia_every_released_group_holds_three_utilities(eia: Path, tmp_path: Path) -> None:
    keys = ["STATE", "quarter", "sales_band"]
    base = {"input": str(eia), "quasi_identifiers": keys, "categorical": keys, "keep": EIA_AMOUNTS, "k": 3,
            "entity": "UTILITYID", "output": {"data": str(tmp_path / "eia_release.csv"), "report": None}}
    before = run_pipeline(parse_config(base, source="eia.yaml"))
    assert before.input_measure is not None
    # by rows the input is nearly 3-anonymous; by utilities it is far from it
    raw = pl.read_csv(eia)
    groups = _entities_per_group(raw, keys, raw["UTILITYID"].to_list())
    short = sum(1 for r in raw.select(keys).iter_rows() if len(groups[r]) < 3) / raw.height
    assert before.input_measure.exposure_at_k == pytest.approx(short, rel=1e-12)
    assert before.refused
    result = run_pipeline(parse_config({**base, "steps": [{"local_suppression": {}}]}, source="eia.yaml"))
    write_outputs(result)
    written = pl.read_csv(tmp_path / "eia_release.csv")
    groups = _entities_per_group(written, keys, written["UTILITYID"].to_list())
    assert min(len(s) for s in groups.values()) >= 3
    assert written["UTILITYID"].n_unique() == raw["UTILITYID"].n_unique()
    assert not result.refused


def test_mdav_with_an_entity_forms_no_single_entity_group(eia: Path) -> None:
    d = pl.read_csv(eia)
    plain = MDAV(k=3, columns=["TOTSALES"]).fit(d)
    plain_groups = _entities_per_group(pl.DataFrame({"g": plain.groups_}), ["g"], d["UTILITYID"].to_list())
    assert sum(len(s) == 1 for s in plain_groups.values()) > 0  # the finding: groups of one utility
    model = MDAV(k=3, columns=["TOTSALES"], entity="UTILITYID").fit(d)
    groups = _entities_per_group(pl.DataFrame({"g": model.groups_}), ["g"], d["UTILITYID"].to_list())
    assert min(len(s) for s in groups.values()) >= 3
    assert np.all(model.groups_ >= 0)
    tiny = pl.DataFrame({"x": [1.0, 2.0, 3.0, 4.0], "e": [1, 1, 2, 2]})
    with pytest.raises(TooFewRowsError, match="2 distinct entities, fewer than k=3"):
        MDAV(k=3, columns=["x"], entity="e").fit(tiny)


def test_microaggregate_step_with_a_household_refuses_other_methods(tmp_path: Path) -> None:
    cfg = _config(tmp_path, household="ori_hid", numeric=["income"],
                  steps=[{"microaggregate": {"columns": ["income"], "method": "rank"}}])
    with pytest.raises(ConfigError, match="does not keep households apart"):
        run_pipeline(cfg)
    ok = run_pipeline(_config(tmp_path, household="ori_hid", numeric=["income"],
                              steps=[{"microaggregate": {"columns": ["income"]}}]))
    income = ok.protected["income"].to_list()
    groups = _entities_per_group(pl.DataFrame({"v": income}), ["v"], ok.protected["ori_hid"].to_list())  # as released
    assert min(len(s) for s in groups.values()) >= 3


def test_a_household_id_is_never_guessed_a_quasi_identifier_or_numeric() -> None:
    roles = guess_roles(pl.read_csv(TESTDATA))
    assert "ori_hid" in roles.identifiers
    assert "ori_hid" not in roles.quasi_identifiers
    assert "ori_hid" not in roles.numeric
    flag = next(f for f in roles.flags if f.column == "ori_hid")
    assert flag.kind == "household-like"
    assert "household: ori_hid" in flag.message


def test_a_step_that_masks_members_differently_is_refused(tmp_path: Path) -> None:
    cfg = _config(tmp_path, household="ori_hid", household_columns=["roof"],
                  steps=[{"pram": {"columns": ["roof"], "pd": 0.5}}])
    with pytest.raises(ConfigError, match=r"steps\[0\]\.pram: left household-level column 'roof' different"):
        run_pipeline(cfg)
