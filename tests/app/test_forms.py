"""The workbench's step forms come from the step registry: an input per option of every kind, the
posted fields back to the step's options, the pipeline's one-line error for a wrong value, YAML kept."""

from __future__ import annotations

import re
from html.parser import HTMLParser
from typing import Any

import pytest
import yaml

from sdckit.app._forms import (
    FIELD_PREFIX,
    display,
    field_values,
    options_from_fields,
    parse_step_fields,
    step_fields,
    uses_yaml,
)
from sdckit.app._session import STEP_TEMPLATES, parse_step
from sdckit.errors import ConfigError
from sdckit.pipeline._config import parse_config
from sdckit.pipeline._steps import STEPS

KINDS = list(STEPS)


def _step(kind: str, options: Any) -> Any:
    return parse_config({"steps": [{kind: options}]}, source="test").steps[0]


def _posted(kind: str, options: dict[str, Any]) -> dict[str, Any]:
    """What the page posts for a step shown with ``options``: every input, as the browser sends it."""
    values = field_values(kind, options)
    return {"kind": kind, "options": "", **{FIELD_PREFIX + name: value for name, value in values.items()}}


# --- the forms are the registry's ------------------------------------------------------------------


@pytest.mark.parametrize("kind", KINDS)
def test_every_option_of_every_kind_has_one_input_with_its_type_and_help(kind: str) -> None:
    schema = STEPS[kind].options_schema()
    fields = step_fields(kind)
    assert [f.name for f in fields] == [o.name for o in schema]
    for f, o in zip(fields, schema, strict=True):
        assert (f.type, f.default, f.help) == (o.type, o.default, o.help)
        assert f.help, f"{kind}.{f.name} has no help (the field's docstring)"
        if o.type == "true | false":
            assert f.widget == "checkbox"
        elif " | " in o.type and " or " not in o.type:
            assert f.widget == "select"
            assert set(f.choices) == set(o.type.split(" | "))
        elif o.type in ("whole number", "number"):
            assert f.widget == "number"
            assert f.placeholder == ("" if o.default is None else str(o.default)) or o.default is None
        elif o.type == "mapping":
            assert f.widget == "yaml"
        else:
            assert f.widget == "text"


@pytest.mark.parametrize("kind", KINDS)
def test_the_example_round_trips_through_the_form(kind: str) -> None:
    options = yaml.safe_load(STEPS[kind].example)
    posted = _posted(kind, options)
    assert not uses_yaml(posted)
    back = options_from_fields(kind, posted, 0)
    assert _step(kind, back) == _step(kind, options)
    assert set(back) <= set(options)  # nothing but what the example gives (a default is left out)
    assert parse_step_fields(kind, posted, 0)[0] == kind
    assert parse_step(kind, STEP_TEMPLATES[kind], 0)[0] == kind  # the YAML template still parses


@pytest.mark.parametrize("kind", KINDS)
def test_an_empty_form_is_every_default(kind: str) -> None:
    posted = {FIELD_PREFIX + f.name: (bool(f.default) if f.widget == "checkbox" else "") for f in step_fields(kind)}
    assert options_from_fields(kind, posted, 0) == {}


def test_values_are_converted_by_the_options_type_in_words() -> None:
    def conv(kind: str, **fields: Any) -> dict[str, Any]:
        return options_from_fields(kind, {FIELD_PREFIX + k: v for k, v in fields.items()}, 0)

    assert conv("microaggregate", k="4", columns="a, b ,c", strata="quasi_identifiers", restore_moments=False) == {
        "restore_moments": False, "k": 4, "columns": ["a", "b", "c"], "strata": "quasi_identifiers"}
    assert conv("microaggregate", strata="region, sex", restore_moments=True) == {"strata": ["region", "sex"]}
    assert conv("noise", t="recommended", max_leakage_nats="0.5") == {"t": "recommended", "max_leakage_nats": 0.5}
    assert conv("noise", t="0.25") == {"t": 0.25}
    assert conv("suppress", columns="plan") == {"columns": "plan"}
    assert conv("suppress", columns="race") == {"columns": ["race"]}
    assert conv("local_suppression", importance="2, 1, 3") == {"importance": [2, 1, 3]}
    assert conv("local_suppression", importance="sex, age") == {"importance": ["sex", "age"]}
    assert conv("top_code", top="100", top_value="*") == {"top": 100, "top_value": "*"}
    assert conv("top_code", top="{capital-gain: 5000}") == {"top": {"capital-gain": 5000}}
    assert conv("recode", rules='{age: {hierarchy: "adult:age", level: 2}}', closed="") == {
        "rules": {"age": {"hierarchy": "adult:age", "level": 2}}}
    assert conv("pram", matrix="{race: {Other: {White: 1.0}}}", pd="0.9") == {
        "pd": 0.9, "matrix": {"race": {"Other": {"White": 1.0}}}}


