"""The attacks of issue 15, reproduced over real HTTP on loopback, each shown to fail now.

1 fake users, 2 late and small batches / direct contact, 3 an oversized message, 4 a stray
feature message, 5 unregistered collection ids, 6 replays, 7 the write-ahead log, 8 keys; and the
low-severity findings (client retries, slow heads, aborted uploads). Every request goes to
127.0.0.1; loops are bounded by count.
"""

from __future__ import annotations

import base64
import os
import secrets
import socket
import threading
import time
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import pytest

from sdckit.errors import AuthError, ConfigError
from sdckit.protocol import (
    CollectionSpec,
    decide_plan,
    encode_value,
    info_label,
    pack_batch,
)
from sdckit.protocol._client import Client, credential_header
from sdckit.protocol._crypto import seal
from sdckit.protocol._enrol import Credential, Enrolment
from sdckit.protocol._keyfile import generate_key_file, read_private_key
from sdckit.protocol._wire import pack_feature
from sdckit.protocol.services._launch import LocalDeployment

from .conftest import FEATURES
from .conftest import wait_until as _wait

pytestmark = pytest.mark.services

MIN_BATCH = 5


def b64(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


@pytest.fixture(scope="module")
def dep(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalDeployment]:
    d = LocalDeployment(
        tmp_path_factory.mktemp("attacks"),
        batch_threshold=10_000,  # rounds are released by the admin's flush in these tests
        min_batch=MIN_BATCH,
        poll_seconds=0.05,
        options={"quarantine_after": 3, "header_timeout": 1.0, "idle_timeout": 1.0},
    )
    with d:
        yield d


def _get(dep: LocalDeployment, role: str, path: str) -> Any:
    with dep.admin() as admin:
        r = admin.get(f"{dep.urls[role]}{path}")
        r.raise_for_status()
        return r.json()


def _post(dep: LocalDeployment, role: str, path: str, **kw: Any) -> httpx.Response:
    with dep.admin() as admin:
        return admin.post(f"{dep.urls[role]}{path}", **kw)


def _tally(dep: LocalDeployment, role: str, cid: str) -> dict[str, int]:
    return dict(_get(dep, role, f"/admin/v1/collections/{cid}/tally"))


def _stats(dep: LocalDeployment, cid: str, round_: int) -> dict[str, int]:
    return dict(_get(dep, "shuffler", f"/admin/v1/collections/{cid}/rounds/{round_}"))


def _enrolled(dep: LocalDeployment, cid: str, n: int) -> list[Client]:
    """``n`` devices, each enrolled with its own invite."""
    clients = [dep.client(cid, invite=i) for i in dep.invites(cid, n)]
    for c in clients:
        c.enrol()
    return clients


def _submit_url(dep: LocalDeployment, cid: str, round_: int) -> str:
    return f"{dep.urls['shuffler']}/v1/collections/{cid}/rounds/{round_}/messages"


def test_1_fake_users_leave_the_plan_to_the_real_users(
    dep: LocalDeployment, adult_rows: list[dict[str, Any]]
) -> None:
    cid = "fake"
    dep.create(CollectionSpec(id=cid, features=FEATURES), enrolment="tokens")
    rows = adult_rows[:60]
    clients = _enrolled(dep, cid, len(rows))
    enrol = f"{dep.urls['shuffler']}/v1/collections/{cid}/enrol"
    blinded = Enrolment(cid).blinded[0]
    (spare,) = dep.invites(cid, 1)
    for invite, blind, status in [
        (clients[0].invite, blinded, 403),  # an invite is used once
        ("no-such-invite-0123", blinded, 403),
        (spare, ["AAAA", "AAAA"], 400),  # refused before the invite is spent
    ]:
        r = httpx.post(enrol, json={"users": [{"invite": invite, "blinded": blind}]})
        assert r.status_code == status, r.text
    assert httpx.post(enrol, json={"users": [{"invite": spare, "blinded": blinded}]}).status_code == 200
    for c, row in zip(clients, rows, strict=True):
        c.send_round1(row)
    user = clients[0].user()
    # the attacker: no credential, 300 complete fake rows (young, rare values) in 3 requests
    fakes = [{"age": 17, "sex": "Female", "race": "Other", "marital-status": "Widowed"}] * 300
    url = _submit_url(dep, cid, 1)
    for part in range(3):
        body = pack_batch(m for row in fakes[part * 100 : (part + 1) * 100] for m in user.round1(row))
        assert httpx.post(url, content=body).status_code == 401  # refused before any decryption
    # ... a forged credential, and a real one reused or stretched over many rows
    forged = Credential(1, secrets.token_bytes(32), secrets.token_bytes(64))
    headers = credential_header([forged])
    assert httpx.post(url, content=pack_batch(user.round1(fakes[0])), headers=headers).status_code == 403
    one = clients[0].credentials[1]
    many = pack_batch(m for row in fakes[:50] for m in user.round1(row))
    assert httpx.post(url, content=many, headers=credential_header([one])).status_code == 400
    again = httpx.post(url, content=pack_batch(user.round1(fakes[0])), headers=credential_header([one]))
    assert again.status_code == 409  # exactly one submission per credential and round
    assert _stats(dep, cid, 1)["users"] == len(rows)

    assert _post(dep, "shuffler", f"/admin/v1/collections/{cid}/rounds/1/flush").status_code == 200
    _wait(lambda: _tally(dep, "curator", cid)["accepted"] == len(rows) * len(FEATURES))
    r = _post(dep, "curator", f"/admin/v1/collections/{cid}/plan", json={"k": 5, "budget": 0.05})
    assert r.status_code == 200, r.text
    counts = {f: Counter(encode_value(row[f]) for row in rows) for f in FEATURES}  # independent count
    assert _get(dep, "curator", f"/admin/v1/collections/{cid}/marginals")["counts"] == counts
    expected = decide_plan(counts, collection=cid, k=5, budget=0.05)
    assert r.json() == expected.to_dict()
    assert r.json()["n_round1"] == len(rows)
    for c in clients:
        c.close()


def test_1b_one_invite_cannot_buy_several_credentials_for_one_round(
    dep: LocalDeployment, adult_rows: list[dict[str, Any]]
) -> None:
    """The shuffler cannot see inside a blinded input, so an attacker blinds three round-1 token
    inputs with one invite. Each position is evaluated with its own round's key: only the input at
    round 1's position gives a round-1 credential; the other two verify for no round."""
    from voprf import ristretto

    from sdckit.protocol._enrol import token_input

    cid = "sybil-rounds"
    dep.create(CollectionSpec(id=cid, features=FEATURES), enrolment="tokens")
    (invite,) = dep.invites(cid, 1)
    nonces = [secrets.token_bytes(32) for _ in range(3)]
    blinds = [ristretto.Client.blind(token_input(cid, 1, n)) for n in nonces]  # all for round 1
    body = {"users": [{"invite": invite, "blinded": [b64(b.serialize()) for _, b in blinds]}]}
    r = httpx.post(f"{dep.urls['shuffler']}/v1/collections/{cid}/enrol", json=body)
    assert r.status_code == 200, r.text
    answer = r.json()
    creds = []
    for pos, ((client, _), nonce) in enumerate(zip(blinds, nonces, strict=True)):
        rnd = str(pos + 1 if pos < 2 else 3)
        out = ristretto.VerifiableBatchOutput.deserialize(unb64(answer["evaluated"][rnd]))
        key = ristretto.PublicKey.deserialize(unb64(answer["issuer_keys"][rnd]))
        (output,) = ristretto.Client.finalize_batch([client], out, key)  # each proof verifies
        creds.append(Credential(1, nonce, bytes(output)))
    user = dep.client(cid).user()
    url = _submit_url(dep, cid, 1)
    statuses = [
        httpx.post(url, content=pack_batch(user.round1(row)), headers=credential_header([c])).status_code
        for c, row in zip(creds, adult_rows[:3], strict=True)
    ]
    assert statuses == [202, 403, 403]
    assert _stats(dep, cid, 1)["users"] == 1


def test_2_no_small_batch_and_no_device_reaches_curator_or_analyst(
    dep: LocalDeployment, adult_rows: list[dict[str, Any]]
) -> None:
    cid = "late"
    spec = CollectionSpec(id=cid, features=FEATURES)
    dep.create(spec, enrolment="tokens")
    rows = adult_rows[200:230]
    clients = _enrolled(dep, cid, len(rows))
    before = {role: _get(dep, role, "/admin/v1/requests") for role in ("curator", "analyst")}
    for c, row in zip(clients[:20], rows[:20], strict=True):
        c.send_round1(row)
    _post(dep, "shuffler", f"/admin/v1/collections/{cid}/rounds/1/flush").raise_for_status()
    _wait(lambda: _tally(dep, "curator", cid)["accepted"] == 20 * len(FEATURES))
    # late users after the flush: fewer than min_batch are held, never forwarded alone
    for c, row in zip(clients[20:24], rows[20:24], strict=True):
        c.send_round1(row)
    time.sleep(1.0)
    assert _tally(dep, "curator", cid)["accepted"] == 20 * len(FEATURES)
    assert _stats(dep, cid, 1)["pooled"] == 4 * len(FEATURES)
    clients[24].send_round1(rows[24])  # the fifth late user: one batch of 5 users
    _wait(lambda: _tally(dep, "curator", cid)["accepted"] == 25 * len(FEATURES))

    plan = _post(dep, "curator", f"/admin/v1/collections/{cid}/plan", json={"k": 2, "budget": 0.5}).json()
    with dep.admin() as admin:
        admin.put(
            f"{dep.urls['analyst']}/admin/v1/collections/{cid}", json={"spec": spec.to_dict(), "plan": plan}
        ).raise_for_status()
    _post(dep, "shuffler", f"/admin/v1/collections/{cid}/rounds/2/flush").raise_for_status()
    for c, row in zip(clients[:4], rows[:4], strict=True):
        c.send_round2(row)
    time.sleep(1.0)
    assert _tally(dep, "analyst", cid)["accepted"] == 0  # 4 rows < min_batch: held
    clients[4].send_round2(rows[4])
    _wait(lambda: _tally(dep, "analyst", cid)["accepted"] == 5)
    for role in ("curator", "analyst"):  # every request came with the relay or the admin token
        after = _get(dep, role, "/admin/v1/requests")
        assert after.get("unauthenticated", 0) == before[role].get("unauthenticated", 0) == 0, role
        assert httpx.get(f"{dep.urls[role]}/internal/v1/keys").status_code == 401
    for c in clients:
        c.close()


def test_3_oversized_or_short_messages_get_400_and_a_refused_pool_is_quarantined(
    dep: LocalDeployment, adult_rows: list[dict[str, Any]]
) -> None:
    cid = "sizes"
    spec = CollectionSpec(id=cid, features=FEATURES)
    dep.create(spec, enrolment="open")
    with dep.client(cid) as client:
        user = client.user()
        good = user.round1(adult_rows[0])
        url = _submit_url(dep, cid, 1)
        huge = [*good[:3], good[3] + b"\x00" * (2 << 20)]  # 2 MiB: inside the body limit
        r = httpx.post(url, content=pack_batch(huge), timeout=30)
        assert r.status_code == 400
        big = [*good[:3], good[3] + b"\x00" * 1000]
        r = httpx.post(url, content=pack_batch(big))
        assert r.status_code == 400
        assert "bytes; round 1 messages have" in r.json()["detail"]
        assert httpx.post(url, content=pack_batch([*good[:3], good[3][:-1]])).status_code == 400
        assert _stats(dep, cid, 1)["received"] == 0

        # round 2 before the analyst knows the plan: refused 3 times, then quarantined
        plan_free = [user.round2(row, _plan(cid, spec)) for row in adult_rows[:MIN_BATCH]]
        _post(dep, "shuffler", f"/admin/v1/collections/{cid}/rounds/2/flush").raise_for_status()
        assert httpx.post(_submit_url(dep, cid, 2), content=pack_batch(plan_free)).status_code == 202
        _wait(lambda: _get(dep, "shuffler", "/admin/v1/quarantine")["quarantined"] != [])
        q = _get(dep, "shuffler", "/admin/v1/quarantine")["quarantined"]
        assert q == [{"collection": cid, "round": 2, "pooled": MIN_BATCH}]
        time.sleep(0.5)
        assert _stats(dep, cid, 2)["refusals"] == 3  # no longer retried
        with dep.admin() as admin:
            r = admin.delete(f"{dep.urls['shuffler']}/admin/v1/collections/{cid}/rounds/2/pool")
            assert r.status_code == 200
            assert (r.json()["dropped"], r.json()["pooled"], r.json()["quarantined"]) == (MIN_BATCH, 0, 0)
    assert _get(dep, "shuffler", "/admin/v1/quarantine")["quarantined"] == []


def _plan(cid: str, spec: CollectionSpec) -> Any:
    from sdckit.protocol import PublishedPlan

    return PublishedPlan(collection=cid, columns=("sex",), k=2, budget=0.5, bound=0.0, method="test")


def test_4_a_stray_feature_message_cannot_block_planning(
    dep: LocalDeployment, adult_rows: list[dict[str, Any]]
) -> None:
    cid = "stray"
    spec = CollectionSpec(id=cid, features=FEATURES)
    dep.create(spec, enrolment="tokens")
    rows = adult_rows[300:330]
    clients = _enrolled(dep, cid, len(rows))
    for c, row in zip(clients[:-1], rows[:-1], strict=True):
        c.send_round1(row)
    # an enrolled cheater sends four 'age' messages instead of one per feature (the shuffler
    # cannot tell: they are sealed for the curator)
    cheat = clients[-1]
    user = cheat.user()
    keys = {"shuffler": user.shuffler_key, "curator": user.curator_key}
    msgs = [
        seal(
            keys["shuffler"],
            seal(
                keys["curator"],
                pack_feature("age", 20 + i, secrets.token_bytes(16), spec.round1_pad),
                info_label(cid, 1, "curator"),
            ),
            info_label(cid, 1, "shuffler"),
        )
        for i in range(len(FEATURES))
    ]
    assert cheat.submit(1, msgs)["accepted"] == len(FEATURES)
    _post(dep, "shuffler", f"/admin/v1/collections/{cid}/rounds/1/flush").raise_for_status()
    _wait(lambda: _tally(dep, "curator", cid)["accepted"] == len(rows) * len(FEATURES))
    r = _post(dep, "curator", f"/admin/v1/collections/{cid}/plan", json={"k": 2, "budget": 0.5})
    assert r.status_code == 200, r.text
    plan = r.json()
    assert "age" not in plan["columns"]
    assert "stray" in plan["excluded"]["age"]
    assert plan["n_round1"] == len(rows) - 1  # the users whose counts agree
    for c in clients:
        c.close()


@pytest.mark.slow
def test_5_unregistered_ids_leave_no_state_and_cost_nothing_afterwards(dep: LocalDeployment) -> None:
    before = _get(dep, "shuffler", "/admin/v1/state")
    log = dep.workdir / "shuffler" / "data" / "shuffler.log"
    log_before = log.stat().st_size
    body = pack_batch([b"\x00" * 352] * 4)

    def hammer(part: int) -> Counter[int]:
        out: Counter[int] = Counter()
        with httpx.Client(timeout=10.0) as http:
            for i in range(2500):
                for _ in range(3):  # a kept-alive connection the server closed as we reused it
                    try:
                        r = http.post(_submit_url(dep, f"ghost-{part}-{i}", 1), content=body)
                        break
                    except httpx.RemoteProtocolError:
                        continue
                out[r.status_code] += 1
        return out

    with ThreadPoolExecutor(4) as pool:
        statuses = sum(pool.map(hammer, range(4)), Counter())
    assert statuses == Counter({404: 10_000})
    after = _get(dep, "shuffler", "/admin/v1/state")
    assert after == before  # not one row for them
    assert log.stat().st_size - log_before < 2_000  # aggregated, not a line per request
    time.sleep(0.5)
    t0, c0 = time.monotonic(), dep.cpu_seconds("shuffler")
    time.sleep(3.0)
    share = (dep.cpu_seconds("shuffler") - c0) / (time.monotonic() - t0)
    assert share < 0.05, f"the shuffler uses {share:.1%} of a core once they stop"


def test_6_replays_cost_no_decryption_and_credentials_are_rate_limited(
    dep: LocalDeployment, adult_rows: list[dict[str, Any]]
) -> None:
    cid = "replay6"
    dep.create(CollectionSpec(id=cid, features=FEATURES), enrolment="open")
    with dep.client(cid) as client:
        user = client.user()
        body = pack_batch(m for row in adult_rows[:500] for m in user.round1(row))
    url = _submit_url(dep, cid, 1)
    c0 = dep.cpu_seconds("shuffler")
    assert httpx.post(url, content=body, timeout=60).status_code == 202
    first = dep.cpu_seconds("shuffler") - c0
    c1 = dep.cpu_seconds("shuffler")
    for _ in range(6):
        r = httpx.post(url, content=body, timeout=60)
        assert (r.status_code, r.json()["new"]) == (202, 0)
    replays = dep.cpu_seconds("shuffler") - c1
    assert replays < first / 2, (first, replays)  # six replays cost less than half of one decryption
    s = _stats(dep, cid, 1)
    assert (s["received"], s["duplicates"]) == (2000, 6 * 2000)

    cid = "rate"
    dep.create(CollectionSpec(id=cid, features=FEATURES), enrolment="tokens")
    (c,) = _enrolled(dep, cid, 1)
    statuses = []
    for i in range(12):  # different bodies, one credential
        msgs = c.user().round1({**adult_rows[i], "age": 20 + i})
        r = httpx.post(
            _submit_url(dep, cid, 1), content=pack_batch(msgs), headers=credential_header([c.credentials[1]])
        )
        statuses.append(r.status_code)
    assert statuses[0] == 202
    assert set(statuses[1:10]) == {409}
    assert statuses[10:] == [429, 429]
    c.close()


def test_7_no_forwarded_ciphertext_or_order_stays_on_disk(
    dep: LocalDeployment, adult_rows: list[dict[str, Any]]
) -> None:
    cid = "wal"
    spec = CollectionSpec(id=cid, features=FEATURES)
    dep.create(spec, enrolment="open")
    with dep.client(cid) as client:
        user = client.user()
    keys = {"shuffler": user.shuffler_key, "curator": user.curator_key}
    inner, outer = [], []
    for row in adult_rows[:60]:
        for f in FEATURES:
            i = seal(
                keys["curator"],
                pack_feature(f, row[f], secrets.token_bytes(16), spec.round1_pad),
                info_label(cid, 1, "curator"),
            )
            inner.append(i)
            outer.append(seal(keys["shuffler"], i, info_label(cid, 1, "shuffler")))
    for u in range(60):  # one user per commit, as devices would
        chunk = outer[u * len(FEATURES) : (u + 1) * len(FEATURES)]
        assert httpx.post(_submit_url(dep, cid, 1), content=pack_batch(chunk)).status_code == 202
    _post(dep, "shuffler", f"/admin/v1/collections/{cid}/rounds/1/flush").raise_for_status()
    _wait(lambda: _tally(dep, "curator", cid)["accepted"] == len(inner))
    _wait(lambda: _stats(dep, cid, 1)["pooled"] == 0)
    time.sleep(0.3)
    data = dep.workdir / "shuffler" / "data"
    blob = b"".join(p.read_bytes() for p in sorted(data.iterdir()) if p.is_file())
    found = sum(1 for m in inner if m[40:88] in blob) + sum(1 for m in outer if m[40:88] in blob)
    assert found == 0, f"{found} forwarded ciphertexts remain in {data}"
    wal = data / "shuffler.sqlite3-wal"
    assert not wal.exists() or wal.stat().st_size == 0


def test_8_keys_refuse_symlinks_and_loose_modes(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from sdckit.cli import app

    target = tmp_path / "victim.txt"
    target.write_text("precious\n")
    link = tmp_path / "key.json"
    link.symlink_to(target)
    with pytest.raises(ConfigError, match="symbolic link"):
        generate_key_file(link, force=True)
    r = CliRunner().invoke(app, ["protocol", "keygen", str(link), "--force"])
    assert r.exit_code != 0
    assert "symbolic link" in r.stderr
    assert target.read_text() == "precious\n"
    dangling = tmp_path / "dangling.json"
    dangling.symlink_to(tmp_path / "nowhere.json")
    with pytest.raises(ConfigError, match="symbolic link"):
        generate_key_file(dangling)
    assert not (tmp_path / "nowhere.json").exists()
    path = tmp_path / "real.json"
    generate_key_file(path)
    assert (path.stat().st_mode & 0o777) == 0o600
    read_private_key(path)
    os.chmod(path, 0o644)
    with pytest.raises(ConfigError, match="chmod 600"):
        read_private_key(path)


def test_client_retries_through_a_restart_and_server_errors(dep: LocalDeployment) -> None:
    cid = "restart"
    dep.create(CollectionSpec(id=cid, features=FEATURES), enrolment="open")
    client = dep.client(cid, retry_window=30.0)
    msgs = client.user().round1({"age": 33, "sex": "Male", "race": "White", "marital-status": "Divorced"})
    dep.kill("shuffler")
    result: list[Any] = []
    t = threading.Thread(target=lambda: result.append(client.submit(1, msgs)))
    t.start()
    time.sleep(2.0)
    dep.start("shuffler")
    t.join(60)
    assert result
    assert result[0]["accepted"] == len(FEATURES)
    client.close()

    answers = iter([500, 503, 429, 202])
    seen = []

    def handler(request: httpx.Request) -> httpx.Response:
        status = next(answers)
        seen.append(status)
        return httpx.Response(status, json={"accepted": 1, "new": 1, "detail": "x"})

    c = dep.client(cid)
    c._http = httpx.Client(transport=httpx.MockTransport(handler))
    assert c.submit(1, msgs[:1], credentials=[])["accepted"] == 1
    assert seen == [500, 503, 429, 202]
    answers = iter([401])
    with pytest.raises(AuthError):
        c.submit(1, msgs[:1], credentials=[])  # not retried


def test_slow_heads_and_stalled_bodies_are_cut_and_logged_in_one_line(dep: LocalDeployment) -> None:
    host, port = dep.urls["shuffler"].removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=10) as s:  # a slow head
        s.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n")
        s.settimeout(5.0)
        t0 = time.monotonic()
        assert s.recv(100) == b""  # closed by the server
        assert time.monotonic() - t0 < 4.0
    dep.create(CollectionSpec(id="stall", features=FEATURES), enrolment="open")
    for _ in range(3):  # stalled uploads: the body stops half way
        with socket.create_connection((host, int(port)), timeout=10) as s:
            s.sendall(
                b"POST /v1/collections/stall/rounds/1/messages HTTP/1.1\r\nHost: x\r\n"
                b"Content-Type: application/octet-stream\r\nContent-Length: 5000\r\n\r\n" + b"\x00" * 100
            )
            s.settimeout(5.0)
            try:
                s.recv(1000)
            except (TimeoutError, ConnectionResetError):
                pytest.fail("the stalled upload was not cut")
    assert httpx.get(f"{dep.urls['shuffler']}/healthz").status_code == 200
    out = (dep.workdir / "shuffler" / "process.out").read_text(errors="replace")
    assert "Traceback" not in out
