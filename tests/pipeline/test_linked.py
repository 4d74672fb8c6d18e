"""Linked columns: released columns that reveal a key are counted as keys (or suppressed with it).

sdcMicro's testdata2 carries coarser copies of its keys (``relat2`` of ``relat``, ``water2`` and
``water3`` of ``water``). Released as ``keep``, they are found on the data and the release counts
them: every person has at least k released rows consistent with the person's keys *and* copies,
checked here by a brute-force count over all pairs (independent of the pipeline's own count).
"""

from __future__ import annotations

import json
import math
from collections import Counter
from pathlib import Path

import numpy as np
import polars as pl
import pytest
import yaml
from typer.testing import CliRunner

from sdckit.cli import app
from sdckit.pipeline import parse_config, run_pipeline
from sdckit.risk._measures._linked import find_linked_columns, uncertainty_coefficient

DATA = Path(__file__).resolve().parents[1] / "data" / "sdcmicro_testdata2.csv"
KEYS = ["urbrur", "roof", "walls", "water", "electcon", "relat", "sex"]
COPIES = ["relat2", "water2", "water3"]


def _config(**extra: object) -> object:
    raw = {
        "input": str(DATA), "quasi_identifiers": KEYS, "keep": COPIES, "numeric": ["income"], "k": 3,
        "budget": 0.05, "identifiers": ["ori_hid"], "reproducible": True, "seed": 3,
        "steps": [{"local_suppression": {}}], "output": {"data": None, "report": None},
    }
    raw.update(extra)
    return parse_config(raw)


def _brute_consistent(release: pl.DataFrame, truth: pl.DataFrame, columns: list[str]) -> np.ndarray:
    """Per person, released rows whose every cell is missing or equals the person's value (all pairs)."""
    rel = [tuple(r) for r in release.select(columns).iter_rows()]
    out = []
    for person in truth.select(columns).iter_rows():
        out.append(sum(all(c is None or c == v for c, v in zip(row, person, strict=True)) for row in rel))
    return np.asarray(out)


def test_copies_of_keys_are_found_on_the_data() -> None:
    frame = pl.read_csv(DATA)
    found = {c.column: c.keys for c in find_linked_columns(frame, KEYS, [*COPIES, "age", "income", "expend"])}
    assert found == {"relat2": ("relat",), "water2": ("water",), "water3": ("water",)}


def test_uncertainty_coefficient_against_its_definition() -> None:
    rng = np.random.default_rng(0)
    q = rng.integers(0, 4, 5000)
    c = q // 2  # a coarser copy: I(q; c) = H(c)
    hq = -sum(p * math.log2(p) for p in (np.bincount(q) / q.size))
    hc = -sum(p * math.log2(p) for p in (np.bincount(c) / c.size))
    bias = (4 - 1) * (2 - 1) / (2 * q.size * math.log(2))
    u = uncertainty_coefficient(pl.Series(q), pl.Series(c))
    assert u == pytest.approx((hc - bias) / hq, abs=1e-9)
    assert uncertainty_coefficient(pl.Series(q), pl.Series(q)) > 0.99  # a copy reveals all
    noise = rng.integers(0, 4, 5000)
    assert uncertainty_coefficient(pl.Series(q), pl.Series(noise)) < 0.01  # independent: nothing
    # many values on few rows: the bias correction keeps a near-unique column from looking like a copy
    assert uncertainty_coefficient(pl.Series(q[:60]), pl.Series(np.arange(60))) == 0.0
    assert Counter(c.tolist()).keys() == {0, 1}


@pytest.mark.parametrize("linked_as", ["key", "ghost"])
def test_testdata2_release_counts_the_copies(linked_as: str) -> None:
    result = run_pipeline(_config(linked_as=linked_as))
    assert set(result.linked.names) == set(COPIES)
    release = result.release_measure
    assert set(COPIES) <= set(release.quasi_identifiers)  # the headline counts them
    truth = pl.read_csv(DATA).select([*KEYS, *COPIES])
    counts = _brute_consistent(result.protected, truth, [*KEYS, *COPIES])
    # every person has at least k consistent rows counting the copies, and every released row >= 2 twins
    assert counts.min() >= 3
    sizes = result.protected.select(pl.len().over([*KEYS, *COPIES]))
    assert int(sizes.to_series().min()) >= 3
    if result.refused:  # allowed, but only for a stated reason: here income (released unmasked) tells the
        # people of a mixed group apart, which the posterior on a person's row measures
        assert release.exposure_at_k + result.posterior.share_above > release.budget
    assert release.consistent_below_k == pytest.approx(float(np.mean(counts < 3)))


