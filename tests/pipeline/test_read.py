"""The pipeline's ``read:`` section: a ';'-separated Latin-1 CSV with decimal commas and "-9" for missing.

The expected input is built here from the same Python values the file is written from (not read
back with sdckit); the written release is read with plain polars.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pytest
from typer.testing import CliRunner

from sdckit.cli import app
from sdckit.errors import ConfigError, MissingValuesError, NonNumericColumnError, UnreadableInputError
from sdckit.pipeline import load_config, parse_config, run_pipeline, write_outputs
from sdckit.pipeline._outputs import _same, _stated_figures
from sdckit.report._main import build_report
from sdckit.risk import measure_release

runner = CliRunner()
N = 240
READ = {"separator": ";", "encoding": "latin-1", "decimal": ",", "na_values": ["-9", ""]}


@pytest.fixture(scope="module")
def values() -> dict[str, list[Any]]:
    """The survey as Python values; ``None`` is written as -9 (the team's missing marker)."""
    rng = np.random.default_rng(7)
    # "NA" is a region of its own here (only -9 and empty are missing), "Zürich" needs Latin-1
    region = rng.choice(["Zürich", "Genève", "NA", "Bern", "Basel"], N).tolist()
    sex = [None if i % 17 == 0 else s for i, s in enumerate(rng.choice(["F", "M"], N).tolist())]
    age_group = rng.choice(["18-29", "30-44", "45-64", "65+"], N).tolist()
    age = [None if i % 11 == 3 else int(a) for i, a in enumerate(rng.integers(18, 90, N))]
    income = [round(float(v), 2) for v in rng.lognormal(10, 0.5, N)]
    hours = [round(float(v), 1) for v in np.clip(rng.normal(38, 8, N), 1, None)]
    return {"region": region, "sex": sex, "age_group": age_group, "age": age, "income": income, "hours": hours}


def _cell(value: Any) -> str:
    if value is None:
        return "-9"
    if isinstance(value, float):
        return f"{value}".replace(".", ",")  # the decimal comma
    if isinstance(value, str):
        return f'"{value}"'
    return str(value)


@pytest.fixture
def survey_csv(tmp_path: Path, values: dict[str, list[Any]]) -> Path:
    path = tmp_path / "enquête.csv"
    names = list(values)
    lines = [";".join(names)] + [";".join(_cell(values[c][i]) for c in names) for i in range(N)]
    path.write_bytes(("\r\n".join(lines) + "\r\n").encode("latin-1"))
    return path


def _raw(path: Path, tmp_path: Path, **extra: Any) -> dict[str, Any]:
    raw: dict[str, Any] = {
        "input": str(path),
        "read": dict(READ),
        "quasi_identifiers": ["region", "sex", "age_group"],
        "numeric": ["income", "hours"],
        "keep": ["age"],
        "k": 3,
        "budget": 0.5,
        "steps": [{"microaggregate": {"k": 3}}],
        "output": {"data": str(tmp_path / "out" / "release.csv"), "report": str(tmp_path / "out" / "report.html")},
    }
    raw.update(extra)
    return raw


def _stated(measure: Any) -> str:
    # the report's own comparison: its stated figures (interval disclosure, information loss, numeric risk,
    # the attacks and the warnings also need the input), floats to 12 digits since the written rows are
    # shuffled and sums of per-row risks add in another order (48.0 against 47.99999999999999)
    return _same(_stated_figures(measure))


def test_the_read_section_reads_the_file_as_declared(
    survey_csv: Path, tmp_path: Path, values: dict[str, list[Any]]
) -> None:
    result = run_pipeline(parse_config(_raw(survey_csv, tmp_path)))
    frame = result.input_frame
    assert frame is not None
    expected = pl.DataFrame(values, schema={"region": pl.String, "sex": pl.String, "age_group": pl.String,
                                            "age": pl.Int64, "income": pl.Float64, "hours": pl.Float64})
    assert frame.equals(expected)  # Zürich decoded, 1234,5 read as 1234.5, -9 missing, "NA" a region
    assert frame["sex"].null_count() == sum(v is None for v in values["sex"]) > 0
    assert frame["age"].null_count() == sum(v is None for v in values["age"]) > 0
    assert (frame["region"] == "NA").sum() > 0


def test_the_written_file_measures_as_the_release_in_memory(
    survey_csv: Path, tmp_path: Path, values: dict[str, list[Any]]
) -> None:
    result = run_pipeline(parse_config(_raw(survey_csv, tmp_path)))
    written = write_outputs(result, report=build_report(result, verified_on=result.data_output))
    text = written["data"].read_text(encoding="utf-8")
    assert "-9" not in text  # a declared-missing -9 goes out as missing, never as the value -9
    released = pl.read_csv(written["data"])  # plain polars: an empty field is null, "NA" a string
    assert released.equals(result.protected)
    assert released["sex"].null_count() == sum(v is None for v in values["sex"])
    assert released["age"].null_count() == sum(v is None for v in values["age"])
    assert (released["region"] == "NA").sum() == values["region"].count("NA")
    again = measure_release(released, quasi_identifiers=["region", "sex", "age_group"], k=3, budget=0.5,
                            known=result.known)  # the consistent count needs what the attacker knows
    assert result.release_measure is not None
    assert _stated(again) == _stated(result.release_measure)
    assert again.n_missing_cells == sum(v is None for v in values["sex"]) > 0
    sidecar = json.loads(written["sidecar"].read_text())
    check = sidecar["sections"]["release_check"]["data"]
    assert check["release"]["exposure_at_k"] == again.exposure_at_k
    assert check["release"]["k_anonymity"] == again.k_anonymity
    assert check["verified_on_written_file"] == str(written["data"])


def test_a_written_na_text_or_minus_nine_is_read_back_as_a_value(tmp_path: Path) -> None:
    # -9 is a value in the release (a noise step, a code) though the input called -9 missing:
    # the written file is read back in the format it was written in, not with the input's options
    path = tmp_path / "codes.csv"
    rows = ["region;code;x;y"] + [f"{r};{c};{i},5;{(i * 7) % 13},25" for i, (r, c) in
                                 enumerate([("NA", "-7"), ("NA", "-7"), ("EU", "-7"), ("EU", "-7")] * 5)]
    rows.append("-9;-9;1,5;2,25")
    path.write_text("\n".join(rows) + "\n", encoding="latin-1")
    raw = _raw(path, tmp_path, quasi_identifiers=["region"], numeric=None, keep=["code", "x", "y"], steps=[],
               read={**READ, "na_values": ["-9"]}, shuffle_rows=False)  # rows read back by position
    result = run_pipeline(parse_config(raw))
    written = write_outputs(result, report=build_report(result, verified_on=result.data_output))
    released = pl.read_csv(written["data"])
    assert released["region"].to_list()[:2] == ["NA", "NA"]
    assert released["region"].to_list()[-1] is None
    assert released["code"].to_list()[-1] is None
    assert released["code"].to_list()[0] == -7


def test_sidecar_records_the_read_options(survey_csv: Path, tmp_path: Path) -> None:
    result = run_pipeline(parse_config(_raw(survey_csv, tmp_path)))
    result_report = build_report(result)
    assert result_report.to_dict()["parameters"]["read"] == READ
    assert result_report.inputs["read with"] == "separator ';', encoding latin-1, decimal ',', missing: '-9', ''"
    (tmp_path / "p.csv").write_text("a,b\n" + "".join(f"{i % 2},{i}\n" for i in range(8)))
    plain = run_pipeline(parse_config({"input": str(tmp_path / "p.csv"), "quasi_identifiers": ["a"], "k": 2}))
    plain_report = build_report(plain)
    assert plain_report.to_dict()["parameters"]["read"] == {
        "separator": None, "encoding": "utf-8", "decimal": ".", "na_values": ["", "NA", "NaN"]
    }
    assert "read with" not in plain_report.inputs


def test_cli_run_with_a_read_section(survey_csv: Path, tmp_path: Path) -> None:
    pipeline = tmp_path / "survey.yaml"
    pipeline.write_text(
        f"input: {survey_csv.name}\n"
        "read:\n  separator: ';'\n  encoding: latin-1\n  decimal: ','\n  na_values: [-9, '']\n"
        "quasi_identifiers: [region, sex, age_group]\nnumeric: [income, hours]\nkeep: [age]\n"
        "k: 3\nbudget: 0.5\nsteps:\n  - microaggregate: {k: 3}\n"
        "output:\n  data: out/release.csv\n  report: out/report.html\n",
        encoding="utf-8",
    )
    assert load_config(pipeline).read.na_values == ("-9", "")  # YAML's -9 is the marker "-9"
    r = runner.invoke(app, ["run", str(pipeline), "--json"])
    assert r.exit_code == 0, r.output
    payload = json.loads(r.stdout)
    assert payload["rows"] == N
    released = pl.read_csv(payload["outputs"]["data"])
    assert released.height == N
    assert "-9" not in Path(payload["outputs"]["data"]).read_text()
    sidecar = json.loads(Path(payload["outputs"]["sidecar"]).read_text())
    assert sidecar["parameters"]["read"] == READ
    assert sidecar["inputs"]["read with"].startswith("separator ';', encoding latin-1")


def _run_cli(tmp_path: Path, body: str) -> Any:
    pipeline = tmp_path / "p.yaml"
    pipeline.write_text(body, encoding="utf-8")
    r = runner.invoke(app, ["run", str(pipeline)])
    assert r.exit_code == 1, r.output
    assert "Traceback" not in r.output
    return r


@pytest.mark.parametrize(
    ("read", "message"),
    [
        ("{sep: ';'}", "p.yaml.read: unknown key 'sep'. Did you mean 'separator'?"),
        ("{separator: ';', encodng: latin-1}", "p.yaml.read: unknown key 'encodng'. Did you mean 'encoding'?"),
        ("{encoding: latin-9x}", "p.yaml.read.encoding: 'latin-9x' is not an encoding Python knows; use e.g."),
        ("{separator: ';;'}", "p.yaml.read.separator: ';;' is not one character"),
        ("{decimal: ';'}", "p.yaml.read.decimal: ';' is not a decimal mark; use '.' or ','."),
        ("{sheet: 2}", "p.yaml.read: unknown key 'sheet': a spreadsheet is read from its first sheet"),
    ],
)
def test_cli_bad_read_options(tmp_path: Path, survey_csv: Path, read: str, message: str) -> None:
    r = _run_cli(tmp_path, f"input: {survey_csv}\nread: {read}\nquasi_identifiers: [region]\n")
    assert message in " ".join(r.stderr.split())


def test_a_wrong_separator_names_the_one_to_give(tmp_path: Path) -> None:
    path = tmp_path / "semi.csv"
    path.write_text("region;sex;income\nnorth;F;12\nsouth;M;13\n", encoding="utf-8")
    r = _run_cli(tmp_path, f"input: {path}\nread: {{separator: ','}}\nquasi_identifiers: [region]\n")
    err = " ".join(r.stderr.split())
    assert "reads as one column named 'region;sex;income'" in err
    assert "Give the separator, e.g. read: {separator: ';'}" in err
    assert "--separator" not in err
    assert "in Python" not in err


def test_reading_errors_are_in_the_words_of_the_pipeline(survey_csv: Path, tmp_path: Path) -> None:
    # the Latin-1 file read as UTF-8 (no read section): the fix names read.encoding
    with pytest.raises(UnreadableInputError, match=r"<dict>: input: .*not UTF-8.*read: \{encoding: latin-1\}"):
        run_pipeline(parse_config(_raw(survey_csv, tmp_path, read=None)))
    # decimal commas not declared: the numeric column is text, and the fix names read.decimal
    undeclared = {**READ}
    del undeclared["decimal"]
    with pytest.raises(NonNumericColumnError, match=r"column 'income' must be numeric.*read: \{decimal: ','\}"):
        run_pipeline(parse_config(_raw(survey_csv, tmp_path, read=undeclared)))


def test_a_missing_marker_not_declared_is_named(tmp_path: Path) -> None:
    path = tmp_path / "dots.csv"
    path.write_text("region,x,y\n" + "".join(f"r{i % 3},{i}.5,{'.' if i == 4 else i * 2}\n" for i in range(12)))
    raw = {"input": str(path), "quasi_identifiers": ["region"], "numeric": ["x", "y"],
           "steps": [{"microaggregate": {"k": 3}}]}
    with pytest.raises(NonNumericColumnError, match=r"holds '\.'.*If '\.' means missing, .*read: \{na_values: \['\.', NA, ''\]\}"):
        run_pipeline(parse_config(raw))
    raw["read"] = {"na_values": [".", ""]}
    with pytest.raises(MissingValuesError, match="column 'y' has 1 missing value"):  # masking refuses it by name
        run_pipeline(parse_config(raw))


def test_options_a_format_does_not_use_are_refused(tmp_path: Path) -> None:
    path = tmp_path / "d.parquet"
    pl.DataFrame({"a": [1, -9, 1, 2], "b": ["x", "y", "x", "y"]}).write_parquet(path)
    with pytest.raises(ConfigError, match=r"read\.na_values: 'd\.parquet' is not a text file \(no reading option"):
        run_pipeline(parse_config({"input": str(path), "read": {"na_values": ["-9"]}, "quasi_identifiers": ["b"]}))
    # the defaults, and a plain read of the same file, are fine
    result = run_pipeline(parse_config({"input": str(path), "quasi_identifiers": ["b"], "k": 2}))
    assert result.protected.height == 4


def test_cli_report_takes_the_reading_options(survey_csv: Path, tmp_path: Path) -> None:
    out = tmp_path / "r.html"
    args = ["report", str(survey_csv), "-q", "region,sex,age_group", "--numeric", "income,hours", "--k", "3",
            "-o", str(out), "--json"]
    r = runner.invoke(app, [*args, "--separator", ";", "--encoding", "latin-1", "--decimal", ",", "--na-values", "-9,"])
    assert r.exit_code == 0, r.output
    sidecar = json.loads(Path(json.loads(r.stdout)["sidecar"]).read_text())
    assert sidecar["parameters"]["read"] == READ
    r = runner.invoke(app, args[:-1])  # without them: the Latin-1 file is refused in the command line's words
    assert r.exit_code == 1
    err = " ".join(r.stderr.split())
    assert "Give its encoding, e.g. --encoding latin-1, or save it as UTF-8." in err
