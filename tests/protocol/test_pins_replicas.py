"""Pins that hold across replicas (issue 37): the plan and the pair queries are pinned by
compare-and-set in the shared PostgreSQL store, the document itself stored, so two replicas
racing on two plans pin one, any replica serves it, and no round-2 row acknowledged by one replica
is rejected by the analyst (before: replica A pinned plan A, replica B plan B; 60 rows
acknowledged, 30 rejected, their credentials spent; after a re-decision the other replica refused
round 2 for ever).
"""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import httpx
import polars as pl
import pytest

from sdckit.protocol import Client, CollectionSpec
from sdckit.protocol.services._launch import LocalDeployment

from .conftest import wait_until

pytestmark = [pytest.mark.services, pytest.mark.slow]

FEATURES = ("age", "sex")


def _client(dep: LocalDeployment, replica: str, cid: str, invite: str | None) -> Client:
    return Client(
        shuffler_url=dep.urls[replica],
        collection=cid,
        curator_verify_key=dep.verify_key("curator"),
        analyst_verify_key=dep.verify_key("analyst"),
        invite=invite,
    )


def test_two_replicas_racing_the_pin_serve_one_plan_and_reject_no_acknowledged_row(
    tmp_path: Path, postgres_url: str, adult: pl.DataFrame
) -> None:
    n = 30
    rows: list[dict[str, Any]] = list(adult.head(n).select(FEATURES).rows(named=True))
    spec = CollectionSpec(id="race", features=FEATURES, max_budget=0.5)
    with LocalDeployment(tmp_path, replicas=2, store=postgres_url, batch_threshold=1, poll_seconds=0.05) as dep:
        dep.create(spec, enrolment="open")
        spec = spec.with_key("analyst", dep.public_key("analyst")).with_key("shuffler", dep.public_key("shuffler"))
        a, b = dep.shufflers
        clients = [_client(dep, (a, b)[i % 2], spec.id, None) for i in range(n)]
        for c, row in zip(clients, rows, strict=True):
            c.send_round1(row)
        with dep.admin() as admin:
            for s in (a, b):
                admin.post(f"{dep.urls[s]}/admin/v1/collections/{spec.id}/rounds/1/flush").raise_for_status()
            cu = dep.urls["curator"]
            try:
                wait_until(
                    lambda: admin.get(f"{cu}/admin/v1/collections/{spec.id}/tally").json()["accepted"] == n * 2
                )
            except AssertionError:
                stats = [admin.get(f"{dep.urls[s]}/admin/v1/collections/{spec.id}/rounds/1").json() for s in (a, b)]
                raise AssertionError(
                    f"{admin.get(f'{cu}/admin/v1/collections/{spec.id}/tally').json()} {stats}"
                ) from None
            plan_a = admin.post(f"{cu}/admin/v1/collections/{spec.id}/plan", json={"k": 2, "budget": 0.5})
            plan_a.raise_for_status()

            # the race: one replica fetches the plan at the instant the curator re-decides
            got: dict[str, Any] = {}
            barrier = threading.Barrier(2)

            def fetch() -> None:
                barrier.wait()
                got[a] = httpx.get(f"{dep.urls[a]}/v1/collections/{spec.id}/plan", timeout=30)

            def redecide() -> None:
                barrier.wait()
                admin.post(f"{cu}/admin/v1/collections/{spec.id}/plan", json={"k": 3, "budget": 0.5})

            threads = [threading.Thread(target=fetch), threading.Thread(target=redecide)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            assert got[a].status_code == 200, got[a].text
            pinned = got[a].json()
            # then the curator decides again (its current plan is not the pinned one) and the other
            # replica is asked for the first time: it serves the pinned plan from the store (before:
            # it held only a hash and answered 409 for ever)
            admin.post(f"{cu}/admin/v1/collections/{spec.id}/plan", json={"k": 4, "budget": 0.5})
            for s in (b, a):
                r = httpx.get(f"{dep.urls[s]}/v1/collections/{spec.id}/plan", timeout=30)
                assert r.status_code == 200, r.text
                assert r.json() == pinned  # one plan
            admin.put(
                f"{dep.urls['analyst']}/admin/v1/collections/{spec.id}",
                json={"spec": spec.to_dict(), "plan": pinned["document"]},
            ).raise_for_status()

            acknowledged = 0
            for c, row in zip(clients, rows, strict=True):
                plan = c.plan()  # from the replica this device talks to
                assert plan is not None
                assert plan.to_dict() == pinned["document"]
                acknowledged += c.send_round2(row, plan=plan)["accepted"]
            for s in (a, b):
                admin.post(f"{dep.urls[s]}/admin/v1/collections/{spec.id}/rounds/2/flush").raise_for_status()
            an = dep.urls["analyst"]
            wait_until(
                lambda: sum(admin.get(f"{an}/admin/v1/collections/{spec.id}/tally").json().values()) >= n
            )
            time.sleep(0.3)
            tally = admin.get(f"{an}/admin/v1/collections/{spec.id}/tally").json()
        for c in clients:
            c.close()
    assert acknowledged == n
    assert tally["accepted"] == n
    assert tally["rejected"] == 0  # 0 rows rejected after acknowledgement


def test_the_same_body_sent_to_two_replicas_at_once_is_pooled_once(tmp_path: Path, postgres_url: str) -> None:
    """Issue 37: a device's body sent to two replicas at the same instant was pooled by both (the
    curator dropped the duplicates). Now the replica that did not spend it answers 503 while the
    other pools it, and the retry finds it pooled: each body is pooled once, at one replica."""
    from sdckit.protocol import pack_batch
    from sdckit.protocol._client import credential_header
    from sdckit.protocol._enrol import ENROL_ROUNDS, Enrolment

    users = 16
    spec = CollectionSpec(id="twice-at-once", features=("f",), round1_pad=64, round2_pad=128)
    with LocalDeployment(tmp_path, replicas=2, store=postgres_url, batch_threshold=1000) as dep:
        dep.create(spec)
        a, b = (dep.urls[s] for s in dep.shufflers)
        with dep.client(spec.id) as device:
            terms = device._collection()[1]
            user = device.user()
        invites = dep.invites(spec.id, users)
        pending = Enrolment(spec.id, ENROL_ROUNDS[:1], users=users)
        r = httpx.post(
            f"{a}/v1/collections/{spec.id}/enrol",
            json={"users": [{"invite": i, "blinded": bl} for i, bl in zip(invites, pending.blinded, strict=True)]},
            timeout=60,
        )
        assert r.status_code == 200, r.text
        creds = pending.finish(r.json()["evaluated"], terms["issuer_keys"])
        path = f"/v1/collections/{spec.id}/rounds/1/messages"
        answers: list[int] = []
        with httpx.Client(timeout=30) as http:
            for i in range(users):
                body = pack_batch(user.round1({"f": f"v{i}"}))
                head = {"content-type": "application/octet-stream", **credential_header([creds[i][1]])}
                barrier = threading.Barrier(2)
                got: list[httpx.Response] = []

                def send(
                    url: str,
                    body: bytes = body,
                    head: dict[str, str] = head,
                    barrier: threading.Barrier = barrier,
                    got: list[httpx.Response] = got,
                ) -> None:
                    barrier.wait()
                    got.append(http.post(url + path, content=body, headers=head))

                ts = [threading.Thread(target=send, args=(u,)) for u in (a, b)]
                for t in ts:
                    t.start()
                for t in ts:
                    t.join()
                answers += [g.status_code for g in got]
                for g in got:
                    if g.status_code == 503:  # the retry, as a device would
                        time.sleep(float(g.headers.get("retry-after", "1")))
                        again = http.post(a + path, content=body, headers=head)
                        assert again.status_code == 202, again.text
                        assert again.json()["new"] == 0
                    else:
                        assert g.status_code == 202, g.text
        with dep.admin() as admin:
            pooled = [admin.get(f"{u}/admin/v1/collections/{spec.id}/rounds/1").json()["pooled"] for u in (a, b)]
    # each body (a message for the curator, its copy for the analyst) pooled once
    assert sum(pooled) == 2 * users, (pooled, answers)
