"""The user's device over HTTP: fetch the public keys, spec and plan; submit both rounds."""

from __future__ import annotations

import asyncio
import socket
import time
from collections.abc import Mapping, Sequence
from typing import Any

import httpx

from sdckit.errors import AuthError, MalformedMessageError, ParameterError, ProtocolError
from sdckit.protocol._crypto import PublicKey
from sdckit.protocol._spec import CollectionSpec, PublishedPlan
from sdckit.protocol._wire import pack_batch
from sdckit.protocol.parties import User

BATCH_MEDIA = "application/octet-stream"
_RETRY_STATUS = {429, 502, 503, 504}
NODELAY = [(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)]
"""Socket option for every client: send a request body without waiting for the header's ACK (Nagle)."""


def _raise_for(r: httpx.Response, what: str) -> None:
    if r.status_code // 100 == 2:
        return
    try:
        detail = r.json().get("detail", r.text)
    except ValueError:
        detail = r.text
    if r.status_code == 401:
        raise AuthError(f"{what}: {detail}")
    if r.status_code == 400:
        raise MalformedMessageError(f"{what}: {detail}")
    if r.status_code == 422:
        raise ParameterError(f"{what}: {detail}")
    raise ProtocolError(f"{what}: HTTP {r.status_code}: {detail}")


def submit_url(shuffler_url: str, collection: str, round_: int) -> str:
    """Where users post their messages for a round."""
    return f"{shuffler_url.rstrip('/')}/v1/collections/{collection}/rounds/{round_}/messages"


def _backoff(attempt: int) -> float:
    return float(min(5.0, 0.1 * 2**attempt))


class Client:
    """A user's device talking to the three services.

    Parameters
    ----------
    shuffler_url, curator_url, analyst_url : Base URLs of the services (``analyst_url`` for its
        public key, needed in round 2).
    collection : The collection id.
    timeout : Seconds per HTTP request.
    retries : Attempts after the first on a connection error or a 429/502/503/504 answer, with
        exponential back-off (0.1 s doubling, at most 5 s). Safe: the shuffler and the receivers
        deduplicate, so a retried message is counted once.

    Examples
    --------
    A device's whole session (services running)::

        client = Client(shuffler_url=S, curator_url=C, analyst_url=A, collection="adult")
        client.send_round1({"age": 39, "sex": "Male", "race": "White"})
        plan = client.plan()                  # None until the curator decided
        client.send_round2({"age": 39, "sex": "Male", "race": "White"}, plan=plan)
    """

    def __init__(
        self,
        *,
        shuffler_url: str,
        curator_url: str,
        collection: str,
        analyst_url: str | None = None,
        timeout: float = 30.0,
        retries: int = 5,
    ) -> None:
        self.shuffler_url = shuffler_url
        self.curator_url = curator_url
        self.analyst_url = analyst_url
        self.collection = collection
        self.timeout = timeout
        self.retries = retries
        self._http = httpx.Client(timeout=timeout, transport=httpx.HTTPTransport(socket_options=NODELAY))
        self._user: User | None = None

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def _get(self, url: str) -> httpx.Response:
        for attempt in range(self.retries + 1):
            try:
                r = self._http.get(url)
                if r.status_code not in _RETRY_STATUS or attempt == self.retries:
                    return r
            except httpx.TransportError:
                if attempt == self.retries:
                    raise ProtocolError(f"cannot reach {url} after {self.retries + 1} attempts") from None
            time.sleep(_backoff(attempt))
        raise AssertionError("unreachable")

    def public_key(self, base_url: str) -> PublicKey:
        """The HPKE public key a service publishes at ``/v1/keys``."""
        r = self._get(f"{base_url.rstrip('/')}/v1/keys")
        _raise_for(r, f"keys of {base_url}")
        return PublicKey.from_text(r.json()["public_key"])

    def spec(self) -> CollectionSpec:
        r = self._get(f"{self.curator_url.rstrip('/')}/v1/collections/{self.collection}")
        _raise_for(r, f"collection {self.collection!r}")
        return CollectionSpec.from_dict(r.json())

    def plan(self) -> PublishedPlan | None:
        """The published plan, or None while the curator has not decided."""
        r = self._get(f"{self.curator_url.rstrip('/')}/v1/collections/{self.collection}/plan")
        if r.status_code == 404:
            return None
        _raise_for(r, f"plan of {self.collection!r}")
        return PublishedPlan.from_dict(r.json())

    def user(self) -> User:
        """The :class:`User` for this collection (keys and spec fetched once)."""
        if self._user is None:
            self._user = User(
                self.spec(),
                shuffler_key=self.public_key(self.shuffler_url),
                curator_key=self.public_key(self.curator_url),
                analyst_key=self.public_key(self.analyst_url) if self.analyst_url else None,
            )
        return self._user

    def submit(self, round_: int, messages: Sequence[bytes]) -> dict[str, Any]:
        """Post sealed messages to the shuffler (retrying); returns its acknowledgement."""
        url = submit_url(self.shuffler_url, self.collection, round_)
        body = pack_batch(messages)
        for attempt in range(self.retries + 1):
            try:
                r = self._http.post(url, content=body, headers={"content-type": BATCH_MEDIA})
                if r.status_code not in _RETRY_STATUS or attempt == self.retries:
                    _raise_for(r, f"round {round_} submission")
                    return dict(r.json())
            except httpx.TransportError:
                if attempt == self.retries:
                    raise ProtocolError(
                        f"cannot reach the shuffler at {url} after {self.retries + 1} attempts"
                    ) from None
            time.sleep(_backoff(attempt))
        raise AssertionError("unreachable")

    def send_round1(self, row: Mapping[str, Any]) -> dict[str, Any]:
        """Seal and send one message per feature of the collection."""
        return self.submit(1, self.user().round1(row))

    def send_round2(self, row: Mapping[str, Any], *, plan: PublishedPlan | None = None) -> dict[str, Any]:
        """Seal and send the one round-2 message (fetches the plan when not given)."""
        plan = plan or self.plan()
        if plan is None:
            raise ProtocolError(f"no plan is published yet for {self.collection!r}; wait for the curator")
        return self.submit(2, [self.user().round2(row, plan)])


async def submit_async(
    http: httpx.AsyncClient, url: str, messages: Sequence[bytes], *, retries: int = 8
) -> dict[str, Any]:
    """Asynchronous :meth:`Client.submit` for drivers of many simulated devices."""
    body = pack_batch(messages)
    for attempt in range(retries + 1):
        try:
            r = await http.post(url, content=body, headers={"content-type": BATCH_MEDIA})
            if r.status_code not in _RETRY_STATUS or attempt == retries:
                _raise_for(r, "submission")
                return dict(r.json())
        except httpx.TransportError:
            if attempt == retries:
                raise ProtocolError(
                    f"cannot reach the shuffler at {url} after {retries + 1} attempts"
                ) from None
        await asyncio.sleep(_backoff(attempt))
    raise AssertionError("unreachable")