def test_editing_prefills_the_steps_current_values() -> None:
    options = {"columns": ["capital-gain", "hours-per-week"], "method": "vmdav", "k": 4, "restore_moments": False}
    values = field_values("microaggregate", options)
    assert values["columns"] == "capital-gain, hours-per-week"
    assert values["method"] == "vmdav"
    assert values["k"] == "4"
    assert values["restore_moments"] is False
    assert values["positivity"] == ""  # not given: the default
    assert field_values("recode", {"rules": {"age": {"breaks": [0, 30]}}})["rules"] == "{age: {breaks: [0, 30]}}"
    assert field_values("suppress", "plan")["columns"] == "plan"  # the pipeline file's shorthand, as given
    assert field_values("suppress", ["race", "sex"])["columns"] == "race, sex"
    assert display(("a", "b")) == "a, b"


@pytest.mark.parametrize(
    ("kind", "fields", "needle"),
    [
        ("microaggregate", {"k": "abc"}, "microaggregate.k: expected a whole number, got 'abc'"),
        ("microaggregate", {"k": "1"}, ">= 2"),
        ("microaggregate", {"method": "mdavv"}, "mdavv"),
        ("noise", {"t": "lots"}, "noise.t"),
        ("rank_swap", {"p": "five"}, "rank_swap.p"),
        ("correlated_noise", {"law": "gaussian"}, "is not one of"),
        ("recode", {"rules": "{age: ["}, "recode.rules: not valid YAML"),
        ("recode", {"rules": "[1, 2]"}, "recode.rules"),
        ("top_code", {"top_quantile": "high"}, "top_code.top_quantile"),
        ("local_suppression", {"delta": "a lot"}, "local_suppression.delta: expected a number"),
        ("pram", {"matrix": "{race: {a: ["}, "pram.matrix: not valid YAML"),
        ("pram", {"colums": "race"}, "Did you mean 'columns'"),  # a field of no option: the pipeline names it
        ("top_code", {"top": "{a: ["}, "top_code.top: not valid YAML"),
    ],
)
def test_a_wrong_value_in_a_form_is_the_pipelines_one_line(kind: str, fields: dict[str, str], needle: str) -> None:
    with pytest.raises(ConfigError) as err:
        parse_step_fields(kind, {FIELD_PREFIX + k: v for k, v in fields.items()}, 2)
    message = str(err.value)
    assert needle in message
    assert "\n" not in message
    assert message.startswith("the workbench")
    assert "steps[2]" in message  # the step's own number, not the one-step file's


# --- parse_step: one line for every kind, whatever is typed ----------------------------------------


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize(
    "text", ["{p: [", "{no_such_option: 1}", "[1, 2]", "5", "{columns: 5}", "{k: abc}", "{method: nope}",
             "{a: 2020-01-01}", "{rules: {age: {mapping: {2020-01-01: x}}}}", ": :", "{columns: {a: b}}"],
)
def test_parse_step_raises_only_the_one_line_error(kind: str, text: str) -> None:
    message = None
    try:
        parse_step(kind, text, 1)
    except ConfigError as err:  # anything else (a KeyError, a TypeError) fails the test
        message = str(err)
    if message is not None:
        assert "\n" not in message
        assert message.startswith("the workbench")
        assert kind in message


@pytest.mark.parametrize("kind", KINDS)
def test_a_broken_yaml_and_a_wrong_option_get_the_one_line_error(kind: str) -> None:
    with pytest.raises(ConfigError, match=rf"steps\[1\]\.{kind}: the options are not valid YAML") as err:
        parse_step(kind, "{columns: [", 1)
    assert STEP_TEMPLATES[kind] in str(err.value)  # the example of the step, to copy
    with pytest.raises(ConfigError, match=rf"steps\[1\]\.{kind}: unknown key 'no_such_option'") as err:
        parse_step(kind, "{no_such_option: 1}", 1)
    assert "\n" not in str(err.value)


