"""CSV rows the parser would otherwise patch silently: ragged rows, blank lines; unnamed columns."""

from __future__ import annotations

import gzip
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from sdckit._io import ReadOptions, read_data, read_path
from sdckit.errors import UnreadableInputError


@pytest.mark.parametrize(
    ("text", "line", "fields"),
    [
        ("age,sex\n30,M\n40,F,extra\n", 3, 3),  # a row too long (polars raised without a line)
        ("age,sex\n30,M\n50\n40,F\n", 3, 1),  # a row too short (polars padded it with null)
        ('age,sex\n30,"M\nF"\n50\n', 4, 1),  # a quoted newline counts as one field: line 4 is short
    ],
)
def test_ragged_row_names_its_line(tmp_path: Path, text: str, line: int, fields: int) -> None:
    path = tmp_path / "ragged.csv"
    path.write_text(text)
    with pytest.raises(UnreadableInputError, match=rf"line {line} of 'ragged.csv' has {fields} field\(s\) but the header has 2"):
        read_path(path)


def test_ragged_row_in_gzip_and_tsv(tmp_path: Path) -> None:
    gz = tmp_path / "r.csv.gz"
    with gzip.open(gz, "wt") as fh:
        fh.write("a,b\n1,2\n3\n")
    with pytest.raises(UnreadableInputError, match=r"line 3 of 'r\.csv\.gz' has 1 field"):
        read_path(gz)
    tsv = tmp_path / "r.tsv"
    tsv.write_text("a\tb\n1\t2\n3\n")
    with pytest.raises(UnreadableInputError, match=r"line 3 of 'r\.tsv' has 1 field"):
        read_path(tsv)


def test_empty_fields_are_still_missing_values(tmp_path: Path) -> None:
    path = tmp_path / "nulls.csv"
    path.write_text("age,sex\n30,\n40,F\n")
    df = read_path(path)
    assert df.height == 2
    assert df["sex"].to_list() == [None, "F"]


def test_blank_lines_are_not_users(tmp_path: Path) -> None:
    path = tmp_path / "blank.csv"
    path.write_text("age,sex\n30,M\n\n40,F\n\n")  # polars alone reads 4 rows, two of them all null
    df = read_path(path)
    assert df.height == 2
    assert df["age"].to_list() == [30, 40]
    assert read_data(path).n_rows == 2


def test_non_text_column_names_are_refused_with_the_fix() -> None:
    frame = pd.DataFrame(np.arange(6).reshape(3, 2))  # columns 0 and 1 (int), as numpy gives them
    with pytest.raises(UnreadableInputError, match=r"column names must be text; this table has 0 \(int\)"):
        read_data(frame, ["0"])
    with pytest.raises(UnreadableInputError, match="column names must be text"):
        read_data(frame)


def test_latin1_file_is_named_as_not_utf8(tmp_path: Path) -> None:
    # Before: the header was decoded lossily ('\ufffdge') while the same bytes in a field raised
    # "invalid utf-8 sequence"; now both say what the file is and how to convert it.
    header_only = tmp_path / "h.csv"
    header_only.write_bytes("âge,sexe\n30,M\n".encode("latin-1"))
    in_fields = tmp_path / "f.csv"
    in_fields.write_bytes("name,sex\nÎle,M\nÏle,F\n".encode("latin-1"))
    for path in (header_only, in_fields):
        with pytest.raises(UnreadableInputError, match=r"it is not UTF-8 text .* --encoding latin-1"):
            read_path(path)


@pytest.mark.parametrize(("text", "sep"), [("age;sex\n30;M\n", ";"), ("age\tsex\n30\tM\n", "\t")])
def test_separator_is_sniffed_and_a_wrong_one_is_named(tmp_path: Path, text: str, sep: str) -> None:
    path = tmp_path / "euro.csv"
    path.write_text(text)
    assert read_path(path).to_dict(as_series=False) == {"age": [30], "sex": ["M"]}  # sniffed
    wrong = "," if sep != "," else ";"
    shown = repr(sep).replace("\\", "\\\\")
    with pytest.raises(UnreadableInputError, match=rf"one column named .*separated by {shown}.*--separator"):
        read_path(path, ReadOptions(separator=wrong))


