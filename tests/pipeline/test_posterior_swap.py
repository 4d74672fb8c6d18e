"""The row posterior after record swapping: a released row is read as it is released.

After record swapping a row shows another area than its person's. The attacker knows the person's
true area and finds the released rows that *show* it; a swapped person's own row is not among them.
The measure once read every shown cell as its person's true value, i.e. measured the release as if
it had not been swapped, and refused ``examples/pipelines/household_swap.yaml`` with a posterior of
1.00 (a person alone with their true keys, though the released group showing those keys holds 3).

The expected values are counted here in plain Python, independently of the module: the reference
attacker's formula of ``sdckit.risk._measures._posterior`` (smoothed shares within the rows of one
pattern of suppressed keys) written out row by row.
"""

from __future__ import annotations

from collections import Counter

import numpy as np
import polars as pl
import pytest

from sdckit.anonymize import RecordSwapper
from sdckit.datasets import make_households
from sdckit.risk._measures._posterior import row_posterior


def test_a_swapped_pair_by_hand() -> None:
    """Areas A and B; the (A, 2) and (B, 1) one-person households swap areas. The release shows groups of 3
    ((A, 1) x 3 and (B, 2) x 3); the person whose true keys are (A, 2) finds no released row showing them."""
    known = pl.DataFrame({"area": ["A", "A", "A", "B", "B", "B"], "age": [1, 1, 2, 2, 2, 1]})
    release = known.with_columns(pl.Series("area", ["A", "A", "B", "B", "B", "A"]))
    post = row_posterior(release, known, ["area", "age"], k=3, features=[])
    # persons 0, 1: three rows show (A, 1), their own among them; person 2 ((A, 2)): none shows it, their
    # own row shows (B, 2); person 5 ((B, 1)): likewise. Before the fix persons 2 and 5 got 1.0.
    assert post.posterior == pytest.approx([1 / 3, 1 / 3, 0.0, 1 / 3, 1 / 3, 0.0])
    assert post.share_above == 0.0


def _brute_force(release: pl.DataFrame, known: pl.DataFrame, keys: list[str], feature: str) -> np.ndarray:
    """The reference attacker's posterior on each person's own row, row by row (smoothing a = 1).

    score_r(x) = P(x_H(r) | s_r, y_r), counted over the rows of r's pattern H(r) (shown keys as released,
    hidden ones the row's person's true values); posterior(t) = [row t consistent with x_t] score_t(x_t)
    / sum over rows r consistent with x_t of score_r(x_t)."""
    rel = release.select(keys).rows()
    true = known.select(keys).rows()
    ys = release[feature].to_list()
    n = len(rel)
    hid = [tuple(j for j, v in enumerate(r) if v is None) for r in rel]

    def s_of(r: int) -> tuple[object, ...]:
        return tuple(v for j, v in enumerate(rel[r]) if j not in hid[r])

    def h_of(r: int, t: int) -> tuple[object, ...]:  # person t's values of row r's hidden keys
        return tuple(true[t][j] for j in hid[r])

    def score(r: int, t: int) -> float:
        if not hid[r]:
            return 1.0
        same = [q for q in range(n) if hid[q] == hid[r]]
        n_s = Counter(s_of(q) for q in same)
        n_sh = Counter((s_of(q), h_of(q, q)) for q in same)
        n_sy = Counter((s_of(q), ys[q]) for q in same)
        n_syh = Counter((s_of(q), ys[q], h_of(q, q)) for q in same)
        m = len({h_of(q, q) for q in same if s_of(q) == s_of(r)})
        s, h, y = s_of(r), h_of(r, t), ys[r]
        prior = (n_sh[(s, h)] + 1 / m) / (n_s[s] + 1)
        return (n_syh[(s, y, h)] + prior) / (n_sy[(s, y)] + 1)

    def consistent(r: int, t: int) -> bool:
        return all(v is None or v == true[t][j] for j, v in enumerate(rel[r]))

    out = np.zeros(n)
    for t in range(n):
        denom = sum(score(r, t) for r in range(n) if consistent(r, t))
        out[t] = score(t, t) / denom if consistent(t, t) and denom > 0 else 0.0
    return out


@pytest.mark.parametrize("seed", [1, 2])
def test_record_swapping_then_suppression_against_brute_force(seed: int) -> None:
    """RecordSwapper on a small survey, then random suppressed cells: the module's posterior equals the
    row-by-row count, every swapped person whose own row shows their swapped area gets 0, and the
    measure differs from the one that reads shown cells as their person's (the old reading)."""
    data = make_households(60, random_state=seed).with_columns(pl.col("region").cast(pl.String),
                                                               pl.col("district").cast(pl.String))
    keys = ["region", "district", "age_group", "sex"]
    swapped = RecordSwapper(household="hid", hierarchy=["region", "district"], similar=["hsize"], swap_rate=0.3,
                            k_anonymity=3, risk_variables=["age_group"], random_state=seed).fit_transform(data)
    rng = np.random.default_rng(seed)
    release = swapped.with_columns([
        pl.when(pl.Series(rng.random(swapped.height) < 0.25)).then(None).otherwise(pl.col(c)).alias(c)
        for c in ["district", "age_group"]
    ]).with_columns((pl.col("income") > pl.col("income").median()).cast(pl.String).alias("rich"))
    known = data.select(keys)
    moved = (swapped["district"] != data["district"]).to_numpy()
    assert moved.sum() >= 4  # the swap did something here
    got = row_posterior(release, known, keys, k=3, features=["rich"])
    want = _brute_force(release, known, keys, "rich")
    np.testing.assert_allclose(got.posterior, want, rtol=1e-9, atol=1e-12)
    shows_other = moved & release["district"].is_not_null().to_numpy()
    assert shows_other.any()
    assert np.all(got.posterior[shows_other] == 0.0)
    # the old reading (every shown cell its person's true value) measures the unswapped table instead
    unswapped = release.with_columns([pl.when(release[c].is_null()).then(None).otherwise(data[c]).alias(c)
                                      for c in ["region", "district"]])
    assert not np.allclose(row_posterior(unswapped, known, keys, k=3, features=["rich"]).posterior, got.posterior)
