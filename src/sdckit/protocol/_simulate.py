"""Run the whole protocol on loopback: three real service processes, users driven over HTTP."""

from __future__ import annotations

import asyncio
import json
import math
import multiprocessing as mp
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import httpx
import numpy as np

from sdckit._io import DataSource, read_data
from sdckit.errors import ParameterError, ProtocolError
from sdckit.protocol._client import NODELAY, RETRY_STATUS, backoff, submit_async, submit_url
from sdckit.protocol._crypto import PublicKey, SuiteName
from sdckit.protocol._enrol import ENROL_ROUNDS, Credential, Enrolment
from sdckit.protocol._planning import PlanMethod
from sdckit.protocol._spec import PAIR_ROUND, CollectionSpec, PairQueries, PublishedPlan, Setting
from sdckit.protocol._wire import REDACTED, decode_value, encode_value, pack_feature_length, pack_row_length
from sdckit.protocol.parties import User

Progress = Callable[[str, int, int], None]
"""``progress(stage, done, total)``: called as users of a stage are acknowledged."""


@dataclass(frozen=True, kw_only=True)
class SimulationResult:
    """What a run of :func:`simulate` measured and verified."""

    collection: str
    setting: Setting
    suite: str
    features: tuple[str, ...]
    n_round1: int
    """Users who took part in round 1."""
    n_round2: int
    """Users who took part in round 2."""
    marginals: Mapping[str, Mapping[str, int]]
    """Round-1 counts the curator holds: ``{feature: {value as text: users}}``."""
    plan: PublishedPlan
    n_released: int
    """Rows of the released table."""
    exposure_at_k: float
    """True share of released rows (0..1) in groups of fewer than k rows on the planned columns."""
    verified: bool
    """Whether the release equals the round-2 users' rows on the planned columns (recoded as the
    plan says, :meth:`PublishedPlan.generalise`), as a multiset
    (with redaction rules: whether every released row is such a row with some entries redacted,
    checked per column on the counts)."""
    redacted: Mapping[str, int] = field(default_factory=dict)
    """Redacted entries per planned column (local suppression)."""
    tallies: Mapping[str, Mapping[str, int]] = field(default_factory=dict)
    """Service counters: shuffler per round, curator and analyst (accepted, duplicates, rejected)."""
    seconds: Mapping[str, float] = field(default_factory=dict)
    """Wall-clock seconds per stage."""
    users_per_second: Mapping[str, float] = field(default_factory=dict)
    """Throughput per stage (users / stage seconds)."""
    enrolment: str = "tokens"
    """``tokens`` (every user enrolled, one anonymous credential per round) or ``open``."""
    pairs: Mapping[str, Any] | None = None
    """The pair round (``pairs="auto"``): the published queries (``queries``, their union
    ``bound``), the tables the curator counted (``tables``: ``{"a x b": {"value a | value b": users}}``)
    and the measured share of users in a received cell < k (``measured``); None without it."""

    consistent_below_k: float | None = None
    """Share of round-2 users (0..1) whose true (recoded) values are consistent with fewer than k
    released rows, a redacted entry consistent with anything (:func:`consistent_below_k`)."""

    @property
    def rounds(self) -> tuple[str, ...]:
        """The rounds the release rests on (the plan's record)."""
        return self.plan.rounds

    def to_dict(self) -> dict[str, Any]:
        return {
            "collection": self.collection,
            "setting": self.setting,
            "suite": self.suite,
            "features": list(self.features),
            "n_round1": self.n_round1,
            "n_round2": self.n_round2,
            "marginals": {f: dict(c) for f, c in self.marginals.items()},
            "plan": self.plan.to_dict(),
            "n_released": self.n_released,
            "exposure_at_k": self.exposure_at_k,
            "verified": self.verified,
            "redacted": dict(self.redacted),
            "tallies": {k: dict(v) for k, v in self.tallies.items()},
            "seconds": dict(self.seconds),
            "users_per_second": dict(self.users_per_second),
            "enrolment": self.enrolment,
            "rounds": list(self.rounds),
            "pairs": None if self.pairs is None else dict(self.pairs),
            "consistent_below_k": self.consistent_below_k,
        }


# ------------------------------------------------------------------------- encoding in worker processes

