"""Linear relations among numeric columns, and the refusal to mask one side of one (issue 14)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import polars as pl
import pytest
from typer.testing import CliRunner

from sdckit.cli import app
from sdckit.microagg import MDAV, LinearRelationError, check_linear_relations, find_linear_relations

CENSUS = str(Path(__file__).resolve().parents[1] / "data" / "casc_census.csv.gz")
runner = CliRunner()


def test_an_exact_relation_is_found_in_original_units() -> None:
    rng = np.random.default_rng(1)
    a, b, c = rng.normal(10, 3, 200), rng.exponential(5, 200), rng.normal(size=200)
    x = np.c_[a, b, c, 2 * a - 0.5 * b + 7]
    (rel,) = find_linear_relations(x, ["a", "b", "c", "t"], prefer=["t"])
    assert rel.exact
    assert rel.target == "t"
    got = dict(zip(rel.others, rel.coefficients, strict=True))
    assert got == {"a": 2.0, "b": -0.5}
    assert rel.intercept == pytest.approx(7.0)
    # the relation reproduces the column (independent check: evaluate it)
    np.testing.assert_allclose(rel.intercept + 2 * a - 0.5 * b, x[:, 3])


def test_near_exact_relations_and_no_relation() -> None:
    rng = np.random.default_rng(2)
    a, b = rng.normal(size=500), rng.normal(size=500)
    near = a + b + rng.normal(0, 0.005, 500)  # residual sd 0.005 / sd(a + b) ~ 0.35 %
    (rel,) = find_linear_relations(np.c_[a, b, near], ["a", "b", "s"], prefer=["s"])
    assert not rel.exact
    assert 0 < rel.residual_sd < 0.01
    assert "approximately" in rel.formula()
    loose = a + b + rng.normal(0, 0.5, 500)
    assert find_linear_relations(np.c_[a, b, loose], ["a", "b", "s"]) == []


def test_census_identity_refused_unless_masked_together() -> None:
    census = pl.read_csv(CENSUS)
    x = census.to_numpy().astype(float)
    with pytest.raises(LinearRelationError) as err:
        check_linear_relations(x, census.columns, masked=["AGI", "FEDTAX", "PTOTVAL"], released=census.columns)
    assert str(err.value).startswith(
        "PTOTVAL = PEARNVAL + POTHVAL: masking PTOTVAL alone is undone by adding PEARNVAL and POTHVAL; "
        "mask them together or withhold one"
    )
    # withholding one side is fine too
    kept = [c for c in census.columns if c != "POTHVAL"]
    check_linear_relations(x, census.columns, masked=["PTOTVAL"], released=kept)
    # the library entry point refuses the same, and the override releases
    with pytest.raises(LinearRelationError):
        MDAV(k=5, columns=["AGI", "FEDTAX", "PTOTVAL"]).fit_transform(census)
    MDAV(k=5, columns=["AGI", "FEDTAX", "PTOTVAL"], allow_linear_relations=True).fit_transform(census)


def test_cli_refuses_the_readme_example_and_masks_together(tmp_path: Path) -> None:
    r = runner.invoke(app, ["microaggregate", CENSUS, "--columns", "AGI,FEDTAX,PTOTVAL", "--k", "5"])
    assert r.exit_code == 1
    assert "PTOTVAL = PEARNVAL + POTHVAL: masking PTOTVAL alone is undone by adding PEARNVAL and POTHVAL" in r.stderr
    assert "Traceback" not in r.output
    out = tmp_path / "masked.csv"
    r = runner.invoke(
        app, ["microaggregate", CENSUS, "--columns", "AGI,FEDTAX,PTOTVAL,PEARNVAL,POTHVAL", "--k", "5", "-o", str(out)]
    )
    assert r.exit_code == 0, r.output
    original, release = pl.read_csv(CENSUS), pl.read_csv(out)
    recovered = (release["PEARNVAL"] + release["POTHVAL"]).to_numpy()
    truth = original["PTOTVAL"].to_numpy()
    assert np.mean(np.isclose(recovered, truth, rtol=0, atol=0.5)) < 0.05  # was 100 % before masking together
    r = runner.invoke(
        app, ["microaggregate", CENSUS, "-c", "AGI,FEDTAX,PTOTVAL", "--allow-linear-relations", "-o", str(out)]
    )
    assert r.exit_code == 0, r.output


def test_many_columns_use_the_gram_matrix_and_find_the_same_relation() -> None:
    from sdckit.microagg._relations import GRAM_FROM

    rng = np.random.default_rng(5)
    x = rng.normal(size=(400, GRAM_FROM + 20))
    x[:, -1] = 2 * x[:, 0] - x[:, 3]  # an exact relation among 120 columns
    names = [f"c{j}" for j in range(x.shape[1])]
    wide = find_linear_relations(x, names, prefer=[names[-1]])
    assert len(wide) == 1
    assert wide[0].target == names[-1]
    # the SVD path (few columns) finds the same relation
    narrow = find_linear_relations(x[:, [0, 3, 5, x.shape[1] - 1]], [names[0], names[3], names[5], names[-1]], prefer=[names[-1]])
    assert [r.formula() for r in narrow] == [r.formula() for r in wide]
