"""Issue 34, done when: on adult.yaml's written release, an attacker who knows a person's keys and
reads every released column, with a model learnt from separate data (the Adult test split, not the
release), does no better than the report states.

The attacker here is written independently of sdckit's measure (plain Python counts): for a person
t it scores every released row r consistent with t's keys by P(r's hidden keys = t's | r's shown
keys, r's income and amounts), learnt on adult-test (recoded as the release is; add-one smoothing),
and normalises over the consistent rows. The report's reference attacker knows more (the true
composition of each released group), so it is the stronger of the two. A second outside attacker
also knows the algorithm: it runs adult.yaml on adult-test and learns from its own suppressed cells.
"""

from __future__ import annotations

import itertools
import json
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pytest
import yaml

from sdckit.anonymize import GlobalRecoder
from sdckit.datasets import load_adult
from sdckit.pipeline import PipelineResult, load_config, run_pipeline
from sdckit.risk._measures._posterior import row_posterior

ROOT = Path(__file__).resolve().parents[2]


def _y(frame: pl.DataFrame) -> list[str | None]:
    """The attacker's reading of the non-key columns: income, hours in three bands, gains and losses > 0;
    None where any of them is suppressed (the attacker then reads nothing beside the keys)."""
    blank = pl.any_horizontal([pl.col(c).is_null() for c in ("income", "hours-per-week", "capital-gain", "capital-loss")])
    return frame.select(
        pl.when(blank).then(None).otherwise(pl.concat_str([
            pl.col("income").cast(pl.String).str.replace(r"\.$", ""),
            pl.when(pl.col("hours-per-week") < 35).then(pl.lit("lo"))
            .when(pl.col("hours-per-week") <= 45).then(pl.lit("mid")).otherwise(pl.lit("hi")),
            (pl.col("capital-gain") > 0).cast(pl.String),
            (pl.col("capital-loss") > 0).cast(pl.String),
        ], separator="|")).alias("y")
    )["y"].to_list()


class SplitAttacker:
    """P(hidden = h | shown, y) from adult-test, smoothed: (n(s,y,h) + P(h|s)) / (n(s,y) + 1),
    P(h|s) = (n(s,h) + P(h)) / (n(s) + 1), P(h) = (n(h) + 1) / (n + |H| + 1)."""

    def __init__(self, test: pl.DataFrame, keys: list[str]) -> None:
        self.keys = keys
        self.rows = [tuple(r) for r in test.select(keys).iter_rows()]
        self.y = _y(test)
        self.tables: dict[tuple[int, ...], Any] = {}
        self.memo: dict[Any, tuple[tuple[Any, ...], float, list[tuple[Any, float]]]] = {}

    def _table(self, hid: tuple[int, ...]) -> Any:
        if hid not in self.tables:
            shown = [j for j in range(len(self.keys)) if j not in hid]
            n_syh: Counter[Any] = Counter()
            n_sy: Counter[Any] = Counter()
            n_sh: Counter[Any] = Counter()
            n_s: Counter[Any] = Counter()
            n_h: Counter[Any] = Counter()
            options: dict[Any, set[Any]] = defaultdict(set)
            for row, y in zip(self.rows, self.y, strict=True):
                s, h = tuple(row[j] for j in shown), tuple(row[j] for j in hid)
                n_syh[s, y, h] += 1
                n_sy[s, y] += 1
                n_sh[s, h] += 1
                n_s[s] += 1
                n_h[h] += 1
                options[s].add(h)
            self.tables[hid] = (n_syh, n_sy, n_sh, n_s, n_h, options)
        return self.tables[hid]

    def p(self, hid: tuple[int, ...], s: tuple[Any, ...], y: str, h: tuple[Any, ...]) -> float:
        n_syh, n_sy, n_sh, n_s, n_h, _ = self._table(hid)
        p_h = (n_h[h] + 1) / (len(self.rows) + len(n_h) + 1)
        p_hs = (n_sh[s, h] + p_h) / (n_s[s] + 1)
        return (n_syh[s, y, h] + p_hs) / (n_sy[s, y] + 1)

    def best(self, hid: tuple[int, ...], s: tuple[Any, ...], y: str | None) -> tuple[tuple[Any, ...], float, list[tuple[Any, float]]]:
        """The most probable hidden values of a row and their posterior, and per hidden cell its most probable
        value and that value's posterior (the joint posterior summed over the row's other hidden cells). The
        posterior is over every hidden value seen in the attacker's data, each with its smoothed prior
        P(h | s) > 0: a value never seen with s is unlikely, not impossible (normalising over the values seen
        with s alone puts 1.0 on the one value of an s seen once, however often it is wrong)."""
        if (hid, s, y) in self.memo:  # rows of one released group with one reading share their answer
            return self.memo[hid, s, y]
        options = {h for (_, h) in self._table(hid)[2]}
        scored = {h: self.p(hid, s, y, h) for h in options}
        total = sum(scored.values())
        h = max(scored, key=scored.__getitem__)
        single = []
        for j in range(len(hid)):
            marginal: Counter[Any] = Counter()
            for option, score in scored.items():
                marginal[option[j]] += score
            value = max(marginal, key=marginal.__getitem__)
            single.append((value, marginal[value] / total))
        self.memo[hid, s, y] = h, scored[h] / total, single
        return self.memo[hid, s, y]


