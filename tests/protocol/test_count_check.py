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
    PublishedPlan,
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


@pytest.mark.slow
def test_a_plan_on_pair_tables_is_recounted_and_a_lying_table_is_refused(
    dep: LocalDeployment, adult_rows: list[dict[str, Any]]
) -> None:
    """The pair round is sealed to the analyst too: a plan resting on pair tables is co-signed
    when its tables are the ones devices sent, and refused (0 round-2 rows) when one user is moved
    between two cells of a table, which its own published counts accept (the bound drops)."""
    cid = "pair-plan"
    rows = adult_rows[:300]
    _, clients = _round1(dep, cid, rows)
    r = _admin(dep, "POST", "curator", f"/admin/v1/collections/{cid}/pairs", json={"k": 5, "budget": 0.1})
    assert r.status_code == 200, r.text
    queries = clients[0].pairs()  # co-signed: the analyst now counts the pair round's copies
    assert queries is not None
    assert queries.queries
    # the analyst co-signs one set of pair queries per collection: another (here with one query
    # fewer, its counts true) is refused, so its pair tables count one set of queries only
    other = {**queries.to_dict(), "queries": queries.to_dict()["queries"][:-1] or [{"columns": ["age", "sex"]}]}
    r = httpx.post(
        f"{dep.urls['analyst']}/internal/v1/collections/{cid}/check",
        json={"kind": "pairs", "signed": {"kind": "pairs", "document": other}},
        headers={"authorization": f"Bearer {dep.relay_token}"},
        timeout=60,
    )
    assert r.status_code == 409, r.text
    assert "co-signed other pair queries" in r.text
    with ThreadPoolExecutor(8) as pool:
        acks = list(pool.map(lambda cr: cr[0].send_pairs(cr[1]), zip(clients, rows, strict=True)))
    assert {a["accepted"] for a in acks} == {2 * len(queries.queries)}  # curator's and analyst's
    _admin(dep, "POST", "shuffler", f"/admin/v1/collections/{cid}/rounds/3/flush").raise_for_status()

    def counted() -> bool:
        got = _admin(dep, "GET", "curator", f"/admin/v1/collections/{cid}/pairs/tables").json()["tables"]
        return len(got) == len(queries.queries) and all(
            sum(c[-1] for c in t["cells"]) == len(rows) for t in got
        )

    _wait(counted)
    honest = _admin(dep, "POST", "curator", f"/admin/v1/collections/{cid}/plan", json={"k": 5, "budget": 0.1})
    assert honest.status_code == 200, honest.text
    plan = honest.json()
    assert plan["rounds"] == ["singles", "pairs", "release"]
    blocks = plan["evidence"]["blocks"]
    assert blocks  # the plan rests on at least one pair table
    # the lie: two users swap a value in one table ((a, x), (b, y) -> (a, y), (b, x)), so every
    # single count stays true and only the table differs; the first swap its own counts back
    lying = _swapped_cells(plan, clients[0].spec())
    assert lying is not None
    _curator_db(dep, "UPDATE collections SET plan = ? WHERE id = ?", (json.dumps(lying), cid))
    r = httpx.get(f"{dep.urls['shuffler']}/v1/collections/{cid}/plan", timeout=60)
    assert r.status_code == 409, r.text
    assert "pair table" in r.text, r.text
    with pytest.raises(PlanRefusedError, match="recount"):
        clients[0].plan()
    assert _stats(dep, cid, 2)["users"] == 0
    # the honest plan, on the same tables: co-signed, pinned and sent
    _curator_db(dep, "UPDATE collections SET plan = ? WHERE id = ?", (json.dumps(honest.json()), cid))
    _wait(
        lambda: httpx.get(f"{dep.urls['shuffler']}/v1/collections/{cid}/plan", timeout=60).status_code == 200
    )
    signed = httpx.get(f"{dep.urls['shuffler']}/v1/collections/{cid}/plan", timeout=60).json()
    assert signed["check"]["signer"] == "analyst"
    assert signed["document"]["evidence"]["blocks"] == honest.json()["evidence"]["blocks"]
    got = clients[1].plan()
    assert got is not None
    assert clients[1].send_round2(rows[1], plan=got)["accepted"] == 1
    for c in clients:
        c.close()


