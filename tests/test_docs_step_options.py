"""docs/pipeline.md's table of step options is the step registry's (issue 33): regenerated here from
``STEPS`` and compared with the file, so a new step or option cannot be left out of the docs."""

from __future__ import annotations

from pathlib import Path

import pytest

from sdckit.app._docs import END, REGENERATE, START, main, replace_section, step_options_markdown
from sdckit.pipeline._steps import STEPS

PIPELINE_MD = Path(__file__).resolve().parents[1] / "docs" / "pipeline.md"


def _section(text: str) -> str:
    return text.split(START, 1)[1].split(END, 1)[0].strip()


def test_the_docs_step_options_are_the_registrys() -> None:
    text = PIPELINE_MD.read_text(encoding="utf-8")
    assert text.count(START) == 1, f"docs/pipeline.md needs one {START} ... {END} section"
    assert _section(text) == step_options_markdown().strip(), (
        f"docs/pipeline.md's step options table is not the registry's: regenerate it with `{REGENERATE}` "
        "(from the repository's root) and commit the file."
    )


def test_every_kind_and_option_is_in_the_table() -> None:
    section = _section(PIPELINE_MD.read_text(encoding="utf-8"))
    for kind, cls in STEPS.items():
        assert f"### `{kind}`" in section
        part = section.split(f"### `{kind}`", 1)[1].split("\n### ", 1)[0]
        rows = [line for line in part.splitlines() if line.startswith("| `")]
        assert [row.split("`")[1] for row in rows] == [o.name for o in cls.options_schema()], kind
        assert cls.example in part


def test_the_generator_rewrites_only_its_section_and_checks(tmp_path: Path) -> None:
    doc = tmp_path / "pipeline.md"
    doc.write_text(f"# Title\n\nbefore\n\n{START}\nold table\n{END}\n\nafter\n", encoding="utf-8")
    assert main([str(doc), "--check"]) == 1
    assert main([str(doc)]) == 0
    text = doc.read_text(encoding="utf-8")
    assert text.startswith("# Title\n\nbefore\n\n")
    assert text.endswith(f"{END}\n\nafter\n")
    assert "old table" not in text
    assert main([str(doc), "--check"]) == 0
    with pytest.raises(ValueError, match="step-options:start"):
        replace_section("no markers", "body")