# --- the page ---------------------------------------------------------------------------------------

fastapi = pytest.importorskip("fastapi", reason="sdckit app needs its extra: pip install 'sdckit[app]'")
pytest.importorskip("httpx", reason="the test client needs httpx")

from fastapi.testclient import TestClient  # noqa: E402

from sdckit.app import create_app  # noqa: E402

CSV = ("region,sex,age_group,hours,pay\n" + "".join(
    f"{r},{s},{a},{h},{p}\n" for r, s, a, h, p in [
        ("N", "F", "20-29", 40, 1000), ("N", "F", "20-29", 38, 1200), ("N", "M", "30-39", 45, 1500),
        ("S", "M", "30-39", 50, 2100), ("S", "F", "40-49", 20, 900), ("S", "F", "40-49", 22, 950),
        ("N", "M", "30-39", 41, 1300), ("S", "M", "30-39", 39, 1800)]))
ROLES = {"role:region": "quasi_identifier", "role:sex": "quasi_identifier", "role:age_group": "quasi_identifier",
         "role:hours": "numeric", "role:pay": "numeric", "k": "2", "budget": "0.5"}


class _Inputs(HTMLParser):
    """The named inputs of each form and template of the panel: ``{container: [(tag, attrs)]}``."""

    def __init__(self) -> None:
        super().__init__()
        self.stack: list[str] = []
        self.found: dict[str, list[tuple[str, dict[str, str | None]]]] = {}

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        if tag in ("form", "template"):
            key = a.get("id") or f"{tag}:{len(self.found)}"
            self.stack.append(key)
            self.found[key] = []
        elif tag in ("input", "select", "textarea") and a.get("name") and self.stack:
            self.found[self.stack[-1]].append((tag, a))

    def handle_endtag(self, tag: str) -> None:
        if tag in ("form", "template") and self.stack:
            self.stack.pop()


def _inputs(panel: str) -> dict[str, list[tuple[str, dict[str, str | None]]]]:
    parser = _Inputs()
    parser.feed(panel)
    return parser.found


@pytest.fixture
def page() -> Any:
    import time

    app = create_app()
    client = TestClient(app, base_url="http://127.0.0.1")
    base = client.get("/").url.path

    def post(action: str, body: dict[str, Any] | None = None, **kw: Any) -> str:
        r = client.post(base + "api/" + action, json=body or {}, **kw) if "content" not in kw \
            else client.post(base + "api/" + action, **kw)
        assert r.status_code == 200, r.text
        if not r.json()["running"]:
            return str(r.json()["panel"])  # an error found at once is in the answer itself (shown once)
        for ws in app.state.sessions.values():
            while ws.job is not None and ws.job.running:
                time.sleep(0.05)
        return str(client.get(base + "panel").json()["panel"])

    post("upload", content=CSV.encode(), params={"name": "s.csv"}, headers={"Content-Type": "application/octet-stream"})
    post("settings", ROLES)
    post.ws = next(iter(app.state.sessions.values()))  # type: ignore[attr-defined]
    return post


def _error(panel: str) -> str | None:
    m = re.search(r'id="error"[^>]*>(.*?)</p>', panel, re.S)
    return m.group(1) if m else None


def test_the_panel_has_a_form_per_kind_with_one_input_per_option(page: Any) -> None:
    panel = page("measure")
    found = _inputs(panel)
    for kind in KINDS:
        names = [a["name"] for _, a in found[f"fields-{kind}"]]
        assert names == [FIELD_PREFIX + f.name for f in step_fields(kind)], kind
        for (tag, a), f in zip(found[f"fields-{kind}"], step_fields(kind), strict=True):
            expected = {"select": ("select", None), "checkbox": ("input", "checkbox"), "number": ("input", "number"),
                        "yaml": ("textarea", None), "text": ("input", None)}[f.widget]
            assert (tag, a.get("type")) == expected, (kind, f.name)
            if f.widget == "number" and f.default is not None:
                assert a["placeholder"] == f.default_text
    add = {a["name"]: (tag, a) for tag, a in found["add-step"]}
    assert {"kind", "options", "yaml"} <= set(add)
    assert [n for n in add if n.startswith(FIELD_PREFIX)] == [FIELD_PREFIX + f.name for f in step_fields("recode")]
    assert 'id="add-opt-rules"' in panel
    for f in step_fields("microaggregate"):  # each input with its values in words and its help
        assert f'data-option="{f.name}"' in panel
    assert "mdav | mdav_blocked" in panel
    assert "Smallest group size." in panel