class AlgorithmAttacker:
    """An outside attacker who also knows the algorithm: it runs the same pipeline on its own data (the Adult
    test split) and learns, from its own run's suppressed cells and their truth, P(hidden value | the row's
    released keys with their suppression pattern, y) for each key, smoothed towards the same without y, then
    towards the column's suppressed values: (n(r, y, v) + P(v | r)) / (n(r, y) + 1),
    P(v | r) = (n(r, v) + P(v)) / (n(r) + 1), P(v) = (n(v) + 1) / (n + |V|). So it reads what being
    suppressed says (rare values are suppressed), which the split attacker ignores."""

    def __init__(self, released: pl.DataFrame, truth: pl.DataFrame, order: np.ndarray, keys: list[str]) -> None:
        rows = [tuple(r) for r in released.select(pl.col(keys).cast(pl.String)).iter_rows()]
        true_rows = [tuple(r) for r in truth.select(pl.col(keys).cast(pl.String)).iter_rows()]
        self.n_ry: dict[Any, Counter[Any]] = defaultdict(Counter)
        self.n_r: dict[Any, Counter[Any]] = defaultdict(Counter)
        self.n_v: dict[int, Counter[Any]] = defaultdict(Counter)
        for i, (r, y) in enumerate(zip(rows, _y(released), strict=True)):
            x = true_rows[int(order[i])]
            for j, v in enumerate(r):
                if v is None:
                    self.n_ry[j, r, y][x[j]] += 1
                    self.n_r[j, r][x[j]] += 1
                    self.n_v[j][x[j]] += 1

    def guess(self, j: int, r: tuple[Any, ...], y: str | None) -> tuple[Any, float]:
        """The most probable value of released row r's hidden key j, and its posterior."""
        base = self.n_v[j]
        n = sum(base.values())
        p_v = {v: (c + 1) / (n + len(base)) for v, c in base.items()}
        by_r, by_ry = self.n_r[j, r], self.n_ry[j, r, y]
        n_r, n_ry = sum(by_r.values()), sum(by_ry.values())
        post = {v: (by_ry[v] + (by_r[v] + p) / (n_r + 1)) / (n_ry + 1) for v, p in p_v.items()}
        value = max(post, key=post.__getitem__)
        return value, post[value]


