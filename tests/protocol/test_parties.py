"""The four parties as pure logic, end to end in memory, against independent counts."""

from __future__ import annotations

import itertools
import math
import os
from collections import Counter
from typing import Any

import numpy as np
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import binom, chisquare

from sdckit.errors import MalformedMessageError, ParameterError
from sdckit.protocol import (
    REDACTED,
    Analyst,
    CollectionSpec,
    Curator,
    PrivateKey,
    PublishedPlan,
    Redaction,
    Shuffler,
    User,
    decide_plan,
    decoy_probability,
    encode_value,
    exposure_at_k,
    info_label,
    pack_feature,
    seal,
    secure_permutation,
    suppress_rare,
    verify_release,
)
from sdckit.protocol._planning import statistical_bound
from sdckit.risk import Marginals

from .conftest import FEATURES

KEYS = {role: PrivateKey.generate() for role in ("shuffler", "curator", "analyst")}
# the parties' own logic in memory: the analyst's recount (count_check, on by default) has its
# own tests against the services (test_count_check.py)
SPEC = CollectionSpec(id="adult-test", features=FEATURES, count_check=False)


def _user(spec: CollectionSpec = SPEC) -> User:
    return User(
        spec,
        shuffler_key=KEYS["shuffler"].public_key(),
        curator_key=KEYS["curator"].public_key(),
        analyst_key=KEYS["analyst"].public_key(),
    )


def _round1(rows: list[dict[str, Any]]) -> tuple[Curator, list[bytes]]:
    user, shuffler, curator = (
        _user(),
        Shuffler(KEYS["shuffler"], batch_threshold=1),
        Curator(KEYS["curator"], SPEC),
    )
    for row in rows:
        for m in user.round1(row):
            shuffler.submit(m, SPEC.id, 1)
    batch = shuffler.release(SPEC.id, 1)
    curator.receive(batch)
    return curator, batch


@pytest.fixture(scope="module")
def round1(adult_rows: list[dict[str, Any]]) -> tuple[Curator, list[bytes]]:
    """Round 1 of the 600 users, once for the module (the tests below only read it)."""
    return _round1(adult_rows)


def test_round1_counts_equal_the_data_marginals(
    adult: pl.DataFrame, adult_rows: list[dict[str, Any]], round1: tuple[Curator, list[bytes]]
) -> None:
    curator, batch = round1
    assert len(batch) == len(adult_rows) * len(FEATURES)  # every user sends one message per feature
    # independent count: polars value_counts of the same 600 rows
    for f in FEATURES:
        vc = adult.head(600)[f].value_counts()
        expected = {encode_value(v): n for v, n in zip(vc[f].to_list(), vc["count"].to_list(), strict=True)}
        assert dict(curator.counts[f]) == expected
    assert curator.tally.accepted == len(batch)
    assert curator.tally.rejected == 0


def test_duplicates_counted_once_and_malformed_rejected(adult_rows: list[dict[str, Any]]) -> None:
    curator, batch = _round1(adult_rows[:50])
    before = {f: dict(c) for f, c in curator.counts.items()}
    t = curator.receive(batch[:30])  # a replayed part of the batch
    assert (t.accepted, t.duplicates, t.rejected) == (0, 30, 0)
    info = info_label(SPEC.id, 1, "curator")
    pub = KEYS["curator"].public_key()
    bad = [
        b"",  # empty
        batch[0][:-1],  # truncated
        seal(
            KEYS["analyst"].public_key(), pack_feature("sex", "Male", os.urandom(16), 256), info
        ),  # wrong key
        seal(
            pub, pack_feature("sex", "Male", os.urandom(16), 256), info_label(SPEC.id, 2, "curator")
        ),  # round 2
        seal(
            pub, pack_feature("income", ">50K", os.urandom(16), 256), info
        ),  # not a feature of the collection
        seal(pub, pack_feature("sex", "Male", os.urandom(16), 128), info),  # wrong pad length
    ]
    t = curator.receive(bad)
    assert (t.accepted, t.duplicates, t.rejected) == (0, 0, len(bad))
    assert {f: dict(c) for f, c in curator.counts.items()} == before


def test_shuffler_rejects_what_it_cannot_open() -> None:
    s = Shuffler(KEYS["shuffler"])
    msg = _user().round1({"age": 1, "sex": "F", "race": "W", "marital-status": "x"})[0]
    for bad, cid, r in ((msg[:-3], SPEC.id, 1), (msg, "other", 1), (msg, SPEC.id, 2)):
        with pytest.raises(MalformedMessageError):
            s.strip(bad, cid, r)
    assert len(s.strip(msg, SPEC.id, 1, pad_length=256)) == 32 + 256 + 16
    with pytest.raises(MalformedMessageError, match="inner ciphertext"):
        s.strip(msg, SPEC.id, 1, pad_length=200)
    with pytest.raises(ParameterError):
        Shuffler(KEYS["shuffler"], batch_threshold=0)


