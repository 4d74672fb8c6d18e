"""Bounds from marginals: exact minimum against a brute-force grid, soundness against true exposure."""

from __future__ import annotations

import itertools
import math
import warnings

import numpy as np
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sdckit.datasets import load_adult
from sdckit.errors import ColumnNotFoundError, ParameterError, SdcWarning
from sdckit.risk import Marginals, exposure_curve, joint_exposure_bound

from .conftest import brute_exposure, table

UPPER = ("support", "theorem2", "theorem3", "best")


def grid_minimum(counts: list[list[int]], n: int, max_size: int, kind: str) -> float:
    """min over every (r_j) of sum_j S_j(r_j) + tau prod_j w_j(r_j), by enumeration (anonymity notes §2)."""
    tau = max_size / n
    cols = [sorted(c) for c in counts]
    best = 1.0
    for r in itertools.product(*[range(len(c)) for c in cols]):
        s = sum(sum(c[:rj]) for c, rj in zip(cols, r, strict=True)) / n
        if kind == "theorem2":
            w = math.prod(len(c) - rj for c, rj in zip(cols, r, strict=True))
        else:
            w = math.prod(n / c[rj] for c, rj in zip(cols, r, strict=True))
        best = min(best, s + tau * w)
    return best


counts_strategy = st.integers(1, 3).flatmap(
    lambda p: st.integers(1, 40).flatmap(
        lambda n: st.lists(
            st.lists(st.integers(1, n), min_size=1, max_size=6).map(lambda c, n=n: _to_total(c, n)),
            min_size=p,
            max_size=p,
        )
    )
)


def _to_total(c: list[int], n: int) -> list[int]:
    """Rescale positive counts to sum to n (the last value absorbs the rest)."""
    out, left = [], n
    for x in c[:-1]:
        take = min(x, left - 1) if left > 1 else 0
        if take > 0:
            out.append(take)
            left -= take
    out.append(left)
    return out


@settings(max_examples=80, deadline=None)
@given(counts_strategy, st.integers(1, 45))
def test_exact_minimum_matches_grid(counts: list[list[int]], k: int) -> None:
    n = sum(counts[0])
    m = Marginals.from_counts({f"c{j}": c for j, c in enumerate(counts)})
    for kind in ("theorem2", "theorem3"):
        got = joint_exposure_bound(m, k=k, method=kind)
        want = grid_minimum(counts, n, min(k - 1, n), kind)
        assert got == pytest.approx(want, rel=1e-9, abs=1e-12)
    # theorem 2 at its best is never above theorem 3 (anonymity notes §2)
    assert joint_exposure_bound(m, k=k, method="theorem2") <= joint_exposure_bound(m, k=k, method="theorem3") + 1e-12
    assert joint_exposure_bound(m, k=k, method="support") == pytest.approx(
        min(1.0, (k - 1) / n * math.prod(len(c) for c in counts)), rel=1e-9
    )


rows_strategy = st.integers(1, 3).flatmap(
    lambda w: st.tuples(st.just(w), st.lists(st.tuples(*[st.integers(0, 4)] * w), min_size=1, max_size=50))
)


@settings(max_examples=80, deadline=None)
@given(rows_strategy, st.integers(1, 20))
def test_bounds_bracket_true_exposure(wr: tuple[int, list[tuple[int, ...]]], k: int) -> None:
    width, rows = wr
    df = table(rows, width)
    cols = list(df.columns)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SdcWarning)
        m = Marginals.from_data(df, cols)
    truth = brute_exposure(rows, k - 1)  # plain Counter over the rows
    assert joint_exposure_bound(m, k=k, method="lower") <= truth + 1e-15
    for method in UPPER:
        assert joint_exposure_bound(m, k=k, method=method) >= truth - 1e-15


ADULT_SUBSETS = [
    ("workclass", "marital-status", "race", "sex"),
    ("age", "sex"),
    ("education", "occupation", "native-country"),
    ("age", "workclass", "education", "marital-status", "occupation", "race", "sex", "native-country"),
    ("relationship", "race", "sex", "capital-loss"),
    ("age", "hours-per-week", "capital-gain"),
]


