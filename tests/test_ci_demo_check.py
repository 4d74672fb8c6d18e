"""``.ci/demo-check`` fails CI when ``make demo`` fails with the core install (issue 32).

A clone of this repository gets the bug of issue 32 back (a core path importing pyarrow, which
only the ``frames`` extra installs); the script, run on it, must exit non-zero and show why. It
builds a real core-only virtual environment (a minute or more, package registry needed), so it runs
only with ``SDCKIT_TEST_DEMO_CHECK=1``; ``.ci/run`` runs the script itself on the clean tree.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(os.environ.get("SDCKIT_TEST_DEMO_CHECK") != "1",
                       reason="builds a core-only venv (minutes): set SDCKIT_TEST_DEMO_CHECK=1"),
    pytest.mark.skipif(shutil.which("git") is None or shutil.which("make") is None, reason="needs git and make"),
]


def test_the_demo_check_fails_on_a_broken_import(tmp_path: Path) -> None:
    broken = tmp_path / "broken"
    subprocess.run(["git", "clone", "-q", str(ROOT), str(broken)], check=True)
    fmt = broken / "src" / "sdckit" / "report" / "_fmt.py"
    fmt.write_text(fmt.read_text(encoding="utf-8") + "\nimport pyarrow  # noqa: E402,F401 - the bug of issue 32\n",
                   encoding="utf-8")
    git = ["git", "-C", str(broken), "-c", "user.name=test", "-c", "user.email=test@localhost"]
    subprocess.run([*git, "commit", "-qam", "a core path imports an extra"], check=True)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    r = subprocess.run([str(ROOT / ".ci" / "demo-check"), str(broken)], capture_output=True, text=True, env=env,
                       check=False, timeout=1800)
    assert r.returncode == 1, r.stdout + r.stderr
    assert "demo-check: FAILED: make demo in a clean clone with the core install" in r.stdout
    assert "no module named 'pyarrow'" in r.stdout
