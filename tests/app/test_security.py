"""The workbench's guards (issue 37): a weak token refused in words, an upload over the limit
refused before its body is read, and sessions that a page of another site cannot evict."""

from __future__ import annotations

import time

import pytest

pytest.importorskip("fastapi", reason="sdckit app needs its extra: pip install 'sdckit[app]'")
pytest.importorskip("httpx", reason="the test client needs httpx")

from fastapi.testclient import TestClient

from sdckit.app import create_app
from sdckit.app._security import check_token, cross_site
from sdckit.app._server import MAX_SESSIONS
from sdckit.errors import ParameterError

STRONG = "Zq8-vN3xT_p2Lw7Rk4Yb"


@pytest.mark.parametrize(("token", "why"), [("a", "too short"), ("aaaaaaaaaaaaaaaaaaaa", "distinct"),
                                            ("abcdefghabcdefgh", "bits")])
def test_a_weak_token_is_refused_with_how_to_make_one(token: str, why: str) -> None:
    with pytest.raises(ParameterError, match=why) as err:
        check_token(token)
    assert "secrets.token_urlsafe" in str(err.value)
    with pytest.raises(ParameterError):
        create_app(token=token)


def test_a_strong_token_passes() -> None:
    import secrets

    check_token(secrets.token_urlsafe())
    check_token(STRONG)


def test_cli_refuses_a_weak_token_in_words() -> None:
    from typer.testing import CliRunner

    from sdckit.cli import app as cli

    result = CliRunner().invoke(cli, ["app", "--token", "a", "--no-browser"])
    assert result.exit_code != 0
    assert "--token: 1 characters is too short" in result.output
    assert "Traceback" not in result.output


def _open(client: TestClient, **headers: str) -> tuple[int, str]:
    r = client.get("/", headers=headers, follow_redirects=False)
    return r.status_code, r.headers.get("location", "")


def test_an_upload_over_the_limit_is_refused_before_it_is_read() -> None:
    app = create_app(max_upload=1000)
    client = TestClient(app, base_url="http://127.0.0.1")
    base = client.get("/").url.path
    body = b"a,b\n" + b"1,2\n" * 1000
    r = client.post(base + "api/upload?name=big.csv", content=body)
    assert r.status_code == 413
    assert "over the workbench's limit" in r.text
    assert "by its path" in r.text

    def chunks():  # no Content-Length: counted while streamed
        for _ in range(100):
            yield b"1,2\n" * 10

    r = client.post(base + "api/upload?name=big.csv", content=chunks())
    assert r.status_code == 413
    ws = next(iter(app.state.sessions.values()))
    assert not (ws.dir / "uploads").exists()  # nothing of it kept
    small = client.post(base + "api/upload?name=small.csv", content=b"a,b\nx,1\ny,2\n")
    assert small.status_code == 200


def test_cross_site_requests_cannot_evict_the_users_session() -> None:
    app = create_app()
    user = TestClient(app, base_url="http://127.0.0.1")
    status, where = _open(user, **{"sec-fetch-site": "none"})
    assert status == 303
    mine = where
    attacker = TestClient(app, base_url="http://127.0.0.1")
    for _ in range(MAX_SESSIONS):  # a page elsewhere loading http://127.0.0.1:port/ 32 times (img, iframe, fetch)
        status, _ = _open(attacker, **{"sec-fetch-site": "cross-site"})
        assert status == 403
        status, _ = _open(attacker, origin="http://evil.example")
        assert status == 403
    assert len(app.state.sessions) == 1
    assert user.get(mine).status_code == 200  # still there


def test_full_sessions_never_push_out_one_in_use() -> None:
    app = create_app()
    clients = [TestClient(app, base_url="http://127.0.0.1", client=(f"10.0.0.{i}", 5000)) for i in range(MAX_SESSIONS + 1)]
    opened = [_open(c)[1] for c in clients[:MAX_SESSIONS]]
    assert len(app.state.sessions) == MAX_SESSIONS
    status, _ = _open(clients[-1])
    assert status == 503  # none idle: refused, no one evicted
    assert all(c.get(p).status_code == 200 for c, p in zip(clients, opened, strict=False))
    for ws in app.state.sessions.values():  # all idle for long: the least recently used makes room
        ws.last_used = time.monotonic() - 10_000
    status, _ = _open(clients[-1])
    assert status == 303
    assert len(app.state.sessions) == MAX_SESSIONS


def test_one_client_cannot_fill_the_server() -> None:
    app = create_app()
    other = TestClient(app, base_url="http://127.0.0.1", client=("10.0.0.9", 5000))
    theirs = _open(other)[1]
    client = TestClient(app, base_url="http://127.0.0.1")
    opened = [_open(client) for _ in range(MAX_SESSIONS)]
    assert all(code == 303 for code, _ in opened)  # the client's own oldest sessions made room
    assert len(app.state.sessions) == 17
    assert client.get(opened[-1][1]).status_code == 200
    assert client.get(opened[0][1]).status_code == 404
    assert other.get(theirs).status_code == 200  # another client's session untouched


def test_cross_site_reads_the_fetch_metadata_and_the_origin() -> None:
    assert cross_site({"sec-fetch-site": "cross-site"}, "127.0.0.1:8000")
    assert cross_site({"sec-fetch-site": "same-site"}, "127.0.0.1:8000")
    assert not cross_site({"sec-fetch-site": "none"}, "127.0.0.1:8000")
    assert not cross_site({"sec-fetch-site": "same-origin", "origin": "http://127.0.0.1:8000"}, "127.0.0.1:8000")
    assert cross_site({"origin": "http://evil.example"}, "127.0.0.1:8000")
    assert cross_site({"origin": "null"}, "127.0.0.1:8000")
    assert not cross_site({}, "127.0.0.1:8000")  # a script or an old browser: the token and Host checks still apply
