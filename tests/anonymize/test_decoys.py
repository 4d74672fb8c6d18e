"""Local suppression with decoys (the default): every released row identical to >= k - 1 others.

Checked by independent counts (plain polars group_by, a missing cell a value; plain Python
Counter), by properties on random tables, and by simulation of the attacker's guess of a
suppressed value.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sdckit.anonymize import LocalSuppressor, local_suppression

KEYS8 = ["urbrur", "roof", "walls", "water", "electcon", "relat", "sex", "age"]
FREE1 = Path(__file__).resolve().parents[1] / "data" / "muargus_free1.csv.gz"


@pytest.fixture(scope="module")
def free1() -> pl.DataFrame:
    return pl.read_csv(FREE1)


def _fill(row: tuple[Any, ...], hidden: list[int], values: tuple[Any, ...]) -> tuple[Any, ...]:
    out = list(row)
    for j, v in zip(hidden, values, strict=True):
        out[j] = v
    return tuple(out)


def polars_min_group(frame: pl.DataFrame, keys: list[str]) -> int:
    """Smallest group of identical rows on ``keys`` (polars groups nulls together): not sdckit's counter."""
    return int(frame.group_by(keys).len()["len"].min())  # type: ignore[arg-type]


def test_testdata_k3_every_row_identical_to_two_others(testdata: pl.DataFrame) -> None:
    est = LocalSuppressor(k=3, columns=KEYS8, random_state=1).fit(testdata)
    out = est.transform(testdata)
    assert polars_min_group(out, KEYS8) >= 3
    assert polars_min_group(testdata, KEYS8) < 3  # there was something to do
    n_missing = sum(out[c].null_count() for c in KEYS8) - sum(testdata[c].null_count() for c in KEYS8)
    assert n_missing == est.n_suppressed_ == int(est.suppressed_.sum())
    others = [c for c in testdata.columns if c not in KEYS8]
    assert out.select(others).equals(testdata.select(others))
    assert (est.group_sizes_ >= 3).all()
    # a suppressed cell was present before and is missing after; nothing else changed
    for j, c in enumerate(KEYS8):
        was, now = testdata[c].to_numpy(), out[c]
        keep = ~est.suppressed_[:, j]
        assert now.is_null().to_numpy()[est.suppressed_[:, j]].all()
        assert (now.to_numpy()[keep] == was[keep]).all()


def test_free1_k3(free1: pl.DataFrame) -> None:
    keys = ["REGION", "SEX", "AGE", "MARSTAT", "KINDPERS", "EDUC1", "ETNI"]
    out = local_suppression(free1, keys, k=3, random_state=2)
    assert polars_min_group(out, keys) >= 3


def test_default_draws_fresh_entropy_and_a_seed_reproduces(testdata: pl.DataFrame) -> None:
    a = LocalSuppressor(k=3, columns=KEYS8).fit(testdata).suppressed_
    b = LocalSuppressor(k=3, columns=KEYS8).fit(testdata).suppressed_
    assert not np.array_equal(a, b)  # the decoys are drawn anew (OS entropy): which rows differ
    c = LocalSuppressor(k=3, columns=KEYS8, random_state=5).fit(testdata).suppressed_
    d = LocalSuppressor(k=3, columns=KEYS8, random_state=5).fit(testdata).suppressed_
    assert np.array_equal(c, d)


def test_importance_keeps_the_important_key(testdata: pl.DataFrame) -> None:
    keys = KEYS8[:7]
    keep = LocalSuppressor(k=3, columns=keys, importance=["relat"], random_state=0).fit(testdata)
    drop = LocalSuppressor(k=3, columns=keys, importance=[c for c in keys if c != "relat"], random_state=0).fit(
        testdata
    )
    assert keep.changes_["relat"]["cells_suppressed"] < drop.changes_["relat"]["cells_suppressed"]
    assert polars_min_group(keep.transform(testdata), keys) >= 3


def test_posterior_of_a_suppressed_value_by_simulation() -> None:
    """An attacker who knows every original row and the algorithm, facing the shuffled release,
    guesses each hidden value; the best guess (the group's most common true value) succeeds at the
    reported mean, and a guess using the algorithm (the rare value was the one suppressed) does
    not beat it."""
    rng = np.random.default_rng(3)
    n, k = 600, 4
    df = pl.DataFrame({"a": rng.choice(6, n, p=[0.4, 0.3, 0.15, 0.1, 0.04, 0.01]),
                       "b": rng.integers(0, 5, n), "c": rng.integers(0, 3, n)})
    keys = ["a", "b", "c"]
    orig_rows = [tuple(r) for r in df.iter_rows()]
    freq = Counter(orig_rows)
    best_hits = rare_hits = total = 0
    reported = []
    for seed in range(20):
        est = LocalSuppressor(k=k, columns=keys, random_state=seed).fit(df)
        out = est.transform(df)
        reported.append(est.value_posterior_["mean"] * est.value_posterior_["rows"])
        perm = np.random.default_rng(100 + seed).permutation(n)  # the release goes out shuffled
        rel = [tuple(r) for r in out[perm].iter_rows()]
        truth = [orig_rows[i] for i in perm]
        groups: dict[tuple[Any, ...], list[int]] = {}
        for i, r in enumerate(rel):
            if None in r:
                groups.setdefault(r, []).append(i)
        for r, members in groups.items():
            hidden = [j for j, v in enumerate(r) if v is None]
            values = Counter(tuple(truth[i][j] for j in hidden) for i in members)  # known to the attacker
            majority = values.most_common(1)[0][0]
            rare = min(values, key=lambda v: freq[_fill(r, hidden, v)])
            for i in members:  # exchangeable rows: the attacker's guess cannot depend on the position
                true = tuple(truth[i][j] for j in hidden)
                best_hits += true == majority
                rare_hits += true == rare
                total += 1
    assert total > 0
    assert best_hits == round(sum(reported))  # the reported posterior is the best attacker's success
    assert rare_hits <= best_hits


@settings(max_examples=40, deadline=None)
@given(
    rows=st.lists(
        st.tuples(st.sampled_from(["a", "b", "c", None]), st.integers(0, 3), st.sampled_from(["x", "y"])),
        min_size=3,
        max_size=40,
    ),
    k=st.integers(2, 3),
    seed=st.integers(0, 2**31),
)
def test_property_identical_rows(rows: list[tuple[Any, ...]], k: int, seed: int) -> None:
    df = pl.DataFrame({"u": [r[0] for r in rows], "v": [r[1] for r in rows], "w": [r[2] for r in rows]},
                      schema={"u": pl.String, "v": pl.Int64, "w": pl.String})
    est = LocalSuppressor(k=k, columns=["u", "v", "w"], random_state=seed).fit(df)
    out = est.transform(df)
    released = [tuple(r) for r in out.iter_rows()]
    counts = Counter(released)
    assert min(counts[r] for r in released) >= k  # plain Python: identical rows, None a value
    original = [tuple(r) for r in df.iter_rows()]
    for i, (o, r) in enumerate(zip(original, released, strict=True)):
        for j in range(3):
            assert r[j] == o[j] or (r[j] is None and o[j] is not None and est.suppressed_[i, j])
