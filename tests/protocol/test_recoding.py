"""Recodings in the published plan: the curator plans generalisation levels from round-1 counts,
users send generalised values, and the release stays within the plan's bound."""

from __future__ import annotations

import secrets
from collections import Counter
from typing import Any

import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from sdckit.cli import app
from sdckit.errors import ConfigError, InfeasibleError, ParameterError
from sdckit.plan import plan_release
from sdckit.protocol import (
    REDACTED,
    Analyst,
    PairQueries,
    PairQuery,
    PublishedPlan,
    Shuffler,
    decide_plan,
    decode_value,
    encode_value,
    exposure_at_k,
    info_label,
    key_hierarchy,
    pack_row,
    seal,
)
from sdckit.protocol._planning import check_row_fits
from sdckit.protocol._spec import MAX_RECODED_VALUES
from sdckit.protocol._wire import SALT_LENGTH, pack_row_length
from sdckit.risk import Marginals

from .conftest import FEATURES
from .test_parties import KEYS, SPEC, _user  # the same devices and collection as the parties' tests

COLUMNS = FEATURES  # age, sex, race, marital-status
AGE = {"age": "adult:age"}
K, BUDGET = 5, 0.05


def key_counts(rows: list[dict[str, Any]], columns: tuple[str, ...] = COLUMNS) -> dict[str, Counter[str]]:
    """Round-1 counts as the curator holds them: canonical value keys."""
    out: dict[str, Counter[str]] = {c: Counter() for c in columns}
    for row in rows:
        for c in columns:
            out[c][encode_value(row[c])] += 1
    return out


@pytest.fixture(scope="module")
def rows(adult: pl.DataFrame) -> list[dict[str, Any]]:
    return list(adult.head(3000).select(COLUMNS).rows(named=True))


@pytest.fixture(scope="module")
def plans(rows: list[dict[str, Any]]) -> tuple[PublishedPlan, PublishedPlan]:
    counts = key_counts(rows)
    plain = decide_plan(counts, collection=SPEC.id, k=K, budget=BUDGET)
    recoded = decide_plan(counts, collection=SPEC.id, k=K, budget=BUDGET, hierarchies=AGE, round2_pad=1024)
    return plain, recoded


def test_decide_plan_matches_plan_release_on_the_decoded_counts(
    rows: list[dict[str, Any]], plans: tuple[PublishedPlan, PublishedPlan]
) -> None:
    _, got = plans
    # the reference: the risk planner on the values themselves (ints for age), not on wire keys
    values = {c: dict(Counter(row[c] for row in rows)) for c in COLUMNS}
    ref = plan_release(Marginals.from_counts(values), k=K, budget=BUDGET, hierarchies=AGE)
    assert got.columns == ref.columns
    assert got.bound == pytest.approx(ref.bound, rel=1e-12)
    assert set(got.recodings) == set(ref.recodings) == {"age"}
    assert f"age at level {ref.levels['age']}" in got.method
    ref_map = ref.recodings["age"]["mapping"]
    assert {str(decode_value(key)): decode_value(lab) for key, lab in got.recodings["age"].items()} == ref_map
    assert len(got.recodings["age"]) == len(values["age"])  # every counted value, nothing else


def test_the_recoded_release_is_within_the_bound_and_releases_more(
    rows: list[dict[str, Any]], plans: tuple[PublishedPlan, PublishedPlan]
) -> None:
    plain, recoded = plans
    assert len(recoded.columns) > len(plain.columns)
    assert "age" in recoded.columns
    assert "age" not in plain.columns
    assert recoded.bound <= BUDGET
    released = [tuple(recoded.generalise(c, row[c]) for c in recoded.columns) for row in rows]
    assert REDACTED not in {v for r in released for v in r}  # the fixed setting: every value was counted
    assert exposure_at_k(released, K) <= recoded.bound  # brute force on the recoded table


