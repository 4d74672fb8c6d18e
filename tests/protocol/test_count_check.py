"""Counts a second party checks (issue 37), against the real services on loopback.

A curator that lies about its counts (a plan whose published counts put every user on one value,
pair queries whose counts hide a rare age) passed every check devices and the shuffler run, since
those checks recompute the bound from the counts the curator itself publishes. With
``count_check`` the analyst recounts those counts from the round-1 copies sealed to it and
co-signs them; devices and the shuffler require its signature. The lying documents below are the
curator's own algorithm run on false counts, so they pass :func:`verify_plan` / :func:`verify_pairs`
(asserted): only the recount stops them, and 0 round-2 or pair rows are sent.
"""

from __future__ import annotations

import json
import sqlite3
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import pytest

from sdckit.protocol import (
    CollectionSpec,
    PlanRefusedError,
    choose_pairs,
    decide_plan,
    encode_value,
    pack_batch,
    verify_pairs,
    verify_plan,
)
from sdckit.protocol._client import Client, credential_header
from sdckit.protocol._recount import countersign, recount_problems, verify_countersigned
from sdckit.protocol._signing import sign_document
from sdckit.protocol.services._launch import LocalDeployment

from .conftest import FEATURES
from .conftest import wait_until as _wait

pytestmark = pytest.mark.services

N_USERS = 100


@pytest.fixture(scope="module")
def dep(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalDeployment]:
    d = LocalDeployment(
        tmp_path_factory.mktemp("count-check"), batch_threshold=10_000, min_batch=5, poll_seconds=0.05
    )
    with d:
        yield d


def _admin(dep: LocalDeployment, method: str, role: str, path: str, **kw: Any) -> httpx.Response:
    with dep.admin() as admin:
        return admin.request(method, f"{dep.urls[role]}{path}", **kw)


def _stats(dep: LocalDeployment, cid: str, round_: int) -> dict[str, int]:
    r = _admin(dep, "GET", "shuffler", f"/admin/v1/collections/{cid}/rounds/{round_}")
    r.raise_for_status()
    return dict(r.json())


def _round1(
    dep: LocalDeployment, cid: str, rows: list[dict[str, Any]]
) -> tuple[CollectionSpec, list[Client]]:
    spec = CollectionSpec(id=cid, features=FEATURES, min_k=5, max_budget=0.1, count_check=True)
    dep.create(spec, enrolment="tokens")
    clients = [dep.client(cid, invite=i) for i in dep.invites(cid, len(rows))]

    def join(c: Client, row: dict[str, Any]) -> None:
        c.enrol()
        ack = c.send_round1(row)
        assert ack["accepted"] == 2 * len(FEATURES)  # one copy for the curator, one for the analyst

    with ThreadPoolExecutor(8) as pool:
        list(pool.map(join, clients, rows))
    _admin(dep, "POST", "shuffler", f"/admin/v1/collections/{cid}/rounds/1/flush").raise_for_status()

    def counted() -> bool:
        r = _admin(dep, "GET", "curator", f"/admin/v1/collections/{cid}/tally")
        return bool(r.json()["accepted"] == len(rows) * len(FEATURES))

    _wait(counted)
    return clients[0].spec(), clients


def _curator_db(dep: LocalDeployment, sql: str, args: tuple[Any, ...]) -> None:
    """The curator's operator writing to its own store: what its service would not publish."""
    con = sqlite3.connect(dep.workdir / "curator" / "data" / "curator.sqlite3", timeout=30)
    with con:
        con.execute(sql, args)
    con.close()


def _counts(rows: list[dict[str, Any]]) -> dict[str, Counter[str]]:
    return {f: Counter(encode_value(r[f]) for r in rows) for f in FEATURES}


