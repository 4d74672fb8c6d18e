"""sdckit compare: every point's figures equal a recount of its written release; the frontier; the file's errors."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pytest
import yaml
from scipy import stats
from typer.testing import CliRunner

from sdckit.cli import app
from sdckit.compare import load_compare, pareto_frontier, parse_compare, run_compare, summary_rows
from sdckit.compare._figures import ReleaseContext, as_numeric, pmse
from sdckit.errors import ConfigError
from sdckit.pipeline import parse_config

pytest.importorskip("opendp")

DATA = Path(__file__).resolve().parent.parent / "data" / "sdcmicro_testdata.csv"
QIS = ["urbrur", "water", "sex", "age"]
NUM = ["expend", "income", "savings"]
CAT = ["urbrur", "water", "sex"]


def _spec_dict(tmp_path: Path, candidates: list[dict[str, Any]], repeat: int = 2) -> dict[str, Any]:
    small = pl.read_csv(DATA).head(150).select([*QIS, *NUM])
    small.write_csv(tmp_path / "small.csv")
    return {
        "input": "small.csv", "quasi_identifiers": QIS, "numeric": NUM, "categorical": CAT, "k": 3, "budget": 0.05,
        "compare": {"repeat": repeat, "output": "out", "report": "cmp.html", "candidates": candidates,
                    "regression": {"outcome": "expend", "predictors": ["income", "sex"]}},
    }


CANDIDATES = [
    {"name": "recode + decoys", "steps": [{"recode": {"rules": {"age": {"breaks": [0, 20, 40, 60, 120]}}}},
                                          {"local_suppression": {"k": 3}}]},
    {"name": "MDAV", "steps": [{"microaggregate": {"k": 3, "restore_moments": False}}]},
    {"name": "DP marginals", "synthesize": {"method": "dp_marginals", "epsilon": 1.0}},
]


def _vectors(frame: pl.DataFrame, ref: pl.DataFrame) -> np.ndarray:
    """The test's own encoding: numeric standardised by the input (a band at its midpoint), categories one-hot / sqrt 2."""
    cols = []
    for c in ["age", *NUM]:
        r = as_numeric(ref[c]).to_numpy()
        x = as_numeric(frame[c]).to_numpy().astype(float)
        x = np.where(np.isnan(x), np.nanmean(r), x)
        cols.append((x - np.nanmean(r)) / np.nanstd(r, ddof=1))
    for c in CAT:
        for level in sorted(ref[c].unique().to_list()):
            cols.append((frame[c].to_numpy() == level) / np.sqrt(2))
    return np.column_stack(cols)


