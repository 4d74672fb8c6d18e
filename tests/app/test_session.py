"""The workbench's pure logic: undo/redo, the state's pipeline file, step validation, the figures."""

from __future__ import annotations

import threading
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from sdckit.app._figures import cells_changed, column_loss, figures_of
from sdckit.app._jobs import Job
from sdckit.app._session import History, Workbench, check_roles, parse_step, step_text
from sdckit.errors import ConfigError
from sdckit.pipeline import load_config
from sdckit.risk._measures._release import measure_release


def test_undo_redo_walks_the_history_and_a_change_clears_redo() -> None:
    h = History()
    a = h.state
    b = Workbench(k=3)
    c = Workbench(k=4)
    h.change(b, "k 3")
    h.change(c, "k 4")
    assert h.undo() == "k 4"
    assert h.state == b
    assert h.undo() == "k 3"
    assert h.state == a
    assert h.undo() is None
    assert h.state == a
    assert h.redo() == "k 3"
    assert h.state == b
    h.change(Workbench(k=7), "k 7")
    assert h.redo() is None
    assert h.state.k == 7
    assert h.previous == b
    h.drop_last()  # a change whose run failed
    assert h.state == b
    assert not h.redo_stack
    h.change(b, "no change")  # the same state is no change
    assert h.undo_stack[-1][1] == "k 3"


def _state(**kw: object) -> Workbench:
    roles = (("age", "quasi_identifier"), ("sex", "quasi_identifier"), ("hours-per-week", "numeric"),
             ("income", "sensitive"), ("fnlwgt", "identifier"), ("relationship", "keep"), ("race", "none"))
    steps = (parse_step("recode", '{rules: {age: {hierarchy: "adult:age", level: 2}}}', 0),
             parse_step("local_suppression", "{k: 5}", 1),
             parse_step("microaggregate", "{columns: [hours-per-week], k: 3}", 2))
    return Workbench(roles=roles, steps=steps, **kw)  # type: ignore[arg-type]


def test_the_exported_yaml_is_the_state_as_a_pipeline_file(tmp_path: Path) -> None:
    state = _state(reproducible=True, seed=42, k=4, budget=0.1)
    path = tmp_path / "pipeline.yaml"
    path.write_text(state.pipeline_yaml(), encoding="utf-8")
    cfg = load_config(path)
    assert cfg.quasi_identifiers == ("age", "sex")
    assert cfg.numeric == ("hours-per-week",)
    assert cfg.sensitive == ("income",)
    assert cfg.identifiers == ("fnlwgt",)
    assert cfg.keep == ("relationship",)
    assert (cfg.k, cfg.budget, cfg.seed) == (4, 0.1, 42)
    assert [s.kind for s in cfg.steps] == ["recode", "local_suppression", "microaggregate"]
    assert cfg.steps == state.config(run_seed=1).steps  # what the app runs is what the file says
    assert cfg.output_data == str(tmp_path / "release.csv")
    assert "race" not in str(cfg.to_dict())  # no role: not released


def test_a_publication_export_writes_no_seed_and_the_app_run_uses_the_session_secret() -> None:
    state = _state()
    assert "seed" not in state.pipeline_dict(export=True)
    assert "No seed" in state.pipeline_yaml()
    from sdckit.pipeline._config import PipelineConfig

    if "reproducible" not in PipelineConfig.model_fields:  # the seed of the app's own run is the session's
        assert state.config(run_seed=123456789).seed == 123456789


@pytest.mark.parametrize(
    ("kind", "text", "needle"),
    [
        ("recode", "{rulez: 1}", "Did you mean 'rules'"),  # the estimator's keywords are the step's typed options
        ("rank_swap", "{p: [", "not valid YAML"),  # every step has a template (issue 33: was a KeyError)
        ("correlated_noise", "{law: gaussian}", "is not one of"),
        ("microaggregate", "{method: mdavv}", "mdavv"),
        ("microaggregate", "{k: 1}", ">= 2"),
        ("noise", "{epsilon: 1}", "max_leakage_nats"),
        ("recode", "{rules: [", "not valid YAML"),
        ("unknown", "{}", "is not a step"),
    ],
)
def test_a_wrong_step_gets_the_pipeline_files_one_line(kind: str, text: str, needle: str | None) -> None:
    if needle is None:
        assert parse_step(kind, text, 0)[0] == kind
        return
    with pytest.raises(ConfigError, match=needle) as err:
        parse_step(kind, text, 3)
    assert "\n" not in str(err.value)
    assert str(err.value).startswith("the workbench")


