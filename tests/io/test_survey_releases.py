"""Ordinary survey files in and out (issue 36): sdcMicro's testdata2 as partly labelled SPSS and Stata
files with a "don't know" declared missing in a key (SPSS user-missing 98; Stata ``.d``) and a
"refused" declared missing in another (SPSS -9; Stata's tagged ``.r``), recoded and locally suppressed
at k = 3 and 5: both releases written with their labels and missing codes, read back with pyreadstat,
the "don't know" still missing (never banded as an age).

testdata2: sdcMicro 5.8.1 package data (tests/data/README.md).
"""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import polars as pl
import pyreadstat
import pytest

from sdckit._io import read_path
from sdckit._io._survey import SUPPRESSED_LABEL, read_labels
from sdckit.pipeline import parse_config, run_pipeline, write_outputs

DATA = Path(__file__).resolve().parents[1] / "data"
COLUMNS = ["urbrur", "roof", "water", "sex", "age", "expend", "income", "savings", "sampling_weight"]
DONT_KNOW = [3, 17, 40, 71]  # rows whose age is "don't know"
REFUSED = [5, 60]  # rows whose roof is "refused"


def _testdata2() -> pd.DataFrame:
    return pl.read_csv(DATA / "sdcmicro_testdata2.csv").select(COLUMNS).to_pandas().astype(float)


def make_sav(path: Path) -> Path:
    frame = _testdata2()
    frame.loc[DONT_KNOW, "age"] = 98.0
    frame.loc[REFUSED, "roof"] = -9.0
    pyreadstat.write_sav(
        frame, str(path),
        variable_value_labels={"sex": {1.0: "male", 2.0: "female"}, "water": {1.0: "piped", 2.0: "well"},  # partly
                               "urbrur": {1.0: "urban", 2.0: "rural"}, "age": {98.0: "don't know"},
                               "roof": {-9.0: "refused"}},
        missing_ranges={"age": [98.0], "roof": [-9.0]}, column_labels={"age": "Age in years"},
    )
    return path


def make_dta(path: Path) -> Path:
    frame = _testdata2().astype(object)
    frame.loc[DONT_KNOW, "age"] = "d"  # Stata's extended missing .d
    frame.loc[REFUSED, "roof"] = "r"  # and .r
    for c in COLUMNS:
        if c not in ("age", "roof"):
            frame[c] = frame[c].astype(float)
    pyreadstat.write_dta(
        frame, str(path),
        variable_value_labels={"sex": {1: "male", 2: "female"}, "water": {1: "piped", 2: "well"},
                               "urbrur": {1: "urban", 2: "rural"}, "age": {"d": "don't know"}, "roof": {"r": "refused"}},
        missing_user_values={"age": ["d"], "roof": ["r"]}, column_labels={"age": "Age in years"},
    )
    return path


def _pipeline(source: Path, out: Path, k: int) -> dict[str, Any]:
    return {
        "input": str(source), "quasi_identifiers": ["urbrur", "water", "sex", "age", "roof"],
        # the amounts are not released: unmasked beside suppressed keys they would show the hidden keys (the
        # release posterior refuses that); this test is about labels and missing codes
        "identifiers": ["expend", "income", "savings"], "weight": "sampling_weight", "k": k,
        "steps": [
            {"recode": {"rules": {
                "age": {"breaks": [0, 20, 40, 60]},
                "water": {"mapping": {str(c): "3-8" for c in range(3, 9)}},  # sdcMicro's groupAndRename habit
            }}},
            {"local_suppression": {}},
        ],
        "output": {"data": str(out), "report": None},
    }


@pytest.fixture(autouse=True)
def _no_library_warning() -> Any:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        warnings.filterwarnings("ignore", message=".*suppress.*", category=UserWarning)  # sdckit's own loss warnings
        yield


def test_age_labelled_only_at_dont_know_is_a_number(tmp_path: Path) -> None:
    for make, ending in ((make_sav, ".sav"), (make_dta, ".dta")):
        frame = read_path(make(tmp_path / f"t{ending}"))
        assert frame.schema["age"] == pl.Float64
        assert frame.schema["roof"] == pl.Float64
        assert [i for i, v in enumerate(frame["age"].to_list()) if v is None] == DONT_KNOW  # missing, not 98
        assert frame.schema["sex"] == pl.Categorical  # labelled beyond its missing codes
        labels = read_labels(tmp_path / f"t{ending}")
        assert labels is not None
        assert "age" not in labels.labelled


