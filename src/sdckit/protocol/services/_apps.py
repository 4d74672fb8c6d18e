"""The three web services (FastAPI): shuffler, curator, analyst.

Endpoints (``{c}`` a collection id, ``{r}`` the round, 1 or 2):

=======================================================  ========  ==========================
endpoint                                                 who       what
=======================================================  ========  ==========================
``GET /healthz``                                         public    liveness
``GET /v1/keys``                                         public    the role's HPKE public key
``POST /v1/collections/{c}/rounds/{r}/messages``         public    users submit (shuffler)
``GET /v1/collections/{c}``                              public    the collection spec (curator)
``GET /v1/collections/{c}/plan``                         public    the published plan (curator)
``POST /internal/v1/collections/{c}/rounds/{r}/batch``   relay     shuffler -> curator/analyst
``POST /admin/v1/collections/{c}/rounds/{r}/flush``      admin     release a round's pool (shuffler)
``GET /admin/v1/collections/{c}/rounds/{r}``             admin     counters of a round (shuffler)
``PUT /admin/v1/collections/{c}``                        admin     create a collection (curator, analyst)
``POST /admin/v1/collections/{c}/plan``                  admin     decide the plan (curator)
``GET /admin/v1/collections/{c}/marginals``              admin     counted marginals (curator)
``GET /admin/v1/collections/{c}/release``                admin     the released rows (analyst)
``GET /admin/v1/collections/{c}/tally``                  admin     accepted/duplicates/rejected
=======================================================  ========  ==========================

Message bodies are ``application/octet-stream`` batches (:func:`sdckit.protocol.pack_batch`); the
rest is JSON. Bearer tokens are compared in constant time (:func:`hmac.compare_digest`). Bodies
larger than ``max_body_bytes`` get 413. The OpenAPI spec is at ``/openapi.json``.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import os
import threading
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
from fastapi import Body, Depends, FastAPI, HTTPException, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import BaseModel, Field
from starlette.concurrency import run_in_threadpool

from sdckit import __version__
from sdckit.errors import ConfigError, InfeasibleError, MalformedMessageError, ParameterError, SdcError
from sdckit.protocol._client import NODELAY
from sdckit.protocol._crypto import PrivateKey
from sdckit.protocol._keyfile import read_private_key
from sdckit.protocol._planning import decide_plan
from sdckit.protocol._spec import CollectionSpec, PublishedPlan, check_collection_id
from sdckit.protocol._wire import pack_batch, unpack_batch
from sdckit.protocol.parties import Analyst, Curator, Shuffler, secure_permutation
from sdckit.protocol.services._config import ServiceConfig
from sdckit.protocol.services._store import AnalystStore, CuratorStore, ShufflerStore

BATCH_MEDIA = "application/octet-stream"
_ROUNDS = (1, 2)
_DETAIL_CHARS = 500
_MAX_K = 2**31 - 1
_MAX_HEAD_BYTES = 16 * 1024
"""Largest request line plus headers (bytes); a longer head gets 400 and the connection closes."""


def _logger(cfg: ServiceConfig) -> logging.Logger:
    """A file logger that records counts and states only: never a value, an address or a body."""
    log = logging.getLogger(f"sdckit.protocol.{cfg.role}.{id(cfg)}")
    log.setLevel(logging.INFO)
    log.propagate = False
    Path(cfg.data_dir).mkdir(mode=0o700, parents=True, exist_ok=True)
    path = Path(cfg.data_dir) / f"{cfg.role}.log"
    os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600))  # owner only, like the store
    os.chmod(path, 0o600)
    handler = logging.FileHandler(path)
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(message)s"))
    log.addHandler(handler)
    return log


def _bearer(expected: str, realm: str) -> Callable[[Request], None]:
    token = hashlib.sha256(expected.encode()).digest()

    def check(request: Request) -> None:
        auth = request.headers.get("authorization", "")
        scheme, _, given = auth.partition(" ")
        # compare_digest of SHA-256 digests: the time depends neither on where the tokens differ
        # nor on the expected token's length (compare_digest returns early on unequal lengths)
        given_digest = hashlib.sha256(given.strip().encode("utf-8", "surrogateescape")).digest()
        if not hmac.compare_digest(given_digest, token) or scheme.lower() != "bearer":
            raise HTTPException(
                401,
                f"missing or wrong {realm} bearer token",
                headers={"WWW-Authenticate": f'Bearer realm="{realm}"'},
            )

    return check


async def _read_body(request: Request, limit: int) -> bytes:
    """The request body, or 413 as soon as it exceeds ``limit`` bytes (checked while streaming)."""
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise HTTPException(413, f"body of {declared} bytes; the limit is {limit}")
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise HTTPException(413, f"body larger than the limit of {limit} bytes")
        chunks.append(chunk)
    return b"".join(chunks)


def _check_round(round_: int) -> int:
    if round_ not in _ROUNDS:
        raise HTTPException(404, f"round {round_} does not exist; rounds are 1 and 2")
    return round_


def _check_id(collection: str) -> str:
    try:
        return check_collection_id(collection)
    except ParameterError as err:
        raise HTTPException(422, str(err)) from None


def _base_app(cfg: ServiceConfig, key: PrivateKey, title: str, lifespan: Any = None) -> FastAPI:
    # max_body_size: every route, JSON ones included, gets 413 past the limit (declared or streamed)
    app = FastAPI(title=title, version=__version__, lifespan=lifespan, max_body_size=cfg.max_body_bytes)

    @app.exception_handler(SdcError)
    async def _sdc_error(_: Request, err: SdcError) -> JSONResponse:
        status = 400 if isinstance(err, MalformedMessageError) else 422
        if isinstance(err, InfeasibleError):
            status = 409
        return JSONResponse({"detail": str(err)[:_DETAIL_CHARS]}, status_code=status)

    @app.exception_handler(RequestValidationError)
    async def _invalid(_: Request, err: RequestValidationError) -> JSONResponse:
        """422 naming where and why, never echoing the input (FastAPI's default does, and fails
        with a 500 when the input holds a NaN it cannot render)."""
        detail = [
            {
                "loc": [str(part)[:64] for part in e.get("loc", ())][:8],
                "msg": str(e.get("msg", ""))[:200],
                "type": str(e.get("type", "")),
            }
            for e in err.errors()[:10]
        ]
        return JSONResponse({"detail": detail}, status_code=422)

    @app.get("/healthz", tags=["public"])
    def healthz() -> dict[str, str]:
        """Liveness: 200 while the service runs."""
        return {"status": "ok", "role": cfg.role}

    @app.get("/v1/keys", tags=["public"])
    def keys() -> dict[str, str]:
        """The role's HPKE public key, ``<suite>:<base64url>``."""
        return {"role": cfg.role, "suite": key.suite, "public_key": key.public_key().to_text()}

    return app


