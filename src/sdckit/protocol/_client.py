"""The user's device over HTTP. It talks to the shuffler only: the curator's and analyst's keys,
the spec and the plan come relayed by the shuffler and signed by their owners, whose Ed25519
verification keys the device pins (``key.json.verify`` of each)."""

from __future__ import annotations

import asyncio
import random
import socket
import time
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

import httpx

from sdckit.errors import AuthError, MalformedMessageError, ParameterError, ProtocolError
from sdckit.protocol._crypto import PublicKey
from sdckit.protocol._enrol import ENROL_ROUNDS, Credential, Enrolment
from sdckit.protocol._planning import check_own_values, verify_pairs, verify_plan
from sdckit.protocol._recount import verify_countersigned
from sdckit.protocol._signing import verify_document, verify_key_from_text
from sdckit.protocol._spec import PAIR_ROUND, CollectionSpec, PairQueries, PlanRefusedError, PublishedPlan
from sdckit.protocol._wire import encode_value, pack_batch
from sdckit.protocol.parties import User

BATCH_MEDIA = "application/octet-stream"
CREDENTIAL_HEADER = "sdckit-credential"
RETRY_STATUS = frozenset({429, 500, 502, 503, 504})
"""Answers worth retrying: overload, a server error (disk full, a restart), a proxy's gateway errors."""
NODELAY = [(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)]
"""Socket option for every client: send a request body without waiting for the header's ACK (Nagle)."""
_JITTER = random.SystemRandom()


def backoff(attempt: int, *, base: float = 0.1, cap: float = 4.0) -> float:
    """Full-jitter exponential back-off: uniform in [0, min(cap, base 2^attempt)] seconds, so many
    devices retrying after one restart do not arrive together."""
    return _JITTER.uniform(0.0, min(cap, base * 2**attempt))


def _raise_for(r: httpx.Response, what: str) -> None:
    if r.status_code // 100 == 2:
        return
    try:
        detail = r.json().get("detail", r.text)
    except ValueError:
        detail = r.text
    if r.status_code in (401, 403):
        raise AuthError(f"{what}: {detail}")
    if r.status_code == 400:
        raise MalformedMessageError(f"{what}: {detail}")
    if r.status_code == 422:
        raise ParameterError(f"{what}: {detail}")
    raise ProtocolError(f"{what}: HTTP {r.status_code}: {detail}")


def submit_url(shuffler_url: str, collection: str, round_: int) -> str:
    """Where users post their messages for a round."""
    return f"{shuffler_url.rstrip('/')}/v1/collections/{collection}/rounds/{round_}/messages"


def credential_header(credentials: Sequence[Credential]) -> dict[str, str]:
    return {CREDENTIAL_HEADER: ",".join(c.to_text() for c in credentials)} if credentials else {}


