"""The shuffler service: admits enrolled users once per round, pools stripped messages, forwards
them shuffled in batches of at least ``min_batch`` users, and relays the curator's and analyst's
signed keys, spec and plan to devices (so neither ever sees a device).

Device routes: ``GET /v1/keys``, ``GET /v1/keys/{role}``, ``GET /v1/collections/{c}``,
``GET /v1/collections/{c}/plan``, ``POST /v1/collections/{c}/enrol``,
``POST /v1/collections/{c}/rounds/{r}/messages``. Admin routes: register a collection, mint
invites, flush a round, its counters, the quarantine (inspect, retry, drop).
"""

from __future__ import annotations

import hashlib
import secrets
import threading
import time
from collections import OrderedDict
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any, Literal

import httpx
from fastapi import Depends, FastAPI, HTTPException, Request
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict, Field
from starlette.concurrency import run_in_threadpool

from sdckit.errors import ConfigError, MalformedMessageError, SdcError
from sdckit.protocol._client import NODELAY
from sdckit.protocol._crypto import sealed_length
from sdckit.protocol._enrol import MAX_ENROL_USERS, Credential, Issuer
from sdckit.protocol._keyfile import write_new_file
from sdckit.protocol._planning import verify_pairs, verify_plan
from sdckit.protocol._recount import verify_countersigned
from sdckit.protocol._signing import canonical_json, sign_document, verify_document, verify_key_from_text
from sdckit.protocol._spec import (
    PAIR_ROUND,
    CollectionSpec,
    PairQueries,
    PlanRefusedError,
    PublishedPlan,
    UnpinnedSpecError,
)
from sdckit.protocol._wire import pack_batch, unpack_batch
from sdckit.protocol.parties import Shuffler, secure_permutation
from sdckit.protocol.services._common import (
    BATCH_MEDIA,
    RETRY_AFTER_SECONDS,
    EventCounter,
    base_app,
    bearer,
    check_id,
    check_round,
    keys_document,
    read_body,
    role_parts,
)
from sdckit.protocol.services._config import ServiceConfig
from sdckit.protocol.services._pgstore import open_shuffler_store
from sdckit.protocol.services._store import PoolingElsewhereError, ShufflerStore

CREDENTIAL_HEADER = "sdckit-credential"
"""Request header of a token-enrolled submission: one credential per user, comma-separated."""
_BATCH_LENGTH_HEAD = 9  # b"SDCB" | version | count
_RECENT_BODIES = 4096
_MAX_ENROL_PARSE = 4096  # parsed at most; more than MAX_ENROL_USERS is refused with its own message
_MAX_INVITES = 100_000


@dataclass
class Registered:
    """A collection the shuffler admits: its signed spec (checked), policy and expiry."""

    spec: CollectionSpec
    signed_spec: dict[str, Any]
    policy: Literal["tokens", "open"]
    expires: float
    """Monotonic deadline (``time.monotonic()``): the operator's ``pool_ttl_seconds`` counted on
    the shuffler's running time, so a jump of the wall clock neither expires nor extends it."""
    issuer: Issuer | None
    pairs: PairQueries | None = None
    """The curator's pair queries (signed, checked), fetched at the first pair-round submission."""
    plan: dict[str, Any] | None = None
    """The curator's signed plan as first relayed (checked with :func:`verify_plan`): pinned, so a
    plan cannot change once devices have it (in memory)."""
    pairs_doc: dict[str, Any] | None = None
    """The pinned pair queries as signed (what devices get from every replica)."""
    plan_hash: str | None = None
    """SHA-256 of the pinned plan's document (kept on disk instead of the plan's counts, so after
    a restart a changed plan is still refused)."""

    def per_user(self, round_: int) -> int:
        """Messages of one complete submission: one per feature in round 1, one per pair query in
        the pair round (each twice with ``count_check``: :meth:`witnessed`), one in round 2."""
        if round_ == 2:
            return 1
        return self.witnessed(round_) * (2 if self.spec.count_check else 1)

    def witnessed(self, round_: int) -> int:
        """Messages of one submission of round 1 or the pair round sealed to the curator: one per
        feature, one per pair query; with ``count_check`` as many again follow, sealed to the
        analyst (issue 37)."""
        if round_ == PAIR_ROUND:
            return len(self.pairs.queries) if self.pairs is not None else 1
        return len(self.spec.features)

    def inner_pad(self, round_: int) -> int:
        """Length of the round's inner plaintexts."""
        if round_ == PAIR_ROUND:
            return self.pairs.pad if self.pairs is not None else self.spec.round1_pad
        return self.spec.round1_pad if round_ == 1 else self.spec.round2_pad

    def outer_length(self, round_: int) -> int:
        return sealed_length(self.spec.suite, sealed_length(self.spec.suite, self.inner_pad(round_)))


WITNESS_TAG = b"sdckit-witness:"
"""Prefix of a pooled round-1 message sealed to the analyst (count_check): a tag the forwarder
strips, never sent; an inner ciphertext is a fixed-length HPKE output, never confused with it."""


class _RefusedError(Exception):
    def __init__(self, status: int) -> None:
        super().__init__(f"next hop answered {status}")
        self.status = status


