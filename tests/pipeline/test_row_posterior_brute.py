"""row_posterior (integer codes, closed-form sums) against the module's formula person by person, row by
row, in plain Python: on random releases with several suppression patterns, `*` marks, swapped shown
values, missing true keys, categorical and binned numeric non-key columns."""

from __future__ import annotations

from collections import Counter

import numpy as np
import polars as pl
import pytest

from sdckit.risk._measures._posterior import _features, row_posterior

KEYS = ["a", "b", "c"]


def _brute(release: pl.DataFrame, known: pl.DataFrame, features: list[str], masked: tuple[str, ...],
           a: float = 1.0) -> tuple[np.ndarray, dict[int, tuple[float, set[tuple[str, ...]]]]]:
    """score_r(x) = P(h = x_H(r) | s_r, y_r), counted within the rows of r's suppression pattern;
    posterior(t) = score_t(x_t) / sum over rows r whose every shown cell equals x_t of score_r(x_t);
    per row with hidden keys, the largest score over the hidden values seen with s_r and the values
    that reach it."""
    n = release.height
    truth = [tuple("\x00missing" if v is None else str(v) for v in r) for r in known.select(KEYS).iter_rows()]
    shown_as = [tuple("\x00missing" if v is None else str(v) for v in r) for r in release.select(KEYS).iter_rows()]
    hidden = [tuple(v is None or v == "*" for v in r) for r in release.select(KEYS).iter_rows()]
    y = _features(release, features, masked, 3).to_list()
    by_pattern: dict[tuple[bool, ...], list[int]] = {}
    for i in range(n):
        by_pattern.setdefault(hidden[i], []).append(i)

    def parts(r: int, x: tuple[str, ...]) -> tuple[tuple[str, ...], tuple[str, ...]]:
        hid = [j for j in range(3) if hidden[r][j]]
        return tuple(shown_as[r][j] for j in range(3) if not hidden[r][j]), tuple(x[j] for j in hid)

    def score(r: int, h: tuple[str, ...]) -> float:
        if not any(hidden[r]):
            return 1.0
        rows = by_pattern[hidden[r]]
        s = parts(r, truth[r])[0]
        same_s = [q for q in rows if parts(q, truth[q])[0] == s]
        same_sy = [q for q in same_s if y[q] == y[r]]
        seen_h = Counter(parts(q, truth[q])[1] for q in same_s)
        n_syh = sum(1 for q in same_sy if parts(q, truth[q])[1] == h)
        prior = (seen_h.get(h, 0) + 1 / len(seen_h)) / (len(same_s) + 1)
        return (n_syh + a * prior) / (len(same_sy) + a)

    post = np.zeros(n)
    for t in range(n):
        consistent = [r for r in range(n) if all(hidden[r][j] or shown_as[r][j] == truth[t][j] for j in range(3))]
        total = sum(score(r, parts(r, truth[t])[1]) for r in consistent)
        if t in consistent and total > 0:
            post[t] = score(t, parts(t, truth[t])[1]) / total
    cells = {}
    for r in range(n):
        if not any(hidden[r]):
            continue
        s = parts(r, truth[r])[0]
        options = {parts(q, truth[q])[1] for q in by_pattern[hidden[r]] if parts(q, truth[q])[0] == s}
        scores = {h: score(r, h) for h in options}
        top = max(scores.values())
        cells[r] = (top / sum(scores.values()), {h for h, v in scores.items() if v >= top - 1e-12})
    return post, cells


@pytest.mark.parametrize("seed", range(8))
def test_row_posterior_equals_the_formula_row_by_row(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n = int(rng.integers(30, 90))
    known = pl.DataFrame({"a": rng.choice(["x", "y", "z"], n), "b": rng.choice(["p", "q"], n),
                          "c": rng.choice(["1", "2", "3", "4"], n)})
    known = known.with_columns(pl.when(pl.Series(rng.random(n) < 0.05)).then(None).otherwise(pl.col("c")).alias("c"))
    hide = rng.random((n, 3)) < 0.3
    release = known.with_columns([pl.when(pl.Series(hide[:, j])).then(None).otherwise(pl.col(c)).alias(c)
                                  for j, c in enumerate(KEYS)])
    swapped = pl.Series(rng.random(n) < 0.1)  # a shown value that is not its person's (record swapping)
    release = release.with_columns(pl.when(swapped & pl.col("a").is_not_null()).then(pl.lit("z")).otherwise(pl.col("a")).alias("a"),
                                   pl.when(pl.Series(rng.random(n) < 0.1)).then(pl.lit("*")).otherwise(pl.col("b")).alias("b"))
    income = [None if u < 0.2 else str(v) for u, v in zip(rng.random(n), rng.choice(["lo", "mid", "hi"], n), strict=True)]
    release = release.with_columns(pl.Series("inc", income, dtype=pl.String), pl.Series("amt", rng.normal(size=n)))
    # smoothing above 1: a hidden value seen with the shown keys but not with y can score best
    for features, masked, a in ((["inc"], (), 1.0), ([], (), 1.0), (["inc", "amt"], ("amt",), 1.0), (["inc"], (), 6.0)):
        got = row_posterior(release, known, KEYS, k=3, features=features, masked=masked, smoothing=a)
        post, cells = _brute(release, known, features, masked, a)
        assert np.allclose(got.posterior, post, atol=1e-12), features
        assert got.cell_rows is not None
        assert sorted(cells) == got.cell_rows.tolist()
        assert np.allclose(got.cell_posterior, [cells[r][0] for r in got.cell_rows], atol=1e-12)
        # the guess is right exactly when the person's true hidden values are among the best-scored
        truth = [tuple("\x00missing" if v is None else str(v) for v in r) for r in known.select(KEYS).iter_rows()]
        for r, right in zip(got.cell_rows.tolist(), got.cell_right.tolist(), strict=True):
            hid = [j for j, c in enumerate(KEYS) if release[c][r] is None or release[c][r] == "*"]
            own = tuple(truth[r][j] for j in hid)
            if len(cells[r][1]) == 1:  # no tie: the one best value
                assert right == (own in cells[r][1])
            elif right:  # a tie: a right guess is one of the best
                assert own in cells[r][1]
