"""Reading options of text files, and the readers of spreadsheet, SPSS/Stata/SAS and R files.

Text files (CSV, TSV) take :class:`ReadOptions`: the separator (sniffed when not given), the
encoding, the decimal mark and the strings that mean "missing". Spreadsheets (``.xlsx``, ``.xls``,
``.ods``) are read with polars' Excel reader (fastexcel); SPSS (``.sav``, ``.zsav``, ``.por``),
Stata (``.dta``), SAS (``.sas7bdat``, ``.xpt``) with pyreadstat (:mod:`sdckit._io._survey`: any
labelling, labels or codes, declared missing values kept as their codes); R (``.rds``, ``.RData``, ``.rda``) with pyreadr,
factors as categories. These three libraries are the optional extra ``sdckit[formats]``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import polars as pl

from sdckit._io._optional import require
from sdckit.errors import ParameterError, UnreadableInputError

DEFAULT_NA: tuple[str, ...] = ("", "NA", "NaN")
"""Strings read as missing by default: empty, R's ``NA`` (what ``write.csv`` writes) and ``NaN``."""

_SNIFFED = (",", ";", "\t", "|")


@dataclass(frozen=True)
class ReadOptions:
    """How a text file is read; every command takes the same four as options.

    Attributes
    ----------
    separator : the field separator; None sniffs it from the first lines (comma, semicolon, tab
        or bar; a tab for ``.tsv`` when sniffing is unsure, else a comma).
    encoding : the text encoding, e.g. ``"utf-8"`` (default; a byte-order mark is skipped),
        ``"latin-1"``, ``"cp1252"``.
    decimal : the decimal mark, ``"."`` or ``","`` (then the separator cannot be a comma).
    na_values : the strings that mean missing, compared after surrounding blanks are stripped.
    labels : for SPSS, Stata and SAS files: ``"labels"`` (default) shows a labelled variable's value
        labels as its values (categories; an unlabelled code stays, as its text), ``"codes"`` keeps
        its codes. Either way :func:`~sdckit._io._survey.read_labels` gives the labels.
    """

    separator: str | None = None
    encoding: str = "utf-8"
    decimal: str = "."
    na_values: tuple[str, ...] = DEFAULT_NA
    labels: str = "labels"

    def __post_init__(self) -> None:
        if self.labels not in ("labels", "codes"):
            raise ParameterError(
                f"labels={self.labels!r}: use 'labels' (a labelled SPSS/Stata variable shows its value labels) "
                "or 'codes' (its codes)."
            )
        if self.separator is not None and len(self.separator) != 1:
            raise ParameterError(
                f"separator={self.separator!r} must be one character, e.g. ';' or '\\t' (or None to sniff it)."
            )
        if self.decimal not in (".", ","):
            raise ParameterError(f"decimal={self.decimal!r}: use '.' or ','.")
        if self.decimal == "," and self.separator == ",":
            raise ParameterError(
                "decimal=',' and separator=',' cannot both hold: a file with decimal commas separates "
                "its fields with another character, e.g. separator=';'."
            )
        try:
            "".encode(self.encoding)
        except LookupError:
            raise ParameterError(
                f"encoding={self.encoding!r} is not an encoding Python knows; use e.g. 'utf-8', 'latin-1' "
                "or 'cp1252'."
            ) from None
        if isinstance(self.na_values, str):
            object.__setattr__(self, "na_values", (self.na_values,))
        object.__setattr__(self, "na_values", tuple(str(v) for v in self.na_values))

    @property
    def is_utf8(self) -> bool:
        """Whether polars can read the bytes as they are."""
        return self.encoding.lower().replace("_", "-") in ("utf-8", "utf8", "utf-8-sig")


def sniff_separator(sample: str, *, fallback: str, decimal: str = ".") -> str:
    """The separator of a text sample (its first lines): comma, semicolon, tab or bar.

    Of the candidates found in the header line, the one found as many times on the most lines
    (a malformed line does not change the verdict; its error then names it); ``fallback`` when
    the header holds none. With ``decimal=","`` the comma is no candidate.
    """
    candidates = [s for s in _SNIFFED if not (decimal == "," and s == ",")]
    lines = [ln for ln in sample.splitlines() if ln.strip()][:50]
    if len(lines) > 1 and not sample.endswith(("\n", "\r")):
        lines = lines[:-1]  # the last line of a sample can be cut short
    if not lines:
        return fallback
    best, best_score = fallback, 0
    for sep in candidates:
        width = lines[0].count(sep)
        if width == 0:
            continue
        score = sum(ln.count(sep) == width for ln in lines)
        if score > best_score:
            best, best_score = sep, score
    return best


def read_excel(path: Path) -> pl.DataFrame:
    """The first sheet of an ``.xlsx``, ``.xls`` or ``.ods`` file (its first row is the header)."""
    require("fastexcel", extra="formats", what=f"reading {path.suffix.lower()} files")
    return pl.read_excel(path, engine="calamine")


def read_stat(path: Path, ending: str, encoding: str | None = None, labels: str = "labels") -> pl.DataFrame:
    """An SPSS, Stata or SAS file, whatever its labelling (see :mod:`sdckit._io._survey`).

    ``labels="labels"``: a labelled variable holds its value labels, as categories (an unlabelled
    code stays, as its text); ``"codes"``: its codes. Declared (user-)missing codes stay their code,
    Stata's extended missing values their text (``".a"``); only the system-missing value is missing.
    """
    # lazy: start-up time (`import sdckit.risk` stays lean; readers of SPSS/Stata/SAS files only)
    from sdckit._io._survey import read_stat as read_survey

    return read_survey(path, ending, encoding, labels)


