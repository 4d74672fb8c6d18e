"""Safe pair/triple queries, the pair bound on Adult, and the planner with pair tables."""

from __future__ import annotations

import itertools
import warnings
from collections import Counter
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sdckit.datasets import load_adult
from sdckit.errors import SdcWarning
from sdckit.plan import choose_pair_queries, plan_release
from sdckit.risk import Marginals, joint_exposure_bound, pair_bound_curve

from .conftest import brute_exposure, table

FIGURE2 = ["workclass", "marital-status", "race", "sex"]
QIS = ["age", "workclass", "education", "marital-status", "occupation", "race", "sex", "native-country"]


@pytest.fixture(scope="module")
def adult() -> pl.DataFrame:
    return load_adult()


def received_exposure_brute(
    rows: list[tuple[object, ...]], cols: tuple[int, ...], rare: list[set[object]], k: int
) -> float:
    """Share of users in a cell of < k users of the redacted table (plain Counter)."""
    red = [tuple("R" if r[c] in rare[c] else r[c] for c in cols) for r in rows]
    return brute_exposure(red, k - 1)


rows_strategy = st.integers(2, 4).flatmap(
    lambda w: st.tuples(st.just(w), st.lists(st.tuples(*[st.integers(0, 4)] * w), min_size=2, max_size=40))
)


@settings(max_examples=40, deadline=None)
@given(rows_strategy, st.integers(2, 6), st.floats(0.0, 1.0))
def test_query_bounds_are_sound(wr: tuple[int, list[tuple[int, ...]]], k: int, budget: float) -> None:
    width, rows = wr
    df = table(rows, width)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SdcWarning)
        m = Marginals.from_data(df, list(df.columns))
        plan = choose_pair_queries(m, k=k, budget=budget, triples=False)
        assert plan.bound <= budget + 1e-12
        rare = [set(plan.rare[c]) for c in df.columns]
        for c in df.columns:  # rare = held by fewer than k users (independent count)
            cnt = Counter(df[c].to_list())
            assert set(plan.rare[c]) == {v for v, x in cnt.items() if x < k}
        idx = {c: i for i, c in enumerate(df.columns)}
        for q in plan.queries:
            truth = received_exposure_brute(rows, tuple(idx[c] for c in q.columns), rare, k)
            assert q.bound >= truth - 1e-15
        # the curator's next round: triples, bounded with the pair tables just received
        received = Marginals.from_data(df, list(df.columns), blocks=plan.blocks, redact=plan.redact)
        measured = plan.received_exposure(received)
        assert measured["sum"] <= plan.bound + 1e-12
        more = choose_pair_queries(received, k=k, budget=1.0, triples=True)
        for q in more.queries:
            truth = received_exposure_brute(rows, tuple(idx[c] for c in q.columns), rare, k)
            assert q.bound >= truth - 1e-15
        # the release bound from singles + redacted pairs is sound for the full table
        truth_j = brute_exposure(rows, k - 1)
        assert joint_exposure_bound(received, k=k) >= truth_j - 1e-15
        assert joint_exposure_bound(received, k=k) <= joint_exposure_bound(m, k=k) + 1e-15


def test_queries_on_adult(adult: pl.DataFrame) -> None:
    m = Marginals.from_data(adult, QIS)
    plan = choose_pair_queries(m, k=5, budget=0.05)
    assert plan.bound <= 0.05
    assert len(plan.queries) >= 1
    received = Marginals.from_data(adult, QIS, blocks=plan.blocks, redact=plan.redact)
    measured = plan.received_exposure(received)
    for q in plan.queries:
        # independent count: polars group_by on the redacted columns
        red = adult.select(
            [
                pl.when(pl.col(c).is_in(list(q.redact.get(c, ()))))
                .then(pl.lit("R"))
                .otherwise(pl.col(c))
                .alias(c)
                for c in q.columns
            ]
        )
        sizes = red.group_by(list(q.columns)).len()["len"]
        truth = float(sizes.filter(sizes < 5).sum()) / adult.height
        assert measured["per_query"][" x ".join(q.columns)] == pytest.approx(truth, abs=1e-15)
        assert q.bound >= truth
    assert plan.to_dict()["queries"][0]["columns"] == list(plan.queries[0].columns)


def test_pair_bound_strictly_tighter_on_figure2_columns(adult: pl.DataFrame) -> None:
    from sdckit.risk import exposure_curve

    ks = np.arange(2, 101)
    m = Marginals.from_data(adult, FIGURE2, blocks=list(itertools.combinations(FIGURE2, 2)))
    curve = pair_bound_curve(m, k=ks)
    truth = np.array([exposure_curve(adult, FIGURE2).not_k_anonymous(int(k)) for k in ks])
    assert np.all(curve.blocks < curve.single)  # strictly tighter over k = 2..100 (the report's plot)
    assert np.all(curve.blocks >= truth)
    assert np.all(curve.lower <= truth + 1e-15)
    # the pairs the curator may safely ask at k = 5 (rare values redacted) give the same bound here
    plan = choose_pair_queries(m.singles(), k=5, budget=0.05)
    asked = Marginals.from_data(adult, FIGURE2, blocks=plan.blocks, redact=plan.redact)
    assert np.all(pair_bound_curve(asked, k=ks).blocks < curve.single)


