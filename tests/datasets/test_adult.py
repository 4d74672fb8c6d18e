"""The bundled Adult data against the facts of shared/data/README.md (UCI adult.data/adult.test)."""

from __future__ import annotations

import pytest

from sdckit.datasets import ADULT_COLUMNS, ADULT_NUMERIC, ADULT_QUASI_IDENTIFIERS, load_adult
from sdckit.errors import ParameterError


def test_train_split_matches_the_uci_file() -> None:
    df = load_adult()
    assert df.shape == (32561, 15)  # UCI adult.data: 32,561 rows
    assert tuple(df.columns) == ADULT_COLUMNS
    # '?' kept as a value (counts from the data README: 1836, 1843, 583)
    assert (df["workclass"] == "?").sum() == 1836
    assert (df["occupation"] == "?").sum() == 1843
    assert (df["native-country"] == "?").sum() == 583
    assert df["income"].value_counts().sort("income")["count"].to_list() == [24720, 7841]
    assert df.null_count().sum_horizontal().item() == 0
    # whitespace stripped: no value starts or ends with a blank
    for col in ("workclass", "sex", "native-country"):
        assert not df[col].str.contains(r"^\s|\s$").any()
    # exact duplicate rows are people, kept: 24 duplicates in adult.data
    assert df.height - df.unique().height == 24


def test_test_split_keeps_its_trailing_dot() -> None:
    df = load_adult(split="test")
    assert df.shape == (16281, 15)
    assert set(df["income"].unique()) == {"<=50K.", ">50K."}
    assert (df["workclass"] == "?").sum() == 963


def test_defaults_name_real_columns() -> None:
    assert set(ADULT_QUASI_IDENTIFIERS) <= set(ADULT_COLUMNS)
    assert set(ADULT_NUMERIC) <= set(ADULT_COLUMNS)


def test_unknown_split() -> None:
    with pytest.raises(ParameterError, match="split='validation' is not a split of Adult"):
        load_adult(split="validation")  # type: ignore[arg-type]
