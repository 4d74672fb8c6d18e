"""Issue 21, done when: on the written files of pipelines on adult.yaml, sdcMicro's testdata and
free1, an independent count (plain polars and Python, not sdckit's counter) finds every released row
in a group of at least k identical rows, the rows not in input order, and the consistent-count
figure the report states; and the seed-recovery attack fails with the defaults."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pytest
import yaml

from sdckit.pipeline import PipelineResult, parse_config, run_pipeline, write_outputs
from sdckit.report._main import build_report

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "data"
TESTDATA_KEYS = ["urbrur", "roof", "walls", "water", "electcon", "relat", "sex", "age"]
FREE1_KEYS = ["REGION", "SEX", "AGE", "MARSTAT", "KINDPERS", "EDUC1", "ETNI"]


def identical_group_sizes(frame: pl.DataFrame, keys: list[str]) -> np.ndarray:
    """Per row, the rows identical to it on ``keys``: plain polars (a null is a value, grouped together)."""
    return np.asarray(frame.select(pl.len().over(keys).alias("n"))["n"].to_numpy())


def consistent_counts_plain(known: list[tuple[Any, ...]], released: list[tuple[Any, ...]]) -> list[int]:
    """Per user, the released rows equal to the user's values wherever the released cell is present:
    plain Python, the released rows grouped by their missing pattern."""
    patterns: dict[tuple[bool, ...], Counter[tuple[Any, ...]]] = {}
    for row in released:
        mask = tuple(v is None for v in row)
        patterns.setdefault(mask, Counter())[tuple(v for v in row if v is not None)] += 1
    return [
        sum(c[tuple(v for v, m in zip(user, mask, strict=True) if not m)] for mask, c in patterns.items())
        for user in known
    ]


def check_written(written: dict[str, Path], known: pl.DataFrame, keys: list[str], k: int, budget: float) -> None:
    released = pl.read_parquet(written["data"])
    sizes = identical_group_sizes(released, keys)
    sidecar = json.loads(written["sidecar"].read_text(encoding="utf-8"))
    stated = sidecar["sections"]["release_check"]["data"]["release"]
    assert float(np.mean(sizes < k)) == pytest.approx(stated["exposure_at_k"])
    assert stated["exposure_at_k"] <= budget
    assert stated["missing_semantics"] == "value"
    counts = consistent_counts_plain(
        [tuple(r) for r in known.select(keys).iter_rows()],
        [tuple(r) for r in released.select([pl.col(c).cast(known.schema[c]) for c in keys]).iter_rows()],
    )
    assert stated["consistent_below_k"] == pytest.approx(sum(c < k for c in counts) / len(counts))
    assert stated["consistent_n_one"] == sum(c == 1 for c in counts)
    # not in the input's order: the released rows do not follow the known rows position by position
    same = released.select(keys).with_columns(pl.all().cast(pl.String)) == known.select(keys).with_columns(
        pl.all().cast(pl.String)
    )
    assert same.select(pl.all_horizontal(pl.all().fill_null(False))).to_series().mean() < 0.9  # type: ignore[operator]
    assert sidecar["parameters"]["seed"] is None
    assert sidecar["seed"] is None


@pytest.mark.parametrize(
    ("name", "path", "keys", "read"),
    [
        ("testdata", DATA / "sdcmicro_testdata.csv", TESTDATA_KEYS, {}),
        ("free1", DATA / "muargus_free1.csv.gz", FREE1_KEYS, {}),
    ],
)
def test_sdcmicro_data_pipelines_release_identical_rows(
    name: str, path: Path, keys: list[str], read: dict[str, Any], tmp_path: Path
) -> None:
    raw = {
        "input": str(path),
        "quasi_identifiers": keys,
        "k": 3,
        "budget": 0.05,
        "steps": [{"local_suppression": {}}],
        "output": {"data": str(tmp_path / f"{name}.parquet"), "report": str(tmp_path / f"{name}.html")},
    }
    result = run_pipeline(parse_config(raw))
    assert not result.refused
    written = write_outputs(result, report=build_report(result, verified_on=result.data_output))
    check_written(written, pl.read_csv(path).select(keys), keys, 3, 0.05)
    assert result.release_measure is not None
    assert result.release_measure.exposure_at_k == 0.0


def test_adult_pipeline_releases_identical_rows(adult_example_written: tuple[PipelineResult, dict[str, Path]]) -> None:
    from sdckit.anonymize import GlobalRecoder
    from sdckit.datasets import load_adult

    raw = yaml.safe_load((ROOT / "examples" / "pipelines" / "adult.yaml").read_text(encoding="utf-8"))
    _, written = adult_example_written  # the example as it is, written as Parquet with its report
    keys = list(raw["quasi_identifiers"])
    rules = raw["steps"][0]["recode"]["rules"]
    known = GlobalRecoder(rules=rules).fit_transform(load_adult()).select(keys)  # the public recoding
    check_written(written, known, keys, 5, 0.05)


def test_the_seed_recovery_attack_fails_with_the_defaults(tmp_path: Path) -> None:
    """The attack of issue 21: re-run the pipeline on the public original with the seed it used (the
    documented default, or the seed in the sidecar) and read the random draws off the replay: which
    released row is which input row (then which rows are decoys), which records PRAM changed. With
    a known seed the replay is the release itself, so the attack is perfect (the test can fail);
    with the defaults (OS entropy, rows shuffled, no seed anywhere) it does no better than chance.
    A row id is kept in the release only so the test knows the truth."""
    path = DATA / "sdcmicro_testdata.csv"
    keys = TESTDATA_KEYS[:7]
    original = pl.read_csv(path).with_row_index("row_id").with_columns(pl.col("row_id").cast(pl.Int64))
    source = tmp_path / "attack_input.parquet"
    original.write_parquet(source)
    base = {"input": str(source), "quasi_identifiers": keys, "keep": ["row_id", "hhcivil"], "k": 3,
            "budget": 0.05, "steps": [{"local_suppression": {}}, {"pram": {"columns": ["hhcivil"], "pd": 0.8}}]}

    def run(extra: dict[str, Any]) -> pl.DataFrame:
        return run_pipeline(parse_config({**base, **extra})).protected

    def attack(actual: pl.DataFrame, guess_seed: int) -> tuple[float, float, float]:
        """(share of rows whose input row the replay names right, precision of the PRAM guess, PRAM base rate)."""
        replay = run({"reproducible": True, "seed": guess_seed})
        linked = float((replay["row_id"] == actual["row_id"]).mean())  # type: ignore[arg-type]
        truth = original["hhcivil"].to_numpy()
        pram = actual["hhcivil"].to_numpy() != truth[actual["row_id"].to_numpy()]  # the truth, by the id
        # the attacker's guess: a released row was PRAM'd when the replay's row there was
        guess = replay["hhcivil"].to_numpy() != truth[replay["row_id"].to_numpy()]
        return linked, float(pram[guess].mean()), float(pram.mean())

    known_seed = 20261130
    leaked = run({"reproducible": True, "seed": known_seed})
    linked, precision, rate = attack(leaked, known_seed)
    assert linked == 1.0
    assert precision == 1.0 > rate
    secret = run({})  # the defaults
    n = original.height
    for guess in (known_seed, known_seed + 1, 0):
        linked, precision, rate = attack(secret, guess)
        assert linked * n <= 10  # a random permutation has 1 fixed point on average
        assert abs(precision - rate) < 4 * np.sqrt(rate * (1 - rate) / (n * rate)) + 0.01
