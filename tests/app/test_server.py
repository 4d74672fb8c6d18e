"""The workbench's routes without a browser: sessions, the token, the Host check, errors, cancel, the CLI."""

from __future__ import annotations

import re
import time
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("fastapi", reason="sdckit app needs its extra: pip install 'sdckit[app]'")
pytest.importorskip("httpx", reason="the test client needs httpx")

from fastapi.testclient import TestClient

from sdckit.app import create_app

CSV = "region,sex,age_group,hours\nN,F,20-29,40\nN,F,20-29,38\nN,M,30-39,45\nS,M,30-39,50\nS,F,40-49,20\nS,F,40-49,22\n"


def _open(client: TestClient) -> str:
    r = client.get("/")
    assert r.status_code == 200, r.text
    path = r.url.path
    assert re.fullmatch(r"/s/[\w-]+/", path), path
    return path


def _wait(app: Any) -> None:
    for ws in app.state.sessions.values():
        while ws.job is not None and ws.job.running:
            time.sleep(0.05)


def _post(client: TestClient, app: Any, base: str, action: str, body: Any = None, **kw: Any) -> str:
    r = client.post(base + "api/" + action, json=body or {}, **kw) if "content" not in kw else client.post(base + "api/" + action, **kw)
    assert r.status_code == 200, r.text
    if not r.json()["running"]:
        return str(r.json()["panel"])  # an error found at once is in the answer itself
    _wait(app)
    return str(client.get(base + "panel").json()["panel"])


def _error(panel: str) -> str | None:
    m = re.search(r'id="error"[^>]*>(.*?)</p>', panel, re.S)
    return m.group(1) if m else None


def test_each_tab_has_its_own_session_and_needs_its_cookie() -> None:
    app = create_app()
    client = TestClient(app, base_url="http://127.0.0.1")
    first, second = _open(client), _open(client)
    assert first != second
    assert len(app.state.sessions) == 2
    stranger = TestClient(app, base_url="http://127.0.0.1")  # another browser: no cookie of the session
    assert stranger.get(first).status_code == 404
    assert stranger.get(first + "export/pipeline.yaml").status_code == 404
    page = client.get(first)
    assert page.status_code == 200
    assert "Content-Security-Policy" in page.headers
    assert "default-src 'self'" in page.headers["Content-Security-Policy"]
    assert 'src="/static/app.js"' in page.text
    assert "http://" not in page.text.split("<body")[0]


def test_a_foreign_host_header_is_refused_on_loopback() -> None:
    client = TestClient(create_app(), base_url="http://evil.example")
    assert client.get("/").status_code == 421


def test_a_token_is_needed_on_every_request() -> None:
    app = create_app(token="Zq8-vN3xT_p2Lw7Rk4Yb", check_host=False)
    client = TestClient(app, base_url="http://10.0.0.5")
    assert client.get("/").status_code == 401
    assert client.get("/?token=wrong").status_code == 401
    r = client.get("/?token=Zq8-vN3xT_p2Lw7Rk4Yb")
    assert r.status_code == 200  # the redirect to the session carried the token's cookie
    assert client.get(r.url.path + "panel").status_code == 200
    assert TestClient(app, base_url="http://10.0.0.5").get(r.url.path + "panel").status_code == 401


def test_upload_roles_steps_errors_and_export(tmp_path: Path) -> None:
    app = create_app()
    client = TestClient(app, base_url="http://127.0.0.1")
    base = _open(client)
    panel = _post(client, app, base, "upload", content=CSV.encode(), params={"name": "survey.csv"},
                  headers={"Content-Type": "application/octet-stream"})
    assert _error(panel) is None, _error(panel)
    assert "survey.csv</strong>: 6 rows × 4 columns" in panel
    ws = next(iter(app.state.sessions.values()))
    assert ws.state.role_of["region"] == "quasi_identifier"  # guessed as the pipeline guesses
    roles = {"role:region": "quasi_identifier", "role:sex": "quasi_identifier", "role:age_group": "quasi_identifier",
             "role:hours": "numeric"}
    panel = _post(client, app, base, "settings", {**roles, "k": "2", "budget": "0.5"})
    assert _error(panel) is None, _error(panel)
    assert ws.run_of() is not None
    panel = _post(client, app, base, "settings", {**roles, "k": "two"})
    assert "k: expected a whole number" in (_error(panel) or "")
    assert ws.state.k == 2  # the session goes on with what it had
    panel = _post(client, app, base, "add_step", {"kind": "recode", "options": "{rules: {regoin: {mapping: {N: X}}}}"})
    assert "regoin" in (_error(panel) or "")
    assert ws.state.steps == ()
    panel = _post(client, app, base, "add_step", {"kind": "local_suppression", "options": "{k: 2}"})
    assert _error(panel) is None
    assert len(ws.state.steps) == 1
    run = ws.run_of()
    assert run is not None
    assert run.result.release_measure is not None
    assert run.result.release_measure.exposure_at_k == 0.0
    svg = client.get(base + "plot/release.svg")  # the report's histogram of individual risk
    assert svg.status_code == 200
    assert svg.text.startswith("<svg")
    assert svg.headers["content-type"].startswith("image/svg+xml")
    yaml_text = client.get(base + "export/pipeline.yaml").text
    assert "local_suppression" in yaml_text
    assert "survey.csv" in yaml_text
    released = client.get(base + "export/release")
    assert released.status_code == 200
    assert released.text.splitlines()[0].split(",") == ["region", "sex", "age_group", "hours"]
    panel = _post(client, app, base, "load", {"source": str(tmp_path / "nothing.csv")})
    assert "nothing.csv" in (_error(panel) or "")
    assert len(ws.state.steps) == 1  # still the uploaded data and its step


