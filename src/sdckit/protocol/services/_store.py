"""SQLite storage of the three services (WAL; one connection per process, serialised by a lock).

Ordering: every table that holds messages is ``WITHOUT ROWID`` with a random-looking primary key
(a hash of the ciphertext, or the message's random salt), so the storage order is a function of
the content, not of arrival. No table holds a time, an address or a request id.

Durability: a request is acknowledged only after its transaction commits; in WAL mode with
``synchronous=NORMAL`` a committed transaction survives the process being killed (``FULL``: also
a power loss).
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import threading
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from sdckit.protocol._signing import canonical_json
from sdckit.protocol._wire import FeatureMessage, RowMessage, encode_value
from sdckit.protocol.parties import Tally


class _Store:
    def __init__(self, path: str | Path, *, synchronous: str = "NORMAL") -> None:
        Path(path).parent.mkdir(mode=0o700, parents=True, exist_ok=True)  # stores hold counts and rows
        # owner-only whatever the umask or the folder's mode (the analyst's store holds the released
        # rows); SQLite gives its -wal and -shm files the database file's mode
        os.close(os.open(path, os.O_RDWR | os.O_CREAT, 0o600))
        for suffix in ("", "-wal", "-shm"):
            if Path(f"{path}{suffix}").exists():
                os.chmod(f"{path}{suffix}", 0o600)
        self._con = sqlite3.connect(str(path), check_same_thread=False, isolation_level=None)
        self._lock = threading.Lock()
        self._con.execute("PRAGMA journal_mode=WAL")
        self._con.execute(f"PRAGMA synchronous={'FULL' if synchronous == 'FULL' else 'NORMAL'}")
        self._con.execute(
            "PRAGMA secure_delete=ON"
        )  # deleted messages are overwritten, not left in free pages
        with self.tx() as cur:
            for stmt in self.SCHEMA:
                cur.execute(stmt)

    SCHEMA: Sequence[str] = ()

    @contextmanager
    def tx(self) -> Iterator[sqlite3.Cursor]:
        with self._lock:
            cur = self._con.cursor()
            cur.execute("BEGIN IMMEDIATE")
            try:
                yield cur
            except BaseException:
                cur.execute("ROLLBACK")
                raise
            cur.execute("COMMIT")

    def close(self) -> None:
        with self._lock:
            self._con.close()


class PoolingElsewhereError(Exception):
    """The same body is being pooled by another replica right now (its spend is fresh and not yet
    marked pooled): answered 503 with Retry-After, so the retry finds it pooled (202, not pooled
    again)."""


class ShufflerStore(_Store):
    """The shuffler's state: registered collections, invites, spent credentials (hashes of their
    nonces), and the pool of stripped (inner) ciphertexts keyed by their SHA-256, per round.

    Nothing of a forwarded message or of the arrival order stays on disk: deletes overwrite the
    freed cells (``secure_delete``) and :meth:`checkpoint` moves the write-ahead log into the
    database (whose B-trees are ordered by hash) and truncates it to zero bytes.
    """

    SCHEMA = (
        "CREATE TABLE IF NOT EXISTS pool (id BLOB NOT NULL, collection TEXT NOT NULL, round INTEGER NOT NULL,"
        " msg BLOB NOT NULL, PRIMARY KEY (collection, round, id)) WITHOUT ROWID",
        "CREATE TABLE IF NOT EXISTS stats (collection TEXT NOT NULL, round INTEGER NOT NULL,"
        " received INTEGER NOT NULL DEFAULT 0, duplicates INTEGER NOT NULL DEFAULT 0,"
        " rejected INTEGER NOT NULL DEFAULT 0, forwarded INTEGER NOT NULL DEFAULT 0,"
        " flushed INTEGER NOT NULL DEFAULT 0, dropped INTEGER NOT NULL DEFAULT 0,"
        " users INTEGER NOT NULL DEFAULT 0, refusals INTEGER NOT NULL DEFAULT 0,"
        " quarantined INTEGER NOT NULL DEFAULT 0, PRIMARY KEY (collection, round)) WITHOUT ROWID",
        "CREATE TABLE IF NOT EXISTS collections (id TEXT PRIMARY KEY, spec TEXT NOT NULL,"
        " policy TEXT NOT NULL, expires REAL NOT NULL) WITHOUT ROWID",
        "CREATE TABLE IF NOT EXISTS invites (collection TEXT NOT NULL, code BLOB NOT NULL, used BLOB,"
        " PRIMARY KEY (collection, code)) WITHOUT ROWID",
        "CREATE TABLE IF NOT EXISTS spent (collection TEXT NOT NULL, round INTEGER NOT NULL, id BLOB NOT NULL,"
        " body BLOB NOT NULL, PRIMARY KEY (collection, round, id)) WITHOUT ROWID",
        "CREATE TABLE IF NOT EXISTS pins (collection TEXT NOT NULL, kind TEXT NOT NULL, doc TEXT NOT NULL,"
        " PRIMARY KEY (collection, kind)) WITHOUT ROWID",
    )
    _STAT_KEYS = (
        "received",
        "duplicates",
        "rejected",
        "forwarded",
        "flushed",
        "dropped",
        "users",
        "refusals",
        "quarantined",
    )

    def _stat(self, cur: sqlite3.Cursor, collection: str, round_: int) -> None:
        cur.execute("INSERT OR IGNORE INTO stats (collection, round) VALUES (?, ?)", (collection, round_))

    # ------------------------------------------------------------------------------ collections

    def __init__(self, path: str | Path, *, synchronous: str = "NORMAL") -> None:
        super().__init__(path, synchronous=synchronous)
        self._pinned_docs: dict[tuple[str, str], dict[str, Any]] = {}

    unavailable: tuple[type[Exception], ...] = ()
    """Exceptions meaning the store cannot be reached (none for the embedded SQLite file)."""

    def problem(self) -> str | None:
        """None while the store answers (the embedded SQLite file always does)."""
        return None

    def pin(self, collection: str, kind: str, doc: dict[str, Any]) -> dict[str, Any] | None:
        """Compare-and-set: pin ``doc`` as the collection's ``kind`` (``plan``, ``pairs``) unless
        another is pinned already; returns the pinned document, or None when another one is pinned
        whose document this process no longer holds (after a restart: the caller refuses, 409).

        One process: the document stays in memory and only its SHA-256 goes to disk, so the store
        holds no value, not even the public plan's counts (the PostgreSQL store of replicas keeps
        the document itself, so any replica can serve it)."""
        digest = hashlib.sha256(canonical_json(doc)).hexdigest()
        with self.tx() as cur:
            cur.execute(
                "INSERT INTO pins (collection, kind, doc) VALUES (?, ?, ?) ON CONFLICT DO NOTHING",
                (collection, kind, digest),
            )
            row = cur.execute(
                "SELECT doc FROM pins WHERE collection = ? AND kind = ?", (collection, kind)
            ).fetchone()
        if row[0] != digest:
            return self._pinned_docs.get((collection, kind))
        return self._pinned_docs.setdefault((collection, kind), doc)

    def pinned(self, collection: str, kind: str) -> dict[str, Any] | None:
        """The pinned ``kind`` of the collection if this process holds it, else None."""
        return self._pinned_docs.get((collection, kind))

    def register(self, collection: str, spec: dict[str, Any], policy: dict[str, Any], expires: float) -> None:
        """Store a registration; ``expires`` is the seconds it has left (running time)."""
        with self.tx() as cur:
            cur.execute(
                "INSERT INTO collections (id, spec, policy, expires) VALUES (?, ?, ?, ?) ON CONFLICT (id)"
                " DO UPDATE SET spec = excluded.spec, policy = excluded.policy, expires = excluded.expires",
                (collection, json.dumps(spec), json.dumps(policy), expires),
            )

    def collections(self) -> dict[str, tuple[dict[str, Any], dict[str, Any], float]]:
        with self._lock:
            rows = self._con.execute("SELECT id, spec, policy, expires FROM collections").fetchall()
        return {c: (json.loads(s), json.loads(p), float(e)) for c, s, p, e in rows}

    def collection(self, collection: str) -> tuple[dict[str, Any], dict[str, Any], float] | None:
        """One registration (signed spec, policy, seconds left), None if unknown."""
        with self._lock:
            row = self._con.execute(
                "SELECT spec, policy, expires FROM collections WHERE id = ?", (collection,)
            ).fetchone()
        return (json.loads(row[0]), json.loads(row[1]), float(row[2])) if row else None

    def users(self, collection: str, round_: int) -> int:
        """Users admitted to a round (complete submissions pooled), by every replica sharing the store."""
        return self.stats(collection, round_)["users"]

    def enrolment_seed(self) -> bytes | None:
        """The VOPRF issuer's seed when the store holds it (shared by replicas); None: a file."""
        return None

    def forget(self, collection: str) -> int:
        """Remove an (expired) collection whose pool is empty: its registration and counters. Its
        spent credentials and invites stay, so they are refused if it is registered again. Returns
        the pooled messages left (0; :class:`RuntimeError` otherwise: acknowledged messages are
        never deleted by expiry)."""
        with self.tx() as cur:
            (n,) = cur.execute("SELECT COUNT(*) FROM pool WHERE collection = ?", (collection,)).fetchone()
            if n:
                raise RuntimeError(f"collection {collection!r} still pools {n} acknowledged message(s)")
            for table, col in (("stats", "collection"), ("collections", "id")):
                cur.execute(f"DELETE FROM {table} WHERE {col} = ?", (collection,))
        self.checkpoint()
        return int(n)

    def pooled(self, collection: str) -> int:
        """Messages pooled for ``collection``, all rounds."""
        with self._lock:
            (n,) = self._con.execute(
                "SELECT COUNT(*) FROM pool WHERE collection = ?", (collection,)
            ).fetchone()
        return int(n)

    def set_remaining(self, collection: str, seconds: float) -> None:
        """Persist the seconds a collection has left (counted on the shuffler's running time)."""
        with self.tx() as cur:
            cur.execute("UPDATE collections SET expires = ? WHERE id = ?", (seconds, collection))

    # ---------------------------------------------------------------------------- credentials

    def add_invites(self, collection: str, codes: Sequence[bytes]) -> None:
        with self.tx() as cur:
            cur.executemany(
                "INSERT OR IGNORE INTO invites (collection, code) VALUES (?, ?)",
                [(collection, c) for c in codes],
            )

    def invite_problems(self, collection: str, uses: Sequence[tuple[bytes, bytes]]) -> list[str]:
        """What :meth:`use_invites` would refuse, spending nothing: looked up before any VOPRF
        work, so made-up invites cost a lookup, not an evaluation (issue 37)."""
        problems: list[str] = []
        with self._lock:
            for i, (code, req) in enumerate(uses):
                row = self._con.execute(
                    "SELECT used FROM invites WHERE collection = ? AND code = ?", (collection, code)
                ).fetchone()
                if row is None:
                    problems.append(f"user {i}: unknown invite")
                elif row[0] is not None and row[0] != req:
                    problems.append(f"user {i}: invite already used")
        return problems

    def use_invites(self, collection: str, uses: Sequence[tuple[bytes, bytes]]) -> list[str]:
        """Spend invites (code hash, request hash), all or none. Returns the problems (empty: spent).
        An invite spent by the same request (a retry) passes again."""
        problems: list[str] = []
        if len({code for code, _ in uses}) != len(uses):
            return ["an invite is named twice in one request (one invite is one user)"]
        with self.tx() as cur:
            for i, (code, req) in enumerate(uses):
                row = cur.execute(
                    "SELECT used FROM invites WHERE collection = ? AND code = ?", (collection, code)
                ).fetchone()
                if row is None:
                    problems.append(f"user {i}: unknown invite")
                elif row[0] is not None and row[0] != req:
                    problems.append(f"user {i}: invite already used")
            if problems:
                return problems
            cur.executemany(
                "UPDATE invites SET used = ? WHERE collection = ? AND code = ?",
                [(req, collection, code) for code, req in uses],
            )
        return []

    def spent_status(self, collection: str, round_: int, ids: Sequence[bytes], body: bytes) -> str:
        """``"fresh"`` (none spent), ``"replay"`` (all spent by this very body and pooled: a retry
        answered without pooling), ``"retry"`` (all spent by this very body, not known to be pooled:
        pool it again; never here, where spending and pooling are one transaction) or ``"used"``."""
        with self._lock:
            rows = self._con.execute(
                f"SELECT body FROM spent WHERE collection = ? AND round = ? AND id IN ({','.join('?' * len(ids))})",
                (collection, round_, *ids),
            ).fetchall()
        if not rows:
            return "fresh"
        return "replay" if len(rows) == len(ids) and all(r[0] == body for r in rows) else "used"

    # ----------------------------------------------------------------------------------- pool

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
        """Pool ``inner`` ciphertexts of ``users`` users and spend their credentials (``spend``, in
        the same transaction); returns how many messages were new (an identical resubmission is a
        no-op). Raises :class:`KeyError` if a credential was spent meanwhile."""
        rows = [(hashlib.sha256(m).digest(), collection, round_, m) for m in inner]
        with self.tx() as cur:
            self._stat(cur, collection, round_)
            if spend:
                marks = ",".join("?" * len(spend))
                sql = f"SELECT COUNT(*) FROM spent WHERE collection = ? AND round = ? AND id IN ({marks})"
                if cur.execute(sql, (collection, round_, *spend)).fetchone()[0]:
                    raise KeyError("credential already spent")
                cur.executemany(
                    "INSERT INTO spent (collection, round, id, body) VALUES (?, ?, ?, ?)",
                    [(collection, round_, i, body) for i in spend],
                )
            before = self._con.total_changes
            cur.executemany(
                "INSERT OR IGNORE INTO pool (id, collection, round, msg) VALUES (?, ?, ?, ?)", rows
            )
            new = self._con.total_changes - before
            cur.execute(
                "UPDATE stats SET received = received + ?, duplicates = duplicates + ?, users = users + ?"
                " WHERE collection = ? AND round = ?",
                (new, len(rows) - new, users, collection, round_),
            )
        return new

    def duplicate(self, collection: str, round_: int, n: int) -> None:
        """Count ``n`` messages of a replayed body (recognised by its hash, never pooled again)."""
        with self.tx() as cur:
            self._stat(cur, collection, round_)
            cur.execute(
                "UPDATE stats SET duplicates = duplicates + ? WHERE collection = ? AND round = ?",
                (n, collection, round_),
            )

    def reject(self, collection: str, round_: int, n: int) -> None:
        with self.tx() as cur:
            self._stat(cur, collection, round_)
            cur.execute(
                "UPDATE stats SET rejected = rejected + ? WHERE collection = ? AND round = ?",
                (n, collection, round_),
            )

    def flush(self, collection: str, round_: int) -> None:
        with self.tx() as cur:
            self._stat(cur, collection, round_)
            cur.execute(
                "UPDATE stats SET flushed = 1 WHERE collection = ? AND round = ?", (collection, round_)
            )

    def due(self) -> list[tuple[str, int, int, bool]]:
        """(collection, round, pooled, flushed) of every pool holding messages and not quarantined.

        Reads the counters only (pooled = received - forwarded - dropped), so polling costs O(rounds)."""
        with self._lock:
            rows = self._con.execute(
                "SELECT collection, round, received - forwarded - dropped, flushed FROM stats"
                " WHERE received > forwarded + dropped AND quarantined = 0"
            ).fetchall()
        return [(c, int(r), int(n), bool(f)) for c, r, n, f in rows]

    def take(self, collection: str, round_: int, limit: int = 1_000_000) -> list[tuple[bytes, bytes]]:
        """(id, msg) of up to ``limit`` pooled messages of a round, in hash order (a subset that
        does not depend on arrival; permute before use)."""
        with self._lock:
            return self._con.execute(
                "SELECT id, msg FROM pool WHERE collection = ? AND round = ? LIMIT ?",
                (collection, round_, limit),
            ).fetchall()

    def delete(self, collection: str, round_: int, ids: Sequence[bytes], *, dropped: bool = False) -> None:
        """Delete what the next hop acknowledged (or what is dropped) and count it."""
        column = "dropped" if dropped else "forwarded"
        with self.tx() as cur:
            cur.executemany(
                "DELETE FROM pool WHERE collection = ? AND round = ? AND id = ?",
                [(collection, round_, i) for i in ids],
            )
            cur.execute(
                f"UPDATE stats SET {column} = {column} + ?, refusals = 0 WHERE collection = ? AND round = ?",
                (len(ids), collection, round_),
            )

    def drop_pool(self, collection: str, round_: int) -> int:
        """Drop every pooled message of a round (counted as dropped); returns how many."""
        ids = [i for i, _ in self.take(collection, round_)]
        self.delete(collection, round_, ids, dropped=True)
        self.set_quarantine(collection, round_, False)
        self.checkpoint()
        return len(ids)

    def refused(self, collection: str, round_: int, quarantine_after: int) -> bool:
        """Count a refusal by the next hop; returns whether the pool is now quarantined."""
        with self.tx() as cur:
            cur.execute(
                "UPDATE stats SET refusals = refusals + 1, quarantined = (refusals + 1 >= ?)"
                " WHERE collection = ? AND round = ?",
                (quarantine_after, collection, round_),
            )
            row = cur.execute(
                "SELECT quarantined FROM stats WHERE collection = ? AND round = ?", (collection, round_)
            ).fetchone()
        return bool(row and row[0])

    def set_quarantine(self, collection: str, round_: int, on: bool) -> None:
        with self.tx() as cur:
            cur.execute(
                "UPDATE stats SET quarantined = ?, refusals = 0 WHERE collection = ? AND round = ?",
                (int(on), collection, round_),
            )

    def quarantined(self) -> list[dict[str, Any]]:
        with self._lock:
            rows = self._con.execute(
                "SELECT collection, round, received - forwarded - dropped FROM stats WHERE quarantined = 1"
            ).fetchall()
        return [{"collection": c, "round": int(r), "pooled": int(n)} for c, r, n in rows]

    def checkpoint(self) -> None:
        """Move the write-ahead log into the database and truncate it to zero bytes."""
        with self._lock:
            self._con.execute("PRAGMA wal_checkpoint(TRUNCATE)")

    def stats(self, collection: str, round_: int) -> dict[str, int]:
        with self._lock:
            row = self._con.execute(
                f"SELECT {', '.join(self._STAT_KEYS)} FROM stats WHERE collection = ? AND round = ?",
                (collection, round_),
            ).fetchone()
            pooled = self._con.execute(
                "SELECT COUNT(*) FROM pool WHERE collection = ? AND round = ?", (collection, round_)
            ).fetchone()[0]
        out = dict(zip(self._STAT_KEYS, row, strict=True)) if row else dict.fromkeys(self._STAT_KEYS, 0)
        out["pooled"] = int(pooled)
        return out

    def table_sizes(self) -> dict[str, int]:
        """Rows per table (tests: an unregistered collection leaves nothing behind)."""
        with self._lock:
            return {
                t: int(self._con.execute(f"SELECT COUNT(*) FROM {t}").fetchone()[0])
                for t in ("pool", "stats", "collections", "invites", "spent")
            }


