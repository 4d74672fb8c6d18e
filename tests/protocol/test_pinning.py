"""Every key pinned (issue 37): a collection spec that leaves the curator's, the analyst's or the
shuffler's HPKE key open is refused by the curator's service, by the shuffler and by the device.

The attack (issue 37): docs step 5 created a collection with only ``features``; the spec then
pinned the curator's key alone and 6 of 6 devices took 6 distinct analyst keys, so the analyst
could tell devices apart. The TypeScript SDK's refusal is in ``clients/js/test/client.test.mjs``.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from cryptography.hazmat.primitives.asymmetric import ed25519

from sdckit.protocol import Client, CollectionSpec, PrivateKey, UnpinnedSpecError, pack_batch
from sdckit.protocol._signing import sign_document, verify_key_to_text
from sdckit.protocol.services._launch import LocalDeployment

from .conftest import FEATURES

pytestmark = pytest.mark.services


@pytest.fixture(scope="module")
def dep(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalDeployment]:
    with LocalDeployment(tmp_path_factory.mktemp("pin"), batch_threshold=1, poll_seconds=0.05) as d:
        yield d


@pytest.mark.parametrize("pinned", [(), ("analyst",), ("shuffler",)])
def test_the_curators_service_refuses_a_spec_that_leaves_a_key_open(
    dep: LocalDeployment, pinned: tuple[str, ...]
) -> None:
    spec = CollectionSpec(id=f"open-{len(pinned)}-{''.join(pinned)}", features=FEATURES)
    for role in pinned:
        spec = spec.with_key(role, dep.public_key(role))
    with dep.admin() as admin:
        r = admin.put(f"{dep.urls['curator']}/admin/v1/collections/{spec.id}", json=spec.to_dict())
    assert r.status_code == 422, r.text
    missing = {"analyst", "shuffler"} - set(pinned)
    for role in missing:
        assert role in r.json()["detail"]
    assert "keys" in r.json()["detail"]  # says how to pass them


def test_the_shuffler_refuses_to_register_a_spec_the_curator_signed_without_every_key(
    dep: LocalDeployment,
) -> None:
    """A cheating curator (its store written by hand, as other code would) signs a spec that pins
    its own key only; the shuffler refuses to register it, so no device is ever offered it."""
    cid = "unpinned-at-shuffler"
    spec = CollectionSpec(id=cid, features=FEATURES).with_key("curator", dep.public_key("curator"))
    dep.stop_role("curator")
    con = sqlite3.connect(dep.workdir / "curator" / "data" / "curator.sqlite3")
    with con:
        con.execute(
            "INSERT INTO collections (id, spec, plan) VALUES (?, ?, NULL)", (cid, json.dumps(spec.to_dict()))
        )
        con.execute("INSERT OR IGNORE INTO tally (collection) VALUES (?)", (cid,))
    con.close()
    dep.start("curator")
    with dep.admin() as admin:
        r = admin.put(f"{dep.urls['shuffler']}/admin/v1/collections/{cid}", json={"enrolment": "open"})
        assert r.status_code == 422, r.text
        assert "analyst" in r.json()["detail"]
        assert "shuffler" in r.json()["detail"]
        r = httpx.get(f"{dep.urls['shuffler']}/v1/collections/{cid}")
        assert r.status_code == 404  # nothing relayed to devices


def _relay(spec: CollectionSpec, signing: ed25519.Ed25519PrivateKey) -> httpx.MockTransport:
    """A shuffler relaying ``spec`` signed by the real curator key (a cheating shuffler and curator)."""
    keys = {r: PrivateKey.generate().public_key().to_text() for r in ("curator", "analyst", "shuffler")}

    def handler(request: httpx.Request) -> httpx.Response:
        path = request.url.path
        body: Any
        if path == f"/v1/collections/{spec.id}":
            body = {"spec": sign_document(signing, "spec", "curator", spec.to_dict()), "enrolment": {}}
        elif path == "/v1/keys":
            body = {"document": {"public_key": keys["shuffler"]}}
        elif path.startswith("/v1/keys/"):
            role = path.rsplit("/", 1)[1]
            body = sign_document(signing, "keys", role, {"role": role, "public_key": keys[role]})
        else:
            return httpx.Response(404, json={"detail": "no"})
        return httpx.Response(200, json=body)

    return httpx.MockTransport(handler)


@pytest.mark.parametrize("pinned", [(), ("curator",), ("curator", "analyst"), ("curator", "shuffler")])
def test_the_python_device_refuses_a_spec_that_leaves_a_key_open(pinned: tuple[str, ...]) -> None:
    signing = ed25519.Ed25519PrivateKey.generate()
    spec = CollectionSpec(id="c", features=FEATURES)
    for role in pinned:
        spec = spec.with_key(role, PrivateKey.generate().public_key().to_text())
    verify = verify_key_to_text(signing.public_key())
    client = Client(shuffler_url="http://relay", collection="c", curator_verify_key=verify, analyst_verify_key=verify)
    client._http = httpx.Client(transport=_relay(spec, signing))
    with pytest.raises(UnpinnedSpecError, match="does not pin the") as err:
        client.user()
    for role in {"curator", "analyst", "shuffler"} - set(pinned):
        assert role in str(err.value)
    with pytest.raises(UnpinnedSpecError):
        client.send_round1(dict.fromkeys(FEATURES, 1))
    assert client._user is None  # nothing sealed


def test_the_python_device_takes_a_spec_that_pins_every_key() -> None:
    """The control: the same relay with all three keys pinned (the keys it relays) is accepted."""
    signing = ed25519.Ed25519PrivateKey.generate()
    spec = CollectionSpec(id="c", features=FEATURES)
    transport = _relay(spec, signing)
    verify = verify_key_to_text(signing.public_key())
    probe = httpx.Client(transport=transport, base_url="http://relay")
    for role in ("curator", "analyst"):
        spec = spec.with_key(role, probe.get(f"/v1/keys/{role}").json()["document"]["public_key"])
    spec = spec.with_key("shuffler", probe.get("/v1/keys").json()["document"]["public_key"])
    client = Client(shuffler_url="http://relay", collection="c", curator_verify_key=verify, analyst_verify_key=verify)
    client._http = httpx.Client(transport=_relay_with_keys(spec, signing, probe))
    # one message per feature to the curator, one to the analyst (count_check, the default)
    assert len(client.user().round1(dict.fromkeys(FEATURES, 1))) == 2 * len(FEATURES)


def _relay_with_keys(
    spec: CollectionSpec, signing: ed25519.Ed25519PrivateKey, probe: httpx.Client
) -> httpx.MockTransport:
    def handler(request: httpx.Request) -> httpx.Response:
        if request.url.path == f"/v1/collections/{spec.id}":
            return httpx.Response(
                200, json={"spec": sign_document(signing, "spec", "curator", spec.to_dict()), "enrolment": {}}
            )
        r = probe.get(request.url.path)
        return httpx.Response(r.status_code, content=r.content, headers={"content-type": "application/json"})

    return httpx.MockTransport(handler)


def test_enrolment_looks_invites_up_before_any_voprf_work(dep: LocalDeployment) -> None:
    """128 made-up invites with well-formed blinded inputs: refused on the lookup (issue 37: 23,552
    evaluations in 40 s before), the answer saying no VOPRF work was done; a real invite still enrols."""
    from sdckit.protocol._enrol import ENROL_ROUNDS, MAX_ENROL_USERS, Enrolment

    spec = CollectionSpec(id="lookup-first", features=FEATURES)
    dep.create(spec, enrolment="tokens")
    users = min(128, MAX_ENROL_USERS)
    pending = Enrolment(spec.id, ENROL_ROUNDS, users=users)
    body = {"users": [{"invite": f"made-up-{i}", "blinded": pending.blinded[i]} for i in range(users)]}
    r = httpx.post(f"{dep.urls['shuffler']}/v1/collections/{spec.id}/enrol", json=body, timeout=60)
    assert r.status_code == 403, r.text
    assert "unknown invite" in r.text
    assert "no VOPRF work done" in r.text
    (invite,) = dep.invites(spec.id, 1)
    with dep.client(spec.id, invite=invite) as client:
        assert set(client.enrol()) == set(ENROL_ROUNDS)


def test_one_misnamer_at_300_users_gets_a_stated_reason_and_the_round_held(
    dep: LocalDeployment, adult: Any
) -> None:
    """Issue 37: one participant naming every message ``age`` at 300 users, k 5, budget 0.05. Its
    D = 6 moved messages cost k D / n = 0.1 > 0.05, so nothing can be released; the plan now
    states that reason for every feature, the device refuses to send saying it, and the shuffler
    holds round 2 (409) instead of taking rows for an empty plan."""
    import secrets

    from sdckit.protocol import PlanRefusedError, info_label, pack_batch, pack_feature, seal
    from sdckit.protocol._planning import HELD_REASON

    features = ("age", "sex", "race", "marital-status")
    rows = list(adult.head(300).select(features).rows(named=True))
    spec = CollectionSpec(id="misnamer300", features=features, max_budget=0.05, min_k=5)
    dep.create(spec, enrolment="open")
    url = f"{dep.urls['shuffler']}/v1/collections/{spec.id}/rounds/1/messages"
    head = {"content-type": "application/octet-stream"}
    with dep.client(spec.id) as device, httpx.Client(timeout=60) as http:
        user = device.user()
        for row in rows[:-1]:
            assert http.post(url, content=pack_batch(user.round1(row)), headers=head).status_code == 202
        cheat = [
            seal(
                user.shuffler_key,
                seal(
                    user.curator_key,
                    pack_feature("age", 20 + i, secrets.token_bytes(16), spec.round1_pad),
                    info_label(spec.id, 1, "curator"),
                ),
                info_label(spec.id, 1, "shuffler"),
            )
            for i in range(len(features))
        ]
        # its copies for the analyst (count_check, the default) are its true values: the curator's
        # counts then differ from the analyst's by the misnamed messages, which the plan declares
        honest = user.round1(rows[-1])[len(features) :]
        assert http.post(url, content=pack_batch(cheat + honest), headers=head).status_code == 202
        with dep.admin() as admin:
            admin.post(f"{dep.urls['shuffler']}/admin/v1/collections/{spec.id}/rounds/1/flush")
            cu = dep.urls["curator"]
            from .conftest import wait_until

            wait_until(lambda: admin.get(f"{cu}/admin/v1/collections/{spec.id}/tally").json()["accepted"] == 1200)
            r = admin.post(f"{cu}/admin/v1/collections/{spec.id}/plan", json={"k": 5, "budget": 0.05})
        assert r.status_code == 200, r.text
        plan = r.json()
        if plan["columns"]:  # a non-empty plan meets the issue too: within budget, allowance counted
            assert plan["evidence"]["moved"] == 6
            assert 5 * 6 / 300 <= plan["bound"] <= 0.05
        else:  # an empty one must say why, and the round is held
            assert set(plan["excluded"]) == set(features)
            assert all(HELD_REASON in why for why in plan["excluded"].values())
            assert plan["evidence"]["moved"] == 6
            with pytest.raises(PlanRefusedError, match=r"releases no column.*misnamed"):
                device.send_round2(rows[0])
            r2 = http.post(
                url.replace("rounds/1", "rounds/2"),
                content=pack_batch([user.round2(rows[0], device.plan())]),
                headers=head,
            )
            assert r2.status_code == 409, r2.text
            assert "held" in r2.text
            assert HELD_REASON in r2.text


def test_a_row_sealed_for_another_plan_fails_at_the_shuffler_before_its_credential_is_spent(
    dep: LocalDeployment, adult_rows: list[dict[str, Any]]
) -> None:
    """Issue 37: the pinned plan's hash is in round 2's outer HPKE label. A row sealed for another
    plan does not open at the shuffler (400), and the credential it carried is still good for the
    row on the pinned plan (202)."""
    from dataclasses import replace

    from sdckit.protocol._client import credential_header

    from .conftest import wait_until

    spec = CollectionSpec(id="bound-plan", features=FEATURES, max_budget=0.5)
    dep.create(spec, enrolment="tokens")
    rows = adult_rows[:12]
    clients = [dep.client(spec.id, invite=i) for i in dep.invites(spec.id, len(rows))]
    for c, row in zip(clients, rows, strict=True):
        c.send_round1(row)
    with dep.admin() as admin:
        admin.post(f"{dep.urls['shuffler']}/admin/v1/collections/{spec.id}/rounds/1/flush")
        cu = dep.urls["curator"]
        wait_until(
            lambda: admin.get(f"{cu}/admin/v1/collections/{spec.id}/tally").json()["accepted"]
            == len(rows) * len(FEATURES)
        )
        admin.post(f"{cu}/admin/v1/collections/{spec.id}/plan", json={"k": 2, "budget": 0.5}).raise_for_status()
    device = clients[0]
    pinned = device.plan()
    assert pinned is not None
    assert pinned.columns
    other = replace(pinned, bound=min(pinned.budget, pinned.bound + 0.01))  # any other plan document
    url = f"{dep.urls['shuffler']}/v1/collections/{spec.id}/rounds/2/messages"
    head = {"content-type": "application/octet-stream", **credential_header([device.credentials[2]])}
    r = httpx.post(url, content=pack_batch([device.user().round2(rows[0], other)]), headers=head)
    assert r.status_code == 400, r.text
    r = httpx.post(url, content=pack_batch([device.user().round2(rows[0], pinned)]), headers=head)
    assert r.status_code == 202, r.text  # the credential was not spent by the refused row
    for c in clients:
        c.close()


def test_a_device_can_opt_out_of_the_pair_round() -> None:
    """Issue 37: ``join_pairs=False``: send_pairs fetches and sends nothing (no request at all)."""
    requests: list[str] = []

    def handler(request: httpx.Request) -> httpx.Response:
        requests.append(request.url.path)
        return httpx.Response(404, json={"detail": "no"})

    signing = ed25519.Ed25519PrivateKey.generate()
    client = Client(
        shuffler_url="http://relay",
        collection="c",
        curator_verify_key=verify_key_to_text(signing.public_key()),
        join_pairs=False,
    )
    client._http = httpx.Client(transport=httpx.MockTransport(handler))
    assert client.send_pairs(dict.fromkeys(FEATURES, 1)) is None
    assert requests == []
