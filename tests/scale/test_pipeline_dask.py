"""Local suppression and the release pipeline on Dask (and a polars LazyFrame): distributed passes,
the in-memory guarantee, Parquet part files, and only group tables at the driver (counted by a
counting scheduler, not by sdckit)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pytest

dd = pytest.importorskip("dask.dataframe", reason="dask[dataframe] is not installed (pip install sdckit[scale])")
import dask  # noqa: E402

from sdckit.anonymize import LocalSuppressor  # noqa: E402
from sdckit.errors import ConfigError, ParameterError  # noqa: E402
from sdckit.pipeline import parse_config, run_distributed, run_pipeline, write_distributed  # noqa: E402

from .conftest import people_table  # noqa: E402

KEYS = ["region", "sex", "band"]
K = 8


@pytest.fixture(autouse=True)
def _synchronous() -> Any:
    with dask.config.set(scheduler="synchronous"):  # one thread: the machine is shared
        yield


@pytest.fixture(scope="module")
def people() -> pl.DataFrame:
    return people_table(2_000, 20261202)


def _dask(frame: pl.DataFrame, parts: int = 4) -> Any:
    return dd.from_pandas(frame.to_pandas(), npartitions=parts)


def _release_groups(frame: pl.DataFrame) -> pl.DataFrame:
    return frame.group_by(KEYS).len().sort(KEYS, nulls_last=True)


def _check_cells(original: pl.DataFrame, released: pl.DataFrame) -> int:
    """Every id once; each key cell either its original value or missing; the payload untouched.
    Returns the cells newly missing (an independent count of the suppression)."""
    joined = original.join(released, on="id", how="full", suffix="_r")
    assert joined.height == original.height == released.height
    assert joined["hours"].equals(joined["hours_r"])
    lost = 0
    for c in KEYS:
        kept = joined[f"{c}_r"].is_not_null()
        assert (joined.filter(kept)[c] == joined.filter(kept)[f"{c}_r"]).all()
        lost += int((joined[c].is_not_null() & joined[f"{c}_r"].is_null()).sum())
    return lost


def test_suppression_on_dask_equals_the_in_memory_release(people: pl.DataFrame, dask_driver_rows: Any) -> None:
    in_memory = LocalSuppressor(k=K, columns=KEYS, random_state=7)
    here = in_memory.fit_transform(people)
    ddf = _dask(people)
    n_groups = people.group_by(KEYS).len().height  # counted by polars, not by sdckit
    assert people.group_by(KEYS).len()["len"].min() < K  # there is something to suppress
    model = LocalSuppressor(k=K, columns=KEYS, random_state=7).fit(ddf)
    out = model.transform(ddf)
    assert isinstance(out, dd.DataFrame)  # still lazy
    # the passes brought the input's group table (one row per group) and the small groups of the release (none)
    assert dask_driver_rows.rows == n_groups
    assert model.n_passes_ == 2
    released = pl.from_pandas(out.compute())
    assert _release_groups(released)["len"].min() >= K  # every row identical to >= K - 1 others
    # the very groups of the in-memory release (the same decoy rounds on the same table), the same cells
    assert _release_groups(released).equals(_release_groups(here))
    assert _check_cells(people, released) == model.n_suppressed_ == in_memory.n_suppressed_ > 0
    assert model.changes_ == in_memory.changes_


def test_suppression_on_a_polars_lazyframe_stays_lazy(people: pl.DataFrame) -> None:
    in_memory = LocalSuppressor(k=K, columns=KEYS, random_state=3).fit(people)
    model = LocalSuppressor(k=K, columns=KEYS, random_state=3)
    out = model.fit_transform(people.lazy())
    assert isinstance(out, pl.LazyFrame)
    released = out.collect()
    assert _release_groups(released)["len"].min() >= K
    assert _release_groups(released).equals(_release_groups(in_memory.transform(people)))
    assert _check_cells(people, released) == model.n_suppressed_ == in_memory.n_suppressed_


def test_suppression_on_dask_draws_fresh_decoys_by_default(people: pl.DataFrame) -> None:
    ddf = _dask(people)
    releases = [pl.from_pandas(LocalSuppressor(k=K, columns=KEYS).fit_transform(ddf).compute()) for _ in range(2)]
    for released in releases:
        assert _release_groups(released)["len"].min() >= K
    # OS entropy: which rows become decoys differs between runs (equal by chance with negligible probability)
    a, b = (r.sort("id").select(KEYS) for r in releases)
    assert not a.equals(b)


def test_suppression_on_dask_refuses_what_needs_every_row(people: pl.DataFrame) -> None:
    ddf = _dask(people)
    with pytest.raises(ParameterError, match="method='decoys'"):
        LocalSuppressor(k=K, columns=KEYS, method="sdcmicro").fit(ddf)
    model = LocalSuppressor(k=K, columns=KEYS, random_state=1).fit(ddf)
    again = model.transform(_dask(people, parts=3))  # the same table, another frame: recognised by its group table
    assert _release_groups(pl.from_pandas(again.compute()))["len"].min() >= K
    with pytest.raises(ParameterError, match="another table"):
        model.transform(_dask(people.head(1_500)))


def _config(tmp_path: Path, **extra: Any) -> Any:
    return parse_config(
        {
            "quasi_identifiers": KEYS, "keep": ["hours"], "identifiers": ["id"], "k": K, "budget": 0.0,
            "steps": [{"local_suppression": {}}],
            "output": {"data": str(tmp_path / "release.parquet"), "report": str(tmp_path / "report.html")},
            **extra,
        }
    )


def test_pipeline_on_dask_writes_parquet_parts_measured_as_written(
    people: pl.DataFrame, tmp_path: Path, dask_driver_rows: Any
) -> None:
    ddf = _dask(people.with_columns(pl.col("id").alias("row")), parts=4)
    cfg = _config(tmp_path, keep=["hours", "row"])
    result = run_distributed(cfg, ddf)
    assert isinstance(result.release, dd.DataFrame)
    # only group counts so far, and the linked-column search's aggregates (the entropy of each key, each
    # keep column and each pair), a row per partition each at most
    keep = len(cfg.keep or ())
    searched = (len(KEYS) + keep + len(KEYS) * keep) * ddf.npartitions
    assert dask_driver_rows.rows <= people.group_by(KEYS).len().height + searched
    written = write_distributed(result)
    assert written.path == tmp_path / "release.parquet"
    assert not written.refused
    assert len(written.files) == result.release.npartitions > 1  # the workers wrote one part per partition
    back = pl.read_parquet(written.path / "*.parquet")  # an independent read of the parts
    assert set(back.columns) == {*KEYS, "hours", "row"}  # id has no releasing role
    sizes = back.group_by(KEYS).len()
    assert written.measure["n_rows"] == back.height == people.height
    assert written.measure["k_anonymity"] == sizes["len"].min() >= K
    assert written.measure["n_groups"] == sizes.height
    assert written.measure["exposure_at_k"] == 0.0
    assert written.within_budget
    assert written.measure["n_missing_cells"] == sum(back[c].null_count() for c in KEYS)
    assert not back["row"].equals(pl.Series("row", np.arange(people.height)))  # shuffled
    assert sorted(back["row"].to_list()) == list(range(people.height))  # every row, once
    log = result.steps[0]
    assert log.details["n_passes"] == 2
    assert "2 distributed pass(es)" in log.description
    assert (tmp_path / "report.json").is_file()
    assert (written.path / "_sdckit_release.json").is_file()
    # the whole run, writing included: the group table, and the shuffle's sort samples a few keys per
    # partition to split the sorted range (Dask's quantiles), the written release's rows of figures, and the
    # linked-column search's aggregates; the data never
    assert dask_driver_rows.rows <= people.group_by(KEYS).len().height + 8 * result.release.npartitions + searched


def test_pipeline_on_dask_refuses_over_budget_and_writes_nothing(people: pl.DataFrame, tmp_path: Path) -> None:
    cfg = _config(tmp_path, steps=[])
    written = write_distributed(run_distributed(cfg, _dask(people)))
    assert written.refused
    assert written.path is None
    assert written.measure["exposure_at_k"] > 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["report.json"]  # no data, no temporary directory


def test_a_directory_the_user_owns_is_refused_before_any_work_and_never_removed(
    people: pl.DataFrame, tmp_path: Path
) -> None:
    from sdckit.pipeline import check_pipeline_outputs

    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "notes.txt").write_text("not a release")
    with pytest.raises(ConfigError, match="not a release sdckit wrote"):  # the CLI's check, before the run
        check_pipeline_outputs(_config(tmp_path, engine="dask", output={"data": str(tmp_path / "mine")}))
    # an earlier release set aside when a run is refused: a .stale the user owns stays as it is
    write_distributed(run_distributed(_config(tmp_path), _dask(people)))
    (tmp_path / "release.parquet.stale").mkdir()
    (tmp_path / "release.parquet.stale" / "keep.txt").write_text("mine")
    refused = write_distributed(run_distributed(_config(tmp_path, steps=[]), _dask(people)))
    assert refused.refused
    assert refused.set_aside is not None
    assert refused.set_aside.name.startswith("release.parquet.stale-")
    assert (refused.set_aside / "_sdckit_release.json").is_file()
    assert (tmp_path / "release.parquet.stale" / "keep.txt").read_text() == "mine"
    assert not (tmp_path / "release.parquet").exists()


def test_pipeline_on_dask_reads_the_input_and_names_steps_it_cannot_run(people: pl.DataFrame, tmp_path: Path) -> None:
    source = tmp_path / "people.parquet"
    people.write_parquet(source)
    cfg = _config(tmp_path, input=str(source), engine="dask", partitions=3)
    written = write_distributed(run_distributed(cfg))
    assert len(written.files) > 1
    assert written.measure["k_anonymity"] >= K
    with pytest.raises(ConfigError, match=r"steps\[0\]\.microaggregate does not run on a dask frame.*distributed_microaggregate"):
        run_distributed(_config(tmp_path, steps=[{"microaggregate": {"columns": ["hours"]}}]), _dask(people))
    with pytest.raises(ConfigError, match="method: decoys"):
        run_distributed(_config(tmp_path, steps=[{"local_suppression": {"method": "sdcmicro"}}]), _dask(people))
    with pytest.raises(ConfigError, match="run_distributed"):
        run_pipeline(cfg)
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "notes.txt").write_text("not a release")
    with pytest.raises(ConfigError, match="not a release sdckit wrote"):
        write_distributed(run_distributed(_config(tmp_path, output={"data": str(tmp_path / "mine")}), _dask(people)))
    assert (tmp_path / "mine" / "notes.txt").read_text() == "not a release"


@pytest.mark.parametrize("semantics", ["value", "wildcard"])
def test_written_release_measures_as_the_in_memory_release_check(
    people: pl.DataFrame, tmp_path: Path, semantics: str
) -> None:
    from sdckit.risk import measure_release

    rng = np.random.default_rng(5)
    data = people.with_columns(pl.Series("w", rng.uniform(50, 150, people.height)))
    cfg = _config(tmp_path, keep=["hours"], weight=["w"], missing_semantics=semantics, budget=1.0,
                  steps=[{"local_suppression": {"k": 3}}])
    written = write_distributed(run_distributed(cfg, _dask(data)))
    back = pl.read_parquet(written.path / "*.parquet")
    here = measure_release(back, quasi_identifiers=KEYS, k=K, budget=1.0, weights="w", missing_semantics=semantics)
    m = written.measure
    assert m["n_rows"] == here.n
    assert m["k_anonymity"] == here.k_anonymity
    assert m["n_groups"] == here.n_groups
    assert m["n_unique"] == here.n_unique
    assert m["n_missing_cells"] == here.n_missing_cells
    assert m["exposure_at_k"] == pytest.approx(here.exposure_at_k, abs=1e-12)
    assert m["population_exposure_at_k"] == pytest.approx(here.population_exposure_at_k, rel=1e-9)
    assert here.individual_risk is not None
    assert m["expected_reidentifications"] == pytest.approx(here.individual_risk["expected_reidentifications"], rel=1e-9)
    if semantics == "wildcard":
        assert m["exposure_missing_as_value"] == pytest.approx(here.exposure_missing_as_value, abs=1e-12)
        assert m["exposure_at_k"] < m["exposure_missing_as_value"]  # a missing cell matching anything helps


def test_sdckit_run_with_engine_dask(people: pl.DataFrame, tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from sdckit.cli import app

    source = tmp_path / "people.parquet"
    people.write_parquet(source)
    pipeline = tmp_path / "pipeline.yaml"
    pipeline.write_text(
        f"input: {source.name}\nengine: dask\npartitions: 2\nquasi_identifiers: [region, sex, band]\n"
        f"keep: [hours]\nk: {K}\nbudget: 0.0\nsteps:\n  - local_suppression: {{}}\n"
        "output: {data: out/release.parquet, report: null}\n"
    )
    got = CliRunner().invoke(app, ["run", str(pipeline), "--json"])
    assert got.exit_code == 0, got.output
    payload = json.loads(got.output)
    assert payload["engine"] == "dask"
    assert payload["refused"] is False
    back = pl.read_parquet(tmp_path / "out" / "release.parquet" / "*.parquet")
    assert payload["release"]["n_rows"] == back.height == people.height
    assert payload["parts"] == len(list((tmp_path / "out" / "release.parquet").glob("*.parquet"))) > 1
    pipeline.write_text(pipeline.read_text().replace("  - local_suppression: {}\n", "  []\n").replace("steps:\n  []", "steps: []"))
    over = CliRunner().invoke(app, ["run", str(pipeline)])
    assert over.exit_code == 3  # ExitCode.REFUSED
    assert "Refused" in over.output
    assert (tmp_path / "out" / "release.parquet.stale").is_dir()  # the earlier release set aside, not this one
    assert not (tmp_path / "out" / "release.parquet").exists()


def test_a_keep_column_that_reveals_a_key_counts_as_a_key_on_dask_as_in_memory(
    people: pl.DataFrame, tmp_path: Path, dask_driver_rows: Any
) -> None:
    """Issue 34 on a distributed frame: a released copy of a key (``zone``, a coarser ``region``) is
    found from grouped aggregates (U equal to the in-memory U, computed here by hand from the counts),
    counted as a key by local suppression and the measure, and said; a few rows reach the driver."""
    import math

    from sdckit.pipeline._linked import link_columns

    zone = pl.when(pl.col("region").is_in(["north", "east"])).then(pl.lit("ne")).when(pl.col("region").is_null()).then(None).otherwise(pl.lit("sw"))
    data = people.with_columns(zone.alias("zone"))
    cfg = _config(tmp_path, keep=["hours", "zone"], budget=1.0)
    before = dask_driver_rows.rows
    result = run_distributed(cfg, _dask(data))
    assert result.linked is not None
    assert result.linked.names == ("zone",)
    assert "zone" in result.roles.quasi_identifiers
    # U(region | zone) by hand: entropies of the counts (a missing region its own value), Miller-Madow bias
    def h(cols: list[str]) -> tuple[float, int]:
        n = data.group_by(cols).len()["len"].to_numpy() / data.height
        return float(-(n * np.log2(n)).sum()), len(n)

    (hq, dq), (hc, dc), (hqc, _) = h(["region"]), h(["zone"]), h(["region", "zone"])
    by_hand = (hq + hc - hqc - (dq - 1) * (dc - 1) / (2 * data.height * math.log(2))) / hq
    got = dict(zip(result.linked.columns[0].keys, result.linked.columns[0].coefficients, strict=True))
    assert got["region"] == pytest.approx(by_hand, rel=1e-9)
    _, in_memory = link_columns(cfg, data)  # the in-memory run finds the same column with the same U
    assert in_memory.names == ("zone",)
    assert in_memory.columns[0].coefficients == pytest.approx(result.linked.columns[0].coefficients, rel=1e-9)
    written = write_distributed(result)
    back = pl.read_parquet(written.path / "*.parquet")
    # counted as a key: every released row (keys and zone together) identical to at least k - 1 others
    assert back.group_by([*KEYS, "zone"]).len()["len"].min() >= K
    assert written.measure["k_anonymity"] >= K
    assert dask_driver_rows.rows - before <= 2_000  # group tables and one-row aggregates, not the rows
    summary = json.loads((written.path / "_sdckit_release.json").read_text())
    assert summary["linked"]["columns"][0]["column"] == "zone"
    assert any("posterior" in s for s in summary["not_measured"])  # hours is released beside the keys


def test_dask_refuses_what_it_cannot_measure_and_says_what_it_did_not(people: pl.DataFrame, tmp_path: Path) -> None:
    zone = pl.when(pl.col("region").is_in(["north", "east"])).then(pl.lit("ne")).otherwise(pl.lit("sw"))
    data = people.with_columns(zone.alias("zone"))
    with pytest.raises(ConfigError, match="linked_as: ghost"):
        run_distributed(_config(tmp_path, keep=["hours", "zone"], linked_as="ghost"), _dask(data))
    with pytest.raises(ConfigError, match="posterior_pass"):
        _config(tmp_path, engine="dask", posterior_pass=True)
    keys_only = run_distributed(_config(tmp_path, keep=None, budget=1.0), _dask(people))
    assert keys_only.not_measured == ()  # nothing beside the keys: nothing left unmeasured