@pytest.fixture(scope="module")
def attacked(adult_example_written: tuple[PipelineResult, dict[str, Path]]) -> dict[str, Any]:
    result, written = adult_example_written
    raw = yaml.safe_load((ROOT / "examples" / "pipelines" / "adult.yaml").read_text(encoding="utf-8"))
    keys = list(result.config.quasi_identifiers)  # the declared keys and the linked relationship
    released = pl.read_parquet(written["data"])  # the written file, shuffled
    stated = json.loads(written["sidecar"].read_text(encoding="utf-8"))["sections"]["release_check"]["data"]
    assert result.row_order is not None
    person_of = result.row_order  # released row i is input row person_of[i]: the truth, for scoring only
    truth = GlobalRecoder(rules=raw["steps"][0]["recode"]["rules"]).fit_transform(load_adult()).select(keys)
    test = GlobalRecoder(rules=raw["steps"][0]["recode"]["rules"]).fit_transform(load_adult("test"))
    attacker = SplitAttacker(test.with_columns(pl.col(keys).cast(pl.String)), keys)
    rel_keys = [tuple(r) for r in released.select(pl.col(keys).cast(pl.String)).iter_rows()]
    rel_y = _y(released)
    groups: dict[tuple[Any, ...], list[int]] = defaultdict(list)
    for i, r in enumerate(rel_keys):
        groups[r].append(i)
    suppressed = [i for i, r in enumerate(rel_keys) if None in r]
    rng = np.random.default_rng()  # a fresh sample each run: the claim is on every row
    sample = [int(i) for i in rng.choice(suppressed, 300, replace=False)]
    sample += [int(i) for i in rng.choice(len(rel_keys), 100, replace=False)]
    truth_rows = [tuple(r) for r in truth.select(pl.col(keys).cast(pl.String)).iter_rows()]
    # per released group, its rows by the attacker's reading of their non-key columns
    by_y = {pattern: Counter(rel_y[r] for r in rows) for pattern, rows in groups.items()}
    row_post = []
    for i in sample:
        x = truth_rows[int(person_of[i])]
        total, mine = 0.0, 0.0
        for pattern, ys in by_y.items():
            if any(v is not None and v != x[j] for j, v in enumerate(pattern)):
                continue
            hid = tuple(j for j, v in enumerate(pattern) if v is None)
            s = tuple(v for v in pattern if v is not None)
            h = tuple(x[j] for j in hid)
            for y, count in ys.items():
                total += count * (attacker.p(hid, s, y, h) if hid else 1.0)
            if pattern == rel_keys[i]:
                mine = attacker.p(hid, s, rel_y[i], h) if hid else 1.0
        row_post.append(mine / total)
    # every released row with a suppressed key: the attacker's posterior of its hidden values, together and cell by cell
    cell_post, cell_right = [], []
    cells: list[tuple[str, float, bool]] = []  # per hidden cell: its column, the attacker's belief, its guess right
    for i in suppressed:
        x = truth_rows[int(person_of[i])]
        hid = tuple(j for j, v in enumerate(rel_keys[i]) if v is None)
        guess, p, single = attacker.best(hid, tuple(v for v in rel_keys[i] if v is not None), rel_y[i])
        cell_post.append(p)
        cell_right.append(guess == tuple(x[j] for j in hid))
        cells += [(keys[j], q, v == x[j]) for j, (v, q) in zip(hid, single, strict=True)]
    return {"stated": stated, "row": np.asarray(row_post), "cell": np.asarray(cell_post),
            "right": np.asarray(cell_right), "cells": cells, "result": result, "k": result.config.k,
            "released": released, "keys": keys, "truth_rows": truth_rows}


@pytest.fixture(scope="module")
def algorithm_attacked(attacked: dict[str, Any], tmp_path_factory: pytest.TempPathFactory) -> list[tuple[str, float, bool]]:
    """Per hidden cell of adult.yaml's written release: the algorithm-aware attacker's column, belief, guess right."""
    keys, released = attacked["keys"], attacked["released"]
    raw = yaml.safe_load((ROOT / "examples" / "pipelines" / "adult.yaml").read_text(encoding="utf-8"))
    recoder = GlobalRecoder(rules=raw["steps"][0]["recode"]["rules"])
    own = tmp_path_factory.mktemp("adult-test-run") / "adult-test.parquet"
    load_adult("test").write_parquet(own)
    config = load_config(ROOT / "examples" / "pipelines" / "adult.yaml").replace(input=str(own), output_data=None, output_report=None)
    run = run_pipeline(config)  # the attacker's own run of the published algorithm on its own data
    assert run.row_order is not None
    attacker = AlgorithmAttacker(run.protected, recoder.fit_transform(load_adult("test")).select(keys), run.row_order, keys)
    order, truth_rows = attacked["result"].row_order, attacked["truth_rows"]
    cells = []
    for i, (r, y) in enumerate(zip((tuple(r) for r in released.select(pl.col(keys).cast(pl.String)).iter_rows()), _y(released), strict=True)):
        for j, v in enumerate(r):
            if v is None:
                value, q = attacker.guess(j, r, y)
                cells.append((keys[j], q, value == truth_rows[int(order[i])][j]))
    return cells


