"""Every example in README.md and docs/*.md runs as written.

What runs, per Markdown file, in document order (its Python blocks as one test, each shell block as
another, each in a scratch folder of its own that starts with `adult.csv`):

* a fenced block whose info string is ``python`` (or ``py``): executed, all Python blocks of one
  file in one interpreter (one namespace), so a later block may use what an earlier one defined;
* a fenced block whose info string is ``bash``, ``sh``, ``shell``, ``console`` or empty: each line
  that starts with ``sdckit`` is run by bash (a ``# comment`` at its end is fine); other lines
  (``make demo``, ``cd``, prose) are not run. The command must exit 0.

The scratch folder holds a copy of ``examples/`` (its data files are ``examples/data/*``, small)
and a link to ``tests/`` (``tests/data/*``), so examples name files as a user in a clone of the
repository would. Data not shipped there is made by an earlier line of the same file, e.g.
``sdckit datasets export adult adult.csv``.

**Opting out.** A block that cannot run in a test (``sdckit protocol serve`` runs until stopped;
an output that needs a browser) says so in its info string: ```` ```bash no-run ```` (or
```` ```python no-run ````). Nothing else is skipped; a new doc needs no registration here. Other
info strings (``text``, ``yaml``, ``json``, ``mermaid``...) are not code and are not run.

A failure names the file, the line of the block, the command (or the Python line) and its output.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
SHELL = {"", "bash", "sh", "shell", "console", "zsh"}
PYTHON = {"python", "py", "python3"}
FENCE = re.compile(r"^(?P<indent> {0,3})(?P<fence>`{3,}|~{3,})(?P<info>.*)$")


@dataclass(frozen=True)
class Block:
    """One fenced code block: its language, the words after it, its first line number, its text."""

    lang: str
    flags: tuple[str, ...]
    line: int
    text: str

    @property
    def runs(self) -> bool:
        return "no-run" not in self.flags and (self.lang in PYTHON or self.lang in SHELL)


def blocks(path: Path) -> list[Block]:
    """The fenced blocks of a Markdown file (backtick or tilde fences, as CommonMark)."""
    out: list[Block] = []
    lines = path.read_text(encoding="utf-8").splitlines()
    i = 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        fence, words = m["fence"], m["info"].strip().split()
        lang = words[0].lower().strip("{}.") if words else ""
        body: list[str] = []
        j = i + 1
        while j < len(lines) and not lines[j].strip().startswith(fence):
            body.append(lines[j][len(m["indent"]):] if lines[j].startswith(m["indent"]) else lines[j])
            j += 1
        out.append(Block(lang, tuple(w.lower() for w in words[1:]), i + 1, "\n".join(body)))
        i = j + 1
    return out


_DRIVER = r'''
import json, subprocess, sys, traceback
blocks = json.loads(sys.stdin.read())
namespace = {"__name__": "__docs__"}
for b in blocks:
    if b["kind"] == "python":
        try:
            exec(compile(b["text"], f"{b['file']}:{b['line']}", "exec"), namespace)
        except BaseException as err:
            tb = traceback.format_exc()
            frames = [f for f in traceback.extract_tb(err.__traceback__) if f.filename == f"{b['file']}:{b['line']}"]
            k = frames[-1].lineno if frames and frames[-1].lineno else 0
            source = b["text"].splitlines()[k - 1].strip() if k else ""
            print(json.dumps({"line": b["line"] + k, "command": source, "output": tb[-3000:]}))
            sys.exit(1)
    else:
        for offset, command in b["commands"]:
            r = subprocess.run(["bash", "-c", "set -o pipefail\n" + b["prelude"] + command],
                               capture_output=True, text=True)
            if r.returncode != 0:
                out = (r.stdout[-1500:] + "\n" + r.stderr[-2500:]).strip()
                print(json.dumps({"line": b["line"] + offset, "command": command,
                                  "output": f"exit code {r.returncode}\n{out}"}))
                sys.exit(1)
print(json.dumps({"ok": True}))
'''


def _sdckit_function() -> str:
    """A bash function ``sdckit`` that runs this tree's CLI with this interpreter."""
    py = sys.executable.replace("'", "'\\''")
    return f"sdckit() {{ '{py}' -c 'import sys; from sdckit.cli import main; sys.argv[0] = \"sdckit\"; main()' \"$@\"; }}\n"