def _swapped_cells(plan: dict[str, Any], spec: CollectionSpec) -> dict[str, Any] | None:
    """``plan`` with two users' values swapped in its first pair table (the margins kept), such
    that :func:`verify_plan` still accepts it; None if no swap does."""
    cells = {tuple(c[:-1]): c[-1] for c in plan["evidence"]["blocks"][0]["cells"]}
    held = sorted((n, key) for key, n in cells.items() if n > 0)
    for _, (a, x) in held:
        for _, (b, y) in reversed(held):
            if a == b or x == y:
                continue
            swapped = dict(cells)
            for key, step in (((a, x), -1), ((b, y), -1), ((a, y), 1), ((b, x), 1)):
                swapped[key] = swapped.get(key, 0) + step
            doc = json.loads(json.dumps(plan))
            doc["evidence"]["blocks"][0]["cells"] = sorted([*key, n] for key, n in swapped.items() if n > 0)
            try:
                verify_plan(PublishedPlan.from_dict(doc), spec)
            except PlanRefusedError:
                continue
            return doc
    return None


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
    assert any("received no pair-round message" in p for p in recount_problems("plan", blocks, own))
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


def test_the_recount_of_pair_tables_counts_cell_by_cell() -> None:
    """A plan's published pair tables against the analyst's own, by hand: equal (in either column
    order, and through a recoding) passes; one user moved between two cells does not."""
    r = '{"redacted":true}'
    own_single = {"age": {"30": 6, "79": 1, "40": 5}, "sex": {"M": 7, "F": 5}}
    own_pairs = {("sex", "age"): {("M", "30"): 4, ("F", "30"): 2, ("M", r): 1, ("M", "40"): 2, ("F", "40"): 3}}
    cells = [["30", "F", 2], ["30", "M", 4], ["40", "F", 3], ["40", "M", 2], [r, "M", 1]]
    plan = {
        "collection": "c",
        "evidence": {
            "n": 12,
            "counts": {"age": {"30": 6, "40": 5, r: 1}, "sex": {"F": 5, "M": 7}},
            "blocks": [{"columns": ["age", "sex"], "cells": cells}],
        },
    }
    assert recount_problems("plan", plan, own_single, own_pairs) == []
    moved = [["30", "F", 1], ["30", "M", 5], *cells[2:]]  # one user moved: the totals still agree
    lie = {**plan, "evidence": {**plan["evidence"], "blocks": [{"columns": ["age", "sex"], "cells": moved}]}}
    problems = recount_problems("plan", lie, own_single, own_pairs)
    assert len(problems) == 1
    assert "pair table ['age', 'sex']" in problems[0]
    assert "['30', 'F']" in problems[0]
    # declared moved messages (misnamed, already charged in the bound) are tolerated, as for singles
    assert recount_problems("plan", {**lie, "evidence": {**lie["evidence"], "moved": 1}}, own_single, own_pairs) == []
    # through a recoding of age: 30 and 40 -> "30-49", the unlisted value to the marker
    recoded = {
        "collection": "c",
        "recodings": {"age": {"30": "30-49", "40": "30-49"}},
        "evidence": {
            "n": 12,
            "counts": {"age": {"30-49": 11, r: 1}, "sex": {"F": 5, "M": 7}},
            "blocks": [{"columns": ["age", "sex"], "cells": [["30-49", "F", 5], ["30-49", "M", 6], [r, "M", 1]]}],
        },
    }
    assert recount_problems("plan", recoded, own_single, own_pairs) == []
    recoded["evidence"]["blocks"][0]["cells"][0][-1] = 4  # type: ignore[index]
    assert any("pair table" in p for p in recount_problems("plan", recoded, own_single, own_pairs))


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
        require_count_check=False,  # the cases check the co-signature; the default refusal below
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


def test_a_device_refuses_a_spec_without_the_count_check_by_default() -> None:
    plain = next(c for c in VECTORS["cases"] if c.get("accept") and "count_check" in c["name"])
    assert "count_check" not in plain["spec"]["document"]
    client = _vector_client(plain)
    client.require_count_check = Client.__init__.__kwdefaults__["require_count_check"]
    assert client.require_count_check is True
    with pytest.raises(PlanRefusedError, match="count_check"):
        client.plan() if plain["kind"] == "plan" else client.pairs()
    client.close()
    opted_out = _vector_client(plain)  # require_count_check=False: takes part, no co-signature
    assert (opted_out.plan() if plain["kind"] == "plan" else opted_out.pairs()) is not None
    opted_out.close()


def test_a_new_spec_has_the_count_check_and_an_old_signed_one_reads_without_it() -> None:
    assert CollectionSpec(id="c", features=("a",)).count_check is True
    assert CollectionSpec.from_request({"id": "c", "features": ["a"]}).count_check is True
    old = PROTOCOL["documents"]
    signed = next(d["signed"]["document"] for d in old if d["signed"]["kind"] == "spec")
    assert "count_check" not in signed
    assert CollectionSpec.from_dict(signed).count_check is False
    assert CollectionSpec.from_dict(signed).to_dict() == signed  # the signed text unchanged
    on = CollectionSpec(id="c", features=("a",))
    assert CollectionSpec.from_dict(on.to_dict()) == on
