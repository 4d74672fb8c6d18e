"""The docs' table of step options, generated from the step registry (as the workbench's forms are).

``python -m sdckit.app._docs`` rewrites the part of ``docs/pipeline.md`` between the markers
``<!-- step-options:start -->`` and ``<!-- step-options:end -->`` with, per step kind of
:data:`sdckit.pipeline._steps.STEPS`, its example and a table ``| option | values | default |
meaning |`` from :meth:`~sdckit.pipeline._steps.Step.options_schema`; ``--check`` only says whether
the file is up to date (exit 1 when not). ``tests/test_docs_step_options.py`` runs the check.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path
from typing import Any

from sdckit.pipeline._steps import STEPS

__all__ = ["END", "START", "replace_section", "step_options_markdown"]

START = "<!-- step-options:start -->"
END = "<!-- step-options:end -->"
REGENERATE = "python -m sdckit.app._docs docs/pipeline.md"
"""The command that rewrites the section (from the repository's root)."""


def _markdown(text: str) -> str:
    """A docstring's text as Markdown: one line, ````code```` and ``:class:`name``` as ``code``."""
    text = re.sub(r":\w+:`~?([^`]+)`", r"`\1`", " ".join(text.split()))
    return re.sub(r"``(.+?)``", r"`\1`", text)


def _cell(text: str) -> str:
    """Text for a Markdown table cell: a ``|`` escaped (GitHub reads ``\\|`` in code spans too)."""
    return _markdown(text).replace("|", "\\|")


def _default(value: Any) -> str:
    if value is None:
        return "—"
    if isinstance(value, bool):
        return f"`{str(value).lower()}`"
    if isinstance(value, (list, tuple)):
        return "`[" + ", ".join(map(str, value)) + "]`"
    return f"`{value}`"


def _values(type_text: str) -> str:
    """The option's values in words, the literal ones as code (``mdav`` \\| ``vmdav``, ``number or recommended``)."""
    words = ("whole number", "number", "text", "mapping")
    out = []
    for alt in type_text.split(" or "):
        if alt in words or alt.startswith("list of "):
            out.append(alt)
        else:
            out.append(" | ".join(f"`{w.strip()}`" for w in alt.split(" | ")))
    return " or ".join(out)


def step_options_markdown() -> str:
    """The section's body: per registered step, a heading, its example and its options' table."""
    lines = [
        f"<!-- generated from the step registry (sdckit.pipeline._steps.STEPS) by `{REGENERATE}`; do not edit -->",
        "",
    ]
    for kind, cls in STEPS.items():
        summary = _markdown((cls.__doc__ or "").strip().split("\n\n")[0])
        lines += [f"### `{kind}`", "", summary, "", f"`- {kind}: {cls.example}`", ""]
        lines += ["| option | values | default | meaning |", "| --- | --- | --- | --- |"]
        for opt in cls.options_schema():
            lines.append(
                f"| `{opt.name}` | {_cell(_values(opt.type))} | {_cell(_default(opt.default))} | {_cell(opt.help)} |"
            )
        lines.append("")
    return "\n".join(lines)


def replace_section(text: str, body: str) -> str:
    """``text`` with the part between the markers replaced by ``body`` (the markers kept)."""
    if text.count(START) != 1 or text.count(END) != 1 or text.index(START) > text.index(END):
        raise ValueError(f"the file needs one {START} line followed by one {END} line")
    head, rest = text.split(START)
    _, tail = rest.split(END)
    return f"{head}{START}\n{body.strip()}\n{END}{tail}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m sdckit.app._docs", description=__doc__.splitlines()[0])
    parser.add_argument("path", nargs="?", default="docs/pipeline.md", type=Path)
    parser.add_argument("--check", action="store_true", help="only check that the file is up to date (exit 1 if not)")
    args = parser.parse_args(argv)
    text = args.path.read_text(encoding="utf-8")
    new = replace_section(text, step_options_markdown())
    if args.check:
        if new != text:
            print(f"{args.path}: the step options table is not the registry's; run `{REGENERATE}`.", file=sys.stderr)
            return 1
        return 0
    if new != text:
        args.path.write_text(new, encoding="utf-8")
        print(f"{args.path}: step options table rewritten from the registry.")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
