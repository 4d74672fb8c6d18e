"""One meaning per flag, --json everywhere (errors too), documented exit codes, a fast --help."""

from __future__ import annotations

import json
import secrets
import socket
import subprocess
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from typer.core import TyperGroup
from typer.testing import CliRunner

from sdckit.cli import COMMANDS, app, load_command

runner = CliRunner()


def _leaves() -> list[tuple[str, Any]]:
    out = []
    for name in COMMANDS:
        cmd = load_command(name)
        if isinstance(cmd, TyperGroup):
            out += [(f"{name} {sub}", c) for sub, c in cmd.commands.items()]
        else:
            out.append((name, cmd))
    return out


def test_every_command_is_in_the_table_and_has_json() -> None:
    leaves = _leaves()
    assert len(leaves) >= 15
    for name, cmd in leaves:
        opts = {o for p in cmd.params for o in p.opts}
        assert "--json" in opts, name


def test_one_meaning_per_short_flag() -> None:
    meanings: dict[str, set[str]] = defaultdict(set)
    for _, cmd in _leaves():
        for p in cmd.params:
            longs = [o for o in p.opts if o.startswith("--")]
            for short in (o for o in p.opts if len(o) == 2 and o.startswith("-")):
                meanings[short].add(longs[0])  # its first long name says what it is
    assert meanings["-c"] == {"--columns"}  # report's pipeline file is --config, no short flag
    for short, longs in meanings.items():
        assert len(longs) == 1, (short, longs)


@pytest.fixture
def people(tmp_path: Path) -> Path:
    path = tmp_path / "people.csv"
    pl.DataFrame({"age": [30, 41, 41, 52, 30, 41], "income": [1.0, 2.0, 2.5, None, 3.0, 4.0]}).write_csv(path)
    return path


@pytest.mark.parametrize(
    "args",
    [
        ["risk", "{p}", "-c", "age", "--k", "1"],
        ["plan", "{p}", "--k", "1"],
        ["microaggregate", "{p}", "-c", "age", "--k", "1"],
        ["report", "{p}", "-q", "age", "--k", "1"],
        ["protocol", "simulate", "{p}", "-c", "age", "--k", "1"],
    ],
)
def test_k_below_two_is_refused(people: Path, args: list[str]) -> None:
    r = runner.invoke(app, [a.format(p=people) for a in args])
    assert r.exit_code == 2
    assert "--k" in r.output


def test_errors_under_json_are_json_with_the_same_exit_code(people: Path, tmp_path: Path) -> None:
    r = runner.invoke(app, ["risk", str(tmp_path / "nope.csv"), "-c", "age", "--json"])
    assert r.exit_code == 1  # an unreadable file is an input error: exit 1
    error = json.loads(r.stdout)["error"]
    assert set(error) == {"type", "message", "fix"}
    assert error["type"] == "FileNotFoundInputError"
    assert error["fix"].startswith("Check the path")
    r = runner.invoke(app, ["noise", str(people), "--t", "1", "-o", str(tmp_path / "o.csv"), "--json"])
    assert r.exit_code == 1
    assert json.loads(r.stdout)["error"]["type"] == "MissingValuesError"
    assert "--missing drop" in r.stdout
    r = runner.invoke(app, ["describe", str(people), "--json", "--no-such-option"])
    assert r.exit_code == 2
    assert json.loads(r.stdout)["error"]["type"] == "UsageError"
    r = runner.invoke(app, ["describe", str(people), "--decimal", ";", "--json"])
    assert r.exit_code == 2
    assert "--decimal" in json.loads(r.stdout)["error"]["message"]


def test_noise_json_and_missing_drop(people: Path, tmp_path: Path) -> None:
    out = tmp_path / "noisy.csv"
    r = runner.invoke(app, ["noise", str(people), "--t", "1", "-o", str(out), "--missing", "drop", "--json"])
    assert r.exit_code == 0, r.output
    payload = json.loads(r.stdout)
    assert (payload["n_rows"], payload["n_dropped"]) == (5, 1)
    assert pl.read_csv(out).height == 5


def test_microaggregate_missing_and_utility_levels(people: Path) -> None:
    r = runner.invoke(app, ["microaggregate", str(people), "-c", "age,income", "--k", "2"])
    assert r.exit_code == 1
    assert "--missing drop" in r.stderr
    assert "missing='drop'" not in r.stderr
    r = runner.invoke(app, ["microaggregate", str(people), "-c", "age,income", "--k", "2", "--missing", "drop",
                            "--utility", "none", "--json"])
    assert r.exit_code == 0, r.output
    payload = json.loads(r.stdout)
    assert payload["utility"] is None
    assert payload["n_dropped"] == 1
    assert payload["n_rows"] == 5
    r = runner.invoke(app, ["microaggregate", str(people), "-c", "age", "--k", "2", "--utility", "basic"])
    assert r.exit_code == 0
    assert "not computed (--utility basic)" in r.stdout


