"""``sdckit risk`` and ``sdckit plan`` as a user meets them."""

from __future__ import annotations

import json
import re
from pathlib import Path

import polars as pl
import pytest
from typer.testing import CliRunner

from sdckit.cli import app
from sdckit.datasets import load_adult
from sdckit.risk import exposure_curve

COLS = "workclass,marital-status,race,sex"


@pytest.fixture(scope="module")
def adult_csv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("risk") / "adult.csv"
    load_adult().write_csv(path)
    return path


def test_risk_json(adult_csv: Path) -> None:
    r = CliRunner().invoke(app, ["risk", str(adult_csv), "--columns", COLS, "--k", "5", "--json"])
    assert r.exit_code == 0, r.output
    out = json.loads(r.stdout)
    curve = exposure_curve(load_adult(), COLS.split(","))  # the library on the same rows
    assert out["exposure"] == pytest.approx(curve.not_k_anonymous(5), abs=1e-15)
    assert out["k_anonymity"] == 1
    assert out["n_unique"] == curve.n_unique
    assert set(out["bounds"]) == {"lower", "support", "theorem2", "theorem3", "best"}
    assert out["bounds"]["lower"] <= out["exposure"] <= out["bounds"]["best"]
    assert [c["support"] for c in out["per_column"]] == [9, 7, 5, 2]  # '?' counts as a workclass value


def test_risk_table_plot_and_report(adult_csv: Path, tmp_path: Path) -> None:
    svg, html = tmp_path / "curve.svg", tmp_path / "risk.html"
    r = CliRunner().invoke(
        app, ["risk", str(adult_csv), "-c", COLS, "--t", "0.001", "--plot", str(svg), "--report", str(html)]
    )
    assert r.exit_code == 0, r.output
    assert "true exposure" in r.stdout
    assert svg.read_text().lstrip().startswith("<?xml")
    page = html.read_text()
    assert "Re-identification risk" in page
    assert "Release plan" in page
    sidecar = json.loads(html.with_suffix(".json").read_text())
    assert "risk" in sidecar["sections"]


def test_risk_user_errors(adult_csv: Path) -> None:
    runner = CliRunner()
    r = runner.invoke(app, ["risk", str(adult_csv), "--columns", "martial-status"])
    assert r.exit_code == 1
    assert "Did you mean 'marital-status'" in r.stderr
    r = runner.invoke(app, ["risk", str(adult_csv), "--columns", "sex", "--k", "0"])
    assert r.exit_code == 2  # a bad value of an option: k >= 2 is checked by the command line
    assert "--k" in r.stderr
    r = runner.invoke(app, ["risk", str(adult_csv), "--columns", "sex", "--t", "2"])
    assert r.exit_code == 1
    assert "outside [0, 1]" in r.stderr
    r = runner.invoke(app, ["risk", str(adult_csv), "--columns", "sex", "--k", "2", "--t", "0.1"])
    assert r.exit_code == 2
    r = runner.invoke(app, ["risk", "nowhere.csv", "--columns", "sex"])
    assert r.exit_code == 1
    assert "no file at" in r.stderr


def test_plan_from_data_and_marginals(adult_csv: Path, tmp_path: Path) -> None:
    runner = CliRunner()
    cols = "age,workclass,education,marital-status,occupation,relationship,race,sex,native-country"
    r = runner.invoke(app, ["plan", str(adult_csv), "-c", cols, "--k", "5", "--budget", "0.05", "--json"])
    assert r.exit_code == 0, r.output
    plan = json.loads(r.stdout)
    assert plan["bound"] <= 0.05
    assert set(plan["columns"]) | set(plan["excluded"]) == set(cols.split(","))
    # the same plan from the counts alone (what the curator receives)
    adult = load_adult()
    counts = {c: dict(adult[c].cast(pl.String).value_counts().iter_rows()) for c in cols.split(",")}
    path = tmp_path / "counts.json"
    path.write_text(json.dumps(counts))
    r2 = runner.invoke(app, ["plan", "--from-marginals", str(path), "--k", "5", "--budget", "0.05", "--json"])
    assert r2.exit_code == 0, r2.output
    assert json.loads(r2.stdout)["columns"] == plan["columns"]
    html = tmp_path / "plan.html"
    r3 = runner.invoke(app, ["plan", "--from-marginals", str(path), "--report", str(html), "--weights", "age=3"])
    assert r3.exit_code == 0, r3.output
    assert "Release:" in r3.stdout
    assert "Release plan" in html.read_text()