def worker_user(spec: dict[str, Any], keys: dict[str, str]) -> User:
    """The :class:`User` a worker process builds from a spec's dict and the parties' key texts
    (what crosses a process boundary)."""
    return User(
        CollectionSpec.from_dict(spec),
        shuffler_key=PublicKey.from_text(keys["shuffler"]),
        curator_key=PublicKey.from_text(keys["curator"]),
        analyst_key=PublicKey.from_text(keys["analyst"]),
    )


_WORKER_USER: User | None = None
_WORKER_ENROL: tuple[str, dict[str, str], httpx.Client] | None = None  # (enrol URL, issuer keys, client)


def _init_worker(
    spec: dict[str, Any], keys: dict[str, str], enrol: tuple[str, dict[str, str]] | None = None
) -> None:
    global _WORKER_USER, _WORKER_ENROL
    _WORKER_USER = worker_user(spec, keys)
    if enrol is not None:
        transport = httpx.HTTPTransport(socket_options=NODELAY)
        _WORKER_ENROL = (enrol[0], enrol[1], httpx.Client(timeout=120.0, transport=transport))


def _enrol_users(invites: list[str], rounds: tuple[int, ...]) -> list[dict[int, Credential]]:
    """Each device's enrolment (blinded token inputs, one invite each), sent in one request as a
    gateway would; returns the unblinded, checked credentials."""
    if _WORKER_ENROL is None or _WORKER_USER is None:
        raise ProtocolError("the worker was not initialised for enrolment")
    url, issuer_keys, http = _WORKER_ENROL
    pending = Enrolment(_WORKER_USER.spec.id, rounds, users=len(invites))
    body = {"users": [{"invite": i, "blinded": b} for i, b in zip(invites, pending.blinded, strict=True)]}
    deadline = time.monotonic() + 60.0
    attempt = 0
    while True:
        try:
            r = http.post(url, json=body)
            if r.status_code not in RETRY_STATUS or time.monotonic() >= deadline:
                break
        except httpx.TransportError:
            if time.monotonic() >= deadline:
                raise
        time.sleep(backoff(attempt))
        attempt += 1
    if r.status_code != 200:
        raise ProtocolError(f"enrolment refused: HTTP {r.status_code}: {r.text[:300]}")
    return pending.finish(r.json()["evaluated"], issuer_keys)


def _encode_chunk(
    round_: int,
    rows: list[dict[str, Any]],
    plan: dict[str, Any] | None,
    invites: list[str] | None = None,
    rounds: tuple[int, ...] = ENROL_ROUNDS[:2],
) -> tuple[list[bytes], list[dict[int, Credential]]]:
    """The chunk's sealed messages, and (with invites) its users' fresh credentials."""
    user = _WORKER_USER
    assert user is not None, "worker not initialised"
    creds = _enrol_users(invites, rounds) if invites else []
    if round_ == 1:
        return [m for row in rows for m in user.round1(row)], creds
    if round_ == PAIR_ROUND:
        queries = PairQueries.from_dict(plan or {})
        return [m for row in rows for m in user.pairs(row, queries)], creds
    p = PublishedPlan.from_dict(plan or {})
    return [user.round2(row, p) for row in rows], creds


def _ping() -> None:
    return None


# ------------------------------------------------------------------------------------- verification


def exposure_at_k(rows: Sequence[Sequence[Any]], k: int) -> float:
    """Share of ``rows`` (0..1) whose exact tuple is held by fewer than ``k`` rows (0 when empty).

    Examples
    --------
    >>> exposure_at_k([("a",), ("a",), ("b",)], k=2)   # the one 'b' row is alone
    0.3333333333333333
    """
    if not rows:
        return 0.0
    sizes = Counter(tuple(encode_value(v) for v in r) for r in rows)
    return sum(c for c in sizes.values() if c < k) / len(rows)


