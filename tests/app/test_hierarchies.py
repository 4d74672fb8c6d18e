"""Hierarchies built in the workbench: intervals by breaks and by quantiles, groups of categories,
ARX's CSV format both ways, the errors in words; and the planner using them on sdcMicro's testdata2
at k = 3 proposes a recoding that releases more than one key (issue 40's Done-when)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pytest
import yaml

from sdckit.anonymize._hierarchy import Hierarchy
from sdckit.app._hierarchies import (
    grouping_hierarchy,
    hierarchy_csv,
    hierarchy_from_csv,
    interval_hierarchy,
    parse_breaks,
    parse_groups,
    quantile_breaks,
)
from sdckit.errors import ConfigError

DATA = Path(__file__).parents[1] / "data" / "sdcmicro_testdata2.csv"
KEYS = ("urbrur", "roof", "walls", "water", "electcon", "relat", "sex", "age")
AGE_BREAKS = "0, 10, 20, 30, 40, 50, 60, 70, 80, 120; 0, 20, 40, 60, 120"
WATER_GROUPS = "piped: 1, 2\nwell: 3, 4\nother: 5, 6, 7, 9"  # water has no 8


def test_interval_hierarchy_puts_each_value_in_its_interval_at_each_level() -> None:
    values = [0, 5, 19, 20, 39, 40, 80]
    h = interval_hierarchy("age", values, parse_breaks("age", "0, 20, 40, 120; 0, 40, 120"))
    assert h.n_levels == 3
    for v in values:  # brute force: the label's bounds hold the value
        for level in (1, 2):
            lo, hi = (float(x) for x in h.label(v, level)[1:-1].split(","))
            assert lo <= v < hi
        assert h.label(v, 3) == "*"
    assert h.label(19, 1) == "[0, 20)"
    assert h.label(40, 2) == "[40, 120)"


def test_quantile_breaks_split_the_values_evenly() -> None:
    rng = np.random.default_rng(5)
    x = rng.integers(0, 1000, 400).tolist()
    levels = quantile_breaks("x", x, 4)
    assert len(levels) == 2  # 4 classes, then 2
    counts = np.histogram(x, bins=levels[0])[0]
    assert len(counts) == 4
    assert counts.min() >= 90  # about 100 each
    h = interval_hierarchy("x", x, levels)
    assert h.n_levels == 3


def test_grouping_keeps_ungrouped_values_and_ends_in_star() -> None:
    h = grouping_hierarchy("water", [1, 2, 3, 4, 5, 9], parse_groups("water", "piped: 1, 2\nwell: 3, 4"))
    assert h.map([1, 2, 3, 4, 5, 9], 1) == ["piped", "piped", "well", "well", "5", "9"]
    assert set(h.map([1, 9], 2)) == {"*"}


def test_csv_is_arx_format_and_round_trips() -> None:
    h = grouping_hierarchy("water", [1, 2, 3], parse_groups("water", "piped: 1, 2"))
    text = hierarchy_csv(h)
    assert text.splitlines() == ["1;piped;*", "2;piped;*", "3;3;*"]
    again = hierarchy_from_csv("water", text, [1, 2, 3])
    assert dict(again.table) == dict(h.table)
    assert dict(Hierarchy.from_text(text).table) == dict(h.table)


@pytest.mark.parametrize(("call", "words"), [
    (lambda: parse_breaks("age", "0, ten, 20"), "column 'age': breaks"),
    (lambda: parse_breaks("age", "40, 20"), "increasing"),
    (lambda: interval_hierarchy("age", [5, 130], [[0, 20, 120]]), "value 130 is outside the breaks"),
    (lambda: grouping_hierarchy("water", [1, 2], {"a": ["1"], "b": ["1"]}), "value '1' is in groups"),
    (lambda: grouping_hierarchy("water", [1, 2], {"a": ["7"]}), "value '7' (group 'a') is not in the data"),
    (lambda: parse_groups("water", "piped 1, 2"), "is not label: value"),
    (lambda: hierarchy_from_csv("water", "1;a;*\n", [1, 2]), "value '2' is not in the file"),
    (lambda: hierarchy_from_csv("water", "1;a;*\n2;b\n", [1, 2]), "row 2 has 2 fields"),
])
def test_errors_name_the_column_the_value_and_the_fix(call: Any, words: str) -> None:
    with pytest.raises(ConfigError, match=words.replace("(", r"\(").replace(")", r"\)")):
        call()


def test_the_planner_with_page_built_hierarchies_recodes_and_releases_several_keys(tmp_path: Path) -> None:
    pytest.importorskip("fastapi", reason="sdckit app needs its extra")
    from fastapi.testclient import TestClient

    from sdckit.app import create_app
    from sdckit.pipeline import load_config, run_pipeline

    app = create_app()
    client = TestClient(app, base_url="http://127.0.0.1")
    base = client.get("/").url.path

    def wait() -> None:
        for ws in app.state.sessions.values():
            while ws.job is not None and ws.job.running:
                time.sleep(0.05)

    def post(action: str, body: dict[str, Any]) -> str:
        r = client.post(base + "api/" + action, json=body)
        assert r.status_code == 200, r.text
        assert 'id="error"' not in r.json()["panel"], r.json()["panel"][r.json()["panel"].find('id="error"'):][:400]
        wait()
        panel = str(client.get(base + "panel").json()["panel"])
        assert 'id="error"' not in panel, panel[panel.find('id="error"'):][:400]
        return panel

    post("load", {"source": str(DATA)})
    roles = {c: "none" for c in ("relat2", "water2", "water3", "represent", "category_count", "hhcivil", "ori_hid",
                                 "expend", "income", "savings")}
    roles |= {c: "quasi_identifier" for c in KEYS} | {"sampling_weight": "weight"}
    post("settings", {f"role:{c}": r for c, r in roles.items()} | {"k": "3", "budget": "0.05"})
    post("build_hierarchy", {"column": "age", "how": "breaks", "breaks": AGE_BREAKS})
    panel = post("build_hierarchy", {"column": "water", "how": "groups", "groups": WATER_GROUPS})
    assert 'id="hier-table"' in panel
    csv_text = client.get(base + "hierarchy/water.csv").text
    assert csv_text.splitlines()[0] == "1;piped;*"
    post("plan", {"hierarchies": "", "suppression": "0.1", "use_built": True})
    ws = next(iter(app.state.sessions.values()))
    plan = ws.plan
    assert len(plan.columns) > 1, plan.columns
    recoded = {c: level for c, level in plan.levels.items() if c in plan.columns and level > 0}
    assert recoded, plan.levels  # a recoding, not only withholding
    post("apply_plan", {})
    kinds = [k for k, _ in ws.state.steps]
    assert kinds[0] == "recode"
    path = tmp_path / "pipeline.yaml"
    text = client.get(base + "export/pipeline.yaml").text
    rules = yaml.safe_load(text)["steps"][0]["recode"]["rules"]
    assert set(rules) == set(recoded)
    assert isinstance(next(iter(rules.values()))["hierarchy"], dict)  # self-contained: the mapping itself
    path.write_text(text, encoding="utf-8")
    result = run_pipeline(load_config(path).replace(output_data=None, output_report=None))
    assert not result.refused
    released_keys = [c for c in KEYS if c in result.protected.columns and result.protected[c].n_unique() > 1]
    assert len(released_keys) > 1
    assert ws.run_of().result.release_measure.exposure_at_k == pytest.approx(result.release_measure.exposure_at_k)
    assert pl.Series(result.protected["water"]).cast(pl.String).is_in(["piped", "well", "other", None]).all()
