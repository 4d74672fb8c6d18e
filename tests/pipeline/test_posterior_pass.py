"""The posterior pass (sdckit.risk._measures._posterior_pass): what it suppresses and what holds after it,
checked by hand on small releases (the posteriors by the formula of row_posterior's module)."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

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