@pytest.mark.slow
def test_the_report_states_the_posterior_and_the_release_is_within_it(attacked: dict[str, Any]) -> None:
    stated = attacked["stated"]["row_posterior"]
    assert stated is not None
    assert attacked["stated"]["within_budget"]
    release = attacked["stated"]["release"]
    assert release["exposure_at_k"] + stated["share_above_1_over_k_plus_tolerance"] <= release["budget"]


@pytest.mark.slow
def test_split_attacker_puts_at_most_1_over_k_plus_tolerance_on_any_row(attacked: dict[str, Any]) -> None:
    """Issue 34, done when (rows): on every attacked person's row (300 drawn among the rows with a suppressed
    key, 100 among all; a fresh draw each run) at most 1/k + the stated tolerance."""
    bound = attacked["stated"]["posterior_bound"]
    k, tol = attacked["k"], attacked["stated"]["row_posterior"]["tolerance"]
    assert bound["row_bound"] == pytest.approx(1 / k + tol)
    row = attacked["row"]
    assert row.size == 400
    assert row.max() <= 1 / k + tol, f"{int(np.sum(row > 1 / k + tol))} rows above, largest {row.max():.3f}"
    assert attacked["stated"]["row_posterior"]["n_above_1_over_k_plus_tolerance"] == 0
    assert attacked["stated"]["row_posterior"]["max_row_posterior"] <= 1 / k + tol


@pytest.mark.slow
def test_the_stated_cell_bound_is_the_documented_one(attacked: dict[str, Any]) -> None:
    bound = attacked["stated"]["posterior_bound"]
    k, tol = attacked["k"], attacked["stated"]["row_posterior"]["tolerance"]
    assert attacked["cell"].size == attacked["stated"]["row_posterior"]["n_suppressed_rows"] >= 1000
    assert bound["cell_bound"] == pytest.approx(1 - 1 / k)  # the documented default
    # a column's bound is raised above 1 - 1/k only to its commonest value's share + tolerance, counted here
    adult = attacked["result"].known
    for c, b in bound["column_bounds"].items():
        top = adult[c].cast(pl.String).value_counts()["count"].max() / adult.height
        assert b == pytest.approx(max(1 - 1 / k, min(1.0, top + tol)))


def _above_bound(cells: list[tuple[str, float, bool]], bounds: dict[str, float]) -> dict[str, tuple[int, float, float]]:
    """Per column, over the cells an attacker reads above the column's stated bound: how many, its mean
    belief, and how often its guess is right."""
    out = {}
    for c, b in bounds.items():
        above = [(q, right) for col, q, right in cells if col == c and q > b]
        if above:
            out[c] = (len(above), float(np.mean([q for q, _ in above])), float(np.mean([r for _, r in above])))
    return out


@pytest.mark.slow
@pytest.mark.parametrize("who", ["split", "algorithm"])
def test_outside_attackers_guess_suppressed_cells_right_no_more_often_than_the_stated_bound(
    who: str, attacked: dict[str, Any], request: pytest.FixtureRequest
) -> None:
    """Issue 34, done when (cells), as docs/anonymize.md states it: the stated bound on a suppressed cell is the
    posterior of the reference attacker (who knows each released group's true make-up) and of the population
    attacker (the input's own rates); an attacker with a model from separate data -- ignoring the algorithm
    (split) or running it on its own data (algorithm) -- can *believe* more on some cells (its model is sharp
    where the release is mixed: a pattern seen n times with one value gets (n + p) / (n + 1), whatever the
    release), but where it does, its guesses are right no more often than the bound: per column and over all,
    to three standard errors. The beliefs above the bound are asserted too: if they vanish, the docs are stale."""
    cells = attacked["cells"] if who == "split" else request.getfixturevalue("algorithm_attacked")
    bounds = attacked["stated"]["posterior_bound"]["column_bounds"]
    assert len(cells) == sum(attacked["released"].select(attacked["keys"]).null_count().row(0))  # every hidden key cell
    above = _above_bound(cells, bounds)
    n_above = sum(n for n, _, _ in above.values())
    assert n_above >= 200, "an outside model believing more than the bound is documented; update docs/anonymize.md"
    for c, (n, belief, right) in above.items():
        assert right <= bounds[c] + 3 * np.sqrt(bounds[c] * (1 - bounds[c]) / n), (c, n, belief, right)
    belief = sum(n * b for n, b, _ in above.values()) / n_above
    right = sum(n * r for n, _, r in above.values()) / n_above
    figures = {c: (n, round(b, 3), round(r, 3)) for c, (n, b, r) in above.items()}  # per column: cells, belief, right
    assert right < belief - 0.2, figures  # the excess is belief, not knowledge: right far less often than it believes
    lowest = min(bounds.values())
    assert right <= lowest + 3 * np.sqrt(lowest * (1 - lowest) / n_above), figures


