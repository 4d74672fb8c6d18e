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
    coder = TopBottomCoder(**params).fit(ddf)
    out = coder.transform(ddf)
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