def _recount(draw: Any, inp: pl.DataFrame) -> dict[str, float | None]:
    rel = pl.read_parquet(draw.path)
    n = rel.height
    group = rel.group_by(QIS).len()
    sizes = rel.join(group, on=QIS, how="left", nulls_equal=True)["len"].to_numpy()
    known = draw.known if draw.known is not None else inp
    rel_rows, known_rows = rel.select(QIS).rows(), known.select(QIS).rows()
    consistent = [sum(all(r[j] is None or r[j] == u[j] for j in range(len(QIS))) for r in rel_rows) for u in known_rows]
    x, r = _vectors(inp, inp), _vectors(rel, inp)
    d_rx = np.linalg.norm(r[:, None, :] - x[None, :, :], axis=2)  # released row x input row
    if draw.row_order is None:
        linkage = 0.0
    else:
        own = d_rx[np.arange(n), draw.row_order]
        best = d_rx.min(axis=1)
        ties = (d_rx <= own[:, None] + 1e-9).sum(axis=1)
        linkage = float(np.sum((own <= best + 1e-9) / ties) / n)
    d_xx = np.linalg.norm(x[:, None, :] - x[None, :, :], axis=2)
    np.fill_diagonal(d_xx, np.inf)
    closest = float(np.mean(d_rx.min(axis=0) < d_xx.min(axis=1)))
    marg = [stats.ks_2samp(as_numeric(inp[c]).to_numpy(), as_numeric(rel[c]).drop_nulls().to_numpy()).statistic
            for c in ["age", *NUM] if c in rel.columns]
    for c in CAT:
        a = inp[c].cast(pl.String).fill_null("?").to_list()
        b = rel[c].cast(pl.String).fill_null("?").to_list()
        levels = set(a) | set(b)
        marg.append(0.5 * sum(abs(a.count(v) / len(a) - b.count(v) / len(b)) for v in levels))
    il = None
    if draw.row_order is not None:
        orig = inp[draw.row_order]
        parts = []
        for c in ["age", *NUM]:
            a, b = as_numeric(orig[c]).to_numpy(), as_numeric(rel[c]).to_numpy()
            sd = np.std(a, ddof=1)
            diff = np.where(np.isnan(b), np.sqrt(2) * sd, np.abs(a - b))
            parts.append(diff.mean() / (np.sqrt(2) * sd))
        parts.extend(np.mean([p != q for p, q in zip(orig[c].cast(pl.String).to_list(), rel[c].cast(pl.String).to_list(),
                                                        strict=True)]) for c in CAT)
        il = float(np.mean(parts))

    def ci(frame: pl.DataFrame) -> tuple[np.ndarray, np.ndarray]:
        y = as_numeric(frame["expend"]).to_numpy()
        design = np.column_stack([np.ones(frame.height), as_numeric(frame["income"]).to_numpy(), frame["sex"].to_numpy() == 2])
        beta = np.linalg.solve(design.T @ design, design.T @ y)
        resid = y - design @ beta
        dof = len(y) - 3
        se = np.sqrt(np.diag(resid @ resid / dof * np.linalg.inv(design.T @ design)))
        return beta, stats.t.ppf(0.975, dof) * se

    (b0, h0), (b1, h1) = ci(inp), ci(rel)
    ov = np.minimum(b0 + h0, b1 + h1) - np.maximum(b0 - h0, b1 - h1)
    overlap = float(np.mean(np.clip(0.5 * (ov / (2 * h0) + ov / (2 * h1)), 0, 1)))
    pairs = []
    num_rel = np.column_stack([np.nan_to_num(as_numeric(rel[c]).to_numpy(), nan=float(np.nanmean(as_numeric(rel[c]).to_numpy())))
                               for c in ["age", *NUM]])
    num_inp = np.column_stack([as_numeric(inp[c]).to_numpy() for c in ["age", *NUM]])
    for a in range(4):
        for b in range(a + 1, 4):
            r_in = np.corrcoef(num_inp[:, a], num_inp[:, b])[0, 1]
            r_out = np.corrcoef(num_rel[:, a], num_rel[:, b])[0, 1]
            pairs.append(0.0 if np.isnan(r_out) else abs(r_in - r_out))
    for a in range(3):
        for b in range(a + 1, 3):
            ka = list(zip(inp[CAT[a]].to_list(), inp[CAT[b]].to_list(), strict=True))
            kb = list(zip(rel[CAT[a]].to_list(), rel[CAT[b]].to_list(), strict=True))
            pairs.append(0.5 * sum(abs(ka.count(v) / len(ka) - kb.count(v) / len(kb)) for v in set(ka) | set(kb)))
    return {
        "global_risk": float(np.mean(1.0 / sizes)),  # no weights: r_i = 1 / f_k, the table as the population
        "pairwise_distance": float(np.mean(pairs)),
        "exposure_at_k": float(np.mean(sizes < 3)),
        "consistent_below_k": float(np.mean(np.array(consistent) < 3)),
        "linkage": linkage,
        "closest_share": closest,
        "marginal_distance": float(np.mean(marg)),
        "information_loss": il,
        "ci_overlap": overlap,
    }