class _ReceiverStore(_Store):
    """Common part of the curator's and analyst's stores: collections, salts, tallies."""

    def put_collection(self, collection: str, spec: dict[str, Any], plan: dict[str, Any] | None) -> None:
        with self.tx() as cur:
            cur.execute(
                "INSERT INTO collections (id, spec, plan) VALUES (?, ?, ?) ON CONFLICT (id) DO UPDATE SET"
                " spec = excluded.spec, plan = COALESCE(excluded.plan, collections.plan)",
                (collection, json.dumps(spec), json.dumps(plan) if plan is not None else None),
            )
            cur.execute("INSERT OR IGNORE INTO tally (collection) VALUES (?)", (collection,))

    def set_plan(self, collection: str, plan: dict[str, Any]) -> None:
        with self.tx() as cur:
            cur.execute("UPDATE collections SET plan = ? WHERE id = ?", (json.dumps(plan), collection))

    def collections(self) -> dict[str, tuple[dict[str, Any], dict[str, Any] | None]]:
        with self._lock:
            rows = self._con.execute("SELECT id, spec, plan FROM collections").fetchall()
        return {c: (json.loads(s), json.loads(p) if p else None) for c, s, p in rows}

    def tally(self, collection: str) -> Tally:
        with self._lock:
            row = self._con.execute(
                "SELECT accepted, duplicates, rejected FROM tally WHERE collection = ?", (collection,)
            ).fetchone()
        return Tally(*row) if row else Tally()

    def _bump(self, cur: sqlite3.Cursor, collection: str, t: Tally) -> None:
        cur.execute(
            "UPDATE tally SET accepted = accepted + ?, duplicates = duplicates + ?, rejected = rejected + ?"
            " WHERE collection = ?",
            (t.accepted, t.duplicates, t.rejected, collection),
        )

    @staticmethod
    def _known_salts(
        cur: sqlite3.Cursor, collection: str, salts: Sequence[bytes], table: str = "salts"
    ) -> set[bytes]:
        """The salts of ``salts`` already stored for ``collection`` (queried in chunks)."""
        known: set[bytes] = set()
        for i in range(0, len(salts), 500):
            part = salts[i : i + 500]
            marks = ",".join("?" * len(part))
            sql = f"SELECT salt FROM {table} WHERE collection = ? AND salt IN ({marks})"
            known.update(r[0] for r in cur.execute(sql, (collection, *part)))
        return known


