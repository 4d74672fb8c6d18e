"""The pair round (issue 17, middle round): users' pair messages, the curator's pair tables, the plan."""

from __future__ import annotations

import json
import secrets
from collections import Counter
from pathlib import Path
from typing import Any

import httpx
import polars as pl
import pytest
from typer.testing import CliRunner

from sdckit.cli import app
from sdckit.errors import MalformedMessageError, ProtocolError
from sdckit.protocol import (
    REDACTED,
    CollectionSpec,
    PrivateKey,
    Shuffler,
    User,
    decide_plan,
    decode_value,
    encode_value,
)
from sdckit.protocol._crypto import info_label, seal
from sdckit.protocol._enrol import Credential
from sdckit.protocol._planning import REDACTED_KEY, choose_pairs
from sdckit.protocol._spec import PAIR_ROUND, PairQueries, PairQuery, PublishedPlan
from sdckit.protocol._wire import KIND_PAIR, SALT_LENGTH, pack_row
from sdckit.protocol.parties import Curator, PairCurator, secure_permutation

COLUMNS = ("workclass", "marital-status", "race", "sex")
KEYS = {role: PrivateKey.generate() for role in ("shuffler", "curator", "analyst")}
SPEC = CollectionSpec(id="pairs-test", features=COLUMNS, count_check=False)  # in memory: no analyst
K, BUDGET = 3, 0.2


def expected_tables(
    frame: pl.DataFrame, queries: PairQueries
) -> dict[tuple[str, ...], dict[tuple[str, str], int]]:
    """Independent count: polars group-by on the users' values, rare values replaced by the marker's key."""
    out = {}
    for q in queries.queries:
        enc = frame.select(
            [
                pl.col(c)
                .map_elements(
                    lambda v, c=c, q=q: (
                        REDACTED_KEY if encode_value(v) in q.redact.get(c, ()) else encode_value(v)
                    ),
                    return_dtype=pl.String,
                )
                .alias(c)
                for c in q.columns
            ]
        )
        grouped = enc.group_by(list(q.columns)).len()
        out[q.columns] = {(r[0], r[1]): r[2] for r in grouped.iter_rows()}
    return out


def _user() -> User:
    return User(SPEC, shuffler_key=KEYS["shuffler"].public_key(), curator_key=KEYS["curator"].public_key())


def _round1(rows: list[dict[str, Any]]) -> Curator:
    user, shuffler, curator = _user(), Shuffler(KEYS["shuffler"]), Curator(KEYS["curator"], SPEC)
    inner = [shuffler.strip(m, SPEC.id, 1) for row in rows for m in user.round1(row)]
    curator.receive(secure_permutation(inner))
    return curator


@pytest.fixture(scope="module")
def frame(adult: pl.DataFrame) -> pl.DataFrame:
    return adult.head(500).select(COLUMNS)


def test_pair_round_in_memory_counts_the_redacted_pair_tables(frame: pl.DataFrame) -> None:
    rows = list(frame.rows(named=True))
    curator = _round1(rows)
    queries = choose_pairs(curator.counts, collection=SPEC.id, k=K, budget=BUDGET, pad=256)
    assert queries.queries
    assert queries.bound <= BUDGET
    assert any(q.redact for q in queries.queries)  # rare values are redacted somewhere
    queries = PairQueries.from_dict(queries.to_dict())  # as devices get it
    user, shuffler = _user(), Shuffler(KEYS["shuffler"])
    sealed = [m for row in rows for m in user.pairs(row, queries)]
    assert len({len(m) for m in sealed}) == 1  # one exact length for the round
    pc = PairCurator(KEYS["curator"], SPEC, queries)
    tally = pc.receive(secure_permutation([shuffler.strip(m, SPEC.id, PAIR_ROUND) for m in sealed]))
    assert tally.accepted == len(rows) * len(queries.queries)
    assert tally.rejected == 0
    got = {cols: dict(t) for cols, t in pc.tables.items()}
    assert got == expected_tables(frame, queries)
    # the plan from singles and pairs releases at least what singles alone release, and says so
    plain = decide_plan(curator.counts, collection=SPEC.id, k=K, budget=BUDGET)
    paired = decide_plan(
        curator.counts, collection=SPEC.id, k=K, budget=BUDGET, pair_tables=pc.tables, pair_queries=queries
    )
    assert len(paired.columns) >= len(plain.columns)
    assert paired.bound <= BUDGET
    assert paired.rounds == ("singles", "pairs", "release")
    assert plain.rounds == ("singles", "release")
    assert paired.pair_bound == queries.bound
    small = sum(c for t in got.values() for c in t.values() if c < K) / len(rows)
    assert paired.pair_measured == pytest.approx(small)
    assert PublishedPlan.from_dict(paired.to_dict()) == paired


