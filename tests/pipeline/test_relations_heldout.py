"""The linear-relation check refuses only real leaks (issue 36): EIA (every revenue and sales column
masked together), francdat (8 rows: any 8 columns are dependent; coded keys are categories, not
regressors) and census (PTOTVAL recoded into 8 bands, the rest microaggregated) are not refused,
while masking PTOTVAL alone beside PEARNVAL and POTHVAL still is, and banding PTOTVAL while releasing
its two terms as they are is a leak too (adding them gives it back exactly).

Data: sdcMicro 5.8.1 package data (tests/data/README.md).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pytest

from sdckit.errors import ConfigError
from sdckit.microagg import find_linear_relations
from sdckit.microagg._relations import MIN_ROWS_PER_COLUMN
from sdckit.pipeline import parse_config, run_pipeline

DATA = Path(__file__).resolve().parents[1] / "data"
CENSUS = DATA / "casc_census.csv.gz"
REVENUE = ["RESREVENUE", "RESSALES", "COMREVENUE", "COMSALES", "INDREVENUE", "INDSALES", "OTHREVENUE", "OTHRSALES",
           "TOTREVENUE", "TOTSALES"]


def _run(config: dict[str, Any]) -> Any:
    return run_pipeline(parse_config({"allow_over_budget": True, "output": {"report": None}, **config}))


def test_eia_masked_together_is_not_refused() -> None:
    result = _run({
        "input": str(DATA / "casc_eia.csv.gz"), "quasi_identifiers": ["STATE"], "identifiers": ["UTILNAME"],
        "numeric": REVENUE, "keep": ["UTILITYID", "YEAR", "MONTH"], "k": 3,
        "steps": [{"microaggregate": {"k": 3}}],
    })
    # the identities among the revenue (and sales) columns are found, and are among masked columns only
    assert result.relations
    assert all(set(r.columns) <= set(REVENUE) | {"UTILITYID", "MONTH"} for r in result.relations)


def test_francdat_is_not_refused_and_its_keys_are_not_regressors() -> None:
    result = _run({
        "input": str(DATA / "sdcmicro_francdat.csv"), "quasi_identifiers": ["Key1", "Key2", "Key3", "Key4"],
        "categorical": ["Key1", "Key2", "Key3", "Key4"], "numeric": ["Num1", "Num2", "Num3"], "weight": "w", "k": 2,
        "steps": [{"microaggregate": {"k": 2}}],
    })
    assert not any({"Key1", "Key2", "Key3", "Key4"} & set(r.columns) for r in result.relations)
    # 8 rows of 8 columns: any 8 columns are dependent, so no relation is looked for
    x = pl.read_csv(DATA / "sdcmicro_francdat.csv").to_numpy().astype(float)
    assert x.shape[0] < MIN_ROWS_PER_COLUMN * x.shape[1]
    assert np.linalg.matrix_rank(x - x.mean(axis=0)) < x.shape[1]  # the independent check: dependent indeed
    assert find_linear_relations(x, [f"c{j}" for j in range(8)]) == []


def test_census_with_a_banded_column_is_not_refused() -> None:
    result = _run({
        "input": str(CENSUS), "quasi_identifiers": ["PTOTVAL"], "weight": "AFNLWGT", "k": 3,
        "numeric": ["AGI", "EMCONTRB", "FEDTAX", "STATETAX", "TAXINC", "POTHVAL", "INTVAL", "PEARNVAL", "FICA",
                    "WSALVAL", "ERNVAL"],
        "steps": [{"recode": {"rules": {"PTOTVAL": {"bins": 8, "method": "quantile"}}}}, {"microaggregate": {"k": 3}}],
    })
    assert result.protected["PTOTVAL"].n_unique() <= 8


def test_real_leaks_still_refused() -> None:
    census = pl.read_csv(CENSUS)
    # the independent check of the leak: PTOTVAL is exactly the sum of the other two in every row
    assert (census["PEARNVAL"] + census["POTHVAL"] == census["PTOTVAL"]).all()
    base = {"input": str(CENSUS), "quasi_identifiers": ["AGI"], "k": 3}
    with pytest.raises(ConfigError, match=r"PTOTVAL = PEARNVAL \+ POTHVAL: masking PTOTVAL alone is undone by adding "
                                          r"PEARNVAL and POTHVAL.*within 1 % of PTOTVAL's sd"):
        _run({**base, "numeric": ["AGI", "FEDTAX", "PTOTVAL"], "keep": ["PEARNVAL", "POTHVAL"],
              "steps": [{"microaggregate": {"k": 3}}]})
    # banding PTOTVAL is undone the same way when its two terms go out as they are
    with pytest.raises(ConfigError, match=r"PTOTVAL = PEARNVAL \+ POTHVAL: masking PTOTVAL alone"):
        _run({"input": str(CENSUS), "k": 3, "keep": ["PEARNVAL", "POTHVAL"], "quasi_identifiers": ["PTOTVAL"],
              "steps": [{"recode": {"rules": {"PTOTVAL": {"bins": 8, "method": "quantile"}}}}]})


@pytest.mark.parametrize("width", [6, 130])  # the SVD and the Gram-matrix paths
def test_leak_rule_on_simulated_relations(width: int) -> None:
    """Masked alone beside its raw terms: refused; masked together with them: passes; a relation among
    raw columns only: passes (independent check: the relation holds by construction)."""
    from sdckit.microagg import LinearRelationError, check_linear_relations

    rng = np.random.default_rng(7)
    x = rng.normal(size=(600, width))
    x[:, -1] = 2 * x[:, 0] - x[:, 3]  # t = 2 c0 - c3 in every row
    names = [f"c{j}" for j in range(width - 1)] + ["t"]
    with pytest.raises(LinearRelationError, match=r"^t = 2 \* c0 - c3: masking t alone is undone by combining c0 and c3"):
        check_linear_relations(x, names, masked=["t"], released=names)
    check_linear_relations(x, names, masked=["t", "c0", "c3"], released=names)  # masked together
    check_linear_relations(x, names, masked=["c1"], released=names)  # the relation is among raw columns only
