"""See the keys: frequency tables per key, the combinations held by fewer than k records (counts,
never rows), and a recoding previewed before it is applied, each checked by brute force (counting
rows in plain Python)."""

from __future__ import annotations

import re
import time
from collections import Counter
from pathlib import Path
from typing import Any

import polars as pl
import pytest

from sdckit.app._keys import combinations_below, frequency_table, preview_recode, recode_rule, records_below

DATA = Path(__file__).parents[1] / "data" / "sdcmicro_testdata2.csv"


@pytest.fixture(scope="module")
def frame() -> pl.DataFrame:
    return pl.read_csv(DATA)


def _brute(frame: pl.DataFrame, cols: list[str]) -> Counter[tuple[Any, ...]]:
    return Counter(tuple(row) for row in frame.select(cols).iter_rows())


def test_frequency_table_counts_every_value(frame: pl.DataFrame) -> None:
    rows, more = frequency_table(frame, "water", limit=100)
    assert more == 0
    assert dict(rows) == {str(v): n for (v,), n in _brute(frame, ["water"]).items()}
    assert [n for _, n in rows] == sorted((n for _, n in rows), reverse=True)
    top, more = frequency_table(frame, "age", limit=5)
    assert len(top) == 5
    assert more == frame["age"].n_unique() - 5


def test_missing_is_a_value_of_its_own() -> None:
    f = pl.DataFrame({"a": ["x", None, None, "y"], "b": [1, 1, 1, 2]})
    assert dict(frequency_table(f, "a")[0]) == {"(missing)": 2, "x": 1, "y": 1}
    combos, n, records = combinations_below(f, ["a", "b"], 2)
    assert (n, records) == (2, 2)
    assert {c for c, _ in combos} == {("x", "1"), ("y", "2")}


def test_combinations_below_k_are_the_small_groups(frame: pl.DataFrame) -> None:
    cols = ["sex", "urbrur", "water", "relat"]
    combos, n, records = combinations_below(frame, cols, 3, limit=10_000)
    small = {key: c for key, c in _brute(frame, cols).items() if c < 3}
    assert n == len(small)
    assert records == sum(small.values()) == records_below(frame, cols, 3)
    assert {tuple(int(v) for v in key): c for key, c in combos} == small
    assert [c for _, c in combos] == sorted(c for _, c in combos)  # the rarest first


def test_preview_is_what_the_recode_does(frame: pl.DataFrame) -> None:
    rule = recode_rule(frame, "age", "breaks", "0, 20, 40, 60, 120")
    assert rule == {"breaks": [0, 20, 40, 60, 120]}
    keys = ["sex", "urbrur", "age"]
    pv = preview_recode(frame, keys, 3, "age", rule)
    def band(a: int) -> str:
        return next(f"[{lo}, {hi})" for lo, hi in ((0, 20), (20, 40), (40, 60), (60, 120)) if lo <= a < hi)
    recoded = frame.with_columns(pl.Series("age", [band(a) for a in frame["age"].to_list()]))
    assert dict(pv.after) == {k[0]: c for k, c in _brute(recoded, ["age"]).items()}
    assert pv.below_before == sum(c for c in _brute(frame, keys).values() if c < 3)
    assert pv.below_after == sum(c for c in _brute(recoded, keys).values() if c < 3)
    assert pv.below_after < pv.below_before


def test_grouping_rule_maps_every_value_to_text(frame: pl.DataFrame) -> None:
    rule = recode_rule(frame, "water", "groups", "piped: 1, 2\nwell: 3, 4")
    assert rule["mapping"]["1"] == "piped"
    assert rule["mapping"]["9"] == "9"  # ungrouped: itself, as text (one type in the column)
    pv = preview_recode(frame, ["water"], 3, "water", rule)
    assert dict(pv.after)["piped"] == int(frame["water"].is_in([1, 2]).sum())


def test_the_page_previews_then_applies_the_recoding() -> None:
    pytest.importorskip("fastapi", reason="sdckit app needs its extra")
    from fastapi.testclient import TestClient

    from sdckit.app import create_app

    app = create_app()
    client = TestClient(app, base_url="http://127.0.0.1")
    base = client.get("/").url.path

    def post(action: str, body: dict[str, Any]) -> str:
        r = client.post(base + "api/" + action, json=body)
        assert 'id="error"' not in r.json()["panel"], r.json()["panel"][r.json()["panel"].find('id="error"'):][:300]
        for ws in app.state.sessions.values():
            while ws.job is not None and ws.job.running:
                time.sleep(0.05)
        return str(client.get(base + "panel").json()["panel"])

    post("load", {"source": str(DATA)})
    roles = {c: "none" for c in ("relat2", "water2", "water3", "represent", "category_count", "hhcivil", "ori_hid", "roof",
                                 "walls", "electcon", "relat")}
    roles |= {c: "quasi_identifier" for c in ("urbrur", "water", "sex", "age")} | {"sampling_weight": "weight"}
    panel = post("settings", {f"role:{c}": r for c, r in roles.items()} | {"k": "3"})
    for key in ("urbrur", "water", "sex", "age"):
        assert f'<table class="data freq-table" data-key="{key}">' in panel
    panel = post("combinations", {"key:sex": True, "key:water": True})
    m = re.search(r'<p id="combo-summary">([\d,]+) combinations of water, sex held by fewer than k = 3 records\s+\(([\d,]+) records\)', panel)
    assert m, panel[panel.find("combo-summary") - 20:][:300]
    f = pl.read_csv(DATA)
    small = {k: c for k, c in _brute(f, ["water", "sex"]).items() if c < 3}
    assert (int(m.group(1)), int(m.group(2))) == (len(small), sum(small.values()))
    panel = post("preview_recode", {"column": "age", "how": "breaks", "rule": "0, 20, 40, 60, 120"})
    m = re.search(r'data-before="(\d+)" data-after="(\d+)"', panel)
    assert m
    ws = next(iter(app.state.sessions.values()))
    assert len(ws.state.steps) == 0  # previewed, not applied
    before_below = int(m.group(2))
    panel = post("apply_preview", {})
    assert [k for k, _ in ws.state.steps] == ["recode"]
    assert ws.run_of().result.release_measure.n_below_k <= before_below  # the measure counts a missing cell as any value
    assert records_below(ws.run_of().result.protected, ["urbrur", "water", "sex", "age"], 3) == before_below