def test_pair_curator_rejects_unasked_pairs_and_clear_rare_values(frame: pl.DataFrame) -> None:
    queries = PairQueries(
        collection=SPEC.id,
        k=K,
        queries=(PairQuery(columns=("race", "sex"), redact={"race": (encode_value("Other"),)}),),
        bound=0.0,
        budget=BUDGET,
        pad=256,
    )
    pc = PairCurator(KEYS["curator"], SPEC, queries)
    info = info_label(SPEC.id, PAIR_ROUND, "curator")

    def sealed(cols: tuple[str, str], values: list[Any]) -> bytes:
        plain = pack_row(cols, values, secrets.token_bytes(SALT_LENGTH), 256, kind=KIND_PAIR)
        return seal(KEYS["curator"].public_key(), plain, info)

    t = pc.receive(
        [
            sealed(("workclass", "sex"), ["Private", "Male"]),  # not asked
            sealed(("race", "sex"), ["Other", "Male"]),  # a rare value in clear
            sealed(("race", "sex"), [REDACTED, "Male"]),
            sealed(("race", "sex"), ["White", "Female"]),
        ]
    )
    assert (t.accepted, t.rejected) == (2, 2)
    assert dict(pc.tables[("race", "sex")]) == {
        (REDACTED_KEY, encode_value("Male")): 1,
        (encode_value("White"), encode_value("Female")): 1,
    }
    assert set(pc.tables) == {("race", "sex")}
    with pytest.raises(MalformedMessageError):
        pc.open(sealed(("sex", "race"), ["Male", "White"]))  # the asked order only


@pytest.mark.services
def test_simulate_with_the_pair_round_over_real_services(frame: pl.DataFrame, tmp_path: Path) -> None:
    """CLI over the three services on loopback: the curator's pair tables equal a polars count of
    the submitted users with rare values redacted, only asked pairs arrive, and the plan from
    singles and pairs releases at least what singles alone do, verified on the release."""
    path = tmp_path / "adult_500.csv"
    frame.write_csv(path)
    args = ["protocol", "simulate", str(path), "--columns", ",".join(COLUMNS), "--k", str(K)]
    args += ["--budget", str(BUDGET), "--pairs", "auto", "--batch-threshold", "100", "--json"]
    r = CliRunner().invoke(app, args)
    assert r.exit_code == 0, r.output
    out = json.loads(r.stdout)
    assert out["rounds"] == ["singles", "pairs", "release"]
    assert out["plan"]["rounds"] == out["rounds"]
    queries = PairQueries.from_dict(out["pairs"]["queries"])
    assert queries.queries
    assert queries.bound <= BUDGET
    assert out["plan"]["pair_bound"] == queries.bound
    # the tables the curator counted, against polars on the input (labels: the values as text)
    want = {
        " x ".join(cols): {
            " | ".join("REDACTED" if key == REDACTED_KEY else str(decode_value(key)) for key in cell): n
            for cell, n in table.items()
        }
        for cols, table in expected_tables(frame, queries).items()
    }
    assert out["pairs"]["tables"] == want  # every asked pair, and no other
    n = frame.height
    assert out["tallies"]["curator"] == {
        "accepted": n * (len(COLUMNS) + len(queries.queries)),
        "duplicates": 0,
        "rejected": 0,
    }
    assert out["tallies"]["shuffler_round3"]["users"] == n
    small = sum(c for t in want.values() for c in t.values() if c < K) / n
    assert out["plan"]["pair_measured"] == pytest.approx(small)
    # singles alone, from an independent count of the same users
    counts = {c: dict(Counter(encode_value(v) for v in frame[c].to_list())) for c in COLUMNS}
    plain = decide_plan(counts, collection="simulation", k=K, budget=BUDGET)
    assert len(out["plan"]["columns"]) >= len(plain.columns)
    assert out["verified"] is True
    sizes = frame.group_by(out["plan"]["columns"]).len()
    assert out["exposure_at_k"] == pytest.approx(sizes.filter(pl.col("len") < K)["len"].sum() / n, abs=1e-15)
    assert out["exposure_at_k"] <= out["plan"]["bound"] <= BUDGET


