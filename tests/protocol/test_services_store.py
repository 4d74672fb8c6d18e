"""The shuffler's store, the same tests on both backends (SQLite alone; PostgreSQL shared by
replicas with a local SQLite pool), and what only replicas need: exactly-once across two stores on
one PostgreSQL database, a retry after a crash between spend and pool, a round closed for all."""

from __future__ import annotations

import hashlib
import logging
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest

from sdckit.protocol import CollectionSpec, unpack_batch
from sdckit.protocol.services import ServiceConfig, ShufflerStore
from sdckit.protocol.services._common import EventCounter
from sdckit.protocol.services._pgstore import CLAIM_SECONDS, PostgresShufflerStore, open_shuffler_store
from sdckit.protocol.services._shuffler import Registered, _Forwarder
from sdckit.protocol.services._store import PoolingElsewhereError

Opener = Callable[[str], ShufflerStore]


@pytest.fixture(params=["sqlite", "postgresql"])
def open_store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Opener]:
    """``open_store(name)``: a replica's store (its own SQLite file ``name``); with PostgreSQL all
    stores of one test share one fresh database."""
    url = request.getfixturevalue("postgres_url") if request.param == "postgresql" else ""
    opened: list[ShufflerStore] = []

    def open_(name: str = "a") -> ShufflerStore:
        opened.append(open_shuffler_store(tmp_path / f"{name}.sqlite3", url=url))
        return opened[-1]

    yield open_
    for s in opened:
        s.close()


def _h(text: str) -> bytes:
    return hashlib.sha256(text.encode()).digest()


def test_pool_counters_match_the_pool(open_store: Opener) -> None:
    store = open_store("a")
    assert store.add("c", 1, [b"a", b"b", b"c"], users=3) == 3
    assert store.add("c", 1, [b"a", b"d"], users=1) == 1  # content keys: an identical message is a no-op
    assert store.due() == [("c", 1, 4, False)]
    taken = store.take("c", 1)
    assert [i for i, _ in taken] == sorted(hashlib.sha256(m).digest() for m in (b"a", b"b", b"c", b"d"))
    store.delete("c", 1, [i for i, _ in taken[:3]])
    stats = store.stats("c", 1)
    assert (stats["pooled"], stats["received"], stats["forwarded"], stats["duplicates"]) == (1, 4, 3, 1)
    assert store.users("c", 1) == 4
    store.flush("c", 1)
    assert store.due() == [("c", 1, 1, True)]


def test_registry_lookup_and_expiry(open_store: Opener) -> None:
    store = open_store("a")
    assert store.collection("c") is None
    store.register("c", {"s": 1}, {"enrolment": "tokens"}, 100.0)
    assert store.collection("c") == ({"s": 1}, {"enrolment": "tokens"}, 100.0)
    assert set(store.collections()) == {"c"}
    store.add("c", 1, [b"x"], users=1)
    with pytest.raises(RuntimeError, match="still pools 1"):
        store.forget("c")  # acknowledged messages are never dropped by expiry
    store.delete("c", 1, [i for i, _ in store.take("c", 1)])
    store.forget("c")
    assert store.collection("c") is None
    assert store.collections() == {}


def test_an_invite_is_used_once_all_or_none(open_store: Opener) -> None:
    store = open_store("a")
    store.add_invites("c", [_h("i1"), _h("i2"), _h("i3")])
    assert store.use_invites("c", [(_h("i1"), b"req1")]) == []
    assert store.use_invites("c", [(_h("i1"), b"req1")]) == []  # the same request again: a retry
    assert store.use_invites("c", [(_h("i1"), b"req2")]) == ["user 0: invite already used"]
    # all or none: i2 is not spent by a request that also names a used and an unknown invite
    problems = store.use_invites("c", [(_h("i2"), b"r3"), (_h("i1"), b"r3"), (_h("nope"), b"r3")])
    assert problems == ["user 1: invite already used", "user 2: unknown invite"]
    assert store.use_invites("c", [(_h("i2"), b"r4")]) == []
    assert store.use_invites("d", [(_h("i3"), b"r5")]) == ["user 0: unknown invite"]  # per collection


