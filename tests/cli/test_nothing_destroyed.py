"""Nothing a user owns is destroyed (issue 22): every output is checked before any work, one line,
exit 1, the input's bytes unchanged; outputs are written atomically (a killed run leaves nothing)."""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import polars as pl
import pytest
from typer.testing import CliRunner

import sdckit.pipeline
from sdckit._io import atomic_output, check_outputs, staged_outputs
from sdckit.cli import app
from sdckit.errors import OutputError

runner = CliRunner()
SRC = Path(__file__).resolve().parents[2] / "src"


@pytest.fixture
def csv(tmp_path: Path) -> Path:
    path = tmp_path / "survey.csv"
    pl.DataFrame(
        {"age": [30, 41, 41, 52, 30, 41] * 5, "sex": [1, 2, 2, 1, 1, 2] * 5,
         "income": [float(i * 1000 + 17) for i in range(30)]}
    ).write_csv(path)
    return path


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _one_line(text: str) -> str:
    lines = [ln for ln in text.splitlines() if ln.strip()]
    assert len(lines) == 1, text
    assert "Traceback" not in text
    return lines[0]


def _no_work(monkeypatch: pytest.MonkeyPatch) -> None:
    """Any pipeline run after the check fails the test: the refusal comes before any work."""

    def boom(*_a: object, **_k: object) -> None:
        raise AssertionError("the work started before the outputs were checked")

    monkeypatch.setattr(sdckit.pipeline, "run_pipeline", boom)


def _pipeline(tmp_path: Path, csv: Path, output: str) -> Path:
    path = tmp_path / "release.yml"
    path.write_text(
        f"input: {csv}\nquasi_identifiers: [age, sex]\nnumeric: [income]\nk: 2\noutput: {output}\n", encoding="utf-8"
    )
    return path


