"""Masking methods on Dask frames: fitted from aggregates, transformed lazily, equal to memory.

The rows reaching the driver are counted by the conftest's counting scheduler (independent of
sdckit's own ``driver_rows()``): at most one row per distinct value of a fitted column, plus a few
summary rows.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import polars as pl
import pytest

dd = pytest.importorskip("dask.dataframe", reason="dask[dataframe] is not installed (pip install sdckit[scale])")

from sdckit._scale import driver_rows  # noqa: E402
from sdckit.anonymize import GlobalRecoder, TopBottomCoder  # noqa: E402

from .conftest import DriverRows  # noqa: E402

PARTS = 5
RULES: dict[str, dict[str, Any]] = {
    "age": {"bins": 4, "method": "quantile"},
    "income": {"breaks": [0, 20_000, 40_000, 80_000]},
    "hours": {"bins": 3},
    "region": {"mapping": {"north": "N", "south": "S"}},
    "score": {"breaks": [0, 5, 10, 1_000], "closed": "right"},
}


def _dask(frame: pl.DataFrame) -> Any:
    return dd.from_pandas(frame.to_pandas(), npartitions=PARTS)


def _computed(ddf: Any) -> pl.DataFrame:
    assert isinstance(ddf, dd.DataFrame)  # still a (lazy) Dask frame
    return pl.from_pandas(ddf.compute()).sort("id")


def _same_cells(got: pl.DataFrame, expected: pl.DataFrame, columns: list[str]) -> None:
    for c in columns:
        a = [None if v is None or v != v else v for v in got[c].to_list()]
        assert a == expected[c].to_list(), c


def test_global_recoder_on_dask_equals_memory(table: pl.DataFrame, dask_driver_rows: DriverRows) -> None:
    ddf = _dask(table)
    before = driver_rows()
    rec = GlobalRecoder(rules=RULES).fit(ddf)
    out = rec.transform(ddf)
    fitted_rows = dask_driver_rows.rows
    assert driver_rows() - before == fitted_rows  # sdckit's own counter agrees with the scheduler's
    # quantile bins: the value counts of age (72 values); the rest a summary row each, the region
    # mapping its 4 values (at fit and at transform), and one row of changes
    assert table["age"].n_unique() <= fitted_rows <= table["age"].n_unique() + 2 * table["region"].n_unique() + 4
    memory = GlobalRecoder(rules=RULES).fit(table)
    assert rec.rules_ == memory.rules_
    assert rec.changes_ == memory.changes_
    _same_cells(_computed(out), memory.transform(table).sort("id"), list(RULES))


def test_global_recoder_hierarchy_and_numeric_labels_on_dask(dask_driver_rows: DriverRows) -> None:
    rng = np.random.default_rng(7)
    n = 3_000
    frame = pl.DataFrame(
        {
            "id": np.arange(n),
            "country": rng.choice(["Cuba", "Peru", "Japan", "India", "Germany"], n),
            "age": rng.integers(17, 91, n),
        }
    )
    rules = {
        "country": {"hierarchy": "adult:native-country", "level": 2},
        "age": {"breaks": [-np.inf, 30, 60, np.inf], "labels": [1, 2, 3]},
    }
    rec = GlobalRecoder(rules=rules).fit(_dask(frame))
    out = rec.transform(_dask(frame))
    assert dask_driver_rows.rows <= 2 * 5 + 2 + 1  # country's values twice, age's range, the changes
    memory = GlobalRecoder(rules=rules).fit(frame)
    assert rec.rules_ == memory.rules_
    assert rec.changes_ == memory.changes_
    _same_cells(_computed(out), memory.transform(frame).sort("id"), list(rules))


def test_global_recoder_on_dask_refuses_as_memory_does(table: pl.DataFrame) -> None:
    from sdckit.errors import InputError

    rules = {"age": {"breaks": [30, 60], "labels": [1]}}  # numeric labels, ages outside [30, 60)
    with pytest.raises(InputError, match="outside the breaks"):
        GlobalRecoder(rules=rules).fit(_dask(table))
    with pytest.raises(InputError, match="outside the breaks"):
        GlobalRecoder(rules=rules).fit(table)


@pytest.mark.parametrize(
    "params",
    [
        {"columns": ["age", "score"], "top_quantile": 0.95, "bottom_quantile": 0.05},
        {"top": {"income": 60_000.0}, "bottom": {"income": 10_000.0}},
        {"columns": ["age"], "top": 80, "top_value": ">80"},
    ],
    ids=["quantiles", "thresholds", "text"],
)
def test_top_bottom_coder_on_dask_equals_memory(
    table: pl.DataFrame, dask_driver_rows: DriverRows, params: dict[str, Any]
) -> None:
    ddf = _dask(table)
    counted = driver_rows()
    coder = TopBottomCoder(**params).fit(ddf)
    out = coder.transform(ddf)
    assert driver_rows() - counted == dask_driver_rows.rows
    distinct = sum(table[c].n_unique() for c in coder.columns_) if "top_quantile" in params else 0
    assert dask_driver_rows.rows <= distinct + 1  # the value counts (quantiles only), one row of changes
    memory = TopBottomCoder(**params).fit(table)
    assert coder.thresholds_ == memory.thresholds_
    assert coder.changes_ == memory.changes_
    _same_cells(_computed(out), memory.transform(table).sort("id"), list(coder.columns_))


def test_counted_quantile_is_numpys() -> None:
    from sdckit.anonymize._lazy import counted_quantile

    rng = np.random.default_rng(3)
    for n in (1, 2, 7, 1_000):
        x = rng.integers(0, 12, n).astype(float) + rng.choice([0.0, 0.5], n)
        values, counts = np.unique(x, return_counts=True)
        for q in (0.0, 0.01, 0.25, 0.5, 0.7, 0.95, 0.999, 1.0):
            assert counted_quantile(values.tolist(), counts, q) == float(np.quantile(x, q))


def test_recoding_stays_lazy_on_polars_and_duckdb(table: pl.DataFrame) -> None:
    duckdb = pytest.importorskip("duckdb")
    memory = GlobalRecoder(rules=RULES).fit(table)
    expected = memory.transform(table).sort("id")
    for lazy in (table.lazy(), duckdb.from_arrow(table.to_arrow())):
        rec = GlobalRecoder(rules=RULES).fit(lazy)
        out = rec.transform(lazy)
        assert type(out) is type(lazy)
        assert rec.rules_ == memory.rules_
        assert rec.changes_ == memory.changes_
        got = out.collect() if isinstance(out, pl.LazyFrame) else out.pl()
        _same_cells(got.sort("id"), expected, list(RULES))
        coded = TopBottomCoder(columns=["age"], top_quantile=0.9).fit(lazy)
        assert coded.thresholds_ == TopBottomCoder(columns=["age"], top_quantile=0.9).fit(table).thresholds_
        assert type(coded.transform(lazy)) is type(lazy)


# --- PRAM: the law of the draws, not the draws (a partition's seed is its own) -----------------------


def _pram_table(n: int = 4_000) -> pl.DataFrame:
    rng = np.random.default_rng(11)
    return pl.DataFrame(
        {
            "id": np.arange(n),
            "region": rng.choice(["a", "b", "c", "d"], n, p=[0.5, 0.3, 0.15, 0.05]),
            "kids": rng.integers(0, 3, n),
        }
    )


def transition_pvalue(before: list[Any], after: list[Any], values: list[Any], P: Any) -> float:
    """Pearson chi-square p-value of the released values given the originals against rows of P
    (each original value a: its released values ~ Multinomial(n_a, P[a]))."""
    from scipy import stats

    index = {v: i for i, v in enumerate(values)}
    m = len(values)
    observed = np.zeros((m, m))
    for a, b in zip(before, after, strict=True):
        observed[index[a], index[b]] += 1
    expected = observed.sum(axis=1, keepdims=True) * np.asarray(P)
    keep = expected > 0
    assert observed[~keep].sum() == 0  # nothing drawn where P has zero probability
    chi2 = float((((observed - expected) ** 2)[keep] / expected[keep]).sum())
    dof = int(keep.sum()) - m
    return float(stats.chi2.sf(chi2, dof))


def test_pram_on_dask_follows_the_matrix(dask_driver_rows: DriverRows) -> None:
    from sdckit.anonymize import PRAM

    frame = _pram_table()
    ddf = _dask(frame)
    pram = PRAM(columns=["region", "kids"], pd=0.6, random_state=2026)
    counted = driver_rows()
    out = pram.fit_transform(ddf)
    assert isinstance(out, dd.DataFrame)
    assert driver_rows() - counted == dask_driver_rows.rows
    m = {c: frame[c].n_unique() for c in pram.columns_}
    # the value counts (m rows a column) and one (from, to) tally per pair drawn and partition
    assert dask_driver_rows.rows <= sum(m.values()) + PARTS * sum(v * v for v in m.values())
    memory = PRAM(columns=["region", "kids"], pd=0.6, random_state=2026).fit(frame)
    for c in pram.columns_:
        assert pram.transition_[c][0] == memory.transition_[c][0]
        np.testing.assert_allclose(pram.transition_[c][1], memory.transition_[c][1], rtol=0, atol=1e-15)
    released = _computed(out)
    for c in pram.columns_:
        values, P = memory.transition_[c]
        assert transition_pvalue(frame[c].to_list(), released[c].to_list(), values, P) > 1e-3
        # changes_ describes the very draw released
        changed = int((released[c] != frame[c]).sum())
        assert pram.changes_[c]["cells_changed"] == changed
    again = _computed(pram.transform(ddf))
    assert again.equals(released)  # a seed: the same draw, partition by partition


def test_pram_on_dask_draws_fresh_by_default(dask_driver_rows: DriverRows) -> None:
    from sdckit.anonymize import PRAM

    frame = _pram_table(1_000)
    ddf = _dask(frame)
    pram = PRAM(columns=["region"], pd=0.5).fit(ddf)
    first, second = _computed(pram.transform(ddf)), _computed(pram.transform(ddf))
    assert not first.equals(second)  # OS entropy: each release is another draw
    fresh = _computed(PRAM(columns=["region"], pd=0.5).fit_transform(ddf))
    assert not fresh.equals(first)


def test_pram_sdcmicro_matrix_and_unseen_values_on_dask() -> None:
    from sdckit.anonymize import PRAM

    frame = _pram_table(2_000)
    dist = PRAM(columns=["region"], method="sdcmicro", pd=0.5, random_state=4).fit(_dask(frame))
    memory = PRAM(columns=["region"], method="sdcmicro", pd=0.5, random_state=4).fit(frame)
    np.testing.assert_allclose(dist.transition_["region"][1], memory.transition_["region"][1], rtol=0, atol=1e-15)
    other = frame.with_columns(pl.lit("zz").alias("region"))
    with pytest.raises(Exception, match="'zz' was not seen in fit"):
        dist.transform(_dask(other)).compute()


# --- The release plan: exact lattice on the table, applied lazily ----------------------------------


def _adult() -> pl.DataFrame:
    from sdckit.datasets import load_adult

    return load_adult().select("age", "sex", "race", "education", "native-country").head(3_000)


HIERARCHIES = {"age": "adult:age", "native-country": "adult:native-country", "race": "adult:race"}


def test_release_plan_with_lazy_data_equals_memory_and_applies_lazily(dask_driver_rows: DriverRows) -> None:
    from sdckit.plan import plan_release
    from sdckit.risk import Marginals

    adult = _adult()
    cols = ["age", "sex", "race", "native-country"]
    marginals = Marginals.from_data(adult, cols)
    ddf = dd.from_pandas(adult.to_pandas(), npartitions=PARTS)
    counted = driver_rows()
    plan = plan_release(marginals, k=5, budget=0.02, hierarchies=HIERARCHIES, data=ddf)
    planned_rows = dask_driver_rows.rows
    assert driver_rows() - counted == planned_rows  # every collect went through the counted door
    memory = plan_release(marginals, k=5, budget=0.02, hierarchies=HIERARCHIES, data=adult)
    assert plan.to_dict() == memory.to_dict()
    distinct = sum(adult[c].n_unique() for c in cols)
    # per node evaluated one size histogram (at most sqrt(2 n) sizes), the values checked once, n
    assert planned_rows <= plan.n_evaluated * int(np.sqrt(2 * len(adult))) + distinct + 1
    before = dask_driver_rows.rows
    out = plan.apply(ddf)
    assert isinstance(out, dd.DataFrame)
    assert dask_driver_rows.rows - before <= distinct + len(cols) + 1  # the recoded columns' values, changes
    assert pl.from_pandas(out.compute()).equals(memory.apply(adult))
    polars_plan = plan_release(marginals, k=5, budget=0.02, hierarchies=HIERARCHIES, data=adult.lazy())
    assert polars_plan.to_dict() == memory.to_dict()
    assert isinstance(polars_plan.apply(adult.lazy()), pl.LazyFrame)


def test_release_plan_suppression_on_lazy_data_says_what_to_do() -> None:
    from sdckit.errors import ParameterError
    from sdckit.plan import plan_release
    from sdckit.risk import Marginals

    adult = _adult()
    marginals = Marginals.from_data(adult, ["age", "sex"])
    with pytest.raises(ParameterError, match="suppression= with a lazy or distributed table"):
        plan_release(marginals, k=5, budget=0.01, hierarchies={"age": "adult:age"}, data=adult.lazy(), suppression=0.05)


def test_pram_on_a_polars_lazy_frame_collects_saying_so() -> None:
    from sdckit.anonymize import PRAM
    from sdckit.errors import SdcWarning

    frame = _pram_table(500)
    with pytest.warns(SdcWarning, match="PRAM collects the polars LazyFrame"):
        out = PRAM(columns=["region"], pd=0.8, random_state=1).fit_transform(frame.lazy())
    assert isinstance(out, pl.LazyFrame)
    assert out.collect().equals(PRAM(columns=["region"], pd=0.8, random_state=1).fit_transform(frame))


def test_recoding_changes_with_missing_cells_and_partial_mappings_on_dask() -> None:
    import pandas as pd

    frame = pd.DataFrame({"x": [1.0, np.nan, 3.5, 7.0, np.nan, 10.0], "c": ["a", None, "b", "a", "c", "b"]})
    for rules in (
        {"x": {"breaks": [0, 5]}, "c": {"mapping": {"a": "A"}}},
        {"x": {"mapping": {"1.0": "one", "7.0": "one"}}},  # numbers partly mapped to text
    ):
        on_dask = GlobalRecoder(rules=rules).fit(dd.from_pandas(frame, npartitions=2))
        memory = GlobalRecoder(rules=rules).fit(frame)
        assert on_dask.rules_ == memory.rules_
        assert on_dask.changes_ == memory.changes_