def _plan(path: Path) -> list[dict[str, object]]:
    rel = str(path.relative_to(ROOT))
    plan: list[dict[str, object]] = []
    for b in blocks(path):
        if not b.runs:
            continue
        if b.lang in PYTHON:
            plan.append({"kind": "python", "file": rel, "line": b.line, "text": b.text})
            continue
        commands = [
            (k + 1, ln.strip()) for k, ln in enumerate(b.text.splitlines()) if ln.strip().startswith("sdckit")
        ]
        if commands:
            plan.append({"kind": "shell", "file": rel, "line": b.line, "commands": commands,
                         "prelude": _sdckit_function()})
    return plan


def _parts(doc: Path) -> list[tuple[str, list[dict[str, object]]]]:
    """A file's runnable parts, each a test of its own (so they spread over the test workers): all
    its Python blocks in one interpreter, then each shell block on its own."""
    plan = _plan(doc)
    python = [p for p in plan if p["kind"] == "python"]
    shell = [p for p in plan if p["kind"] == "shell"]
    return ([("python", python)] if python else []) + [(f"shell-line-{p['line']}", [p]) for p in shell]


PARTS = [(doc, name, plan) for doc in DOCS for name, plan in _parts(doc)]


@pytest.fixture(scope="session")
def adult_csv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """What `sdckit datasets export adult adult.csv` writes, made once: every part starts with it,
    so a shell block that uses it runs on its own (the export line itself then keeps the file)."""
    from sdckit.datasets import load_adult

    path = tmp_path_factory.mktemp("adult") / "adult.csv"
    load_adult().write_csv(path)
    return path


@pytest.mark.slow
@pytest.mark.parametrize(
    ("doc", "part", "plan"), PARTS, ids=[f"{d.relative_to(ROOT)}:{name}" for d, name, _ in PARTS]
)
def test_examples_run(doc: Path, part: str, plan: list[dict[str, object]], tmp_path: Path, adult_csv: Path) -> None:
    shutil.copytree(ROOT / "examples", tmp_path / "examples", ignore=shutil.ignore_patterns("__pycache__"))
    (tmp_path / "tests").symlink_to(ROOT / "tests", target_is_directory=True)
    shutil.copy(adult_csv, tmp_path / "adult.csv")
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "MPLBACKEND": "Agg", "COLUMNS": "100",
           "NO_COLOR": "1"}
    r = subprocess.run([sys.executable, "-c", _DRIVER], input=json.dumps(plan), capture_output=True,
                       text=True, cwd=tmp_path, env=env, timeout=900)
    last = r.stdout.strip().splitlines()[-1] if r.stdout.strip() else "{}"
    try:
        result = json.loads(last)
    except json.JSONDecodeError:
        result = {"output": r.stdout[-2000:] + r.stderr[-2000:]}
    if not result.get("ok"):
        rel = doc.relative_to(ROOT)
        pytest.fail(
            f"{rel}, line {result.get('line', '?')}: {result.get('command', '')}\n{result.get('output', '')}",
            pytrace=False,
        )


def test_block_parser_and_opt_out(tmp_path: Path) -> None:
    md = tmp_path / "x.md"
    md.write_text(
        "text\n```python\nx = 1\n```\n\n```bash no-run\nsdckit protocol serve shuffler --config s.yaml\n```\n"
        "````\nsdckit --help\n````\n```yaml\nk: 5\n```\n"
    )
    found = blocks(md)
    assert [(b.lang, b.line, b.runs) for b in found] == [
        ("python", 2, True), ("bash", 6, False), ("", 9, True), ("yaml", 12, False)
    ]
    assert found[2].text == "sdckit --help"