def test_step_text_round_trips_through_yaml() -> None:
    import yaml

    options = {"rules": {"native-country": {"hierarchy": "adult:native-country", "level": 1}}, "k": 5}
    assert yaml.safe_load(step_text(options)) == options
    assert "\n" not in step_text(options)


def test_roles_posted_by_the_page_are_checked() -> None:
    assert check_roles(["a", "b"], {"a": "keep"}) == (("a", "keep"), ("b", "none"))
    with pytest.raises(ConfigError, match="'boss' is not a role"):
        check_roles(["a"], {"a": "boss"})
    with pytest.raises(ConfigError, match="'z' is not in the data"):
        check_roles(["a"], {"z": "keep"})


def test_cells_changed_counts_as_a_loop_over_the_rows_does() -> None:
    rng = np.random.default_rng(3)
    before = [None if rng.random() < 0.2 else int(v) for v in rng.integers(0, 4, 200)]
    after = [None if rng.random() < 0.2 else int(v) for v in rng.integers(0, 4, 200)]
    expected = sum(1 for a, b in zip(before, after, strict=True) if a != b)
    assert cells_changed(pl.Series(before), pl.Series(after)) == expected
    recoded = [None if b is None else f"[{b}, {b + 1})" for b in before]  # text against numbers: compared as text
    assert cells_changed(pl.Series(before), pl.Series(recoded)) == sum(1 for b in before if b is not None)


def test_column_loss_il1s_is_the_mean_change_in_sqrt2_sd() -> None:
    x = np.array([1.0, 2.0, 3.0, 4.0, 10.0])
    xm = np.array([1.5, 1.5, 3.5, 3.5, 10.0])
    rows = column_loss(pl.DataFrame({"v": x, "c": ["a"] * 5}), pl.DataFrame({"v": xm, "c": ["a", "b"] * 2 + ["a"]}), ["v"])
    v, c = rows
    sd = float(np.std(x, ddof=1))
    assert v["il1s"] == pytest.approx(float(np.mean(np.abs(x - xm))) / (np.sqrt(2) * sd))
    assert (v["cells_changed"], c["cells_changed"], c["share_changed"]) == (4, 2, 0.4)
    assert "il1s" not in c


def test_global_risk_is_the_mean_of_one_over_the_group_size_without_weights() -> None:
    table = pl.DataFrame({"a": [1, 1, 1, 2, 2, 3], "b": ["x", "x", "y", "z", "z", "w"]})
    m = measure_release(table, quasi_identifiers=["a", "b"], k=2, budget=0.5)
    f = figures_of(m, table)
    sizes = [sum(1 for s in table.iter_rows() if s == r) for r in table.iter_rows()]  # brute force f_k
    assert f.global_risk == pytest.approx(float(np.mean([1 / s for s in sizes])))
    assert f.expected_reidentifications == pytest.approx(4.0)  # one per distinct key without weights
    rows = f.rows()
    assert rows["uniques (groups of 1)"] == "2"
    assert rows["within budget"] == "yes"


def test_a_cancelled_job_stops_at_its_next_stage() -> None:
    reached: list[int] = []
    go = threading.Event()

    def work(advance: object) -> str:
        for i in range(100):
            go.wait(5)
            advance(description=f"stage {i}")  # type: ignore[operator]
            reached.append(i)
        return "done"

    job = Job("test", work).start()
    job.cancel()
    go.set()
    job.wait(5)
    assert job.cancelled
    assert job.result is None
    assert not reached
    assert not job.running


def test_a_failing_job_keeps_the_one_line_error() -> None:
    def work(advance: object) -> None:
        raise ConfigError("the workbench: steps[0].recode: column 'x' is not in the data.")

    job = Job("test", work).start()
    job.wait(5)
    assert job.error == "the workbench: steps[0].recode: column 'x' is not in the data."


def test_a_job_runs_until_its_result_is_kept() -> None:
    """A poll between the end of the work and on_done keeping its result must still see the job running:
    otherwise the page renders a panel without the result and stops polling (the plan was never shown)."""
    seen: list[bool] = []
    keeping = threading.Event()
    kept = threading.Event()

    def done(job: Job) -> None:
        keeping.set()
        kept.wait(5)  # a slow keep: the poll below comes in now
        seen.append(job.running)

    job = Job("test", lambda advance: "the plan", on_done=done).start()
    assert keeping.wait(5)
    polled_running = job.running  # the page's poll while the result is being kept
    kept.set()
    job.wait(5)
    assert polled_running
    assert seen == [True]
    assert not job.running
    assert job.result == "the plan"