def test_recoding_follows_the_pair_tables(rows: list[dict[str, Any]]) -> None:
    counts = key_counts(rows)
    table = Counter((encode_value(r["age"]), encode_value(r["sex"])) for r in rows)
    queries = PairQueries(
        collection=SPEC.id,
        k=K,
        queries=(PairQuery(columns=("age", "sex")),),
        bound=0.04,
        budget=BUDGET,
        pad=128,
    )
    plan = decide_plan(
        counts,
        collection=SPEC.id,
        k=K,
        budget=BUDGET,
        hierarchies=AGE,
        pair_tables={("age", "sex"): table},
        pair_queries=queries,
    )
    assert plan.rounds == ("singles", "pairs", "release")
    assert plan.pair_bound == 0.04
    assert "age" in plan.recodings
    assert "age" in plan.columns
    released = [tuple(plan.generalise(c, row[c]) for c in plan.columns) for row in rows]
    assert exposure_at_k(released, K) <= plan.bound <= BUDGET
    # the bound is the block bound on the recoded singles and pair table (Marginals.recode)
    from sdckit.risk import joint_exposure_bound

    values = {c: dict(counts[c]) for c in COLUMNS}
    m = Marginals.from_counts(values, blocks={("age", "sex"): dict(table)})
    recoded = m.recode({"age": dict(plan.recodings["age"])}).select(list(plan.columns))
    assert plan.bound == pytest.approx(float(joint_exposure_bound(recoded, k=K)), rel=1e-12)


SMALL_HIERARCHY = {
    str(v): [f"{v // 2 * 2}-{v // 2 * 2 + 1}", "low" if v < 5 else "high", "*"] for v in range(10)
}


@settings(max_examples=40, deadline=None)
@given(
    table=st.lists(
        st.tuples(
            st.integers(0, 9), st.sampled_from(["x", "y", "z", "w"]), st.sampled_from([1.5, 2.5, None])
        ),
        min_size=8,
        max_size=60,
    ),
    k=st.integers(2, 4),
    budget=st.sampled_from([0.0, 0.1, 0.3, 0.45]),
)
def test_the_recoded_release_never_exceeds_the_bound(
    table: list[tuple[int, str, float | None]], k: int, budget: float
) -> None:
    """Brute force on small random tables: the exposure of what users send is at most the bound."""
    data = [{"a": a, "b": b, "c": c} for a, b, c in table]
    counts = key_counts(data, ("a", "b", "c"))
    try:
        plan = decide_plan(counts, collection="x", k=k, budget=budget, hierarchies={"a": SMALL_HIERARCHY})
    except InfeasibleError:
        assert len(data) < k
        return
    sent = [tuple(plan.generalise(col, row[col]) for col in plan.columns) for row in data]
    assert all(v is not REDACTED for r in sent for v in r)
    assert plan.bound <= budget
    assert exposure_at_k(sent, k) <= plan.bound + 1e-12
    assert set(plan.recodings) <= {"a"}


def test_key_hierarchy_labels_numbers_by_value_and_redacts_an_unknown_one() -> None:
    h = key_hierarchy("adult:age", "age", [encode_value(39), encode_value(39.0), encode_value("39"), "null"])
    assert h.table["39"] == h.table["39.0"] == h.table['"39"']
    assert h.table["39"][1] == encode_value("[30, 40)")
    assert h.table["null"] == ("null",) * h.n_levels  # a missing value stays missing below the top
    # a value outside the hierarchy is redacted at every level (issue 24: not a 422 at plan time)
    assert key_hierarchy("adult:age", "age", [encode_value(200)]).table["200"] == (encode_value(REDACTED),) * 4
    with pytest.raises(ParameterError, match="at most"):
        key_hierarchy("adult:age", "age", [str(i) for i in range(MAX_RECODED_VALUES + 1)])


