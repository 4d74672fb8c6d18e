"""``sdckit datasets``: the bundled data written to a file equals what load_adult returns."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
from typer.testing import CliRunner

from sdckit.cli import app
from sdckit.datasets import load_adult

runner = CliRunner()


def test_export_adult_round_trips(tmp_path: Path) -> None:
    out = tmp_path / "adult.csv"
    r = runner.invoke(app, ["datasets", "export", "adult", str(out), "--json"])
    assert r.exit_code == 0, r.output
    assert json.loads(r.stdout)["n_rows"] == 32561
    back = pl.read_csv(out)
    assert back.equals(load_adult())  # '?' stays a value, numbers stay integers
    r = runner.invoke(app, ["datasets", "export", "adult", str(out), "--json"])
    assert r.exit_code == 0
    assert json.loads(r.stdout)["written"] is False
    r = runner.invoke(app, ["datasets", "export", "census", str(out)])
    assert r.exit_code == 2
    assert "adult" in r.output
    r = runner.invoke(app, ["datasets", "list", "--json"])
    assert set(json.loads(r.stdout)) == {"adult", "adult-test"}
