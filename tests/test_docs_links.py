"""Every relative link and every ``docs/...md`` path in README.md and docs/**/*.md exists (no network).

Also: no document sends readers to ``shared/docs``, a folder outside the repository; the
mathematics lives in docs/theory/ (issue 16).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = sorted([ROOT / "README.md", *(ROOT / "docs").rglob("*.md")])
THEORY = ("anonymity.md", "spectral.md", "microaggregation.md")

_FENCE = re.compile(r"^(```|~~~).*?^\1", re.MULTILINE | re.DOTALL)
_INLINE_CODE = re.compile(r"`[^`\n]*`")
_LINK = re.compile(r"!?\[[^\]\n]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
_DOCS_PATH = re.compile(r"(?<![\w/.-])docs/[\w./-]*?\.md\b")
_EXTERNAL = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:")  # http:, https:, mailto:, ...


def _name(path: Path) -> str:
    return str(path.relative_to(ROOT))


def links(text: str) -> list[str]:
    """Targets of the Markdown links and images of ``text``, outside code."""
    prose = _INLINE_CODE.sub("", _FENCE.sub("", text))
    return [m.group(1) for m in _LINK.finditer(prose)]


def relative_targets(text: str) -> list[str]:
    """The link targets that are files of the repository: no scheme, no pure anchor; anchors dropped."""
    out = []
    for target in links(text):
        if _EXTERNAL.match(target) or target.startswith("#"):
            continue
        out.append(target.split("#", 1)[0].split("?", 1)[0])
    return out


def test_extractors_find_what_they_should() -> None:
    text = (
        'See [a](theory/a.md#s2), ![fig](figures/x.svg "t"), [web](https://x.org), [top](#q), '
        "`[not](code.md)` and docs/risk.md.\n```python\nx[0](1)\n```\n"
    )
    assert relative_targets(text) == ["theory/a.md", "figures/x.svg"]
    assert _DOCS_PATH.findall(text) == ["docs/risk.md"]
    assert _DOCS_PATH.findall("shared/docs/risk.md, src/docs/x.md") == []


@pytest.mark.parametrize("doc", DOCS, ids=_name)
def test_relative_links_exist(doc: Path) -> None:
    text = doc.read_text(encoding="utf-8")
    missing = [t for t in relative_targets(text) if not (doc.parent / t).exists()]
    assert not missing, f"{_name(doc)} links to files that do not exist: {missing}"


@pytest.mark.parametrize("doc", DOCS, ids=_name)
def test_docs_paths_exist(doc: Path) -> None:
    text = doc.read_text(encoding="utf-8")
    missing = sorted({p for p in _DOCS_PATH.findall(text) if not (ROOT / p).exists()})
    assert not missing, f"{_name(doc)} names docs files that do not exist: {missing}"


@pytest.mark.parametrize("doc", DOCS, ids=_name)
def test_no_doc_points_outside_the_repository(doc: Path) -> None:
    assert "shared/docs" not in doc.read_text(encoding="utf-8"), (
        f"{_name(doc)} mentions shared/docs, which is not in the repository; cite docs/theory/ instead"
    )


def test_theory_notes_exist_and_are_linked() -> None:
    linked = {
        (doc.parent / t).resolve()
        for doc in DOCS
        if doc.parent != ROOT / "docs" / "theory"
        for t in relative_targets(doc.read_text(encoding="utf-8"))
    }
    for name in THEORY:
        path = ROOT / "docs" / "theory" / name
        assert path.is_file(), f"docs/theory/{name} is missing"
        assert path.resolve() in linked, f"no document outside docs/theory links to docs/theory/{name}"