# ----------------------------------------------------------------------------------------- shuffler


class _Forwarder:
    """Background thread: releases due pools in a CSPRNG permutation to the next hop, deletes what
    was acknowledged, retries with exponential back-off (receivers deduplicate by salt)."""

    def __init__(self, cfg: ServiceConfig, store: ShufflerStore, log: logging.Logger) -> None:
        self.cfg, self.store, self.log = cfg, store, log
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="forwarder", daemon=True)
        self._backoff = 0.0
        # per (collection, round): a pool the next hop refuses (unknown collection, no plan yet)
        # backs off alone and never blocks the other pools
        self._pair_backoff: dict[tuple[str, int], float] = {}
        self._retry_at: dict[tuple[str, int], float] = {}

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=10)

    def _run(self) -> None:
        transport = httpx.HTTPTransport(socket_options=NODELAY)
        headers = {"authorization": f"Bearer {self.cfg.relay_token}"}
        with httpx.Client(timeout=60.0, headers=headers, transport=transport) as http:
            while not self._stop.is_set():
                try:
                    moved = self.forward_due(http)
                    self._backoff = 0.0
                except httpx.HTTPError as err:  # the next hop is unreachable: back off for all pools
                    self._backoff = min(5.0, max(0.1, 2 * self._backoff))
                    self.log.warning(
                        "forwarding failed (%s); retrying in %.1f s", type(err).__name__, self._backoff
                    )
                    self._stop.wait(self._backoff)
                    continue
                except Exception:  # a bug must not stop forwarding for good: log it, back off, retry
                    self.log.exception("forwarder error (the pool holds ciphertexts only); retrying in 5 s")
                    self._stop.wait(5.0)
                    continue
                if not moved:
                    self._stop.wait(self.cfg.poll_seconds)

    def forward_due(self, http: httpx.Client) -> int:
        """Forward every due pool; a pool the next hop refuses backs off alone (0.1 s doubling
        to 5 s) and is retried later. Returns the number of messages forwarded."""
        moved = 0
        now = time.monotonic()
        for pair in self.store.due(self.cfg.batch_threshold):
            if self._retry_at.get(pair, 0.0) > now:
                continue
            try:
                moved += self._forward(http, *pair)
            except _RefusedError as err:
                delay = min(5.0, max(0.1, 2 * self._pair_backoff.get(pair, 0.0)))
                self._pair_backoff[pair], self._retry_at[pair] = delay, now + delay
                self.log.warning(
                    "next hop refused round %d of %r (%d); retrying in %.1f s",
                    pair[1],
                    pair[0],
                    err.status,
                    delay,
                )
                continue
            self._pair_backoff.pop(pair, None)
            self._retry_at.pop(pair, None)
        return moved

    def _forward(self, http: httpx.Client, collection: str, round_: int) -> int:
        moved = 0
        pool = secure_permutation(self.store.take(collection, round_))
        hop = self.cfg.curator_url if round_ == 1 else self.cfg.analyst_url
        url = f"{hop.rstrip('/')}/internal/v1/collections/{collection}/rounds/{round_}/batch"
        for start in range(0, len(pool), self.cfg.forward_chunk):
            chunk = pool[start : start + self.cfg.forward_chunk]
            r = http.post(url, content=pack_batch(m for _, m in chunk), headers={"content-type": BATCH_MEDIA})
            if r.status_code // 100 != 2:
                raise _RefusedError(r.status_code)
            self.store.delete(collection, round_, [i for i, _ in chunk])  # acknowledged: drop
            moved += len(chunk)
        self.log.info("forwarded %d message(s) of round %d of %r", len(pool), round_, collection)
        return moved


