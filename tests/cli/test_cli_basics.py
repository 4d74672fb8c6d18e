"""The CLI as a user meets it: --version, --help, exit codes 0/1/2, --json, no tracebacks."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest
from typer.testing import CliRunner

from sdckit import __version__
from sdckit.cli import app

runner = CliRunner()


@pytest.fixture
def csv(tmp_path: Path) -> Path:
    path = tmp_path / "people.csv"
    pl.DataFrame({"age": [30, 41, 41], "marital-status": ["a", "b", "?"]}).write_csv(path)
    return path


def test_version() -> None:
    r = runner.invoke(app, ["--version"])
    assert r.exit_code == 0
    assert r.stdout.strip() == f"sdckit {__version__}"


@pytest.mark.parametrize("command", [[], ["describe"], ["report"]])
def test_help_everywhere(command: list[str]) -> None:
    r = runner.invoke(app, [*command, "--help"])
    assert r.exit_code == 0
    assert "Usage" in r.stdout


def test_describe_json_has_stable_keys(csv: Path) -> None:
    r = runner.invoke(app, ["describe", str(csv), "--json"])
    assert r.exit_code == 0, r.output
    payload = json.loads(r.stdout)
    assert set(payload) == {"source", "n_rows", "n_columns", "columns"}
    assert payload["n_rows"] == 3
    by_name = {c["name"]: c for c in payload["columns"]}
    assert by_name["marital-status"]["n_unknown_marker"] == 1
    assert by_name["age"]["n_distinct"] == 2


def test_user_error_is_one_line_exit_1(csv: Path) -> None:
    r = runner.invoke(app, ["describe", str(csv), "--columns", "martial-status"])
    assert r.exit_code == 1
    assert "Did you mean 'marital-status'" in r.stderr
    assert "Traceback" not in r.output


def test_missing_file_exit_1(tmp_path: Path) -> None:
    r = runner.invoke(app, ["describe", str(tmp_path / "nope.csv")])
    assert r.exit_code == 1
    assert "no file at" in r.stderr


def test_usage_error_exit_2(csv: Path) -> None:
    assert runner.invoke(app, ["describe", str(csv), "--no-such-option"]).exit_code == 2
    assert runner.invoke(app, ["no-such-command"]).exit_code == 2
    assert runner.invoke(app, ["describe", str(csv), "--columns", " , "]).exit_code == 2


def test_report_writes_page_and_sidecar(tmp_path: Path, csv: Path) -> None:
    out = tmp_path / "r" / "report.html"
    r = runner.invoke(app, ["report", str(csv), "-q", "marital-status", "--k", "2", "-o", str(out), "--seed", "7"])
    assert r.exit_code == 0, r.output
    assert out.exists()
    sidecar = json.loads(out.with_suffix(".json").read_text())
    assert sidecar["seed"] == 7
    assert sidecar["sections"]["data"]["data"]["n_rows"] == 3