def test_pair_bound_on_eight_qis_is_sound(adult: pl.DataFrame) -> None:
    # on the 8 quasi-identifiers no partition into pairs gets below 1 (docs/risk.md explains why)
    from sdckit.risk import exposure_curve

    ks = np.array([2, 5, 20, 50])
    m = Marginals.from_data(adult, QIS, blocks=list(itertools.combinations(QIS, 2)))
    curve = pair_bound_curve(m, k=ks)
    truth = np.array([exposure_curve(adult, QIS).not_k_anonymous(int(k)) for k in ks])
    assert np.all(curve.blocks >= truth)
    assert np.all(curve.blocks <= curve.single)


def test_on_eight_qis_pairs_are_tighter_up_to_k_7_and_linear_bounds_prove_nothing_beyond(adult: pl.DataFrame) -> None:
    """What is known of "strictly tighter over the plot's k range" on the 8 QIs (the proof that no
    sound pair bound beats 1 from some k is the next test, with a whole integer table).

    1. With all 28 pairs the bound is strictly below the single-column bound (which is 1) for
       k = 2..7 and equals it from k = 8.
    2. The largest group on the 8 columns holds 45 users, so the truth is 1 from k = 46: any sound
       bound is 1 there, the same as the single-column bound.
    3. A bound below 1 at k must prove some group holds >= k users. For each of the 10 largest
       groups, a linear programme over the 2^8 patterns of "agrees with the group on column j"
       that matches every single and pair count of those agreement indicators (what the pair tables
       say about them) reaches 0 users in the group: no lower bound built linearly from the
       pair counts of these indicators (Bonferroni, Hunter-Worsley, ...) proves a single user there.
    """
    from scipy.optimize import linprog

    from sdckit.risk import exposure_curve

    ks = np.arange(2, 51)
    m = Marginals.from_data(adult, QIS, blocks=list(itertools.combinations(QIS, 2)))
    curve = pair_bound_curve(m, k=ks)
    truth = np.array([exposure_curve(adult, QIS).not_k_anonymous(int(k)) for k in ks])
    assert np.all(curve.single == 1.0)
    assert np.all(curve.blocks[ks <= 7] < 1.0)
    assert np.all(curve.blocks[ks >= 8] == 1.0)
    sizes = adult.group_by(QIS).len().sort("len", descending=True)
    assert sizes["len"][0] == 45
    assert np.all(truth[ks >= 46] == 1.0)
    assert truth[ks == 45][0] < 1.0
    patterns = np.array(list(itertools.product([0, 1], repeat=len(QIS))), dtype=np.float64)
    pairs = list(itertools.combinations(range(len(QIS)), 2))
    a_eq = np.vstack(
        [np.ones(len(patterns)), *(patterns[:, j] for j in range(len(QIS)))]
        + [patterns[:, i] * patterns[:, j] for i, j in pairs]
    )
    everywhere = (patterns.sum(axis=1) == len(QIS)).astype(np.float64)
    for group in sizes.head(10).iter_rows(named=True):
        agree = np.column_stack([(adult[c] == group[c]).to_numpy() for c in QIS]).astype(np.int64)
        b_eq = np.r_[adult.height, agree.sum(axis=0), [(agree[:, i] & agree[:, j]).sum() for i, j in pairs]]
        res = linprog(everywhere, A_eq=a_eq, b_eq=b_eq, bounds=(0, None), method="highs")
        assert res.status == 0
        assert res.fun == pytest.approx(0.0, abs=1e-6), group


def test_plan_with_pairs_releases_more_and_meets_budget(adult: pl.DataFrame) -> None:
    m = Marginals.from_data(adult, QIS)
    plain = plan_release(m, k=5, budget=0.05)
    queries = choose_pair_queries(m, k=5, budget=0.05)
    received = Marginals.from_data(adult, QIS, blocks=queries.blocks, redact=queries.redact)
    with_pairs = plan_release(received, k=5, budget=0.05)
    assert len(with_pairs.columns) >= len(plain.columns)
    assert len(with_pairs.columns) > len(plain.columns)  # on Adult: workclass is added
    # measured afterwards on the released columns, counted here with polars
    sizes = adult.group_by(list(with_pairs.columns)).len()["len"]
    truth = float(sizes.filter(sizes < 5).sum()) / adult.height
    assert truth <= with_pairs.bound <= 0.05