def test_a_credential_is_spent_once(open_store: Opener) -> None:
    store = open_store("a")
    ids = [_h("cred1"), _h("cred2")]
    assert store.spent_status("c", 1, ids, b"body1") == "fresh"
    assert store.add("c", 1, [b"m1", b"m2"], users=2, spend=ids, body=b"body1") == 2
    assert store.spent_status("c", 1, ids, b"body1") == "replay"  # spent and pooled: answered again
    assert store.spent_status("c", 1, ids, b"body2") == "used"
    assert store.spent_status("c", 1, [*ids[:1], _h("cred3")], b"body1") == "used"
    assert store.spent_status("c", 2, ids, b"body1") == "fresh"  # one credential per round
    with pytest.raises(KeyError):
        store.add("c", 1, [b"m3"], users=1, spend=[_h("cred2")], body=b"body3")
    assert store.stats("c", 1)["pooled"] == 2
    assert store.users("c", 1) == 2


# ------------------------------------------------------------------------ replicas (PostgreSQL)


@pytest.fixture
def two_replicas(tmp_path: Path, postgres_url: str) -> Iterator[tuple[PostgresShufflerStore, ...]]:
    a = PostgresShufflerStore(tmp_path / "a.sqlite3", url=postgres_url)
    b = PostgresShufflerStore(tmp_path / "b.sqlite3", url=postgres_url)
    yield a, b
    a.close()
    b.close()


