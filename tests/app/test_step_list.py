"""The step list: a step switched off stays on screen but is left out of the run and the export
(its figures are those without it), reordering (by one place or to any place) keeps each step's
switch with it, undo and redo walk it all; a refused option is shown beside its input."""

from __future__ import annotations

import json
import re
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

pytest.importorskip("fastapi", reason="sdckit app needs its extra: pip install 'sdckit[app]'")

from fastapi.testclient import TestClient

from sdckit.app import create_app
from sdckit.app._session import Workbench, field_of_error, moved_off

DATA = Path(__file__).parents[1] / "data" / "sdcmicro_testdata2.csv"


def test_moved_off_follows_the_steps() -> None:
    assert moved_off((1, 3), removed=1) == (2,)
    assert moved_off((1, 3), removed=0) == (0, 2)
    assert moved_off((1,), swapped=(1, 2)) == (2,)
    assert moved_off((1, 2), swapped=(1, 2)) == (1, 2)


def test_a_switched_off_step_is_left_out_of_the_pipeline() -> None:
    steps = (("recode", json.dumps({"rules": {"age": {"breaks": [0, 50, 120]}}})), ("local_suppression", '{"k": 3}'))
    state = Workbench(input="x.csv", roles=(("age", "quasi_identifier"),), steps=steps, off=(0,))
    assert state.step_list() == [{"local_suppression": {"k": 3}}]
    assert state.run_index(0) is None
    assert state.run_index(1) == 0
    text = state.pipeline_yaml()
    assert "# switched off in the app (not run): recode:" in text
    assert [next(iter(s)) for s in yaml.safe_load(text)["steps"]] == ["local_suppression"]


def test_field_of_error_reads_the_option_from_the_pipeline_line() -> None:
    assert field_of_error("the workbench.steps[2].local_suppression.k: expected a whole number, got 'abc' (str).") == "k"
    assert field_of_error("the workbench.steps[0].local_suppression: unknown key 'kk'. Did you mean 'k'?") == "kk"
    assert field_of_error("the workbench: something else") is None


def _client() -> tuple[TestClient, Any, str]:
    app = create_app()
    client = TestClient(app, base_url="http://127.0.0.1")
    return client, app, client.get("/").url.path


def _post(client: TestClient, app: Any, base: str, action: str, body: dict[str, Any]) -> str:
    r = client.post(base + "api/" + action, json=body)
    assert r.status_code == 200
    first = str(r.json()["panel"])
    for ws in app.state.sessions.values():
        while ws.job is not None and ws.job.running:
            time.sleep(0.05)
    return first if 'id="error"' in first else str(client.get(base + "panel").json()["panel"])


def test_toggle_reorder_undo_in_the_session() -> None:
    client, app, base = _client()
    _post(client, app, base, "load", {"source": str(DATA)})
    keys = ("urbrur", "water", "sex", "age")
    roles = {c: "none" for c in ("relat2", "water2", "water3", "represent", "category_count", "hhcivil", "ori_hid",
                                 "roof", "walls", "electcon", "relat")}
    roles |= {c: "quasi_identifier" for c in keys} | {"sampling_weight": "weight", "expend": "numeric"}
    _post(client, app, base, "settings", {f"role:{c}": r for c, r in roles.items()} | {"k": "3"})
    ws = next(iter(app.state.sessions.values()))
    _post(client, app, base, "add_step", {"kind": "recode", "yaml": True, "options": "{rules: {age: {breaks: [0, 20, 40, 60, 120]}}}"})
    _post(client, app, base, "add_step", {"kind": "local_suppression", "yaml": True, "options": "{k: 3}"})
    _post(client, app, base, "add_step", {"kind": "microaggregate", "yaml": True, "options": "{columns: [expend], k: 3}"})
    on_all = ws.run_of().result.protected["age"].null_count()
    panel = _post(client, app, base, "toggle_step", {"index": 0})  # recode off: suppression alone does more
    assert ws.state.off == (0,)
    assert 'class="step off"' in panel
    assert [log.kind for log in ws.run_of().result.steps] == ["local_suppression", "microaggregate"]
    off_first = ws.run_of().result.protected["age"].null_count()
    assert off_first > on_all
    assert "recode" not in [next(iter(s)) for s in yaml.safe_load(client.get(base + "export/pipeline.yaml").text)["steps"]]
    _post(client, app, base, "move_step", {"index": 0, "to": 2})  # drag the switched-off recode to the end
    assert [k for k, _ in ws.state.steps] == ["local_suppression", "microaggregate", "recode"]
    assert ws.state.off == (2,)
    _post(client, app, base, "undo", {})
    assert [k for k, _ in ws.state.steps] == ["recode", "local_suppression", "microaggregate"]
    assert ws.state.off == (0,)
    _post(client, app, base, "undo", {})
    assert ws.state.off == ()
    assert ws.run_of().result.protected["age"].null_count() == on_all  # the cached figures of the state
    _post(client, app, base, "redo", {})
    assert ws.state.off == (0,)


def test_a_refused_option_is_shown_beside_its_input() -> None:
    client, app, base = _client()
    _post(client, app, base, "load", {"source": str(DATA)})
    panel = _post(client, app, base, "add_step", {"kind": "local_suppression", "opt:k": "1"})
    m = re.search(r'<div class="field field-number invalid" data-option="k".*?<small class="field-error" role="alert">([^<]*)</small>',
                  panel, re.S)
    assert m, panel[panel.find('id="add-step"'):][:1500]
    assert "local_suppression.k" in m.group(1)
    assert "k=3" in m.group(1)  # the fix