@pytest.mark.parametrize("k", [3, 5])
@pytest.mark.parametrize("ending", [".sav", ".dta"])
def test_testdata2_release_keeps_labels_and_missing_codes(tmp_path: Path, ending: str, k: int) -> None:
    source = (make_sav if ending == ".sav" else make_dta)(tmp_path / f"in{ending}")
    out = tmp_path / f"release{ending}"
    result = run_pipeline(parse_config(_pipeline(source, out, k)))
    assert result.release_measure.k_anonymity >= k
    recode = result.steps[0]
    assert recode.details["declared_missing_kept"] == {"age": len(DONT_KNOW)}
    assert "Declared missing codes stay missing" in recode.description
    assert "don't know" in recode.description
    written = write_outputs(result)
    assert written["data"] == out
    reader = pyreadstat.read_sav if ending == ".sav" else pyreadstat.read_dta
    back, meta = reader(str(out), user_missing=True)
    dont_know = 98.0 if ending == ".sav" else "d"
    refused = -9.0 if ending == ".sav" else "r"
    suppression = -99999.0 if ending == ".sav" else "s"
    # every "don't know" is still its declared missing code (one that a decoy suppression took is the suppression code)
    n_dont_know = int((back["age"] == dont_know).sum())
    assert n_dont_know == len(DONT_KNOW)
    assert meta.variable_value_labels["age"][dont_know] == "don't know"
    bands = {v for k_, v in meta.variable_value_labels["age"].items() if k_ not in (dont_know, suppression)}
    assert bands <= {"[0, 20)", "[20, 40)", "[40, 60)", "[60, inf)"}
    assert bands
    assert int((back["roof"] == refused).sum()) + int((back["roof"] == suppression).sum()) >= 1
    assert meta.variable_value_labels["roof"][refused] == "refused"
    assert meta.column_names_to_labels["age"] == "Age in years"
    assert "3-8" in meta.variable_value_labels["water"].values()  # the merged codes' new label
    if ending == ".sav":
        assert {"lo": 98.0, "hi": 98.0} in meta.missing_ranges["age"]
        assert {"lo": -9.0, "hi": -9.0} in meta.missing_ranges["roof"]
        plain, _ = pyreadstat.read_sav(str(out))  # SPSS's own reading: the declared codes are missing
        assert int(plain["age"].isna().sum()) >= len(DONT_KNOW)
    else:
        assert "d" in meta.missing_user_values["age"]
        assert "r" in meta.missing_user_values["roof"]
    suppressed = sum(int((back[c] == suppression).sum()) for c in ("urbrur", "water", "sex", "age", "roof"))
    assert suppressed == result.release_measure.n_missing_cells - len(DONT_KNOW) - len(REFUSED)
    assert all(SUPPRESSED_LABEL in meta.variable_value_labels.get(c, {}).values()
               for c in ("urbrur", "water", "sex", "age", "roof") if (back[c] == suppression).any())
    # read back by sdckit: the same release, the "don't know" missing
    again = read_path(out)
    assert again.height == result.protected.height
    assert np.all(again["age"].cast(pl.String).to_list().count("don't know") == 4)


def test_rds_release_has_factors_for_labelled_columns(tmp_path: Path) -> None:
    """R's format out: the release as one data frame, labelled columns as factors, read back by pyreadr."""
    import pyreadr

    source = make_sav(tmp_path / "in.sav")
    out = tmp_path / "release.rds"
    result = run_pipeline(parse_config(_pipeline(source, out, 3)))
    write_outputs(result)  # measured again as written before it is kept
    back = next(iter(pyreadr.read_r(str(out)).values()))
    assert list(back.columns) == result.protected.columns
    assert isinstance(back["sex"].dtype, pd.CategoricalDtype)
    assert list(back["sex"].cat.categories) == ["male", "female"]  # levels in the order of the codes
    assert isinstance(back["urbrur"].dtype, pd.CategoricalDtype)
    expected = result.protected["sex"].cast(pl.String).to_list()
    assert [None if pd.isna(v) else v for v in back["sex"].tolist()] == expected
    assert int(back["age"].isna().sum()) == result.protected["age"].null_count()  # "don't know" and suppressed: NA
    assert read_path(out).height == result.protected.height


