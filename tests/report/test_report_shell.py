"""The report shell: self-contained HTML, the sidecar, the section interface."""

from __future__ import annotations

import json
import re
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
import pytest

from sdckit.report import Report, Section, figure, metrics, paragraph, table, to_jsonable


def _report() -> Report:
    rep = Report("Test report", inputs={"data": "toy"}, parameters={"k": 5}, seed=3)
    fig, ax = plt.subplots()
    ax.plot([0, 1], [0, 1])
    sec = Section("risk", "Risk", data={"q": np.float64(0.25), "sizes": np.arange(3)}, summary="ok")
    sec.add(paragraph("a < b & c"), metrics({"k": 1}), table([("x", 0.5, 1234567)], ["a", "b", "c"]))
    sec.add(figure(fig, caption="a line"))
    rep.add(sec)
    return rep


def test_html_is_self_contained_and_escaped() -> None:
    html = _report().render()
    assert "<svg" in html
    assert "a line" in html
    assert "a &lt; b &amp; c" in html
    assert "1,234,567" in html
    # nothing that a browser would fetch: no src/href to another host, no DOCTYPE pointing to w3.org DTDs
    assert not re.search(r'(src|href)="(https?:)?//', html)
    assert "<!DOCTYPE svg" not in html
    assert "<script" not in html


def test_sidecar_records_everything(tmp_path: Path) -> None:
    page, sidecar = _report().write(tmp_path / "sub" / "out.html")
    assert page.exists()
    assert sidecar.name == "out.json"
    data = json.loads(sidecar.read_text())
    assert data["seed"] == 3
    assert data["parameters"] == {"k": 5}
    assert data["sections"]["risk"]["data"] == {"q": 0.25, "sizes": [0, 1, 2]}
    assert "numpy" in data["versions"]


def test_duplicate_section_ids_are_refused() -> None:
    rep = _report()
    with pytest.raises(ValueError, match="already in the report"):
        rep.add(Section("risk", "Again"))


def test_to_jsonable_handles_numpy_and_nan() -> None:
    assert to_jsonable({"a": np.int64(2), "b": (np.nan, 1.0), "c": np.bool_(True)}) == {
        "a": 2,
        "b": [None, 1.0],
        "c": True,
    }
