"""The attacks in the release measure (issue 34): CASC microaggregated at k = 3 (MDAV) is k-anonymous
on every column, yet singling out by inequality queries works on it: the console warns, and a budget
on the attacks refuses the release (exit 3, no data file), with the figures in the report's sidecar."""

from __future__ import annotations

import gzip
import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from sdckit.cli import app
from sdckit.pipeline import load_config

DATA = Path(__file__).resolve().parents[1] / "data"
runner = CliRunner()
COLUMNS = ["FIXED.ASSETS", "CURRENT.ASSETS", "TREASURY", "UNCOMMITTED.FUNDS", "PAID.UP.CAPITAL", "SHORT.TERM.DEBT",
           "SALES", "LABOR.COSTS", "DEPRECIATION", "OPERATING.PROFIT", "FINANCIAL.OUTCOME", "GROSS.PROFIT", "NET.PROFIT"]


def _pipeline(tmp_path: Path, extra: dict[str, object]) -> Path:
    data = tmp_path / "casc.csv"
    with gzip.open(DATA / "casc_tarragona.csv.gz", "rb") as src, data.open("wb") as dst:
        shutil.copyfileobj(src, dst)
    raw = {
        "input": str(data), "quasi_identifiers": COLUMNS, "numeric": COLUMNS, "k": 3,
        "steps": [{"microaggregate": {"method": "mdav", "k": 3}}],
        "reproducible": True, "seed": 3,
        "output": {"data": str(tmp_path / "out" / "release.parquet"), "report": str(tmp_path / "out" / "report.html")},
        **extra,
    }
    path = tmp_path / "casc.json"
    path.write_text(json.dumps(raw))
    return path


def test_casc_mdav_k3_release_is_warned_about_in_the_console(tmp_path: Path) -> None:
    pipeline = _pipeline(tmp_path, {})
    r = runner.invoke(app, ["run", str(pipeline)])
    assert r.exit_code == 0, r.output
    text = " ".join(r.stdout.split())
    assert "ATTACKS SHOW RISK" in text
    assert "WARNING: the attacks show risk (singling out" in text
    assert (tmp_path / "out" / "release.parquet").exists()
    sidecar = json.loads((tmp_path / "out" / "report.json").read_text())
    attacks = sidecar["sections"]["release_check"]["data"]["release"]["attacks"]
    assert attacks["shows_risk"] == ["singling_out"]
    assert attacks["over_budget"] == []
    assert attacks["singling_out"]["risk"] > 0.05
    assert attacks["singling_out"]["risk_low"] <= attacks["singling_out"]["risk"] <= attacks["singling_out"]["risk_high"]
    page = (tmp_path / "out" / "report.html").read_text()
    assert "success on the control" in page
    assert 'class="alert"' in page


def test_a_budget_on_the_attacks_refuses_the_release(tmp_path: Path) -> None:
    pipeline = _pipeline(tmp_path, {"attacks": {"budget": {"singling_out": 0.05, "linkability": 0.05}, "n_attacks": 200}})
    cfg = load_config(pipeline)
    assert cfg.attacks.budgets() == {"singling_out": 0.05, "linkability": 0.05}
    r = runner.invoke(app, ["run", str(pipeline)])
    assert r.exit_code == 3, r.output  # ExitCode.REFUSED
    assert "Traceback" not in r.output
    assert "NOT SAFE TO RELEASE" in r.stdout
    assert "attacks over their budget: singling_out" in " ".join(r.stderr.split())
    assert not (tmp_path / "out" / "release.parquet").exists()
    sidecar = json.loads((tmp_path / "out" / "report.json").read_text())
    check = sidecar["sections"]["release_check"]["data"]
    assert check["refused"] is True
    assert check["release"]["attacks"]["over_budget"] == ["singling_out"]
    assert check["release"]["attacks"]["n_attacks"] == 200


def test_attack_budget_is_validated_and_attacks_can_be_switched_off(tmp_path: Path) -> None:
    r = runner.invoke(app, ["run", str(_pipeline(tmp_path, {"attacks": {"budget": {"singling_out": 1.5}}}))])
    assert r.exit_code != 0
    assert "Traceback" not in r.output
    r = runner.invoke(app, ["run", str(_pipeline(tmp_path, {"attacks": {"budget": {"singlingout": 0.1}}}))])
    assert r.exit_code != 0
    assert "singling_out" in r.output
    r = runner.invoke(app, ["run", str(_pipeline(tmp_path, {"attacks": {"run": False}}))])
    assert r.exit_code == 0
    sidecar = json.loads((tmp_path / "out" / "report.json").read_text())
    assert sidecar["sections"]["release_check"]["data"]["release"]["attacks"] is None


@pytest.mark.parametrize("bad", [{"n_attacks": 5}, {"n_control": "many"}])
def test_attack_options_are_checked(tmp_path: Path, bad: dict[str, object]) -> None:
    r = runner.invoke(app, ["run", str(_pipeline(tmp_path, {"attacks": bad}))])
    assert r.exit_code == 2 or r.exit_code == 1
    assert "attacks" in r.output
    assert "Traceback" not in r.output