def test_a_lying_plan_is_refused_and_no_row_is_sent(
    dep: LocalDeployment, adult_rows: list[dict[str, Any]]
) -> None:
    cid = "lying-plan"
    rows = adult_rows[:N_USERS]
    spec, clients = _round1(dep, cid, rows)
    true = _counts(rows)
    groups = Counter(tuple(encode_value(r[f]) for f in FEATURES) for r in rows)
    assert sum(n for n in groups.values() if n < 5) / len(rows) > 0.5  # the 4 columns expose most users
    # the lie: every user on one value per column (the curator's own planner, on false counts)
    false_counts = {f: {true[f].most_common(1)[0][0]: len(rows)} for f in FEATURES}
    lying = decide_plan(false_counts, collection=cid, k=5, budget=0.1)
    assert list(lying.columns) == list(FEATURES)
    verify_plan(lying, spec)  # the checks on the published counts alone accept it
    _curator_db(dep, "UPDATE collections SET plan = ? WHERE id = ?", (json.dumps(lying.to_dict()), cid))

    r = httpx.get(f"{dep.urls['shuffler']}/v1/collections/{cid}/plan", timeout=60)
    assert r.status_code == 409, r.text
    assert "recount" in r.text, r.text
    assert "'age'" in r.text, r.text
    with pytest.raises(PlanRefusedError, match="recount"):
        clients[0].plan()
    # a device that seals a row for the lying plan anyway: refused before its credential is spent
    msgs = [clients[1].user().round2(rows[1], lying)]
    r = httpx.post(
        f"{dep.urls['shuffler']}/v1/collections/{cid}/rounds/2/messages",
        content=pack_batch(msgs),
        headers=credential_header([clients[1].credentials[2]]),
        timeout=60,
    )
    assert r.status_code == 409, r.text
    assert _stats(dep, cid, 2)["users"] == 0  # 0 round-2 rows sent
    # the curator re-decides honestly: the analyst co-signs, the devices send (the check is live)
    _curator_db(dep, "UPDATE collections SET plan = NULL WHERE id = ?", (cid,))
    honest = _admin(dep, "POST", "curator", f"/admin/v1/collections/{cid}/plan", json={"k": 5, "budget": 0.1})
    assert honest.status_code == 200, honest.text
    # the shuffler caches the curator's answer for 1 s: the lying plan, refused and never pinned
    _wait(
        lambda: httpx.get(f"{dep.urls['shuffler']}/v1/collections/{cid}/plan", timeout=60).status_code == 200
    )
    signed = httpx.get(f"{dep.urls['shuffler']}/v1/collections/{cid}/plan", timeout=60)
    assert signed.status_code == 200, signed.text
    assert signed.json()["check"]["signer"] == "analyst"
    plan = clients[2].plan()
    assert plan is not None
    assert plan.columns
    for c, row in zip(clients[2:7], rows[2:7], strict=True):
        assert c.send_round2(row, plan=plan)["accepted"] == 1
    for c in clients:
        c.close()


@pytest.mark.slow
def test_lying_pair_queries_are_refused_and_no_pair_row_is_sent(
    dep: LocalDeployment, adult_rows: list[dict[str, Any]]
) -> None:
    cid = "lying-pairs"
    rows = adult_rows[:200]  # the lie needs 200 users to fit a query in the budget
    spec, clients = _round1(dep, cid, rows)
    true = _counts(rows)
    # the lie: age takes two values, the most common and a rare one held by 1 user, claimed k times
    top = true["age"].most_common(1)[0][0]
    rare = min(true["age"], key=lambda v: (true["age"][v], v))
    assert true["age"][rare] == 1
    false_counts = {**true, "age": Counter({top: len(rows) - 5, rare: 5})}
    lying = choose_pairs(false_counts, collection=cid, k=5, budget=0.1)
    assert any("age" in q.columns for q in lying.queries)
    verify_pairs(lying, spec)  # accepted on its own published counts
    _curator_db(
        dep, "INSERT INTO pair_queries (collection, doc) VALUES (?, ?)", (cid, json.dumps(lying.to_dict()))
    )
    r = httpx.get(f"{dep.urls['shuffler']}/v1/collections/{cid}/pairs", timeout=60)
    assert r.status_code == 409, r.text
    assert "recount" in r.text, r.text
    assert "'age'" in r.text, r.text
    with pytest.raises(PlanRefusedError, match="recount"):
        clients[0].pairs()
    holder = next(i for i, row in enumerate(rows) if encode_value(row["age"]) == rare)
    msgs = clients[holder].user().pairs(rows[holder], lying)
    r = httpx.post(
        f"{dep.urls['shuffler']}/v1/collections/{cid}/rounds/3/messages",
        content=pack_batch(msgs),
        headers=credential_header([clients[holder].credentials[3]]),
        timeout=60,
    )
    assert r.status_code == 409, r.text
    assert _stats(dep, cid, 3)["users"] == 0  # 0 pair rows sent
    tables = _admin(dep, "GET", "curator", f"/admin/v1/collections/{cid}/pairs/tables").json()
    assert tables["tables"] == []
    for c in clients:
        c.close()