def test_recode_keeps_blocks_and_stays_sound() -> None:
    rng = np.random.default_rng(11)
    df = pl.DataFrame(
        {"a": rng.integers(0, 8, 300), "b": rng.integers(0, 5, 300), "c": rng.integers(0, 3, 300)}
    )
    m = Marginals.from_data(df, ["a", "b", "c"], blocks=[("a", "b")], redact={"a": {7}})
    maps = {"a": {v: v // 2 for v in range(8)}}
    r = m.recode(maps)
    assert ("a", "b") in r.blocks
    coarse = df.with_columns(pl.col("a") // 2)
    rows = list(coarse.iter_rows())
    for k in (2, 5, 10):
        assert joint_exposure_bound(r, k=k) >= brute_exposure(rows, k - 1)
        assert joint_exposure_bound(r, k=k) <= joint_exposure_bound(r.singles(), k=k) + 1e-15


def test_the_recoding_lattice_gains_from_pair_tables(adult: pl.DataFrame) -> None:
    """plan_release with hierarchies recodes the pair tables with the singles (Marginals.recode),
    so the block bound flows into the lattice search: less loss for the same budget, and the
    release measured afterwards is within the plan's bound."""
    cols = ["age", "workclass", "marital-status", "race", "sex"]
    m = Marginals.from_data(adult, cols, blocks=list(itertools.combinations(cols, 2)))
    with_pairs = plan_release(m, k=5, budget=0.1, hierarchies={"age": "adult:age"})
    singles = plan_release(m.singles(), k=5, budget=0.1, hierarchies={"age": "adult:age"})
    assert with_pairs.loss < singles.loss
    assert "age" not in singles.columns  # without pairs age is withheld; with them it is recoded
    assert "age" in with_pairs.recodings
    assert with_pairs.bound <= 0.1
    released = adult.select(
        [
            pl.col(c).cast(pl.String).replace_strict(with_pairs.recodings[c]["mapping"]).alias(c)
            if c in with_pairs.recodings
            else pl.col(c)
            for c in with_pairs.columns
        ]
    )
    small = released.group_by(list(with_pairs.columns)).len().filter(pl.col("len") < 5)["len"].sum()
    assert small / adult.height <= with_pairs.bound


def test_received_marginals_is_what_the_curator_holds_after_asking(adult: pl.DataFrame) -> None:
    from sdckit.plan import received_marginals

    singles = Marginals.from_data(adult, FIGURE2)
    got, plan = received_marginals(adult, FIGURE2, 5, 0.05)
    want = choose_pair_queries(singles, k=5, budget=0.05)
    assert plan == want
    by_hand = Marginals.from_data(adult, FIGURE2, blocks=want.blocks, redact=want.redact)
    assert set(got.blocks) == set(by_hand.blocks)
    assert joint_exposure_bound(got, k=5) == joint_exposure_bound(by_hand, k=5)
    qis = QIS[1:]
    with_triples, both = received_marginals(adult, qis, 5, 0.2, triples=True)
    pairs_only = received_marginals(adult, qis, 5, 0.2)[1]
    assert both.bound <= 0.2
    assert both.queries[: len(pairs_only.queries)] == pairs_only.queries
    assert any(len(q.columns) == 3 for q in both.queries)
    assert both.bound == pytest.approx(min(1.0, sum(q.bound for q in both.queries)))
    assert set(with_triples.blocks) == set(both.blocks)


PAIR_TABLE = Path(__file__).parents[1] / "data" / "adult_pairs_table.csv.gz"
PAIR_TABLE_LARGEST = 13


def test_a_table_with_adults_pairs_and_small_groups_proves_no_pair_bound_beats_1(adult: pl.DataFrame) -> None:
    """tests/data/adult_pairs_table.csv.gz (built by tests/data/build_adult_pair_table.py) is an
    integer table of 32,561 users on the 8 quasi-identifiers with Adult's single-column counts and
    all 28 pair tables, and no group above PAIR_TABLE_LARGEST. A sound bound computed from the
    pair tables is at least the truth on every table with those pair tables, this one included,
    where every user is in a group smaller than PAIR_TABLE_LARGEST + 1: so from k = that, every
    sound pair bound is 1 on Adult's 8 quasi-identifiers."""
    built = pl.read_csv(PAIR_TABLE, schema_overrides={c: pl.String for c in QIS})
    real = adult.select(QIS).with_columns(pl.all().cast(pl.String))
    assert built.select(QIS).is_duplicated().sum() == 0  # distinct rows with counts
    counts = built["count"].to_numpy()
    assert int(counts.min()) >= 1
    assert int(counts.sum()) == real.height == 32_561
    for cols in [*([c] for c in QIS), *(list(ij) for ij in itertools.combinations(QIS, 2))]:
        mine = built.group_by(cols).agg(pl.col("count").sum().alias("n"))
        theirs = real.group_by(cols).len("n").with_columns(pl.col("n").cast(pl.Int64))
        joined = theirs.join(mine, on=cols, how="full", coalesce=True, suffix="_built").fill_null(0)
        assert (joined["n"] == joined["n_built"]).all(), cols
    assert int(counts.max()) == PAIR_TABLE_LARGEST
    # the real table's largest group, for contrast: the pair tables do not pin it down
    assert int(real.group_by(QIS).len()["len"].to_numpy().max()) == 45
    # so the pair bound's 1 from k = 8 is forced from k = PAIR_TABLE_LARGEST + 1 (tested above for 8..)
    m = Marginals.from_data(adult, QIS, blocks=list(itertools.combinations(QIS, 2)))
    k = PAIR_TABLE_LARGEST + 1
    assert pair_bound_curve(m, k=np.array([k])).blocks[0] == 1.0
