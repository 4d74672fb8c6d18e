"""The posterior pass (sdckit.risk._measures._posterior_pass): what it suppresses and what holds after it,
checked by hand on small releases (the posteriors by the formula of row_posterior's module)."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from sdckit.risk._measures import _posterior_pass as posterior_pass
from sdckit.risk._measures._outside import ColumnGuesses, OutsideGuesses
from sdckit.risk._measures._posterior import row_posterior
from sdckit.risk._measures._posterior_pass import PosteriorPassError, column_bounds, suppress_posterior

KEYS = ["a", "b"]


def _release() -> tuple[pl.DataFrame, pl.DataFrame]:
    """A group of four formed by suppression (true a: x, x, y, y) whose income tells person 0's row apart
    (posterior 0.4 > 1/4 + 0.05, by hand in test_release_posterior.py), and a group of four shown whole."""
    known = pl.DataFrame({"a": ["x", "x", "y", "y", "z", "z", "z", "z"], "b": ["p"] * 4 + ["q"] * 4})
    release = known.with_columns(
        pl.when(pl.int_range(pl.len()) < 4).then(None).otherwise(pl.col("a")).alias("a"),
        pl.Series("inc", ["hi", "lo", "lo", "lo", "hi", "lo", "hi", "lo"]),
    )
    return release, known


def test_the_pass_blanks_the_group_whose_income_singles_out_a_row() -> None:
    release, known = _release()
    before = row_posterior(release, known, KEYS, k=4, features=["inc"])
    assert before.posterior[0] == pytest.approx(0.4)  # 0.75 / (0.75 + 3 * 0.375)
    done = suppress_posterior(release, known, KEYS, k=4, features=["inc"])
    # the income of the four rows of the suppressed group, and nothing else
    assert done.release["inc"].is_null().to_list() == [True] * 4 + [False] * 4
    assert done.cells == {"inc": 4}
    assert done.rows == 4
    assert done.rounds == 1
    # the group's rows are now identical on every column read: exactly 1/4 on each person's row
    assert done.posterior.posterior[:4] == pytest.approx([0.25] * 4)
    assert done.max_row_posterior <= 0.25 + 0.05
    assert "4 cells (4 of inc)" in done.describe()


def test_a_release_within_its_bounds_is_left_as_it_is() -> None:
    release, known = _release()
    plain = release.with_columns(pl.lit("lo").alias("inc"))
    done = suppress_posterior(plain, known, KEYS, k=4, features=["inc"])
    assert done.release.equals(plain)
    assert done.cells == {}
    assert done.rounds == 0


def test_a_cell_the_shown_keys_carry_loses_one_more_key() -> None:
    """Hidden a with b shown: when the people with b = p are nearly all x (outside the group), a suppressed
    a of a b = p row reads x above the bound; the pass hides b in the group too (random: the only shown key)."""
    known = pl.DataFrame({"a": ["x"] * 40 + ["y"] * 2 + ["x"] * 2 + ["w"] * 20, "b": ["p"] * 44 + ["r"] * 20})
    release = known.with_columns(
        pl.when((pl.int_range(pl.len()) >= 40) & (pl.int_range(pl.len()) < 44)).then(None).otherwise(pl.col("a")).alias("a"))
    bounds = column_bounds(known, KEYS, 0.5, 0.05)
    assert bounds == {"a": pytest.approx(max(0.5, 42 / 64 + 0.05)), "b": pytest.approx(max(0.5, 44 / 64 + 0.05))}
    done = suppress_posterior(release, known, KEYS, k=2, features=[], cell_bound=0.5, seed=1)
    assert done.cells.get("b") == 4  # the group's four shown b
    assert done.release["b"].is_null().to_numpy()[40:44].all()


def test_the_pass_refuses_when_its_rounds_run_out() -> None:
    release, known = _release()
    with pytest.raises(PosteriorPassError, match="after 0 rounds"):
        suppress_posterior(release, known, KEYS, k=4, features=["inc"], max_rounds=0)


def test_seeded_runs_repeat() -> None:
    known = pl.DataFrame({"a": ["x"] * 40 + ["y"] * 2 + ["x"] * 2, "b": ["p"] * 44, "c": ["u"] * 44})
    release = known.with_columns(
        pl.when(pl.int_range(pl.len()) >= 40).then(None).otherwise(pl.col("a")).alias("a"))
    keys = ["a", "b", "c"]
    one = suppress_posterior(release, known, keys, k=2, features=[], cell_bound=0.5, seed=3)
    two = suppress_posterior(release, known, keys, k=2, features=[], cell_bound=0.5, seed=3)
    assert one.release.equals(two.release)
    assert np.isfinite(one.population_cell).sum() >= 4


def _reference_population_cell_posterior(release: pl.DataFrame, known: pl.DataFrame, keys: list[str],
                                         features: list[str], bounds: dict[str, float] | None) -> np.ndarray:
    """The population attacker's posterior the long way: for every row, every hidden-value combination
    seen in the input scored by the module's formula (counts over everyone but the rows of the row's
    suppression pattern), then summed per value of each hidden cell and normalised. Plain Python."""
    n = release.height
    truth = [tuple("\x00missing" if v is None else str(v) for v in r) for r in known.select(keys).iter_rows()]
    ys = [tuple(r) for r in release.select(features).iter_rows()] if features else [()] * n
    blank = [all(v is None for v in y) if features else False for y in ys]
    pattern = [tuple(v is None for v in r) for r in release.select(keys).iter_rows()]
    out = np.full(n, np.nan)
    for i in range(n):
        hid = [j for j, h in enumerate(pattern[i]) if h]
        if not hid:
            continue
        sh = [j for j, h in enumerate(pattern[i]) if not h]
        others = [p for p in range(n) if pattern[p] != pattern[i]]
        combos = sorted({tuple(truth[p][j] for j in hid) for p in range(n)})
        s_i = tuple(truth[i][j] for j in sh)
        of_s = [p for p in others if tuple(truth[p][j] for j in sh) == s_i]
        of_sy = [p for p in of_s if not blank[p] and ys[p] == ys[i]]
        scores = []
        for h in combos:
            n_sh = sum(1 for p in of_s if tuple(truth[p][j] for j in hid) == h)
            prior = (n_sh + 1 / len(combos)) / (len(of_s) + 1)
            if blank[i]:
                scores.append(prior)
            else:
                n_syh = sum(1 for p in of_sy if tuple(truth[p][j] for j in hid) == h)
                scores.append((n_syh + prior) / (len(of_sy) + 1))
        total = sum(scores)
        best = -np.inf
        for place, j in enumerate(hid):
            per_value: dict[str, float] = {}
            for h, sc in zip(combos, scores, strict=True):
                per_value[h[place]] = per_value.get(h[place], 0.0) + sc
            best = max(best, max(per_value.values()) / total - (0.0 if bounds is None else bounds[keys[j]]))
        out[i] = best
    return out


@pytest.mark.parametrize("seed", [0, 1, 2, 3, 4, 5])
def test_population_cell_posterior_equals_the_long_way(seed: int) -> None:
    """The closed form (no cross product of rows and hidden-value combinations) against every combination
    scored one by one, on random releases with several suppression patterns, blank rows and missing keys."""
    from sdckit.risk._measures._posterior_pass import population_cell_posterior

    rng = np.random.default_rng(seed)
    n = 60
    known = pl.DataFrame({"a": rng.choice(["x", "y", "z"], n), "b": rng.choice(["p", "q"], n),
                          # a key of many values in half the runs: values never seen with a row's shown keys
                          "c": rng.choice([str(v) for v in range(4 if seed % 2 else 12)], n).astype(object)})
    known = known.with_columns(pl.when(pl.Series(rng.random(n) < 0.05)).then(None).otherwise(pl.col("c")).alias("c"))
    hide = rng.random((n, 3)) < 0.35
    release = known.with_columns([pl.when(pl.Series(hide[:, j])).then(None).otherwise(pl.col(c)).alias(c)
                                  for j, c in enumerate(["a", "b", "c"])])
    inc = rng.choice(["lo", "mid", "hi"], n).astype(object)
    inc[rng.random(n) < 0.2] = None
    release = release.with_columns(pl.Series("inc", inc, dtype=pl.String))
    keys = ["a", "b", "c"]
    bounds = {"a": 0.5, "b": 0.7, "c": 0.4}
    for features, bnd in (([], None), (["inc"], None), (["inc"], bounds)):
        got = population_cell_posterior(release, known, keys, features, bounds=bnd)
        want = _reference_population_cell_posterior(release, known, keys, features, bnd)
        assert np.array_equal(np.isnan(got), np.isnan(want))
        assert np.allclose(got[~np.isnan(got)], want[~np.isnan(want)], atol=1e-12), (features, bnd)


def _outside(over: bool, n: int) -> OutsideGuesses:
    """An outside model's result: with ``over``, key a's guesses above the bound right 40 of 40 times, rows 0-3."""
    right = 40 if over else 10
    column = ColumnGuesses(column="a", bound=0.7, cells=4, right_all=4, baseline_right=2, above=40, belief_above=0.9,
                           right_above=right)
    assert column.over is over  # 40 of 40 is over 0.7 at 99.9 %; 10 of 40 is not
    return OutsideGuesses(columns=(column,), folds=2, rows_above={"a": np.arange(n) < 4})


def test_cells_an_outside_model_guesses_right_too_often_are_hidden_then_scored_again(monkeypatch: pytest.MonkeyPatch) -> None:
    """The release is within the reference bounds; the outside model's guesses of key a are right too often on
    rows 0-3 (which show their income): the pass blanks their group's income, and scores a new model."""
    release, known = _release()
    plain = release.with_columns(pl.lit("lo").alias("inc"))
    calls: list[int] = []

    def fake(frame: pl.DataFrame, *args: object, **kwargs: object) -> OutsideGuesses:
        calls.append(int(frame["inc"].is_null().sum()))
        return _outside(len(calls) == 1, frame.height)

    monkeypatch.setattr(posterior_pass, "outside_model_guesses", fake)
    done = suppress_posterior(plain, known, KEYS, k=4, features=["inc"])
    assert calls == [0, 4]  # scored on the release, then on it with the group's income hidden
    assert done.cells == {"inc": 4}
    assert done.release["inc"].is_null().to_list() == [True] * 4 + [False] * 4
    assert done.outside_rounds == 1
    assert "after 1 round(s) hiding" in done.describe()
    assert done.to_dict()["outside_model"]["over"] == []


def test_the_pass_refuses_when_an_outside_model_stays_right_too_often(monkeypatch: pytest.MonkeyPatch) -> None:
    release, known = _release()
    plain = release.with_columns(pl.lit("lo").alias("inc"))
    calls: list[int] = []

    def fake(frame: pl.DataFrame, *args: object, **kwargs: object) -> OutsideGuesses:
        calls.append(1)
        return _outside(True, frame.height)

    monkeypatch.setattr(posterior_pass, "outside_model_guesses", fake)
    with pytest.raises(PosteriorPassError, match=r"beyond sampling error for a \(40 of 40 right.*Lower posterior_bound"):
        suppress_posterior(plain, known, KEYS, k=4, features=["inc"])
    # scored again after each hiding, until its rounds run out or nothing is left to hide (rows 0-3 hide every key)
    assert 2 <= len(calls) <= posterior_pass.OUTSIDE_ROUNDS + 1