def _strip_all(
    shuffler: Shuffler, outer: list[bytes], collection: str, round_: int
) -> tuple[list[bytes], str | None]:
    """Strip every message, stopping at the first that does not open (then: what went wrong)."""
    inner = []
    for i, m in enumerate(outer):
        try:
            inner.append(shuffler.strip(m, collection, round_))
        except MalformedMessageError as err:
            return inner, f"message {i} of {len(outer)}: {err}"
    return inner, None


class _RefusedError(Exception):
    def __init__(self, status: int) -> None:
        super().__init__(f"next hop answered {status}")
        self.status = status


def shuffler_app(cfg: ServiceConfig, *, start_forwarder: bool = True) -> FastAPI:
    """The shuffler service: pools stripped messages and forwards them shuffled."""
    key = read_private_key(cfg.key_file)
    store = ShufflerStore(Path(cfg.data_dir) / "shuffler.sqlite3", synchronous=cfg.sqlite_synchronous)
    log = _logger(cfg)
    shuffler = Shuffler(key, batch_threshold=cfg.batch_threshold)
    forwarder = _Forwarder(cfg, store, log)

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        log.info("shuffler started (batch threshold %d)", cfg.batch_threshold)
        if start_forwarder:
            forwarder.start()
        yield
        if start_forwarder:
            forwarder.stop()
        store.close()

    app = _base_app(cfg, key, "sdckit shuffler", lifespan)
    admin = Depends(_bearer(cfg.admin_token, "admin"))

    @app.post("/v1/collections/{collection}/rounds/{round_}/messages", status_code=202, tags=["public"])
    async def submit(collection: str, round_: int, request: Request) -> dict[str, int]:
        """Submit a batch of doubly sealed messages (all-or-nothing: one bad message rejects the
        request with 400 and nothing is stored). 202 means stored durably."""
        _check_id(collection)
        _check_round(round_)
        body = await _read_body(request, cfg.max_body_bytes)
        try:
            outer = unpack_batch(body, max_messages=cfg.max_batch_messages)
        except MalformedMessageError as err:
            store.reject(collection, round_, 1)
            raise HTTPException(400, f"not a batch of messages: {err}") from None
        # HPKE opens are CPU work: off the event loop, so a large batch does not stall other requests
        inner, error = await run_in_threadpool(_strip_all, shuffler, outer, collection, round_)
        if error is not None:
            store.reject(collection, round_, len(outer) - len(inner))
            raise HTTPException(400, error)
        new = await run_in_threadpool(store.add, collection, round_, inner)
        return {"accepted": len(inner), "new": new}

    @app.post(
        "/admin/v1/collections/{collection}/rounds/{round_}/flush", dependencies=[admin], tags=["admin"]
    )
    def flush(collection: str, round_: int) -> dict[str, int]:
        """Close a round: forward its pool even below the batch threshold."""
        store.flush(_check_id(collection), _check_round(round_))
        return store.stats(collection, round_)

    @app.get("/admin/v1/collections/{collection}/rounds/{round_}", dependencies=[admin], tags=["admin"])
    def round_stats(collection: str, round_: int) -> dict[str, int]:
        """Counters of a round: received, duplicates, rejected, forwarded, pooled, flushed."""
        return store.stats(_check_id(collection), _check_round(round_))

    app.state.store = store
    app.state.forwarder = forwarder
    return app


