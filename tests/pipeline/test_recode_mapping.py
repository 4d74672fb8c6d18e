"""Recoding by mapping to any label (issue 36): codes to text, text to text, several codes to one label
(sdcMicro's ``groupAndRename`` habit, ``water: {mapping: {3: "3-8", 4: "3-8"}}``) on numeric, text and
labelled columns, in the pipeline and the CLI; the output column's type follows the labels."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pyreadstat
import pytest
from typer.testing import CliRunner

from sdckit.anonymize import GlobalRecoder
from sdckit.cli import app
from sdckit.pipeline import parse_config, run_pipeline, write_outputs

DATA = Path(__file__).resolve().parents[1] / "data"
GROUP = {3: "3-8", 4: "3-8", 5: "3-8", 6: "3-8", 7: "3-8", 8: "3-8"}


def _testdata2() -> pl.DataFrame:
    return pl.read_csv(DATA / "sdcmicro_testdata2.csv").select("urbrur", "water", "sex", "roof", "income")


@pytest.mark.parametrize("dtype", [pl.Int64, pl.Float64])
def test_codes_to_one_label_on_a_numeric_column(dtype: pl.DataType) -> None:
    frame = _testdata2().with_columns(pl.col("water").cast(dtype))
    rec = GlobalRecoder(rules={"water": {"mapping": GROUP}})
    out = rec.fit_transform(frame)
    raw = frame["water"].to_list()
    assert out.schema["water"] == pl.String  # a text label: the column is text
    assert out["water"].to_list() == ["3-8" if 3 <= v <= 8 else str(int(v)) for v in raw]
    # cells changed: the merged ones only (1 -> "1" is the same value as text)
    assert rec.changes_["water"]["cells_changed"] == sum(3 <= v <= 8 for v in raw)


def test_codes_to_codes_stays_numeric() -> None:
    out = GlobalRecoder(rules={"water": {"mapping": {3: 9, 4: 9}}}).fit_transform(_testdata2())
    assert out.schema["water"].is_numeric()
    assert 3 not in out["water"].to_list()


def test_text_to_text_and_several_to_one() -> None:
    frame = pl.DataFrame({"region": ["north", "south", "east", "west", None]})
    out = GlobalRecoder(rules={"region": {"mapping": {"east": "east-west", "west": "east-west"}}}).fit_transform(frame)
    assert out["region"].to_list() == ["north", "south", "east-west", "east-west", None]


def _config(source: Path, out: Path) -> dict:
    return {
        "input": str(source), "quasi_identifiers": ["urbrur", "water", "sex"], "k": 3,
        "steps": [{"recode": {"rules": {"water": {"mapping": GROUP}}}}, {"local_suppression": {}}],
        "output": {"data": str(out), "report": None},
    }


def test_pipeline_maps_a_csv_column_to_text_labels(tmp_path: Path) -> None:
    source = tmp_path / "t2.csv"
    _testdata2().write_csv(source)
    result = run_pipeline(parse_config(_config(source, tmp_path / "out.csv")))
    assert set(result.protected["water"].drop_nulls().to_list()) <= {"1", "2", "3-8", "9"}  # 9 is not in the mapping
    assert "3-8" in result.protected["water"].to_list()
    write_outputs(result)


def test_pipeline_maps_codes_of_a_labelled_sav_column(tmp_path: Path) -> None:
    """On a labels-mode .sav, 3 names the code whose label is "borehole": merged too; the written
    file's value labels are updated (the new label gets a code)."""
    source = tmp_path / "t2.sav"
    pyreadstat.write_sav(_testdata2().to_pandas().astype(float), str(source),
                         variable_value_labels={"water": {1.0: "piped", 3.0: "borehole"}, "sex": {1.0: "m", 2.0: "f"}})
    out = tmp_path / "out.sav"
    result = run_pipeline(parse_config(_config(source, out)))
    values = set(result.protected["water"].drop_nulls().cast(pl.String).to_list())
    assert "borehole" not in values
    assert "3-8" in values
    write_outputs(result)
    back, meta = pyreadstat.read_sav(str(out), user_missing=True)
    labels = meta.variable_value_labels["water"]
    assert "3-8" in labels.values()
    assert "borehole" not in labels.values()
    assert labels[1.0] == "piped"
    code = next(c for c, v in labels.items() if v == "3-8")
    assert (back["water"] == code).sum() == result.protected["water"].cast(pl.String).eq("3-8").sum()


def test_cli_recode_mapping(tmp_path: Path) -> None:
    source = tmp_path / "t2.csv"
    _testdata2().write_csv(source)
    out = tmp_path / "out.csv"
    got = CliRunner().invoke(app, ["recode", str(source), "--mapping", "water=3:3-8,4:3-8,5:3-8", "-o", str(out), "--json",
                                 "--keep-order"])
    assert got.exit_code == 0, got.output
    payload = json.loads(got.stdout)
    raw = _testdata2()["water"].to_list()
    assert payload["changes"]["water"]["cells_changed"] == sum(3 <= v <= 5 for v in raw)
    written = pl.read_csv(out, infer_schema_length=0)
    assert written["water"].to_list() == ["3-8" if 3 <= v <= 5 else str(v) for v in raw]
    bad = CliRunner().invoke(app, ["recode", str(source), "--mapping", "water=3"])
    assert bad.exit_code == 2
    assert "OLD:NEW" in bad.output