class Client:
    """A user's device, talking to the shuffler only.

    Parameters
    ----------
    shuffler_url : Base URL of the shuffler.
    collection : The collection id.
    curator_verify_key, analyst_verify_key : The owners' Ed25519 verification keys
        (``ed25519:...``), pinned out of band; every key, spec and plan relayed by the shuffler is
        checked against them (``analyst_verify_key`` is needed for round 2 only).
    invite : A one-time invite for a collection that admits enrolled users (:meth:`enrol`).
    timeout : Seconds per HTTP request.
    join_pairs : False: this device opts out of the pair round (:meth:`send_pairs` sends nothing
        and fetches nothing); the curator's pair table then counts fewer users and is left out of
        the plan, which rests on the single columns (issue 37).
    require_count_check : True (the default): refuse a collection whose signed spec does not set
        ``count_check`` (the analyst recounts and co-signs every plan and pair query's counts,
        issue 37; without it a curator that lies about its counts can single this device out).
        False: take part in such a collection too. In a collection that sets it, the co-signature
        is always required.
    retry_window : Seconds during which a connection error or a 429/500/502/503/504 answer is
        retried with full-jitter exponential back-off (0.1 s doubling, at most 4 s). Safe: a
        retried submission is recognised (same body, same credential) and counted once.

    Examples
    --------
    A device's whole session (services running)::

        client = Client(shuffler_url=S, collection="adult", curator_verify_key=C, analyst_verify_key=A,
                        invite="...")
        client.send_round1({"age": 39, "sex": "Male", "race": "White"})
        if client.pairs() is not None:        # the optional pair round, if the curator asks
            client.send_pairs({"age": 39, "sex": "Male", "race": "White"})
        plan = client.plan()                  # None until the curator decided
        client.send_round2({"age": 39, "sex": "Male", "race": "White"}, plan=plan)
    """

    def __init__(
        self,
        *,
        shuffler_url: str,
        collection: str,
        curator_verify_key: str,
        analyst_verify_key: str | None = None,
        invite: str | None = None,
        timeout: float = 30.0,
        retry_window: float = 30.0,
        join_pairs: bool = True,
        require_count_check: bool = True,
    ) -> None:
        self.shuffler_url = shuffler_url.rstrip("/")
        self.collection = collection
        self._owners = {"curator": verify_key_from_text(curator_verify_key)}
        if analyst_verify_key:
            self._owners["analyst"] = verify_key_from_text(analyst_verify_key)
        self.invite = invite
        self.timeout = timeout
        self.retry_window = retry_window
        self.join_pairs = join_pairs
        self.require_count_check = require_count_check
        self._http = httpx.Client(timeout=timeout, transport=httpx.HTTPTransport(socket_options=NODELAY))
        self._user: User | None = None
        self._terms: dict[str, Any] | None = None
        self._spec: CollectionSpec | None = None
        self.credentials: dict[int, Credential] = {}

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def _request(self, method: str, url: str, **kw: Any) -> httpx.Response:
        deadline = time.monotonic() + self.retry_window
        attempt = 0
        while True:
            try:
                r = self._http.request(method, url, **kw)
                if r.status_code not in RETRY_STATUS or time.monotonic() >= deadline:
                    return r
            except httpx.TransportError:
                if time.monotonic() >= deadline:
                    raise ProtocolError(
                        f"cannot reach {url} within {self.retry_window:.0f} s ({attempt + 1} attempts)"
                    ) from None
            time.sleep(min(backoff(attempt), max(0.0, deadline - time.monotonic()) + 0.01))
            attempt += 1

    def _owner_doc(self, path: str, kind: str, role: str) -> dict[str, Any] | None:
        r = self._request("GET", f"{self.shuffler_url}{path}")
        if r.status_code == 404 and kind in ("plan", "pairs"):  # not published yet
            return None
        if r.status_code == 409 and kind in ("plan", "pairs"):  # the shuffler refused to relay it

            try:
                detail = r.json().get("detail", r.text)
            except ValueError:
                detail = r.text
            raise PlanRefusedError(f"{kind} of {self.collection!r}: {detail}")
        _raise_for(r, f"{kind} of {self.collection!r}")
        if role not in self._owners:
            raise ParameterError(f"give {role}_verify_key= to check the {role}'s {kind}")
        signed = r.json()
        doc = verify_document(signed, self._owners[role], kind=kind, signer=role)
        if kind in ("plan", "pairs") and self.spec().count_check:
            # counts a second party checks (issue 37): the analyst recounted them from the round-1
            # copies sealed to it and co-signed exactly this document, or nothing is sent for it
            if "analyst" not in self._owners:
                raise ParameterError(f"give analyst_verify_key= to check the analyst's co-signature of the {kind}")
            verify_countersigned(signed.get("check"), self._owners["analyst"], kind, self.collection, doc)
        return doc

    def public_key(self, role: str) -> PublicKey:
        """The HPKE public key of ``role`` for this collection: the key the curator's signed spec
        pins (:attr:`CollectionSpec.keys`), checked against the key the shuffler relays (the
        shuffler's own, or the curator's or analyst's signed by its owner). A relayed key that
        differs from the pinned one is refused (:class:`ProtocolError`): one key per party and
        collection, so no party can tell devices apart by giving them different keys."""
        if role == "shuffler":
            r = self._request("GET", f"{self.shuffler_url}/v1/keys")
            _raise_for(r, "keys of the shuffler")
            relayed = str(r.json()["document"]["public_key"])
        else:
            doc = self._owner_doc(f"/v1/keys/{role}", "keys", role)
            assert doc is not None
            if doc.get("role") != role:
                raise MalformedMessageError(f"the relayed keys are the {doc.get('role')}'s, not the {role}'s")
            relayed = str(doc["public_key"])
        pinned = self.spec().keys.get(role)
        if pinned is not None and relayed != pinned:
            raise ProtocolError(
                f"the {role}'s key relayed for {self.collection!r} is not the one its signed spec pins: "
                "refused (a key per device would let a party tell devices apart); nothing is sent"
            )
        return PublicKey.from_text(pinned or relayed)

    def _collection(self) -> tuple[CollectionSpec, dict[str, Any]]:
        if self._spec is None or self._terms is None:
            r = self._request("GET", f"{self.shuffler_url}/v1/collections/{self.collection}")
            _raise_for(r, f"collection {self.collection!r}")
            body = r.json()
            spec = CollectionSpec.from_dict(
                verify_document(body.get("spec"), self._owners["curator"], kind="spec", signer="curator")
            )
            if spec.id != self.collection:
                raise MalformedMessageError(f"the relayed spec is for {spec.id!r}")
            spec.require_pinned("this device")  # nothing is sealed to a key the spec leaves open
            if self.require_count_check and not spec.count_check:
                raise PlanRefusedError(
                    f"collection {self.collection!r} is refused: its spec does not have the analyst check "
                    "the curator's counts (count_check), and this device requires it; nothing is sent "
                    "(a device that accepts the risk passes require_count_check=False)"
                )
            terms = body.get("enrolment", {}).get("document", {})
            self._spec, self._terms = spec, dict(terms)
        return self._spec, self._terms

    def spec(self) -> CollectionSpec:
        """The collection's spec (signed by the curator, relayed by the shuffler)."""
        return self._collection()[0]

    def plan(self) -> PublishedPlan | None:
        """The published plan (signed by the curator), checked (:func:`verify_plan`: the spec's
        floors, and its bound recomputed from the counts published with it), or None while the
        curator has not decided. A refused plan raises :class:`PlanRefusedError` saying why."""
        doc = self._owner_doc(f"/v1/collections/{self.collection}/plan", "plan", "curator")
        if doc is None:
            return None
        plan = PublishedPlan.from_dict(doc)
        verify_plan(plan, self.spec())
        return plan

    def pairs(self) -> PairQueries | None:
        """The published pair queries of the middle round (signed by the curator), checked
        (:func:`verify_pairs`), or None. Refused queries raise :class:`PlanRefusedError`."""
        doc = self._owner_doc(f"/v1/collections/{self.collection}/pairs", "pairs", "curator")
        if doc is None:
            return None
        queries = PairQueries.from_dict(doc)
        verify_pairs(queries, self.spec())
        return queries

    def enrol(self, invite: str | None = None) -> dict[int, Credential]:
        """Trade a one-time invite for anonymous credentials of round 1, round 2 and the pair
        round (blind evaluation: the shuffler cannot link a credential to the invite it came from).
        The pair round is decided after round 1, so a device enrols for it in any case."""
        invite = invite or self.invite
        if not invite:
            raise ParameterError(f"collection {self.collection!r} admits enrolled users: give invite=")
        _, terms = self._collection()
        keys = terms.get("issuer_keys")
        if not isinstance(keys, dict):
            raise MalformedMessageError(
                f"the shuffler's enrolment terms for {self.collection!r} carry no issuer keys per round"
            )
        pending = Enrolment(self.collection, ENROL_ROUNDS)
        r = self._request(
            "POST",
            f"{self.shuffler_url}/v1/collections/{self.collection}/enrol",
            json={"users": [{"invite": invite, "blinded": pending.blinded[0]}]},
        )
        _raise_for(r, "enrolment")
        self.credentials = pending.finish(dict(r.json().get("evaluated") or {}), keys)[0]
        return self.credentials

    def user(self) -> User:
        """The :class:`User` for this collection (keys and spec fetched once)."""
        if self._user is None:
            self._user = User(
                self.spec(),
                shuffler_key=self.public_key("shuffler"),
                curator_key=self.public_key("curator"),
                analyst_key=self.public_key("analyst") if "analyst" in self._owners else None,
            )
        return self._user

    def submit(
        self, round_: int, messages: Sequence[bytes], credentials: Sequence[Credential] | None = None
    ) -> dict[str, Any]:
        """Post sealed messages to the shuffler (retrying); returns its acknowledgement. Without
        ``credentials``, the device's own credential for the round is sent when the collection
        admits enrolled users (enrolling first with ``invite`` if needed)."""
        if credentials is None:
            credentials = []
            if self._collection()[1].get("enrolment") == "tokens":
                if round_ not in self.credentials:
                    self.enrol()
                credentials = [self.credentials[round_]]
        r = self._request(
            "POST",
            submit_url(self.shuffler_url, self.collection, round_),
            content=pack_batch(messages),
            headers={"content-type": BATCH_MEDIA, **credential_header(credentials)},
        )
        _raise_for(r, f"round {round_} submission")
        return dict(r.json())

    def send_round1(self, row: Mapping[str, Any]) -> dict[str, Any]:
        """Seal and send one message per feature of the collection."""
        return self.submit(1, self.user().round1(row))

    def send_pairs(self, row: Mapping[str, Any], *, queries: PairQueries | None = None) -> dict[str, Any] | None:
        """Seal and send the middle round: one message per published pair query, a value the
        curator redacted sent as the redaction marker (fetches the signed queries when not given).
        Only in a collection whose curator published pair queries. None, sending nothing, for a
        device that opted out (``join_pairs=False``)."""
        if not self.join_pairs:
            return None
        queries = queries or self.pairs()
        if queries is None:
            raise ProtocolError(
                f"the curator of {self.collection!r} published no pair queries (no pair round, or not yet)"
            )
        verify_pairs(queries, self.spec())
        # a value the published counts do not list is rare (merged): sent redacted whatever the
        # queries' redact lists say
        redact = {
            c: tuple(
                sorted(
                    {
                        *q.redact.get(c, ()),
                        *(
                            [encode_value(row[c])]
                            if encode_value(row[c]) not in queries.evidence.get(c, {})
                            else []
                        ),
                    }
                )
            )
            for q in queries.queries
            for c in q.columns
        }
        queries = replace(
            queries,
            queries=tuple(
                replace(q, redact={c: redact[c] for c in q.columns if redact[c]}) for q in queries.queries
            ),
        )
        return self.submit(PAIR_ROUND, self.user().pairs(row, queries))

    def send_round2(self, row: Mapping[str, Any], *, plan: PublishedPlan | None = None) -> dict[str, Any]:
        """Seal and send the one round-2 message (fetches the plan when not given)."""
        plan = plan or self.plan()
        if plan is None:
            raise ProtocolError(f"no plan is published yet for {self.collection!r}; wait for the curator")
        verify_plan(plan, self.spec())  # also a plan given by the caller: nothing is sent for a refused one
        check_own_values(plan, row)  # counts that leave this device's own value out are not its users'
        if not plan.columns:  # nothing to release: the shuffler holds the round; say why
            reasons = "; ".join(sorted(set(plan.excluded.values()))) or plan.method
            raise PlanRefusedError(f"the plan of {self.collection!r} releases no column ({reasons}); nothing is sent")
        return self.submit(2, [self.user().round2(row, plan)])


async def submit_async(
    http: httpx.AsyncClient,
    url: str,
    messages: Sequence[bytes],
    *,
    credentials: Sequence[Credential] = (),
    retry_window: float = 60.0,
) -> dict[str, Any]:
    """Asynchronous :meth:`Client.submit` for drivers of many simulated devices."""
    body = pack_batch(messages)
    headers = {"content-type": BATCH_MEDIA, **credential_header(credentials)}
    deadline = time.monotonic() + retry_window
    attempt = 0
    while True:
        try:
            r = await http.post(url, content=body, headers=headers)
            if r.status_code not in RETRY_STATUS or time.monotonic() >= deadline:
                _raise_for(r, "submission")
                return dict(r.json())
        except httpx.TransportError:
            if time.monotonic() >= deadline:
                raise ProtocolError(
                    f"cannot reach the shuffler at {url} within {retry_window:.0f} s"
                ) from None
        await asyncio.sleep(backoff(attempt))
        attempt += 1
