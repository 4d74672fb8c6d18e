"""Loss you can see (issue 36): a warning when a step suppresses most of a column or a key has too many
categories for its rows; messages that name the column for a key missing in every row and for a Stata
extended missing value in a labelled numeric key."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import polars as pl
import pyreadstat
import pytest

from sdckit import read_data
from sdckit.errors import ConfigError, EmptyTableError
from sdckit.pipeline import parse_config, run_pipeline

DATA = Path(__file__).resolve().parents[1] / "data"
KEYS = ["urbrur", "roof", "sex", "age"]


def _csv(tmp_path: Path, frame: pl.DataFrame | None = None) -> Path:
    path = tmp_path / "t2.csv"
    (frame if frame is not None else pl.read_csv(DATA / "sdcmicro_testdata2.csv")).write_csv(path)
    return path


def _run(source: Path, **extra: object) -> object:
    config = {"input": str(source), "quasi_identifiers": KEYS, "k": 5, "allow_over_budget": True,
              "steps": [{"local_suppression": {"importance": ["urbrur", "sex", "roof", "age"]}}],
              "output": {"report": None}, **extra}
    return run_pipeline(parse_config(config))


def test_mostly_suppressed_column_is_warned(tmp_path: Path) -> None:
    result = _run(_csv(tmp_path))
    frame, release = result.input_frame, result.protected  # type: ignore[attr-defined]
    # the independent count: age cells present in the input and missing in the release
    lost = int(frame["age"].is_not_null().sum()) - int(release["age"].is_not_null().sum())
    assert lost > 0.25 * frame.height
    warnings = result.release_measure.warnings  # type: ignore[attr-defined]
    line = next(w for w in warnings if w.startswith("step 1 (local_suppression) suppressed") and "cells of age" in w)
    assert f"{lost:,} of the {frame.height:,} cells of age" in line
    assert "more than 25 %" in line
    # the share is the pipeline's: at 100 % nothing is said
    quiet = _run(_csv(tmp_path), warn_loss_share=1.0)
    assert not any("suppressed" in w for w in quiet.release_measure.warnings)  # type: ignore[attr-defined]


def test_key_with_too_many_categories_is_warned_unless_recoded(tmp_path: Path) -> None:
    result = _run(_csv(tmp_path))
    n_age = pl.read_csv(DATA / "sdcmicro_testdata2.csv")["age"].n_unique()
    assert any(w.startswith(f"quasi-identifier age has {n_age} categories in 93 rows") and "recode it" in w
               for w in result.release_measure.warnings)  # type: ignore[attr-defined]
    recoded = _run(_csv(tmp_path), steps=[{"recode": {"rules": {"age": {"breaks": [20, 40, 60]}}}},
                                           {"local_suppression": {}}])
    assert not any("quasi-identifier age has" in w for w in recoded.release_measure.warnings)  # type: ignore[attr-defined]


def test_key_missing_in_every_row_is_named(tmp_path: Path) -> None:
    frame = pl.read_csv(DATA / "sdcmicro_testdata2.csv").with_columns(pl.lit(None, dtype=pl.Int64).alias("roof"))
    source = _csv(tmp_path, frame)
    result = _run(source)  # before: "the table has no rows after dropping rows with missing values"
    assert any(w.startswith("quasi-identifier roof is missing in every one of the 93 rows")
               for w in result.release_measure.warnings)  # type: ignore[attr-defined]
    with pytest.raises(EmptyTableError, match="column 'roof' is missing in every one of the 93 rows"):
        read_data(source, columns=["age", "roof"], missing="drop")


@pytest.mark.parametrize("labelled", [False, True])
def test_stata_extended_missing_in_a_labelled_numeric_key(tmp_path: Path, labelled: bool) -> None:
    frame = pl.read_csv(DATA / "sdcmicro_testdata2.csv").select(KEYS).to_pandas().astype(object)
    frame.loc[[2, 9], "age"] = "b"  # .b "refused"
    for c in ("urbrur", "roof", "sex"):
        frame[c] = frame[c].astype(float)
    path = tmp_path / "t.dta"
    pyreadstat.write_dta(pd.DataFrame(frame), str(path), missing_user_values={"age": ["b"]},
                         variable_value_labels={"age": {95: "95 and over", **({"b": "refused"} if labelled else {})}})
    steps = [{"recode": {"rules": {"age": {"breaks": [20, 40, 60]}}}}, {"local_suppression": {}}]
    said = (r"'age' has value labels in the input file, so it reads as its labels \('refused'\)" if labelled
            else r"'.b' is a Stata extended missing value")
    with pytest.raises(ConfigError, match=r"steps\[0\]\.recode\.rules\.age: intervals need numbers\. " + said
                       + r".*read: \{labels: codes\}"):
        _run(path, steps=steps)
    result = _run(path, steps=steps, read={"labels": "codes"})  # the fix the message gives
    assert result.protected.height == 93  # type: ignore[attr-defined]
    assert result.steps[0].details["declared_missing_kept"] == {"age": 2}  # type: ignore[attr-defined]
