"""t-closeness of the release in the report and the sidecar (issue 36), checked against a brute-force
computation: for each group of identical released quasi-identifiers, the equal-distance EMD (half the
L1 distance) of its sensitive distribution from the table's; t is the largest (Li, Li & Venkatasubramanian
2007, the measure pycanon computes)."""

from __future__ import annotations

from collections import Counter, defaultdict
from pathlib import Path

import polars as pl
import pytest

from sdckit.pipeline import parse_config, run_pipeline
from sdckit.report import build_report

DATA = Path(__file__).resolve().parents[1] / "data"


def _brute_t(frame: pl.DataFrame, qis: list[str], sensitive: str) -> float:
    rows = frame.select([*qis, sensitive]).rows()
    table = Counter(r[-1] for r in rows)
    n = len(rows)
    groups: dict[tuple, list] = defaultdict(list)
    for r in rows:
        groups[r[:-1]].append(r[-1])
    worst = 0.0
    for values in groups.values():
        counts = Counter(values)
        d = 0.5 * sum(abs(counts[v] / len(values) - table[v] / n) for v in table)
        worst = max(worst, d)
    return worst


def test_release_t_closeness_in_report_and_sidecar(tmp_path: Path) -> None:
    source = tmp_path / "t2.csv"
    pl.read_csv(DATA / "sdcmicro_testdata2.csv").with_columns(("r" + pl.col("relat").cast(pl.String)).alias("relat")).write_csv(source)
    # relat as text ("r1", ...): a category, so t is the equal-distance EMD
    qis = ["urbrur", "sex", "water"]
    result = run_pipeline(parse_config({
        "input": str(source), "quasi_identifiers": qis, "sensitive": ["relat"], "k": 3, "allow_over_budget": True,
        "steps": [{"local_suppression": {}}], "output": {"report": str(tmp_path / "r.html")},
    }))
    got = result.release_measure.l_diversity["relat"]["t_closeness"]
    assert got == pytest.approx(_brute_t(result.protected, qis, "relat"), abs=1e-12)
    report = build_report(result)
    html = report.html() if hasattr(report, "html") else report.render()
    assert f"t-closeness {got:.4g}" in html
    sidecar = report.to_dict()
    assert str(round(got, 6))[:6] in str(sidecar)
