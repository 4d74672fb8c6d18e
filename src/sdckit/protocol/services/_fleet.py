"""Both rounds through several shuffler replicas on loopback, with replicas killed on the way (the
replica test and ``benchmarks/protocol_replicas.py``).

The balancer is on the client side: request i goes to replica ``i mod R``; a connection failure or
a retryable answer (429, 5xx) sends the *same* body to the next replica, so a retry after a kill
reaches another process (no stickiness). Devices are simulated as a gateway would send them:
``users_per_request`` users per enrolment and per submission, sealed and enrolled in worker
processes. Forwarded batches are observed by a recording proxy in front of the curator and the
analyst (one forwarding request is one release: ``forward_chunk`` is set above any pool).
"""

from __future__ import annotations

import asyncio
import contextlib
import multiprocessing as mp
import random
import threading
import time
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx

from sdckit.errors import ProtocolError
from sdckit.protocol._client import NODELAY, RETRY_STATUS, backoff, credential_header
from sdckit.protocol._enrol import ENROL_ROUNDS, Credential, Enrolment
from sdckit.protocol._simulate import worker_user
from sdckit.protocol._spec import CollectionSpec, PublishedPlan
from sdckit.protocol._wire import pack_batch, unpack_batch
from sdckit.protocol.parties import User
from sdckit.protocol.services._common import BATCH_MEDIA
from sdckit.protocol.services._launch import LocalDeployment

# ------------------------------------------------------------------------------ recording proxy