@pytest.mark.parametrize(
    "output",
    [
        "{{data: {csv}}}",  # the input, absolute
        "{{data: survey.csv}}",  # the input, relative to the pipeline file
        "{{report: {csv}}}",  # the report over the input
        "{{report: {link}}}",  # a symlink to the input
        "{{data: {tmp}/../{tmpname}/survey.csv}}",  # the input by another spelling
        "{{data: release.yml}}",  # the pipeline file itself
    ],
)
def test_pipeline_output_over_an_input_is_refused_before_any_work(
    csv: Path, tmp_path: Path, output: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    link = tmp_path / "link.html"
    link.symlink_to(csv)
    cfg = _pipeline(tmp_path, csv, output.format(csv=csv, link=link, tmp=tmp_path, tmpname=tmp_path.name))
    before, cfg_before = _digest(csv), _digest(cfg)
    _no_work(monkeypatch)
    r = runner.invoke(app, ["run", str(cfg)])
    assert r.exit_code == 1, r.output
    line = _one_line(r.stderr)
    assert "input file" in line
    assert "Choose another output name" in line
    assert _digest(csv) == before
    assert _digest(cfg) == cfg_before
    assert not (tmp_path / "report.html").exists()
    r = runner.invoke(app, ["run", str(cfg), "--json"])
    assert r.exit_code == 1
    assert json.loads(r.stdout)["error"]["type"] == "OutputError"


@pytest.mark.parametrize(
    "args",
    [
        ["report", "{csv}", "-q", "age,sex", "-o", "{csv}"],
        ["report", "{csv}", "-q", "age,sex", "-o", "{link}"],
        ["risk", "{csv}", "--columns", "age,sex", "--report", "{csv}"],
        ["microaggregate", "{csv}", "--columns", "income", "--out", "{csv}"],
        ["microaggregate", "{csv}", "--columns", "income", "--out", "{link}"],
        ["plan", "{csv}", "--columns", "age,sex", "--report", "{csv}"],
        ["suppress", "{csv}", "--columns", "age,sex", "--out", "{csv}"],
    ],
)
def test_command_output_over_its_input_is_one_line_exit_1(csv: Path, tmp_path: Path, args: list[str]) -> None:
    link = tmp_path / "link.csv"
    link.symlink_to(csv)
    before = _digest(csv)
    r = runner.invoke(app, [a.format(csv=csv, link=link) for a in args])
    assert r.exit_code == 1, r.output
    assert "input file" in _one_line(r.stderr)
    assert _digest(csv) == before
    r = runner.invoke(app, [a.format(csv=csv, link=link) for a in args] + ["--json"])
    assert r.exit_code == 1
    assert json.loads(r.stdout)["error"]["type"] == "OutputError"


def test_report_sidecar_over_the_input_is_refused(tmp_path: Path) -> None:
    data = tmp_path / "survey.json"  # JSON lines; the report's sidecar of survey.html is survey.json
    data.write_text("\n".join(json.dumps({"age": 30 + i % 3, "sex": i % 2}) for i in range(20)) + "\n")
    before = _digest(data)
    r = runner.invoke(app, ["report", str(data), "-q", "age,sex", "-o", str(tmp_path / "survey.html")])
    assert r.exit_code == 1, r.output
    assert "input file" in _one_line(r.stderr)
    assert _digest(data) == before


def _unwritable_folder(tmp_path: Path) -> Path:
    if os.geteuid() == 0:  # root writes into a read-only folder: /proc takes no new file, even from root
        if not Path("/proc/self").exists():
            pytest.skip("needs a folder root cannot write into")
        return Path("/proc")
    folder = tmp_path / "readonly"
    folder.mkdir()
    folder.chmod(0o555)
    return folder


@pytest.mark.parametrize("as_json", [False, True])
def test_unwritable_folder_and_too_long_name_are_refused_before_any_work(
    csv: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, as_json: bool
) -> None:
    folder = _unwritable_folder(tmp_path)
    before = _digest(csv)
    _no_work(monkeypatch)
    for output in (f"{{data: {folder}/out.csv}}", f"{{report: {folder}/report.html}}",
                   f"{{data: {tmp_path}/{'x' * 300}.csv}}"):
        cfg = _pipeline(tmp_path, csv, output)
        r = runner.invoke(app, ["run", str(cfg), *(["--json"] if as_json else [])])
        assert r.exit_code == 1, r.output
        if as_json:
            err = json.loads(r.stdout)["error"]
            assert err["type"] == "OutputError"
            assert "cannot write" in err["message"]
        else:
            line = _one_line(r.stderr)
            assert line.startswith("Error: cannot write")
            assert ("not writable" in line or "bytes, more than" in line)
        assert _digest(csv) == before
    r = runner.invoke(app, ["report", str(csv), "-q", "age,sex", "-o", f"{folder}/report.html"])
    assert r.exit_code == 1
    assert "not writable" in _one_line(r.stderr)


def test_check_outputs_refuses_two_outputs_at_one_place(tmp_path: Path) -> None:
    with pytest.raises(OutputError, match="two outputs"):
        check_outputs([tmp_path / "a.csv", tmp_path / "sub" / ".." / "a.csv"], make_folders=True)


def test_hard_link_to_the_input_is_the_input(csv: Path, tmp_path: Path) -> None:
    twin = tmp_path / "twin.csv"
    os.link(csv, twin)
    with pytest.raises(OutputError, match="input file"):
        check_outputs([twin], [csv])


def test_a_failed_block_leaves_the_old_file_and_no_temporary(tmp_path: Path) -> None:
    out = tmp_path / "release.csv"
    out.write_text("the earlier release\n")
    def failed_run() -> None:
        with staged_outputs() as stage:
            stage.path(out).write_text("half")
            stage.path(tmp_path / "report.html").write_text("<html>")
            raise RuntimeError("the run failed")

    with pytest.raises(RuntimeError):
        failed_run()
    assert out.read_text() == "the earlier release\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["release.csv"]
    with atomic_output(out) as temp:
        temp.write_text("new\n")
    assert out.read_text() == "new\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["release.csv"]


KILLED = textwrap.dedent(
    """
    import sys, time
    sys.path.insert(0, {src!r})
    from sdckit._io import write_table

    class Slow:  # a frame whose CSV writer stops half-way, as a large write does
        def write_csv(self, path, **_):
            with open(path, "w") as fh:
                fh.write("age,sex\\n" + "30,1\\n" * 1000)
                fh.flush()
                print("writing", flush=True)
                time.sleep(60)
                fh.write("41,2\\n")

    write_table(Slow(), {out!r})
    """
)


def test_a_run_killed_mid_write_leaves_no_partial_output(tmp_path: Path) -> None:
    out = tmp_path / "release.csv"
    proc = subprocess.Popen(
        [sys.executable, "-c", KILLED.format(src=str(SRC), out=str(out))], stdout=subprocess.PIPE, text=True
    )
    try:
        assert proc.stdout is not None
        assert proc.stdout.readline().strip() == "writing"  # mid-write: bytes are on disk
        time.sleep(0.1)
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=10)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == -signal.SIGKILL
    assert not out.exists()  # the partial bytes are in a hidden temporary file, never at the output path
    leftovers = [p.name for p in tmp_path.iterdir()]
    assert all(name.startswith(".sdckit-") and ".part" in name for name in leftovers), leftovers


