"""Honest figures: after each of recode, local suppression and MDAV, every plot of the page is of the
state on screen, titled with the keys it uses, and its bars are the release's own figures.

Each state is exported (reproducible), run with the pipeline from the exported file alone, and its
written release measured independently: the risk histogram by :func:`sdckit.risk.individual_risk`
on the released file, the group sizes by counting the released keys by brute force (polars
``group_by``, a missing cell a value of its own), the cells changed by comparing the columns.
"""

from __future__ import annotations

import html
import re
import time
from pathlib import Path
from typing import Any

import polars as pl
import pytest

pytest.importorskip("fastapi", reason="sdckit app needs its extra: pip install 'sdckit[app]'")
pytest.importorskip("httpx", reason="the test client needs httpx")

from fastapi.testclient import TestClient

from sdckit.app import create_app
from sdckit.pipeline import load_config, run_pipeline, write_outputs
from sdckit.risk import individual_risk

DATA = Path(__file__).parents[1] / "data" / "sdcmicro_testdata2.csv"
KEYS = ("urbrur", "roof", "walls", "water", "electcon", "relat", "sex", "age")


def _wait(app: Any) -> None:
    for ws in app.state.sessions.values():
        while ws.job is not None and ws.job.running:
            time.sleep(0.05)


def plots_of(panel: str) -> dict[str, dict[str, Any]]:
    """Every plot of a rendered panel: its title, its keys and its bars ``[(label, value)]``."""
    out = {}
    for m in re.finditer(r'<figure class="plot" data-plot="([^"]+)" data-keys="([^"]*)" data-title="([^"]*)">(.*?)</figure>',
                         panel, re.S):
        bars = [(html.unescape(a), float(b)) for a, b in re.findall(r'<rect [^>]*data-label="([^"]*)" data-value="([^"]*)"', m.group(4))]
        out[m.group(1)] = {"keys": tuple(k for k in m.group(2).split(",") if k), "title": html.unescape(m.group(3)), "bars": bars}
    return out


def figure_now(panel: str, label: str) -> str:
    m = re.search(rf'<tr data-figure="{re.escape(label)}">.*?<td data-col="now"[^>]*>([^<]*)</td>', panel, re.S)
    assert m, label
    return m.group(1).strip()


def check_plots(panel: str, yaml_text: str, tmp: Path) -> dict[str, dict[str, Any]]:
    """Run the exported file and measure its written release; every plot must say the same."""
    path = tmp / "pipeline.yaml"
    out = tmp / "release.csv"
    path.write_text(yaml_text.replace("data: release.csv", f"data: {out}"), encoding="utf-8")
    cfg = load_config(path)
    result = run_pipeline(cfg.replace(output_report=None))
    written = write_outputs(result)
    # within budget: the written file; over budget nothing is written (refused), so the release in memory
    release = pl.read_csv(written["data"], infer_schema_length=None) if "data" in written else result.protected
    assert ("data" in written) == (not result.refused)
    inp = pl.read_csv(DATA)
    qis = list(cfg.quasi_identifiers or ())
    plots = plots_of(panel)
    assert {"risk-input", "risk-release", "groups-input", "groups-release", "loss"} <= set(plots)
    for p in plots.values():
        assert p["keys"] == tuple(qis), p["title"]  # titled with the keys of the state on screen
    risk = individual_risk(release.with_columns(pl.col(c).cast(pl.String) for c in qis), qis,
                           weights="sampling_weight", missing="value")
    assert plots["risk-release"]["bars"] == [(a, float(c)) for a, c in risk.histogram()]
    shown = figure_now(panel, "global risk (mean individual risk)")
    assert shown == f"{100 * risk.global_risk:.3g} %"
    assert f"global risk {shown}" in plots["risk-release"]["title"]
    sizes = release.group_by(qis).agg(pl.len().alias("f")).join(release, on=qis, nulls_equal=True)["f"]
    k = cfg.k
    expected = [(f"groups of {s}", float((sizes == s).sum())) for s in range(1, k)] + [(f"groups of {k}+", float((sizes >= k).sum()))]
    assert plots["groups-release"]["bars"] == expected
    base_risk = individual_risk(inp.with_columns(pl.col(c).cast(pl.String) for c in qis), qis, weights="sampling_weight")
    assert plots["risk-input"]["bars"] == [(a, float(c)) for a, c in base_risk.histogram()]
    loss = dict(plots["loss"]["bars"])
    assert set(loss) == set(release.columns)
    assert loss["sampling_weight"] == 0.0  # a weight goes out as is
    return plots


def test_every_plot_follows_recode_suppression_and_mdav(tmp_path: Path) -> None:
    app = create_app()
    client = TestClient(app, base_url="http://127.0.0.1")
    base = client.get("/").url.path
    client.post(base + "api/load", json={"source": str(DATA)})
    _wait(app)
    roles = {c: "none" for c in ("relat2", "water2", "water3", "represent", "category_count", "hhcivil", "ori_hid")}
    roles |= {c: "quasi_identifier" for c in KEYS} | {"expend": "numeric", "income": "numeric", "savings": "numeric",
                                                      "sampling_weight": "weight"}
    body = {f"role:{c}": r for c, r in roles.items()} | {"k": "3", "budget": "0.05", "reproducible": True, "seed": "7"}
    client.post(base + "api/settings", json=body)
    _wait(app)
    steps = [
        ("recode", "{rules: {age: {breaks: [0, 20, 40, 60, 120]}}}"),
        ("local_suppression", "{k: 3}"),
        ("microaggregate", "{columns: [expend, income, savings], method: mdav, k: 3}"),
    ]
    titles: list[str] = []
    losses: list[dict[str, float]] = []
    for i, (kind, options) in enumerate(steps):
        r = client.post(base + "api/add_step", json={"kind": kind, "options": options, "yaml": True})
        assert r.status_code == 200
        _wait(app)
        panel = client.get(base + "panel").json()["panel"]
        assert 'id="error"' not in panel, panel[:2000]
        step_dir = tmp_path / str(i)
        step_dir.mkdir()
        plots = check_plots(panel, client.get(base + "export/pipeline.yaml").text, step_dir)
        titles.append(plots["risk-release"]["title"])
        losses.append(dict(plots["loss"]["bars"]))
    assert titles[1] != titles[0]  # suppression re-drew the release's risk (it moved from 4.65 % to 0.477 %)
    assert losses[1]["expend"] == 0.0
    assert losses[2]["expend"] > 0.5  # MDAV re-drew the loss plot
