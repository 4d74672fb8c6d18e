"""Errors in words: whatever fails, the page shows one line saying what failed and what to do,
never an exception's name or a traceback, and the session goes on."""

from __future__ import annotations

import re
import time
from typing import Any

import pytest

pytest.importorskip("fastapi", reason="sdckit app needs its extra: pip install 'sdckit[app]'")
pytest.importorskip("httpx", reason="the test client needs httpx")

from fastapi.testclient import TestClient

from sdckit.app import _server, create_app
from sdckit.app._workspace import Workspace

CSV = b"region,sex,age\nN,F,20\nN,F,21\nN,M,30\nS,M,31\nS,F,40\nS,F,41\n"
NAMES = re.compile(r"\b\w+(Error|Exception)\b|Traceback")  # TypeError, KeyError...; the page's own "Error:" prefix is fine


def _wait(app: Any) -> None:
    for ws in app.state.sessions.values():
        while ws.job is not None and ws.job.running:
            time.sleep(0.05)


def _error(panel: str) -> str:
    m = re.search(r'id="error"[^>]*>(.*?)</p>', panel, re.S)
    assert m, "no error shown"
    return m.group(1)


def test_a_fault_in_the_run_is_shown_in_words(monkeypatch: pytest.MonkeyPatch) -> None:
    app = create_app()
    client = TestClient(app, base_url="http://127.0.0.1")
    base = client.get("/").url.path
    client.post(base + "api/upload?name=d.csv", content=CSV)
    _wait(app)

    def broken(self: Workspace, state: Any, advance: Any) -> Any:
        raise TypeError("unsupported operand type(s) for +: 'int' and 'str'")

    monkeypatch.setattr(Workspace, "measure", broken)
    client.post(base + "api/settings", json={"k": "2"})
    _wait(app)
    text = _error(client.get(base + "panel").json()["panel"])
    assert not NAMES.search(text), text
    assert "did not finish" in text
    assert "undo" in text


def test_a_fault_in_an_action_is_shown_in_words(monkeypatch: pytest.MonkeyPatch) -> None:
    app = create_app()
    client = TestClient(app, base_url="http://127.0.0.1")
    base = client.get("/").url.path

    def broken(*_: Any) -> None:
        raise KeyError("role:age")

    monkeypatch.setattr(_server, "_do", broken)
    r = client.post(base + "api/settings", json={})
    assert r.status_code == 200
    text = _error(r.json()["panel"])
    assert not NAMES.search(text), text
    assert "settings did not finish" in text


def test_refusals_are_plain_lines() -> None:
    app = create_app()
    client = TestClient(app, base_url="http://127.0.0.1")
    base = client.get("/").url.path
    for r in (client.post(base + "api/nonsense", json={}), client.get("/s/nope/"),
              client.post(base + "api/settings", content=b"[1, 2]", headers={"content-type": "application/json"})):
        assert r.status_code in (400, 404)
        assert not r.text.startswith("{"), r.text  # not a JSON error object
        assert not NAMES.search(r.text), r.text