def test_the_co_signature_binds_one_document() -> None:
    """Pure checks: a co-signature of one plan does not cover another, nor another signer's."""
    from cryptography.hazmat.primitives.asymmetric import ed25519

    analyst, other = ed25519.Ed25519PrivateKey.generate(), ed25519.Ed25519PrivateKey.generate()
    own = {"age": {"30": 7, "79": 1, "40": 6}}
    doc = {"collection": "c", "evidence": {"age": {"30": 7, "40": 6, '{"redacted":true}': 1}}}
    assert recount_problems("pairs", doc, own) == []
    lie = {"collection": "c", "evidence": {"age": {"30": 9, "79": 5}}}
    problems = recount_problems("pairs", lie, own)
    assert any("'79'" in p for p in problems)
    assert any("'30'" in p for p in problems)
    blocks = {
        "collection": "c",
        "evidence": {
            "n": 14,
            "counts": doc["evidence"],
            "blocks": [{"columns": ["age", "sex"], "cells": []}],
        },
    }
    assert any("pair tables" in p for p in recount_problems("plan", blocks, own))
    check = countersign(analyst, "pairs", "c", doc)
    verify_countersigned(check, analyst.public_key(), "pairs", "c", doc)
    for key, kind, target in (
        (other.public_key(), "pairs", doc),
        (analyst.public_key(), "plan", doc),
        (analyst.public_key(), "pairs", lie),
    ):
        with pytest.raises(PlanRefusedError):
            verify_countersigned(check, key, kind, "c", target)
    with pytest.raises(PlanRefusedError, match="no co-signature"):
        verify_countersigned(None, analyst.public_key(), "pairs", "c", doc)
    # the curator's signature alone is not the analyst's
    forged = sign_document(other, "check", "analyst", {"of": "pairs", "collection": "c", "sha256": "0" * 64})
    with pytest.raises(PlanRefusedError):
        verify_countersigned(forged, analyst.public_key(), "pairs", "c", doc)


VECTORS = json.loads((Path(__file__).parent / "vectors" / "count-check-v1.json").read_text())
PROTOCOL = json.loads((Path(__file__).parent / "vectors" / "protocol-v1.json").read_text())


def _vector_client(case: dict[str, Any]) -> Client:
    """A device whose shuffler relays the case's spec and its plan or pair queries (with the
    case's co-signature, if any); the same cases run in the TypeScript SDK (countcheck.test.mjs)."""
    enrolment = next(d["signed"] for d in PROTOCOL["documents"] if d["signed"]["kind"] == "enrolment")
    relayed = {**case["signed"], **({"check": case["check"]} if case["check"] is not None else {})}

    def handler(request: httpx.Request) -> httpx.Response:
        if request.url.path == "/v1/collections/vectors":
            return httpx.Response(200, json={"spec": case["spec"], "enrolment": enrolment})
        if request.url.path == f"/v1/collections/vectors/{case['kind']}":
            return httpx.Response(200, json=relayed)
        return httpx.Response(404, json={"detail": "not found"})

    client = Client(
        shuffler_url="http://shuffler.test",
        collection="vectors",
        curator_verify_key=PROTOCOL["keys"]["curator"]["verify_key"],
        analyst_verify_key=PROTOCOL["keys"]["analyst"]["verify_key"],
        retry_window=0.0,
    )
    client._http = httpx.Client(transport=httpx.MockTransport(handler))
    return client


@pytest.mark.parametrize("case", VECTORS["cases"], ids=[c["name"] for c in VECTORS["cases"]])
def test_count_check_vectors(case: dict[str, Any]) -> None:
    client = _vector_client(case)
    fetch = client.plan if case["kind"] == "plan" else client.pairs
    if case.get("accept"):
        assert fetch() is not None
    else:
        with pytest.raises(PlanRefusedError, match=case["refusal"]):
            fetch()
    client.close()


def test_a_device_can_require_the_count_check() -> None:
    plain = next(c for c in VECTORS["cases"] if c.get("accept") and "count_check" in c["name"])
    client = _vector_client(plain)
    client.require_count_check = True
    with pytest.raises(PlanRefusedError, match="count_check"):
        client.plan() if plain["kind"] == "plan" else client.pairs()
    client.close()
