"""Output files and warnings as a user meets them: checked before the work, one line, no traceback."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest
from typer.testing import CliRunner

from sdckit.cli import app

runner = CliRunner()


@pytest.fixture
def csv(tmp_path: Path) -> Path:
    path = tmp_path / "people.csv"
    pl.DataFrame(
        {"age": [30, 41, 41, 52, 30, 41], "sex": ["F", "M", "M", "F", "F", "M"],
         "fnlwgt": [101, 101, 103, 104, 105, 106]}
    ).write_csv(path)
    return path


def _one_line(text: str) -> str:
    lines = [ln for ln in text.splitlines() if ln.strip()]
    assert len(lines) == 1, text
    assert "Traceback" not in text
    return lines[0]


@pytest.mark.parametrize(
    "args",
    [
        ["risk", "{csv}", "--columns", "age,sex", "--plot", "{tmp}/curve.xyz"],
        ["spectral", "curve", "--c", "0.5", "--r", "0.1", "--s", "5", "--plot", "{tmp}/curve.txt"],
        ["noise", "{csv}", "--columns", "age", "--t", "1", "--out", "{tmp}/noisy.xlsx"],
    ],
)
def test_unsupported_output_ending_is_a_usage_error(csv: Path, tmp_path: Path, args: list[str]) -> None:
    r = runner.invoke(app, [a.format(csv=csv, tmp=tmp_path) for a in args])
    assert r.exit_code == 2, r.output
    assert "Traceback" not in r.output


@pytest.mark.parametrize(
    "args",
    [
        ["risk", "{csv}", "--columns", "age,sex", "--plot", "{tmp}/nope/curve.svg"],
        ["spectral", "curve", "--c", "0.5", "--r", "0.1", "--s", "5", "--plot", "{tmp}/nope/curve.png"],
        ["noise", "{csv}", "--columns", "age", "--t", "1", "--out", "{tmp}/nope/noisy.csv"],
    ],
)
def test_output_in_a_missing_folder_is_one_line_exit_1(csv: Path, tmp_path: Path, args: list[str]) -> None:
    r = runner.invoke(app, [a.format(csv=csv, tmp=tmp_path) for a in args])
    assert r.exit_code == 1, r.output
    line = _one_line(r.stderr)
    assert line.startswith("Error: cannot write")
    assert "does not exist. Create it first." in line
    assert r.stdout == ""  # checked before any work: nothing measured, nothing printed


def test_noise_never_overwrites_its_input(csv: Path) -> None:
    before = csv.read_bytes()
    r = runner.invoke(app, ["noise", str(csv), "--columns", "age", "--t", "1", "--out", str(csv)])
    assert r.exit_code == 1, r.output
    assert "is the input file" in _one_line(r.stderr)
    assert csv.read_bytes() == before


def test_risk_plot_is_written(csv: Path, tmp_path: Path) -> None:
    r = runner.invoke(app, ["risk", str(csv), "--columns", "age,sex", "-k", "2", "--plot", str(tmp_path / "c.svg")])
    assert r.exit_code == 0, r.output
    assert (tmp_path / "c.svg").read_text().lstrip().startswith("<?xml")


def test_warning_is_one_yellow_line_not_a_python_warning(csv: Path) -> None:
    r = runner.invoke(app, ["risk", str(csv), "--columns", "age,fnlwgt", "-k", "2", "--json"])
    assert r.exit_code == 0, r.output
    line = _one_line(r.stderr)
    assert line.startswith("Warning: column 'fnlwgt' looks like a survey weight")
    assert "SdcWarning" not in r.stderr
    assert ".py:" not in r.stderr


def test_k_larger_than_the_users_names_k_not_t(csv: Path) -> None:
    r = runner.invoke(app, ["risk", str(csv), "--columns", "age,sex", "-k", "100"])
    assert r.exit_code == 1, r.output
    assert _one_line(r.stderr) == (
        "Error: k=100 is larger than the 6 users measured: every user would be in a group smaller than k. "
        "Use k <= 6."
    )


def test_design_missing_option(tmp_path: Path) -> None:
    path = tmp_path / "gaps.csv"
    rng_rows = [(float(i), float((i * 7) % 11)) for i in range(30)]
    pl.DataFrame({"a": [r[0] for r in rng_rows], "b": [None if i == 3 else r[1] for i, r in enumerate(rng_rows)]}).write_csv(path)
    args = ["spectral", "design", "--data", str(path), "--max-leakage-nats", "1", "--json"]
    r = runner.invoke(app, args)
    assert r.exit_code == 1
    error = json.loads(r.stdout)["error"]  # --json: the error is JSON on stdout too
    assert error["type"] == "MissingValuesError"
    assert "column 'b' has 1 missing value(s)" in error["message"]
    assert "--missing drop" in error["fix"]
    r = runner.invoke(app, [*args, "--missing", "drop"])
    assert r.exit_code == 0, r.output
    r = runner.invoke(app, [*args, "--missing", "value"])
    assert r.exit_code == 2
    assert json.loads(r.stdout)["error"]["type"] == "UsageError"


def test_describe_json_with_dates_and_decimals_parses(tmp_path: Path) -> None:
    import datetime as dt
    import json

    path = tmp_path / "typed.parquet"
    pl.DataFrame(
        {"born": [dt.date(1990, 5, 1), None], "amount": pl.Series([1.5, 2.5]).cast(pl.Decimal(10, 2))}
    ).write_parquet(path)
    r = runner.invoke(app, ["describe", str(path), "--json"])
    assert r.exit_code == 0, r.output  # before: TypeError "date is not JSON serializable" (traceback)
    examples = {c["name"]: c["example"] for c in json.loads(r.stdout)["columns"]}
    assert examples == {"born": "1990-05-01", "amount": "1.50"}


@pytest.mark.parametrize("command", [["risk", "{csv}", "--columns", "age,sex", "-k", "2"], ["plan", "{csv}", "-k", "2"]])
def test_json_stays_parseable_with_report(csv: Path, tmp_path: Path, command: list[str]) -> None:
    import json

    args = [a.format(csv=csv) for a in command]
    r = runner.invoke(app, [*args, "--json", "--report", str(tmp_path / "r.html")])
    assert r.exit_code == 0, r.output
    json.loads(r.stdout)  # before: "Report written to ..." was printed on stdout ahead of the JSON
    assert "Report written to" in r.stderr


def test_risk_budget_without_report_is_a_usage_error(csv: Path) -> None:
    # Before: --budget was accepted and silently ignored unless --report was given.
    r = runner.invoke(app, ["risk", str(csv), "--columns", "age,sex", "-k", "2", "--budget", "0.1"])
    assert r.exit_code == 2
    assert "--report" in r.stderr