def test_survey_release_refused_before_any_work_naming_the_column(tmp_path: Path) -> None:
    from sdckit.errors import ConfigError

    source = tmp_path / "t.csv"
    pl.read_csv(DATA / "sdcmicro_testdata2.csv").rename({"age": "age-years"}).write_csv(source)
    config = {**_pipeline(source, tmp_path / "out.sav", 3), "quasi_identifiers": ["urbrur", "sex", "age-years"],
              "numeric": None, "weight": None, "steps": [{"local_suppression": {}}]}
    with pytest.raises(ConfigError, match=r"output\.data: column 'age-years' is not a valid SPSS variable name") as err:
        run_pipeline(parse_config(config))
    assert ".sdckit-" not in str(err.value)
    assert ".part" not in str(err.value)
    from sdckit.pipeline import check_pipeline_outputs

    with pytest.raises(ConfigError, match=r"output\.data: cannot write 'out\.xyz': end the name in one of"):
        check_pipeline_outputs(parse_config({**config, "output": {"data": str(tmp_path / "out.xyz"), "report": None}}))


def test_consistent_counts_across_a_category_read_back_as_numbers() -> None:
    """Before: ``cannot cast categorical types to Float64`` when a key is a category in memory and numbers
    in the file read back. Checked against the definition, pair by pair."""
    from sdckit.risk._measures._release import consistent_counts

    release = pl.DataFrame({"a": [1.0, 2.0, None, 3.0, 2.5], "b": ["x", "y", "x", "x", None]})
    known = pl.DataFrame({"a": ["1", "2", "2", "3", "2.5"], "b": ["x", "y", "x", "x", "y"]}).with_columns(
        pl.col("a").cast(pl.Categorical))
    got = consistent_counts(release, known, ["a", "b"])

    def text(v: object) -> object:
        return None if v is None else (str(int(v)) if isinstance(v, float) and v.is_integer() else str(v))

    brute = [sum(all(r is None or text(r) == u for r, u in zip(rel_row, user, strict=True))
                 for rel_row in release.rows()) for user in known.with_columns(pl.col("a").cast(pl.String)).rows()]
    assert got.tolist() == brute


def test_consistent_counts_across_codes_kept_as_text_and_read_back_as_numbers() -> None:
    """A labelled code kept as text in memory ("1.0") and read back from the file as the number 1.0 is
    one value (before: every person had 0 consistent rows in the written .sav, which was refused)."""
    from sdckit.risk._measures._release import consistent_counts

    release = pl.DataFrame({"a": [1.0, 1.0, None, -9.0, 2.0]})
    known = pl.DataFrame({"a": ["1.0", "1.0", "2.0", "-9.0", "2.0"]})
    # by hand: a missing released cell is consistent with anyone; 1.0 with the two "1.0"s, and so on
    assert consistent_counts(release, known, ["a"]).tolist() == [3, 3, 2, 2, 2]


def test_stata_release_with_text_keys_recounts_its_missing_cells(tmp_path: Path) -> None:
    """An empty Stata string is missing (Stata's missing text): a suppressed text cell, written as "",
    reads back missing, so the file measures as the release did (before: 255 against 282 missing cells)."""
    frame = pl.read_csv(DATA / "sdcmicro_testdata2.csv").select("urbrur", "roof", "sex", "age").with_columns(
        pl.col("roof").cast(pl.String).replace({"2": "tin", "4": "wood"}), ("a" + pl.col("age").cast(pl.String)).alias("age"))
    source = tmp_path / "t.csv"
    frame.write_csv(source)
    out = tmp_path / "release.dta"
    result = run_pipeline(parse_config({
        "input": str(source), "quasi_identifiers": ["urbrur", "roof", "sex", "age"], "k": 3, "allow_over_budget": True,
        "steps": [{"local_suppression": {}}], "output": {"data": str(out), "report": None},
    }))
    missing = result.release_measure.n_missing_cells
    assert missing > 0
    write_outputs(result)  # measured again as written: equal, or nothing would be written
    back = read_path(out)
    assert sum(back[c].null_count() for c in ("urbrur", "roof", "sex", "age")) == missing
    raw, _ = pyreadstat.read_dta(str(out))
    assert int((raw["age"] == "").sum()) == result.protected["age"].null_count()  # Stata's missing text
