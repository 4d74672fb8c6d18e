"""The services over real HTTP on loopback: auth, limits, malformed input, replays, crashes."""

from __future__ import annotations

import os
import secrets
import signal
import sqlite3
import threading
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from sdckit.errors import MalformedMessageError
from sdckit.protocol import Client, CollectionSpec, PrivateKey, User, encode_value, pack_batch
from sdckit.protocol.services._launch import LocalDeployment

from .conftest import FEATURES
from .conftest import wait_until as _wait

pytestmark = pytest.mark.services


@pytest.fixture(scope="module")
def dep(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalDeployment]:
    d = LocalDeployment(
        tmp_path_factory.mktemp("svc"), batch_threshold=1, poll_seconds=0.05, max_body_bytes=64 * 1024
    )
    with d:
        yield d


def _create(
    dep: LocalDeployment, cid: str, features: tuple[str, ...] = FEATURES, *, enrolment: str = "open"
) -> CollectionSpec:
    """Create and register a collection, its rounds closed at once (so every user is forwarded as
    soon as ``min_batch`` users are pooled)."""
    spec = CollectionSpec(id=cid, features=features, max_budget=0.5)
    dep.create(spec, enrolment=enrolment)
    with dep.admin() as admin:
        for r in (1, 2):
            admin.post(
                f"{dep.urls['shuffler']}/admin/v1/collections/{cid}/rounds/{r}/flush"
            ).raise_for_status()
    return spec


def _client(dep: LocalDeployment, cid: str, **kw: Any) -> Client:
    return dep.client(cid, **kw)


def _tally(dep: LocalDeployment, role: str, cid: str) -> dict[str, int]:
    with dep.admin() as admin:
        return dict(admin.get(f"{dep.urls[role]}/admin/v1/collections/{cid}/tally").json())


def test_public_endpoints_and_openapi(dep: LocalDeployment) -> None:
    for role, url in dep.urls.items():
        assert httpx.get(f"{url}/healthz").json() == {"status": "ok", "role": role}
        spec = httpx.get(f"{url}/openapi.json").json()
        assert spec["openapi"].startswith("3.")
        keys = httpx.get(
            f"{dep.urls['shuffler']}/v1/keys" + ("" if role == "shuffler" else f"/{role}")
        ).json()
        assert (keys["kind"], keys["signer"], keys["document"]["role"]) == ("keys", role, role)
        assert keys["document"]["public_key"].startswith("x25519:")
        if role != "shuffler":  # devices cannot reach the curator or the analyst
            assert httpx.get(f"{url}/internal/v1/keys").status_code == 401
    paths = httpx.get(f"{dep.urls['shuffler']}/openapi.json").json()["paths"]
    assert "/v1/collections/{collection}/rounds/{round_}/messages" in paths


@pytest.mark.parametrize("header", [None, "Bearer wrong-token-0123456789", "Basic abc", "Bearer"])
def test_wrong_or_missing_token_gets_401(dep: LocalDeployment, header: str | None) -> None:
    _create(dep, "auth")
    headers = {"authorization": header} if header else {}
    checks = [
        ("post", f"{dep.urls['shuffler']}/admin/v1/collections/auth/rounds/1/flush"),
        ("get", f"{dep.urls['shuffler']}/admin/v1/collections/auth/rounds/1"),
        ("get", f"{dep.urls['curator']}/admin/v1/collections/auth/marginals"),
        ("post", f"{dep.urls['curator']}/internal/v1/collections/auth/rounds/1/batch"),
        ("get", f"{dep.urls['analyst']}/admin/v1/collections/auth/release"),
    ]
    for method, url in checks:
        r = httpx.request(method, url, headers=headers, content=pack_batch([]))
        assert r.status_code == 401, url
        assert r.headers["www-authenticate"].startswith("Bearer")


def test_relay_endpoint_refuses_the_admin_token(dep: LocalDeployment) -> None:
    _create(dep, "auth")
    r = httpx.post(
        f"{dep.urls['curator']}/internal/v1/collections/auth/rounds/1/batch",
        headers={"authorization": f"Bearer {dep.admin_token}"},
        content=pack_batch([]),
    )
    assert r.status_code == 401
    r = httpx.post(
        f"{dep.urls['curator']}/internal/v1/collections/auth/rounds/1/batch",
        headers={"authorization": f"Bearer {dep.relay_token}"},
        content=pack_batch([]),
    )
    assert r.status_code == 200