# ------------------------------------------------------------------------------ curator and analyst


class PlanRequest(BaseModel):
    """Parameters of the curator's decision."""

    k: int = Field(5, ge=1, le=_MAX_K, description="group size (users) of the k-anonymity target")
    budget: float = Field(
        0.05, ge=0, le=1, allow_inf_nan=False, description="share of users (0..1) allowed in groups < k"
    )
    method: str = Field("best", description="bound of sdckit.risk.plan_release")
    weights: dict[str, float] | None = Field(None, description="utility weight per feature")
    n_release: int | None = Field(
        None, ge=1, le=_MAX_K, description="users expected in round 2 (statistical setting)"
    )
    local_suppression: bool = Field(False, description="publish redaction rules for rare values")


def _receiver_app(
    cfg: ServiceConfig, key: PrivateKey, store: CuratorStore | AnalystStore, log: logging.Logger, role: str
) -> FastAPI:
    """The app of a receiving role (curator, analyst): public routes, the tally, the store closed on exit."""

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        log.info("%s started", role)
        yield
        store.close()

    app = _base_app(cfg, key, f"sdckit {role}", lifespan)
    admin = Depends(_bearer(cfg.admin_token, "admin"))

    @app.get("/admin/v1/collections/{collection}/tally", dependencies=[admin], tags=["admin"])
    def tally(collection: str) -> dict[str, int]:
        """Messages accepted, duplicated (counted once) and rejected."""
        return store.tally(_check_id(collection)).to_dict()

    return app


def _receive_route(
    app: FastAPI,
    store: CuratorStore | AnalystStore,
    cfg: ServiceConfig,
    party: Callable[[str], Curator | Analyst],
    *,
    expected_round: int,
    role: str,
) -> None:
    """The relay endpoint where the shuffler delivers the batches of ``expected_round`` to ``role``."""
    relay = Depends(_bearer(cfg.relay_token, "relay"))

    @app.post(
        "/internal/v1/collections/{collection}/rounds/{round_}/batch",
        dependencies=[relay],
        tags=["relay"],
        description=f"A shuffled batch of round-{expected_round} messages from the shuffler; idempotent (salts).",
    )
    async def receive(collection: str, round_: int, request: Request) -> dict[str, int]:
        p = party(collection)
        if round_ != expected_round:
            raise HTTPException(404, f"the {role} receives round {expected_round} only")
        body = await _read_body(request, cfg.max_body_bytes)
        batch = unpack_batch(body, max_messages=cfg.max_batch_messages)
        return await run_in_threadpool(_open_and_record, p, store, collection, batch)