def test_plan_user_errors(adult_csv: Path, tmp_path: Path) -> None:
    runner = CliRunner()
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    r = runner.invoke(app, ["plan", "--from-marginals", str(bad)])
    assert r.exit_code == 1
    assert "cannot read" in r.stderr
    uneven = tmp_path / "uneven.json"
    uneven.write_text(json.dumps({"a": {"x": 3, "y": 2}, "b": {"x": 4}}))
    r = runner.invoke(app, ["plan", "--from-marginals", str(uneven)])
    assert r.exit_code == 1
    assert "every column must count every user once" in r.stderr
    r = runner.invoke(app, ["plan", str(adult_csv), "-c", "sex", "--method", "lower"])
    assert r.exit_code == 2  # a choice the option does not offer is a usage error, like --missing
    assert "guarantees" in r.stderr
    r = runner.invoke(app, ["plan", str(adult_csv), "-c", "sex", "--method", "theorem4"])
    assert r.exit_code == 2
    r = runner.invoke(app, ["plan"])
    assert r.exit_code == 2
    r = runner.invoke(app, ["plan", str(adult_csv), "-c", "sex", "--weights", "sex"])
    assert r.exit_code == 2


def test_risk_missing_drop(tmp_path: Path) -> None:
    path = tmp_path / "m.csv"
    pl.DataFrame({"a": ["x", "x", None, "y", "y"], "b": [1, 1, 1, 2, 2]}).write_csv(path)
    r = CliRunner().invoke(app, ["risk", str(path), "-c", "a,b", "--k", "2", "--missing", "drop", "--json"])
    assert r.exit_code == 0, r.output
    out = json.loads(r.stdout)
    assert (out["n"], out["n_dropped"], out["exposure"]) == (4, 1, 0.0)  # 2 + 2 rows left, none below 2
    r = CliRunner().invoke(app, ["risk", str(path), "-c", "a,b", "--k", "2", "--json"])
    assert json.loads(r.stdout)["exposure"] == 0.2  # the missing value is its own group of 1 of 5
    r = CliRunner().invoke(app, ["risk", str(path), "-c", "a", "--missing", "maybe"])
    assert r.exit_code == 2


def test_plan_weights_duplicates_and_empty_parts(tmp_path: Path) -> None:
    path = tmp_path / "p.csv"
    pl.DataFrame({"age": [30, 30, 41, 41, 52, 52], "sex": ["F", "F", "M", "M", "F", "F"]}).write_csv(path)
    runner = CliRunner()
    # Before: "age=1,age=3" silently kept the last weight.
    r = runner.invoke(app, ["plan", str(path), "-k", "2", "--weights", "age=1,age=3"])
    assert r.exit_code == 2
    assert "weighted twice" in r.stderr
    r = runner.invoke(app, ["plan", str(path), "-k", "2", "--weights", "age=2,,sex=1", "--budget", "1", "--json"])
    assert r.exit_code == 0, r.output
    assert json.loads(r.stdout)["weight"] == 3.0


def test_plan_statistical_setting(adult_csv: Path, tmp_path: Path) -> None:
    from sdckit.plan import plan_release
    from sdckit.risk import Marginals

    runner = CliRunner()
    args = ["plan", str(adult_csv), "-c", COLS, "--k", "5", "--budget", "0.2"]
    r = runner.invoke(app, [*args, "--setting", "statistical", "--n-release", "10000", "--delta", "0.1", "--json"])
    assert r.exit_code == 0, r.output
    out = json.loads(r.stdout)
    assert (out["setting"], out["n_release"], out["delta"]) == ("statistical", 10000, 0.1)
    # the library on the same counts
    lib = plan_release(
        Marginals.from_data(load_adult(), COLS.split(",")),
        k=5,
        budget=0.2,
        setting="statistical",
        n_release=10000,
        delta=0.1,
    )
    assert out["columns"] == list(lib.columns)
    assert out["bound"] == pytest.approx(lib.bound, rel=1e-12)
    assert out["bound"] <= 0.2
    # the fixed setting says so too, with no delta
    r = runner.invoke(app, [*args, "--json"])
    assert r.exit_code == 0, r.output
    assert (json.loads(r.stdout)["setting"], json.loads(r.stdout)["delta"]) == ("fixed", None)
    # the table names the setting, and the report is written
    html = tmp_path / "plan.html"
    r = runner.invoke(app, [*args, "--setting", "statistical", "--n-release", "10000", "--report", str(html)])
    assert r.exit_code == 0, r.output
    assert "fresh release of 10,000 users" in r.stdout
    sidecar = json.loads(next(tmp_path.glob("plan*.json")).read_text())
    assert "Statistical setting" in json.dumps(sidecar)