class _Forwarder:
    """Background thread: releases due pools in a CSPRNG permutation to the next hop, never fewer
    than ``min_batch`` users' messages, deletes what was acknowledged, checkpoints the WAL, retries
    with back-off, and quarantines a pool refused ``quarantine_after`` times in a row."""

    def __init__(
        self,
        cfg: ServiceConfig,
        store: ShufflerStore,
        registry: dict[str, Registered],
        events: EventCounter,
    ) -> None:
        self.cfg, self.store, self.registry, self.events = cfg, store, registry, events
        self.log = events.log
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="forwarder", daemon=True)
        self._backoff = 0.0
        self._pair_backoff: dict[tuple[str, int], float] = {}
        self._retry_at: dict[tuple[str, int], float] = {}
        self._opened: dict[tuple[str, int], float] = {}
        self._next_expiry = 0.0

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
                    self.expire()
                    moved = self.forward_due(http)
                    self._backoff = 0.0
                except httpx.HTTPError as err:  # the next hop is unreachable: back off for all pools
                    self._backoff = min(5.0, max(0.1, 2 * self._backoff))
                    self.events.add(f"next hop unreachable ({type(err).__name__})")
                    self._stop.wait(self._backoff)
                    continue
                except Exception as err:  # a bug must not stop forwarding for good: log, back off
                    self.log.error(
                        "forwarder error %s (the pool holds ciphertexts only); retrying in 5 s",
                        type(err).__name__,
                    )
                    self._stop.wait(5.0)
                    continue
                if not moved:
                    self._stop.wait(self.cfg.poll_seconds)

    def persist_remaining(self) -> None:
        """Store each collection's remaining running time (at a clean stop; no write while running,
        so the write-ahead log holds nothing between forwards)."""
        now = time.monotonic()
        for cid, reg in list(self.registry.items()):
            self.store.set_remaining(cid, reg.expires - now)

    def expire(self) -> None:
        """Check expiry on the monotonic clock (a jump of the wall clock changes nothing), and
        forget a collection past its expiry once its pool is empty: an
        expired collection admits no submission, but what it acknowledged is still forwarded,
        never dropped. Its spent credentials and invites are kept, so a re-registration cannot
        admit them again."""
        now = time.monotonic()
        if now < self._next_expiry:
            return
        self._next_expiry = now + min(5.0, max(0.5, 10 * self.cfg.poll_seconds))
        for cid, reg in list(self.registry.items()):
            if reg.expires <= now:
                pooled = self.store.pooled(cid)
                if pooled:
                    self.events.add("expired collection still forwarding its pool")
                    continue
                self.store.forget(cid)
                self.registry.pop(cid, None)
                self.log.info("collection %r expired (nothing pooled); its spent credentials are kept", cid)

    def forward_due(self, http: httpx.Client) -> int:
        """Forward what is due; returns the number of messages forwarded or dropped."""
        moved = 0
        now = time.monotonic()
        for collection, round_, pooled, flushed in self.store.due():
            pair = (collection, round_)
            reg = self.registry.get(collection)
            if reg is None or self._retry_at.get(pair, 0.0) > now:
                continue
            if not flushed and self._closes(pair, now):
                self.store.flush(collection, round_)
                self.log.info("round %d of %r closed on schedule", round_, collection)
                flushed = True
            if round_ == PAIR_ROUND and reg.pairs is None:
                continue  # after a restart: held until a submission or the flush fetches the queries
            reserve = self.cfg.min_batch_users * reg.per_user(round_)
            if flushed:
                if pooled >= reserve:
                    n = pooled
                elif self.cfg.at_close == "drop":
                    dropped = self.store.drop_pool(collection, round_)
                    self.log.info(
                        "round %d of %r closed with %d message(s) below min_batch: dropped",
                        round_,
                        collection,
                        dropped,
                    )
                    moved += dropped
                    continue
                else:
                    continue  # held until enough late users join
            elif pooled - reserve >= self.cfg.batch_threshold:
                n = pooled - reserve  # keep a reserve: the closing batch is never small
            else:
                continue
            try:
                moved += self._forward(http, reg, collection, round_, n)
            except _RefusedError as err:
                delay = min(5.0, max(0.1, 2 * self._pair_backoff.get(pair, 0.0)))
                self._pair_backoff[pair], self._retry_at[pair] = delay, now + delay
                if self.store.refused(collection, round_, self.cfg.quarantine_after):
                    self.log.warning(
                        "round %d of %r quarantined after %d refusals (last %d); see "
                        "GET /admin/v1/quarantine",
                        round_,
                        collection,
                        self.cfg.quarantine_after,
                        err.status,
                    )
                else:
                    self.events.add(f"next hop refused a pool ({err.status})")
                continue
            self._pair_backoff.pop(pair, None)
            self._retry_at.pop(pair, None)
        return moved

    def _closes(self, pair: tuple[str, int], now: float) -> bool:
        """Whether a round closes now: ``close_after_seconds`` after its first pooled message (on
        the monotonic clock; after a restart, counted from the restart) or once it admitted
        ``close_after_users`` users."""
        opened = self._opened.setdefault(pair, now)
        after, users = self.cfg.close_after_seconds, self.cfg.close_after_users
        if after is not None and now - opened >= after:
            return True
        return users is not None and self.store.users(*pair) >= users

    def _chunk_messages(self, reg: Registered, round_: int) -> int:
        inner = sealed_length(reg.spec.suite, reg.inner_pad(round_))
        by_bytes = (self.cfg.forward_max_bytes - _BATCH_LENGTH_HEAD) // (4 + inner)
        return max(1, min(self.cfg.forward_chunk, by_bytes))

    def _forward(self, http: httpx.Client, reg: Registered, collection: str, round_: int, n: int) -> int:
        pool = secure_permutation(self.store.take(collection, round_, n))
        size = self._chunk_messages(reg, round_)
        if round_ != 2 and reg.spec.count_check:
            # the pool is taken in hash order, so its two halves (the curator's messages, the
            # analyst's copies) differ in size; both hops get as many, so a release counts the same
            # users at each (the rest stays pooled: at the close, all of it, in equal halves)
            to_analyst = [x for x in pool if x[1].startswith(WITNESS_TAG)]
            to_curator = [x for x in pool if not x[1].startswith(WITNESS_TAG)]
            pool = [x for pair in zip(to_analyst, to_curator, strict=False) for x in pair]  # alternating
            size = max(2, size - size % 2)  # even: a chunk splits evenly too
        hop = self.cfg.analyst_url if round_ == 2 else self.cfg.curator_url  # singles and pairs: curator
        url = f"{hop.rstrip('/')}/internal/v1/collections/{collection}/rounds/{round_}/batch"
        witness = f"{self.cfg.analyst_url.rstrip('/')}/internal/v1/collections/{collection}/rounds/{round_}/batch"
        moved = 0
        try:
            for start in range(0, len(pool), size):
                chunk = pool[start : start + size]
                # round 1 and the pair round with count_check: the analyst's copies (tagged when
                # pooled) go to the analyst, first, so it never holds fewer of a chunk's users than
                # the curator
                copies = [m[len(WITNESS_TAG) :] for _, m in chunk if m.startswith(WITNESS_TAG)]
                own = [m for _, m in chunk if not m.startswith(WITNESS_TAG)]
                for target, part in ((witness, copies), (url, own)):
                    if not part:
                        continue
                    r = http.post(target, content=pack_batch(part), headers={"content-type": BATCH_MEDIA})
                    if r.status_code // 100 != 2:
                        raise _RefusedError(r.status_code)
                self.store.delete(collection, round_, [i for i, _ in chunk])  # acknowledged: drop
                moved += len(chunk)
        finally:
            if moved:
                self.store.checkpoint()  # nothing of what was forwarded stays in the WAL
        self.events.add(f"forwarded round {round_}", moved)
        return moved