def test_a_pair_table_that_does_not_count_the_users_is_left_out(frame: pl.DataFrame) -> None:
    counts = {c: dict(Counter(encode_value(v) for v in frame[c].to_list())) for c in COLUMNS}
    queries = choose_pairs(counts, collection=SPEC.id, k=K, budget=BUDGET)
    tables = expected_tables(frame, queries)
    first = next(iter(tables))
    stray = {
        **tables,
        first: {**tables[first], next(iter(tables[first])): tables[first][next(iter(tables[first]))] + 1},
    }
    plan = decide_plan(
        counts, collection=SPEC.id, k=K, budget=BUDGET, pair_tables=stray, pair_queries=queries
    )
    full = decide_plan(
        counts, collection=SPEC.id, k=K, budget=BUDGET, pair_tables=tables, pair_queries=queries
    )
    without = {c: t for c, t in tables.items() if c != first}
    small = sum(x for t in without.values() for x in t.values() if x < K) / frame.height
    assert plan.pair_measured == pytest.approx(small)
    assert full.pair_measured >= plan.pair_measured
    assert plan.bound <= BUDGET


@pytest.mark.services
def test_the_shuffler_admits_the_pair_round_like_the_others(frame: pl.DataFrame, tmp_path: Path) -> None:
    """Over HTTP: no pair round before the curator asks; then one complete submission (a message
    per asked pair) of the round's exact length; published queries are fixed."""
    from tests.protocol.conftest import wait_until

    from sdckit.protocol._client import submit_url
    from sdckit.protocol._wire import pack_batch
    from sdckit.protocol.services._launch import LocalDeployment

    cols = ("race", "sex", "marital-status")
    rows = list(frame.head(40).select(cols).rows(named=True))
    spec = CollectionSpec(id="pairs-http", features=cols, max_budget=1.0)
    with LocalDeployment(tmp_path, batch_threshold=1, poll_seconds=0.05) as dep, dep.admin() as admin:
        dep.create(spec, enrolment="open")
        sh, cu = dep.urls["shuffler"], dep.urls["curator"]
        for r in (1, PAIR_ROUND):
            admin.post(f"{sh}/admin/v1/collections/{spec.id}/rounds/{r}/flush").raise_for_status()
        with dep.client(spec.id) as client:
            user = client.user()
            assert client.pairs() is None
        early = httpx.post(submit_url(sh, spec.id, PAIR_ROUND), content=pack_batch([b"x" * 100]))
        assert early.status_code == 404
        body = pack_batch([m for row in rows for m in user.round1(row)])
        assert httpx.post(submit_url(sh, spec.id, 1), content=body).status_code == 202
        tally = f"{cu}/admin/v1/collections/{spec.id}/tally"
        wait_until(lambda: admin.get(tally).json()["accepted"] == len(rows) * len(cols))
        r = admin.post(f"{cu}/admin/v1/collections/{spec.id}/pairs", json={"k": 1, "budget": 1.0})
        assert r.status_code == 422  # below the spec's min_k (issue 24): devices would refuse it
        r = admin.post(f"{cu}/admin/v1/collections/{spec.id}/pairs", json={"k": 2, "budget": 1.0})
        assert r.status_code == 200, r.text
        assert admin.post(f"{cu}/admin/v1/collections/{spec.id}/pairs", json={"k": 3}).status_code == 409
        with dep.client(spec.id) as client:
            queries = client.pairs()  # relayed, signature checked
        assert queries is not None
        assert len(queries.queries) == 3
        sealed = [user.pairs(row, queries) for row in rows]
        url = submit_url(sh, spec.id, PAIR_ROUND)
        assert httpx.post(url, content=pack_batch(sealed[0][:2])).status_code == 400  # incomplete
        assert httpx.post(url, content=pack_batch([*sealed[0][:2], sealed[0][2][:-1]])).status_code == 400
        assert httpx.post(url, content=pack_batch([m for s in sealed for m in s])).status_code == 202
        wait_until(lambda: admin.get(tally).json()["accepted"] == len(rows) * (len(cols) + 3))
        got = admin.get(f"{cu}/admin/v1/collections/{spec.id}/pairs/tables").json()["tables"]
    counted = {tuple(t["columns"]): {tuple(c[:2]): c[2] for c in t["cells"]} for t in got}
    marker = encode_value(REDACTED)
    want = {
        q.columns: dict(
            Counter(
                tuple(
                    marker if encode_value(row[c]) in q.redact.get(c, ()) else encode_value(row[c])
                    for c in q.columns
                )
                for row in rows
            )
        )
        for q in queries.queries
    }
    assert counted == want


