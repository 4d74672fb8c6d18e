"""``sdckit microaggregate`` as a user meets it: output file, JSON keys, exit codes 1 and 2."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from typer.testing import CliRunner

from sdckit.cli import app

runner = CliRunner()
CENSUS = str(Path(__file__).resolve().parents[1] / "data" / "casc_census.csv.gz")
COLS = "AFNLWGT,AGI,FEDTAX,PTOTVAL,PEARNVAL,POTHVAL"  # PTOTVAL = PEARNVAL + POTHVAL: masked together


def test_json_and_output_file(tmp_path: Path) -> None:
    out = tmp_path / "masked.parquet"
    r = runner.invoke(
        app, ["microaggregate", CENSUS, "--columns", COLS, "--k", "3", "--out", str(out), "--json"]
    )
    assert r.exit_code == 0, r.output
    payload = json.loads(r.stdout)
    assert payload["n_rows"] == 1080
    assert payload["positivity"] is None
    assert set(payload["utility"]) >= {
        "information_loss_pct",
        "ecdf_max",
        "cluster",
        "propensity",
        "sdid_risk",
    }
    release = pl.read_parquet(out)
    assert release.columns == pl.read_csv(CENSUS).columns
    assert release.group_by(COLS.split(",")).len()["len"].min() >= 3
    assert payload["information_loss_pct"] == pytest.approx(
        payload["utility"]["information_loss_pct"], rel=1e-12
    )


def test_restore_and_positivity(tmp_path: Path) -> None:
    out = tmp_path / "restored.csv"
    r = runner.invoke(
        app, ["microaggregate", CENSUS, "-c", COLS, "--k", "5", "--restore-moments", "-o", str(out)]
    )
    assert r.exit_code == 0, r.output
    assert "utility and risk" in r.stdout
    x = pl.read_csv(CENSUS).select(COLS.split(",")).to_numpy().astype(float)
    y = pl.read_csv(out).select(COLS.split(",")).to_numpy()
    assert (
        np.abs(np.cov(y, rowvar=False) - np.cov(x, rowvar=False)).max()
        / np.abs(np.cov(x, rowvar=False)).max()
        < 1e-9
    )
    r = runner.invoke(app, ["microaggregate", CENSUS, "-c", COLS, "--positivity", "global", "--json"])
    assert r.exit_code == 0, r.output
    stats = json.loads(r.stdout)["positivity_stats"]
    assert stats["constrained"] == COLS.split(",")
    assert stats["n_records"] == 1080


def test_user_errors_exit_1_without_traceback() -> None:
    r = runner.invoke(app, ["microaggregate", CENSUS, "--columns", "PTOTVA"])
    assert r.exit_code == 1
    assert "Did you mean 'PTOTVAL'" in r.stderr
    assert "Traceback" not in r.output
    r = runner.invoke(app, ["microaggregate", CENSUS, "--k", "5000"])
    assert r.exit_code == 1
    assert "5000" in r.stderr
    r = runner.invoke(app, ["microaggregate", CENSUS, "-c", COLS, "--out", "x.xlsx"])
    assert r.exit_code == 1
    assert "end the name in one of .parquet" in r.stderr


def test_bad_options_exit_2() -> None:
    r = runner.invoke(app, ["microaggregate", CENSUS, "--positivity", "always"])
    assert r.exit_code == 2
    assert "same, subset or global" in r.output
    r = runner.invoke(app, ["microaggregate", CENSUS, "--method", "kmeans"])
    assert r.exit_code == 2