def test_one_real_column_is_fine(tmp_path: Path) -> None:
    path = tmp_path / "one.csv"
    path.write_text("age\n30\n40\n")
    assert read_path(path)["age"].to_list() == [30, 40]


def test_mapping_with_unequal_columns_and_bad_columns_argument() -> None:
    from sdckit.errors import ParameterError

    # Before: polars ShapeError / builtin TypeError escaped the error tree.
    with pytest.raises(UnreadableInputError, match=r"different lengths \('a': 2, 'b': 1\)"):
        read_data({"a": [1, 2], "b": [1]})
    with pytest.raises(ParameterError, match=r"columns=5: give column names"):
        read_data({"a": [1, 2]}, 5)  # type: ignore[arg-type]
    assert read_data({"a": [1, 2]}, pd.Index(["a"])).columns == ("a",)  # df.columns[...] still works


def test_json_array_gets_the_conversion_hint(tmp_path: Path) -> None:
    path = tmp_path / "people.json"
    path.write_text('[{"age": 30}, {"age": 41}]')
    with pytest.raises(UnreadableInputError, match=r"holds one JSON array; sdckit reads JSON lines"):
        read_path(path)


def test_truncated_gzip_is_one_error_not_eoferror(tmp_path: Path) -> None:
    whole = gzip.compress(b'{"age": 30}\n{"age": 41}\n' * 50)
    path = tmp_path / "cut.jsonl.gz"
    path.write_bytes(whole[: len(whole) // 2])
    # Before: the hint's sniffing raised EOFError, which the CLI printed as a bare "Aborted.".
    with pytest.raises(UnreadableInputError, match=r"cannot read .*cut\.jsonl\.gz.* as NDJSON"):
        read_path(path)


@pytest.mark.parametrize("name", ["empty.csv", "empty.jsonl", "empty.tsv"])
def test_zero_byte_file_is_an_empty_table(tmp_path: Path, name: str) -> None:
    from sdckit.errors import EmptyTableError

    path = tmp_path / name
    path.write_bytes(b"")
    # Before: the parser's own words ("Cannot infer NDJSON types on empty reader ...").
    with pytest.raises(EmptyTableError, match=rf"'.*{name}' is empty \(0 bytes\): no header and no rows"):
        read_path(path)


def test_null_and_nan_are_one_missing_category() -> None:
    import polars as pl

    from sdckit.risk import Marginals

    frame = pl.DataFrame({"score": [1.5, float("nan"), 2.0, None, 1.5]})
    # README: missing values are "a value of their own": one category, not one for NaN and one for null.
    d = read_data(frame)
    assert d.frame["score"].null_count() == 2
    assert Marginals.from_data(frame, ["score"]).supports == {"score": 3}  # 1.5, 2.0, missing
    assert read_data(frame, missing="drop").n_dropped == 2


@pytest.mark.parametrize("header", ["age,sex,age", "age, age,sex"])
def test_repeated_header_name_is_refused(tmp_path: Path, header: str) -> None:
    path = tmp_path / "dup.csv"
    path.write_text(f"{header}\n30,31,M\n")
    # Before: polars renamed the second 'age' to 'age_duplicated_0' silently; with padding
    # (" age") the strip raised a raw polars DuplicateError.
    with pytest.raises(UnreadableInputError, match=r"names column 'age' twice \(columns 1 and [23]\)"):
        read_path(path)


def test_frame_with_a_repeated_column_name() -> None:
    import pyarrow as pa

    # Before: narwhals DuplicateError (outside sdckit's error tree).
    for frame in (pd.DataFrame([[1, 2]], columns=["a", "a"]),
                  pa.table([pa.array([1]), pa.array([2])], names=["a", "a"])):
        with pytest.raises(UnreadableInputError, match="names column 'a' more than once"):
            read_data(frame)
