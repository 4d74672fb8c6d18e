"""The report is about the release (issue 22): headings, the release's risk beside the input's, the
warnings in the Summary, experiments off by default, the PRAM matrices in the sidecar, piped progress."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from typer.testing import CliRunner

from sdckit.cli import app
from sdckit.errors import ConfigError
from sdckit.pipeline import parse_config, run_pipeline, write_outputs
from sdckit.report._main import EXPERIMENT, EXPERIMENT_SECTIONS, build_report
from sdckit.risk import measure_release

DATA = Path(__file__).resolve().parents[1] / "data"
KEYS = ["urbrur", "roof", "walls", "water", "electcon", "relat", "sex"]

# sdcMicro 5.8.1 (R 4.x) on tests/data/testdata_suppressed_k3.csv (sdcMicro's testdata after its own
# localSuppression at k = 3; see tests/data/README.md), computed with
#   x <- read.csv("testdata_suppressed_k3.csv")
#   r <- measure_risk(x, keyVars=c("urbrur","roof","walls","water","electcon","relat","sex"),
#                     w="sampling_weight")
#   sprintf("%.17g", c(r$global_risk_ER, r$global_risk, max(r$Res[, 1])))
# The release written by the pipeline is that file row for row (no step), so measure_risk on the
# written file gives the same figures.
PEER_ER = 2.1208039565636674
PEER_GLOBAL = 0.00046305763243748195
PEER_MAX = 0.0049751243781094535


@pytest.fixture(scope="module")
def survey() -> pl.DataFrame:
    rng = np.random.default_rng(22)
    n = 300
    return pl.DataFrame(
        {
            "region": rng.choice(["north", "south", "east", "west"], n, p=[0.4, 0.3, 0.2, 0.1]),
            "sex": rng.choice(["F", "M"], n),
            "age_group": rng.choice(["18-29", "30-44", "45-64", "65+"], n),
            "disease": rng.choice(["a", "b", "c"], n, p=[0.8, 0.15, 0.05]),
            "weight": rng.permutation(np.arange(n)) + 10.5,  # as many values as rows, like AFNLWGT
            "note": rng.choice(["x", "y"], n),
            "income": rng.lognormal(10, 0.5, n),
            "hours": rng.normal(38, 6, n),
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
        "quasi_identifiers": ["region", "sex", "age_group"],
        "numeric": ["income", "hours"],
        "sensitive": ["disease"],
        "weight": ["weight"],
        "keep": ["note"],
        "k": 3,
        "budget": 0.5,
        "steps": [{"microaggregate": {"k": 3}}],
    }
    raw.update(extra)
    return raw


def test_release_risk_equals_sdcmicro_measure_risk_on_the_written_file(tmp_path: Path) -> None:
    raw = {
        "input": str(DATA / "testdata_suppressed_k3.csv"),
        "quasi_identifiers": KEYS,
        "weight": ["sampling_weight"],
        "missing_semantics": "wildcard",
        "k": 3,
        "budget": 0.05,
        # the peer's figures are those of this file as it is: the posterior pass would suppress more cells
        "posterior_pass": False,
        "output": {"data": str(tmp_path / "release.csv"), "report": str(tmp_path / "r.html")},
    }
    result = run_pipeline(parse_config(raw))
    written = write_outputs(result, report=build_report(result, verified_on=result.data_output))
    measure = result.release_measure
    assert measure is not None
    assert measure.individual_risk is not None
    ir = measure.individual_risk
    assert ir["missing"] == "wildcard"
    assert ir["weights"] == "sampling_weight"
    assert ir["expected_reidentifications"] == pytest.approx(PEER_ER, abs=1e-9)
    assert ir["global_risk"] == pytest.approx(PEER_GLOBAL, abs=1e-9)
    assert ir["max_risk"] == pytest.approx(PEER_MAX, abs=1e-9)
    # the written file measures the same (the figures are those of the file that goes out)
    again = measure_release(pl.read_csv(written["data"]), quasi_identifiers=KEYS, k=3, budget=0.05,
                            missing_semantics="wildcard", weights="sampling_weight")
    assert again.individual_risk is not None
    assert again.individual_risk["expected_reidentifications"] == pytest.approx(PEER_ER, abs=1e-9)
    sidecar = json.loads(written["sidecar"].read_text())
    rel = sidecar["sections"]["release_risk"]["data"]["release"]["individual_risk"]
    assert rel["global_risk"] == pytest.approx(PEER_GLOBAL, abs=1e-9)
    assert sum(row["n_records"] for row in rel["histogram"]) == 4580
    # the input as is is that same file here: its figure stands beside the release's
    assert sidecar["sections"]["release_risk"]["data"]["input"]["individual_risk"]["global_risk"] == pytest.approx(
        PEER_GLOBAL, abs=1e-9)


def test_every_heading_says_input_or_release_and_experiments_are_off(csv: Path) -> None:
    result = run_pipeline(parse_config(_config(csv)))
    result_report = build_report(result)
    titles = {s.id: s.title for s in result_report.sections}
    for sid, title in titles.items():
        assert "input" in title.lower() or "release" in title.lower(), (sid, title)
    assert not set(EXPERIMENT_SECTIONS.values()) & set(titles)  # off by default in `sdckit run`
    summary = next(s for s in result_report.sections if s.id == "summary")
    assert summary.data["experiments"] == []
    assert "experiment" not in result_report.render().split('id="data"')[0].lower()
    assert titles["risk"] == "Re-identification risk of the input, as is"


def test_experiments_turned_on_are_marked_and_pointed_to(csv: Path) -> None:
    raw = _config(csv, experiments=["curator_plan", "microaggregation"])
    result = run_pipeline(parse_config(raw))
    result_report = build_report(result)
    titles = {s.id: s.title for s in result_report.sections}
    assert titles["plan"].startswith(EXPERIMENT)
    assert titles["microaggregation"].startswith(EXPERIMENT)
    assert "spectral" not in titles
    ids = [s.id for s in result_report.sections]
    assert ids.index("plan") > ids.index("release_risk")  # after the release's sections
    summary = next(s for s in result_report.sections if s.id == "summary")
    assert summary.data["experiments"] == ["plan", "microaggregation"]
    pointers = [b.html for b in summary.blocks if "experiment(s) on the input" in b.html]
    assert len(pointers) == 1


def test_unknown_experiment_is_refused_precisely(csv: Path) -> None:
    with pytest.raises(ConfigError, match=r"experiments.*'spectrl' is not an experiment\. Did you mean 'spectral'"):
        parse_config(_config(csv, experiments=["spectrl"]))


def test_summary_lists_every_warning(csv: Path, survey: pl.DataFrame) -> None:
    result = run_pipeline(parse_config(_config(csv)))
    result_report = build_report(result)
    measure = result.release_measure
    assert measure is not None
    warnings = list(measure.warnings)
    near = [w for w in warnings if w.startswith("weight is released near-unique")]
    assert near
    assert "300 values in 300 rows" in near[0]
    # l < 2: counted independently, the share of users in groups with a single value of disease
    g = survey.group_by(["region", "sex", "age_group"]).agg(pl.col("disease").n_unique().alias("l"), pl.len().alias("n"))
    share = g.filter(pl.col("l") == 1)["n"].sum() / survey.height
    assert g["l"].min() == 1
    ldiv = [w for w in warnings if w.startswith("sensitive column disease has l = 1")]
    assert ldiv
    assert f"{100 * share:.3g} % of users" in ldiv[0]
    assert any("no figure of this report measures note" in w for w in warnings)
    summary = next(s for s in result_report.sections if s.id == "summary")
    assert summary.data["warnings"] == warnings
    page = result_report.render()
    head = page.split('id="data"')[0]
    for w in warnings:
        assert f"Warning: {w}." in head.replace("&#39;", "'")


def test_information_loss_by_hand(tmp_path: Path) -> None:
    original = pl.DataFrame({"a": ["x", "x", "y", "y", "z", "z"], "b": ["p", "q", "p", "q", "p", "q"]})
    release = pl.DataFrame({"a": ["x", "x", "yz", "yz", "yz", None], "b": ["p", "q", "p", "q", "p", "q"]})
    m = measure_release(release, quasi_identifiers=["a", "b"], k=2, budget=1.0, original=original)
    assert m.information_loss is not None
    a = m.information_loss["per_column"]["a"]
    assert a["share_changed"] == pytest.approx(3 / 6)  # y, y, z -> yz
    assert a["share_suppressed"] == pytest.approx(1 / 6)
    # H(original | released): 'x' tells all, 'yz' leaves y/y/z (H = h(1/3) bits) on 3 of 6 rows, missing tells all
    h = -(1 / 3) * math.log2(1 / 3) - (2 / 3) * math.log2(2 / 3)
    assert a["entropy_lost_bits"] == pytest.approx(0.5 * h, abs=1e-12)
    assert a["entropy_bits"] == pytest.approx(math.log2(3), abs=1e-12)
    assert m.information_loss["per_column"]["b"]["entropy_lost_bits"] == pytest.approx(0.0, abs=1e-12)


def test_pram_matrices_in_the_report_and_the_sidecar(tmp_path: Path, csv: Path, survey: pl.DataFrame) -> None:
    raw = _config(csv, steps=[{"pram": {"columns": ["region"], "pd": 0.7}}],
                  output={"report": str(tmp_path / "r.html")})
    result = run_pipeline(parse_config(raw))
    written = write_outputs(result, report=build_report(result, verified_on=result.data_output))
    sidecar = json.loads(written["sidecar"].read_text())
    got = sidecar["sections"]["release_risk"]["data"]["pram_matrices"]["region"]
    assert got["values"] == ["east", "north", "south", "west"]
    p = np.asarray(got["matrix"])
    np.testing.assert_allclose(p.sum(axis=1), 1.0, atol=1e-12)
    assert np.all(np.diag(p) >= 0.7 - 1e-12)
    pi = np.array([(survey["region"] == v).sum() for v in got["values"]], dtype=float) / survey.height
    np.testing.assert_allclose(pi @ p, pi, atol=1e-12)  # invariant PRAM: pi P = pi
    step = sidecar["sections"]["release"]["data"]["steps"][0]
    assert step["details"]["transition_matrices"]["region"]["matrix"] == got["matrix"]
    assert "PRAM transition matrix of region" in written["report"].read_text()


def test_guessed_numeric_columns_cap_the_experiments(tmp_path: Path) -> None:
    from sdckit.pipeline._config import EXPERIMENT_MAX_COLUMNS

    rng = np.random.default_rng(3)
    cols: dict[str, object] = {"g": rng.choice(["a", "b"], 120), "h": rng.choice(["u", "v", "w"], 120)}
    cols.update({f"x{j:02d}": rng.lognormal(size=120) for j in range(EXPERIMENT_MAX_COLUMNS + 5)})
    path = tmp_path / "wide.csv"
    pl.DataFrame(cols).write_csv(path)
    result = run_pipeline(parse_config({"input": str(path), "k": 2, "experiments": ["microaggregation"]}))
    result_report = build_report(result)
    assert result.numeric_guessed
    micro = next(s for s in result_report.sections if s.id == "microaggregation")
    assert f"uses the first {EXPERIMENT_MAX_COLUMNS} in file order" in " ".join(b.html for b in micro.blocks)


def test_report_without_pipeline_is_about_the_input_and_piped_progress_prints_one_line_per_stage(
    tmp_path: Path, csv: Path
) -> None:
    out = tmp_path / "report.html"
    r = CliRunner().invoke(app, ["report", str(csv), "-q", "region,sex", "--numeric", "income,hours", "-o", str(out),
                                 "--k", "3"])
    assert r.exit_code == 0, r.output
    lines = [line.strip() for line in r.stderr.splitlines() if line.strip()]
    stages = [line.split(" s  ", 1)[1] for line in lines if " s  " in line]
    for stage in ("Reading the input", "Measuring the release", "Risk of the release",
                  "Re-identification risk of the input", "Experiment: microaggregation"):
        assert stages.count(stage) == 1, (stage, lines)
    assert lines[0].endswith("started")
    assert "done in" in lines[-1]
    sidecar = json.loads(out.with_suffix(".json").read_text())
    titles = {sid: s["title"] for sid, s in sidecar["sections"].items()}
    assert {"plan", "microaggregation", "spectral"} <= set(titles)  # sdckit report FILE: all of the input
    assert titles["data"] == "The input at a glance"
    assert sidecar["title"] == "Report on the input: survey.csv (no masking)"
