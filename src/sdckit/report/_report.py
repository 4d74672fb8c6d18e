"""The report shell: sections in, one self-contained HTML page and a JSON sidecar out.

The interface other subpackages use is small:

* build a :class:`Section` (an id, a title, HTML blocks made with :func:`paragraph`, :func:`table`,
  :func:`metrics` and :func:`figure`, and a ``data`` dict of every figure it shows);
* ``report.add(section)``;
* ``report.write("report.html")`` writes the page and ``report.json`` beside it.

The page has inline CSS and inline SVG plots only: opening it fetches nothing from the network.
"""

from __future__ import annotations

import datetime as _dt
import html
import io
import json
import math
import platform
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any

import numpy as np
from jinja2 import Environment, PackageLoader, select_autoescape

from sdckit._io._outputs import report_files, staged_outputs

__all__ = [
    "Block",
    "Report",
    "Section",
    "figure",
    "metrics",
    "paragraph",
    "table",
    "to_jsonable",
]


@dataclass(frozen=True)
class Block:
    """One piece of a section's body: trusted HTML made by the helpers below (already escaped)."""

    html: str
    kind: str = "html"


def paragraph(text: str, *, note: bool = False) -> Block:
    """A paragraph of plain text (escaped). ``note=True`` renders it as a quieter side note."""
    cls = ' class="note"' if note else ""
    return Block(f"<p{cls}>{html.escape(text)}</p>", "paragraph")


def _fmt(value: Any) -> str:
    if isinstance(value, bool) or value is None:
        return html.escape(str(value))
    if isinstance(value, (int, np.integer)):
        return f"{int(value):,}"
    if isinstance(value, (float, np.floating)):
        v = float(value)
        if math.isnan(v):
            return "–"
        if v != 0 and (abs(v) < 1e-3 or abs(v) >= 1e6):
            return f"{v:.3e}"
        return f"{v:.4g}"
    return html.escape(str(value))


def table(
    rows: Iterable[Sequence[Any]],
    headers: Sequence[str],
    *,
    caption: str | None = None,
) -> Block:
    """A table; numbers are formatted with thousands separators or 4 significant digits."""
    head = "".join(f"<th>{html.escape(h)}</th>" for h in headers)
    body = "".join("<tr>" + "".join(f"<td>{_fmt(v)}</td>" for v in row) + "</tr>" for row in rows)
    cap = f"<caption>{html.escape(caption)}</caption>" if caption else ""
    return Block(f'<table class="data">{cap}<thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>', "table")


def metrics(items: Mapping[str, Any] | Sequence[tuple[str, Any, str]]) -> Block:
    """A row of headline numbers: ``{"k-anonymity": 1}`` or ``[(label, value, unit), ...]``."""
    triples = [(k, v, "") for k, v in items.items()] if isinstance(items, Mapping) else list(items)
    cards = "".join(
        f'<div class="metric"><div class="value">{_fmt(v)}<span class="unit">{html.escape(u)}</span></div>'
        f'<div class="label">{html.escape(label)}</div></div>'
        for label, v, u in triples
    )
    return Block(f'<div class="metrics">{cards}</div>', "metrics")


def figure(fig: Any, *, caption: str = "", alt: str = "") -> Block:
    """Inline a matplotlib figure as SVG (no external resources) and close it."""
    # lazy: start-up time
    import matplotlib.pyplot as plt

    buf = io.StringIO()
    fig.savefig(buf, format="svg", bbox_inches="tight")
    plt.close(fig)
    svg = buf.getvalue()
    svg = svg[svg.find("<svg") :]  # drop the XML prolog and DOCTYPE (they point to w3.org)
    label = html.escape(alt or caption or "figure")
    cap = f"<figcaption>{html.escape(caption)}</figcaption>" if caption else ""
    return Block(f'<figure class="plot" role="img" aria-label="{label}">{svg}{cap}</figure>', "figure")


@dataclass
class Section:
    """One titled part of a report.

    Attributes
    ----------
    id : a short slug, unique in the report (used as the HTML anchor and the JSON key).
    title : the heading shown.
    blocks : the body, in order (see :func:`paragraph`, :func:`table`, :func:`metrics`, :func:`figure`).
    data : every figure the section shows, JSON-serialisable (numpy values are converted).
    summary : one plain sentence for the report's summary (optional).
    """

    id: str
    title: str
    blocks: list[Block] = field(default_factory=list)
    data: dict[str, Any] = field(default_factory=dict)
    summary: str | None = None

    def add(self, *blocks: Block) -> Section:
        """Append blocks; returns the section so calls can be chained."""
        self.blocks.extend(blocks)
        return self