@pytest.fixture(scope="module")
def adult() -> pl.DataFrame:
    return load_adult()


@pytest.mark.parametrize("cols", ADULT_SUBSETS)
def test_upper_bounds_sound_on_adult(adult: pl.DataFrame, cols: tuple[str, ...]) -> None:
    m = Marginals.from_data(adult, cols)
    curve = exposure_curve(adult, cols)
    n = curve.n
    ts = np.concatenate([np.logspace(-5, 0, 25), np.arange(1, 60) / n])
    truth = curve.at(ts)
    lower = joint_exposure_bound(m, t=ts, method="lower")
    assert np.all(lower <= truth + 1e-15)
    for method in UPPER:
        bound = joint_exposure_bound(m, t=ts, method=method)
        assert np.all(bound >= truth - 1e-15), method
    for k in (2, 5, 11, 100):
        assert joint_exposure_bound(m, k=k) >= curve.not_k_anonymous(k)


def test_scalar_equals_vector_on_adult(adult: pl.DataFrame) -> None:
    m = Marginals.from_data(adult, ADULT_SUBSETS[0])
    ts = np.logspace(-5, math.log10(0.3), 15)
    vec = joint_exposure_bound(m, t=ts, method="best")
    assert vec.tolist() == pytest.approx([joint_exposure_bound(m, t=float(t)) for t in ts], rel=1e-9)
    # Figure 2: the bound is informative at small t (it reaches 1 only near t = 0.3)
    assert vec[0] < 0.01
    assert vec[7] < 0.5


def test_many_values_still_sound(adult: pl.DataFrame) -> None:
    # fnlwgt has 21,648 values: the frontier is thinned, the result must stay a valid bound
    cols = [c for c in adult.columns if c != "income"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SdcWarning)
        m = Marginals.from_data(adult, cols)
        curve = exposure_curve(adult, ["fnlwgt", "age", "sex"])
    b = joint_exposure_bound(m, k=5)
    assert b >= exposure_curve(adult, ["age", "sex"]).not_k_anonymous(5)
    sub = joint_exposure_bound(m, t=np.logspace(-5, 0, 10), columns=["fnlwgt", "age", "sex"])
    assert np.all(sub >= curve.at(np.logspace(-5, 0, 10)) - 1e-15)


def test_adversarial_table_bounds() -> None:
    # anonymity notes §1: each column n/2-anonymous; truth at k=2 is 1/(n+1); lower bound says 0
    n = 100
    m = Marginals.from_counts({"a": {0: 51, 1: 50}, "b": {0: 51, 1: 50}})
    assert joint_exposure_bound(m, k=2, method="lower") == 0.0
    # theorem 2 with nothing sacrificed: tau * 2 * 2 = 4 / 101, the minimum (sacrificing costs 50/101)
    assert joint_exposure_bound(m, k=2, method="theorem2") == pytest.approx(4 / (n + 1), rel=1e-12)
    assert joint_exposure_bound(m, k=2) >= 1 / (n + 1)