def test_an_over_budget_release_is_not_exported() -> None:
    app = create_app()
    client = TestClient(app, base_url="http://127.0.0.1")
    base = _open(client)
    _post(client, app, base, "upload", content=CSV.encode(), params={"name": "s.csv"})
    panel = _post(client, app, base, "settings", {"role:region": "quasi_identifier", "role:sex": "quasi_identifier",
                                                   "role:age_group": "quasi_identifier", "role:hours": "none",
                                                   "k": "3", "budget": "0.0"})
    assert 'id="export-refused"' in panel
    r = client.get(base + "export/release")
    assert r.status_code == 409
    assert "over its budget" in r.text


def test_cancel_stops_the_planner_and_the_session_goes_on() -> None:
    app = create_app()
    client = TestClient(app, base_url="http://127.0.0.1")
    base = _open(client)
    _post(client, app, base, "load", {"source": "adult"})
    ws = next(iter(app.state.sessions.values()))
    client.post(base + "api/plan", json={"hierarchies": "adult", "suppression": "0.05"})
    assert ws.job is not None
    status = client.get(base + "status").json()
    assert status["label"] == "Planning"
    panel = client.post(base + "api/cancel", json={}).json()["panel"]
    _wait(app)
    assert ws.job.cancelled
    assert ws.plan is None
    panel = client.get(base + "panel").json()["panel"]
    assert "Planning cancelled." in panel
    panel = _post(client, app, base, "add_step", {"kind": "recode", "options": '{rules: {age: {hierarchy: "adult:age", level: 2}}}'})
    assert _error(panel) is None
    assert len(ws.state.steps) == 1


def test_cli_refuses_an_open_host_without_a_token() -> None:
    from typer.testing import CliRunner

    from sdckit.cli import app as cli

    result = CliRunner().invoke(cli, ["app", "--host", "0.0.0.0", "--no-browser"])
    assert result.exit_code == 1
    assert "--token" in result.output
    assert "Traceback" not in result.output
    missing = CliRunner().invoke(cli, ["app", "no_such_file.csv", "--no-browser"])
    assert missing.exit_code == 1
    assert "no_such_file.csv" in missing.output


def test_the_report_is_built_in_the_background_and_downloaded() -> None:
    app = create_app()
    client = TestClient(app, base_url="http://127.0.0.1")
    base = _open(client)
    _post(client, app, base, "upload", content=CSV.encode(), params={"name": "s.csv"})
    _post(client, app, base, "settings", {"role:region": "quasi_identifier", "role:sex": "quasi_identifier",
                                          "role:age_group": "quasi_identifier", "role:hours": "numeric",
                                          "k": "2", "budget": "0.5"})
    assert client.get(base + "export/report.html").status_code == 409  # not built yet
    panel = _post(client, app, base, "report")
    assert _error(panel) is None, _error(panel)
    assert 'id="export-report"' in panel
    report = client.get(base + "export/report.html")
    assert report.status_code == 200
    assert "<html" in report.text
    assert "s.csv" in report.text


@pytest.mark.services
def test_the_command_serves_on_loopback_and_prints_the_address() -> None:
    import subprocess
    import sys

    import httpx

    from sdckit.app import free_port

    port = free_port()
    code = "import sys; from sdckit.cli import main; sys.argv = ['sdckit', 'app', '--no-browser', '--port', sys.argv[1]]; main()"
    proc = subprocess.Popen([sys.executable, "-c", code, str(port)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True)
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert f"http://127.0.0.1:{port}/" in line, line
        r = httpx.get(f"http://127.0.0.1:{port}/", follow_redirects=True, timeout=30)
        assert r.status_code == 200
        assert "sdckit release workbench" in r.text
    finally:
        proc.terminate()
        proc.wait(30)
