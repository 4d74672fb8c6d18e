"""What the three services share: the base app, bearer checks, bounded bodies, logs, the receiving
route of the curator and the analyst, and the HTTP server with head and idle timeouts."""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import logging
import logging.handlers
import os
import time
from collections import Counter
from collections.abc import Callable, Mapping
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, TypeVar

import h11
from fastapi import Depends, FastAPI, HTTPException, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.concurrency import run_in_threadpool
from starlette.requests import ClientDisconnect

from sdckit import __version__
from sdckit.errors import InfeasibleError, MalformedMessageError, ParameterError, SdcError
from sdckit.protocol._crypto import PrivateKey
from sdckit.protocol._keyfile import read_private_key, read_signing_key
from sdckit.protocol._signing import sign_document
from sdckit.protocol._spec import check_collection_id
from sdckit.protocol._wire import unpack_batch
from sdckit.protocol.services._config import ServiceConfig

BATCH_MEDIA = "application/octet-stream"
ROUNDS = (1, 2, 3)  # singles, release, pairs (the optional middle round)
DETAIL_CHARS = 500
MAX_HEAD_BYTES = 16 * 1024
"""Largest request line plus headers (bytes); a longer head gets 400 and the connection closes."""
LOG_BYTES = 1 << 20
"""Each log file rotates at 1 MiB, three old files kept: at most 4 MiB per service."""


def make_logger(cfg: ServiceConfig) -> logging.Logger:
    """A rotating file logger that records counts and states only: never a value, an address or a body."""
    log = logging.getLogger(f"sdckit.protocol.{cfg.role}.{id(cfg)}")
    log.setLevel(logging.INFO)
    log.propagate = False
    Path(cfg.data_dir).mkdir(mode=0o700, parents=True, exist_ok=True)
    path = Path(cfg.data_dir) / f"{cfg.role}.log"
    os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600))  # owner only, like the store
    os.chmod(path, 0o600)
    handler = logging.handlers.RotatingFileHandler(path, maxBytes=LOG_BYTES, backupCount=3)
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(message)s"))
    log.addHandler(handler)
    return log


class EventCounter:
    """Counts events (an aborted upload, a refused pool, a 404 for an unknown collection) and logs
    one aggregate line per interval instead of a line per event."""

    def __init__(self, log: logging.Logger, interval: float = 60.0) -> None:
        self.log, self.interval = log, interval
        self._counts: Counter[str] = Counter()
        self._last = time.monotonic()

    def add(self, event: str, n: int = 1) -> None:
        self._counts[event] += n
        if time.monotonic() - self._last >= self.interval:
            self.flush()

    def flush(self) -> None:
        if self._counts:
            self.log.info("in the last %.0f s: %s", time.monotonic() - self._last, dict(self._counts))
        self._counts.clear()
        self._last = time.monotonic()


def bearer(expected: str, realm: str) -> Callable[[Request], None]:
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


async def read_body(request: Request, limit: int, events: EventCounter | None = None) -> bytes:
    """The request body, or 413 as soon as it exceeds ``limit`` bytes (checked while streaming);
    an upload the client aborts is counted (one log line per interval) and answered 400."""
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise HTTPException(413, f"body of {declared} bytes; the limit is {limit}")
    chunks, size = [], 0
    try:
        async for chunk in request.stream():
            size += len(chunk)
            if size > limit:
                raise HTTPException(413, f"body larger than the limit of {limit} bytes")
            chunks.append(chunk)
    except ClientDisconnect:
        if events is not None:
            events.add("upload aborted")
        raise HTTPException(400, "the upload was aborted") from None
    return b"".join(chunks)


def check_round(round_: int) -> int:
    if round_ not in ROUNDS:
        raise HTTPException(
            404, f"round {round_} does not exist; rounds are 1 (singles), 3 (pairs) and 2 (release)"
        )
    return round_


def check_id(collection: str) -> str:
    try:
        return check_collection_id(collection)
    except ParameterError as err:
        raise HTTPException(422, str(err)) from None


RETRY_AFTER_SECONDS = 5
"""``Retry-After`` of a 503 answered while a service's store is unreachable."""