def consistent_below_k(source: Sequence[Sequence[Any]], released: Sequence[Sequence[Any]], k: int) -> float:
    """Share of users (rows of ``source``) consistent with fewer than k released rows.

    A released row is consistent with a user when each entry is the redaction marker or equals the
    user's value. Counted by redaction pattern (for each pattern, the released rows' other entries
    counted, each user looked up): O(n p) per pattern, never pairwise.

    >>> consistent_below_k([("a", 1), ("b", 1)], [("a", 1), (REDACTED, 1)], k=2)  # 'b' has one candidate
    0.5
    """
    if not source:
        return 0.0
    by_pattern: dict[tuple[bool, ...], Counter[tuple[Any, ...]]] = {}
    for row in released:
        pattern = tuple(v is REDACTED for v in row)
        by_pattern.setdefault(pattern, Counter())[tuple(v for v in row if v is not REDACTED)] += 1
    below = 0
    for user in source:
        n = sum(counts[tuple(v for v, hidden in zip(user, pattern, strict=True) if not hidden)]
                for pattern, counts in by_pattern.items())
        below += n < k
    return below / len(source)


def verify_release(
    source_rows: Sequence[Sequence[Any]], released: Sequence[Sequence[Any]], *, redactions: bool = False
) -> bool:
    """Whether ``released`` equals ``source_rows`` as a multiset (canonical encodings, so types
    count). With ``redactions``: equal sizes, and per column every non-redacted value occurs no more
    often than in the source, with the shortfall equal to the redacted entries."""
    if len(source_rows) != len(released):
        return False
    enc_src = [tuple(encode_value(v) for v in r) for r in source_rows]
    enc_rel = [tuple(encode_value(v) for v in r) for r in released]
    if not redactions:
        return Counter(enc_src) == Counter(enc_rel)
    red = encode_value(REDACTED)
    width = len(enc_src[0]) if enc_src else 0
    for j in range(width):
        src = Counter(r[j] for r in enc_src)
        rel = Counter(r[j] for r in enc_rel)
        n_red = rel.pop(red, 0)
        if any(rel[v] > src.get(v, 0) for v in rel) or sum(src.values()) - sum(rel.values()) != n_red:
            return False
    return True


# ----------------------------------------------------------------------------------------- the driver


async def _drive(
    url: str,
    chunks: Sequence[list[dict[str, Any]]],
    round_: int,
    plan: dict[str, Any] | None,
    pool: ProcessPoolExecutor,
    *,
    invites: Sequence[list[str]] | None,
    held: list[list[dict[int, Credential]]],
    rounds: tuple[int, ...],
    concurrency: int,
    progress: Progress,
    stage: str,
    total: int,
) -> None:
    loop = asyncio.get_running_loop()
    sem = asyncio.Semaphore(concurrency)
    done = 0
    limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
    transport = httpx.AsyncHTTPTransport(limits=limits, socket_options=NODELAY)
    async with httpx.AsyncClient(timeout=120.0, transport=transport) as http:

        async def one(i: int, rows: list[dict[str, Any]]) -> None:
            nonlocal done
            async with sem:
                fresh = invites[i] if invites is not None and not held[i] else None
                messages, creds = await loop.run_in_executor(
                    pool, _encode_chunk, round_, rows, plan, fresh, rounds
                )
                if creds:
                    held[i] = creds
                credentials = [c[round_] for c in held[i]] if held[i] else []
                await submit_async(http, url, messages, credentials=credentials)
                done += len(rows)
                progress(stage, done, total)

        await asyncio.gather(*(one(i, c) for i, c in enumerate(chunks)))


def _wait_delivered(
    admin: httpx.Client,
    shuffler: str,
    receiver: str,
    collection: str,
    round_: int,
    expected: int,
    timeout: float,
) -> dict[str, int]:
    """Flush a round at the shuffler and wait until the receiver accepted ``expected`` messages."""
    r = admin.post(f"{shuffler}/admin/v1/collections/{collection}/rounds/{round_}/flush")
    r.raise_for_status()
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        tally = admin.get(f"{receiver}/admin/v1/collections/{collection}/tally").json()
        stats = admin.get(f"{shuffler}/admin/v1/collections/{collection}/rounds/{round_}").json()
        if stats["pooled"] == 0 and tally["accepted"] + tally["duplicates"] + tally["rejected"] >= expected:
            return dict(tally)
        time.sleep(0.05)
    raise ProtocolError(
        f"round {round_}: the receiver did not get {expected} messages within {timeout:.0f} s"
    )


