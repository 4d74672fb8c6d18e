"""Files from R, SPSS, Stata, SAS and spreadsheets, each written in the test by the matching library.

The two text files are the exact bytes R 4.2.2 wrote for
``df <- data.frame(age = c(30L, NA, 41L), income = c(1.5, NA, 2.25), sex = factor(c("F", "M", NA)),
town = c("Zürich", "NA", NA))``: ``write.csv(df, f, row.names = FALSE)`` and
``write.csv2(df, f, row.names = FALSE, fileEncoding = "latin1")`` (semicolons, decimal commas,
Latin-1). ``tests/data/small.sas7bdat`` comes from R's haven (see tests/data/README.md): no Python
library writes SAS7BDAT.
"""

from __future__ import annotations

import builtins
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import polars as pl
import pyreadr
import pyreadstat
import pytest

from sdckit import read_data
from sdckit._io import ReadOptions, read_path
from sdckit.errors import MissingExtraError, ParameterError, SdcWarning, UnreadableInputError

DATA = Path(__file__).resolve().parents[1] / "data"

R_WRITE_CSV = b'"age","income","sex","town"\n30,1.5,"F","Z\xc3\xbcrich"\nNA,NA,"M","NA"\n41,2.25,NA,NA\n'
R_WRITE_CSV2 = b'"age";"income";"sex";"town"\n30;1,5;"F";"Z\xfcrich"\nNA;NA;"M";"NA"\n41;2,25;NA;NA\n'
EXPECTED = {"age": [30, None, 41], "income": [1.5, None, 2.25], "sex": ["F", "M", None], "town": ["Zürich", None, None]}


def test_r_write_csv_reads_na_as_missing(tmp_path: Path) -> None:
    path = tmp_path / "r.csv"
    path.write_bytes(R_WRITE_CSV)
    df = read_path(path)
    assert df.schema["age"] == pl.Int64
    assert df.schema["income"] == pl.Float64
    assert df.to_dict(as_series=False) == EXPECTED
    # NA is a value again when the user says so (a country code, say)
    kept = read_path(path, ReadOptions(na_values=("",)))
    assert kept["town"].to_list() == ["Zürich", "NA", "NA"]


def test_r_row_names_are_named_and_announced(tmp_path: Path) -> None:
    path = tmp_path / "rn.csv"  # write.csv(df, f): the default keeps R's row names, header ""
    path.write_bytes(b'"","age","sex"\n"1",30,"F"\n"2",NA,"M"\n"3",41,NA\n')
    with pytest.warns(SdcWarning, match="R's row names"):
        df = read_path(path)
    assert df.columns == ["rownames", "age", "sex"]
    assert df["age"].to_list() == [30, None, 41]


def test_semicolon_decimal_comma_latin1(tmp_path: Path) -> None:
    path = tmp_path / "r2.csv"
    path.write_bytes(R_WRITE_CSV2)
    d = read_data(path, encoding="latin-1", decimal=",")  # the separator is sniffed
    assert d.frame.to_native().to_dict(as_series=False) == EXPECTED
    explicit = read_data(path, separator=";", encoding="cp1252", decimal=",")
    assert explicit.frame.to_native().to_dict(as_series=False) == EXPECTED
    with pytest.raises(UnreadableInputError, match=r"not UTF-8 text.*--encoding latin-1"):
        read_data(path, decimal=",")  # before: "line 2 has 2 fields but the header has 1"
    with pytest.raises(ParameterError, match="separator=';'"):
        ReadOptions(separator=",", decimal=",")
    with pytest.raises(ParameterError, match="encoding='latin-9x'"):
        ReadOptions(encoding="latin-9x")


