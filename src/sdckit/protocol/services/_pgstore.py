"""The shuffler's store for replicas: what every replica must agree on in a shared PostgreSQL,
each replica's pool in its own local SQLite file (``store: postgresql://...`` in the config).

Shared (PostgreSQL, through a ``psycopg_pool`` connection pool): registered collections, invites,
spent credentials, closed rounds, the users each round admitted and the VOPRF issuer's seed. Local
(SQLite, exactly as one process: content-ordered keys, ``secure_delete``, the WAL truncated after
forwarding): the pool and its counters, so each replica forwards its own batches of at least
``min_batch`` users and no message is ever in the shared database.

Exactly-once across replicas:

* an invite is spent by ``UPDATE ... WHERE used IS NULL OR used = <this request>`` with a row-count
  check, all of a request's invites in one transaction (locked in code order: no deadlock);
* a credential is spent by an ``INSERT`` whose unique violation means "spent": 409, unless every
  credential was spent by this very body (a retry, recognised by the body's digest);
* the spend commits before the messages are pooled; the spent row says whether the pool commit
  followed (``pooled``). A retry of the same body after a crash between the two (no 202 was sent)
  finds ``pooled`` false and is pooled again, on whichever replica it reaches (in the same replica's
  pool the content keys make it a no-op); once ``pooled`` is true a retry is answered 202 without
  pooling. If a replica dies after its pool commit but before ``pooled`` is set, the retry is pooled
  on a second replica too: the curator and the analyst count each message's random salt once, so it
  is still counted once.
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from sdckit._io._optional import require
from sdckit.errors import ConfigError
from sdckit.protocol.services._store import PoolingElsewhereError, ShufflerStore

_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS shuffler_collections (id TEXT PRIMARY KEY, spec TEXT NOT NULL,"
    " policy TEXT NOT NULL, expires DOUBLE PRECISION NOT NULL)",
    "CREATE TABLE IF NOT EXISTS shuffler_invites (collection TEXT NOT NULL, code BYTEA NOT NULL, used BYTEA,"
    " PRIMARY KEY (collection, code))",
    "CREATE TABLE IF NOT EXISTS shuffler_spent (collection TEXT NOT NULL, round INTEGER NOT NULL,"
    " id BYTEA NOT NULL, body BYTEA NOT NULL, pooled BOOLEAN NOT NULL DEFAULT FALSE,"
    " PRIMARY KEY (collection, round, id))",
    "CREATE TABLE IF NOT EXISTS shuffler_closed (collection TEXT NOT NULL, round INTEGER NOT NULL,"
    " PRIMARY KEY (collection, round))",
    "CREATE TABLE IF NOT EXISTS shuffler_admitted (collection TEXT NOT NULL, round INTEGER NOT NULL,"
    " users BIGINT NOT NULL, PRIMARY KEY (collection, round))",
    "CREATE TABLE IF NOT EXISTS shuffler_seed (id INTEGER PRIMARY KEY CHECK (id = 1), seed BYTEA NOT NULL)",
    # when a replica took up pooling a spent body: another replica seeing the same body within
    # CLAIM_SECONDS answers 503 instead of pooling it a second time (issue 37)
    "ALTER TABLE shuffler_spent ADD COLUMN IF NOT EXISTS claimed_at TIMESTAMPTZ NOT NULL DEFAULT now()",
    "CREATE TABLE IF NOT EXISTS shuffler_pins (collection TEXT NOT NULL, kind TEXT NOT NULL, doc TEXT NOT NULL,"
    " PRIMARY KEY (collection, kind))",
)
CLAIM_SECONDS = 5.0
"""Seconds a replica's claim to pool a spent body holds: past it, a retry of a body never marked
pooled (its replica crashed before the mark) is pooled by the replica it reaches."""
POOL_WAIT_SECONDS = 5.0
"""Seconds a request waits for a store connection before it is answered 503 (Retry-After)."""
_SCHEMA_LOCK = 0x5DC0_5F1E  # advisory lock: replicas starting together create the schema once


def _is_url(text: str) -> bool:
    return text.startswith(("postgresql://", "postgres://"))


class PostgresShufflerStore(ShufflerStore):
    """:class:`ShufflerStore` with its shared half in PostgreSQL (see the module docstring); the
    pool methods are inherited unchanged and run on the replica's SQLite file ``path``."""

    def __init__(self, path: str | Path, *, url: str, synchronous: str = "NORMAL", max_size: int = 8) -> None:
        psycopg = require("psycopg", extra="protocol", what="store: postgresql://...")
        ConnectionPool = require("psycopg_pool", extra="protocol", what="store: postgresql://...").ConnectionPool
        super().__init__(path, synchronous=synchronous)
        self._errors = psycopg.errors
        try:  # one direct attempt first: its error names the cause (the pool only times out)
            psycopg.connect(url, connect_timeout=10).close()
        except psycopg.Error as err:
            super().close()
            where = {k: v for k, v in psycopg.conninfo.conninfo_to_dict(url).items() if k != "password"}
            raise ConfigError(
                f"cannot reach the PostgreSQL store ({where}): {str(err).strip().splitlines()[0]}; "
                "check `store` (postgresql://user@host:port/database) and that the server runs"
            ) from None
        # a short wait for a connection and a check on checkout: when PostgreSQL is lost a request
        # fails within seconds (503 with Retry-After, not a hang), and after it is back the broken
        # connections are replaced instead of failing one request each (issue 37)
        self._pool = ConnectionPool(
            url,
            min_size=1,
            max_size=max_size,
            open=False,
            timeout=POOL_WAIT_SECONDS,
            check=ConnectionPool.check_connection,
        )
        self.unavailable: tuple[type[Exception], ...] = (
            psycopg.OperationalError,
            psycopg.InterfaceError,
            require("psycopg_pool", extra="protocol", what="store: postgresql://...").PoolTimeout,
        )
        try:
            self._pool.open(wait=True, timeout=30.0)
        except Exception as err:
            self._pool.close()
            super().close()
            raise ConfigError(f"cannot reach the PostgreSQL store ({type(err).__name__}: {err})") from None
        with self._pool.connection() as con:
            con.execute("SELECT pg_advisory_xact_lock(%s)", (_SCHEMA_LOCK,))
            for stmt in _SCHEMA:
                con.execute(stmt)

    def close(self) -> None:
        self._pool.close()
        super().close()

    def problem(self) -> str | None:
        """None while the shared store answers; else what is wrong (``/healthz`` says it)."""
        try:
            with self._pool.connection(timeout=2.0) as con:
                con.execute("SELECT 1")
        except self.unavailable as err:
            return f"the PostgreSQL store is unreachable ({type(err).__name__})"
        return None

    # ------------------------------------------------------------------------------ collections

    def register(self, collection: str, spec: dict[str, Any], policy: dict[str, Any], expires: float) -> None:
        with self._pool.connection() as con:
            con.execute(
                "INSERT INTO shuffler_collections (id, spec, policy, expires) VALUES (%s, %s, %s, %s)"
                " ON CONFLICT (id) DO UPDATE SET spec = excluded.spec, policy = excluded.policy,"
                " expires = excluded.expires",
                (collection, json.dumps(spec), json.dumps(policy), expires),
            )

    def pin(self, collection: str, kind: str, doc: dict[str, Any]) -> dict[str, Any]:
        """Compare-and-set across replicas: the first document inserted is the pinned one (a
        racing replica's insert does nothing, and both read back the same row)."""
        with self._pool.connection() as con:
            con.execute(
                "INSERT INTO shuffler_pins (collection, kind, doc) VALUES (%s, %s, %s) ON CONFLICT DO NOTHING",
                (collection, kind, json.dumps(doc)),
            )
            row = con.execute(
                "SELECT doc FROM shuffler_pins WHERE collection = %s AND kind = %s", (collection, kind)
            ).fetchone()
        return dict(json.loads(row[0]))

    def pinned(self, collection: str, kind: str) -> dict[str, Any] | None:
        with self._pool.connection() as con:
            row = con.execute(
                "SELECT doc FROM shuffler_pins WHERE collection = %s AND kind = %s", (collection, kind)
            ).fetchone()
        return dict(json.loads(row[0])) if row else None

    def collections(self) -> dict[str, tuple[dict[str, Any], dict[str, Any], float]]:
        with self._pool.connection() as con:
            rows = con.execute(
                "SELECT id, spec, policy, expires FROM shuffler_collections WHERE expires > 0"
            ).fetchall()
        return {c: (json.loads(s), json.loads(p), float(e)) for c, s, p, e in rows}

    def collection(self, collection: str) -> tuple[dict[str, Any], dict[str, Any], float] | None:
        with self._pool.connection() as con:
            row = con.execute(
                "SELECT spec, policy, expires FROM shuffler_collections WHERE id = %s AND expires > 0",
                (collection,),
            ).fetchone()
        return (json.loads(row[0]), json.loads(row[1]), float(row[2])) if row else None

    def forget(self, collection: str) -> int:
        """Forget an expired collection on this replica (its counters) once its local pool is
        empty, and mark it expired in the shared store (no replica admits it again after a miss;
        the others forward what they hold and forget it on their own clock)."""
        n = self.pooled(collection)
        if n:
            raise RuntimeError(f"collection {collection!r} still pools {n} acknowledged message(s)")
        with self.tx() as cur:
            cur.execute("DELETE FROM stats WHERE collection = ?", (collection,))
        self.checkpoint()
        with self._pool.connection() as con:
            con.execute("UPDATE shuffler_collections SET expires = 0 WHERE id = %s", (collection,))
        return 0

    def set_remaining(self, collection: str, seconds: float) -> None:
        """Kept only while positive: with replicas, one replica's clean stop must not expire the
        collection for the others (each counts the time left on its own running clock)."""
        with self._pool.connection() as con:
            con.execute(
                "UPDATE shuffler_collections SET expires = %s WHERE id = %s AND expires > 0",
                (max(seconds, 1e-3), collection),
            )

    def enrolment_seed(self) -> bytes:
        """The issuer's 32-byte seed, created once by whichever replica asks first."""
        with self._pool.connection() as con:
            con.execute(
                "INSERT INTO shuffler_seed (id, seed) VALUES (1, %s) ON CONFLICT (id) DO NOTHING",
                (secrets.token_bytes(32),),
            )
            row = con.execute("SELECT seed FROM shuffler_seed WHERE id = 1").fetchone()
        assert row is not None  # inserted above or by another replica
        return bytes(row[0])

    # ---------------------------------------------------------------------------- credentials

    def add_invites(self, collection: str, codes: Sequence[bytes]) -> None:
        with self._pool.connection() as con:
            con.execute(
                "INSERT INTO shuffler_invites (collection, code) SELECT %s, unnest(%s::bytea[])"
                " ON CONFLICT DO NOTHING",
                (collection, list(codes)),
            )

    def invite_problems(self, collection: str, uses: Sequence[tuple[bytes, bytes]]) -> list[str]:
        with self._pool.connection() as con:
            problems = self._invite_problems(con, collection, uses)
        return [] if problems == ["an invite was spent meanwhile; retry"] else problems

    def use_invites(self, collection: str, uses: Sequence[tuple[bytes, bytes]]) -> list[str]:
        if len({code for code, _ in uses}) != len(uses):
            return ["an invite is named twice in one request (one invite is one user)"]
        order = sorted(range(len(uses)), key=lambda i: uses[i][0])  # one lock order: no deadlock
        try:
            with self._pool.connection() as con, con.transaction():
                spent = 0
                for i in order:
                    code, req = uses[i]
                    cur = con.execute(
                        "UPDATE shuffler_invites SET used = %s WHERE collection = %s AND code = %s"
                        " AND (used IS NULL OR used = %s)",
                        (req, collection, code, req),
                    )
                    spent += cur.rowcount
                if spent != len(uses):  # raised inside the transaction: it rolls back, none spent
                    raise _RefusedError(self._invite_problems(con, collection, uses))
        except _RefusedError as err:
            return err.problems
        return []

    @staticmethod
    def _invite_problems(con: Any, collection: str, uses: Sequence[tuple[bytes, bytes]]) -> list[str]:
        rows = {
            bytes(c): u
            for c, u in con.execute(
                "SELECT code, used FROM shuffler_invites WHERE collection = %s AND code = ANY(%s)",
                (collection, [c for c, _ in uses]),
            ).fetchall()
        }
        problems = []
        for i, (code, req) in enumerate(uses):
            if code not in rows:
                problems.append(f"user {i}: unknown invite")
            elif rows[code] is not None and bytes(rows[code]) != req:
                problems.append(f"user {i}: invite already used")
        return problems or ["an invite was spent meanwhile; retry"]

    def spent_status(self, collection: str, round_: int, ids: Sequence[bytes], body: bytes) -> str:
        with self._pool.connection() as con:
            rows = con.execute(
                "SELECT body, pooled FROM shuffler_spent WHERE collection = %s AND round = %s AND id = ANY(%s)",
                (collection, round_, list(ids)),
            ).fetchall()
        if not rows:
            return "fresh"
        if len(rows) != len(ids) or any(bytes(b) != body for b, _ in rows):
            return "used"
        return "replay" if all(p for _, p in rows) else "retry"

    def _spend(self, collection: str, round_: int, ids: Sequence[bytes], body: bytes) -> None:
        """Spend every credential (committed before returning), or raise :class:`KeyError` if one
        was spent by another body; spent by this very body (a retry): passes."""
        try:
            with self._pool.connection() as con:
                con.execute(
                    "INSERT INTO shuffler_spent (collection, round, id, body)"
                    " SELECT %s, %s, unnest(%s::bytea[]), %s",
                    (collection, round_, list(ids), body),
                )
            return
        except self._errors.UniqueViolation:
            pass
        status = self.spent_status(collection, round_, ids, body)
        if status == "used":
            raise KeyError("credential already spent")
        if status == "replay":  # pooled meanwhile by the replica that spent it: not again
            raise PoolingElsewhereError(collection)
        # all spent by this body and not marked pooled: a retry after a crash, or another replica
        # pooling it right now. Take it up only when no replica did within CLAIM_SECONDS
        # (compare-and-set on claimed_at), so the same body sent to two replicas is pooled once
        with self._pool.connection() as con:
            cur = con.execute(
                "UPDATE shuffler_spent SET claimed_at = now() WHERE collection = %s AND round = %s"
                " AND id = ANY(%s) AND NOT pooled AND claimed_at < now() - make_interval(secs => %s)",
                (collection, round_, list(ids), CLAIM_SECONDS),
            )
            if cur.rowcount != len(ids):
                raise PoolingElsewhereError(collection)

    def add(
        self,
        collection: str,
        round_: int,
        inner: Sequence[bytes],
        *,
        users: int = 0,
        spend: Sequence[bytes] = (),
        body: bytes = b"",
    ) -> int:
        """Spend in PostgreSQL (committed), pool in the local SQLite file, then mark the spend
        pooled and count the users admitted (shared), in that order (see the module docstring)."""
        if spend:
            self._spend(collection, round_, spend, body)
        else:  # an open collection: reach PostgreSQL before pooling, so an outage pools nothing (503)
            with self._pool.connection() as con:
                con.execute("SELECT 1")
        new = super().add(collection, round_, inner, users=users)
        with self._pool.connection() as con:
            if spend:
                cur = con.execute(
                    "UPDATE shuffler_spent SET pooled = TRUE WHERE collection = %s AND round = %s"
                    " AND id = ANY(%s) AND NOT pooled",
                    (collection, round_, list(spend)),
                )
                admitted = cur.rowcount
            else:
                admitted = users if new else 0
            if admitted:
                con.execute(
                    "INSERT INTO shuffler_admitted (collection, round, users) VALUES (%s, %s, %s)"
                    " ON CONFLICT (collection, round) DO UPDATE SET users = shuffler_admitted.users"
                    " + excluded.users",
                    (collection, round_, admitted),
                )
        return new

    def users(self, collection: str, round_: int) -> int:
        with self._pool.connection() as con:
            row = con.execute(
                "SELECT users FROM shuffler_admitted WHERE collection = %s AND round = %s",
                (collection, round_),
            ).fetchone()
        return int(row[0]) if row else 0

    # ----------------------------------------------------------------------------- round close

    def flush(self, collection: str, round_: int) -> None:
        """Close a round for every replica (shared), and locally."""
        with self._pool.connection() as con:
            con.execute(
                "INSERT INTO shuffler_closed (collection, round) VALUES (%s, %s) ON CONFLICT DO NOTHING",
                (collection, round_),
            )
        super().flush(collection, round_)

    def closed(self) -> set[tuple[str, int]]:
        """Rounds closed by any replica (one indexed read per forwarder poll with a pool)."""
        with self._pool.connection() as con:
            return {(c, int(r)) for c, r in con.execute("SELECT collection, round FROM shuffler_closed")}

    def due(self) -> list[tuple[str, int, int, bool]]:
        local = super().due()
        if not local:
            return local
        closed = self.closed()
        return [(c, r, n, f or (c, r) in closed) for c, r, n, f in local]

    def table_sizes(self) -> dict[str, int]:
        out = super().table_sizes()
        with self._pool.connection() as con:
            for t in ("collections", "invites", "spent"):
                row = con.execute(f"SELECT COUNT(*) FROM shuffler_{t}").fetchone()
                out[t] = int(row[0]) if row else 0
        return out


class _RefusedError(Exception):
    """Rolls back an invite transaction, carrying the problems."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__("; ".join(problems))
        self.problems = problems


def open_shuffler_store(path: str | Path, *, synchronous: str = "NORMAL", url: str = "") -> ShufflerStore:
    """The shuffler's store: SQLite alone (``url`` empty: one process), or PostgreSQL shared by
    replicas with a local SQLite pool (``url`` ``postgresql://...``)."""
    if not url:
        return ShufflerStore(path, synchronous=synchronous)
    if not _is_url(url):
        raise ConfigError(f"store={url!r}: leave it empty (SQLite) or give a postgresql://... URL")
    return PostgresShufflerStore(path, url=url, synchronous=synchronous)