def _flat(text: str) -> str:
    """stderr without rich's box drawing and line wrapping."""
    return re.sub(r"[\s\u2500-\u257f]+", " ", text)


def test_plan_statistical_setting_errors(adult_csv: Path) -> None:
    runner = CliRunner()
    args = ["plan", str(adult_csv), "-c", "sex", "--k", "5"]
    r = runner.invoke(app, [*args, "--setting", "statistical"])
    assert r.exit_code == 2
    assert "give its size with --n-release N" in _flat(r.stderr)
    r = runner.invoke(app, [*args, "--setting", "population"])
    assert r.exit_code == 2
    assert "use fixed" in _flat(r.stderr)
    r = runner.invoke(app, [*args, "--n-release", "100"])  # fixed setting: would be ignored
    assert r.exit_code == 2
    assert "are for --setting statistical" in _flat(r.stderr)
    r = runner.invoke(app, [*args, "--delta", "0.1"])
    assert r.exit_code == 2
    r = runner.invoke(app, [*args, "--setting", "statistical", "--n-release", "100", "--delta", "1.5"])
    assert r.exit_code == 1
    assert "delta=1.5" in r.stderr
    r = runner.invoke(app, [*args, "--setting", "statistical", "--n-release", "0"])
    assert r.exit_code == 1
    assert "n_release=0" in r.stderr
    r = runner.invoke(app, [*args, "--setting", "statistical", "--n-release", "3"])
    assert r.exit_code == 1
    assert "released users" in r.stderr


def test_plan_with_hierarchies_in_the_statistical_setting(tmp_path: Path) -> None:
    from sdckit.datasets import load_adult

    src = tmp_path / "adult.csv"
    load_adult().head(8000).write_csv(src)
    base = ["plan", str(src), "-c", "age,workclass,race,sex", "--k", "5", "--budget", "0.2",
            "--setting", "statistical", "--n-release", "20000", "--hierarchy", "age=adult:age"]
    r = CliRunner().invoke(app, [*base, "--json"])
    assert r.exit_code == 0, r.output
    plan = json.loads(r.stdout)
    assert plan["search"] == "lattice"
    assert plan["setting"] == "statistical"
    assert plan["bound"] <= 0.2
    r = CliRunner().invoke(app, [*base, "--out", str(tmp_path / "x.csv")])
    assert r.exit_code == 2
    assert "fresh sample" in r.output


def test_plan_with_pairs_releases_at_least_as_much_and_meets_the_budget(tmp_path: Path) -> None:
    adult = load_adult()
    src = tmp_path / "adult.csv"
    adult.write_csv(src)
    qis = "age,workclass,education,marital-status,occupation,race,sex,native-country"
    base = ["plan", str(src), "-c", qis, "--k", "5", "--budget", "0.05", "--json"]
    runs = {}
    for extra in ([], ["--pairs", "auto"], ["--pairs", "auto", "--triples"], ["--pairs", "all"]):
        r = CliRunner().invoke(app, [*base, *extra])
        assert r.exit_code == 0, r.output
        runs[" ".join(extra)] = json.loads(r.stdout)
    plain = runs[""]
    assert "pairs" not in plain
    for name, plan in runs.items():
        assert len(plan["columns"]) >= len(plain["columns"]), name
        assert plan["bound"] <= 0.05
        sizes = adult.group_by(plan["columns"]).len()
        assert sizes.filter(pl.col("len") < 5)["len"].sum() / adult.height <= plan["bound"]  # measured
    auto = runs["--pairs auto"]
    assert len(auto["columns"]) > len(plain["columns"])  # workclass joins (docs/risk.md)
    assert auto["pairs"]["mode"] == "auto"
    assert 0 < auto["pairs"]["query_bound"] <= 0.05
    assert runs["--pairs auto --triples"]["pairs"]["query_bound"] <= 0.05
    assert len(runs["--pairs all"]["pairs"]["blocks"]) == 28
    human = CliRunner().invoke(app, [*base[:-1], "--pairs", "auto"])
    assert human.exit_code == 0, human.output
    assert "what a curator learns from them is bounded by" in human.output
    for bad in (["--pairs", "some"], ["--triples"], ["--pairs", "all", "--pairs-budget", "0.1"]):
        r = CliRunner().invoke(app, [*base, *bad])
        assert r.exit_code == 2, bad