class RecordingProxy:
    """An HTTP proxy to one target that records the message count of every forwarded batch
    (``POST .../rounds/{r}/batch``) the target acknowledged: ``batches`` is ``[(round, messages)]``."""

    def __init__(self) -> None:
        self.target = ""
        self.batches: list[tuple[int, int]] = []
        self._lock = threading.Lock()
        self._http = httpx.Client(timeout=120.0, transport=httpx.HTTPTransport(socket_options=NODELAY))
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *_: Any) -> None:
                return None

            def _relay(self) -> None:
                body = self.rfile.read(int(self.headers.get("content-length") or 0))
                headers = {
                    k: v for k, v in self.headers.items() if k.lower() not in ("host", "content-length")
                }
                try:
                    r = proxy._http.request(
                        self.command, proxy.target + self.path, content=body, headers=headers
                    )
                except httpx.HTTPError:
                    self.send_error(502)
                    return
                if self.command == "POST" and self.path.endswith("/batch") and r.status_code // 100 == 2:
                    round_ = int(self.path.rsplit("/", 2)[-2])
                    with proxy._lock:
                        proxy.batches.append((round_, len(unpack_batch(body, max_messages=10**7))))
                self.send_response(r.status_code)
                for k in ("content-type",):
                    if k in r.headers:
                        self.send_header(k, r.headers[k])
                self.send_header("content-length", str(len(r.content)))
                self.end_headers()
                self.wfile.write(r.content)

            do_GET = do_POST = do_PUT = do_DELETE = _relay  # noqa: N815

        class Server(ThreadingHTTPServer):
            def handle_error(self, *_: Any) -> None:  # a replica killed mid-request: not news
                return None

        self._server = Server(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        self._thread = threading.Thread(target=self._server.serve_forever, name="proxy", daemon=True)
        self._thread.start()

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._http.close()


# ------------------------------------------------------------------------------- worker processes

_USER: User | None = None
_HTTP: httpx.Client | None = None


def _init(spec: dict[str, Any], keys: dict[str, str]) -> None:
    global _USER, _HTTP
    _USER = worker_user(spec, keys)
    _HTTP = httpx.Client(timeout=120.0, transport=httpx.HTTPTransport(socket_options=NODELAY))


def _round_robin_post(
    http: httpx.Client, urls: Sequence[str], start: int, path: str, deadline: float, **kw: Any
) -> tuple[httpx.Response, int]:
    """POST to ``urls[start]``, then the next replica after a connection failure or a retryable
    answer, until ``deadline``; returns the answer and the retries."""
    attempt = 0
    while True:
        url = urls[(start + attempt) % len(urls)] + path
        try:
            r = http.post(url, **kw)
            if r.status_code not in RETRY_STATUS or time.monotonic() >= deadline:
                return r, attempt
        except httpx.TransportError:
            if time.monotonic() >= deadline:
                raise ProtocolError(f"no replica answered {path} in time") from None
        time.sleep(backoff(attempt, base=0.05, cap=1.0))
        attempt += 1


def _enrol_and_seal(
    urls: list[str], start: int, invites: list[str], rows: list[dict[str, Any]], issuer_keys: dict[str, str]
) -> tuple[list[dict[int, Credential]], list[bytes], int]:
    """A gateway's enrolment of its users (one request, round-robin with retries) and their sealed
    round-1 messages; returns the credentials, the messages and the retries."""
    if _USER is None or _HTTP is None:
        raise ProtocolError("the worker was not initialised")
    pending = Enrolment(_USER.spec.id, ENROL_ROUNDS[:2], users=len(invites))
    body = {"users": [{"invite": i, "blinded": b} for i, b in zip(invites, pending.blinded, strict=True)]}
    r, retries = _round_robin_post(
        _HTTP, urls, start, f"/v1/collections/{_USER.spec.id}/enrol", time.monotonic() + 300, json=body
    )
    if r.status_code != 200:
        raise ProtocolError(f"enrolment refused: HTTP {r.status_code}: {r.text[:300]}")
    creds = pending.finish(r.json()["evaluated"], issuer_keys)
    return creds, [m for row in rows for m in _USER.round1(row)], retries


def _seal2(rows: list[dict[str, Any]], plan: dict[str, Any]) -> list[bytes]:
    assert _USER is not None, "worker not initialised"
    p = PublishedPlan.from_dict(plan)
    return [_USER.round2(row, p) for row in rows]


# ----------------------------------------------------------------------------------------- driver


@dataclass
class FleetRun:
    """What :func:`run_fleet` measured and collected (the caller checks it)."""

    users: int
    replicas: int
    kills: int = 0
    retries: int = 0
    """Requests sent again to the next replica (connection refused, reset, 5xx)."""
    seconds: dict[str, float] = field(default_factory=dict)
    cpu: dict[str, float] = field(default_factory=dict)
    """CPU seconds per service process from the first enrolment on (the replicas' summed as
    ``shufflers``; with kills, the killed processes' and the restarts' CPU included)."""
    batches: list[tuple[int, int]] = field(default_factory=list)
    """``(round, messages)`` of every forwarded batch the curator or the analyst acknowledged."""
    marginals: dict[str, dict[str, int]] = field(default_factory=dict)
    curator_tally: dict[str, int] = field(default_factory=dict)
    analyst_tally: dict[str, int] = field(default_factory=dict)
    plan: PublishedPlan | None = None
    release: list[list[Any]] = field(default_factory=list)
    replica_stats: dict[str, dict[str, dict[str, int]]] = field(default_factory=dict)
    credentials: list[dict[int, Credential]] = field(default_factory=list)
    invites: list[str] = field(default_factory=list)


class _Killer(threading.Thread):
    """SIGKILLs a random replica every ``every`` seconds and restarts it (one down at a time),
    ``total`` times; restarts are waited for, so the others keep serving."""

    def __init__(self, dep: LocalDeployment, total: int, every: float, seed: int | None) -> None:
        super().__init__(name="killer", daemon=True)
        self.dep, self.total, self.every = dep, total, every
        self.done = 0
        self.rng = random.Random(seed)
        self.error: BaseException | None = None
        self.cpu_lost = 0.0
        self.killed: list[str] = []
        self._halt = threading.Event()

    def run(self) -> None:
        try:
            while self.done < self.total and not self._halt.wait(self.every):
                name = self.rng.choice(self.dep.shufflers)
                with contextlib.suppress(OSError):
                    self.cpu_lost += self.dep.cpu_seconds(name)
                self.dep.kill(name)
                self.killed.append(name)
                self.done += 1
                self.dep.start(name)
        except BaseException as err:  # reported by the driver
            self.error = err

    def finish(self, timeout: float) -> None:
        """Let the remaining kills happen (quicker), then wait for the last restart."""
        self.every = min(self.every, 0.5)
        self.join(timeout)
        if self.error is not None:
            raise ProtocolError(f"killing or restarting a replica failed: {self.error}")
        if self.is_alive():
            raise ProtocolError("the replica killer did not finish in time")


async def _submit_all(
    urls: Sequence[str],
    collection: str,
    round_: int,
    bodies: Sequence[tuple[bytes, dict[str, str]]],
    concurrency: int,
    timeout: float,
) -> int:
    """Send every body (round-robin, retried at the next replica); each must be answered 202.
    Returns the retries."""
    retries = 0
    sem = asyncio.Semaphore(concurrency)
    limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
    transport = httpx.AsyncHTTPTransport(limits=limits, socket_options=NODELAY)
    path = f"/v1/collections/{collection}/rounds/{round_}/messages"
    deadline = time.monotonic() + timeout
    async with httpx.AsyncClient(timeout=60.0, transport=transport) as http:

        async def one(i: int, body: bytes, headers: dict[str, str]) -> None:
            nonlocal retries
            attempt = 0
            async with sem:
                while True:
                    url = urls[(i + attempt) % len(urls)] + path
                    try:
                        r = await http.post(
                            url, content=body, headers={"content-type": BATCH_MEDIA, **headers}
                        )
                        if r.status_code == 202:
                            return
                        if r.status_code not in RETRY_STATUS or time.monotonic() >= deadline:
                            raise ProtocolError(f"round {round_}: HTTP {r.status_code}: {r.text[:300]}")
                    except httpx.TransportError:
                        if time.monotonic() >= deadline:
                            raise ProtocolError(f"round {round_}: no replica answered in time") from None
                    retries += 1
                    attempt += 1
                    await asyncio.sleep(backoff(attempt, base=0.05, cap=1.0))

        await asyncio.gather(*(one(i, b, h) for i, (b, h) in enumerate(bodies)))
    return retries


def _admin_get(admin: httpx.Client, url: str) -> Any:
    r = admin.get(url)
    r.raise_for_status()
    return r.json()


def run_fleet(
    workdir: Path,
    rows: Sequence[dict[str, Any]],
    features: Sequence[str],
    *,
    store: str,
    replicas: int = 3,
    kills: int = 0,
    kill_every: float = 2.0,
    min_batch: int = 100,
    batch_threshold: int = 2000,
    users_per_request: int = 64,
    concurrency: int = 6,
    workers: int = 2,
    k: int = 5,
    budget: float = 0.05,
    round1_pad: int = 64,
    round2_pad: int = 128,
    timeout: float = 900.0,
    seed: int | None = None,
) -> FleetRun:
    """Run both rounds of ``rows`` through ``replicas`` shufflers sharing ``store`` (PostgreSQL),
    killing ``kills`` random replicas on the way (round 1, then round 2, from the first
    submission), and collect what the caller must check (see :class:`FleetRun`)."""
    cols = list(features)
    spec = CollectionSpec(
        id="fleet",
        features=tuple(cols),
        round1_pad=round1_pad,
        round2_pad=round2_pad,
        min_k=2,
        max_budget=budget,
    )
    run = FleetRun(users=len(rows), replicas=replicas)
    curator_proxy, analyst_proxy = RecordingProxy(), RecordingProxy()
    options = {
        "curator_url": curator_proxy.url,
        "analyst_url": analyst_proxy.url,
        "forward_chunk": 10**7,  # one forwarding request is one release (the proxy sees batches)
        "forward_max_bytes": 64 * 1024 * 1024,
    }
    dep = LocalDeployment(
        workdir,
        batch_threshold=batch_threshold,
        min_batch=min_batch,
        replicas=replicas,
        store=store,
        max_body_bytes=64 * 1024 * 1024,
        options=options,
    )
    t0 = time.perf_counter()
    try:
        with dep, dep.admin() as admin:
            curator_proxy.target, analyst_proxy.target = dep.urls["curator"], dep.urls["analyst"]
            urls = [dep.urls[n] for n in dep.shufflers]
            dep.create(spec)
            with dep.client(spec.id) as client:
                keys = {r: client.public_key(r).to_text() for r in ("shuffler", "curator", "analyst")}
                issuer_keys = dict(client._collection()[1]["issuer_keys"])
            invites = dep.invites(spec.id, len(rows))
            run.invites = invites
            chunks = [
                list(range(i, min(i + users_per_request, len(rows))))
                for i in range(0, len(rows), users_per_request)
            ]
            run.seconds["startup"] = time.perf_counter() - t0
            started = {name: dep.cpu_seconds(name) for name in dep.names}  # start-up is not per user
            killer = _Killer(dep, kills, kill_every, seed) if kills else None
            ctx = mp.get_context("fork" if "fork" in mp.get_all_start_methods() else "spawn")
            with ProcessPoolExecutor(
                workers, mp_context=ctx, initializer=_init, initargs=(spec.to_dict(), keys)
            ) as pool:
                t = time.perf_counter()
                if killer is not None:
                    killer.start()
                futures = [
                    pool.submit(
                        _enrol_and_seal, urls, j, [invites[i] for i in c], [rows[i] for i in c], issuer_keys
                    )
                    for j, c in enumerate(chunks)
                ]
                sealed = [f.result() for f in futures]
                run.seconds["round1_enrol_seal"] = time.perf_counter() - t
                run.retries += sum(r for _, _, r in sealed)
                run.credentials = [c for creds, _, _ in sealed for c in creds]
                bodies = [
                    (pack_batch(msgs), credential_header([c[1] for c in creds])) for creds, msgs, _ in sealed
                ]
                run.retries += asyncio.run(_submit_all(urls, spec.id, 1, bodies, concurrency, timeout))
                run.seconds["round1_submit"] = time.perf_counter() - t
                _flush_and_wait(admin, dep, urls, spec.id, 1, len(rows) * len(cols), timeout, "curator")
                run.seconds["round1"] = time.perf_counter() - t

                t = time.perf_counter()
                r = admin.post(
                    f"{dep.urls['curator']}/admin/v1/collections/{spec.id}/plan",
                    json={"k": k, "budget": budget, "n_users": len(rows)},
                )
                if r.status_code != 200:
                    raise ProtocolError(f"the curator could not plan: {r.text[:300]}")
                with dep.client(spec.id) as client:  # as devices get it: relayed by a replica, checked
                    plan = client.plan()
                if plan is None:
                    raise ProtocolError("no plan relayed")
                run.plan = plan
                admin.put(
                    f"{dep.urls['analyst']}/admin/v1/collections/{spec.id}",
                    json={"spec": spec.to_dict(), "plan": plan.to_dict()},
                ).raise_for_status()
                futures2 = [pool.submit(_seal2, [rows[i] for i in c], plan.to_dict()) for c in chunks]
                creds_of = [creds for creds, _, _ in sealed]
                bodies = [
                    (pack_batch(f.result()), credential_header([c[2] for c in creds]))
                    for f, creds in zip(futures2, creds_of, strict=True)
                ]
                run.retries += asyncio.run(_submit_all(urls, spec.id, 2, bodies, concurrency, timeout))
                run.seconds["round2_submit"] = time.perf_counter() - t
                if killer is not None:
                    killer.finish(timeout)
                    run.kills = killer.done
                restarted = set(killer.killed) if killer is not None else set()
                _flush_and_wait(admin, dep, urls, spec.id, 2, len(rows), timeout, "analyst")
                run.seconds["round2"] = time.perf_counter() - t
            run.seconds["total"] = time.perf_counter() - t0
            for name in dep.names:  # a restarted replica's start-up counts (as CPU lost to the kill)
                run.cpu[name] = dep.cpu_seconds(name) - (started[name] if name not in restarted else 0.0)
            run.cpu["shufflers"] = sum(run.cpu[n] for n in dep.shufflers) + (
                killer.cpu_lost if killer else 0.0
            )
            run.curator_tally = _admin_get(
                admin, f"{dep.urls['curator']}/admin/v1/collections/{spec.id}/tally"
            )
            run.marginals = _admin_get(
                admin, f"{dep.urls['curator']}/admin/v1/collections/{spec.id}/marginals"
            )["counts"]
            run.analyst_tally = _admin_get(
                admin, f"{dep.urls['analyst']}/admin/v1/collections/{spec.id}/tally"
            )
            run.release = _admin_get(admin, f"{dep.urls['analyst']}/admin/v1/collections/{spec.id}/release")[
                "rows"
            ]
            for name in dep.shufflers:
                run.replica_stats[name] = {
                    str(r): _admin_get(admin, f"{dep.urls[name]}/admin/v1/collections/{spec.id}/rounds/{r}")
                    for r in (1, 2)
                }
    finally:
        curator_proxy.close()
        analyst_proxy.close()
    run.batches = sorted(curator_proxy.batches + analyst_proxy.batches)
    return run


def _flush_and_wait(
    admin: httpx.Client,
    dep: LocalDeployment,
    urls: Sequence[str],
    collection: str,
    round_: int,
    expected: int,
    timeout: float,
    receiver: str,
) -> None:
    """Close the round at one replica (closed for all: shared), then wait until every replica's
    pool is empty and the receiver accepted ``expected`` messages."""
    for attempt in range(100):  # the replica asked may be the one just killed
        try:
            r = admin.post(
                f"{urls[attempt % len(urls)]}/admin/v1/collections/{collection}/rounds/{round_}/flush"
            )
            if r.status_code == 200:
                break
        except httpx.TransportError:
            time.sleep(0.2)
    else:
        raise ProtocolError(f"no replica accepted the flush of round {round_}")
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            tally = _admin_get(admin, f"{dep.urls[receiver]}/admin/v1/collections/{collection}/tally")
            pooled = sum(
                _admin_get(admin, f"{u}/admin/v1/collections/{collection}/rounds/{round_}")["pooled"]
                for u in urls
            )
        except httpx.HTTPError:
            time.sleep(0.2)
            continue
        if pooled == 0 and tally["accepted"] >= expected:
            return
        time.sleep(0.1)
    raise ProtocolError(
        f"round {round_}: the {receiver} did not get {expected} messages within {timeout:.0f} s"
    )