def test_errors_keep_the_line_number(tmp_path: Path) -> None:
    path = tmp_path / "bad.csv"
    path.write_bytes(b"a;b;c\n1;2;3\n4;5;6\n7;8\n".replace(b"\n", b"\r\n"))
    with pytest.raises(UnreadableInputError, match=r"line 4 of 'bad.csv' has 2 field\(s\) but the header has 3"):
        read_path(path)
    latin = tmp_path / "latin.csv"
    latin.write_bytes("a;b\n1;x\n2;\xfcber\n".encode("latin-1"))
    with pytest.raises(UnreadableInputError, match=r"line 3 of 'latin.csv' is not ascii text.*--encoding"):
        read_path(latin, ReadOptions(encoding="ascii"))


LABELS = {"sex": {1.0: "female", 2.0: "male"}}


@pytest.fixture
def survey() -> pd.DataFrame:
    return pd.DataFrame({"sex": [1.0, 2.0, 1.0, np.nan], "age": [30.0, 41.0, 52.0, np.nan]})


@pytest.mark.parametrize("ending", [".sav", ".dta"])
def test_spss_and_stata_value_labels_become_categories(tmp_path: Path, survey: pd.DataFrame, ending: str) -> None:
    path = tmp_path / f"survey{ending}"
    writer = pyreadstat.write_sav if ending == ".sav" else pyreadstat.write_dta
    writer(survey, str(path), variable_value_labels=LABELS)
    df = read_path(path)
    assert df.schema["sex"] == pl.Categorical
    assert df["sex"].cast(pl.String).to_list() == ["female", "male", "female", None]  # the labels shown
    assert df["age"].to_list()[:3] == [30.0, 41.0, 52.0]
    assert df["age"][3] is None
    assert read_data(path, ["sex"], missing="drop").n_dropped == 1


def test_sas_files(tmp_path: Path, survey: pd.DataFrame) -> None:
    xpt = tmp_path / "survey.xpt"
    pyreadstat.write_xport(survey, str(xpt))
    assert read_path(xpt)["age"].to_list()[:3] == [30.0, 41.0, 52.0]
    sas = read_path(DATA / "small.sas7bdat")
    assert sas.to_dict(as_series=False) == {"age": [30.0, None, 41.0], "income": [1.5, 2.0, 2.25],
                                             "region": ["north", "south", "north"]}


def test_r_files(tmp_path: Path) -> None:
    frame = pd.DataFrame({"age": [30, 41, 52], "sex": pd.Categorical(["F", "M", "F"])})
    rds = tmp_path / "survey.rds"
    pyreadr.write_rds(str(rds), frame)
    df = read_path(rds)
    assert df.schema["sex"] == pl.Categorical
    assert df["sex"].cast(pl.String).to_list() == ["F", "M", "F"]
    rdata = tmp_path / "survey.RData"
    pyreadr.write_rdata(str(rdata), frame, df_name="survey")
    assert read_path(rdata)["age"].to_list() == [30, 41, 52]


def test_spreadsheets(tmp_path: Path) -> None:
    xlsx = tmp_path / "survey.xlsx"
    pl.DataFrame({"age": [30, 41], "town": ["Bern", "NA"]}).write_excel(xlsx)  # xlsxwriter
    assert read_path(xlsx).to_dict(as_series=False) == {"age": [30, 41], "town": ["Bern", None]}
    ods = tmp_path / "survey.ods"
    pd.DataFrame({"age": [30, 41], "town": ["Bern", "Thun"]}).to_excel(ods, engine="odf", index=False)
    assert read_path(ods).to_dict(as_series=False) == {"age": [30, 41], "town": ["Bern", "Thun"]}


def test_missing_reader_names_the_extra(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "survey.sav"
    pyreadstat.write_sav(pd.DataFrame({"a": [1.0]}), str(path))
    real_import = builtins.__import__

    def no_pyreadstat(name: str, *args: Any, **kwargs: Any) -> Any:
        if name == "pyreadstat":
            raise ImportError(name)
        return real_import(name, *args, **kwargs)

    monkeypatch.delitem(__import__("sys").modules, "pyreadstat")
    monkeypatch.setattr(builtins, "__import__", no_pyreadstat)
    with pytest.raises(MissingExtraError, match=r"needs pyreadstat: pip install 'sdckit\[formats\]'"):
        read_path(path)
