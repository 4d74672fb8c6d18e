"""The input layer: every source type, column selection, the missing-value policy, every error."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import duckdb
import narwhals as nw
import numpy as np
import pandas as pd
import polars as pl
import pyarrow as pa
import pytest

from sdckit._io import check_numeric, like_input, read_data
from sdckit.errors import (
    ColumnNotFoundError,
    EmptyTableError,
    FileNotFoundInputError,
    InputError,
    MissingValuesError,
    NonNumericColumnError,
    ParameterError,
    TooFewRowsError,
    UnreadableInputError,
)

ROWS = {"age": [30, 41, 41, 52], "sex": ["F", "M", "M", "F"], "income": [1.5, 2.0, None, 4.0]}


@pytest.fixture
def frame() -> pl.DataFrame:
    return pl.DataFrame(ROWS)


@pytest.fixture(params=["polars", "pandas", "pyarrow"])
def native(request: pytest.FixtureRequest, frame: pl.DataFrame) -> object:
    if request.param == "polars":
        return frame
    if request.param == "pandas":
        return pd.DataFrame(ROWS)
    return pa.table(ROWS)


def _write(tmp_path: Path, frame: pl.DataFrame, name: str) -> Path:
    path = tmp_path / name
    if name.endswith(".csv"):
        frame.write_csv(path)
    elif name.endswith(".csv.gz"):
        with gzip.open(path, "wb") as fh:
            fh.write(frame.write_csv().encode())
    elif name.endswith(".parquet"):
        frame.write_parquet(path)
    elif name.endswith(".jsonl"):
        frame.write_ndjson(path)
    return path


@pytest.mark.parametrize("name", ["t.csv", "t.csv.gz", "t.parquet", "t.jsonl"])
def test_paths_of_every_format_read_the_same_table(tmp_path: Path, frame: pl.DataFrame, name: str) -> None:
    data = read_data(_write(tmp_path, frame, name), ["sex", "age"])
    assert data.columns == ("sex", "age")
    got = data.frame.to_native()
    assert got["age"].to_list() == ROWS["age"]
    assert got["sex"].to_list() == ROWS["sex"]
    assert data.source == name


def test_csv_fields_are_stripped_like_the_uci_files(tmp_path: Path) -> None:
    path = tmp_path / "pad.csv"
    path.write_text("age, sex\n39, Male\n50, ?\n")
    data = read_data(path)
    assert data.columns == ("age", "sex")
    assert data.frame["sex"].to_list() == ["Male", "?"]


def test_native_frames_stay_native(native: object) -> None:
    data = read_data(native, "age,sex")
    assert data.columns == ("age", "sex")
    assert type(data.frame.to_native()) is type(native)
    assert data.n_rows == 4


def test_lazy_frames_stay_lazy(frame: pl.DataFrame) -> None:
    data = read_data(frame.lazy(), ["sex"])
    assert data.is_lazy
    assert data.n_rows == 4
    rel = duckdb.sql("select * from (values (1, 'a'), (2, 'b')) t(x, y)")
    ddb = read_data(rel, ["y"])
    assert ddb.is_lazy
    assert ddb.n_rows == 2


def test_missing_value_policies(frame: pl.DataFrame) -> None:
    assert read_data(frame, ["income"]).n_dropped == 0
    dropped = read_data(frame, ["income"], missing="drop")
    assert dropped.n_dropped == 1
    assert dropped.frame["income"].to_list() == [1.5, 2.0, 4.0]
    with pytest.raises(MissingValuesError, match=r"column 'income' has 1 missing value\(s\), first at row 2"):
        read_data(frame, ["income"], missing="error")
    with pytest.raises(ParameterError, match="missing='ignore' is not a policy"):
        read_data(frame, missing="ignore")  # type: ignore[arg-type]


def test_nan_counts_as_missing() -> None:
    df = pl.DataFrame({"x": [1.0, float("nan"), 3.0]})
    assert read_data(df, missing="drop").n_dropped == 1


def test_unknown_column_lists_near_matches(frame: pl.DataFrame) -> None:
    with pytest.raises(ColumnNotFoundError, match="Did you mean 'sex'") as info:
        read_data(frame, ["sexx"])
    assert info.value.column == "sexx"
    with pytest.raises(ColumnNotFoundError, match="The table has: 'age', 'sex', 'income'"):
        read_data(frame, ["zzzzzz"])
    assert issubclass(ColumnNotFoundError, ValueError)


def test_missing_file_and_unreadable_formats(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundInputError, match="no file at"):
        read_data(tmp_path / "nope.csv")
    odd = tmp_path / "data.numbers"
    odd.write_bytes(b"PK\x03\x04")
    with pytest.raises(UnreadableInputError, match="cannot tell the format"):
        read_data(odd)
    truncated = tmp_path / "data.xlsx"
    truncated.write_bytes(b"PK\x03\x04")
    with pytest.raises(UnreadableInputError, match=r"cannot read .* as a \.xlsx file"):
        read_data(truncated)
    broken = tmp_path / "broken.parquet"
    broken.write_bytes(b"not parquet at all")
    with pytest.raises(UnreadableInputError, match=r"cannot read .* as PARQUET"):
        read_data(broken)
    with pytest.raises(UnreadableInputError, match="is a folder"):
        read_data(tmp_path.with_suffix(".csv") if False else _folder(tmp_path))
    with pytest.raises(UnreadableInputError, match="cannot read an object of type int"):
        read_data(42)
    with pytest.raises(UnreadableInputError, match="bare numpy array"):
        read_data(np.zeros((2, 2)))


def _folder(tmp_path: Path) -> Path:
    d = tmp_path / "folder.csv"
    d.mkdir()
    return d


def test_empty_tables(tmp_path: Path) -> None:
    with pytest.raises(EmptyTableError, match="no rows"):
        read_data(pl.DataFrame({"a": []}, schema={"a": pl.Int64}))
    with pytest.raises(EmptyTableError, match="column 'a' is missing in every one of the 2 rows"):  # names it (issue 36)
        read_data(pl.DataFrame({"a": [None, None]}, schema={"a": pl.Int64}), missing="drop")
    with pytest.raises(EmptyTableError, match="after dropping rows with missing values"):  # each row misses one
        read_data(pl.DataFrame({"a": [None, 1], "b": [2, None]}), missing="drop")
    with pytest.raises(TooFewRowsError, match="need at least 5 rows; the table has 4"):
        read_data(pl.DataFrame(ROWS), min_rows=5)


def test_check_numeric_matrix_and_errors(frame: pl.DataFrame) -> None:
    X, names = check_numeric(frame, ["age", "income"], missing="drop")
    assert names == ("age", "income")
    np.testing.assert_array_equal(X, [[30, 1.5], [41, 2.0], [52, 4.0]])
    assert X.dtype == np.float64
    assert X.flags.c_contiguous
    with pytest.raises(NonNumericColumnError, match=r"column 'sex' must be numeric but holds 'F' \(row 0\)"):
        check_numeric(frame, ["age", "sex"])
    with pytest.raises(MissingValuesError, match="column 'income' has 1 missing"):
        check_numeric(frame, ["income"])
    with pytest.raises(ParameterError):
        check_numeric(frame, ["age"], missing="value")  # type: ignore[arg-type]


def test_check_numeric_parses_numeric_text_and_rejects_infinity() -> None:
    X, _ = check_numeric(pl.DataFrame({"x": ["1", "2.5", "-3"]}))
    np.testing.assert_array_equal(X[:, 0], [1.0, 2.5, -3.0])
    with pytest.raises(NonNumericColumnError, match="holds inf"):
        check_numeric(pl.DataFrame({"x": [1.0, float("inf")]}))


def test_like_input_returns_the_callers_type_with_other_columns_untouched(native: object) -> None:
    out = like_input(native, {"age": np.array([1, 2, 3, 4]), "flag": np.array([True, False, True, False])})
    assert type(out) is type(native)
    back = nw.from_native(out, eager_only=True)
    assert back.columns == ["age", "sex", "income", "flag"]
    assert back["age"].to_list() == [1, 2, 3, 4]
    assert back["sex"].to_list() == ROWS["sex"]


def test_like_input_refuses_lazy_frames(frame: pl.DataFrame) -> None:
    with pytest.raises(InputError, match="collect it first"):
        like_input(frame.lazy(), {"a": np.zeros(4)})


def test_mapping_input_is_accepted() -> None:
    data = read_data({"a": [1, 2]})
    assert data.columns == ("a",)
    assert json.dumps(list(data.columns)) == '["a"]'