def test_oversized_body_gets_413(dep: LocalDeployment) -> None:
    _create(dep, "big")
    url = f"{dep.urls['shuffler']}/v1/collections/big/rounds/1/messages"
    assert httpx.post(url, content=b"\x00" * (64 * 1024 + 1)).status_code == 413

    def chunks() -> Iterator[bytes]:  # no Content-Length: the limit is enforced while streaming
        for _ in range(80):
            yield b"\x00" * 1024

    assert httpx.post(url, content=chunks()).status_code == 413
    assert httpx.get(f"{dep.urls['shuffler']}/healthz").status_code == 200


def test_malformed_truncated_and_wrongly_keyed_get_4xx_and_are_counted(dep: LocalDeployment) -> None:
    spec = _create(dep, "bad")
    with _client(dep, "bad") as client:
        good = client.user().round1({"age": 30, "sex": "Male", "race": "White", "marital-status": "Divorced"})
        stranger = User(
            spec,
            shuffler_key=PrivateKey.generate().public_key(),
            curator_key=PrivateKey.generate().public_key(),
            analyst_key=PrivateKey.generate().public_key(),
        ).round1({"age": 30, "sex": "Male", "race": "White", "marital-status": "Divorced"})
        url = f"{dep.urls['shuffler']}/v1/collections/bad/rounds/1/messages"
        bodies = {
            "not a batch": b"garbage",
            "truncated batch": pack_batch(good)[:-5],
            "truncated message": pack_batch([good[0][:-1]]),
            "wrong key": pack_batch(stranger[:1]),
            "other round": pack_batch(good[:1]),
        }
        for name, body in bodies.items():
            if name == "other round":
                r = httpx.post(url.replace("rounds/1", "rounds/2"), content=body)
            else:
                r = httpx.post(url, content=body)
            assert 400 <= r.status_code < 500, name
        with pytest.raises(MalformedMessageError):
            client.submit(1, [good[0][:-1]])
        with dep.admin() as admin:
            stats = admin.get(f"{dep.urls['shuffler']}/admin/v1/collections/bad/rounds/1").json()
        assert stats["rejected"] >= 4
        assert stats["received"] == 0
        assert httpx.get(f"{dep.urls['shuffler']}/healthz").status_code == 200
        client.submit(1, good)  # still serving
    _wait(lambda: _tally(dep, "curator", "bad")["accepted"] == len(FEATURES))


def test_replayed_and_duplicated_messages_count_once(dep: LocalDeployment) -> None:
    _create(dep, "replay")
    row = {"age": 41, "sex": "Female", "race": "Black", "marital-status": "Widowed"}
    with _client(dep, "replay") as client:
        messages = client.user().round1(row)
        assert client.submit(1, messages)["new"] == 2 * len(FEATURES)  # the curator's, the analyst's
        client.submit(1, messages)  # duplicate while pooled or after forwarding
        _wait(lambda: _tally(dep, "curator", "replay")["accepted"] == len(FEATURES))
        client.submit(1, messages)  # replay after the shuffler forwarded and deleted them
        # the same messages in another body: pooled again (each half reversed: the first half of
        # a submission goes to the curator, the second to the analyst)
        f = len(FEATURES)
        client.submit(1, messages[:f][::-1] + messages[f:][::-1])
        _wait(lambda: _tally(dep, "curator", "replay")["duplicates"] >= len(FEATURES))
    time.sleep(0.3)
    with dep.admin() as admin:
        counts = admin.get(f"{dep.urls['curator']}/admin/v1/collections/replay/marginals").json()["counts"]
    assert counts == {f: {encode_value(row[f]): 1} for f in FEATURES}
    assert _tally(dep, "curator", "replay")["accepted"] == len(FEATURES)