def test_replicas_share_invites_credentials_registry_and_seed(
    two_replicas: tuple[PostgresShufflerStore, ...],
) -> None:
    a, b = two_replicas
    a.register("c", {"s": 1}, {"enrolment": "tokens"}, 50.0)
    assert b.collection("c") == ({"s": 1}, {"enrolment": "tokens"}, 50.0)  # a miss at b finds it
    assert a.enrolment_seed() == b.enrolment_seed()
    assert len(a.enrolment_seed()) == 32
    a.add_invites("c", [_h(f"i{k}") for k in range(200)])
    # 200 invites, each requested by two replicas at once with different requests: each used once
    wins: list[int] = []

    def enrol(store: PostgresShufflerStore, tag: bytes) -> None:
        wins.extend(k for k in range(200) if store.use_invites("c", [(_h(f"i{k}"), tag)]) == [])

    threads = [threading.Thread(target=enrol, args=(s, t)) for s, t in ((a, b"A"), (b, b"B"))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(wins) == list(range(200))  # every invite exactly once, never twice
    # a credential spent at a is refused at b, with another body
    a.add("c", 1, [b"m1"], users=1, spend=[_h("k1")], body=b"x")
    assert b.spent_status("c", 1, [_h("k1")], b"y") == "used"
    with pytest.raises(KeyError):
        b.add("c", 1, [b"m2"], users=1, spend=[_h("k1")], body=b"y")
    assert b.stats("c", 1)["pooled"] == 0
    assert a.users("c", 1) == b.users("c", 1) == 1  # admitted users are counted for all replicas


def test_a_retry_after_a_crash_between_spend_and_pool_is_pooled_not_lost(
    two_replicas: tuple[PostgresShufflerStore, ...],
) -> None:
    a, b = two_replicas
    ids, body = [_h("k1"), _h("k2")], b"digest"
    a._spend("c", 1, ids, body)  # a committed the spend, then died before its pool commit
    assert a.stats("c", 1)["pooled"] == 0
    assert b.spent_status("c", 1, ids, body) == "retry"  # the device's retry reaches b
    # within CLAIM_SECONDS of a's spend b cannot tell a crash from a pooling in progress: 503, retry later
    with pytest.raises(PoolingElsewhereError):
        b.add("c", 1, [b"m1", b"m2"], users=2, spend=ids, body=body)
    with a._pool.connection() as con:  # the claim's time passes (a died)
        con.execute("UPDATE shuffler_spent SET claimed_at = claimed_at - make_interval(secs => %s)", (CLAIM_SECONDS + 1,))
    assert b.add("c", 1, [b"m1", b"m2"], users=2, spend=ids, body=body) == 2
    assert b.stats("c", 1)["pooled"] == 2
    assert b.users("c", 1) == 2
    assert a.spent_status("c", 1, ids, body) == "replay"  # pooled now: a third try is not pooled again
    assert b.spent_status("c", 1, ids, b"other") == "used"


def test_a_round_closed_at_one_replica_closes_for_all_and_each_holds_its_residue(
    tmp_path: Path, two_replicas: tuple[PostgresShufflerStore, ...]
) -> None:
    """At the close each replica forwards its own pool if it holds at least ``min_batch`` users;
    a residue below that is held (``at_close: hold``) by the replica that has it, never merged."""
    a, b = two_replicas
    spec = CollectionSpec(id="c", features=("f",), count_check=False)  # one message per user here
    cfg = ServiceConfig(
        role="shuffler",
        key_file="unused",
        data_dir=str(tmp_path),
        curator_url="http://curator",
        analyst_url="http://analyst",
        min_batch=3,
        batch_threshold=100,
    )
    batches: list[int] = []

    def curator(request: httpx.Request) -> httpx.Response:
        batches.append(len(unpack_batch(request.content, max_messages=10_000)))
        return httpx.Response(202, json={})

    http = httpx.Client(transport=httpx.MockTransport(curator))
    forwarders = []
    for store in (a, b):
        registry = {"c": Registered(spec, {}, "open", time.monotonic() + 60, None)}
        forwarders.append(_Forwarder(cfg, store, registry, EventCounter(logging.getLogger("test"))))
    a.add("c", 1, [f"a{k}".encode() for k in range(5)], users=5)
    b.add("c", 1, [b"b0", b"b1"], users=2)
    for f in forwarders:
        f.forward_due(http)
    assert batches == []  # open round: below batch_threshold + reserve, nothing moves
    a.flush("c", 1)  # the admin's flush reached replica a only
    for f in forwarders:
        f.forward_due(http)
    assert batches == [5]  # a forwarded its 5 users; b's 2 (< min_batch 3) are held
    # a replica's pool is the one-process pool: what it forwarded left neither the pool nor the WAL
    assert a.stats("c", 1)["pooled"] == 0
    assert (tmp_path / "a.sqlite3-wal").stat().st_size == 0
    assert b.due() == [("c", 1, 2, True)]
    assert b.stats("c", 1)["pooled"] == 2
    b.add("c", 1, [b"b2"], users=1)  # a late user reaches b: now 3 users, forwarded at once
    forwarders[1].forward_due(http)
    assert batches == [5, 3]
    assert b.stats("c", 1)["pooled"] == 0
    http.close()


def test_the_store_setting_is_checked(tmp_path: Path) -> None:
    import secrets

    from sdckit.errors import ConfigError

    base = {
        "key_file": "k",
        "data_dir": str(tmp_path),
        "admin_token": secrets.token_urlsafe(32),
        "relay_token": secrets.token_urlsafe(32),
    }
    hops = {
        "curator_url": "http://c",
        "analyst_url": "http://a",
        "curator_verify_key": "ed25519:x",
        "analyst_verify_key": "ed25519:y",
    }
    ok = ServiceConfig.from_mapping({"role": "shuffler", **base, **hops, "store": "postgresql://h/db"})
    assert ok.store == "postgresql://h/db"
    with pytest.raises(ConfigError, match="postgresql://"):
        ServiceConfig.from_mapping({"role": "shuffler", **base, **hops, "store": "mysql://h/db"})
    with pytest.raises(ConfigError, match="only a shuffler"):
        ServiceConfig.from_mapping({"role": "curator", **base, "store": "postgresql://h/db"})
    with pytest.raises(ConfigError, match="postgresql://"):
        open_shuffler_store(tmp_path / "s.sqlite3", url="sqlite:///x")
    pytest.importorskip("psycopg")
    from sdckit.protocol.services._launch import free_port

    with pytest.raises(ConfigError, match="cannot reach the PostgreSQL store") as err:
        open_shuffler_store(tmp_path / "s.sqlite3", url=f"postgresql://u:s3cret@127.0.0.1:{free_port()}/db")
    assert "Connection refused" in str(err.value)
    assert "s3cret" not in str(err.value)  # the password is never shown