def test_add_edit_undo_redo_with_the_form_and_yaml(page: Any) -> None:
    ws = page.ws  # type: ignore[attr-defined]
    panel = page("add_step", {"kind": "microaggregate", "options": "", "yaml": False, "opt:k": "2",
                              "opt:columns": "hours, pay", "opt:method": "", "opt:restore_moments": True})
    assert _error(panel) is None, _error(panel)
    assert ws.state.step_list() == [{"microaggregate": {"k": 2, "columns": ["hours", "pay"]}}]
    found = _inputs(panel)
    edit = next(v for k, v in found.items() if any(a.get("value") == "0" and a["name"] == "index" for _, a in v))
    values = {a["name"]: a.get("value") for _, a in edit if a["name"].startswith(FIELD_PREFIX)}
    assert values["opt:k"] == "2"  # the edit form holds the step's values
    assert values["opt:columns"] == "hours, pay"
    panel = page("edit_step", {"index": "0", "kind": "microaggregate", "yaml": False, "opt:k": "3",
                               "opt:columns": "hours, pay", "opt:method": "vmdav", "opt:restore_moments": False})
    assert _error(panel) is None, _error(panel)
    assert ws.state.step_list() == [{"microaggregate": {"restore_moments": False, "method": "vmdav", "k": 3,
                                                         "columns": ["hours", "pay"]}}]
    panel = page("add_step", {"kind": "local_suppression", "yaml": True, "options": "{k: 2}", "opt:k": "7"})
    assert _error(panel) is None, _error(panel)
    assert ws.state.step_list()[1] == {"local_suppression": {"k": 2}}  # the YAML switch on: the text counts
    panel = page("add_step", {"kind": "top_code", "options": "{columns: [pay], top_quantile: 0.9}"})  # a script
    assert _error(panel) is None, _error(panel)
    assert len(ws.state.steps) == 3
    for _ in range(3):
        page("undo")
    assert ws.state.step_list()[0]["microaggregate"]["k"] == 2  # the edit undone: back to the added step
    page("redo")
    assert ws.state.step_list()[0]["microaggregate"]["method"] == "vmdav"
    panel = page("measure")
    assert ws.run_of() is not None
    assert "vmdav" in panel


def test_a_bad_value_shows_the_one_line_and_keeps_what_was_typed(page: Any) -> None:
    ws = page.ws  # type: ignore[attr-defined]
    panel = page("add_step", {"kind": "microaggregate", "options": "", "yaml": False, "opt:k": "many",
                              "opt:columns": "hours"})
    error = _error(panel)
    assert error is not None
    assert "steps[0].microaggregate.k: expected a whole number, got &#39;many&#39;" in error
    assert "Traceback" not in panel
    assert ws.state.steps == ()
    add = {a["name"]: a for _, a in _inputs(panel)["add-step"]}
    assert add["opt:k"].get("value") == "many"  # the add form shows what was typed, for the fix
    assert add["opt:columns"].get("value") == "hours"
    panel = page("add_step", {"kind": "microaggregate", "options": "", "yaml": False, "opt:columns": "hoers"})
    assert "hoers" in (_error(panel) or "")  # found when the step meets the data: the run's one line
    assert ws.state.steps == ()
    panel = page("add_step", {"kind": "recode", "options": "{rules: [", "yaml": True})
    assert "not valid YAML" in (_error(panel) or "")
    assert 'id="add-yaml" checked' in panel  # the YAML switch stays on with the text typed
    assert "{rules: [</textarea>" in panel
    panel = page("add_step", {"kind": "pram", "options": "", "yaml": False, "opt:columns": "sex", "opt:pd": "0.9"})
    assert _error(panel) is None, _error(panel)
    panel = page("edit_step", {"index": "0", "kind": "pram", "yaml": False, "opt:columns": "sex", "opt:pd": "x"})
    assert "pram.pd" in (_error(panel) or "")
    assert ws.state.step_list() == [{"pram": {"columns": ["sex"], "pd": 0.9}}]
    assert '<details class="step-edit" open>' in panel  # the edited step's form stays open with the value typed