@pytest.mark.slow
def test_every_point_equals_a_recount_of_its_written_release(tmp_path: Path) -> None:
    spec = parse_compare(_spec_dict(tmp_path, CANDIDATES), base=tmp_path, source="cmp.yaml")
    result = run_compare(spec, seed=5)
    inp = result.input_frame
    rows = {r["candidate"]: r for r in summary_rows(result)}
    for cres in result.results:
        assert len(cres.draws) == 2
        for draw in cres.draws:
            assert draw.path.exists()
            want = _recount(draw, inp)
            for name, value in want.items():
                got = draw.values[name]
                assert (got is None) == (value is None), (cres.candidate.name, name)
                if value is not None:
                    assert got == pytest.approx(value, abs=1e-9), (cres.candidate.name, name)
            ctx = ReleaseContext(input=inp, release=pl.read_parquet(draw.path), quasi_identifiers=tuple(QIS),
                                 numeric=("age", *NUM), categorical=tuple(CAT), k=3, budget=0.05)
            assert draw.values["pmse"] == pytest.approx(pmse(ctx), rel=1e-6, abs=1e-12)
            assert draw.within_budget == (want["exposure_at_k"] <= 0.05)
        row = rows[cres.candidate.name]
        for name in ("exposure_at_k", "linkage", "pmse"):
            vals = [d.values[name] for d in cres.draws]
            assert row[name]["mean"] == pytest.approx(np.mean(vals))
            assert (row[name]["min"], row[name]["max"]) == (min(vals), max(vals))
    assert rows["DP marginals"]["epsilon"] == pytest.approx(1.0, rel=1e-9)
    assert rows["MDAV"]["epsilon"] is None
    assert rows["recode + decoys"]["within_budget"]
    assert rows["recode + decoys"]["exposure_at_k"]["max"] == 0.0


def test_pareto_frontier_by_brute_force() -> None:
    rng = np.random.default_rng(0)
    pts = {f"p{i}": (float(a), float(b)) for i, (a, b) in enumerate(rng.integers(0, 6, (30, 2)))}
    want = [n for n, (x, y) in pts.items() if not any(x2 <= x and y2 <= y and (x2, y2) != (x, y) for x2, y2 in pts.values())]
    assert pareto_frontier(pts) == want


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"candidates": [{"name": "x", "steps": [], "synthesize": {"method": "dp_tree"}}]}, "exactly one of"),
        ({"candidates": [{"name": "x", "synthesize": {"method": "gan"}}]}, "dp_marginals, dp_tree"),
        ({"candidates": [{"name": "x", "synthesize": {"method": "dp_tree", "epsilon": -1}}]}, "positive number"),
        ({"risk_axis": "speed"}, "not a figure"),
        ({"colour": 1}, "unknown key 'colour'"),
    ],
)
def test_bad_compare_sections_are_refused(tmp_path: Path, change: dict[str, Any], message: str) -> None:
    raw = _spec_dict(tmp_path, CANDIDATES)
    raw["compare"].update(change)
    with pytest.raises(ConfigError, match=message):
        parse_compare(raw, base=tmp_path, source="cmp.yaml")


@pytest.mark.slow
def test_cli_compare_writes_the_map_and_prints_json(tmp_path: Path) -> None:

    raw = _spec_dict(tmp_path, [CANDIDATES[1], CANDIDATES[2]], repeat=1)
    (tmp_path / "cmp.yaml").write_text(yaml.safe_dump(raw), encoding="utf-8")
    r = CliRunner().invoke(app, ["compare", str(tmp_path / "cmp.yaml"), "--json", "--seed", "3"])
    assert r.exit_code == 0, r.output
    payload = json.loads(r.output)
    assert [c["candidate"] for c in payload["candidates"]] == ["MDAV", "DP marginals"]
    page = (tmp_path / "cmp.html").read_text(encoding="utf-8")
    assert "Risk-utility map" in page
    assert "<svg" in page
    sidecar = json.loads((tmp_path / "cmp.json").read_text(encoding="utf-8"))
    assert sidecar["sections"]["map"]["data"]["frontier"] == payload["frontier"]
    assert load_compare(tmp_path / "cmp.yaml").candidates[0].name == "MDAV"


def test_sdckit_run_points_a_compare_section_to_sdckit_compare() -> None:
    with pytest.raises(ConfigError, match="sdckit compare"):
        parse_config({"input": "x.csv", "compare": {"candidates": []}}, source="p.yaml")