def _open_and_record(
    p: Curator | Analyst, store: CuratorStore | AnalystStore, collection: str, batch: list[bytes]
) -> dict[str, int]:
    """Open each message (a malformed one is counted as rejected: the party raises
    :class:`MalformedMessageError` for anything a sender can get wrong) and record the batch."""
    opened: list[Any] = []
    rejected = 0
    for m in batch:
        try:
            opened.append(p.open(m))
        except MalformedMessageError:
            rejected += 1
    return store.record(collection, opened, rejected).to_dict()


def curator_app(cfg: ServiceConfig) -> FastAPI:
    """The curator service: counts round-1 marginals and publishes the plan."""
    key = read_private_key(cfg.key_file)
    store = CuratorStore(Path(cfg.data_dir) / "curator.sqlite3", synchronous=cfg.sqlite_synchronous)
    log = _logger(cfg)
    parties: dict[str, Curator] = {}
    for cid, (spec, _) in store.collections().items():
        parties[cid] = Curator(key, CollectionSpec.from_dict(spec))

    app = _receiver_app(cfg, key, store, log, "curator")
    admin = Depends(_bearer(cfg.admin_token, "admin"))
    creating = threading.Lock()

    def party(collection: str) -> Curator:
        c = parties.get(_check_id(collection))
        if c is None:
            raise HTTPException(
                404, f"no collection {collection!r}; create it with PUT /admin/v1/collections/{{id}}"
            )
        return c

    @app.put("/admin/v1/collections/{collection}", dependencies=[admin], tags=["admin"])
    def create(collection: str, spec: dict[str, Any] = Body(...)) -> dict[str, Any]:
        """Create a collection (idempotent for the same spec; 409 for a different one)."""
        s = CollectionSpec.from_dict({**spec, "id": _check_id(collection)})
        if s.suite != key.suite:
            raise HTTPException(422, f"the curator's key is {key.suite}; the spec asks for {s.suite}")
        with creating:  # check and create in one step: two racing PUTs cannot both pass the check
            old = parties.get(collection)
            if old is not None and old.spec != s:
                raise HTTPException(409, f"collection {collection!r} exists with another spec")
            store.put_collection(collection, s.to_dict(), None)
            parties[collection] = Curator(key, s)
        log.info("collection %r created with %d feature(s)", collection, len(s.features))
        return s.to_dict()

    @app.get("/v1/collections/{collection}", tags=["public"])
    def get_spec(collection: str) -> dict[str, Any]:
        """The collection's public specification."""
        return party(collection).spec.to_dict()

    _receive_route(app, store, cfg, party, expected_round=1, role="curator")

    @app.get("/admin/v1/collections/{collection}/marginals", dependencies=[admin], tags=["admin"])
    def marginals(collection: str) -> dict[str, Any]:
        """``{feature: {value_key: users}}`` counted so far (value keys are canonical JSON)."""
        party(collection)
        return {"collection": collection, "counts": store.counts(collection)}

    @app.post("/admin/v1/collections/{collection}/plan", dependencies=[admin], tags=["admin"])
    def decide(collection: str, req: PlanRequest) -> dict[str, Any]:
        """Decide and publish the plan from the marginals counted so far."""
        c = party(collection)
        counts = store.counts(collection)
        missing = [f for f in c.spec.features if f not in counts]
        if missing:
            raise HTTPException(409, f"no round-1 message yet for feature(s) {missing}")
        plan = decide_plan(
            counts,
            collection=collection,
            k=req.k,
            budget=req.budget,
            method=req.method,  # type: ignore[arg-type]
            weights=req.weights,
            setting=c.spec.setting,
            n_release=req.n_release,
            local_suppression=req.local_suppression,
        )
        store.set_plan(collection, plan.to_dict())
        log.info("plan for %r: %d column(s)", collection, len(plan.columns))
        return plan.to_dict()

    @app.get("/v1/collections/{collection}/plan", tags=["public"])
    def get_plan(collection: str) -> dict[str, Any]:
        """The published plan (404 until the curator decided)."""
        party(collection)
        plan = store.collections()[collection][1]
        if plan is None:
            raise HTTPException(404, f"no plan yet for {collection!r}")
        return plan

    return app