def test_recoding_is_refused_where_its_bound_does_not_hold(rows: list[dict[str, Any]]) -> None:
    counts = key_counts(rows[:500])
    with pytest.raises(ParameterError, match="fixed setting only"):
        decide_plan(counts, collection="x", k=K, budget=0.5, setting="statistical", hierarchies=AGE)
    with pytest.raises(ParameterError, match="local_suppression"):
        decide_plan(counts, collection="x", k=K, budget=0.5, local_suppression=True, hierarchies=AGE)
    with pytest.raises(ParameterError, match="not features counted"):
        decide_plan(counts, collection="x", k=K, budget=0.5, hierarchies={"education": "adult:education"})


def test_a_row_too_long_for_the_pad_is_refused_at_plan_time(
    rows: list[dict[str, Any]], plans: tuple[PublishedPlan, PublishedPlan]
) -> None:
    _, plan = plans
    counts = key_counts(rows)
    need = check_row_fits(plan.columns, counts, plan.recodings, 1024)
    # the figure bounds every row a user can send (brute force over the users, and an unseen age)
    sent = [[plan.generalise(c, row[c]) for c in plan.columns] for row in rows]
    sent.append([plan.generalise(c, 200 if c == "age" else rows[0][c]) for c in plan.columns])
    assert max(pack_row_length(plan.columns, s) for s in sent) <= need
    with pytest.raises(ParameterError, match=rf"round2_pad >= {need}"):
        decide_plan(counts, collection="x", k=K, budget=BUDGET, hierarchies=AGE, round2_pad=need - 1)
    long_labels = {str(a): ["x" * 600 + str(a // 20), "*"] for a in range(17, 91)}  # 20-year bands
    with pytest.raises(ParameterError, match="shorter hierarchy labels"):
        decide_plan(
            counts, collection="x", k=K, budget=BUDGET, hierarchies={"age": long_labels}, round2_pad=512
        )
    huge = {str(a): ["x" * 20_000 + str(a // 20), "*"] for a in range(17, 91)}  # 1.5 MB of labels
    with pytest.raises(ParameterError, match="bytes in the plan"):
        decide_plan(counts, collection="x", k=K, budget=BUDGET, hierarchies={"age": huge})


def test_published_plan_round_trip_with_recodings(plans: tuple[PublishedPlan, PublishedPlan]) -> None:
    plain, plan = plans
    d = plan.to_dict()
    assert list(d["recodings"]["age"]) == sorted(plan.recodings["age"])  # canonical text
    assert PublishedPlan.from_dict(d) == plan
    old = plain.to_dict()
    assert "recodings" not in old  # a plan without recodings has the text it had before them
    assert PublishedPlan.from_dict(old) == plain
    assert PublishedPlan.from_dict(old).recodings == {}
    hostile = [
        {"marital-status": {'"Divorced"': '"D"'}},  # a column outside the plan
        {"age": {"39": "[30, 40)"}},  # not a canonical key
        {"age": {"39": '{"redacted":true}'}},  # the marker is no generalised value
        {"age": {}},
        {"age": {str(a): encode_value("x" * 20_000) for a in range(60)}},  # over MAX_RECODING_BYTES
        {"age": ["39"]},
        "age",
    ]
    for bad in hostile:
        with pytest.raises(ConfigError, match="not a published plan"):
            PublishedPlan.from_dict({**d, "recodings": bad})


def test_round2_sends_generalised_values_and_the_analyst_holds_only_those(
    rows: list[dict[str, Any]], plans: tuple[PublishedPlan, PublishedPlan]
) -> None:
    _, plan = plans
    plan = PublishedPlan.from_dict(plan.to_dict())  # as devices get it
    some = [*rows[:200], {**rows[0], "age": 200}]  # the last user holds an age round 1 never saw
    user, shuffler = _user(), Shuffler(KEYS["shuffler"])
    analyst = Analyst(KEYS["analyst"], SPEC, plan)
    inner = [shuffler.strip(user.round2(row, plan), SPEC.id, 2, plan_sha256=plan.sha256()) for row in some]
    raw = pack_row(  # a device that ignores the recoding and sends its age in clear
        plan.columns,
        [some[0][c] for c in plan.columns],
        secrets.token_bytes(SALT_LENGTH),
        SPEC.round2_pad,
    )
    inner.append(seal(KEYS["analyst"].public_key(), raw, info_label(SPEC.id, 2, "analyst")))
    tally = analyst.receive(inner)
    assert (tally.accepted, tally.rejected) == (len(some), 1)
    expected = Counter(tuple(encode_value(plan.generalise(c, r[c])) for c in plan.columns) for r in some)
    assert Counter(tuple(encode_value(v) for v in r) for r in analyst.rows) == expected
    ages = Counter(r[plan.columns.index("age")] for r in analyst.rows)
    assert ages[REDACTED] == 1  # the unseen age is redacted, not sent in clear
    assert 200 not in ages
    assert 39 not in ages
    assert all(isinstance(a, str) for a in ages if a is not REDACTED)  # "[20, 40)" and the like
    assert analyst.release()["age"].null_count() == 1


def test_cli_hierarchy_errors_are_one_line(tmp_path: Any, adult: pl.DataFrame) -> None:
    path = tmp_path / "adult.csv"
    adult.head(50).write_csv(path)
    runner = CliRunner()
    base = ["protocol", "simulate", str(path), "--columns", "age,sex"]
    r = runner.invoke(app, [*base, "--hierarchy", "age"])
    assert r.exit_code == 2
    assert "COLUMN=VALUE" in r.output
    r = runner.invoke(app, [*base, "--hierarchy", "age=adult:age", "--setting", "statistical"])
    assert r.exit_code == 1
    assert "fixed setting only" in r.stderr
    r = runner.invoke(app, [*base, "--hierarchy", "education=adult:education"])
    assert r.exit_code == 1
    assert "not among the columns" in r.stderr
    assert "Traceback" not in r.output


@pytest.mark.slow
@pytest.mark.services
def test_simulate_with_a_hierarchy_releases_more_within_the_bound(adult: pl.DataFrame) -> None:
    from sdckit.protocol import simulate

    data = adult.head(3000)
    res = simulate(data, list(COLUMNS), k=K, budget=BUDGET, hierarchies=AGE, batch_threshold=500, seed=3)
    plan = res.plan
    assert "age" in plan.recodings
    assert "age" in plan.columns
    plain = decide_plan(
        key_counts(list(data.select(COLUMNS).rows(named=True))), collection="x", k=K, budget=BUDGET
    )
    assert len(plan.columns) > len(plain.columns)
    assert res.verified  # against the input recoded by the plan
    assert res.n_released == 3000
    assert res.exposure_at_k <= plan.bound <= BUDGET  # measured on the released (recoded) rows
    assert res.to_dict()["plan"]["recodings"]["age"] == dict(sorted(plan.recodings["age"].items()))


def test_the_curator_service_takes_builtin_names_or_tables_never_paths() -> None:
    from pydantic import ValidationError

    from sdckit.protocol.services._curator import PlanRequest

    assert PlanRequest(hierarchies={"age": "adult:age"}).hierarchies == {"age": "adult:age"}
    table = {"17": ["[15, 20)", "*"]}
    assert PlanRequest.model_validate({"hierarchies": {"age": table}}).hierarchies == {"age": table}
    for path in ("/etc/passwd", "hierarchies/age.csv"):
        with pytest.raises(ValidationError, match="not a path"):
            PlanRequest(hierarchies={"age": path})


@pytest.mark.slow
@pytest.mark.services
def test_simulate_with_a_hierarchy_and_the_pair_round(adult: pl.DataFrame) -> None:
    """The pair tables are recoded with the singles (Marginals.recode): the block bound still holds."""
    from sdckit.protocol import simulate

    res = simulate(
        adult.head(2000),
        ["age", "sex", "race"],
        k=K,
        budget=0.1,
        pairs="auto",
        hierarchies=AGE,
        batch_threshold=200,
    )
    plan = res.plan
    assert plan.rounds == ("singles", "pairs", "release")
    assert "age" in plan.recodings
    assert res.verified
    assert res.exposure_at_k <= plan.bound <= 0.1