def test_kill_shuffler_mid_round_loses_no_acknowledged_message(
    tmp_path: Path, adult_rows: list[dict[str, Any]]
) -> None:
    rows = adult_rows[:160]
    with LocalDeployment(tmp_path, batch_threshold=400, min_batch=10, poll_seconds=0.05) as dep:
        dep.create(CollectionSpec(id="crash", features=FEATURES), enrolment="tokens")
        invites = dep.invites("crash", len(rows))
        acked = []
        errors: list[BaseException] = []
        halfway = threading.Event()

        def send() -> None:
            try:
                with dep.client("crash", retry_window=60.0) as c:
                    user = c.user()
                    for i, row in enumerate(rows):
                        c.enrol(invites[i])  # each user enrols and submits once; retries are safe
                        c.submit(1, user.round1(row))  # returns only once acknowledged (202)
                        acked.append(i)
                        if i == len(rows) // 2:
                            halfway.set()
            except BaseException as err:  # reported in the main thread
                errors.append(err)
                halfway.set()

        sender = threading.Thread(target=send)
        sender.start()
        assert halfway.wait(120)
        # the pool holds acknowledged messages below the threshold; nothing in it is readable
        db = dep.workdir / "shuffler" / "data" / "shuffler.sqlite3"
        with sqlite3.connect(db) as con:
            cols = [r[1] for r in con.execute("PRAGMA table_info(pool)")]
            assert cols == ["id", "collection", "round", "msg"]  # no time, address or sequence number
            assert con.execute("SELECT COUNT(*) FROM pool").fetchone()[0] > 0
        dep.kill("shuffler", signal.SIGKILL)
        time.sleep(0.3)
        dep.start("shuffler")
        sender.join(180)
        assert not errors, errors
        assert len(acked) == len(rows)
        files = [p for p in (dep.workdir / "shuffler").rglob("*") if p.is_file() and p.name != "key.json"]
        blob = b"".join(p.read_bytes() for p in files)
        for value in {str(r[f]) for r in rows for f in FEATURES if isinstance(r[f], str) and len(r[f]) >= 5}:
            assert value.encode() not in blob  # no plaintext value in the shuffler's store or logs
        assert b"127.0.0.1:" not in b"".join(
            (dep.workdir / "shuffler" / n).read_bytes() for n in ("process.out",)
        )
        with dep.admin() as admin:
            admin.post(f"{dep.urls['shuffler']}/admin/v1/collections/crash/rounds/1/flush").raise_for_status()
            _wait(lambda: _tally(dep, "curator", "crash")["accepted"] >= len(rows) * len(FEATURES), 60)
            time.sleep(0.3)
            counts = admin.get(f"{dep.urls['curator']}/admin/v1/collections/crash/marginals").json()["counts"]
    # every user counted exactly once: independent count of the same rows
    for f in FEATURES:
        assert counts[f] == dict(Counter(encode_value(r[f]) for r in rows)), f


def test_config_errors_are_clear(tmp_path: Path) -> None:
    from sdckit.errors import ConfigError
    from sdckit.protocol.services import load_config

    path = tmp_path / "c.yaml"
    path.write_text("role: curator\nkey_file: k.json\ndata_dir: d\nadmin_token: short\nrelay_token: x\n")
    with pytest.raises(ConfigError, match="admin_token"):
        load_config(path)
    good, other = secrets.token_urlsafe(32), secrets.token_urlsafe(32)
    cases = {
        f"admin_token: '{' ' * 16}'\nrelay_token: {good}": "whitespace",
        f"admin_token: {good}\nrelay_token: {good}": "the same",
        f"admin_token: {'a' * 40}\nrelay_token: {good}": "128 bits",
        f"admin_token: {good[:12]}\nrelay_token: {good}": "128 bits",
        f"admin_token: 123456789012345678901234567890\nrelay_token: {good}": "not text; quote it",
        f"admin_token: [1, 2]\nrelay_token: {good}": "not text",
    }
    for tokens, message in cases.items():
        path.write_text(f"role: curator\nkey_file: k.json\ndata_dir: d\n{tokens}\n")
        with pytest.raises(ConfigError, match=message):
            load_config(path)
    path.write_text(
        f"role: curator\nkey_file: k.json\ndata_dir: d\nadmin_token: {good}\nrelay_token: {other}\n"
    )
    assert load_config(path).admin_token == good
    path.write_text("role: curator\nkey_file: k.json\ndata_dir: d\nbogus: 1\n")
    with pytest.raises(ConfigError, match="unknown key"):
        load_config(path)
    path.write_text("role: curator\nkey_file: k\ndata_dir: d\n")
    with pytest.raises(ConfigError, match="not a shuffler"):
        load_config(path, role="shuffler")
    os.remove(path)


def test_inner_layer_for_the_wrong_key_is_rejected_by_the_curator(dep: LocalDeployment) -> None:
    spec = _create(dep, "inner")
    with _client(dep, "inner") as client:
        outsider = User(
            spec,
            shuffler_key=client.public_key("shuffler"),
            curator_key=PrivateKey.generate().public_key(),
            analyst_key=client.public_key("analyst"),
        )
        # its copies to the analyst open; the curator's (another key) are rejected there
        assert client.submit(1, outsider.round1({f: "x" for f in FEATURES}))["accepted"] == 2 * len(FEATURES)
    _wait(lambda: _tally(dep, "curator", "inner")["rejected"] == len(FEATURES))
    assert _tally(dep, "curator", "inner")["accepted"] == 0
    assert httpx.get(f"{dep.urls['curator']}/healthz").status_code == 200