def analyst_app(cfg: ServiceConfig) -> FastAPI:
    """The analyst service: receives round-2 rows and serves the released table."""
    key = read_private_key(cfg.key_file)
    store = AnalystStore(Path(cfg.data_dir) / "analyst.sqlite3", synchronous=cfg.sqlite_synchronous)
    log = _logger(cfg)
    parties: dict[str, Analyst] = {}
    for cid, (spec, plan) in store.collections().items():
        if plan is not None:
            parties[cid] = Analyst(key, CollectionSpec.from_dict(spec), PublishedPlan.from_dict(plan))

    app = _receiver_app(cfg, key, store, log, "analyst")
    admin = Depends(_bearer(cfg.admin_token, "admin"))
    creating = threading.Lock()

    def party(collection: str) -> Analyst:
        a = parties.get(_check_id(collection))
        if a is None:
            raise HTTPException(
                404, f"no collection {collection!r} with a plan; PUT /admin/v1/collections/{{id}}"
            )
        return a

    @app.put("/admin/v1/collections/{collection}", dependencies=[admin], tags=["admin"])
    def create(collection: str, payload: dict[str, Any] = Body(...)) -> dict[str, Any]:
        """Register a collection with its published plan: ``{"spec": {...}, "plan": {...}}``."""
        try:
            s = CollectionSpec.from_dict({**payload["spec"], "id": _check_id(collection)})
            p = PublishedPlan.from_dict(payload["plan"])
        except (KeyError, TypeError):
            raise HTTPException(422, 'give {"spec": {...}, "plan": {...}}') from None
        if p.collection != collection:
            raise HTTPException(422, f"the plan is for {p.collection!r}")
        unknown = [c for c in p.columns if c not in s.features]
        if unknown:
            raise HTTPException(422, f"planned column(s) {unknown} are not features of the collection")
        if s.suite != key.suite:
            raise HTTPException(422, f"the analyst's key is {key.suite}; the spec asks for {s.suite}")
        with creating:  # check and register in one step
            old = parties.get(collection)
            if old is not None and (old.spec != s or old.plan != p):
                raise HTTPException(409, f"collection {collection!r} exists with another spec or plan")
            store.put_collection(collection, s.to_dict(), p.to_dict())
            parties[collection] = Analyst(key, s, p)
        log.info("collection %r registered with %d planned column(s)", collection, len(p.columns))
        return {"spec": s.to_dict(), "plan": p.to_dict()}

    _receive_route(app, store, cfg, party, expected_round=2, role="analyst")

    @app.get("/admin/v1/collections/{collection}/release", dependencies=[admin], tags=["admin"])
    def release(collection: str) -> dict[str, Any]:
        """The released rows: ``{"columns": [...], "rows": [[value, ...], ...]}`` with values in
        their canonical JSON encoding (tagged objects for dates, redactions, ...)."""
        a = party(collection)
        rows = store.rows(collection)
        return {"columns": list(a.plan.columns), "rows": [json.loads(r) for r in rows]}

    return app


def build_app(cfg: ServiceConfig) -> FastAPI:
    """The app of ``cfg.role``."""
    if cfg.role == "shuffler":
        return shuffler_app(cfg)
    if cfg.role == "curator":
        return curator_app(cfg)
    if cfg.role == "analyst":
        return analyst_app(cfg)
    raise ConfigError(f"unknown role {cfg.role!r}")


def serve(cfg: ServiceConfig) -> None:
    """Run the service in the foreground (uvicorn with h11, heads bounded to 16 KiB; access log
    off: it would link senders to times)."""
    import uvicorn

    app = build_app(cfg)
    uvicorn.run(
        app,
        host=cfg.host,
        port=cfg.port,
        access_log=False,
        log_level="warning",
        server_header=False,
        # h11 bounds the request line and headers (httptools buffers a header of any size: a 32 MB
        # bearer token was read whole); the bodies are bounded by max_body_bytes
        http="h11",
        h11_max_incomplete_event_size=_MAX_HEAD_BYTES,
    )