@pytest.mark.parametrize("m_values", [10, 20, 40])
def test_slack_is_necessary(m_values: int) -> None:
    # anonymity notes §2: lambda * Uniform([m]x[m]) + (1 - lambda) * diagonal coupling, lambda = c = 1/2.
    # Both marginals uniform (so Q_j(t_j) = 0 just below 1/m), yet Q_J(c t1 t2) = c (1 - 1/m) -> c.
    a = 10  # users per off-diagonal cell / lambda
    off = a // 2
    diag = off * m_values + off  # (1 - lambda) m a + lambda a with lambda = 1/2
    rows = [(i, j) for i in range(m_values) for j in range(m_values) for _ in range(diag if i == j else off)]
    df = pl.DataFrame({"x": [r[0] for r in rows], "y": [r[1] for r in rows]})
    n = len(rows)
    assert n == m_values * m_values * a
    m = Marginals.from_data(df, ["x", "y"])
    assert set(m.counts["x"].tolist()) == {n // m_values}  # uniform marginal
    assert m.exposure("x", k=n // m_values) == 0.0  # Q_j just below 1/m is 0
    truth = exposure_curve(df, ["x", "y"]).not_k_anonymous(off + 1)
    c = 0.5
    assert truth == pytest.approx(c * (1 - 1 / m_values), rel=1e-12)
    bound = joint_exposure_bound(m, k=off + 1)
    # the best bound is the slack c itself: sum_j Q_j(t_j) = 0 contributes nothing
    assert truth <= bound <= c * (1 + 1e-9)


def test_empty_threshold_and_full_threshold() -> None:
    m = Marginals.from_counts({"a": [3, 2], "b": [4, 1]})
    for method in ("lower", *UPPER):
        assert joint_exposure_bound(m, k=1, method=method) == 0.0
        assert joint_exposure_bound(m, t=0.0, method=method) == 0.0
    assert joint_exposure_bound(m, t=1.0) == 1.0


def test_bound_errors() -> None:
    m = Marginals.from_counts({"a": [3, 2]})
    with pytest.raises(ParameterError, match="not a bound"):
        joint_exposure_bound(m, k=2, method="theorem4")  # type: ignore[arg-type]
    with pytest.raises(ParameterError, match="exactly one of k"):
        joint_exposure_bound(m)
    with pytest.raises(ParameterError, match=r"t=-0.1 is outside"):
        joint_exposure_bound(m, t=-0.1)
    with pytest.raises(ColumnNotFoundError):
        joint_exposure_bound(m, k=2, columns=["b"])


@settings(max_examples=30, deadline=None)
@given(counts_strategy, st.integers(2, 30))
def test_thinned_frontier_is_still_a_valid_bound(counts: list[list[int]], k: int) -> None:
    # force the large-input path (thinned options and frontier, then coordinate descent) on small
    # inputs, where the exact grid minimum is known: the result may be larger, never smaller
    from sdckit.risk._bounds import _joint as _bounds

    n = sum(counts[0])
    m = Marginals.from_counts({f"c{j}": c for j, c in enumerate(counts)})
    old = (_bounds._MAX_POINTS, _bounds._MAX_OPTIONS)
    _bounds._MAX_POINTS, _bounds._MAX_OPTIONS = 4, 4
    try:
        for kind in ("theorem2", "theorem3"):
            got = joint_exposure_bound(m, k=k, method=kind)
            curve = joint_exposure_bound(m, k=np.array([k, k]), method=kind)
            exact = grid_minimum(counts, n, min(k - 1, n), kind)
            assert got >= exact - 1e-12
            assert np.all(curve >= exact - 1e-12)
    finally:
        _bounds._MAX_POINTS, _bounds._MAX_OPTIONS = old


def test_marginals_from_lazy_and_counts_agree(adult: pl.DataFrame) -> None:
    cols = ["workclass", "race", "sex"]
    eager = Marginals.from_data(adult, cols)
    lazy = Marginals.from_data(adult.lazy(), cols)
    for c in cols:
        assert eager.counts[c].tolist() == lazy.counts[c].tolist()
        # independent count: polars value_counts, sorted ascending
        assert eager.counts[c].tolist() == sorted(adult[c].value_counts()["count"].to_list())
    assert eager.supports == {"workclass": 9, "race": 5, "sex": 2}  # '?' is a workclass value
    again = Marginals.from_counts(eager.to_dict()["counts"], n=eager.n)
    assert joint_exposure_bound(again, k=5) == joint_exposure_bound(eager, k=5)


def test_marginals_errors() -> None:
    from sdckit.errors import EmptyTableError, InputError

    with pytest.raises(InputError, match="column 'b' counts 4 users but column 'a' counts 5"):
        Marginals.from_counts({"a": [3, 2], "b": [4]})
    with pytest.raises(InputError, match="count of value 'x' is -1"):
        Marginals.from_counts({"a": {"x": -1, "y": 3}})
    with pytest.raises(EmptyTableError):
        Marginals.from_counts({})
    with pytest.raises(InputError, match="counts must be numbers of users"):
        Marginals.from_counts({"a": {"x": "three"}})
    with pytest.raises(EmptyTableError, match="column 'a' has no users"):
        Marginals.from_counts({"a": [0, 0]})
    with pytest.raises(InputError, match="but n=9"):
        Marginals.from_counts({"a": [3, 2]}, n=9)
