"""Issue 38: the certificate of local suppression (cells, proven lower bound, gap) reaches the
report and its JSON sidecar, for the decoys and the exact mode, and counts the written file."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import polars as pl
import pytest

from sdckit.pipeline import parse_config, run_pipeline, write_outputs
from sdckit.report._main import build_report

DATA = Path(__file__).resolve().parents[2] / "tests" / "data"
KEYS = ["urbrur", "roof", "walls", "water", "electcon"]


def _find(node: Any, key: str) -> list[Any]:
    if isinstance(node, dict):
        here = [node[key]] if key in node else []
        return here + [x for v in node.values() for x in _find(v, key)]
    if isinstance(node, list):
        return [x for v in node for x in _find(v, key)]
    return []


@pytest.mark.parametrize("method", ["decoys", "optimal"])
def test_certificate_in_report_and_sidecar(method: str, tmp_path: Path) -> None:
    path = DATA / "sdcmicro_testdata.csv"
    raw = {
        "input": str(path),
        "quasi_identifiers": KEYS,
        "k": 3,
        "budget": 0.05,
        "steps": [{"local_suppression": {"method": method, "time_limit": 10}}],
        "output": {"data": str(tmp_path / "out.parquet"), "report": str(tmp_path / "out.html")},
    }
    result = run_pipeline(parse_config(raw))
    written = write_outputs(result, report=build_report(result, verified_on=result.data_output))
    sidecar = json.loads(written["sidecar"].read_text(encoding="utf-8"))
    certs = _find(sidecar, "certificate")
    assert certs, "no certificate in the sidecar"
    cert = certs[0]
    released = pl.read_parquet(written["data"]).select(KEYS)
    known = pl.read_csv(path).select(KEYS)
    hidden = sum(released[c].null_count() for c in KEYS) - sum(known[c].null_count() for c in KEYS)
    # counted on the written file, with the key cells the posterior pass suppressed after the step (its own log)
    passes = [s for s in sidecar["sections"]["release"]["data"]["steps"] if s["kind"] == "posterior_pass"]
    by_pass = sum(v for s in passes for c, v in s["details"]["cells"].items() if c in KEYS)
    assert cert["cells"] + by_pass == hidden
    assert 0 <= cert["lower_bound"] <= cert["cells"]
    assert cert["gap"] == pytest.approx((cert["cells"] - cert["lower_bound"]) / max(1, cert["cells"]), abs=1e-6)
    assert int(released.group_by(KEYS).len()["len"].min()) >= 3
    html = written["report"].read_text(encoding="utf-8")
    assert "Certificate:" in html
    assert f"at least {cert['lower_bound']:,}" in html