def test_a_device_session_through_the_client(dep: LocalDeployment, adult_rows: list[dict[str, Any]]) -> None:
    spec = _create(dep, "flow", enrolment="tokens")
    rows = adult_rows[:40]
    invites = dep.invites("flow", len(rows))
    clients = [_client(dep, "flow", invite=i) for i in invites]  # one device per user
    with dep.admin() as admin:
        assert clients[0].plan() is None  # nothing decided yet
        for client, row in zip(clients, rows, strict=False):
            client.send_round1(row)
        admin.post(f"{dep.urls['shuffler']}/admin/v1/collections/flow/rounds/1/flush").raise_for_status()
        _wait(lambda: _tally(dep, "curator", "flow")["accepted"] == len(rows) * len(FEATURES))
        r = admin.post(f"{dep.urls['curator']}/admin/v1/collections/flow/plan", json={"k": 2, "budget": 0.5})
        assert r.status_code == 200, r.text
        plan = clients[0].plan()
        assert plan is not None
        assert plan.to_dict() == r.json()
        admin.put(
            f"{dep.urls['analyst']}/admin/v1/collections/flow",
            json={"spec": spec.to_dict(), "plan": r.json()},
        ).raise_for_status()
        for client, row in zip(clients, rows, strict=False):
            client.send_round2(row)
            client.close()
        _wait(lambda: _tally(dep, "analyst", "flow")["accepted"] == len(rows))
        release = admin.get(f"{dep.urls['analyst']}/admin/v1/collections/flow/release").json()
    assert release["columns"] == list(plan.columns)
    got = Counter(tuple(v for v in row) for row in release["rows"])
    assert got == Counter(tuple(row[c] for c in plan.columns) for row in rows)


def test_shuffler_store_counters_match_the_pool(tmp_path: Path) -> None:
    from sdckit.protocol.services import ShufflerStore

    store = ShufflerStore(tmp_path / "s.sqlite3")
    assert store.add("c", 1, [b"a", b"b", b"c"]) == 3
    assert store.add("c", 1, [b"a", b"d"]) == 1  # an identical resubmission is a no-op
    assert store.due() == [("c", 1, 4, False)]
    taken = store.take("c", 1)
    store.delete("c", 1, [i for i, _ in taken[:3]])
    stats = store.stats("c", 1)
    assert (stats["pooled"], stats["received"], stats["forwarded"], stats["duplicates"]) == (1, 4, 3, 1)
    store.flush("c", 2)
    assert store.due() == [("c", 1, 1, False)]  # a flushed round with an empty pool is not due
    assert not store.refused("c", 1, 2)
    assert store.refused("c", 1, 2)  # the second refusal in a row quarantines
    assert store.due() == []
    assert store.quarantined() == [{"collection": "c", "round": 1, "pooled": 1}]
    assert store.drop_pool("c", 1) == 1
    assert store.stats("c", 1)["dropped"] == 1
    assert store.due() == []
    store.close()


def test_forwarder_holds_or_drops_a_small_closing_pool_and_forgets_expired_collections(
    tmp_path: Path,
) -> None:
    import logging

    from sdckit.protocol import sealed_length
    from sdckit.protocol.services import ServiceConfig, ShufflerStore
    from sdckit.protocol.services._common import EventCounter
    from sdckit.protocol.services._shuffler import Registered, _Forwarder

    spec = CollectionSpec(id="c", features=("f",))
    for at_close, left in (("hold", 2), ("drop", 0)):
        cfg = ServiceConfig(
            role="shuffler",
            key_file="unused",
            data_dir=str(tmp_path),
            curator_url="http://127.0.0.1:9",
            analyst_url="http://127.0.0.1:9",
            min_batch=3,
            at_close=at_close,  # type: ignore[arg-type]
            forward_max_bytes=5000,
        )
        store = ShufflerStore(tmp_path / f"{at_close}.sqlite3")
        registry = {"c": Registered(spec, {}, "open", time.time() + 60, None)}
        fwd = _Forwarder(cfg, store, registry, EventCounter(logging.getLogger("test")))
        store.add("c", 1, [b"a", b"b"], users=2)
        store.flush("c", 1)
        # a forwarding request never exceeds forward_max_bytes (the receivers' body limit)
        inner = sealed_length(spec.suite, spec.round1_pad)
        assert 9 + fwd._chunk_messages(registry["c"], 1) * (4 + inner) <= cfg.forward_max_bytes
        fwd.forward_due(None)  # type: ignore[arg-type]  # below min_batch: never sent
        stats = store.stats("c", 1)
        assert (stats["pooled"], stats["dropped"], stats["forwarded"]) == (left, 2 - left, 0)
        store.register("c", {}, {"enrolment": "open"}, -1.0)
        registry["c"].expires = time.monotonic() - 1
        fwd.expire()
        if left:  # expiry never drops acknowledged messages: the held pool stays, and so does "c"
            assert set(registry) == {"c"}
            assert store.stats("c", 1)["pooled"] == left
        else:
            assert registry == {}
            assert store.table_sizes() == dict.fromkeys(("pool", "stats", "collections", "invites", "spent"), 0)
        store.close()