def test_batch_threshold_holds_the_pool() -> None:
    s = Shuffler(KEYS["shuffler"], batch_threshold=5)
    for m in _user().round1({"age": 1, "sex": "F", "race": "W", "marital-status": "x"}):
        s.submit(m, SPEC.id, 1)
    assert s.release(SPEC.id, 1) == []  # 4 < 5
    assert len(s.release(SPEC.id, 1, force=True)) == 4
    assert s.release(SPEC.id, 1, force=True) == []


def test_both_rounds_release_equals_input(
    adult_rows: list[dict[str, Any]], round1: tuple[Curator, list[bytes]]
) -> None:
    curator, _ = round1
    plan = curator.decide(k=5, budget=0.05)
    assert plan.columns
    assert set(plan.columns) <= set(FEATURES)
    user, shuffler = _user(), Shuffler(KEYS["shuffler"], batch_threshold=1)
    for row in adult_rows:
        shuffler.submit(user.round2(row, plan), SPEC.id, 2, plan_sha256=plan.sha256())
    analyst = Analyst(KEYS["analyst"], SPEC, plan)
    batch = shuffler.release(SPEC.id, 2)
    analyst.receive(batch)
    assert analyst.receive(batch[:10]).duplicates == 10
    source = [tuple(r[c] for c in plan.columns) for r in adult_rows]
    assert verify_release(source, analyst.rows)
    assert not verify_release(source, [*analyst.rows[:-1], ("not a value",) * len(plan.columns)])
    frame = analyst.release()
    assert frame.columns == list(plan.columns)
    assert frame.height == len(adult_rows)
    # the planner's bound holds on the real release; brute force with polars group_by
    sizes = frame.group_by(list(plan.columns)).len()
    share = sizes.filter(pl.col("len") < 5)["len"].sum() / frame.height
    assert share == pytest.approx(exposure_at_k(analyst.rows, 5), abs=0)
    assert share <= plan.bound <= plan.budget


def test_analyst_rejects_rows_off_plan(adult_rows: list[dict[str, Any]]) -> None:
    plan = PublishedPlan(collection=SPEC.id, columns=("sex",), k=5, budget=0.05, bound=0.0, method="best")
    other = PublishedPlan(
        collection=SPEC.id, columns=("sex", "race"), k=5, budget=0.05, bound=0.0, method="best"
    )
    analyst = Analyst(KEYS["analyst"], SPEC, plan)
    s = Shuffler(KEYS["shuffler"])
    sealed = _user().round2(adult_rows[0], other)
    # issue 37: the plan's hash is in the outer label, so the shuffler that pinned `plan` cannot
    # open a row sealed for `other` (refused before its credential is spent) ...
    with pytest.raises(MalformedMessageError):
        s.strip(sealed, SPEC.id, 2, plan_sha256=plan.sha256())
    with pytest.raises(MalformedMessageError):
        s.strip(sealed, SPEC.id, 2)
    # ... and a shuffler that took it anyway still hands the analyst a row it rejects
    inner = s.strip(sealed, SPEC.id, 2, plan_sha256=other.sha256())
    assert analyst.receive([inner]).rejected == 1
    with pytest.raises(ParameterError, match="analyst's public key"):
        User(
            SPEC, shuffler_key=KEYS["shuffler"].public_key(), curator_key=KEYS["curator"].public_key()
        ).round2(adult_rows[0], plan)


def test_verify_release_detects_a_change() -> None:
    src = [("a", 1), ("a", 1), ("b", 2)]
    assert verify_release(src, [("b", 2), ("a", 1), ("a", 1)])
    assert not verify_release(src, [("b", 2), ("b", 2), ("a", 1)])
    assert not verify_release(src, [("a", 1), ("a", 1), ("b", 2.0)])  # 2 and 2.0 are different values
    assert not verify_release(src, src[:2])


# ------------------------------------------------------------------ the shuffle is independent of order


def test_secure_permutation_is_uniform_over_all_orders() -> None:
    # 4 items: all 24 orders equally likely <=> output order independent of input order.
    # Chi-square goodness of fit, 23 df; OS randomness (no seed), so the level is 1e-6.
    reps = 4800
    counts = Counter(tuple(secure_permutation(range(4))) for _ in range(reps))
    observed = [counts[p] for p in itertools.permutations(range(4))]
    assert chisquare(observed).pvalue > 1e-6
    # power check: a random rotation (uniform positions, but not uniform orders) is caught
    rng = np.random.default_rng(20261130)
    rot = Counter(tuple(np.roll(np.arange(4), rng.integers(4)).tolist()) for _ in range(reps))
    assert chisquare([rot[p] for p in itertools.permutations(range(4))]).pvalue < 1e-6