@pytest.mark.services
def test_enrolled_devices_take_part_in_all_three_rounds_with_the_client(
    frame: pl.DataFrame, tmp_path: Path
) -> None:
    """A device's whole session through :class:`Client`, over the three services with token
    enrolment: one invite gives a credential per round (singles, pairs, release); the pair round
    is admitted like the others (a spent or another round's credential is refused); the curator's
    tables equal an independent count, and the release equals the users' rows."""
    from tests.protocol.conftest import wait_until

    from sdckit.protocol._client import credential_header, submit_url
    from sdckit.protocol._wire import pack_batch
    from sdckit.protocol.services._launch import LocalDeployment

    rows = list(frame.head(100).rows(named=True))
    spec = CollectionSpec(id="pairs-devices", features=COLUMNS, max_budget=BUDGET)
    with LocalDeployment(tmp_path, batch_threshold=10_000, min_batch=5, poll_seconds=0.05) as dep:
        dep.create(spec, enrolment="tokens")
        admin = dep.admin()
        sh, cu, an = dep.urls["shuffler"], dep.urls["curator"], dep.urls["analyst"]
        tally = f"{cu}/admin/v1/collections/{spec.id}/tally"
        clients = [dep.client(spec.id, invite=i) for i in dep.invites(spec.id, len(rows))]
        try:
            for c, row in zip(clients, rows, strict=True):
                c.send_round1(row)  # enrols first: credentials of rounds 1, 2 and 3
                assert set(c.credentials) == {1, 2, PAIR_ROUND}
            with pytest.raises(ProtocolError, match="no pair queries"):
                clients[0].send_pairs(rows[0])  # the curator has not asked
            admin.post(f"{sh}/admin/v1/collections/{spec.id}/rounds/1/flush").raise_for_status()
            wait_until(lambda: admin.get(tally).json()["accepted"] == len(rows) * len(COLUMNS))
            r = admin.post(f"{cu}/admin/v1/collections/{spec.id}/pairs", json={"k": K, "budget": BUDGET})
            assert r.status_code == 200, r.text
            queries = clients[0].pairs()
            assert queries is not None
            assert queries.queries
            for c, row in zip(clients, rows, strict=True):
                ack = c.send_pairs(row)
                assert ack["accepted"] == 2 * len(queries.queries)  # the curator's and the analyst's
            url = submit_url(sh, spec.id, PAIR_ROUND)
            body = pack_batch(clients[1].user().pairs(rows[1], queries))
            spent = httpx.post(url, content=body, headers=credential_header([clients[0].credentials[PAIR_ROUND]]))
            assert spent.status_code == 409  # one submission per credential and round
            other = Credential(PAIR_ROUND, clients[0].credentials[1].nonce, clients[0].credentials[1].output)
            assert httpx.post(url, content=body, headers=credential_header([other])).status_code == 403
            dep.kill("shuffler")  # a restart with the whole round pooled: the flush fetches the queries
            dep.start("shuffler")
            admin.post(f"{sh}/admin/v1/collections/{spec.id}/rounds/{PAIR_ROUND}/flush").raise_for_status()
            n_msgs = len(rows) * (len(COLUMNS) + len(queries.queries))
            wait_until(lambda: admin.get(tally).json()["accepted"] == n_msgs)
            got = admin.get(f"{cu}/admin/v1/collections/{spec.id}/pairs/tables").json()["tables"]
            counted = {tuple(t["columns"]): {tuple(c[:2]): c[2] for c in t["cells"]} for t in got}
            sub = pl.DataFrame(rows)
            assert counted == expected_tables(sub, queries)
            plan = admin.post(f"{cu}/admin/v1/collections/{spec.id}/plan", json={"k": K, "budget": BUDGET})
            assert plan.status_code == 200, plan.text
            published = clients[0].plan()
            assert published is not None
            assert published.rounds == ("singles", "pairs", "release")
            assert published.columns
            admin.put(
                f"{an}/admin/v1/collections/{spec.id}", json={"spec": spec.to_dict(), "plan": published.to_dict()}
            ).raise_for_status()
            for c, row in zip(clients, rows, strict=True):
                c.send_round2(row)
            admin.post(f"{sh}/admin/v1/collections/{spec.id}/rounds/2/flush").raise_for_status()
            release = f"{an}/admin/v1/collections/{spec.id}/release"
            wait_until(lambda: len(admin.get(release).json()["rows"]) == len(rows))
            released = Counter(tuple(r) for r in admin.get(release).json()["rows"])
        finally:
            for c in clients:
                c.close()
            admin.close()
    want = Counter(tuple(row[c] for c in published.columns) for row in rows)
    assert released == want
