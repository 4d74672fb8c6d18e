"""Issue 27's done-when test: PostgreSQL, 3 shuffler replicas (real processes), the curator and
the analyst; enrolled users through a client-side round-robin balancer (a failed request goes to
the next replica) while 10 random replicas are SIGKILLed and restarted.

Checked against the users' own rows (computed here, not by the services): 0 acknowledged messages
lost or counted twice (the curator's counts and the analyst's release equal the users' rows), no
invite or credential used twice (the shared store's rows, and a double spend tried at every
replica), every forwarded batch of at least ``min_batch`` users (seen by a proxy in front of the
curator and the analyst).

``SDCKIT_REPLICA_USERS`` sets the users: 3,000 by default (about a minute on a shared 2-core
machine); ``.ci/run`` sets the issue's 20,000 (figures in docs/protocol.md).
"""

from __future__ import annotations

import json
import os
from collections import Counter
from pathlib import Path
from typing import Any

import httpx
import polars as pl
import pytest

from sdckit.protocol import decode_value, encode_value, pack_batch
from sdckit.protocol._client import credential_header
from sdckit.protocol.services._common import BATCH_MEDIA
from sdckit.protocol.services._fleet import run_fleet

pytestmark = [pytest.mark.services, pytest.mark.slow]

FEATURES = ("age", "sex", "race", "marital-status")
MIN_BATCH = 100


def test_three_replicas_ten_sigkills_lose_nothing_and_count_nothing_twice(
    tmp_path: Path, postgres_url: str, adult: pl.DataFrame
) -> None:
    import psycopg

    n = int(os.environ.get("SDCKIT_REPLICA_USERS", "3000"))
    rows: list[dict[str, Any]] = list(adult.head(n).select(FEATURES).rows(named=True))
    run = run_fleet(
        tmp_path,
        rows,
        FEATURES,
        store=postgres_url,
        replicas=3,
        kills=10,
        kill_every=max(2.0, n / 1500),  # the kills spread over the run, whatever its size
        min_batch=MIN_BATCH,
        seed=27,
    )
    print(f"replica fleet: {n} users, {run.retries} retries, seconds {run.seconds}, cpu {run.cpu}")
    assert run.kills == 10
    assert run.retries > 0  # the kills were felt: some requests went to the next replica

    # 0 acknowledged messages lost or counted twice: the curator's counts are the users' own
    expected = {f: Counter(encode_value(r[f]) for r in rows) for f in FEATURES}
    assert {f: Counter(c) for f, c in run.marginals.items()} == expected
    assert run.curator_tally["accepted"] == n * len(FEATURES)
    assert run.analyst_tally["accepted"] == n
    # ... and the release equals the users' rows on the planned columns
    assert run.plan is not None
    assert run.plan.columns
    released = Counter(tuple(decode_value(json.dumps(v)) for v in row) for row in run.release)
    assert released == Counter(tuple(r[c] for c in run.plan.columns) for r in rows)

    # every forwarded batch holds at least min_batch users' messages
    per_user = {1: len(FEATURES), 2: 1}
    assert run.batches
    assert all(m >= MIN_BATCH * per_user[r] for r, m in run.batches), run.batches
    assert {r for r, _ in run.batches} == {1, 2}
    # the replicas forwarded their own batches (no stickiness: users reached several of them)
    forwarded = [s["1"]["forwarded"] for s in run.replica_stats.values()]
    assert sum(f > 0 for f in forwarded) >= 2, run.replica_stats
    assert sum(forwarded) >= n * len(FEATURES)

    # no invite or credential used twice: one spent row per user and round, one use per invite
    with psycopg.connect(postgres_url) as con:
        (used, distinct) = con.execute(
            "SELECT COUNT(*), COUNT(DISTINCT used) FROM shuffler_invites WHERE used IS NOT NULL"
        ).fetchone() or (0, 0)
        spent = dict(con.execute("SELECT round, COUNT(*) FROM shuffler_spent GROUP BY round").fetchall())
        unpooled = con.execute("SELECT COUNT(*) FROM shuffler_spent WHERE NOT pooled").fetchone()
    assert used == n
    assert distinct <= used
    assert spent == {1: n, 2: n}
    assert unpooled == (0,)


def test_a_spent_credential_or_used_invite_is_refused_at_every_replica(
    tmp_path: Path, postgres_url: str
) -> None:
    """The double spends the fleet test cannot provoke by itself, tried at each of 3 replicas."""
    from sdckit.protocol import CollectionSpec
    from sdckit.protocol._enrol import ENROL_ROUNDS, Enrolment
    from sdckit.protocol.services._launch import LocalDeployment

    spec = CollectionSpec(id="twice", features=("f",), round1_pad=64, round2_pad=128)
    with LocalDeployment(tmp_path, replicas=3, store=postgres_url, batch_threshold=1000) as dep:
        dep.create(spec)
        urls = [dep.urls[s] for s in dep.shufflers]
        with dep.client(spec.id) as client:
            terms = client._collection()[1]
            user = client.user()
        (invite,) = dep.invites(spec.id, 1)  # minted at replica 0, known to all
        pending = Enrolment(spec.id, ENROL_ROUNDS[:2], users=1)
        body = {"users": [{"invite": invite, "blinded": pending.blinded[0]}]}
        r = httpx.post(f"{urls[1]}/v1/collections/{spec.id}/enrol", json=body)  # a miss at 1 finds it
        assert r.status_code == 200, r.text
        creds = pending.finish(r.json()["evaluated"], terms["issuer_keys"])[0]
        for url in urls:  # the same invite with other blinded inputs: refused everywhere
            other = Enrolment(spec.id, ENROL_ROUNDS[:2], users=1)
            r = httpx.post(
                f"{url}/v1/collections/{spec.id}/enrol",
                json={"users": [{"invite": invite, "blinded": other.blinded[0]}]},
            )
            assert r.status_code == 403, r.text
            assert "already used" in r.text
        headers = {"content-type": BATCH_MEDIA, **credential_header([creds[1]])}
        first = pack_batch(user.round1({"f": "a"}))
        r = httpx.post(
            f"{urls[2]}/v1/collections/{spec.id}/rounds/1/messages", content=first, headers=headers
        )
        assert r.status_code == 202, r.text
        for url in urls:
            # the same body again: accepted, not pooled again; another body: 409
            r = httpx.post(
                f"{url}/v1/collections/{spec.id}/rounds/1/messages", content=first, headers=headers
            )
            assert r.status_code == 202, r.text
            assert r.json()["new"] == 0
            other_body = pack_batch(user.round1({"f": "b"}))
            r = httpx.post(
                f"{url}/v1/collections/{spec.id}/rounds/1/messages", content=other_body, headers=headers
            )
            assert r.status_code == 409, r.text
        with dep.admin() as admin:
            pooled = [
                admin.get(f"{u}/admin/v1/collections/{spec.id}/rounds/1").json()["pooled"] for u in urls
            ]
        # one user's one message (and its copy for the analyst), pooled once, at the replica it reached
        assert pooled == [0, 0, 2]
