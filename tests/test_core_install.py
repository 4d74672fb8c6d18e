"""The core install runs every core command; each optional feature names its extra (issue 32).

Each command runs in a subprocess whose ``sys.meta_path`` starts with a finder that hides every
package of the extras (``frames``, ``formats``, ``scale``, ``protocol``, ``app``) and the
packages only they bring (starlette, uvloop, ...): an ``import pandas`` there fails as on a
machine with ``pip install sdckit`` only. ``make demo`` in a clean clone with a real core-only
virtual environment is checked by ``.ci/demo-check`` (called by ``.ci/run``).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest

from sdckit._io._optional import EXTRAS

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src"

HIDDEN = sorted(
    {m for mods in EXTRAS.values() for m in mods}
    | {"starlette", "uvloop", "httptools", "h11", "psycopg_binary", "voprf", "py4j", "xlsxwriter", "odf"}
)
"""Top-level modules hidden from the subprocess: every extra's packages and what only they bring."""

HOOK = """
import sys

HIDDEN = frozenset({hidden!r})


class HideExtras:
    '''Every package of an extra is missing, as after ``pip install sdckit`` alone.'''

    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] in HIDDEN:
            raise ModuleNotFoundError(f"No module named {{name!r}} (hidden by the test)", name=name)
        return None


sys.meta_path.insert(0, HideExtras())
from sdckit.cli import main

sys.argv[0] = "sdckit"
try:
    main()
finally:
    leaked = sorted(m for m in sys.modules if m.partition(".")[0] in HIDDEN)
    assert not leaked, leaked
"""