def _labels_as_categories(df: pl.DataFrame) -> pl.DataFrame:
    """Columns whose every value carries a label are categorical; text columns stay text."""
    return df.with_columns(
        pl.col(c).cast(pl.String).cast(pl.Categorical) for c, t in df.schema.items() if t == pl.Enum or t == pl.Object
    )


def read_r(path: Path, ending: str) -> pl.DataFrame:
    """The one data frame of an ``.rds`` file, or of an ``.RData``/``.rda`` file holding one.

    Factors become categories; ``NA`` is missing.
    """
    pyreadr = require("pyreadr", extra="formats", what=f"reading {ending} files")
    try:
        result = pyreadr.read_r(str(path), output_format="polars")
    except pyreadr.custom_errors.PyreadrError as err:
        raise UnreadableInputError(
            f"cannot read {path.name!r} as an R file: {err}. Save the data frame with saveRDS(df, "
            "'data.rds') or write.csv(df, 'data.csv', row.names = FALSE)."
        ) from None
    frames = {name: df for name, df in result.items() if isinstance(df, pl.DataFrame)}
    if len(frames) != 1:
        what = ", ".join(repr(n) for n in frames) if frames else "no data frame"
        raise UnreadableInputError(
            f"{path.name!r} holds {what}; sdckit reads a file with one data frame. In R, save the one "
            "you mean alone, e.g. saveRDS(df, 'data.rds')."
        )
    return _labels_as_categories(_without_automatic_row_names(next(iter(frames.values()))))


def _without_automatic_row_names(df: pl.DataFrame) -> pl.DataFrame:
    """pyreadr adds R's row names as a column ``rownames``; R's automatic ones ("1", "2", ...) are no data.
    A float ``NaN`` is R's ``NA`` (missing)."""
    floats = [c for c, t in df.schema.items() if t.is_float()]
    df = df.with_columns(pl.col(c).fill_nan(None) for c in floats)  # pyreadr reads R's NA as NaN
    if "rownames" not in df.columns:
        return df
    names = df["rownames"].cast(pl.String).to_list()
    if names == [str(i) for i in range(1, df.height + 1)]:
        return df.drop("rownames")
    return df


def write_r(frame: pl.DataFrame, path: Path, labels: Any = None) -> None:
    """Write ``frame`` as R's ``.rds``: one data frame, whose category columns, and the columns with value
    labels in ``labels`` (a :class:`~sdckit._io.SurveyLabels`), are factors (levels in the order of their
    codes, then the other values); every missing cell is ``NA`` (R has no declared missing values: a
    suppressed cell and a "don't know" are both ``NA``)."""
    pyreadr = require("pyreadr", extra="formats", what="writing .rds files")
    import pandas as pd  # pyreadr's own dependency; loaded only for an R release

    labelled = set(getattr(labels, "labelled", ()) or ())
    value_labels = getattr(labels, "value_labels", {}) or {}
    data: dict[str, Any] = {}
    for col in frame.columns:
        series = frame[col]
        if series.dtype in (pl.Categorical, pl.Enum) or (col in labelled and series.dtype == pl.String):
            values = series.cast(pl.String).to_list()
            ordered = [v for _, v in sorted(value_labels.get(col, {}).items(), key=lambda kv: str(kv[0]))]
            present = {v for v in values if v is not None}
            levels = [v for v in dict.fromkeys(ordered) if v in present]
            levels += sorted(present - set(levels))
            data[col] = pd.Categorical(values, categories=levels)
        elif series.dtype == pl.String:
            data[col] = pd.Series(series.to_list(), dtype=object)
        elif series.dtype == pl.Boolean:
            data[col] = pd.Series(series.to_list(), dtype="boolean")
        elif series.dtype.is_numeric():
            data[col] = pd.Series(series.cast(pl.Float64).fill_nan(None).to_numpy(), dtype=float)
        else:
            data[col] = pd.Series(series.cast(pl.String).to_list(), dtype=object)
    pyreadr.write_rds(str(path), pd.DataFrame(data))


def apply_na_values(df: pl.DataFrame, na_values: Sequence[str]) -> pl.DataFrame:
    """Text cells equal to one of ``na_values`` (after stripping blanks) become null."""
    marks = [v for v in na_values if v != ""]
    text = [c for c, t in df.schema.items() if t == pl.String]
    if not marks or not text:
        return df
    return df.with_columns(
        pl.when(pl.col(c).str.strip_chars().is_in(marks)).then(None).otherwise(pl.col(c)).alias(c) for c in text
    )


READERS = {
    ".xlsx": "excel",
    ".xlsm": "excel",
    ".xls": "excel",
    ".ods": "excel",
    ".sav": "stat",
    ".zsav": "stat",
    ".por": "stat",
    ".dta": "stat",
    ".sas7bdat": "stat",
    ".xpt": "stat",
    ".rds": "r",
    ".rdata": "r",
    ".rda": "r",
}
"""Endings read by the optional readers (``sdckit[formats]``)."""