def to_jsonable(value: Any) -> Any:
    """Convert numpy scalars/arrays, tuples, paths and dataclasses with ``to_dict`` to plain JSON."""
    if hasattr(value, "to_dict") and callable(value.to_dict):
        return to_jsonable(value.to_dict())
    if isinstance(value, Mapping):
        return {str(k): to_jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        return [to_jsonable(v) for v in value]
    if isinstance(value, np.ndarray):
        return to_jsonable(value.tolist())
    if isinstance(value, np.bool_):
        return bool(value)
    if isinstance(value, np.integer):
        return int(value)
    if isinstance(value, (float, np.floating)):
        v = float(value)
        return v if math.isfinite(v) else None
    if isinstance(value, Path):
        return str(value)
    return value


def _versions() -> dict[str, str]:
    out = {"python": platform.python_version()}
    for pkg in ("sdckit", "numpy", "scipy", "polars", "narwhals", "matplotlib", "numba", "cryptography"):
        try:
            out[pkg] = metadata.version(pkg)
        except metadata.PackageNotFoundError:
            continue
    return out


class Report:
    """A self-contained HTML report with a JSON sidecar.

    Parameters
    ----------
    title : the page title.
    inputs : what went in (file names, row counts; never microdata).
    parameters : every parameter that shaped the figures (k, budget, t, ...).
    seed : the seed of every random step, recorded so a reader can reproduce the figures.

    Examples
    --------
    >>> from sdckit.report import Report, Section, paragraph
    >>> r = Report("Demo", inputs={"data": "adult"}, parameters={"k": 5}, seed=1)
    >>> r.add(Section("hello", "Hello").add(paragraph("One paragraph.")))
    >>> "Hello" in r.render()
    True
    """

    def __init__(
        self,
        title: str,
        *,
        inputs: Mapping[str, Any] | None = None,
        parameters: Mapping[str, Any] | None = None,
        seed: int | None = None,
    ) -> None:
        self.title = title
        self.inputs = dict(inputs or {})
        self.parameters = dict(parameters or {})
        self.seed = seed
        self.sections: list[Section] = []
        self.created = _dt.datetime.now(_dt.UTC).replace(microsecond=0).isoformat()

    def add(self, section: Section) -> None:
        """Append a section; its id must be new."""
        if any(s.id == section.id for s in self.sections):
            raise ValueError(f"a section with id {section.id!r} is already in the report")
        self.sections.append(section)

    def to_dict(self) -> dict[str, Any]:
        """The sidecar: inputs, parameters, seed, package versions and every section's figures."""
        return to_jsonable(
            {
                "title": self.title,
                "created": self.created,
                "inputs": self.inputs,
                "parameters": self.parameters,
                "seed": self.seed,
                "versions": _versions(),
                "sections": {s.id: {"title": s.title, "summary": s.summary, "data": s.data} for s in self.sections},
            }
        )

    def render(self) -> str:
        """The HTML page as a string."""
        env = Environment(
            loader=PackageLoader("sdckit.report", "templates"),
            autoescape=select_autoescape(["html", "j2"]),
        )
        template = env.get_template("report.html.j2")
        return template.render(
            title=self.title,
            created=self.created,
            inputs=self.inputs,
            parameters=self.parameters,
            seed=self.seed,
            versions=_versions(),
            sections=self.sections,
        )

    def write(self, path: str | Path, *, stage: Any = None) -> tuple[Path, Path]:
        """Write the page to ``path`` and the sidecar beside it (same name, ``.json``), both or neither.

        With ``stage`` (a :class:`sdckit._io.Staging` of a larger run) the two files are renamed
        into place when that run commits; without, when both are written.
        """
        out, sidecar = self.outputs(path)
        page, figures = self.render(), json.dumps(self.to_dict(), indent=2)
        if stage is not None:
            stage.path(out).write_text(page, encoding="utf-8")
            stage.path(sidecar).write_text(figures, encoding="utf-8")
            return out, sidecar
        with staged_outputs() as own:  # renamed into place once both are written
            own.path(out).write_text(page, encoding="utf-8")
            own.path(sidecar).write_text(figures, encoding="utf-8")
        return out, sidecar

    @staticmethod
    def outputs(path: str | Path) -> tuple[Path, Path]:
        """The two files :meth:`write` writes for ``path``: the page and its JSON sidecar."""
        return report_files(path)
