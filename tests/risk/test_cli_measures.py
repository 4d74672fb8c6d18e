"""``sdckit risk --weights --sensitive --suda`` as a user meets them."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import polars as pl
import pytest
from typer.testing import CliRunner

from sdckit.cli import app
from sdckit.risk import individual_risk, l_diversity, suda2

TESTDATA = Path(__file__).resolve().parents[1] / "data" / "sdcmicro_testdata.csv"
KEYS = "urbrur,roof,walls,water,electcon,relat,sex"


@pytest.fixture(scope="module")
def csv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("measures") / "testdata.csv"
    shutil.copy(TESTDATA, path)
    return path


def test_json_has_every_measure(csv: Path) -> None:
    args = ["risk", str(csv), "-c", KEYS, "--weights", "sampling_weight", "--sensitive", "income,hhcivil"]
    r = CliRunner().invoke(app, [*args, "--suda", "--k", "3", "--json"])
    assert r.exit_code == 0, r.output
    out = json.loads(r.stdout)
    df = pl.read_csv(TESTDATA)
    keys = KEYS.split(",")
    ir = individual_risk(df, keys, weights="sampling_weight")
    assert out["individual_risk"]["expected_reidentifications"] == pytest.approx(
        ir.expected_reidentifications
    )
    assert out["expected_reidentifications"] == pytest.approx(10.778298918734835, abs=1e-6)  # sdcMicro 5.8.1
    assert out["weights"] == "sampling_weight"
    assert out["exposure_population"] == 0.0  # every weight is 100: no F_k below 3
    ld = l_diversity(df, keys, ["income", "hhcivil"])
    assert out["l_diversity"]["not_2_diverse"] == pytest.approx(ld.not_diverse(2))
    assert [c["column"] for c in out["l_diversity"]["per_column"]] == ["income", "hhcivil"]
    assert out["suda2"]["n_special"] == suda2(df, keys).n_special == 157


def test_table_and_report(csv: Path, tmp_path: Path) -> None:
    html = tmp_path / "risk.html"
    r = CliRunner().invoke(
        app,
        [
            "risk",
            str(csv),
            "-c",
            KEYS,
            "--weights",
            "sampling_weight",
            "--sensitive",
            "income",
            "--suda",
            "--report",
            str(html),
        ],
    )
    assert r.exit_code == 0, r.output
    assert "expected re-identifications" in r.stdout
    assert "SUDA2" in r.stdout
    page = html.read_text()
    for text in ("Per-record risk histogram", "l-diversity within", "DIS-SUDA"):
        assert text in page
    data = json.loads(html.with_suffix(".json").read_text())["sections"]["risk"]["data"]
    assert data["individual_risk"]["weights"] == "sampling_weight"
    assert "l_diversity" in data
    assert "suda2" in data


def test_user_errors_are_one_line(csv: Path) -> None:
    runner = CliRunner()
    r = runner.invoke(app, ["risk", str(csv), "-c", KEYS, "--weights", "sampling_weigth"])
    assert r.exit_code == 1
    assert "Did you mean 'sampling_weight'" in r.stderr
    assert "Traceback" not in r.output
    r = runner.invoke(app, ["risk", str(csv), "-c", KEYS, "--sensitive", "sex"])
    assert r.exit_code == 1
    assert "both a quasi-identifier and sensitive" in r.stderr
    r = runner.invoke(app, ["risk", str(csv), "-c", KEYS, "--weights", "income"])
    assert r.exit_code == 0  # income is numeric and positive: legal, if odd