class RegisterRequest(BaseModel):
    """How the shuffler admits a collection's users."""

    model_config = ConfigDict(extra="forbid")
    enrolment: Literal["tokens", "open"] = Field(
        ...,
        description="tokens: one anonymous single-use credential per user and round (invites); "
        "open: anyone may submit (no protection against fake users)",
    )


class InviteRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    n: int = Field(..., ge=1, le=_MAX_INVITES, description="invites to mint (one per participant)")


class EnrolUser(BaseModel):
    invite: str = Field(..., min_length=8, max_length=200)
    blinded: list[str] = Field(
        ...,
        min_length=1,
        max_length=3,
        description="one per round, in the order round 1, round 2, pair round",
    )


class EnrolRequest(BaseModel):
    users: list[EnrolUser] = Field(..., min_length=1, max_length=_MAX_ENROL_PARSE)


class RateLimit:
    """At most ``per_minute`` requests per key in each minute (fixed windows), in a table of at most
    ``capacity`` keys: O(1) work per call and bounded memory, whatever the number of keys.

    The table is an LRU (``OrderedDict``): a key not seen for the longest time is forgotten first.
    A flood of new keys can therefore evict a key and give it a fresh window, never block the
    service. Callers limit only keys that are worth it: a credential after its VOPRF check (a
    random credential is refused before it reaches the table), an invite after its request parsed.
    """

    def __init__(self, per_minute: int, capacity: int = 65_536) -> None:
        self.per_minute = per_minute
        self.capacity = capacity
        self._hits: OrderedDict[bytes, tuple[float, int]] = OrderedDict()
        self._lock = threading.Lock()

    def allow(self, key: bytes) -> bool:
        now = time.monotonic()
        with self._lock:
            start, n = self._hits.pop(key, (now, 0))
            if now - start >= 60.0:
                start, n = now, 0
            allowed = n < self.per_minute
            self._hits[key] = (start, n + 1 if allowed else n)
            if len(self._hits) > self.capacity:
                self._hits.popitem(last=False)
            return allowed

    def __len__(self) -> int:
        return len(self._hits)


def _enrolment_seed(cfg: ServiceConfig) -> bytes:
    path = Path(cfg.data_dir) / "enrolment.seed"
    if not path.exists():
        Path(cfg.data_dir).mkdir(mode=0o700, parents=True, exist_ok=True)
        write_new_file(path, secrets.token_bytes(32), 0o600)
    if path.stat().st_mode & 0o077:
        raise ConfigError(f"{str(path)!r} is readable by group or others; run `chmod 600 {path}`")
    seed = path.read_bytes()
    if len(seed) != 32:
        raise ConfigError(f"{str(path)!r} does not hold a 32-byte seed; remove it to start afresh")
    return seed