@pytest.mark.slow
def test_suppressed_cells_read_no_better_than_stated(attacked: dict[str, Any]) -> None:
    stated = attacked["stated"]["row_posterior"]
    cell, right = attacked["cell"], attacked["right"]
    # the split attacker's guesses of a suppressed value are right no more often than it believes (calibrated
    # to within sampling error), and no more often than the reference attacker's
    assert right.mean() <= cell.mean() + 3 * np.sqrt(0.25 / cell.size)
    assert right.mean() <= stated["mean_cell_posterior"] + 3 * np.sqrt(0.25 / cell.size)


def test_reference_posterior_by_hand() -> None:
    """A group of four formed by suppression (true a: x, x, y, y): without another column the posterior on a
    person's row is exactly 1/4 = 1/g; an income that differs inside the group raises it, to the value computed
    by hand from the module's formula (the test can fail)."""
    keys = ["a", "b"]
    known = pl.DataFrame({"a": ["x", "x", "y", "y"], "b": ["p"] * 4})
    release = known.with_columns(pl.lit(None, dtype=pl.String).alias("a"), pl.Series("inc", ["hi", "lo", "lo", "lo"]))
    plain = row_posterior(release, known, keys, k=2, features=[])
    assert plain.posterior == pytest.approx([0.25] * 4)
    # P(x | s) = (2 + 1/2) / (4 + 1) = 1/2; row 0 (hi): (1 + 1/2) / (1 + 1) = 3/4; rows 1-3 (lo): (1 + 1/2) / (3 + 1) = 3/8
    # (and the same for y, by symmetry: rows 2, 3 hold y with lo)
    rich = row_posterior(release, known, keys, k=4, features=["inc"])
    assert rich.posterior[0] == pytest.approx(0.75 / (0.75 + 3 * 0.375))
    assert rich.posterior[1] == pytest.approx(0.375 / (0.75 + 3 * 0.375))
    # y: row 0 (hi): (0 + 1/2) / 2 = 1/4; rows 1-3: (2 + 1/2) / 4 = 5/8; person 2's own row 2
    assert rich.posterior[2] == pytest.approx(0.625 / (0.25 + 3 * 0.625))
    assert rich.share_above == pytest.approx(0.25)  # person 0 only: 0.4 > 1/4 + 0.05


def test_the_likelihood_ratio_bound_is_never_below_the_exact_posterior() -> None:
    """docs/anonymize.md's bound L^2 / (L^2 + g - 1), against the exact posterior by enumerating every
    assignment of a group's members to its rows (random groups, random laws P(y | x)); it is reached
    closely enough that a wrong bound (L / (L + g - 1)) fails."""
    rng = np.random.default_rng(7)
    worst_ratio = 0.0
    below_weaker = False
    for _ in range(150):
        g = int(rng.integers(2, 7))
        n_keys, n_y = int(rng.integers(2, 4)), int(rng.integers(2, 4))
        law = rng.dirichlet(np.full(n_y, 0.7), size=n_keys)  # P(y | x), rows x
        members = rng.integers(0, n_keys, g)  # true keys of the group's members
        ys = [int(rng.choice(n_y, p=law[x])) for x in members]  # row s holds member s before the shuffle
        present = np.unique(members)
        ratio = max(law[a, y] / law[b, y] for y in set(ys) for a in present for b in present)
        bound = ratio**2 / (ratio**2 + g - 1)
        t = 0  # the target: member 0
        post = np.zeros(g)
        for perm in itertools.permutations(range(g)):  # perm[row] = member on that row
            like = np.prod([law[members[perm[r]], ys[r]] for r in range(g)])
            post[perm.index(t)] += like
        post /= post.sum()
        assert post.max() <= bound + 1e-12
        worst_ratio = max(worst_ratio, float(post.max() / bound))
        below_weaker |= bool(post.max() > ratio / (ratio + g - 1) + 1e-9)
    assert worst_ratio > 0.5  # the bound is not vacuous on these groups
    assert below_weaker  # a bound with L instead of L^2 would be wrong