def test_shuffler_output_position_independent_of_arrival() -> None:
    # the first-arrived message lands in each of the 6 output positions with probability 1/6
    user = User(
        CollectionSpec(id="order", features=("f",), count_check=False),
        shuffler_key=KEYS["shuffler"].public_key(),
        curator_key=KEYS["curator"].public_key(),
    )
    msgs = [user.round1({"f": i})[0] for i in range(6)]
    s = Shuffler(KEYS["shuffler"], batch_threshold=6)
    inner = [s.strip(m, "order", 1) for m in msgs]
    first = inner[0]
    pos = Counter()
    reps = 1200
    for _ in range(reps):
        for m in msgs:
            s._pools.setdefault(("order", 1), []).append(inner[msgs.index(m)])
        pos[s.release("order", 1).index(first)] += 1
    assert chisquare([pos[i] for i in range(6)]).pvalue > 1e-6


# --------------------------------------------------------------------------------- planning extensions


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.tuples(st.integers(0, 4), st.integers(0, 6)), min_size=1, max_size=60),
    st.integers(1, 6),
)
def test_suppressing_rare_values_never_raises_exposure(rows: list[tuple[int, int]], k: int) -> None:
    # [derived] merging rare values coarsens groups; brute force on small tables
    counts = [Counter(encode_value(r[j]) for r in rows) for j in range(2)]
    merged = suppress_rare({"a": counts[0], "b": counts[1]}, k)
    red = encode_value(REDACTED)
    coarse = [
        tuple(red if counts[j][encode_value(r[j])] < k else encode_value(r[j]) for j in range(2))
        for r in rows
    ]
    assert exposure_at_k(coarse, k) <= exposure_at_k(rows, k)
    assert sum(merged["a"].values()) == len(rows)


def test_decoy_probability_closed_form() -> None:
    assert decoy_probability(100, 2, 5) == 5 / 98  # k / (n - holders)
    assert decoy_probability(10, 6, 5) == 1.0  # fewer than k others: everyone redacts


def test_redaction_rules_holders_always_and_decoys_at_rate() -> None:
    spec = CollectionSpec(id="ls", features=("a", "b"))
    plan = PublishedPlan(
        collection="ls",
        columns=("a", "b"),
        k=5,
        budget=0.05,
        bound=0.0,
        method="best",
        redactions=(Redaction(feature="a", value_key=encode_value("rare"), probability=0.1),),
    )
    user = User(
        spec,
        shuffler_key=KEYS["shuffler"].public_key(),
        curator_key=KEYS["curator"].public_key(),
        analyst_key=KEYS["analyst"].public_key(),
    )
    s, analyst = Shuffler(KEYS["shuffler"]), Analyst(KEYS["analyst"], spec, plan)
    rng = np.random.default_rng(20261130)
    n_common = 1500
    rows = [{"a": "rare", "b": 1}] * 3 + [{"a": "common", "b": 2}] * n_common
    analyst.receive([s.strip(user.round2(r, plan, rng=rng), "ls", 2, plan_sha256=plan.sha256()) for r in rows])
    got = Counter(r[0] for r in analyst.rows)
    assert got["rare"] == 0  # every holder redacted
    decoys = got[REDACTED] - 3
    # Bin(1500, 0.1): mean 150, sd sqrt(1500 * 0.1 * 0.9) = 11.6; 4 sd
    assert abs(decoys - n_common * 0.1) < 4 * math.sqrt(n_common * 0.1 * 0.9)
    assert all(r[1] in (1, 2) for r in analyst.rows)  # b has no rule


def test_local_suppression_plan_publishes_rules(
    adult_rows: list[dict[str, Any]], round1: tuple[Curator, list[bytes]]
) -> None:
    curator, _ = round1
    plan = curator.decide(k=5, budget=0.05, local_suppression=True)
    for rule in plan.redactions:
        assert rule.feature in plan.columns
        assert curator.counts[rule.feature][rule.value_key] < 5
        assert rule.probability == decoy_probability(
            len(adult_rows), curator.counts[rule.feature][rule.value_key], 5
        )
    plain = curator.decide(k=5, budget=0.05)
    assert len(plan.columns) >= len(plain.columns)  # merging rare values can only help


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_statistical_bound_covers_the_true_statistical_exposure(seed: int) -> None:
    # population: two independent columns with known laws; exact Q^stat_n(k) of the joint law
    # = sum_v p_v P(Bin(n - 1, p_v) <= k - 2) (anonymity notes §3), by scipy directly.
    p1 = np.array([0.5, 0.3, 0.15, 0.05])
    p2 = np.array([0.6, 0.2, 0.1, 0.06, 0.03, 0.01])
    joint = np.outer(p1, p2).ravel()
    n, k = 2000, 5
    exact = float(np.sum(joint * binom.cdf(k - 2, n - 1, joint)))
    rng = np.random.default_rng(seed)
    n_hat = 4000
    sample = rng.choice(joint.size, size=n_hat, p=joint)
    a, b = np.divmod(sample, p2.size)
    m = Marginals.from_counts({"a": Counter(a.tolist()), "b": Counter(b.tolist())})
    bound = statistical_bound(m, ["a", "b"], k=k, n_release=n, delta=0.05)
    assert exact <= bound <= 1.0


