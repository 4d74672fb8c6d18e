"""Exit codes a script can use (issue 32): 0 released, 1 bad input, 2 usage, 3 refused, 70 a bug.

Each is defined once, in :class:`sdckit.cli._exit.ExitCode`, and listed in ``sdckit --help`` and
the README.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest
from typer.testing import CliRunner

from sdckit.cli import app
from sdckit.cli._exit import ExitCode

ROOT = Path(__file__).resolve().parents[2]
runner = CliRunner()


@pytest.fixture
def csv(tmp_path: Path) -> Path:
    """30 rows in 3 groups of 10 on (age, sex); income unique per row."""
    path = tmp_path / "survey.csv"
    pl.DataFrame(
        {"age": [30, 41, 52] * 10, "sex": [1, 2, 1] * 10, "income": [float(i * 1000 + 17) for i in range(30)]}
    ).write_csv(path)
    return path


def _pipeline(tmp_path: Path, csv: Path, qis: str) -> Path:
    path = tmp_path / "p.yaml"
    path.write_text(
        f"input: {csv}\nquasi_identifiers: [{qis}]\n{'' if 'income' in qis else 'keep: [income]'}\nk: 3\nbudget: 0.05\n"
        "output: {data: out/release.csv, report: out/report.html}\n",
        encoding="utf-8",
    )
    return path


def test_the_codes_are_the_documented_ones() -> None:
    assert [int(c) for c in ExitCode] == [0, 1, 2, 3, 70]
    r = runner.invoke(app, ["--help"], env={"COLUMNS": "200"})
    assert r.exit_code == 0
    text = " ".join(r.stdout.split())
    for line in ("0 done (released)", "1 error in the input or parameters", "2 usage error",
                 "3 refused: the release is over its budget", "70 internal error", "SDCKIT_DEBUG=1"):
        assert line in text, line
    readme = " ".join((ROOT / "README.md").read_text(encoding="utf-8").split())
    for code in ("`0`", "`1`", "`2`", "`3`", "`70`", "SDCKIT_DEBUG=1"):
        assert code in readme, code


def test_0_released(tmp_path: Path, csv: Path) -> None:
    r = runner.invoke(app, ["run", str(_pipeline(tmp_path, csv, "age, sex"))])
    assert r.exit_code == ExitCode.OK == 0, r.output
    assert (tmp_path / "out" / "release.csv").exists()


def test_3_refused_over_budget_the_report_written(tmp_path: Path, csv: Path) -> None:
    pipeline = _pipeline(tmp_path, csv, "age, sex, income")  # income unique per row: every group of 1
    r = runner.invoke(app, ["run", str(pipeline)])
    assert r.exit_code == ExitCode.REFUSED == 3, r.output
    assert "Refused" in r.stderr
    assert (tmp_path / "out" / "report.html").exists()
    assert not (tmp_path / "out" / "release.csv").exists()
    r = runner.invoke(app, ["run", str(pipeline), "--json"])
    assert r.exit_code == 3
    assert json.loads(r.stdout)["refused"] is True
    # the same pipeline measured by `sdckit report --config`: refused too, the report written
    r = runner.invoke(app, ["report", "--config", str(pipeline), "-o", str(tmp_path / "r.html")])
    assert r.exit_code == 3, r.output
    assert (tmp_path / "r.html").exists()
    # ... and within budget, 0
    r = runner.invoke(app, ["report", "--config", str(_pipeline(tmp_path, csv, "age, sex")), "-o",
                            str(tmp_path / "r2.html"), "--json"])
    assert r.exit_code == 0, r.output


def test_allow_over_budget_is_0(tmp_path: Path, csv: Path) -> None:
    pipeline = _pipeline(tmp_path, csv, "age, sex, income")
    pipeline.write_text(pipeline.read_text(encoding="utf-8") + "allow_over_budget: true\n", encoding="utf-8")
    r = runner.invoke(app, ["run", str(pipeline)])
    assert r.exit_code == 0, r.output


def test_1_bad_input_and_2_usage(tmp_path: Path, csv: Path) -> None:
    r = runner.invoke(app, ["risk", str(csv), "--columns", "agee"])
    assert r.exit_code == ExitCode.INPUT_ERROR == 1
    assert "Did you mean 'age'" in r.stderr
    r = runner.invoke(app, ["risk", str(csv), "--columns", "age", "--no-such-option"])
    assert r.exit_code == ExitCode.USAGE_ERROR == 2


BUG = (
    "import sys, sdckit.cli as cli\n"
    "def load_command(name):\n"
    "    raise RuntimeError('a bug with microdata 12345 in its message')\n"
    "cli.load_command = load_command\n"
    "sys.argv[0] = 'sdckit'\n"
    "cli.main()\n"
)


@pytest.mark.parametrize("debug", ["", "1"])
def test_70_internal_error_no_traceback_unless_asked(debug: str, csv: Path) -> None:
    env = {**os.environ, "SDCKIT_DEBUG": debug}
    r = subprocess.run([sys.executable, "-c", BUG, "describe", str(csv)], capture_output=True, text=True, env=env,
                       check=False, timeout=120)
    assert r.returncode == ExitCode.INTERNAL_ERROR == 70
    if debug:
        assert "Traceback" in r.stderr
        assert "RuntimeError" in r.stderr
    else:
        assert "Traceback" not in r.stderr
        assert "internal error (RuntimeError)" in r.stderr
        assert "SDCKIT_DEBUG=1" in r.stderr
        assert "12345" not in r.stderr  # the message of a bug can hold microdata: not shown