def simulate(
    data: DataSource,
    columns: Sequence[str],
    *,
    k: int = 5,
    budget: float = 0.05,
    users: int | None = None,
    setting: Setting = "fixed",
    round1_users: int | None = None,
    method: PlanMethod = "best",
    local_suppression: bool = False,
    suite: SuiteName = "x25519",
    batch_threshold: int = 1000,
    min_batch: int | None = None,
    enrolment: Literal["tokens", "open"] = "tokens",
    users_per_request: int = 32,
    concurrency: int = 8,
    workers: int = 2,
    seed: int | np.random.Generator | None = None,
    workdir: str | Path | None = None,
    collection: str = "simulation",
    round1_pad: int | None = None,
    round2_pad: int | None = None,
    timeout: float = 600.0,
    progress: Progress | None = None,
    pairs: Literal["auto"] | None = None,
    pairs_budget: float | None = None,
    hierarchies: Mapping[str, Any] | None = None,
    count_check: bool = True,
) -> SimulationResult:
    """Run both rounds of the shuffle protocol on loopback and verify the release.

    Starts the shuffler, curator and analyst as real processes (``python -m
    sdckit.protocol.services``) on free ports of 127.0.0.1 with fresh keys and tokens, creates the
    collection, sends every user's round-1 messages over HTTP (concurrently; each request carries
    ``users_per_request`` users' messages, as a device gateway would), closes the round, lets the
    curator decide with :func:`sdckit.protocol.decide_plan`, sends round 2, and compares the
    analyst's table with the input. The processes are stopped on return, also after an error.

    Parameters
    ----------
    data : A path or frame (anything :func:`sdckit._io.read_data` accepts); one row = one user.
    columns : The features of round 1.
    k, budget : The curator's target: at most ``budget`` (share of users, 0..1) in groups < k.
    users : Use a random sample of this many rows (default: all).
    setting : ``"fixed"``: the same users in both rounds; ``"statistical"``: a random
        ``round1_users`` of them (default half) take part in round 1 and the others in round 2.
    method : Bound of the planner. local_suppression : Publish redaction rules (seed §8).
    suite : HPKE suite. batch_threshold : The shuffler's batch threshold (messages).
    min_batch : Fewest users per forwarded batch (default: the batch threshold, at most the users
        of a round).
    enrolment : ``"tokens"``: every user enrols with a one-time invite and submits each round with
        an anonymous single-use credential (enrolment is timed within round 1); ``"open"``: no
        credentials (no protection against fake users).
    users_per_request, concurrency, workers : Users per HTTP request, requests in flight, and
        processes sealing messages.
    seed : Seed of the user sampling (not of any cryptographic randomness).
    workdir : Folder for keys, configs, stores and logs (default: a temporary folder, removed).
    round1_pad, round2_pad : Inner plaintext lengths in bytes (default: 256 and 1,024, raised to
        the next multiple of 64 that fits the longest value or row of ``data``).
    progress : ``progress(stage, done, total)`` callback.
    pairs : ``"auto"``: the optional middle round (issue 17). After round 1 the curator chooses pair
        queries (:func:`sdckit.protocol.choose_pairs`: rare values redacted, the union bound on
        the share of users in a received cell < k within ``pairs_budget``) and publishes them
        (signed, relayed by the shuffler); each user sends one message per pair through the
        shuffler under the admission rules of the other rounds (its own credential, one complete
        submission, min_batch); the curator counts the pair tables and plans from singles and
        pairs. Fixed setting only.
    pairs_budget : Share of users (0..1) the pair tables may expose (default: ``budget``).
    hierarchies : ``{column: hierarchy}`` (a :class:`sdckit.anonymize.Hierarchy`, a built-in name
        such as ``"adult:age"``, a CSV path): the curator may recode these columns
        (:func:`sdckit.protocol.decide_plan`; fixed setting), users send the generalised values,
        and the release is verified against the input recoded by the plan
        (:meth:`PublishedPlan.generalise`). The default round-2 pad also fits every label.
    count_check : True (the default, as in a deployment): the analyst recounts and co-signs the
        curator's counts, so round 1 and the pair round carry twice the messages. False measures
        the protocol without the check (its devices opt out too).
    """
    # lazy: the protocol extra's services (fastapi, uvicorn)
    from sdckit.protocol.services._launch import LocalDeployment

    cols = list(columns)
    if not cols:
        raise ParameterError("give at least one column, e.g. columns=['sex', 'race']")
    if users_per_request < 1 or concurrency < 1 or workers < 1:
        raise ParameterError("users_per_request, concurrency and workers must be >= 1")
    if pairs not in (None, "auto"):
        raise ParameterError(f"pairs={pairs!r}: use 'auto' (the pair round) or None")
    if pairs and setting != "fixed":
        raise ParameterError("the pair round needs the fixed setting (the same users in every round)")
    if hierarchies and setting != "fixed":
        raise ParameterError(
            "hierarchies: recoding is planned in the fixed setting only (the same users twice)"
        )
    frame = read_data(data, cols).frame
    native = frame.collect() if hasattr(frame, "collect") else frame
    rows: list[dict[str, Any]] = list(native.rows(named=True))
    rng = np.random.default_rng(seed)
    if users is not None:
        if not 1 <= users <= len(rows):
            raise ParameterError(f"users={users}: the data has {len(rows):,} rows; give 1..{len(rows):,}")
        rows = [rows[i] for i in np.sort(rng.choice(len(rows), size=users, replace=False))]
    if setting == "statistical":
        n1 = round1_users if round1_users is not None else len(rows) // 2
        if not 1 <= n1 < len(rows):
            raise ParameterError(f"round1_users={n1}: give 1..{len(rows) - 1} (the others send round 2)")
        order = rng.permutation(len(rows))
        rows1, rows2 = [rows[i] for i in order[:n1]], [rows[i] for i in order[n1:]]
    elif setting == "fixed":
        rows1 = rows2 = rows
    else:
        raise ParameterError(f"setting={setting!r}: use 'fixed' or 'statistical'")
    report = progress or (lambda *_: None)
    pad1 = round1_pad or _fitting_pad(256, (pack_feature_length(c, row[c]) for row in rows for c in cols))
    recode_tables = _hierarchy_tables(hierarchies, cols)
    longest_label = sum(  # a recoded value is a label or the redaction marker
        max(len(encode_value(x).encode()) for x in [REDACTED, *(x for v in t.values() for x in v)])
        for t in recode_tables.values()
    )
    pad2 = round2_pad or _fitting_pad(
        1024, (pack_row_length(cols, [row[c] for c in cols]) + longest_label for row in rows)
    )
    spec = CollectionSpec(
        id=collection, features=tuple(cols), suite=suite, setting=setting, round1_pad=pad1, round2_pad=pad2,
        min_k=max(2, k), max_budget=max(budget, pairs_budget or 0.0),  # the floors devices pin: the run's own
        count_check=count_check,
    )
    seconds: dict[str, float] = {}

    with tempfile.TemporaryDirectory(prefix="sdckit-sim-") as tmp:
        root = Path(workdir) if workdir is not None else Path(tmp)
        t0 = time.perf_counter()
        floor = max(1, min(batch_threshold, len(rows1), len(rows2)))
        with (
            LocalDeployment(
                root, suite=suite, batch_threshold=batch_threshold, min_batch=min(min_batch or floor, floor)
            ) as dep,
            dep.admin() as admin,
        ):
            urls = dep.urls
            dep.create(spec, enrolment=enrolment)
            with dep.client(collection, require_count_check=count_check) as client:
                keys = {
                    role: client.public_key(role).to_text() for role in ("shuffler", "curator", "analyst")
                }
                terms = client._collection()[1]
            enrol_cfg = None
            invites1: list[list[str]] | None = None
            invites2: list[list[str]] | None = None
            if enrolment == "tokens":
                enrol_cfg = (
                    f"{urls['shuffler']}/v1/collections/{collection}/enrol",
                    dict(terms["issuer_keys"]),
                )
                codes = dep.invites(collection, len(rows1) + (len(rows2) if setting == "statistical" else 0))
                invites1 = _chunks(codes[: len(rows1)], users_per_request)
                invites2 = (
                    _chunks(codes[len(rows1) :], users_per_request) if setting == "statistical" else None
                )
            seconds["startup"] = time.perf_counter() - t0
            # fork (POSIX) starts workers without re-importing the caller's __main__; they are
            # started here, before any thread or event loop exists in this process
            ctx = mp.get_context("fork" if "fork" in mp.get_all_start_methods() else "spawn")
            # an enrolling worker waits for the shuffler's answer half of the time: twice as many
            # processes keep the same CPU busy (the CPU work per user is the same)
            n_proc = workers * (2 if enrol_cfg else 1)
            rounds = ENROL_ROUNDS if pairs else ENROL_ROUNDS[:2]
            with ProcessPoolExecutor(
                n_proc, mp_context=ctx, initializer=_init_worker, initargs=(spec.to_dict(), keys, enrol_cfg)
            ) as pool:
                for f in [pool.submit(_ping) for _ in range(n_proc)]:
                    f.result()

                held: dict[int, list[list[dict[int, Credential]]]] = {}

                def run(round_: int, rs: list[dict[str, Any]], plan: dict[str, Any] | None) -> None:
                    chunks = _chunks(rs, users_per_request)
                    invites = (
                        invites1 if round_ == 1 else (invites2 if setting == "statistical" else invites1)
                    )
                    if round_ == 1 or setting == "statistical":
                        held[round_] = [[] for _ in chunks]
                    else:  # the same users: their round-2 credentials came with round 1
                        held[round_] = held[1]
                    asyncio.run(
                        _drive(
                            submit_url(urls["shuffler"], collection, round_),
                            chunks,
                            round_,
                            plan,
                            pool,
                            invites=invites,
                            held=held[round_],
                            rounds=rounds,
                            concurrency=concurrency,
                            progress=report,
                            stage=f"round {round_}",
                            total=len(rs),
                        )
                    )

                t = time.perf_counter()
                run(1, rows1, None)
                seconds["round1_submit"] = time.perf_counter() - t
                curator_tally = _wait_delivered(
                    admin, urls["shuffler"], urls["curator"], collection, 1, len(rows1) * len(cols), timeout
                )
                seconds["round1"] = time.perf_counter() - t

                pair_info: dict[str, Any] | None = None
                if pairs:
                    t = time.perf_counter()
                    r = admin.post(
                        f"{urls['curator']}/admin/v1/collections/{collection}/pairs",
                        json={"k": k, "budget": budget if pairs_budget is None else pairs_budget},
                    )
                    if r.status_code != 200:
                        raise ProtocolError(
                            f"the curator could not choose pairs: {r.json().get('detail', r.text)}"
                        )
                    with dep.client(collection, require_count_check=count_check) as client:  # as devices get them: relayed, signed
                        queries = client.pairs()
                    if queries is None:
                        raise ProtocolError("the shuffler does not relay the curator's pair queries")
                    if queries.queries:
                        run(PAIR_ROUND, rows1, queries.to_dict())
                        seconds["pairs_submit"] = time.perf_counter() - t
                        curator_tally = _wait_delivered(
                            admin,
                            urls["shuffler"],
                            urls["curator"],
                            collection,
                            PAIR_ROUND,
                            len(rows1) * (len(cols) + len(queries.queries)),
                            timeout,
                        )
                    tables = admin.get(
                        f"{urls['curator']}/admin/v1/collections/{collection}/pairs/tables"
                    ).json()["tables"]
                    pair_info = {
                        "queries": queries.to_dict(),
                        "tables": {
                            " x ".join(tb["columns"]): {
                                " | ".join(_label(x) for x in cell[:-1]): cell[-1] for cell in tb["cells"]
                            }
                            for tb in tables
                        },
                    }
                    seconds["pairs"] = time.perf_counter() - t

                t = time.perf_counter()
                r = admin.post(
                    f"{urls['curator']}/admin/v1/collections/{collection}/plan",
                    json={
                        "k": k,
                        "budget": budget,
                        "method": method,
                        "n_release": len(rows2),
                        "local_suppression": local_suppression,
                        **({"hierarchies": recode_tables} if recode_tables else {}),
                    },
                )
                if r.status_code != 200:
                    raise ProtocolError(f"the curator could not decide: {r.json().get('detail', r.text)}")
                with dep.client(collection, require_count_check=count_check) as client:  # the plan as devices get it: relayed, signed
                    published = client.plan()
                if published is None:
                    raise ProtocolError("the shuffler does not relay the curator's plan")
                plan, plan_dict = published, published.to_dict()
                marg = admin.get(f"{urls['curator']}/admin/v1/collections/{collection}/marginals").json()[
                    "counts"
                ]
                admin.put(
                    f"{urls['analyst']}/admin/v1/collections/{collection}",
                    json={"spec": spec.to_dict(), "plan": plan_dict},
                ).raise_for_status()
                seconds["plan"] = time.perf_counter() - t

                t = time.perf_counter()
                if plan.columns:
                    run(2, rows2, plan_dict)
                seconds["round2_submit"] = time.perf_counter() - t
                analyst_tally = (
                    _wait_delivered(
                        admin, urls["shuffler"], urls["analyst"], collection, 2, len(rows2), timeout
                    )
                    if plan.columns
                    else {"accepted": 0, "duplicates": 0, "rejected": 0}
                )
                seconds["round2"] = time.perf_counter() - t
            release = admin.get(f"{urls['analyst']}/admin/v1/collections/{collection}/release").json()
            shuffler_stats = {
                f"shuffler_round{r_}": admin.get(
                    f"{urls['shuffler']}/admin/v1/collections/{collection}/rounds/{r_}"
                ).json()
                for r_ in ((1, PAIR_ROUND, 2) if pairs else (1, 2))
            }
        seconds["total"] = time.perf_counter() - t0

    released = [tuple(decode_value(_json_text(v)) for v in row) for row in release["rows"]]
    source = [tuple(plan.generalise(c, row[c]) for c in plan.columns) for row in rows2]  # recoded alike
    redacted = {c: sum(1 for r in released if r[i] is REDACTED) for i, c in enumerate(plan.columns)}
    verified = verify_release(source, released, redactions=bool(plan.redactions)) if plan.columns else True
    marginals = {  # in the collection's feature order, values by decreasing count
        f: {_label(key): n for key, n in sorted(marg.get(f, {}).items(), key=lambda kv: -kv[1])} for f in cols
    }
    ups = {
        "round1": len(rows1) / seconds["round1"] if seconds["round1"] > 0 else math.nan,
        "round1_submit": len(rows1) / seconds["round1_submit"] if seconds["round1_submit"] > 0 else math.nan,
        "round2": len(rows2) / seconds["round2"] if seconds["round2"] > 0 and plan.columns else math.nan,
        "round2_submit": len(rows2) / seconds["round2_submit"]
        if seconds["round2_submit"] > 0 and plan.columns
        else math.nan,
    }
    if pair_info is not None:
        pair_info["measured"] = plan.pair_measured
        pair_info["bound"] = pair_info["queries"]["bound"]
    return SimulationResult(
        pairs=pair_info,
        collection=collection,
        setting=setting,
        suite=suite,
        features=tuple(cols),
        n_round1=len(rows1),
        n_round2=len(rows2),
        marginals=marginals,
        plan=plan,
        n_released=len(released),
        exposure_at_k=exposure_at_k(released, k) if plan.columns else 0.0,
        consistent_below_k=consistent_below_k(source, released, k) if plan.columns else 0.0,
        verified=verified,
        redacted=redacted,
        tallies={**shuffler_stats, "curator": curator_tally, "analyst": analyst_tally},
        seconds=seconds,
        users_per_second=ups,
        enrolment=enrolment,
    )


def _hierarchy_tables(
    hierarchies: Mapping[str, Any] | None, columns: Sequence[str]
) -> dict[str, dict[str, list[str]]]:
    """Each hierarchy as the table the curator service takes, ``{value: [labels]}`` (it reads no
    file a request names)."""
    # lazy: start-up time (loads scipy, sklearn)
    from sdckit.anonymize._hierarchy import as_hierarchy

    unknown = sorted(set(hierarchies or {}) - set(columns))
    if unknown:
        raise ParameterError(f"hierarchies for {unknown}: not among the columns {list(columns)}")
    return {
        c: {v: list(t) for v, t in as_hierarchy(h, c).table.items()} for c, h in (hierarchies or {}).items()
    }


def _chunks(items: Sequence[Any], size: int) -> list[list[Any]]:
    return [list(items[i : i + size]) for i in range(0, len(items), size)]


def _fitting_pad(default: int, lengths: Iterable[int]) -> int:
    need = max(lengths, default=0)
    return max(default, -(-need // 64) * 64)


def _json_text(v: Any) -> str:
    return json.dumps(v, ensure_ascii=False, separators=(",", ":"))


def _label(key: str) -> str:
    v = decode_value(key)
    return "null" if v is None else str(v)
