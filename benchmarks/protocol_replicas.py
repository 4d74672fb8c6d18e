"""Shuffler replicas on PostgreSQL (issue 27): users per second and shuffler CPU per user for 1, 2
and 3 replicas on this machine (a throwaway PostgreSQL cluster, real processes, enrolled users,
both rounds, 4 Adult features), and one replica on the embedded SQLite store, beside the crypto
floor: the shuffler's own cryptography per user alone (the HPKE opens of its 5 messages, the VOPRF
evaluation of its 2 enrolment inputs in a batch of 64, the 2 credential checks).

Users per second are end to end (enrolment, sealing, both rounds delivered), with the simulated
devices on the same cores as the services: on a 2-core machine more replicas cannot add cores, so
the figure to read is the CPU per user (summed over the replicas, from ``/proc``).

Run from this folder: ``../.venv/bin/python protocol_replicas.py [--users N]`` (default 3,000).
"""

from __future__ import annotations

import os
import secrets
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from _harness import emit
from sdckit.datasets import load_adult
from sdckit.protocol import CollectionSpec, PrivateKey, info_label, open_sealed, seal
from sdckit.protocol._crypto import sealed_length
from sdckit.protocol._enrol import ENROL_ROUNDS, Enrolment, Issuer
from sdckit.protocol.services._fleet import run_fleet
from sdckit.protocol.services._pgcluster import TempPostgres

FEATURES = ("age", "sex", "race", "marital-status")


def _cpu_per(fn: Callable[[], Any], n: int, repeat: int = 3) -> float:
    """Median CPU seconds (this process) of ``fn`` divided by ``n``: CPU, not wall time, so the
    floor is comparable with the replicas' CPU per user on a shared machine."""
    fn()
    runs = []
    for _ in range(repeat):
        t = time.process_time()
        fn()
        runs.append((time.process_time() - t) / n)
    return statistics.median(runs)


def crypto_floor() -> dict[str, float]:
    """CPU seconds of the shuffler's cryptography per user: 4 + 1 HPKE opens of outer messages
    (round 1 and round 2), 2 VOPRF evaluations (batched, 64 users) and 2 credential checks."""
    spec = CollectionSpec(id="bench", features=FEATURES, round1_pad=64, round2_pad=128)
    key = PrivateKey.generate()
    info = info_label("bench", 1, "shuffler")
    ct = seal(key.public_key(), os.urandom(sealed_length(spec.suite, spec.round1_pad)), info)
    n = 2000
    t_open = _cpu_per(lambda: [open_sealed(key, ct, info) for _ in range(n)], n)
    issuer = Issuer(secrets.token_bytes(32), "bench")
    users = 64
    pending = Enrolment("bench", ENROL_ROUNDS[:2], users=users)
    t_eval = _cpu_per(lambda: issuer.evaluate(pending.blinded), users)
    creds = pending.finish(issuer.evaluate(pending.blinded), issuer.public_keys)
    t_check = _cpu_per(lambda: [issuer.verify(c[r]) for c in creds for r in (1, 2)], users)
    return {"open": t_open, "evaluate": t_eval, "check": t_check, "total": 5 * t_open + t_eval + t_check}


def main() -> None:
    users = int(sys.argv[sys.argv.index("--users") + 1]) if "--users" in sys.argv else 3000
    parts = crypto_floor()
    floor = parts["total"]
    emit(
        "protocol_replicas crypto floor, CPU per user (5 HPKE opens, 2 VOPRF evaluations, 2 checks)",
        floor,
        **{f"{k}_ms": round(v * 1e3, 3) for k, v in parts.items() if k != "total"},
    )
    rows = list(load_adult().head(users).select(FEATURES).rows(named=True))
    pg = TempPostgres()
    server = pg.start()
    try:
        for replicas, store in ((1, ""), (1, "pg"), (2, "pg"), (3, "pg")):
            url = ""
            if store:  # a fresh database per run
                import psycopg

                name = f"bench_{replicas}"
                with psycopg.connect(server, autocommit=True) as con:
                    con.execute(f"CREATE DATABASE {name}")
                url = server.rsplit("/", 1)[0] + f"/{name}"
            time.sleep(0.5)
            pg_before = pg.cpu_seconds()
            with tempfile.TemporaryDirectory() as d:
                run = run_fleet(Path(d), rows, FEATURES, store=url, replicas=replicas)
            time.sleep(0.5)  # the replicas' backends exit and are reaped: their CPU is counted
            pg_cpu = (pg.cpu_seconds() - pg_before) / users
            wall = run.seconds["round1"] + run.seconds["round2"]
            cpu = run.cpu["shufflers"] / users
            label = f"{replicas} replica(s), {'PostgreSQL' if store else 'SQLite'}"
            emit(
                f"protocol_replicas {label}: {users} users, both rounds",
                wall,
                users_per_second=round(users / wall, 1),
                shuffler_cpu_ms_per_user=round(cpu * 1e3, 3),
                postgres_cpu_ms_per_user=round(pg_cpu * 1e3, 3),
                floor_ms_per_user=round(floor * 1e3, 3),
                cpu_over_floor=round((cpu + pg_cpu) / floor, 2),
                load_before=round(os.getloadavg()[0], 2),
            )
    finally:
        pg.stop()


if __name__ == "__main__":
    main()