def base_app(
    cfg: ServiceConfig,
    key: PrivateKey,
    title: str,
    lifespan: Any = None,
    problem: Callable[[], str | None] | None = None,
) -> FastAPI:
    # max_body_size: every route, JSON ones included, gets 413 past the limit (declared or streamed)
    app = FastAPI(title=title, version=__version__, lifespan=lifespan, max_body_size=cfg.max_body_bytes)

    @app.exception_handler(SdcError)
    async def _sdc_error(_: Request, err: SdcError) -> JSONResponse:
        status = 400 if isinstance(err, MalformedMessageError) else 422
        if isinstance(err, InfeasibleError):
            status = 409
        return JSONResponse({"detail": str(err)[:DETAIL_CHARS]}, status_code=status)

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

    @app.get("/healthz", tags=["public"], response_model=None)
    def healthz() -> dict[str, str] | JSONResponse:
        """Health: 200 while the service runs and reaches its store; 503 with ``Retry-After`` and
        the reason while it cannot (a shuffler replica that lost PostgreSQL)."""
        trouble = problem() if problem is not None else None
        if trouble:
            return JSONResponse(
                {"status": "unavailable", "role": cfg.role, "detail": trouble},
                status_code=503,
                headers={"retry-after": str(RETRY_AFTER_SECONDS)},
            )
        return {"status": "ok", "role": cfg.role}

    return app


StoreT = TypeVar("StoreT")


def role_parts(
    cfg: ServiceConfig, store_cls: Callable[..., StoreT]
) -> tuple[PrivateKey, Any, StoreT, logging.Logger, EventCounter]:
    """What every service opens at start: its HPKE key, its Ed25519 signing key, its store
    (``<data_dir>/<role>.sqlite3``), its log and the log's event counter."""
    key, signing = read_private_key(cfg.key_file), read_signing_key(cfg.key_file)
    store = store_cls(Path(cfg.data_dir) / f"{cfg.role}.sqlite3", synchronous=cfg.sqlite_synchronous)
    log = make_logger(cfg)
    return key, signing, store, log, EventCounter(log)


def keys_document(cfg: ServiceConfig, key: PrivateKey, signing: Any) -> dict[str, Any]:
    """The role's HPKE public key, signed with its Ed25519 key."""
    doc = {"role": cfg.role, "suite": key.suite, "public_key": key.public_key().to_text()}
    return sign_document(signing, "keys", cfg.role, doc)


# ------------------------------------------------------------------------------ curator and analyst

PartyT = TypeVar("PartyT")


def party_lookup(parties: dict[str, PartyT], hint: str) -> Callable[[str], PartyT]:
    """``party(collection)``: the party of a known collection, else 404 with ``hint``."""

    def party(collection: str) -> PartyT:
        p = parties.get(check_id(collection))
        if p is None:
            raise HTTPException(404, f"no collection {collection!r}{hint}; PUT /admin/v1/collections/{{id}}")
        return p

    return party


def receiver_app(
    cfg: ServiceConfig, key: PrivateKey, signing: Any, store: Any, log: logging.Logger, role: str
) -> FastAPI:
    """The app of a receiving role (curator, analyst). It serves devices nothing: every route but
    ``/healthz`` needs the relay or the admin token, and a request that carries neither is counted
    (``GET /admin/v1/requests``), so a test can show that no device ever reached it."""
    @asynccontextmanager
    async def lifespan(_: FastAPI) -> Any:
        log.info("%s started", role)
        yield
        store.close()

    app = base_app(cfg, key, f"sdckit {role}", lifespan)
    admin = Depends(bearer(cfg.admin_token, "admin"))
    relay = Depends(bearer(cfg.relay_token, "relay"))
    seen: Counter[str] = Counter()

    @app.middleware("http")
    async def count_callers(request: Request, call_next: Any) -> Any:
        path = request.url.path
        kind = (
            "admin" if path.startswith("/admin/") else "relay" if path.startswith("/internal/") else "other"
        )
        if not request.headers.get("authorization") and path != "/healthz":
            kind = "unauthenticated"
        seen[kind] += 1
        return await call_next(request)

    @app.get("/admin/v1/requests", dependencies=[admin], tags=["admin"])
    def requests() -> dict[str, int]:
        """Requests received since start, by kind (admin, relay, unauthenticated, other)."""
        return dict(seen)

    @app.get("/internal/v1/keys", dependencies=[relay], tags=["relay"])
    def keys() -> dict[str, Any]:
        """The role's HPKE public key, signed (the shuffler relays it to devices)."""
        return keys_document(cfg, key, signing)

    @app.get("/admin/v1/collections/{collection}/tally", dependencies=[admin], tags=["admin"])
    def tally(collection: str) -> dict[str, int]:
        """Messages accepted, duplicated (counted once) and rejected."""
        return dict(store.tally(check_id(collection)).to_dict())

    return app