_RECEIVER_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS collections (id TEXT PRIMARY KEY, spec TEXT NOT NULL, plan TEXT) WITHOUT ROWID",
    "CREATE TABLE IF NOT EXISTS salts (collection TEXT NOT NULL, salt BLOB NOT NULL,"
    " PRIMARY KEY (collection, salt)) WITHOUT ROWID",
    "CREATE TABLE IF NOT EXISTS tally (collection TEXT PRIMARY KEY, accepted INTEGER NOT NULL DEFAULT 0,"
    " duplicates INTEGER NOT NULL DEFAULT 0, rejected INTEGER NOT NULL DEFAULT 0) WITHOUT ROWID",
)


class CuratorStore(_ReceiverStore):
    """Marginal counts per (collection, feature, value); salts only to reject duplicates."""

    SCHEMA = (
        *_RECEIVER_SCHEMA,
        "CREATE TABLE IF NOT EXISTS counts (collection TEXT NOT NULL, feature TEXT NOT NULL,"
        " value_key TEXT NOT NULL, n INTEGER NOT NULL, PRIMARY KEY (collection, feature, value_key)) WITHOUT ROWID",
        "CREATE TABLE IF NOT EXISTS pair_counts (collection TEXT NOT NULL, columns TEXT NOT NULL,"
        " cell TEXT NOT NULL, n INTEGER NOT NULL, PRIMARY KEY (collection, columns, cell)) WITHOUT ROWID",
        "CREATE TABLE IF NOT EXISTS pair_queries (collection TEXT PRIMARY KEY, doc TEXT NOT NULL) WITHOUT ROWID",
    )

    def record(
        self, collection: str, messages: Iterable[FeatureMessage | RowMessage], rejected: int
    ) -> Tally:
        """Count the messages whose salt is new, in one transaction; returns the batch's tally.
        A :class:`RowMessage` (pair round) counts one cell of its pair's table."""
        msgs = list(messages)
        counts: Counter[tuple[str, str]] = Counter()
        cells: Counter[tuple[str, str]] = Counter()
        new: list[tuple[str, bytes]] = []
        with self.tx() as cur:
            seen = self._known_salts(cur, collection, [m.salt for m in msgs])
            for m in msgs:
                if m.salt in seen:
                    continue
                seen.add(m.salt)
                new.append((collection, m.salt))
                if isinstance(m, RowMessage):
                    cells[(_json_list(m.columns), _json_list([encode_value(v) for v in m.values]))] += 1
                else:
                    counts[(m.feature, m.value_key)] += 1
            cur.executemany("INSERT INTO salts (collection, salt) VALUES (?, ?)", new)
            cur.executemany(
                "INSERT INTO counts (collection, feature, value_key, n) VALUES (?, ?, ?, ?)"
                " ON CONFLICT DO UPDATE SET n = n + excluded.n",
                [(collection, f, v, n) for (f, v), n in counts.items()],
            )
            cur.executemany(
                "INSERT INTO pair_counts (collection, columns, cell, n) VALUES (?, ?, ?, ?)"
                " ON CONFLICT DO UPDATE SET n = n + excluded.n",
                [(collection, c, v, n) for (c, v), n in cells.items()],
            )
            t = Tally(len(new), len(msgs) - len(new), rejected)
            self._bump(cur, collection, t)
        return t

    def counts(self, collection: str) -> dict[str, dict[str, int]]:
        with self._lock:
            rows = self._con.execute(
                "SELECT feature, value_key, n FROM counts WHERE collection = ?", (collection,)
            ).fetchall()
        out: dict[str, dict[str, int]] = {}
        for f, key, n in rows:
            out.setdefault(f, {})[key] = int(n)
        return out

    def pair_tables(self, collection: str) -> dict[tuple[str, ...], dict[tuple[str, ...], int]]:
        """``{(column a, column b): {(key a, key b): users}}`` counted in the pair round."""
        with self._lock:
            rows = self._con.execute(
                "SELECT columns, cell, n FROM pair_counts WHERE collection = ?", (collection,)
            ).fetchall()
        out: dict[tuple[str, ...], dict[tuple[str, ...], int]] = {}
        for cols, cell, n in rows:
            out.setdefault(tuple(json.loads(cols)), {})[tuple(json.loads(cell))] = int(n)
        return out

    def set_pair_queries(self, collection: str, doc: dict[str, Any]) -> None:
        with self.tx() as cur:
            cur.execute(
                "INSERT INTO pair_queries (collection, doc) VALUES (?, ?)", (collection, json.dumps(doc))
            )

    def pair_queries(self, collection: str) -> dict[str, Any] | None:
        with self._lock:
            row = self._con.execute(
                "SELECT doc FROM pair_queries WHERE collection = ?", (collection,)
            ).fetchone()
        return json.loads(row[0]) if row else None


