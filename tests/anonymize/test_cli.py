"""sdckit recode / suppress / pram / plan --hierarchy: exit codes, --json, the written release."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest
from typer.testing import CliRunner

from sdckit.cli import app
from sdckit.datasets import load_adult
from sdckit.risk import wildcard_group_sizes

runner = CliRunner()
DATA = Path(__file__).resolve().parents[1] / "data" / "sdcmicro_testdata.csv"
KEYS = "urbrur,roof,walls,water,electcon"


def test_suppress_writes_a_k_anonymous_release(tmp_path: Path) -> None:
    out = tmp_path / "release.csv"
    r = runner.invoke(app, ["suppress", str(DATA), "--columns", KEYS, "--k", "3", "--method", "sdcmicro",
                            "--out", str(out), "--json"])
    assert r.exit_code == 0, r.output
    payload = json.loads(r.stdout)
    release = pl.read_csv(out)
    keys = KEYS.split(",")
    assert sum(release[c].null_count() for c in keys) == payload["n_suppressed"] <= 8
    assert wildcard_group_sizes(release, keys).min() >= 3  # measured on the written file
    assert payload["min_group_size"] >= 3


def test_suppress_with_random_redaction_and_seed(tmp_path: Path) -> None:
    args = ["suppress", str(DATA), "-c", KEYS, "--method", "sdcmicro", "--random-redaction", "0.01", "--seed", "4",
            "--json"]
    a, b = runner.invoke(app, args), runner.invoke(app, args)
    assert a.exit_code == 0, a.output
    assert json.loads(a.stdout) == json.loads(b.stdout)
    assert json.loads(a.stdout)["n_redacted"] > 0


def test_suppress_with_decoys_by_default(tmp_path: Path) -> None:
    out = tmp_path / "release.csv"
    r = runner.invoke(app, ["suppress", str(DATA), "--columns", KEYS, "--k", "3", "--out", str(out), "--json"])
    assert r.exit_code == 0, r.output
    payload = json.loads(r.stdout)
    release = pl.read_csv(out)
    keys = KEYS.split(",")
    assert int(release.group_by(keys).len()["len"].min()) >= 3  # identical rows, plain polars (null a value)
    assert payload["method"] == "decoys"
    assert payload["random"]
    assert not payload["reproducible"]
    assert "seed" not in payload


def test_recode_and_pram(tmp_path: Path) -> None:
    out = tmp_path / "rec.parquet"
    r = runner.invoke(
        app,
        ["recode", str(DATA), "--breaks", "age=0,20,40,60", "--rules", '{"water": {"mapping": {"9": 7}}}',
         "--out", str(out), "--json"],
    )
    assert r.exit_code == 0, r.output
    release = pl.read_parquet(out)
    assert set(release["age"].unique().to_list()) <= {"[0, 20)", "[20, 40)", "[40, 60)", "[60, inf)"}
    assert json.loads(r.stdout)["changes"]["water"]["values_merged"] == 1
    r = runner.invoke(app, ["pram", str(DATA), "-c", "roof", "--seed", "1", "--json"])
    assert r.exit_code == 0, r.output
    assert json.loads(r.stdout)["transition"]["roof"]["values"] == ["2", "4", "5", "6", "9"]


def test_hierarchy_recode_on_adult(tmp_path: Path) -> None:
    src = tmp_path / "adult.csv"
    load_adult().head(500).write_csv(src)
    r = runner.invoke(app, ["recode", str(src), "--hierarchy", "native-country=adult:native-country",
                            "--level", "native-country=2", "--json"])
    assert r.exit_code == 0, r.output


@pytest.mark.parametrize(
    "args",
    [
        ["recode", str(DATA)],
        ["recode", str(DATA), "--breaks", "age"],
        ["suppress", str(DATA), "-c", "nope"],
        ["pram", str(DATA), "-c", "roof", "--pd", "2"],
        ["recode", str(DATA), "--rules", "{bad json"],
    ],
)
def test_errors_are_one_line(args: list[str]) -> None:
    r = runner.invoke(app, args)
    assert r.exit_code in (1, 2)
    assert "Traceback" not in r.output


def test_plan_with_hierarchies_and_suppression(tmp_path: Path) -> None:
    src = tmp_path / "adult.csv"
    adult = load_adult().head(3000)
    adult.write_csv(src)
    out = tmp_path / "rel.csv"
    r = runner.invoke(
        app,
        ["plan", str(src), "-c", "age,education,sex,native-country", "--k", "5", "--budget", "0.05",
         "--hierarchy", "adult", "--suppression", "0.2", "--keep-all", "--out", str(out), "--json"],
    )
    assert r.exit_code == 0, r.output
    plan = json.loads(r.stdout)
    assert plan["search"] == "lattice"
    assert plan["columns"] == ["age", "education", "sex", "native-country"]
    release = pl.read_csv(out, infer_schema_length=0)
    keys = plan["columns"]
    share = float((wildcard_group_sizes(release, keys) < 5).mean())
    assert share <= 0.05
    assert share == plan["exposure"]
    r = runner.invoke(app, ["plan", "--from-marginals", str(src), "--suppression", "0.1"])
    assert r.exit_code == 2


def _row_keys(frame: pl.DataFrame) -> list[tuple[object, ...]]:
    return [tuple(r) for r in frame.select(["age", "income", "expend"]).iter_rows()]


@pytest.mark.parametrize(
    "args",
    [
        ["suppress", "-c", KEYS, "--k", "3"],
        ["recode", "--breaks", "age=20,40,60"],
        ["pram", "-c", "roof", "--pd", "0.9"],
    ],
    ids=["suppress", "recode", "pram"],
)
def test_written_rows_are_shuffled_unless_keep_order(tmp_path: Path, args: list[str]) -> None:
    # the unmasked columns (income, expend) identify each input row: the output's order is compared
    # with the input's through them, independently of the command
    source = pl.read_csv(DATA)
    out, kept = tmp_path / "shuffled.csv", tmp_path / "kept.csv"
    r = runner.invoke(app, [args[0], str(DATA), *args[1:], "--out", str(out)])
    assert r.exit_code == 0, r.output
    assert "rows shuffled" in " ".join(r.output.split())
    released = pl.read_csv(out)
    assert sorted(a[1:] for a in _row_keys(released)) == sorted(b[1:] for b in _row_keys(source))  # the same rows
    same_place = sum(a[1:] == b[1:] for a, b in zip(_row_keys(released), _row_keys(source), strict=True))
    # a random permutation of n rows leaves about one row in place; the input order leaves all of them
    assert same_place < 0.05 * source.height
    r = runner.invoke(app, [args[0], str(DATA), *args[1:], "--out", str(kept), "--keep-order", "--json"])
    assert r.exit_code == 0, r.output
    assert json.loads(r.stdout)["rows_shuffled"] is False
    assert [a[1:] for a in _row_keys(pl.read_csv(kept))] == [b[1:] for b in _row_keys(source)]


def test_suppress_optimal_prints_its_certificate(tmp_path: Path) -> None:
    """Issue 38: the exact mode from the command line, with the certificate counted on the written file."""
    out = tmp_path / "release.csv"
    r = runner.invoke(app, ["suppress", str(DATA), "--columns", KEYS, "--k", "3", "--method", "optimal", "--out",
                            str(out), "--json"])
    assert r.exit_code == 0, r.output
    payload = json.loads(r.stdout)
    release, known = pl.read_csv(out), pl.read_csv(DATA)
    keys = KEYS.split(",")
    assert int(release.group_by(keys).len()["len"].min()) >= 3
    hidden = sum(release[c].null_count() for c in keys) - sum(known[c].null_count() for c in keys)
    cert = payload["certificate"]
    assert cert["cells"] == hidden == payload["n_suppressed"]
    assert 0 <= cert["lower_bound"] <= hidden
    text = runner.invoke(app, ["suppress", str(DATA), "--columns", KEYS, "--k", "3"])
    assert "certificate: any release meeting the same guarantee needs at least" in text.stdout
