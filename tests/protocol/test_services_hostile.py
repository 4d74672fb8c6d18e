"""Hostile requests against the three services over real HTTP on loopback (bounded fuzzing).

Standard: services reject malformed or hostile requests (4xx, never 5xx, never a hang), their
errors echo no secret, plaintext or stack trace, and afterwards a normal round still works with
exact counts. Every request goes to 127.0.0.1; the barrage is bounded by count (seeded numpy
Generator) and by wall time (``BARRAGE_SECONDS``); each request has a 10 s timeout.
"""

from __future__ import annotations

import json
import re
import secrets
import stat
import struct
import time
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx
import numpy as np
import pytest

from sdckit.protocol import (
    CollectionSpec,
    PublicKey,
    User,
    encode_value,
    info_label,
    pack_batch,
    pack_feature,
    seal,
)
from sdckit.protocol.services._launch import LocalDeployment

from .conftest import FEATURES
from .conftest import wait_until as _wait

pytestmark = pytest.mark.services

SEED = 20261130
MAX_BODY = 64 * 1024
BARRAGE_SECONDS = 20.0
CID = "hostile"
TIMEOUT = httpx.Timeout(10.0)
N_USERS = 48

HOSTILE_IDS = [
    "../../etc/passwd",
    "..%2f..%2fetc%2fpasswd",
    "%2e%2e",
    "%2e%2e%2f%2e%2e",
    "a%00b",
    "%00",
    "abc%0A",
    "x" * 3000,
    "%C3%BC",  # ü
    "a%20b",
    ".hidden",
    "-dash",
]
HOSTILE_ROUNDS = ["0", "4", "-1", "99999999999999999999999999999", "1.5", "%2e%2e", "x", "1%00"]


def _feature_plain(body: str, pad: int = 256, kind: int = 1) -> bytes:
    """An inner plaintext with any body (header by hand: version 1, kind, salt, length)."""
    b = body.encode("utf-8", "surrogatepass")
    return struct.pack(">BB16sH", 1, kind, secrets.token_bytes(16), len(b)) + b + bytes(pad - 20 - len(b))


# sealed correctly, so the shuffler must accept them; the receiver must count them as rejected
POISON_ROUND1 = [
    '["age",[1]]',
    '["age",{"timedelta_us":100000000000000000000}]',
    '["age",{"decimal":"abc"}]',
    '["age","\\ud800"]',
    '["age",NaN]',
    '["no-such-feature",1]',
    '["age",{"bytes":"!!"}]',
    '["age",{"no-such-tag":1}]',
]  # a multiple of the 4 features: an open collection admits complete submissions only
POISON_ROUND2 = ['[["sex",[1]]]', '[["sex",{"decimal":"x"}]]', '[["sex","\\udc00"]]']


@pytest.fixture(scope="module")
def dep(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalDeployment]:
    d = LocalDeployment(
        tmp_path_factory.mktemp("hostile"), batch_threshold=1, poll_seconds=0.05, max_body_bytes=MAX_BODY
    )
    with d:  # stops the three processes on exit, also after a failure
        yield d


def _secrets(dep: LocalDeployment) -> list[str]:
    out = [dep.admin_token, dep.relay_token]
    for role in ("shuffler", "curator", "analyst"):
        out.append(json.loads((dep.workdir / role / "key.json").read_text())["private"])
    return out


def _check_error_body(r: httpx.Response, forbidden: list[str], what: str) -> None:
    text = r.text
    for s in forbidden:
        assert s not in text, f"{what}: the response echoes a secret or a plaintext value"
    assert "Traceback" not in text, f"{what}: a stack trace"
    assert 'File "' not in text, f"{what}: a stack trace"


def _routes(dep: LocalDeployment) -> list[tuple[str, str, str, dict[str, Any]]]:
    """(role, method, path template, operation) for every route of every OpenAPI spec."""
    out = []
    for role, url in dep.urls.items():
        spec = httpx.get(f"{url}/openapi.json", timeout=TIMEOUT).json()
        for path, ops in spec["paths"].items():
            for method, op in ops.items():
                out.append((role, method.upper(), path, op))
    return out


def _fill(path: str, collection: str, round_: str) -> str:
    return path.replace("{collection}", collection).replace("{round_}", round_)