def _json_list(items: Iterable[str]) -> str:
    return json.dumps(list(items), ensure_ascii=False, separators=(",", ":"))


class AnalystStore(_ReceiverStore):
    """Released rows keyed by their random salt (so stored in no meaningful order)."""

    SCHEMA = (
        *_RECEIVER_SCHEMA,
        "CREATE TABLE IF NOT EXISTS rows (collection TEXT NOT NULL, salt BLOB NOT NULL, row TEXT NOT NULL,"
        " PRIMARY KEY (collection, salt)) WITHOUT ROWID",
    )

    def record(self, collection: str, messages: Iterable[RowMessage], rejected: int) -> Tally:
        """Keep the rows whose salt is new, in one transaction; returns the batch's tally."""
        msgs = list(messages)
        new: list[tuple[str, bytes, str]] = []
        with self.tx() as cur:
            seen = self._known_salts(cur, collection, [m.salt for m in msgs], table="rows")
            for m in msgs:
                if m.salt in seen:
                    continue
                seen.add(m.salt)
                new.append((collection, m.salt, "[" + ",".join(encode_value(v) for v in m.values) + "]"))
            cur.executemany("INSERT INTO rows (collection, salt, row) VALUES (?, ?, ?)", new)
            t = Tally(len(new), len(msgs) - len(new), rejected)
            self._bump(cur, collection, t)
        return t

    def rows(self, collection: str) -> list[str]:
        """Each row as the JSON array of its canonical value encodings."""
        with self._lock:
            return [
                r for (r,) in self._con.execute("SELECT row FROM rows WHERE collection = ?", (collection,))
            ]