def sdckit_core(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """``sdckit ARGS`` with every extra hidden (see :data:`HOOK`)."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(SRC), os.environ.get("PYTHONPATH", "")]),
           "COLUMNS": "200", "SDCKIT_DEBUG": ""}
    code = HOOK.format(hidden=HIDDEN)
    return subprocess.run([sys.executable, "-c", code, *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=300, check=False)


@pytest.fixture
def survey(tmp_path: Path) -> Path:
    """300 rows of the synthetic survey (examples/data/my_survey.csv, made by make_my_survey.py)."""
    path = tmp_path / "survey.csv"
    pl.read_csv(ROOT / "examples" / "data" / "my_survey.csv").head(300).write_csv(path)
    return path


def test_the_hook_hides_the_extras(tmp_path: Path) -> None:
    r = subprocess.run(
        [sys.executable, "-c", HOOK.format(hidden=HIDDEN).split("from sdckit.cli")[0] + "import pandas"],
        capture_output=True, text=True, check=False, cwd=tmp_path,
    )
    assert r.returncode == 1
    assert "No module named 'pandas' (hidden by the test)" in r.stderr


def test_sdckit_run_with_a_sensitive_column(survey: Path, tmp_path: Path) -> None:
    """The README's first command, in small: a pipeline with a sensitive column (l-diversity)."""
    (tmp_path / "p.yaml").write_text(
        f"input: {survey.name}\n"
        "quasi_identifiers: [age_group, region, sex]\n"
        "numeric: [income, hours]\n"
        "sensitive: [health]\n"
        "identifiers: [respondent_id]\n"
        "k: 3\nbudget: 0.05\n"
        "steps:\n"
        "  - local_suppression: {k: 3}\n"
        "  - microaggregate: {method: mdav, k: 3, columns: [income, hours]}\n"
        "output: {data: out/release.parquet, report: out/report.html}\n",
        encoding="utf-8",
    )
    r = sdckit_core("run", "p.yaml", "--json", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    payload = json.loads(r.stdout)
    assert payload["within_budget"] is True
    assert (tmp_path / "out" / "release.parquet").exists()
    assert "l-diversity" in (tmp_path / "out" / "report.html").read_text(encoding="utf-8")
    assert "health" in pl.read_parquet(tmp_path / "out" / "release.parquet").columns


def test_sdckit_risk_and_report_with_a_sensitive_column(survey: Path, tmp_path: Path) -> None:
    r = sdckit_core("risk", survey.name, "--columns", "age_group,region,sex", "--sensitive", "health", "--json",
                    cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert "l_diversity" in json.loads(r.stdout)
    r = sdckit_core("report", survey.name, "-q", "age_group,region,sex", "--sensitive", "health",
                    "--numeric", "income,hours", "-o", "report.html", "--json", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "report.html").exists()
    assert "l-diversity" in (tmp_path / "report.html").read_text(encoding="utf-8")


CORE = [
    ["describe", "survey.csv", "--json"],
    ["datasets", "list"],
    ["plan", "survey.csv", "--columns", "age_group,region,sex,occupation", "--k", "3", "--json"],
    ["suppress", "survey.csv", "--columns", "age_group,region,sex", "--k", "3", "-o", "s.parquet", "--json"],
    ["pram", "survey.csv", "--columns", "region", "-o", "p.csv", "--json"],
    ["recode", "survey.csv", "--breaks", "income=10000,20000,40000", "-o", "r.parquet", "--json"],
    ["microaggregate", "survey.csv", "--columns", "income,hours", "--k", "3", "-o", "m.parquet", "--json"],
    ["noise", "survey.csv", "--columns", "income,hours", "--t", "0.1", "-o", "n.parquet", "--json"],
    ["spectral", "support", "--c", "0.1", "--taus", "1,4,12", "--weights", "0.5,0.3,0.2", "--json"],
]


@pytest.mark.parametrize("args", CORE, ids=[" ".join(a[:2]) for a in CORE])
def test_the_other_core_commands(args: list[str], survey: Path, tmp_path: Path) -> None:
    r = sdckit_core(*args, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    if "--json" in args:
        json.loads(r.stdout)


def _pipeline_to_sav(tmp_path: Path, survey: Path) -> str:
    (tmp_path / "sav.yaml").write_text(
        f"input: {survey.name}\nquasi_identifiers: [sex]\nidentifiers: [respondent_id]\nk: 3\n"
        "output: {data: out/release.sav}\n",
        encoding="utf-8",
    )
    return "sav.yaml"


def _pipeline_on_dask(tmp_path: Path, survey: Path) -> str:
    (tmp_path / "dask.yaml").write_text(
        f"input: {survey.name}\nengine: dask\nquasi_identifiers: [age_group, region, sex]\n"
        "identifiers: [respondent_id]\nsteps: []\noutput: {data: out/release.parquet}\n",
        encoding="utf-8",
    )
    return "dask.yaml"


# (command line, the extra the message names); files hold junk: the extra is checked before reading
OPTIONAL = [
    (["describe", "x.sav"], "formats"),
    (["describe", "x.dta"], "formats"),
    (["describe", "x.xlsx"], "formats"),
    (["describe", "x.rds"], "formats"),
    (["run", "{dask}"], "scale"),
    (["run", "{sav}"], "formats"),
    (["protocol", "keygen", "key"], "protocol"),
    (["protocol", "serve", "shuffler", "--config", "x.toml"], "protocol"),
    (["app", "--no-browser"], "app"),
]


@pytest.mark.parametrize(("args", "extra"), OPTIONAL, ids=[" ".join(a) for a, _ in OPTIONAL])
def test_an_optional_feature_names_its_extra_in_one_line(
    args: list[str], extra: str, survey: Path, tmp_path: Path
) -> None:
    for name in ("x.sav", "x.dta", "x.xlsx", "x.rds", "x.toml"):
        (tmp_path / name).write_bytes(b"not read: the extra is missing\n")
    places = {"{dask}": _pipeline_on_dask, "{sav}": _pipeline_to_sav}
    args = [places[a](tmp_path, survey) if a in places else a for a in args]
    r = sdckit_core(*args, cwd=tmp_path)
    assert r.returncode == 1, (r.stdout, r.stderr)
    assert "Traceback" not in r.stderr
    errors = [ln for ln in r.stderr.splitlines() if ln.startswith("Error:")]  # (run: progress lines before it)
    assert len(errors) == 1, r.stderr
    assert errors[0].endswith(f"pip install 'sdckit[{extra}]'")
    assert r.stderr.rstrip().endswith(errors[0])