def shuffler_app(cfg: ServiceConfig, *, start_forwarder: bool = True) -> FastAPI:
    """The shuffler service (see the module docstring)."""
    key, signing, store, log, events = role_parts(cfg, partial(open_shuffler_store, url=cfg.store))
    owners = {
        "curator": verify_key_from_text(cfg.curator_verify_key),
        "analyst": verify_key_from_text(cfg.analyst_verify_key),
    }
    hops = {"curator": cfg.curator_url.rstrip("/"), "analyst": cfg.analyst_url.rstrip("/")}
    seed = store.enrolment_seed() or _enrolment_seed(cfg)  # replicas: one seed, in the shared store
    shuffler = Shuffler(key, batch_threshold=cfg.batch_threshold)
    registry: dict[str, Registered] = {}

    def registered(cid: str, signed: dict[str, Any], policy: dict[str, Any], expires: float) -> Registered:
        spec = CollectionSpec.from_dict(
            verify_document(signed, owners["curator"], kind="spec", signer="curator")
        )
        mode: Literal["tokens", "open"] = "open" if policy.get("enrolment") == "open" else "tokens"
        return Registered(
            spec,
            signed,
            mode,
            time.monotonic() + expires,
            Issuer(seed, cid) if mode == "tokens" else None,
            plan_hash=policy.get("plan_sha256"),
        )

    def policy_of(reg: Registered) -> dict[str, Any]:
        return {"enrolment": reg.policy, **({"plan_sha256": reg.plan_hash} if reg.plan_hash else {})}

    def document_hash(doc: dict[str, Any]) -> str:
        # the signed document's JCS bytes (RFC 8785), as signed
        return hashlib.sha256(canonical_json(doc.get("document"))).hexdigest()

    for cid, (signed, policy, remaining) in store.collections().items():
        # an operator who lowered pool_ttl_seconds lowers it for the registered collections too
        registry[cid] = registered(cid, signed, policy, min(remaining, cfg.pool_ttl_seconds))
    forwarder = _Forwarder(cfg, store, registry, events)
    relay_http = httpx.Client(
        timeout=30.0,
        headers={"authorization": f"Bearer {cfg.relay_token}"},
        transport=httpx.HTTPTransport(socket_options=NODELAY, retries=2),
    )
    cache: dict[str, tuple[float, dict[str, Any]]] = {}
    recent: OrderedDict[bytes, tuple[int, dict[str, Any]]] = OrderedDict()
    recent_lock = threading.Lock()
    limiter = RateLimit(cfg.credential_rate)
    pin_lock = threading.Lock()

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        log.info(
            "shuffler started (batch threshold %d, min_batch %d users)",
            cfg.batch_threshold,
            cfg.min_batch_users,
        )
        if start_forwarder:
            forwarder.start()
        yield
        if start_forwarder:
            forwarder.stop()
        forwarder.persist_remaining()
        events.flush()
        relay_http.close()
        store.close()

    app = base_app(cfg, key, "sdckit shuffler", lifespan, problem=store.problem)

    async def store_lost(_: Request, err: Exception) -> JSONResponse:
        """The shared store is unreachable: 503 with Retry-After (devices retry), never a 500 or
        a hang; nothing was acknowledged, so nothing is lost."""
        events.add("store unreachable (503)")
        return JSONResponse(
            {"detail": f"the shuffler's store is unreachable ({type(err).__name__}); retry later"},
            status_code=503,
            headers={"retry-after": str(RETRY_AFTER_SECONDS)},
        )

    for exc in store.unavailable:
        app.add_exception_handler(exc, store_lost)
    admin = Depends(bearer(cfg.admin_token, "admin"))

    missing: OrderedDict[str, float] = OrderedDict()  # recent misses: unknown ids cost one lookup a second

    def lookup(collection: str) -> Registered | None:
        """A collection registered at another replica (shared store), loaded on a miss."""
        now = time.monotonic()
        if missing.get(collection, -1.0) > now:
            return None
        found = store.collection(collection)
        if found is None:
            missing[collection] = now + 1.0
            while len(missing) > 4096:
                missing.popitem(last=False)
            return None
        signed, policy, remaining = found
        try:
            reg = registered(collection, signed, policy, min(remaining, cfg.pool_ttl_seconds))
        except (MalformedMessageError, SdcError):
            log.error("collection %r in the shared store does not verify; not admitted", collection)
            return None
        missing.pop(collection, None)
        return registry.setdefault(collection, reg)

    def collection_of(collection: str) -> Registered:
        reg = registry.get(check_id(collection)) or lookup(collection)
        if reg is None or reg.expires <= time.monotonic():
            events.add("unknown collection")
            raise HTTPException(404, f"no collection {collection!r} is registered at this shuffler")
        return reg

    def fetch(role: str, path: str, kind: str, ttl: float) -> dict[str, Any]:
        """A signed document from its owner, checked, cached for ``ttl`` seconds."""
        hit = cache.get(role + path)
        if hit is not None and time.monotonic() - hit[0] < ttl:
            return hit[1]
        try:
            r = relay_http.get(f"{hops[role]}{path}")
        except httpx.HTTPError:
            raise HTTPException(503, f"the {role} is unreachable; retry later") from None
        if r.status_code == 404:
            raise HTTPException(404, f"the {role} has no such document")
        if r.status_code != 200:
            raise HTTPException(502, f"the {role} answered {r.status_code}")
        doc = r.json()
        try:
            verify_document(doc, owners[role], kind=kind, signer=role)
        except MalformedMessageError as err:
            raise HTTPException(502, f"the {role}'s answer is not validly signed: {err}") from None
        cache[role + path] = (time.monotonic(), doc)
        return dict(doc)

    # ------------------------------------------------------------------------------ device routes

    @app.get("/v1/keys", tags=["public"])
    def own_keys() -> dict[str, Any]:
        """The shuffler's HPKE public key, signed with its Ed25519 key."""
        return keys_document(cfg, key, signing)

    @app.get("/v1/keys/{role}", tags=["public"])
    def relayed_keys(role: str) -> dict[str, Any]:
        """The curator's or analyst's HPKE public key, signed by its owner (relayed)."""
        if role not in hops:
            raise HTTPException(404, "roles are curator and analyst (and /v1/keys for the shuffler)")
        return fetch(role, "/internal/v1/keys", "keys", 60.0)

    @app.get("/v1/collections/{collection}", tags=["public"])
    def get_collection(collection: str) -> dict[str, Any]:
        """The collection's spec signed by the curator, and the shuffler's enrolment terms signed
        by the shuffler (policy, issuer key, min_batch)."""
        reg = collection_of(collection)
        terms = {
            "collection": collection,
            "enrolment": reg.policy,
            "issuer_keys": reg.issuer.public_keys if reg.issuer else None,
            "min_batch": cfg.min_batch_users,
            "keys": dict(reg.spec.keys),
            "message_lengths": {"1": reg.outer_length(1), "2": reg.outer_length(2)},
        }
        return {"spec": reg.signed_spec, "enrolment": sign_document(signing, "enrolment", "shuffler", terms)}

    def admitted(collection: str) -> int | None:
        return store.users(collection, 1) or None  # replicas: all of them (shared store)

    def countersigned(reg: Registered, collection: str, kind: str, doc: dict[str, Any]) -> dict[str, Any]:
        """``doc`` with the analyst's check of its counts attached (collections with
        ``count_check``, issue 37): the analyst recounts them from the round-1 copies it received
        and co-signs, or the document is refused (409 with the analyst's reason)."""
        if not reg.spec.count_check:
            return doc
        try:
            r = relay_http.post(
                f"{hops['analyst']}/internal/v1/collections/{collection}/check",
                json={"kind": kind, "signed": {k: v for k, v in doc.items() if k != "check"}},
            )
        except httpx.HTTPError:
            raise HTTPException(503, "the analyst is unreachable; retry later") from None
        if r.status_code == 409:
            events.add(f"{kind} refused by the analyst's recount")
            try:
                detail = r.json().get("detail", r.text)
            except ValueError:
                detail = r.text
            raise HTTPException(409, f"the analyst's recount refuses the {kind} of {collection!r}: {detail}")
        if r.status_code != 200:
            raise HTTPException(502, f"the analyst answered {r.status_code} to the {kind}'s check")
        check = r.json()
        try:
            verify_countersigned(check, owners["analyst"], kind, collection, doc["document"])
        except PlanRefusedError as err:
            raise HTTPException(502, str(err)) from None
        return {**doc, "check": check}

    def require_check(reg: Registered, collection: str, kind: str, doc: dict[str, Any]) -> None:
        if reg.spec.count_check:
            try:
                verify_countersigned(doc.get("check"), owners["analyst"], kind, collection, doc["document"])
            except PlanRefusedError as err:
                events.add(f"{kind} refused (no valid analyst check)")
                raise HTTPException(409, str(err)) from None

    def check_plan(reg: Registered, collection: str, doc: dict[str, Any], *, checked: bool = True) -> None:
        """The curator's signature, the spec's floors and the bound recomputed from the plan's own
        counts (409 naming the reason, 502 for a document that is not a plan); with ``checked``
        (count_check collections) the analyst's co-signature of exactly this plan."""
        try:
            plan = PublishedPlan.from_dict(verify_document(doc, owners["curator"], kind="plan", signer="curator"))
            verify_plan(plan, reg.spec, n_users=admitted(collection))
            if checked:
                require_check(reg, collection, "plan", doc)
        except PlanRefusedError as err:
            events.add("plan refused")
            raise HTTPException(409, str(err)) from None
        except (MalformedMessageError, SdcError) as err:
            raise HTTPException(502, f"the curator's plan is not valid: {err}") from None

    def pinned_plan(reg: Registered, collection: str) -> dict[str, Any]:
        """The plan devices get: the first one relayed, checked against the spec's floors and its
        own published counts (409 naming the reason otherwise), then fixed for the collection.

        The pin is a compare-and-set in the shared store (issue 37): every replica inserts the plan
        it checked only if none is pinned, then serves the one the store holds, so two replicas
        racing on two plans still pin one, and any replica serves it (the document is stored, not
        only its hash)."""
        if reg.plan is not None:
            return reg.plan
        with pin_lock:
            if reg.plan is not None:
                return reg.plan
            stored = store.pinned(collection, "plan")
            if stored is None:
                doc = fetch("curator", f"/internal/v1/collections/{collection}/plan", "plan", 1.0)
                if reg.plan_hash is not None and document_hash(doc) != reg.plan_hash:
                    events.add("curator changed a pinned plan (refused)")
                    raise HTTPException(
                        409, f"the curator changed the published plan of {collection!r}; the pinned one stands"
                    )
                check_plan(reg, collection, doc, checked=False)
                doc = countersigned(reg, collection, "plan", doc)
                stored = store.pin(collection, "plan", doc)
                if stored is None:  # one process after a restart: only the pinned plan's hash is kept
                    events.add("curator changed a pinned plan (refused)")
                    raise HTTPException(
                        409, f"the curator changed the published plan of {collection!r}; the pinned one stands"
                    )
                if stored != doc:
                    events.add("another replica pinned another plan (its plan stands)")
            check_plan(reg, collection, stored)  # the stored one too: the store is not trusted for it
            reg.plan, reg.plan_hash = stored, document_hash(stored)
            store.register(collection, reg.signed_spec, policy_of(reg), reg.expires - time.monotonic())
            log.info("plan of %r pinned", collection)
        return stored

    @app.get("/v1/collections/{collection}/plan", tags=["public"])
    def get_plan(collection: str) -> dict[str, Any]:
        """The curator's published plan, signed by the curator (404 until decided; relayed). The
        first plan relayed is checked (:func:`sdckit.protocol.verify_plan`: 409 with the reason
        if refused) and pinned: a later change by the curator is never relayed."""
        reg = collection_of(collection)
        if reg.plan is None:
            return pinned_plan(reg, collection)
        try:  # visible: the curator tried to change a published plan
            latest = fetch("curator", f"/internal/v1/collections/{collection}/plan", "plan", 5.0)
            if latest.get("document") != reg.plan.get("document"):
                events.add("curator changed a pinned plan (ignored)")
        except HTTPException:
            pass
        return reg.plan

    @app.get("/v1/collections/{collection}/pairs", tags=["public"])
    def get_pairs(collection: str) -> dict[str, Any]:
        """The curator's pair queries of the middle round, signed by the curator (404 until asked):
        checked (:func:`sdckit.protocol.verify_pairs`, 409 with the reason if refused) and pinned
        like the plan, so every replica relays the same queries."""
        reg = collection_of(collection)
        pair_queries(reg, collection)
        assert reg.pairs_doc is not None
        return reg.pairs_doc

    def check_pairs(reg: Registered, collection: str, doc: dict[str, Any], *, checked: bool = True) -> PairQueries:
        try:
            queries = PairQueries.from_dict(verify_document(doc, owners["curator"], kind="pairs", signer="curator"))
        except (MalformedMessageError, SdcError) as err:
            raise HTTPException(502, f"the curator's pair queries are not valid: {err}") from None
        if queries.collection != collection or not queries.queries:
            raise HTTPException(409, f"collection {collection!r} has no pair round (no pair asked)")
        try:
            verify_pairs(queries, reg.spec, n_users=admitted(collection))
        except PlanRefusedError as err:
            events.add("pair queries refused")
            raise HTTPException(409, str(err)) from None
        if checked:
            require_check(reg, collection, "pairs", doc)
        return queries

    def pair_queries(reg: Registered, collection: str) -> None:
        """Fetch, check and pin the pair queries once (compare-and-set in the shared store, as the
        plan: the first checked queries stand on every replica)."""
        if reg.pairs is not None:
            return
        with pin_lock:
            if reg.pairs is not None:
                return
            stored = store.pinned(collection, "pairs")
            if stored is None:
                doc = fetch("curator", f"/internal/v1/collections/{collection}/pairs", "pairs", 0.0)
                check_pairs(reg, collection, doc, checked=False)
                doc = countersigned(reg, collection, "pairs", doc)
                stored = store.pin(collection, "pairs", doc)
                if stored is None:
                    raise HTTPException(
                        409, f"the curator changed the pair queries of {collection!r}; the pinned ones stand"
                    )
            reg.pairs = check_pairs(reg, collection, stored)
            reg.pairs_doc = stored

    @app.post("/v1/collections/{collection}/enrol", tags=["public"])
    def enrol(collection: str, req: EnrolRequest) -> dict[str, Any]:
        """Spend one invite per user (all or none) and blind-evaluate its token inputs (one per
        round). A request is refused whole, spending no invite, when it names more than
        ``MAX_ENROL_USERS`` users, names an invite twice, or holds an input that is not a group
        element; the evaluation runs before the invites are spent. A retry with the same blinded
        inputs is answered again (the same outputs: no new credential)."""
        reg = collection_of(collection)
        if reg.issuer is None:
            raise HTTPException(409, f"collection {collection!r} is open: no enrolment needed")
        if len(req.users) > MAX_ENROL_USERS:
            raise HTTPException(
                413,
                f"an enrolment request names at most {MAX_ENROL_USERS} users, this one {len(req.users)}; "
                "split it (no invite was spent)",
            )
        codes = [hashlib.sha256(u.invite.encode("utf-8", "surrogateescape")).digest() for u in req.users]
        if len(set(codes)) != len(codes):
            twice = next(i for i, c in enumerate(codes) if c in codes[:i])
            raise HTTPException(
                400,
                f"user {twice} names an invite already named in this request: one invite is one user "
                "(the request was refused whole; no invite was spent)",
            )
        uses = [
            (c, hashlib.sha256("|".join(u.blinded).encode()).digest())
            for c, u in zip(codes, req.users, strict=False)
        ]
        # the invites looked up first: a made-up invite costs a lookup, never a VOPRF evaluation
        problems = store.invite_problems(collection, uses)
        if problems:
            raise HTTPException(403, f"enrolment refused: {'; '.join(problems[:5])} (no VOPRF work done)")
        try:  # checked before any invite is spent
            flat = Issuer.parse([b for u in req.users for b in u.blinded])
        except MalformedMessageError as err:
            raise HTTPException(400, str(err)) from None
        for code in codes:
            if not limiter.allow(b"invite|" + code):
                raise HTTPException(429, "too many requests for one invite; wait a minute")
        # input i of each user is evaluated with round ENROL_ROUNDS[i]'s key, one batch proof per
        # round; evaluated before the invites are spent, so a failure spends none
        at = iter(flat)
        try:
            evaluated = reg.issuer.evaluate([[next(at) for _ in u.blinded] for u in req.users])
        except MalformedMessageError as err:
            raise HTTPException(400, f"{err} (no invite was spent)") from None
        problems = store.use_invites(collection, uses)
        if problems:
            raise HTTPException(403, f"enrolment refused: {'; '.join(problems[:5])}")
        return {"evaluated": evaluated, "issuer_keys": reg.issuer.public_keys}

    def check_credentials(
        issuer: Issuer, texts: list[str], round_: int
    ) -> list[Credential] | tuple[int, str]:
        """Parse, verify (VOPRF), then rate-limit the credentials of a request; off the event loop.
        Only a valid credential reaches the limiter, so random credentials cannot fill it."""
        try:
            creds = [Credential.from_text(t, round_) for t in texts[: cfg.max_batch_messages]]
        except MalformedMessageError as err:
            return 400, str(err)
        if not all(issuer.verify(c) for c in creds):
            return 403, "a credential was not issued for this collection and round"
        if len({c.id for c in creds}) != len(creds):
            return 400, "a credential appears twice in one request"
        for c in creds:
            if not limiter.allow(c.id):
                return 429, "too many requests with one credential; wait a minute"
        return creds

    def answer(h: bytes, status: int, content: dict[str, Any]) -> JSONResponse:
        with recent_lock:
            recent[h] = (status, content)
            while len(recent) > _RECENT_BODIES:
                recent.popitem(last=False)
        return JSONResponse(content, status_code=status)

    @app.post("/v1/collections/{collection}/rounds/{round_}/messages", status_code=202, tags=["public"])
    async def submit(collection: str, round_: int, request: Request) -> Any:
        """Submit complete submissions (round 1: one message per feature, round 2: one message, per
        user), each message of the round's exact length, with one credential per user in the
        ``sdckit-credential`` header unless the collection is open. All or nothing: 202 means
        stored durably and the credentials spent; a retry of the same body is answered 202 again."""
        reg = collection_of(collection)
        check_round(round_)
        body = await read_body(request, cfg.max_body_bytes, events)
        if round_ == PAIR_ROUND and reg.pairs is None:
            await run_in_threadpool(pair_queries, reg, collection)
        h = hashlib.sha256(body + request.headers.get(CREDENTIAL_HEADER, "").encode()).digest()
        with recent_lock:
            seen = recent.get(h)
        if seen is not None:  # a replayed body costs a hash, never a decryption
            events.add("replayed body")
            if seen[0] == 202:
                await run_in_threadpool(store.duplicate, collection, round_, int(seen[1]["accepted"]))
                return JSONResponse({**seen[1], "new": 0}, status_code=202)
            return JSONResponse(seen[1], status_code=seen[0])
        try:
            outer = unpack_batch(body, max_messages=cfg.max_batch_messages)
        except MalformedMessageError as err:
            await run_in_threadpool(store.reject, collection, round_, 1)
            return answer(h, 400, {"detail": f"not a batch of messages: {err}"})
        length = reg.outer_length(round_)
        wrong = [i for i, m in enumerate(outer) if len(m) != length]
        if wrong:
            await run_in_threadpool(store.reject, collection, round_, len(outer))
            detail = (
                f"message {wrong[0]} has {len(outer[wrong[0]])} bytes; round {round_} messages have {length}"
            )
            return answer(h, 400, {"detail": detail})
        per_user = reg.per_user(round_)
        creds: list[Credential] = []
        if reg.issuer is not None:
            texts = [t for t in request.headers.get(CREDENTIAL_HEADER, "").split(",") if t.strip()]
            if not texts:
                raise HTTPException(
                    401,
                    f"collection {collection!r} admits enrolled users only: send "
                    f"one credential per user in the {CREDENTIAL_HEADER} header",
                )
            checked = await run_in_threadpool(check_credentials, reg.issuer, texts, round_)
            if isinstance(checked, tuple):
                status_, detail = checked
                if status_ != 403:  # 400 and 429 are not remembered: the same body may come back
                    raise HTTPException(status_, detail)
                return answer(h, status_, {"detail": detail})
            creds = checked
            users = len(creds)
        else:
            users = len(outer) // per_user
        if len(outer) != users * per_user or not outer:
            await run_in_threadpool(store.reject, collection, round_, len(outer))
            return answer(
                h,
                400,
                {
                    "detail": f"{len(outer)} message(s) for {users} user(s); a complete "
                    f"submission of round {round_} has {per_user} per user"
                },
            )
        if round_ == 2 and reg.plan is None:  # round 2 only on a checked, pinned plan (after the
            await run_in_threadpool(pinned_plan, reg, collection)  # cheap checks: no junk to the curator)
        if round_ == 2 and reg.plan is not None and not reg.plan.get("document", {}).get("columns"):
            held = reg.plan["document"].get("evidence", {}).get("held") or "the plan releases no column"
            events.add("round 2 held (empty plan)")
            return answer(h, 409, {"detail": f"round 2 of {collection!r} is held: {held}"})
        ids = [c.id for c in creds]
        if ids:
            status = await run_in_threadpool(store.spent_status, collection, round_, ids, h)
            if status == "used":
                return answer(h, 409, {"detail": "a credential was already used in this round"})
            if status == "replay":
                return answer(h, 202, {"accepted": len(outer), "new": 0, "users": users})
            # "retry" (replicas): spent by this very body but not known pooled (a crash between
            # the two commits): pooled again below, never lost
        # HPKE opens are CPU work: off the event loop, so a large batch does not stall other requests
        # round 2: the pinned plan's hash is in the outer label, so a row sealed for another plan
        # does not open: refused here, before its credential is spent
        bound = reg.plan_hash if round_ == 2 else None
        inner, error = await run_in_threadpool(_strip_all, shuffler, outer, collection, round_, bound)
        if error is not None:
            await run_in_threadpool(store.reject, collection, round_, len(outer) - len(inner))
            return answer(h, 400, {"detail": error})
        if round_ != 2 and reg.spec.count_check:  # each user's second half is sealed to the analyst
            f = reg.witnessed(round_)
            inner = [WITNESS_TAG + m if (i % (2 * f)) >= f else m for i, m in enumerate(inner)]
        try:
            new = await run_in_threadpool(
                lambda: store.add(collection, round_, inner, users=users, spend=ids, body=h)
            )
        except KeyError:
            return answer(h, 409, {"detail": "a credential was already used in this round"})
        except PoolingElsewhereError:  # not cached in `recent`: the retry must find it pooled
            return JSONResponse(
                {"detail": "this submission is being pooled by another replica; retry"},
                status_code=503,
                headers={"retry-after": "1"},
            )
        return answer(h, 202, {"accepted": len(inner), "new": new, "users": users})

    # ------------------------------------------------------------------------------- admin routes

    @app.put("/admin/v1/collections/{collection}", dependencies=[admin], tags=["admin"])
    def register(collection: str, req: RegisterRequest) -> dict[str, Any]:
        """Admit a collection: its spec is fetched from the curator and its signature checked."""
        check_id(collection)
        cache.pop(f"curator/internal/v1/collections/{collection}", None)
        signed = fetch("curator", f"/internal/v1/collections/{collection}", "spec", 0.0)
        old = registry.get(collection)
        remaining = old.expires - time.monotonic() if old else cfg.pool_ttl_seconds
        reg = registered(collection, signed, {"enrolment": req.enrolment}, remaining)
        if reg.spec.suite != key.suite:
            raise HTTPException(422, f"the shuffler's key is {key.suite}; the spec asks for {reg.spec.suite}")
        if old is not None and old.spec != reg.spec:
            raise HTTPException(
                409,
                f"collection {collection!r} is registered with another spec; its features, floors and keys are "
                "fixed (rotate a key by creating a new collection, a visible event)",
            )
        try:  # every key pinned, or a party could hand each device its own key
            reg.spec.require_pinned("the shuffler")
        except UnpinnedSpecError as err:
            raise HTTPException(422, str(err)) from None
        pinned = dict(reg.spec.keys)
        if pinned.get("shuffler", key.public_key().to_text()) != key.public_key().to_text():
            raise HTTPException(
                409, f"the spec of {collection!r} pins another shuffler key than this shuffler's"
            )
        for role in ("curator", "analyst"):  # the owners' keys as relayed must be the pinned ones
            if role in pinned:
                cache.pop(f"{role}/internal/v1/keys", None)
                relayed = fetch(role, "/internal/v1/keys", "keys", 0.0)["document"].get("public_key")
                if relayed != pinned[role]:
                    raise HTTPException(
                        409, f"the {role}'s key is not the one the spec of {collection!r} pins: refused"
                    )
        if old is not None:
            reg.plan, reg.plan_hash, reg.pairs, reg.pairs_doc = old.plan, old.plan_hash, old.pairs, old.pairs_doc
        policy = policy_of(reg)
        store.register(collection, signed, policy, remaining)
        registry[collection] = reg
        log.info("collection %r registered (%s)", collection, req.enrolment)
        return {"collection": collection, "enrolment": req.enrolment, "expires_in": remaining}

    @app.post("/admin/v1/collections/{collection}/invites", dependencies=[admin], tags=["admin"])
    def invites(collection: str, req: InviteRequest) -> dict[str, Any]:
        """Mint one-time invites (hand one to each real participant; only their hashes are kept)."""
        reg = collection_of(collection)
        if reg.issuer is None:
            raise HTTPException(409, f"collection {collection!r} is open: it has no invites")
        codes = [secrets.token_urlsafe(18) for _ in range(req.n)]
        store.add_invites(collection, [hashlib.sha256(c.encode()).digest() for c in codes])
        return {"collection": collection, "invites": codes}

    @app.post(
        "/admin/v1/collections/{collection}/rounds/{round_}/flush", dependencies=[admin], tags=["admin"]
    )
    def flush(collection: str, round_: int) -> dict[str, int]:
        """Close a round: forward its pool below the batch threshold, if it holds at least
        ``min_batch`` users (otherwise held or dropped, per ``at_close``)."""
        reg = registry.get(check_id(collection))  # also an expired one: its pool is still forwarded
        if reg is None:
            raise HTTPException(404, f"no collection {collection!r} is registered at this shuffler")
        store.flush(collection, check_round(round_))
        if round_ == PAIR_ROUND and reg.pairs is None:
            # after a restart the queries are fetched again here, so a pool whose users have all
            # submitted is not held for ever waiting for a submission to fetch them
            try:
                pair_queries(reg, collection)
            except HTTPException as err:
                log.warning(
                    "round %d of %r: pair queries unavailable (%s); pool held", round_, collection, err.detail
                )
        return store.stats(collection, round_)

    @app.get("/admin/v1/collections/{collection}/rounds/{round_}", dependencies=[admin], tags=["admin"])
    def round_stats(collection: str, round_: int) -> dict[str, int]:
        """Counters of a round: received, duplicates, rejected, forwarded, dropped, users, pooled,
        flushed, refusals, quarantined."""
        collection_of(collection)
        return store.stats(collection, check_round(round_))

    @app.get("/admin/v1/quarantine", dependencies=[admin], tags=["admin"])
    def quarantine() -> dict[str, Any]:
        """Pools the next hop refused ``quarantine_after`` times in a row (no longer retried)."""
        return {"quarantined": store.quarantined()}

    @app.post(
        "/admin/v1/collections/{collection}/rounds/{round_}/retry", dependencies=[admin], tags=["admin"]
    )
    def retry(collection: str, round_: int) -> dict[str, int]:
        """Take a pool out of quarantine: the forwarder tries it again."""
        collection_of(collection)
        store.set_quarantine(collection, check_round(round_), False)
        return store.stats(collection, round_)

    @app.delete(
        "/admin/v1/collections/{collection}/rounds/{round_}/pool", dependencies=[admin], tags=["admin"]
    )
    def drop(collection: str, round_: int) -> dict[str, int]:
        """Drop a round's pooled messages (counted as dropped), e.g. a quarantined pool."""
        collection_of(collection)
        n = store.drop_pool(collection, check_round(round_))
        log.info("round %d of %r: %d pooled message(s) dropped by the admin", round_, collection, n)
        return store.stats(collection, round_)

    @app.get("/admin/v1/state", dependencies=[admin], tags=["admin"])
    def state() -> dict[str, Any]:
        """Rows per table of the store, and collections registered."""
        return {"tables": store.table_sizes(), "collections": sorted(registry)}

    app.state.store = store
    app.state.forwarder = forwarder
    return app


def _strip_all(
    shuffler: Shuffler, outer: list[bytes], collection: str, round_: int, plan_sha256: str | None = None
) -> tuple[list[bytes], str | None]:
    """Strip every message, stopping at the first that does not open (then: what went wrong)."""
    inner = []
    for i, m in enumerate(outer):
        try:
            inner.append(shuffler.strip(m, collection, round_, plan_sha256=plan_sha256))
        except MalformedMessageError as err:
            return inner, f"message {i} of {len(outer)}: {err}"
    return inner, None
