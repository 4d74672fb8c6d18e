"""The outside model's guesses (sdckit.risk._measures._outside) against a plain-Python recount of the
formula in its docstring, cell by cell; its interval against a coverage simulation."""

from __future__ import annotations

import math
from collections import Counter

import numpy as np
import polars as pl
import pytest

from sdckit.risk._measures._outside import outside_model_guesses, wilson_interval


def _brute(release: pl.DataFrame, known: pl.DataFrame, keys: list[str], feature: str, bounds: dict[str, float],
           fold: np.ndarray) -> dict[str, list[float]]:
    """Per key: cells, right, baseline right, above, belief sum above, right above; by dictionaries."""
    n = release.height
    truth = [tuple("\x00missing" if v is None else str(v) for v in r) for r in known.select(keys).iter_rows()]
    shown_rel = [tuple(r) for r in release.select(keys).iter_rows()]
    ys = release[feature].to_list()
    out = {c: [0.0] * 6 for c in keys}
    for i in range(n):
        for j, c in enumerate(keys):
            if shown_rel[i][j] is not None:
                continue
            shown = [q for q in range(len(keys)) if shown_rel[i][q] is not None]
            others = [p for p in range(n) if fold[p] != fold[i]]
            values = sorted({truth[p][j] for p in range(n)})
            n_v = Counter(truth[p][j] for p in others)
            p_v = {v: (n_v[v] + 1) / (len(others) + len(values)) for v in values}
            s = tuple(truth[i][q] for q in shown)
            same_s = [p for p in others if tuple(truth[p][q] for q in shown) == s]
            n_sv = Counter(truth[p][j] for p in same_s)
            p_vs = {v: (n_sv[v] + p_v[v]) / (len(same_s) + 1) for v in values}
            if ys[i] is None:
                post = p_vs
            else:
                same_sy = [p for p in same_s if ys[p] is not None and ys[p] == ys[i]]
                n_syv = Counter(truth[p][j] for p in same_sy)
                post = {v: (n_syv[v] + p_vs[v]) / (len(same_sy) + 1) for v in values}
            assert sum(post.values()) == pytest.approx(1.0)
            top = max(post.values())
            guess = min(v for v in values if post[v] == top)  # argmax: the first value in sorted order
            right = guess == truth[i][j]
            commonest = max(values, key=lambda v: (n_v[v], -values.index(v)))
            t = out[c]
            t[0] += 1
            t[1] += right
            t[2] += truth[i][j] == commonest
            if top > bounds[c]:
                t[3] += 1
                t[4] += top
                t[5] += right
    return out


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_the_guesses_match_a_plain_recount_cell_by_cell(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n = 120
    a = rng.choice(["a0", "a1", "a2"], n, p=[0.6, 0.3, 0.1])
    b = np.where(rng.random(n) < 0.8, np.where(a == "a0", "b0", "b1"), rng.choice(["b0", "b1", "b2"], n))
    c = rng.choice(["c0", "c1"], n)
    y = np.where(a == "a0", rng.choice(["lo", "hi"], n, p=[0.8, 0.2]), rng.choice(["lo", "hi"], n, p=[0.3, 0.7]))
    known = pl.DataFrame({"a": a, "b": b, "c": c})
    hide = rng.random((n, 3)) < 0.3
    release = pl.DataFrame({
        k: pl.Series(k, [None if h else v for v, h in zip(known[k].to_list(), hide[:, j], strict=True)], pl.String)
        for j, k in enumerate(["a", "b", "c"])
    }).with_columns(pl.Series("y", [None if rng.random() < 0.2 else v for v in y], pl.String))
    bounds = {"a": 0.7, "b": 0.6, "c": 0.55}
    got = outside_model_guesses(release, known, ["a", "b", "c"], ["y"], bounds=bounds, folds=3, seed=seed)
    fold = np.random.default_rng(seed).permutation(n) % 3
    want = _brute(release, known, ["a", "b", "c"], "y", bounds, fold)
    for col in got.columns:
        w = want[col.column]
        assert (col.cells, col.right_all, col.baseline_right, col.above, col.right_above) == tuple(int(x) for x in (w[0], w[1], w[2], w[3], w[5]))
        if col.above:
            assert col.belief_above == pytest.approx(w[4] / w[3])
    assert got.cells == int(hide.sum())
    assert got.above > 0  # the case reaches the bounds (the comparison above is not vacuous)


def test_the_chunked_scores_equal_the_whole() -> None:
    rng = np.random.default_rng(5)
    n = 400
    known = pl.DataFrame({"a": rng.choice([f"a{i}" for i in range(7)], n), "b": rng.choice(["x", "y"], n)})
    release = known.with_columns(pl.when(pl.Series(rng.random(n) < 0.4)).then(None).otherwise(pl.col("a")).alias("a"),
                                 pl.Series("y", rng.choice(["p", "q", "r"], n)))
    bounds = {"a": 0.3, "b": 0.6}
    whole = outside_model_guesses(release, known, ["a", "b"], ["y"], bounds=bounds, seed=9)
    small = outside_model_guesses(release, known, ["a", "b"], ["y"], bounds=bounds, seed=9, chunk=10)
    assert whole.to_dict() == small.to_dict()


def test_a_release_that_tells_the_value_fails_and_a_mixed_one_does_not() -> None:
    """A hidden key that a released column copies is guessed right every time: over its bound, named. The
    same release with that column shuffled among the people tells nothing: within."""
    rng = np.random.default_rng(11)
    n = 2000
    key = rng.choice(["u", "v", "w"], n)
    known = pl.DataFrame({"key": key, "other": rng.choice(["o1", "o2"], n)})
    release = known.with_columns(pl.lit(None, pl.String).alias("key"), pl.Series("copy", key))
    told = outside_model_guesses(release, known, ["key", "other"], ["copy"], bounds={"key": 0.8, "other": 0.8})
    assert [c.column for c in told.over] == ["key"]
    assert "key (" in told.describe()
    assert "beyond sampling error" in told.describe()
    mixed = release.with_columns(pl.Series("copy", rng.permutation(key)))
    fine = outside_model_guesses(mixed, known, ["key", "other"], ["copy"], bounds={"key": 0.8, "other": 0.8})
    assert not fine.over
    assert fine.above == 0
    assert 0.25 < fine.columns[0].right_all / fine.columns[0].cells < 0.42  # about 1/3: guessing


def test_the_wilson_interval_covers_95_percent() -> None:
    rng = np.random.default_rng(3)
    for p, n in [(0.8, 30), (0.5, 200), (0.95, 60), (0.1, 15)]:
        draws = rng.binomial(n, p, 4000)
        inside = np.mean([lo <= p <= hi for lo, hi in (wilson_interval(int(r), n) for r in draws)])
        assert 0.92 <= inside <= 0.99, (p, n, inside)
    assert all(math.isnan(v) for v in wilson_interval(0, 0))


def test_folds_below_two_are_refused() -> None:
    frame = pl.DataFrame({"a": ["x"]})
    with pytest.raises(ValueError, match="folds must be at least 2"):
        outside_model_guesses(frame, frame, ["a"], [], bounds={"a": 0.5}, folds=1)