def test_report_without_quasi_identifiers_names_q(people: Path, tmp_path: Path) -> None:
    # no roles: the quasi-identifiers are guessed, and the output says so and how to name them
    r = runner.invoke(app, ["report", str(people), "-o", str(tmp_path / "r.html")])
    assert r.exit_code == 0, r.output
    assert "guessed" in r.output
    assert "-q" in r.output
    assert "<dict>" not in r.output
    # nothing to guess (one near-unique column): the error names -q, never <dict>
    lone = tmp_path / "ids.csv"
    lone.write_text("id\n" + "\n".join(str(i) for i in range(50)) + "\n")
    r = runner.invoke(app, ["report", str(lone), "-o", str(tmp_path / "r2.html")])
    assert r.exit_code in (1, 2)
    assert "-q" in r.output
    assert "<dict>" not in r.output


def test_busy_port_is_one_line_exit_1(tmp_path: Path) -> None:
    key = tmp_path / "shuffler.key"
    assert runner.invoke(app, ["protocol", "keygen", str(key)]).exit_code == 0
    verify = {}
    for role in ("curator", "analyst"):  # the shuffler checks what it relays with their keys
        other = tmp_path / f"{role}.key"
        assert runner.invoke(app, ["protocol", "keygen", str(other)]).exit_code == 0
        verify[role] = (tmp_path / f"{role}.key.verify").read_text().strip()
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        cfg = tmp_path / "shuffler.yaml"
        cfg.write_text(f"key_file: {key}\ndata_dir: {tmp_path}\nadmin_token: {secrets.token_urlsafe(32)}\nrelay_token: {secrets.token_urlsafe(32)}\nport: {port}\n"
                       "curator_url: http://127.0.0.1:1\nanalyst_url: http://127.0.0.1:2\n"
                       f"curator_verify_key: '{verify['curator']}'\nanalyst_verify_key: '{verify['analyst']}'\n")
        r = runner.invoke(app, ["protocol", "serve", "shuffler", "--config", str(cfg)])
        assert r.exit_code == 1
        lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
        assert len(lines) == 1, r.stderr
        assert f"port {port}" in lines[0]
        assert "already in use" in lines[0]
        assert " on http://" not in r.output  # no banner first
        r = runner.invoke(app, ["protocol", "serve", "shuffler", "--config", str(cfg), "--json"])
        assert r.exit_code == 1
        assert json.loads(r.stdout)["error"]["type"] == "ParameterError"


@pytest.mark.parametrize("argv", [["--help"], ["risk", "--help"]])
def test_help_imports_no_heavy_library(argv: list[str]) -> None:
    code = (
        "import sys; from sdckit.cli import main; sys.argv = ['sdckit', *sys.argv[1:]]\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\n"
        "heavy = [m for m in ('numpy', 'polars', 'scipy', 'narwhals', 'pydantic') if m in sys.modules]\n"
        "print('HEAVY', heavy)"
    )
    src = str(Path(__file__).resolve().parents[2] / "src")
    r = subprocess.run([sys.executable, "-c", code, *argv], capture_output=True, text=True, check=True,
                       env={"PYTHONPATH": src, "PATH": "/usr/bin:/bin"})
    assert "HEAVY []" in r.stdout, r.stdout[-500:]


@pytest.mark.slow
def test_microaggregate_muargus_does_not_hang() -> None:
    """4,000 x 34: before, more than 150 s in the cubic propensity model (7,769 terms)."""
    data = Path(__file__).resolve().parents[1] / "data" / "muargus_free1.csv.gz"
    r = runner.invoke(app, ["microaggregate", str(data), "--k", "3", "--json"])
    assert r.exit_code == 0, r.output
    utility = json.loads(r.stdout)["utility"]
    assert utility["propensity_terms_total"] == 7769
    assert 34 * 3 < utility["propensity_terms"] < 7769  # every power, a sample of the interactions
    assert 0 < utility["propensity"] <= 0.25
    r = runner.invoke(app, ["microaggregate", str(data), "--k", "3"])
    assert "polynomial terms" in r.stdout
    assert "seeded sample" in r.stdout