def test_a_refused_run_sets_the_earlier_data_file_aside(csv: Path, tmp_path: Path) -> None:
    out = tmp_path / "release.csv"
    out.write_text("an earlier run's release\n")
    cfg = tmp_path / "strict.yml"
    cfg.write_text(  # k = 6 over 30 rows of unique incomes: over budget, refused
        f"input: {csv}\nquasi_identifiers: [age, sex, income]\nk: 6\nbudget: 0\n"
        f"output: {{data: release.csv, report: report.html}}\n",
        encoding="utf-8",
    )
    r = runner.invoke(app, ["run", str(cfg)])
    assert r.exit_code == 3, r.output  # ExitCode.REFUSED
    assert not out.exists()
    assert (tmp_path / "release.csv.stale").read_text() == "an earlier run's release\n"
    assert "renamed release.csv.stale" in r.stderr
    assert (tmp_path / "report.html").exists()


# --- issue 22: k >= 2 everywhere, with one message; plan --out writes the planned columns only ------------


@pytest.mark.parametrize(
    "args",
    [
        ["risk", "{csv}", "--columns", "age,sex", "--k", "1"],
        ["plan", "{csv}", "--columns", "age,sex", "--k", "1"],
        ["suppress", "{csv}", "--columns", "age,sex", "--k", "1"],
        ["microaggregate", "{csv}", "--columns", "income", "--k", "1"],
        ["report", "{csv}", "-q", "age,sex", "--k", "1", "-o", "{tmp}/r.html"],
    ],
)
def test_k_below_two_is_refused_everywhere_with_one_message(csv: Path, tmp_path: Path, args: list[str]) -> None:
    r = runner.invoke(app, [a.format(csv=csv, tmp=tmp_path) for a in args])
    assert r.exit_code == 2, r.output
    assert "k-anonymity needs a group size k >= 2" in r.output


def test_k_below_two_in_a_pipeline_and_the_library(csv: Path, tmp_path: Path) -> None:
    from sdckit.anonymize import LocalSuppressor
    from sdckit.errors import ConfigError, ParameterError
    from sdckit.pipeline import parse_config

    with pytest.raises(ConfigError, match=r"k: 1: k-anonymity needs a group size k >= 2"):
        parse_config({"input": str(csv), "k": 1})
    with pytest.raises(ParameterError, match=r"k=1: k-anonymity needs a group size k >= 2"):
        LocalSuppressor(k=1).fit(pl.read_csv(csv))


def test_plan_out_writes_the_planned_columns_only(csv: Path, tmp_path: Path) -> None:
    out = tmp_path / "planned.csv"
    r = runner.invoke(app, ["plan", str(csv), "--columns", "age,sex", "--k", "2", "--budget", "0.5", "--out", str(out),
                            "--json"])
    assert r.exit_code == 0, r.output
    planned = json.loads(r.stdout)["columns"]
    assert planned
    assert pl.read_csv(out).columns == planned  # income (no candidate) is not in the planned release
