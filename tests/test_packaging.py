"""The source distribution holds the package, README, LICENSE, CHANGELOG and docs only (issue 32).

The sdist is built with hatchling (the build backend of pyproject.toml, in the ``test`` extra) from
a copy of the project where ``clients/js`` has what ``npm ci`` and ``npm test`` leave behind
(``node_modules`` with its own README.md, LICENSE and src/, and the built bundle): an include
pattern without a leading ``/`` matches at any depth and would take them.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tarfile
import tomllib
from pathlib import Path

import pytest

pytest.importorskip("hatchling.build", reason="hatchling is not installed (pip install -e '.[test]')")

ROOT = Path(__file__).resolve().parents[1]

EXPECTED_TOP = {"src", "docs", "README.md", "LICENSE", "CHANGELOG.md", "pyproject.toml", "PKG-INFO", ".gitignore"}
"""Top-level entries of the sdist: the include list, plus what hatchling always adds."""

_SKIP = shutil.ignore_patterns(".git", ".venv", "node_modules", "out", "__pycache__", ".*_cache", "*.egg-info")


@pytest.fixture(scope="module")
def sdist_names(tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    project = tmp_path_factory.mktemp("project") / "sdckit"
    shutil.copytree(ROOT, project, ignore=_SKIP)
    npm = project / "clients" / "js" / "node_modules" / "some-package"  # as after `npm ci`
    for rel in ("README.md", "LICENSE", "package.json", "src/index.js", "docs/guide.md"):
        (npm / rel).parent.mkdir(parents=True, exist_ok=True)
        (npm / rel).write_text("from npm\n", encoding="utf-8")
    (project / "clients" / "js" / "dist").mkdir(exist_ok=True)  # as after `npm test` (the bundle)
    (project / "clients" / "js" / "dist" / "sdckit.js").write_text("bundle\n", encoding="utf-8")
    (project / "src" / "sdckit" / "__pycache__").mkdir(exist_ok=True)
    (project / "src" / "sdckit" / "__pycache__" / "x.cpython-311.pyc").write_bytes(b"\0")
    out = project / "dist"
    build = "import sys; from hatchling.build import build_sdist; print(build_sdist(sys.argv[1]))"
    r = subprocess.run([sys.executable, "-c", build, str(out)], cwd=project, capture_output=True, text=True,
                       check=False, timeout=300)
    assert r.returncode == 0, r.stderr
    with tarfile.open(out / r.stdout.strip().splitlines()[-1]) as tar:
        return [name.split("/", 1)[1] for name in tar.getnames() if "/" in name]


def test_the_sdist_has_no_node_modules_nor_build_output(sdist_names: list[str]) -> None:
    assert not [n for n in sdist_names if "node_modules" in n]
    assert not [n for n in sdist_names if n.startswith("clients/") or "/dist/" in n]
    assert not [n for n in sdist_names if "__pycache__" in n or n.endswith(".pyc")]


def test_the_sdist_holds_the_package_readme_licence_changelog_and_docs(sdist_names: list[str]) -> None:
    top = {n.split("/", 1)[0] for n in sdist_names}
    assert top <= EXPECTED_TOP, top - EXPECTED_TOP
    for name in ("src/sdckit/__init__.py", "src/sdckit/py.typed", "src/sdckit/cli/_exit.py", "src/sdckit/_io/_optional.py",
                 "README.md", "LICENSE", "CHANGELOG.md", "pyproject.toml", "docs/pipeline.md", "docs/figures/report.png"):
        assert name in sdist_names, name
    # the bundled data and hierarchies go with the package
    assert any(n.startswith("src/sdckit/datasets/data/") for n in sdist_names)


def test_the_metadata_a_maintainer_expects() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    versions = {c.rsplit(" :: ", 1)[1] for c in project["classifiers"] if c.startswith("Programming Language :: Python :: 3.")}
    assert versions == {"3.11", "3.12", "3.13"}
    assert project["requires-python"] == ">=3.11"
    changelog = (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")
    sections = [line for line in changelog.splitlines() if line.startswith("## ")]
    assert sections[0] == "## [Unreleased]"  # newest first
    assert sections[1].startswith(f"## [{project['version']}]")