def test_without_linking_the_copies_undo_the_suppression() -> None:
    # the problem the linking fixes: the same release, the copies not counted, lets the copies single people out
    # (with the posterior pass off: it would blank the copies of the mixed groups, the attacker reading them)
    result = run_pipeline(_config(linked_threshold=None, posterior_pass=False))
    assert result.linked.names == ()
    truth = pl.read_csv(DATA).select([*KEYS, *COPIES])
    counts = _brute_consistent(result.protected, truth, [*KEYS, *COPIES])
    assert result.release_measure.consistent_below_k == 0.0  # the headline sees only the keys
    assert np.mean(counts < 3) > 0.2  # counting the copies, many users have fewer than 3 rows


def test_declared_link_must_name_a_keep_column_and_keys() -> None:
    with pytest.raises(Exception, match="not a keep column"):
        run_pipeline(_config(linked={"age": ["relat"]}))
    with pytest.raises(Exception, match="not a quasi-identifier"):
        run_pipeline(_config(linked={"relat2": ["hhcivil"]}))


def test_wider_attacker_scenario_is_measured() -> None:
    result = run_pipeline(_config(attacker_knows=["hhcivil"], keep=[*COPIES, "hhcivil"], linked_threshold=0.9))
    names = [s.name for s in result.scenarios]
    assert len(names) == 2
    wide = result.scenarios[1]
    assert wide.extra == ("hhcivil",)
    truth = pl.read_csv(DATA)
    cols = list(wide.columns)
    counts = _brute_consistent(result.protected, truth.select(cols), cols)
    assert wide.consistent_below_k == pytest.approx(float(np.mean(counts < 3)))


def test_linked_columns_and_the_wider_attacker_are_named_in_the_console_and_the_sidecar(tmp_path: Path) -> None:
    pipeline = tmp_path / "testdata2.yaml"
    pipeline.write_text(yaml.safe_dump({
        "input": str(DATA), "quasi_identifiers": KEYS, "keep": [*COPIES, "hhcivil"], "k": 3, "budget": 0.05,
        "identifiers": ["ori_hid"], "attacker_knows": ["hhcivil"], "linked_threshold": 0.9,
        "linked": {"relat2": ["relat"], "water2": ["water"], "water3": ["water"]},
        "steps": [{"local_suppression": {}}],
        "output": {"data": str(tmp_path / "release.csv"), "report": str(tmp_path / "report.html")},
    }), encoding="utf-8")
    r = CliRunner().invoke(app, ["run", str(pipeline)])
    assert r.exit_code in (0, 3), r.output
    text = " ".join(r.output.split())
    assert "Linked columns counted as quasi-identifiers" in text
    assert "relat2 (reveals relat" in text
    assert "Wider attacker (keys + hhcivil)" in text
    assert "The guarantee assumes the attacker knows a person's urbrur" in text
    data = json.loads((tmp_path / "report.json").read_text(encoding="utf-8"))["sections"]["release_check"]["data"]
    assert {c["column"] for c in data["linked"]["columns"]} == set(COPIES)
    assert data["scenarios"][1]["extra_columns"] == ["hhcivil"]
    assert data["row_posterior"]["k"] == 3


def _u_by_hand(q: list[object], c: list[object]) -> float:
    """U(q | c) from its definition, Miller-Madow corrected, in plain Python."""
    n = len(q)

    def h(values: list[object]) -> float:
        return -sum(m / n * math.log2(m / n) for m in Counter(values).values())

    mutual = h(q) + h(c) - h(list(zip(q, c, strict=True)))
    bias = (len(set(q)) - 1) * (len(set(c)) - 1) / (2 * n * math.log(2))
    return max(0.0, min(1.0, (mutual - bias) / h(q)))


def test_a_household_amount_is_one_observation_per_household() -> None:
    """examples/data/households.csv: income is drawn per household independently of region, and shared by the
    members with their region. Counted per row it looks like a copy of region (each amount seen 2-3 times with
    one region); counted once per household (as the pipeline does with ``household:``) it reveals nothing,
    while a real copy of the region is still found."""
    frame = pl.read_csv(Path(__file__).resolve().parents[2] / "examples" / "data" / "households.csv")
    frame = frame.with_columns((pl.col("region") * 10).alias("region_copy"))
    per_row = uncertainty_coefficient(frame["region"], frame["income"])
    assert per_row > 0.3  # the artefact: linked by the threshold when members are counted as observations
    one = frame.unique(["hid"], keep="first", maintain_order=True)
    by_hand = _u_by_hand(one["region"].to_list(), one["income"].to_list())
    assert by_hand < 0.05
    assert uncertainty_coefficient(frame["region"], frame["income"], frame["hid"]) == pytest.approx(by_hand, abs=1e-12)
    found = {c.column: c.keys for c in find_linked_columns(frame, ["region", "district", "hsize", "age_group"],
                                                           ["income", "region_copy"], units="hid")}
    assert set(found) == {"region_copy"}
    assert "region" in found["region_copy"]
    assert {c.column for c in find_linked_columns(frame, ["region"], ["income"])} == {"income"}  # without units