def _auth(dep: LocalDeployment, path: str) -> dict[str, str]:
    if path.startswith("/admin/"):
        return {"authorization": f"Bearer {dep.admin_token}"}
    if path.startswith("/internal/"):
        return {"authorization": f"Bearer {dep.relay_token}"}
    return {}


def _hostile_bodies(rng: np.random.Generator) -> list[tuple[str, bytes | Iterator[bytes], dict[str, str]]]:
    """(name, body, headers) of bodies no route may accept."""
    spec = json.dumps(CollectionSpec(id=CID, features=FEATURES, max_budget=0.5).to_dict()).encode()
    js = {"content-type": "application/json"}
    bodies: list[tuple[str, bytes | Iterator[bytes], dict[str, str]]] = []
    for n in rng.integers(0, 4096, size=6):
        bodies.append((f"random {n} bytes", rng.bytes(int(n)), {}))
        bodies.append((f"random {n} bytes as json", rng.bytes(int(n)), js))
    bodies += [
        ("empty", b"", js),
        ("truncated json", spec[: len(spec) // 2], js),
        ("invalid json", b"{'features': ['a']}", js),
        ("oversized", b"{" + b" " * MAX_BODY + b"}", js),
        ("oversized chunked", (b"[" + b"1," * 1000 for _ in range(40)), js),
        ("json as text/plain", spec, {"content-type": "text/plain"}),
        ("json as form", spec, {"content-type": "application/x-www-form-urlencoded"}),
        ("multipart", b"--x\r\n\r\n--x--", {"content-type": "multipart/form-data; boundary=x"}),
        ("list", b"[1, 2, 3]", js),
        ("huge int", b"1" * 5000, js),
        ("huge int field", b'{"k": ' + b"9" * 5000 + b', "features": ' + b"9" * 400 + b"}", js),
        ("deep arrays", b"[" * 20_000 + b"]" * 20_000, js),
        ("deep objects", b'{"a":' * 5000 + b"1" + b"}" * 5000, js),
        ("long string", json.dumps("x" * 60_000).encode(), js),
        ("unicode", json.dumps({"features": ["\u00fc\u4e2d\U0001f600"], "k": "\u00fc"}).encode(), js),
        ("lone surrogate", b'{"features": ["\\ud800"], "spec": "\\udfff"}', js),
        ("null", b"null", js),
        ("nan", b'{"k": NaN, "budget": NaN, "weights": {"age": Infinity}}', js),
        ("wrong shape spec", b'{"spec": [1], "plan": "x", "features": {"a": 1}}', js),
        ("bad plan", b'{"spec": {"features": ["age"]}, "plan": {"excluded": "ab", "columns": "x"}}', js),
        ("batch header only", b"SDCB\x01\xff\xff\xff\xff", {"content-type": "application/octet-stream"}),
    ]
    return bodies


def _send(http: httpx.Client, method: str, url: str, **kw: Any) -> httpx.Response:
    return http.request(method, url, timeout=TIMEOUT, **kw)


def test_barrage_then_an_exact_round(dep: LocalDeployment, adult_rows: list[dict[str, Any]]) -> None:
    rng = np.random.default_rng(SEED)
    forbidden = _secrets(dep)
    users_rows = adult_rows[:N_USERS]
    forbidden += sorted({v for r in users_rows for v in r.values() if isinstance(v, str) and len(v) >= 5})
    routes = _routes(dep)
    assert {m for _, m, _, _ in routes} >= {"GET", "POST", "PUT"}
    assert len(routes) >= 15
    # without count_check: the poison below is sealed by hand to the curator alone
    spec = CollectionSpec(id=CID, features=FEATURES, max_budget=0.5, count_check=False)
    for role in ("analyst", "shuffler"):  # every key pinned, or the services refuse the spec
        spec = spec.with_key(role, dep.public_key(role))
    admin_h = {"authorization": f"Bearer {dep.admin_token}"}
    relay_h = {"authorization": f"Bearer {dep.relay_token}"}
    deadline = time.monotonic() + BARRAGE_SECONDS
    sent = 0

    with httpx.Client(limits=httpx.Limits(max_connections=32)) as http:
        r = _send(
            http,
            "PUT",
            f"{dep.urls['curator']}/admin/v1/collections/{CID}",
            json={**spec.to_dict(), "count_check": False},  # left out, the request takes the default
            headers=admin_h,
        )
        assert r.status_code == 200, r.text
        r = _send(
            http,
            "PUT",
            f"{dep.urls['shuffler']}/admin/v1/collections/{CID}",
            json={"enrolment": "open"},
            headers=admin_h,
        )
        assert r.status_code == 200, r.text
        keys = {
            role: PublicKey.from_text(
                _send(
                    http,
                    "GET",
                    f"{dep.urls['shuffler']}/v1/keys" + ("" if role == "shuffler" else f"/{role}"),
                ).json()["document"]["public_key"]
            )
            for role in dep.urls
        }
        user = User(
            spec, shuffler_key=keys["shuffler"], curator_key=keys["curator"], analyst_key=keys["analyst"]
        )
        submit = f"{dep.urls['shuffler']}/v1/collections/{CID}/rounds/1/messages"

        def expect_4xx(r: httpx.Response, what: str) -> None:
            nonlocal sent
            sent += 1
            assert 400 <= r.status_code < 500, f"{what}: {r.status_code} {r.text[:200]}"
            _check_error_body(r, forbidden, what)

        # a collection nobody registered: refused at once (404), nothing of it is kept
        stray = User(
            CollectionSpec(id="aaa-unknown", features=FEATURES, count_check=False),
            shuffler_key=keys["shuffler"],
            curator_key=keys["curator"],
        ).round1(users_rows[0])
        r = _send(
            http,
            "POST",
            f"{dep.urls['shuffler']}/v1/collections/aaa-unknown/rounds/1/messages",
            content=pack_batch(stray),
        )
        assert r.status_code == 404

        # 1. every route: hostile path parameters, bad tokens, hostile bodies
        bodies = _hostile_bodies(rng)
        for role, method, path, op in routes:
            base = dep.urls[role]
            right_round = "2" if (role == "analyst" and "{round_}" in path) else "1"
            good_path = _fill(path, CID, right_round)
            protected = path.startswith(("/admin/", "/internal/"))
            for cid in (*HOSTILE_IDS, *rng.choice(HOSTILE_IDS, size=2)):
                if "{collection}" in path:
                    url = base + _fill(path, str(cid), right_round)
                    expect_4xx(
                        _send(http, method, url, headers=_auth(dep, path)), f"{method} {path} id={cid[:20]!r}"
                    )
            if "{round_}" in path:
                for rnd in HOSTILE_ROUNDS:
                    url = base + _fill(path, CID, rnd)
                    expect_4xx(
                        _send(http, method, url, headers=_auth(dep, path)), f"{method} {path} round={rnd}"
                    )
            if protected:
                wrong_tokens = [
                    {},
                    {"authorization": "Bearer wrong-token-0123456789"},
                    {"authorization": "Bearer " + "A" * 8 * 1024},  # long, within the 16 KiB head
                    {"authorization": f"Basic {dep.admin_token}"},
                    {"authorization": "Bearer"},
                    {"authorization": f"Bearer {dep.admin_token}x"},
                    {"authorization": b"Bearer \xff\xfe\xa0token"},
                    # the other token: admin is not relay, relay is not admin
                    relay_h if path.startswith("/admin/") else admin_h,
                ]
                for h in wrong_tokens:
                    r = _send(http, method, base + good_path, headers=h, content=b"x")
                    expect_4xx(r, f"{method} {path} token")
                    assert r.status_code == 401, (path, r.status_code)
                # overlong: refused (400) before the head is read whole; the server may close the
                # connection while the client still sends, which is a refusal too
                try:
                    r = _send(
                        http, method, base + good_path, headers={"authorization": "Bearer " + "A" * 64 * 1024}
                    )
                    expect_4xx(r, f"{method} {path} overlong token")
                except (httpx.ReadError, httpx.WriteError, httpx.RemoteProtocolError):
                    sent += 1
            consumes_body = "requestBody" in op or path.endswith(("/messages", "/batch"))
            if consumes_body:
                picks = rng.permutation(len(bodies))
                for i in picks:
                    name, body, headers = bodies[int(i)]
                    if time.monotonic() > deadline:
                        break
                    if name == "oversized chunked":
                        body = (b"[" + b"1," * 1000 for _ in range(40))  # a fresh generator each time
                    r = _send(
                        http, method, base + good_path, headers={**_auth(dep, path), **headers}, content=body
                    )
                    expect_4xx(r, f"{method} {path} body={name}")
            else:  # a body where none is read: ignored, never a 5xx
                r = _send(http, method, base + good_path, headers=_auth(dep, path), content=rng.bytes(512))
                sent += 1
                assert r.status_code < 500, (path, r.status_code)
            assert time.monotonic() < deadline + 10, "the barrage overran its time budget"

        # 2. replays and sealed poison: the shuffler accepts (it cannot read them), receivers reject
        messages = {i: user.round1(row) for i, row in enumerate(users_rows)}
        poison = [
            seal(
                keys["shuffler"],
                seal(keys["curator"], _feature_plain(b), info_label(CID, 1, "curator")),
                info_label(CID, 1, "shuffler"),
            )
            for b in POISON_ROUND1
        ]
        r = _send(http, "POST", submit, content=pack_batch(poison))
        assert r.status_code == 202, r.text
        assert r.json()["new"] == len(POISON_ROUND1)
        valid_sent = 0
        for i in range(N_USERS // 2):
            for _ in range(2):  # sent twice: counted once
                r = _send(http, "POST", submit, content=pack_batch(messages[i]))
                assert r.status_code == 202, r.text
                valid_sent += len(FEATURES)
        # the same round-1 inner messages relayed directly, twice (a replay by the relay itself)
        direct_rows = adult_rows[N_USERS : N_USERS + 6]
        salts_inner = [
            seal(
                keys["curator"],
                pack_feature(f, row[f], secrets.token_bytes(16), spec.round1_pad),
                info_label(CID, 1, "curator"),
            )
            for row in direct_rows
            for f in FEATURES
        ]
        relay_url = f"{dep.urls['curator']}/internal/v1/collections/{CID}/rounds/1/batch"
        for _ in range(2):
            r = _send(http, "POST", relay_url, headers=relay_h, content=pack_batch(salts_inner))
            assert r.status_code == 200, r.text

        # 3. a burst of concurrent requests: the other half of the users (each twice), garbage, reads
        garbage = [
            rng.bytes(300) for _ in range(N_USERS)
        ]  # drawn before the threads (rng is not thread-safe)

        def job(k: int) -> tuple[str, int]:
            kind = k % 4
            if kind in (0, 1):
                i = N_USERS // 2 + k // 4  # kinds 0 and 1: each of these users twice
                return "valid", _send(http, "POST", submit, content=pack_batch(messages[i])).status_code
            if kind == 2:
                return "garbage", _send(http, "POST", submit, content=garbage[k // 4]).status_code
            return "read", _send(http, "GET", f"{dep.urls['shuffler']}/v1/collections/{CID}").status_code

        n_burst = 4 * (N_USERS - N_USERS // 2)
        with ThreadPoolExecutor(max_workers=16) as pool:
            results = list(pool.map(job, range(n_burst), timeout=60))
        sent += n_burst
        for kind, status in results:
            if kind == "valid":
                assert status == 202
                valid_sent += len(FEATURES)
            elif kind == "garbage":
                assert status == 400
            else:
                assert status == 200
        for role, url in dep.urls.items():
            assert _send(http, "GET", f"{url}/healthz").status_code == 200, role

        # 4. the round still works, and the counts are exact
        _send(
            http, "POST", f"{dep.urls['shuffler']}/admin/v1/collections/{CID}/rounds/1/flush", headers=admin_h
        ).raise_for_status()
        n_users = N_USERS + len(direct_rows)

        def tally(role: str) -> dict[str, int]:
            return dict(
                _send(
                    http, "GET", f"{dep.urls[role]}/admin/v1/collections/{CID}/tally", headers=admin_h
                ).json()
            )

        _wait(
            lambda: (
                tally("curator")["accepted"] >= n_users * len(FEATURES)
                and tally("curator")["rejected"] >= len(POISON_ROUND1)
            )
        )
        stats = _send(
            http, "GET", f"{dep.urls['shuffler']}/admin/v1/collections/{CID}/rounds/1", headers=admin_h
        ).json()
        _wait(
            lambda: (
                _send(
                    http,
                    "GET",
                    f"{dep.urls['shuffler']}/admin/v1/collections/{CID}/rounds/1",
                    headers=admin_h,
                ).json()["pooled"]
                == 0
            )
        )
        time.sleep(0.3)
        stats = _send(
            http, "GET", f"{dep.urls['shuffler']}/admin/v1/collections/{CID}/rounds/1", headers=admin_h
        ).json()
        assert stats["received"] + stats["duplicates"] == valid_sent + len(POISON_ROUND1)  # nothing lost
        assert stats["forwarded"] == stats["received"]
        t = tally("curator")
        assert t["accepted"] == n_users * len(FEATURES)  # nothing double-counted
        assert t["rejected"] == len(POISON_ROUND1)
        assert t["duplicates"] >= len(salts_inner)
        counts = _send(
            http, "GET", f"{dep.urls['curator']}/admin/v1/collections/{CID}/marginals", headers=admin_h
        ).json()["counts"]
        all_rows = users_rows + direct_rows
        for f in FEATURES:  # independent count of the rows sent
            assert counts[f] == dict(Counter(encode_value(r[f]) for r in all_rows)), f
        stray_url = f"{dep.urls['shuffler']}/admin/v1/collections/aaa-unknown/rounds/1"
        assert _send(http, "GET", stray_url, headers=admin_h).status_code == 404  # no state kept

        # round 2 with replays and poison
        r = _send(
            http,
            "POST",
            f"{dep.urls['curator']}/admin/v1/collections/{CID}/plan",
            json={"k": 2, "budget": 0.5},
            headers=admin_h,
        )
        assert r.status_code == 200, r.text
        plan = r.json()
        assert plan["columns"]
        r = _send(
            http,
            "PUT",
            f"{dep.urls['analyst']}/admin/v1/collections/{CID}",
            json={"spec": spec.to_dict(), "plan": plan},
            headers=admin_h,
        )
        assert r.status_code == 200, r.text
        with dep.client(CID, require_count_check=False) as client:
            u2 = client.user()
            published = client.plan()
            assert published is not None
            second = [u2.round2(row, published) for row in all_rows]
        submit2 = submit.replace("rounds/1", "rounds/2")
        poison2 = [
            seal(
                keys["shuffler"],
                seal(
                    keys["analyst"],
                    _feature_plain(b, pad=spec.round2_pad, kind=2),
                    info_label(CID, 2, "analyst"),
                ),
                info_label(CID, 2, "shuffler", plan_sha256=published.sha256()),  # the pinned plan's
            )
            for b in POISON_ROUND2
        ]
        for batch in (second, second[:10], poison2):
            assert _send(http, "POST", submit2, content=pack_batch(batch)).status_code == 202
        _send(
            http, "POST", f"{dep.urls['shuffler']}/admin/v1/collections/{CID}/rounds/2/flush", headers=admin_h
        ).raise_for_status()
        _wait(
            lambda: (
                tally("analyst")["accepted"] >= len(all_rows)
                and tally("analyst")["rejected"] >= len(POISON_ROUND2)
            )
        )
        time.sleep(0.3)
        t2 = tally("analyst")
        assert (t2["accepted"], t2["rejected"]) == (len(all_rows), len(POISON_ROUND2))
        release = _send(
            http, "GET", f"{dep.urls['analyst']}/admin/v1/collections/{CID}/release", headers=admin_h
        ).json()
    assert release["columns"] == plan["columns"]
    assert Counter(map(tuple, release["rows"])) == Counter(
        tuple(row[c] for c in plan["columns"]) for row in all_rows
    )
    assert sent >= 400  # the barrage was not cut short to nothing

    # 5. no stack trace, secret, address or plaintext in what the services wrote
    for role in ("shuffler", "curator", "analyst"):
        files = [dep.workdir / role / "process.out", *(dep.workdir / role / "data").glob("*.log")]
        text = "".join(p.read_text(errors="replace") for p in files)
        assert "Traceback" not in text, f"{role}: an unhandled error was logged"
        for s in _secrets(dep):
            assert s not in text, role
        assert not re.search(
            r"127\.0\.0\.1:\d+", text.replace(dep.urls["curator"], "").replace(dep.urls["analyst"], "")
        )
    shuffler_files = [p for p in (dep.workdir / "shuffler" / "data").iterdir() if p.is_file()]
    blob = b"".join(p.read_bytes() for p in shuffler_files)
    for s in forbidden[5:]:
        assert s.encode() not in blob  # no plaintext value in the shuffler's store or log


def test_stores_and_logs_are_owner_only(dep: LocalDeployment) -> None:
    for role in ("shuffler", "curator", "analyst"):
        data = dep.workdir / role / "data"
        for p in [*data.glob("*.sqlite3*"), *data.glob("*.log")]:
            assert stat.S_IMODE(p.stat().st_mode) == 0o600, p
        key = dep.workdir / role / "key.json"
        assert stat.S_IMODE(key.stat().st_mode) == 0o600


def test_validation_errors_do_not_echo_the_input(dep: LocalDeployment) -> None:
    marker = "SECRET-MARKER-" + secrets.token_hex(8)
    admin_h = {"authorization": f"Bearer {dep.admin_token}"}
    with httpx.Client(headers=admin_h, timeout=TIMEOUT) as http:
        r = http.put(f"{dep.urls['curator']}/admin/v1/collections/echo", json=[marker])
        assert r.status_code == 422
        assert marker not in r.text
        keys = {role: dep.public_key(role) for role in ("analyst", "shuffler")}  # every key pinned
        r = http.put(f"{dep.urls['curator']}/admin/v1/collections/echo", json={"features": ["a"], "keys": keys})
        assert r.status_code == 200
        r = http.post(
            f"{dep.urls['curator']}/admin/v1/collections/echo/plan",
            content=b'{"k": "' + marker.encode() + b'", "budget": NaN}',
            headers={"content-type": "application/json"},
        )
        assert r.status_code == 422  # a NaN in the input used to make the error handler fail (500)
        assert marker not in r.text


def test_json_bodies_have_the_size_limit_too(dep: LocalDeployment) -> None:
    admin_h = {"authorization": f"Bearer {dep.admin_token}", "content-type": "application/json"}
    big = json.dumps({"features": ["f" + str(i) for i in range(MAX_BODY // 4)]}).encode()
    r = httpx.put(
        f"{dep.urls['curator']}/admin/v1/collections/big", content=big, headers=admin_h, timeout=TIMEOUT
    )
    assert r.status_code == 413

    def chunks() -> Iterator[bytes]:
        yield big

    r = httpx.put(
        f"{dep.urls['curator']}/admin/v1/collections/big", content=chunks(), headers=admin_h, timeout=TIMEOUT
    )
    assert r.status_code == 413


def test_analyst_refuses_a_plan_off_the_spec(dep: LocalDeployment) -> None:
    admin_h = {"authorization": f"Bearer {dep.admin_token}"}
    spec = CollectionSpec(id="offspec", features=("a", "b")).to_dict()
    plan = {
        "collection": "offspec",
        "columns": ["zzz"],
        "k": 2,
        "budget": 0.1,
        "bound": 0.0,
        "method": "best",
    }
    r = httpx.put(
        f"{dep.urls['analyst']}/admin/v1/collections/offspec",
        json={"spec": spec, "plan": plan},
        headers=admin_h,
        timeout=TIMEOUT,
    )
    assert r.status_code == 422
    assert "zzz" in r.text
    r = httpx.put(
        f"{dep.urls['analyst']}/admin/v1/collections/offspec",
        json={"spec": spec, "plan": {**plan, "columns": ["a"], "excluded": "ab"}},
        headers=admin_h,
        timeout=TIMEOUT,
    )
    assert r.status_code == 422  # was a 500 (dict("ab") raised ValueError)


def test_request_heads_are_bounded(dep: LocalDeployment) -> None:
    """A 4 MB header or 2,000 headers of 100 bytes are refused before being read whole
    (httptools buffered a head of any size; h11 keeps at most 16 KiB of an incomplete head plus
    one read)."""
    url = f"{dep.urls['curator']}/admin/v1/collections/x/tally"
    try:
        r = httpx.get(url, headers={"authorization": "Bearer " + "A" * (4 << 20)}, timeout=TIMEOUT)
        assert r.status_code == 400
    except (httpx.ReadError, httpx.WriteError, httpx.RemoteProtocolError):
        pass  # the server closed the connection while the client was still sending: refused
    many = [(f"x-h{i}", "v" * 100) for i in range(2000)]  # ~220 kB of headers
    try:
        r = httpx.get(f"{dep.urls['curator']}/healthz", headers=many, timeout=TIMEOUT)
        assert r.status_code == 400
    except (httpx.ReadError, httpx.WriteError, httpx.RemoteProtocolError):
        pass
    assert httpx.get(f"{dep.urls['curator']}/healthz", timeout=TIMEOUT).status_code == 200
