"""l-diversity and t-closeness against brute-force counting on Adult and small tables."""

from __future__ import annotations

import math
from collections import Counter, defaultdict

import numpy as np
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sdckit.datasets import load_adult
from sdckit.errors import InputError, ParameterError
from sdckit.risk import l_diversity

QI = ["age", "sex", "race"]
SENSITIVE = ["income", "occupation"]


def brute(
    rows: list[tuple[object, ...]], sens: list[object], c: float = 2.0
) -> dict[tuple[object, ...], dict[str, float]]:
    """Per group of quasi-identifier tuples: distinct, entropy l, recursive (c, l), from the definitions."""
    groups: defaultdict[tuple[object, ...], list[object]] = defaultdict(list)
    for key, s in zip(rows, sens, strict=True):
        groups[key].append(s)
    out = {}
    for key, values in groups.items():
        counts = sorted(Counter(values).values(), reverse=True)
        n = len(values)
        h = -sum(v / n * math.log(v / n) for v in counts)
        rec = max((ell for ell in range(1, len(counts) + 1) if counts[0] < c * sum(counts[ell - 1 :])), default=0)
        out[key] = {"size": n, "distinct": len(counts), "entropy": math.exp(h), "recursive": rec}
    return out


@pytest.fixture(scope="module")
def adult() -> pl.DataFrame:
    return load_adult()


def test_adult_matches_brute_force(adult: pl.DataFrame) -> None:
    ld = l_diversity(adult, QI, SENSITIVE)
    rows = list(adult.select(QI).iter_rows())
    assert ld.n == len(rows)
    assert ld.n_groups == len(set(rows))
    for s in SENSITIVE:
        ref = brute(rows, adult[s].to_list())
        col = ld[s]
        assert col.l == min(g["distinct"] for g in ref.values())
        assert float(col.entropy_l.min()) == pytest.approx(min(g["entropy"] for g in ref.values()))
        assert int(col.recursive_l.min()) == min(g["recursive"] for g in ref.values())
        assert sorted(col.distinct.tolist()) == sorted(g["distinct"] for g in ref.values())
        assert sorted(col.recursive_l.tolist()) == sorted(g["recursive"] for g in ref.values())
        for ell in (2, 3, 5):
            for kind in ("distinct", "entropy", "recursive"):
                bad = sum(g["size"] for g in ref.values() if g[kind] < ell)
                assert ld.not_diverse(ell, kind=kind, column=s) == pytest.approx(bad / ld.n)  # type: ignore[arg-type]
    # any sensitive column failing: the union of the groups
    refs = [brute(rows, adult[s].to_list()) for s in SENSITIVE]
    bad = sum(g["size"] for key, g in refs[0].items() if any(r[key]["distinct"] < 2 for r in refs))
    assert ld.not_diverse(2) == pytest.approx(bad / ld.n)
    d = ld.to_dict()
    assert d["per_column"][0]["column"] == "income"
    assert d["not_2_diverse"] == pytest.approx(bad / ld.n)


def _tv(p: dict[object, float], q: dict[object, float]) -> float:
    return 0.5 * sum(abs(p.get(v, 0.0) - q[v]) for v in q)


def _ordered_emd(p: dict[object, float], q: dict[object, float]) -> float:
    vals = sorted(q)
    cum, total = 0.0, 0.0
    for v in vals[:-1]:
        cum += p.get(v, 0.0) - q[v]
        total += abs(cum)
    return total / (len(vals) - 1) if len(vals) > 1 else 0.0


@settings(max_examples=40, deadline=None)
@given(
    st.lists(st.tuples(st.integers(0, 3), st.integers(0, 4), st.sampled_from("abc")), min_size=1, max_size=40)
)
def test_t_closeness_and_forms_match_brute_force(rows: list[tuple[int, int, str]]) -> None:
    df = pl.DataFrame({"g": [r[0] for r in rows], "num": [r[1] for r in rows], "cat": [r[2] for r in rows]})
    ld = l_diversity(df, ["g"], ["num", "cat"], t_closeness=True, c=1.5)
    keys = [(r[0],) for r in rows]
    for s, emd in (("num", _ordered_emd), ("cat", _tv)):
        values = df[s].to_list()
        q = {v: k / len(values) for v, k in Counter(values).items()}
        by_group: defaultdict[tuple[int], list[object]] = defaultdict(list)
        for k, v in zip(keys, values, strict=True):
            by_group[k].append(v)
        expected_t = max(emd({v: c / len(vs) for v, c in Counter(vs).items()}, q) for vs in by_group.values())
        assert ld[s].t == pytest.approx(expected_t, abs=1e-12)
        assert ld[s].ordered == (s == "num")
        ref = brute(keys, values, c=1.5)
        assert sorted(ld[s].recursive_l.tolist()) == sorted(g["recursive"] for g in ref.values())
        assert sorted(np.round(ld[s].entropy_l, 9).tolist()) == sorted(
            round(g["entropy"], 9) for g in ref.values()
        )


@settings(max_examples=40, deadline=None)
@given(
    st.lists(
        st.tuples(st.integers(0, 3), st.integers(0, 2), st.sampled_from("xyz")), min_size=1, max_size=40
    ),
    st.sampled_from([1.0, 2.0, 3.0]),
)
def test_monotone_under_merging_groups(rows: list[tuple[int, int, str]], ell: float) -> None:
    df = pl.DataFrame({"a": [r[0] for r in rows], "b": [r[1] for r in rows], "s": [r[2] for r in rows]})
    fine = l_diversity(df, ["a", "b"], ["s"])
    coarse = l_diversity(df, ["a"], ["s"])  # dropping b merges the groups of each a
    merged = l_diversity(df.with_columns((pl.col("a") // 2).alias("a")), ["a", "b"], ["s"])
    for fewer in (coarse, merged):
        assert fewer.l >= fine.l
        # a table that is l-diverse stays so when groups merge, for all three forms (Machanavajjhala
        # et al. 2007, monotonicity): the smallest group l never falls
        for kind in ("distinct", "entropy", "recursive"):
            assert fewer["s"].values(kind).min() >= fine["s"].values(kind).min() - 1e-12  # type: ignore[arg-type]
        # the share of users in groups with too few distinct values never grows (a merged group has
        # at least as many values as each part); for entropy and recursive l it can: {x, y} + {x}
        assert fewer.not_diverse(ell) <= fine.not_diverse(ell) + 1e-12


def test_errors_and_missing() -> None:
    df = pl.DataFrame({"a": [1, 1, 2], "s": ["x", None, "y"]})
    assert l_diversity(df, "a", "s").l == 1  # missing is one more value: group 1 has {x, missing}
    assert l_diversity(df, "a", "s")["s"].distinct.tolist() == [2, 1]
    assert l_diversity(df, "a", "s", missing="drop").n == 2
    with pytest.raises(InputError, match="both a quasi-identifier and sensitive"):
        l_diversity(df, ["a", "s"], ["s"])
    with pytest.raises(ParameterError, match="at least one sensitive"):
        l_diversity(df, ["a"], [])
    with pytest.raises(ParameterError, match="c=0"):
        l_diversity(df, ["a"], ["s"], c=0)
    with pytest.raises(ParameterError, match="l=0"):
        l_diversity(df, ["a"], ["s"]).not_diverse(0)
    with pytest.raises(KeyError, match="not a sensitive column"):
        l_diversity(df, ["a"], ["s"])["a"]