def test_statistical_setting_plan(
    adult_rows: list[dict[str, Any]], round1: tuple[Curator, list[bytes]]
) -> None:
    curator, _ = round1
    plan = decide_plan(
        curator.counts, collection=SPEC.id, k=5, budget=0.2, setting="statistical", n_release=600
    )
    assert plan.setting == "statistical"
    assert plan.bound <= 0.2
    assert "statistical" in plan.method
    assert set(plan.excluded) == set(FEATURES) - set(plan.columns)


def test_protocol_report_section() -> None:
    from sdckit.protocol import SimulationResult
    from sdckit.report._protocol import protocol_section

    plan = PublishedPlan(
        collection="r",
        columns=("sex",),
        k=5,
        budget=0.05,
        bound=0.01,
        method="best",
        excluded={"age": "too rare"},
    )
    res = SimulationResult(
        collection="r",
        setting="fixed",
        suite="x25519",
        features=("sex", "age"),
        n_round1=10,
        n_round2=10,
        marginals={"sex": {"Male": 6, "Female": 4}, "age": {"39": 10}},
        plan=plan,
        n_released=10,
        exposure_at_k=0.4,
        verified=True,
    )
    sec = protocol_section(res)
    html = "".join(b.html for b in sec.blocks)
    assert "too rare" in html
    assert "verified" in (sec.summary or "")
    assert sec.data["plan"]["columns"] == ["sex"]


def test_hybrid_post_quantum_suite_through_both_rounds() -> None:
    spec = CollectionSpec(id="pq", features=("sex", "race"), suite="mlkem768-x25519")
    keys = {r: PrivateKey.generate("mlkem768-x25519") for r in ("shuffler", "curator", "analyst")}
    user = User(
        spec,
        shuffler_key=keys["shuffler"].public_key(),
        curator_key=keys["curator"].public_key(),
        analyst_key=keys["analyst"].public_key(),
    )
    rows = [{"sex": "Male", "race": "White"}] * 3 + [{"sex": "Female", "race": "Black"}] * 2
    s, curator = Shuffler(keys["shuffler"], batch_threshold=1), Curator(keys["curator"], spec)
    for r in rows:
        for m in user.round1(r):
            assert len(m) == 1120 + (1120 + 256 + 16) + 16  # hybrid enc is 1,120 bytes
            s.submit(m, "pq", 1)
    assert curator.receive(s.release("pq", 1)).accepted == 10
    assert curator.marginals() == {"sex": {"Male": 3, "Female": 2}, "race": {"White": 3, "Black": 2}}
    plan = PublishedPlan(collection="pq", columns=("sex", "race"), k=2, budget=0.1, bound=0.0, method="best")
    analyst = Analyst(keys["analyst"], spec, plan)
    for r in rows:
        s.submit(user.round2(r, plan), "pq", 2, plan_sha256=plan.sha256())
    analyst.receive(s.release("pq", 2))
    assert verify_release([(r["sex"], r["race"]) for r in rows], analyst.rows)
    with pytest.raises(ParameterError, match="uses mlkem768-x25519"):
        User(spec, shuffler_key=KEYS["shuffler"].public_key(), curator_key=keys["curator"].public_key())


@pytest.mark.parametrize(
    "body",
    ['["age",[1]]', '["age",{"timedelta_us":1e300}]', '["age",{"decimal":"abc"}]', '["age","\\ud800"]'],
)
def test_sealed_hostile_content_is_rejected_not_raised(body: str) -> None:
    # each used to raise out of Curator.receive (OverflowError, InvalidOperation, ParameterError,
    # UnicodeEncodeError), failing the whole batch; the service then answered 5xx/422 and the
    # shuffler retried the batch forever
    raw = body.encode("utf-8", "surrogatepass")
    plain = bytes([1, 1]) + os.urandom(16) + len(raw).to_bytes(2, "big") + raw + bytes(256 - 20 - len(raw))
    curator = Curator(KEYS["curator"], SPEC)
    msg = seal(KEYS["curator"].public_key(), plain, info_label(SPEC.id, 1, "curator"))
    good = seal(
        KEYS["curator"].public_key(),
        pack_feature("age", 30, os.urandom(16), 256),
        info_label(SPEC.id, 1, "curator"),
    )
    t = curator.receive([msg, good])
    assert (t.accepted, t.duplicates, t.rejected) == (1, 0, 1)