def receive_route(
    app: FastAPI,
    store: Any,
    cfg: ServiceConfig,
    party: Callable[[str], Any],
    *,
    expected_round: int,
    role: str,
    events: EventCounter,
    extra_rounds: Mapping[int, Callable[[str], Any]] | None = None,
    extra_stores: Mapping[int, Any] | None = None,
) -> None:
    """The relay endpoint where the shuffler delivers the batches of ``expected_round`` to ``role``."""
    relay = Depends(bearer(cfg.relay_token, "relay"))

    @app.post(
        "/internal/v1/collections/{collection}/rounds/{round_}/batch",
        dependencies=[relay],
        tags=["relay"],
        description=f"A shuffled batch of round-{expected_round} messages from the shuffler; idempotent (salts).",
    )
    async def receive(collection: str, round_: int, request: Request) -> dict[str, int]:
        into = store
        if extra_rounds and round_ in extra_rounds:
            p = extra_rounds[round_](collection)
            into = (extra_stores or {}).get(round_, store)
        else:
            p = party(collection)
            if round_ != expected_round:
                raise HTTPException(404, f"the {role} receives round {expected_round} only")
        body = await read_body(request, cfg.max_body_bytes, events)
        batch = unpack_batch(body, max_messages=cfg.max_batch_messages)
        return await run_in_threadpool(_open_and_record, p, into, collection, batch)


def _open_and_record(p: Any, store: Any, collection: str, batch: list[bytes]) -> dict[str, int]:
    """Open each message (a malformed one is counted as rejected: the party raises
    :class:`MalformedMessageError` for anything a sender can get wrong) and record the batch."""
    opened: list[Any] = []
    rejected = 0
    for m in batch:
        try:
            opened.append(p.open(m))
        except MalformedMessageError:
            rejected += 1
    return dict(store.record(collection, opened, rejected).to_dict())


# ------------------------------------------------------------------------------------- the server


def timed_h11_protocol(header_timeout: float, idle_timeout: float) -> type:
    """uvicorn's h11 protocol with two timeouts it lacks: a connection that takes longer than
    ``header_timeout`` to send a request's head, or stays silent for ``idle_timeout`` in the middle
    of a request body, is closed (a slow-header or slow-body client cannot hold a connection)."""
    # lazy: the protocol extra
    from uvicorn.protocols.http.h11_impl import H11Protocol

    class TimedH11Protocol(H11Protocol):
        def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
            super().connection_made(transport)
            self._head_since = self._last_data = time.monotonic()
            self._tick = self.loop.call_later(min(header_timeout, idle_timeout) / 4, self._check)

        def data_received(self, data: bytes) -> None:
            self._last_data = time.monotonic()
            super().data_received(data)

        def on_response_complete(self) -> None:
            self._head_since = time.monotonic()
            super().on_response_complete()

        def connection_lost(self, exc: Exception | None) -> None:
            self._tick.cancel()
            super().connection_lost(exc)

        def _check(self) -> None:
            if self.transport.is_closing():
                return
            now = time.monotonic()
            waiting_head = self.cycle is None or self.cycle.response_complete
            in_body = not waiting_head and self.conn.their_state is h11.SEND_BODY
            if (waiting_head and now - self._head_since > header_timeout) or (
                in_body and now - self._last_data > idle_timeout
            ):
                if self.cycle is not None and not self.cycle.response_complete:
                    self.cycle.disconnected = True
                    self.cycle.message_event.set()
                self.transport.close()
                return
            self._tick = self.loop.call_later(min(header_timeout, idle_timeout) / 4, self._check)

    return TimedH11Protocol


def run_server(app: FastAPI, cfg: ServiceConfig) -> None:
    """Run ``app`` in the foreground (uvicorn with h11, heads bounded to 16 KiB, head and idle
    timeouts; access log off: it would link senders to times)."""
    # lazy: the protocol extra
    import uvicorn

    uvicorn.run(
        app,
        host=cfg.host,
        port=cfg.port,
        access_log=False,
        log_level="warning",
        server_header=False,
        # h11 bounds the request line and headers (httptools buffers a header of any size: a 32 MB
        # bearer token was read whole); the bodies are bounded by max_body_bytes
        http=timed_h11_protocol(cfg.header_timeout, cfg.idle_timeout),
        h11_max_incomplete_event_size=MAX_HEAD_BYTES,
    )
