"""A shuffler replica that loses PostgreSQL (issue 37: stopped for 91 s it gave 500s, resets and
hangs while ``/healthz`` said 200): now ``/healthz`` answers 503 saying why, a submission gets 503
with ``Retry-After`` within seconds, and once the server is back the same device's retried
submission is accepted and counted once."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import httpx
import pytest

from sdckit.protocol import CollectionSpec, pack_batch
from sdckit.protocol.services._launch import LocalDeployment

pytestmark = [pytest.mark.services, pytest.mark.slow]


def test_a_replica_that_loses_postgresql_answers_503_with_retry_after(tmp_path: Path) -> None:
    pytest.importorskip("psycopg", reason="psycopg is not installed (pip install sdckit[protocol])")
    from sdckit.protocol.services._pgcluster import TempPostgres, find_initdb

    if find_initdb() is None:
        pytest.skip("no PostgreSQL server binaries (Debian: apt-get install postgresql)")
    pg = TempPostgres()
    with pg as url, LocalDeployment(tmp_path, replicas=1, store=url, batch_threshold=1000) as dep:
        spec = CollectionSpec(id="outage", features=("f",), round1_pad=64, round2_pad=128)
        dep.create(spec, enrolment="open")
        shuffler = dep.urls["shuffler"]
        assert httpx.get(f"{shuffler}/healthz").status_code == 200
        with dep.client(spec.id, retry_window=60.0) as device:
            user = device.user()
            submit = f"{shuffler}/v1/collections/{spec.id}/rounds/1/messages"
            head = {"content-type": "application/octet-stream"}
            pg.pause()
            try:
                health = httpx.get(f"{shuffler}/healthz", timeout=30)
                assert health.status_code == 503, health.text
                assert "PostgreSQL" in health.json()["detail"]
                assert health.headers["retry-after"].isdigit()
                body = pack_batch(user.round1({"f": "a"}))
                t0 = time.monotonic()
                r = httpx.post(submit, content=body, headers=head, timeout=30)
                waited = time.monotonic() - t0
                assert r.status_code == 503, r.text
                assert r.headers["retry-after"].isdigit()
                assert waited < 15, waited  # an answer, not a hang
                # the device keeps retrying (503 is retried) while the server comes back
                acks: list[dict[str, object]] = []
                sender = threading.Thread(target=lambda: acks.append(device.submit(1, [*user.round1({"f": "b"})])))
                sender.start()
                time.sleep(1.0)
            finally:
                pg.resume()
            sender.join(timeout=90)
            assert acks, "the retried submission was not acknowledged"
            assert acks[0]["accepted"] == 2  # the curator's copy and the analyst's (count_check)
            deadline = time.monotonic() + 30
            while httpx.get(f"{shuffler}/healthz").status_code != 200 and time.monotonic() < deadline:
                time.sleep(0.2)
            assert httpx.get(f"{shuffler}/healthz").status_code == 200
            with dep.admin() as admin:
                stats = admin.get(f"{shuffler}/admin/v1/collections/{spec.id}/rounds/1").json()
            assert stats["users"] == 1  # the 503-refused body was not pooled; the retried one once
