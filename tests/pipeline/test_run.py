"""Running pipelines end to end on a small synthetic survey, and through the CLI."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from typer.testing import CliRunner

from sdckit.cli import app
from sdckit.errors import ConfigError
from sdckit.pipeline import parse_config, run_pipeline
from sdckit.report._main import SECTION_IDS, build_report
from sdckit.risk import Marginals, exposure, joint_exposure_bound


@pytest.fixture(scope="module")
def survey() -> pl.DataFrame:
    rng = np.random.default_rng(20261130)
    n = 400
    income = rng.lognormal(10, 0.6, n)
    return pl.DataFrame(
        {
            "region": rng.choice(["north", "south", "east", "west", "centre"], n, p=[0.4, 0.3, 0.15, 0.1, 0.05]),
            "sex": rng.choice(["F", "M"], n),
            "age_group": rng.choice(["18-29", "30-44", "45-64", "65+"], n),
            "rare": rng.choice([f"v{i}" for i in range(60)], n),
            "income": income,
            "hours": np.clip(rng.normal(38, 8, n), 1, None),
            "spend": income * 0.3 + rng.normal(0, 500, n),
        }
    )


@pytest.fixture
def csv(tmp_path: Path, survey: pl.DataFrame) -> Path:
    path = tmp_path / "survey.csv"
    survey.write_csv(path)
    return path


def _config(csv: Path, **extra: object) -> dict[str, object]:
    raw: dict[str, object] = {
        "input": str(csv),
        "quasi_identifiers": ["region", "sex", "age_group", "rare"],
        "numeric": ["income", "hours", "spend"],
        "k": 3,
        "budget": 0.1,
        "steps": [
            {"microaggregate": {"k": 3, "restore_moments": True}},
            {"suppress": "plan"},
        ],
    }
    raw.update(extra)
    return raw


def test_pipeline_masks_plans_and_reports(csv: Path, survey: pl.DataFrame) -> None:
    result = run_pipeline(parse_config(_config(csv)))
    result_report = build_report(result)
    plan = result.plan
    # the plan's bound is a valid bound (>= the truth, counted independently with Counter)
    rows = list(zip(*(survey[c].to_list() for c in plan.columns), strict=True))
    sizes = Counter(rows)
    truth = sum(c for c in sizes.values() if c < 3) / survey.height
    assert truth <= plan.bound + 1e-12 <= 0.1 + 1e-12
    assert plan.bound == pytest.approx(
        float(joint_exposure_bound(Marginals.from_data(survey, list(plan.columns)), k=3))
    )
    # every row kept, in random order (issue 21); excluded raw quasi-identifiers gone, the rest untouched
    out = result.protected
    assert out.height == survey.height
    excluded = [c for c in ("region", "sex", "age_group", "rare") if c not in plan.columns]
    assert "rare" in excluded  # 60 values in 400 rows cannot fit a 10% budget at k = 3
    assert not set(excluded) & set(out.columns)
    for c in plan.columns:
        assert sorted(out[c].to_list()) == sorted(survey[c].to_list())
    assert any(out[c].to_list() != survey[c].to_list() for c in plan.columns)  # not in the input's order
    # microaggregation + moment restoration: mean and covariance of the original, to 1e-9 (row order irrelevant)
    X = survey.select("income", "hours", "spend").to_numpy()
    Y = out.select("income", "hours", "spend").to_numpy()
    np.testing.assert_allclose(Y.mean(axis=0), X.mean(axis=0), rtol=1e-9)
    np.testing.assert_allclose(np.cov(Y, rowvar=False), np.cov(X, rowvar=False), rtol=1e-9)
    assert not np.allclose(X, Y)
    # the report has every section, and the release log
    ids = [s.id for s in result_report.sections]
    assert set(SECTION_IDS) <= set(ids)
    assert "release" in ids
    assert result.steps[0].details["k"] == 3


def test_noise_step_draws_os_entropy_unless_reproducible(csv: Path) -> None:
    raw = _config(csv, steps=[{"noise": {"t": 0.5, "distribution": "laplace"}}], shuffle_rows=False)
    fresh = run_pipeline(parse_config(raw)).protected
    assert not fresh.equals(run_pipeline(parse_config(raw)).protected)  # secret by default
    seeded = {**raw, "reproducible": True, "seed": 1}
    a = run_pipeline(parse_config(seeded)).protected
    assert a.equals(run_pipeline(parse_config(seeded)).protected)  # an explicit choice
    assert not a.equals(run_pipeline(parse_config({**seeded, "seed": 2})).protected)
    with pytest.raises(ConfigError, match="reproducible: true"):
        parse_config({**raw, "seed": 1})
    # noise of variance t on standardised columns: residual sd / column sd ~ sqrt(0.5)
    raw_income = pl.read_csv(csv)["income"].to_numpy()
    resid = a["income"].to_numpy() - raw_income
    assert resid.std() / raw_income.std() == pytest.approx(np.sqrt(0.5), rel=0.15)  # 400 draws: sd error ~ 5%


def test_recommended_noise_uses_the_design(csv: Path) -> None:
    raw = _config(csv, steps=[{"noise": {"t": "recommended", "max_leakage_nats": 0.5}}])
    log = run_pipeline(parse_config(raw)).steps[0]
    assert log.details["recommended_by"] == "design_noise"
    # the spiked model's t, or more when the columns' own covariance needs more to meet the budget
    assert log.details["t"] >= log.details["design"]["t"] > 0
    assert log.details["information_leakage_nats"] <= 0.5


def test_columns_not_in_the_data(csv: Path) -> None:
    with pytest.raises(ConfigError, match=r"quasi_identifiers: column 'regoin' is not in the data\. Did you mean 'region'"):
        run_pipeline(parse_config(_config(csv, quasi_identifiers=["regoin"])))
    bad_step = _config(csv, steps=[{"microaggregate": {"columns": ["incme"]}}])
    with pytest.raises(ConfigError, match=r"steps\[0\].microaggregate.columns: column 'incme'"):
        run_pipeline(parse_config(bad_step))


def test_data_without_configuration_gets_stated_defaults(csv: Path) -> None:
    result = run_pipeline(parse_config({"input": str(csv)}))
    assert set(result.config.quasi_identifiers or ()) == {"region", "sex", "age_group", "rare"}
    # income looks like a target: never a guessed quasi-identifier, flagged with its fix
    assert set(result.config.numeric or ()) == {"income", "hours", "spend"}  # income: masked, never a QI
    assert result.roles is not None
    flags = {f.column: f for f in result.roles.flags}
    assert flags["income"].kind == "target-like"
    assert "sensitive: [income]" in flags["income"].message


def test_cli_run_writes_data_and_report(tmp_path: Path, csv: Path) -> None:
    raw = _config(csv, output={"data": str(tmp_path / "out" / "protected.csv"), "report": str(tmp_path / "out" / "r.html")})
    pipeline = tmp_path / "pipeline.json"
    pipeline.write_text(json.dumps(raw))
    r = CliRunner().invoke(app, ["run", str(pipeline), "--json"])
    assert r.exit_code == 0, r.output
    payload = json.loads(r.stdout)
    assert set(payload) >= {"plan", "steps", "rows", "columns", "outputs"}
    assert payload["rows"] == 400
    written = pl.read_csv(payload["outputs"]["data"])
    assert written.height == 400
    assert written.columns == payload["columns"]
    sidecar = json.loads(Path(payload["outputs"]["sidecar"]).read_text())
    assert set(SECTION_IDS) <= set(sidecar["sections"])


def test_cli_run_errors(tmp_path: Path, csv: Path) -> None:
    pipeline = tmp_path / "p.yaml"
    pipeline.write_text(f"input: {csv}\nquasi_identifier: [region]\n")
    r = CliRunner().invoke(app, ["run", str(pipeline)])
    assert r.exit_code == 1
    assert "unknown key 'quasi_identifier'. Did you mean 'quasi_identifiers'" in r.stderr
    assert "Traceback" not in r.output
    r = CliRunner().invoke(app, ["run", str(tmp_path / "nope.yaml")])
    assert r.exit_code == 1
    assert "no pipeline file" in r.stderr


def test_cli_report_on_a_csv(tmp_path: Path, csv: Path) -> None:
    out = tmp_path / "report.html"
    r = CliRunner().invoke(
        app, ["report", str(csv), "-q", "region,sex", "--numeric", "income,hours", "-o", str(out), "--k", "3", "--json"]
    )
    assert r.exit_code == 0, r.output
    payload = json.loads(r.stdout)
    assert payload["plan"]["k"] == 3
    assert exposure(pl.read_csv(csv), ["region", "sex"], k=3) <= payload["plan"]["bound"] + 1e-12
    assert out.exists()


@pytest.mark.services
def test_report_with_the_shuffle_protocol(csv: Path, survey: pl.DataFrame) -> None:
    raw = _config(csv, simulate_protocol=300, quasi_identifiers=["region", "sex"], steps=[])
    result = run_pipeline(parse_config(raw))
    result_report = build_report(result)
    section = next(s for s in result_report.sections if s.id == "protocol")
    assert section.data["verified"] is True
    assert section.data["n_round1"] == section.data["n_released"] == 300
    # the curator's bound (from marginals only) is never below the release's true exposure at k;
    # and the marginals it counted cover every participating user
    plan = section.data["plan"]
    assert section.data["exposure_at_k"] <= plan["bound"] + 1e-12
    for column, counts in section.data["marginals"].items():
        assert sum(counts.values()) == 300, column


def test_dropped_rows_are_reported(tmp_path: Path, survey: pl.DataFrame) -> None:
    holes = survey.with_columns(
        pl.when(pl.int_range(pl.len()) % 50 == 0).then(None).otherwise(pl.col("sex")).alias("sex")
    )
    path = tmp_path / "holes.csv"
    holes.write_csv(path)
    raw = _config(path, missing="drop", steps=[])
    result = run_pipeline(parse_config(raw))
    result_report = build_report(result)
    assert result.protected.height == 400 - 8  # rows 0, 50, ..., 350 lose their sex
    assert result_report.inputs["rows dropped (missing values)"] == 8
    data_section = next(s for s in result_report.sections if s.id == "data")
    assert data_section.data["n_dropped_missing"] == 8
    # with the default policy the gaps are a value of their own and nothing is dropped
    kept = run_pipeline(parse_config(_config(path, steps=[])))
    assert kept.protected.height == 400
