"""SPSS, Stata and SAS files in and out, with their labels and declared missing values (pyreadstat).

Reading (:func:`read_stat`) works whatever the labelling: a variable with labels for only some of
its codes reads, its unlabelled codes staying values. ``labels="labels"`` (the default) shows a
labelled variable's labels as its values (a category column; an unlabelled code becomes its own
text, ``"4"``); ``labels="codes"`` keeps the codes. Either way the labels travel with the data as
a :class:`SurveyLabels` (:func:`read_labels`): the variable labels, the value labels, SPSS's
declared (user-)missing codes and Stata's/SAS's extended missing values.

Declared missing values are never confused with suppression: an SPSS user-missing code (``-9``
"refused") is kept as its code, a value like any other; a Stata or SAS extended missing value
(``.a`` ... ``.z``) is kept as its text, ``".a"`` (so a numeric column holding one reads as text:
it cannot be masked as a number until the code is recoded). Only the system-missing value (and
an empty Stata string) is missing (null).

Writing (:func:`write_survey`, through :func:`sdckit._io.write_table` for ``.sav`` and ``.dta``)
puts the labels back and writes each suppressed cell as a declared missing value labelled
:data:`SUPPRESSED_LABEL`: an SPSS user-missing code (``-99999`` for numbers, ``*`` for text; the
next free one if taken), a Stata extended missing value (``.s``, or the next free letter; an empty
text for a string). Reading such a file with sdckit gives the suppressed cells back as missing.
"""

from __future__ import annotations

import math
import re
import warnings
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

import numpy as np
import polars as pl
from numpy.typing import NDArray

from sdckit._io._bounds import check_stat_size
from sdckit._io._optional import require
from sdckit.errors import OutputError, ParameterError, SdcWarning

__all__ = ["SUPPRESSED_LABEL", "LabelsMode", "SurveyLabels", "read_labels", "read_stat", "write_survey"]

LabelsMode = Literal["labels", "codes"]
LABEL_MODES = ("labels", "codes")

SUPPRESSED_LABEL = "suppressed (disclosure control)"
"""The value label of the declared missing value that stands for a suppressed cell in a written file."""

_NUMBER_CODES = (-99999.0, -999999.0, -9999999.0, -99999999.0)
_TEXT_CODES = ("*", "**", "***", "*SDC*")
_LETTERS = "stuvwxyzabcdefghijklmnopqr"
_WITH_USER_MISSING = (".sav", ".zsav", ".dta", ".sas7bdat")
_LABELLED = (".sav", ".zsav", ".por", ".dta")


def check_labels_mode(labels: str) -> str:
    if labels not in LABEL_MODES:
        raise ParameterError(
            f"labels={labels!r}: use 'labels' (a labelled variable shows its value labels) or 'codes' (its codes)."
        )
    return labels


@dataclass(frozen=True)
class SurveyLabels:
    """The labels and declared missing values of an SPSS, Stata or SAS file, kept beside the data.

    Attributes
    ----------
    file_format : the ending of the file read (``.sav``, ``.dta``, ...); ``""`` for data from elsewhere.
    mode : ``"labels"`` (labelled variables hold their labels) or ``"codes"`` (their codes).
    variable_labels : column -> its label.
    value_labels : column -> {code: label}; a code is a number, a text, or a Stata letter (``"a"``).
    missing_ranges : column -> SPSS's declared missing values: codes, or ``{"lo": a, "hi": b}`` ranges.
    extended_missing : column -> Stata's/SAS's extended missing letters used in it (``"a"`` for ``.a``).
    suppressed : column -> the rows whose cell a masking step set to missing (written as the
        declared missing value labelled :data:`SUPPRESSED_LABEL`); filled by the pipeline.
    """

    file_format: str = ""
    mode: str = "labels"
    variable_labels: Mapping[str, str] = field(default_factory=dict)
    value_labels: Mapping[str, Mapping[Any, str]] = field(default_factory=dict)
    missing_ranges: Mapping[str, tuple[Any, ...]] = field(default_factory=dict)
    extended_missing: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    suppressed: Mapping[str, NDArray[np.bool_]] = field(default_factory=dict, repr=False, compare=False)
    declared: Mapping[str, NDArray[np.object_]] = field(default_factory=dict, repr=False, compare=False)
    """column -> per row, the declared missing code a cell held (None elsewhere), for the numeric
    columns whose declared missing cells read as missing (see :func:`read_stat`); written back as it was."""

    @property
    def labelled(self) -> tuple[str, ...]:
        """Columns with value labels on some value that is not a declared missing code (categorical by
        default): an age labelled only at 98 "don't know" (declared missing) is a number."""
        return tuple(c for c, v in self.value_labels.items() if any(not self.is_missing_code(c, k) for k in v))

    def is_missing_code(self, column: str, code: Any) -> bool:
        """Whether ``code`` is a declared missing value of ``column`` (an SPSS code or range, a Stata letter)."""
        if isinstance(code, str) and len(code) == 1 and code in _LETTERS + "_" and self.file_format != ".sav":
            return True
        return _in_ranges(code, self.missing_ranges.get(column, ()))

    def select(self, columns: Iterable[str]) -> SurveyLabels:
        """The labels of ``columns`` only."""
        keep = set(columns)
        return replace(
            self,
            variable_labels={c: v for c, v in self.variable_labels.items() if c in keep},
            value_labels={c: v for c, v in self.value_labels.items() if c in keep},
            missing_ranges={c: v for c, v in self.missing_ranges.items() if c in keep},
            extended_missing={c: v for c, v in self.extended_missing.items() if c in keep},
            suppressed={c: v for c, v in self.suppressed.items() if c in keep},
            declared={c: v for c, v in self.declared.items() if c in keep},
        )

    def reordered(self, order: NDArray[np.intp]) -> SurveyLabels:
        """A copy whose per-row masks follow the rows put in ``order`` (the release's shuffle)."""
        return replace(
            self,
            suppressed={c: m[order] for c, m in self.suppressed.items() if m.shape[0] == order.shape[0]},
            declared={c: m[order] for c, m in self.declared.items() if m.shape[0] == order.shape[0]},
        )

    def with_suppressed(self, masks: Mapping[str, NDArray[np.bool_]]) -> SurveyLabels:
        """A copy that knows which cells were suppressed (column -> boolean mask over the rows)."""
        return replace(self, suppressed={c: np.asarray(m, dtype=bool) for c, m in masks.items() if np.any(m)})

    def to_dict(self) -> dict[str, Any]:
        """Plain data, for the report sidecar."""
        return {
            "file_format": self.file_format,
            "mode": self.mode,
            "variable_labels": dict(self.variable_labels),
            "value_labels": {c: {_key_text(k): v for k, v in m.items()} for c, m in self.value_labels.items()},
            "missing_ranges": {c: list(v) for c, v in self.missing_ranges.items()},
            "extended_missing": {c: [f".{x}" for x in v] for c, v in self.extended_missing.items()},
            "suppressed_cells": {c: int(m.sum()) for c, m in self.suppressed.items()},
            "declared_missing_cells": {c: int(sum(v is not None for v in m)) for c, m in self.declared.items()},
        }


def _in_ranges(code: Any, ranges: Iterable[Any]) -> bool:
    if not isinstance(code, (int, float)) or isinstance(code, bool):
        return False
    for spec in ranges:
        lo, hi = (spec["lo"], spec["hi"]) if isinstance(spec, dict) else (spec, spec)
        if isinstance(lo, (int, float)) and isinstance(hi, (int, float)) and lo <= code <= hi:
            return True
    return False


def _key_text(key: Any) -> str:
    return code_text(key) if isinstance(key, float) else str(key)


def code_text(value: Any) -> str:
    """A code as text at full precision: ``4.0`` -> ``"4"``, ``2.5`` -> ``"2.5"``."""
    if isinstance(value, float) and math.isfinite(value) and value.is_integer() and abs(value) < 2**53:
        return str(int(value))
    return repr(value) if isinstance(value, float) else str(value)


def _reader(pyreadstat: Any, ending: str) -> Any:
    return {
        ".sav": pyreadstat.read_sav,
        ".zsav": pyreadstat.read_sav,
        ".por": pyreadstat.read_por,
        ".dta": pyreadstat.read_dta,
        ".sas7bdat": pyreadstat.read_sas7bdat,
        ".xpt": pyreadstat.read_xport,
    }[ending]


def _read(path: Path, ending: str, encoding: str | None, *, metadataonly: bool = False) -> tuple[Any, Any]:
    pyreadstat = require("pyreadstat", extra="formats", what=f"reading {ending} files")
    kwargs: dict[str, Any] = {"output_format": "pandas", "metadataonly": metadataonly}
    if ending in _WITH_USER_MISSING:
        kwargs["user_missing"] = True  # declared missing codes stay their code, never a blank
    if encoding is not None and ending != ".por":
        kwargs["encoding"] = encoding
    with warnings.catch_warnings():  # the library's own warnings are not the user's business
        warnings.simplefilter("ignore")
        return _reader(pyreadstat, ending)(str(path), **kwargs)


def _is_suppression(code: Any, labels: Mapping[Any, str]) -> bool:
    return labels.get(code) == SUPPRESSED_LABEL


def _labels_of(meta: Any, ending: str, mode: str) -> SurveyLabels:
    value_labels: dict[str, dict[Any, str]] = {}
    for col, mapping in (getattr(meta, "variable_value_labels", None) or {}).items():
        kept = {k: v for k, v in mapping.items() if v != SUPPRESSED_LABEL}
        if kept:
            value_labels[col] = kept
    ranges: dict[str, tuple[Any, ...]] = {}
    for col, spec in (getattr(meta, "missing_ranges", None) or {}).items():
        labels = (getattr(meta, "variable_value_labels", None) or {}).get(col, {})
        items = tuple(
            r["lo"] if r["lo"] == r["hi"] else {"lo": r["lo"], "hi": r["hi"]}
            for r in spec
            if not (r["lo"] == r["hi"] and _is_suppression(r["lo"], labels))
        )
        if items:
            ranges[col] = items
    extended: dict[str, tuple[str, ...]] = {}
    for col, letters in (getattr(meta, "missing_user_values", None) or {}).items():
        labels = (getattr(meta, "variable_value_labels", None) or {}).get(col, {})
        kept_letters = tuple(str(x) for x in letters if not _is_suppression(x, labels))
        if kept_letters:
            extended[col] = kept_letters
    names = getattr(meta, "column_names", None) or []
    var_labels = {c: lab for c, lab in (getattr(meta, "column_names_to_labels", None) or {}).items() if lab and c in names}
    return SurveyLabels(ending, mode, var_labels, value_labels, ranges, extended)


def read_labels(path: str | Path, *, labels: str = "labels", encoding: str | None = None) -> SurveyLabels | None:
    """The labels and declared missing values of an SPSS, Stata or SAS file (None for other files)."""
    p = Path(path)
    ending = p.suffix.lower()
    if ending not in (".sav", ".zsav", ".por", ".dta", ".sas7bdat", ".xpt"):
        return None
    mode = check_labels_mode(labels)
    # Stata's and SAS's extended missing letters are listed only after the data is read
    df, meta = _read(p, ending, encoding, metadataonly=ending in (".sav", ".zsav", ".por", ".xpt"))
    info = _labels_of(meta, ending, mode)
    if ending in (".sav", ".zsav") and info.missing_ranges:
        df, meta = _read(p, ending, encoding)  # the rows of the declared missing cells
    if df is None or not len(df.columns):
        return info
    kinds = getattr(meta, "readstat_variable_types", None) or {}
    all_labels = getattr(meta, "variable_value_labels", None) or {}
    declared: dict[str, NDArray[np.object_]] = {}
    for col in df.columns:
        letters_only = mode == "codes" and ending in (".dta", ".sas7bdat", ".xpt") and kinds.get(col) != "string"
        if kinds.get(col) == "string" or not (_plain_number(col, all_labels.get(col, {}), info) or letters_only):
            continue
        suppressed = {k for k, v in all_labels.get(col, {}).items() if v == SUPPRESSED_LABEL}
        cells = _declared_of(df[col].to_numpy(dtype=object), col, info, suppressed)
        if any(v is not None for v in cells):
            declared[col] = cells
    return replace(info, declared=declared)


def _letters_only(info: SurveyLabels) -> SurveyLabels:
    """For ``codes`` reading of a labelled Stata/SAS variable: its extended missing letters are missing
    (a code is a number; a letter is none), its labels kept."""
    return replace(info, missing_ranges={}, file_format="letters")


def _plain_number(column: str, labels: Mapping[Any, str], info: SurveyLabels) -> bool:
    """A numeric variable read as numbers in either mode: no value label but on its declared missing codes."""
    return all(v == SUPPRESSED_LABEL or info.is_missing_code(column, k) for k, v in labels.items())


def _declared_of(
    raw: NDArray[Any], column: str, info: SurveyLabels, suppressed: set[Any]
) -> NDArray[np.object_]:
    """Per row, the declared missing code of a numeric column's cell (a number, a Stata letter), else
    None; a cell holding the suppression code of an earlier release is plain missing."""
    ranges = info.missing_ranges.get(column, ())
    out = np.full(raw.shape[0], None, dtype=object)
    for i, v in enumerate(raw.tolist()):
        if v in suppressed:
            continue
        if isinstance(v, str):
            out[i] = v
        elif isinstance(v, (int, float)) and not (isinstance(v, float) and math.isnan(v)) and _in_ranges(v, ranges):
            out[i] = float(v)
    return out


def read_stat(path: Path, ending: str, encoding: str | None = None, labels: str = "labels") -> pl.DataFrame:
    """An SPSS, Stata or SAS file as a polars frame, whatever its labelling (see the module's text).

    With ``labels="labels"`` a labelled variable is a category column of its labels (an unlabelled
    code becomes its text); with ``"codes"`` it keeps its codes. Declared missing codes stay their
    code (Stata's extended missing as ``".a"``); cells written as the suppression code read as missing.

    A numeric variable with no value label but on its declared missing codes (an age labelled only at
    98 "don't know", declared missing; a Stata ``.d``) is a number in either mode, and its declared
    missing cells are missing (null): never an age of 98, never banded; :func:`read_labels` keeps
    which cell held which code, and a written ``.sav``/``.dta`` declares them again. An empty Stata
    string is missing (Stata's missing text).
    """
    mode = check_labels_mode(labels)
    _, head = _read(path, ending, encoding, metadataonly=True)
    _check_size(path, head)  # a compressed .zsav or .sas7bdat is sized before it is inflated
    df, meta = _read(path, ending, encoding)
    all_labels = getattr(meta, "variable_value_labels", None) or {}
    kinds = getattr(meta, "readstat_variable_types", None) or {}
    info = _labels_of(meta, ending, mode)
    columns: list[pl.Series] = []
    for col in df.columns:
        labels_of = all_labels.get(col, {}) if ending in _LABELLED else {}
        is_text = kinds.get(col) == "string"
        plain = not is_text and _plain_number(col, labels_of, info)
        if not is_text and not plain and mode == "codes" and ending in (".dta", ".sas7bdat", ".xpt"):
            columns.append(_column(col, df[col], labels_of, is_text, mode, _letters_only(info), ending))
            continue
        columns.append(_column(col, df[col], labels_of, is_text, mode, info if plain else None, ending))
    return pl.DataFrame(columns) if columns else pl.DataFrame()


def _column(
    name: str, values: Any, labels: Mapping[Any, str], is_text: bool, mode: str,
    plain: SurveyLabels | None = None, ending: str = "",
) -> pl.Series:
    raw = values.to_numpy(dtype=object)
    suppressed = {k for k, v in labels.items() if v == SUPPRESSED_LABEL}
    if plain is not None:  # a number: its declared missing cells are missing
        ranges = plain.missing_ranges.get(name, ())
        raw = np.array([None if isinstance(v, str) or _in_ranges(v, ranges) else v for v in raw.tolist()], dtype=object)
        values = pd_series_of(raw, values)
        labels = {} if plain.mode != "codes" or plain.file_format != "letters" else labels
    shown = {k: v for k, v in labels.items() if v != SUPPRESSED_LABEL}
    letters = not is_text and any(isinstance(v, str) and v not in suppressed for v in raw)

    def missing(v: Any) -> bool:
        return v is None or (isinstance(v, float) and math.isnan(v)) or v in suppressed

    if is_text:
        empty = "" if ending == ".dta" else None  # Stata has no other missing text
        out = [
            None if v is None or v == empty or v in suppressed else (shown.get(v, v) if mode == "labels" else v)
            for v in raw
        ]
        series = pl.Series(name, out, dtype=pl.String)
        return series.cast(pl.Categorical) if mode == "labels" and shown else series
    if (mode == "labels" and shown) or letters:
        out = []
        for v in raw:
            if missing(v):
                out.append(None)
            elif mode == "labels" and v in shown:
                out.append(shown[v])
            else:
                out.append(f".{v}" if isinstance(v, str) else code_text(v))
        return pl.Series(name, out, dtype=pl.String).cast(pl.Categorical)
    if values.dtype == object:  # dates and the like: let polars type them
        return pl.Series(name, [None if missing(v) else v for v in raw])
    arr = np.asarray(values, dtype=float) if values.dtype.kind in "fiu" else None
    if arr is None:
        return pl.Series(name, values)
    mask = np.isnan(arr) | np.isin(arr, [k for k in suppressed if isinstance(k, (int, float))])
    return pl.Series(name, np.where(mask, np.nan, arr)).fill_nan(None)


def _check_size(path: Path, meta: Any) -> None:
    rows = getattr(meta, "number_rows", None)
    names = list(getattr(meta, "column_names", None) or [])
    if rows is None or not names:
        return
    kinds = getattr(meta, "readstat_variable_types", None) or {}
    storage = getattr(meta, "variable_storage_width", None) or {}
    widths = [max(8, int(storage.get(c) or 8)) if kinds.get(c) == "string" else 8 for c in names]
    check_stat_size(path, int(rows), widths)


def pd_series_of(raw: NDArray[Any], like: Any) -> Any:
    """``raw`` (None for missing) as a float pandas series when every value is a number, else as objects."""
    if all(v is None or (isinstance(v, (int, float)) and not isinstance(v, bool)) for v in raw.tolist()):
        return type(like)(np.array([np.nan if v is None else float(v) for v in raw.tolist()], dtype=float))
    return type(like)(raw)


# --- writing ---------------------------------------------------------------------------------------


def _free(candidates: Iterable[Any], used: set[Any]) -> Any:
    return next((c for c in candidates if c not in used), None)


def _to_codes(series: pl.Series, labels: Mapping[Any, str], ending: str, letters: tuple[str, ...]) -> list[Any]:
    """A label column back to its codes (a label -> its code; ``".a"`` -> the letter; a code's text -> the number)."""
    inverse = {v: k for k, v in labels.items()}
    out: list[Any] = []
    for v in series.cast(pl.String).to_list():
        if v is None:
            out.append(None)
        elif v in inverse:
            code = inverse[v]
            out.append(float(code) if isinstance(code, int) else code)
        elif ending == ".dta" and len(v) == 2 and v[0] == "." and v[1] in _LETTERS + "_":
            out.append(v[1])
        else:
            try:
                out.append(float(v))
            except ValueError:
                out.append(v)
    return out


def _is_code(v: Any, ending: str) -> bool:
    return isinstance(v, float) or (ending == ".dta" and isinstance(v, str) and len(v) == 1)


def _coded(labels: Mapping[Any, str], ending: str) -> bool:
    """Whether the labels are those of a numeric variable (number codes, Stata letters)."""
    return all(_is_code(float(k) if isinstance(k, int) else k, ending) for k in labels)


def _first_number(text: str) -> float:
    """The first number in a label (``"[20, 40)"`` -> 20, ``"(-inf, 0)"`` -> -inf), to order bands."""
    match = re.search(r"-?inf|-?\d+(?:\.\d+)?(?:e[-+]?\d+)?", text)
    return float(match.group()) if match else math.inf


def _new_codes(
    values: list[Any], labels: Mapping[Any, str], info: SurveyLabels, column: str, ending: str
) -> tuple[list[Any], dict[Any, str]]:
    """Codes 1, 2, ... (skipping codes in use and declared missing ones) for the texts among ``values``,
    in the order of their first number (bands in order), each labelled with its text; a label whose
    code no longer occurs is dropped unless its code is a declared missing value."""
    present = {v for v in values if v is not None}
    texts = sorted({v for v in present if not _is_code(v, ending)}, key=lambda t: (_first_number(t), t))
    used = {float(k) for k in labels if isinstance(k, (int, float))} | {v for v in present if isinstance(v, float)}
    used |= {float(c) for c in info.declared.get(column, np.array([], dtype=object)).tolist() if isinstance(c, (int, float))}
    code_of: dict[str, float] = {}
    candidate = 1.0
    for t in texts:
        while candidate in used or info.is_missing_code(column, candidate):
            candidate += 1.0
        code_of[t] = candidate
        used.add(candidate)
    kept = {k: v for k, v in labels.items()
            if (float(k) if isinstance(k, int) else k) in present or info.is_missing_code(column, k)}
    out = [code_of.get(v, v) if isinstance(v, str) else v for v in values]
    return out, {**kept, **{c: t for t, c in code_of.items()}}


def write_survey(
    frame: pl.DataFrame, path: Path, ending: str, labels: SurveyLabels | None = None, *, shown: str | None = None
) -> None:
    """Write ``frame`` as SPSS ``.sav`` or Stata ``.dta`` with ``labels`` (see the module's text).

    Suppressed cells (``labels.suppressed``) are written as a declared missing value labelled
    :data:`SUPPRESSED_LABEL`; other missing cells as the system-missing value.
    """
    pyreadstat = require("pyreadstat", extra="formats", what=f"writing {ending} files")
    import pandas as pd  # pyreadstat's own dependency
    info = labels if labels is not None else SurveyLabels()
    data: dict[str, Any] = {}
    value_labels: dict[str, dict[Any, str]] = {}
    ranges: dict[str, list[Any]] = {}
    extended: dict[str, list[str]] = {}
    full_ranges = []
    for col in frame.columns:
        series = frame[col]
        col_labels = dict(info.value_labels.get(col, {}))
        letters = tuple(info.extended_missing.get(col, ()))
        text = series.dtype in (pl.String, pl.Categorical, pl.Enum)
        declared_cells = info.declared.get(col)
        if declared_cells is not None and declared_cells.shape[0] != frame.height:
            declared_cells = None
        if text and (col_labels or letters or declared_cells is not None):
            values = _to_codes(series, col_labels, ending, letters)
            present = [v for v in values if v is not None]
            if _coded(col_labels, ending) and any(not _is_code(v, ending) for v in present):
                # a recoded variable (bands, merged codes): each new text gets a code and the code its label
                values, col_labels = _new_codes(values, col_labels, info, col, ending)
                present = [v for v in values if v is not None]
            if all(_is_code(v, ending) for v in present):
                text = False  # the codes of a labelled numeric variable
            elif not all(isinstance(v, str) for v in present) or not all(isinstance(k, str) for k in col_labels):
                values = series.cast(pl.String).to_list()  # text among numbers: written as the text it is
                col_labels = {}
        elif text:
            values = series.cast(pl.String).to_list()
        elif series.dtype == pl.Boolean:
            values = [None if v is None else float(v) for v in series.to_list()]
        elif series.dtype.is_numeric():
            values = [None if v is None or (isinstance(v, float) and math.isnan(v)) else float(v) for v in series.to_list()]
        else:
            values = series.to_list()
        if declared_cells is not None and not text:  # the declared missing cells get their code back
            values = [c if v is None and c is not None else v for v, c in zip(values, declared_cells.tolist(), strict=True)]
        mask = info.suppressed.get(col)
        if mask is not None and mask.shape[0] != len(values):
            mask = None
        nulls = np.array([v is None for v in values], dtype=bool)
        hit = (mask & nulls) if mask is not None else np.zeros(len(values), dtype=bool)
        if hit.any():
            if ending == ".dta" and not text:
                used = set(letters) | {v for v in values if isinstance(v, str)}
                code: Any = _free(_LETTERS, used)
                extended[col] = sorted({*letters, code})
            elif ending == ".dta":
                code = ""  # Stata's missing text
            elif text:
                code = _free(_TEXT_CODES, {v for v in values if v is not None} | set(col_labels))
            else:
                code = _free(_NUMBER_CODES, {v for v in values if v is not None} | set(col_labels))
            declared = list(info.missing_ranges.get(col, ())) if ending == ".sav" else []
            if ending == ".sav" and (len(declared) >= 3 or (sum(isinstance(d, dict) for d in declared) and len(declared) >= 2)):
                full_ranges.append(col)
                code = None
            if code is not None:
                values = [code if h else v for v, h in zip(values, hit, strict=True)]
                if code != "":
                    col_labels[code] = SUPPRESSED_LABEL
                if ending == ".sav":
                    ranges[col] = [*declared, code]
        elif ending == ".sav" and info.missing_ranges.get(col):
            ranges[col] = list(info.missing_ranges[col])
        if ending == ".dta" and letters and col not in extended:
            extended[col] = list(letters)
        if ending == ".sav" and info.missing_ranges.get(col) and col not in ranges:
            ranges[col] = list(info.missing_ranges[col])
        if col_labels:
            value_labels[col] = col_labels
        if not text and any(isinstance(v, str) for v in values):
            data[col] = pd.Series(values, dtype=object).where(pd.notna(pd.Series(values, dtype=object)), np.nan)
        elif not text:
            data[col] = pd.Series([np.nan if v is None else v for v in values], dtype=float)
        else:
            data[col] = pd.Series(["" if v is None else v for v in values], dtype=object)
    if full_ranges:
        warnings.warn(
            f"{', '.join(full_ranges)}: SPSS allows three declared missing values per variable and the column has "
            "them all; its suppressed cells are written as system-missing (blank).",
            SdcWarning,
            stacklevel=3,
        )
    df = pd.DataFrame(data)
    kwargs: dict[str, Any] = {
        "column_labels": {c: info.variable_labels[c] for c in frame.columns if c in info.variable_labels} or None,
        "variable_value_labels": value_labels or None,
    }
    if ending == ".sav":
        kwargs["missing_ranges"] = ranges or None
    else:
        kwargs["missing_user_values"] = extended or None
    writer = pyreadstat.write_sav if ending == ".sav" else pyreadstat.write_dta
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            writer(df, str(path), **kwargs)
    except Exception as err:  # pyreadstat's own errors: the reason is what matters
        reason = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        bad = next((c for c in frame.columns if not _valid_name(c)), None)
        hint = (
            f" Column {bad!r} is not a valid {'SPSS' if ending == '.sav' else 'Stata'} variable name (letters, digits and _ "
            "only, starting with a letter): rename it, or write Parquet or CSV."
            if bad is not None
            else " Write Parquet or CSV instead."
        )
        name = shown or path.name  # the output's name, never the temporary file's
        raise OutputError(f"cannot write {name!r} as {ending}: {reason}.{hint}") from None


def _valid_name(name: str) -> bool:
    return bool(name) and (name[0].isalpha()) and all(ch.isalnum() or ch == "_" for ch in name) and len(name) <= 32


def declared_as_missing(frame: pl.DataFrame, labels: SurveyLabels) -> pl.DataFrame:
    """``frame`` (a written ``.sav``/``.dta`` read back) with the cells of ``labels.declared`` missing again.

    A numeric column's declared missing cells (an age's 98 "don't know") are missing in the release in
    memory; once the column is recoded into labelled bands, the written file reads the code back as its
    label. Here every cell holding one of the column's declared codes, as its label, its text
    (``"98"``, ``".d"``) or its number, is missing again, so the file measures as the release did.
    """
    replaced = []
    for col, cells in labels.declared.items():
        if col not in frame.columns:
            continue
        codes = {c for c in cells.tolist() if c is not None}
        shown = dict(labels.value_labels.get(col, {}))
        texts = set()
        for c in codes:
            texts |= {code_text(c), f".{c}" if isinstance(c, str) else code_text(c)}
            for key in (c, int(c) if isinstance(c, float) and c.is_integer() else c):
                if key in shown:
                    texts.add(shown[key])
        if frame.schema[col].is_numeric():
            numbers = [float(c) for c in codes if isinstance(c, float)]
            replaced.append(pl.when(pl.col(col).is_in(numbers)).then(None).otherwise(pl.col(col)).alias(col))
        else:
            replaced.append(
                pl.when(pl.col(col).cast(pl.String).is_in(sorted(texts))).then(None).otherwise(pl.col(col)).alias(col)
            )
    return frame.with_columns(replaced) if replaced else frame


def declared_missing_text(labels: SurveyLabels | None) -> dict[str, str]:
    """Column -> its declared missing codes held in the data, as a user reads them: ``98 "don't know"``, ``.d``."""
    if labels is None:
        return {}
    out = {}
    for col, cells in labels.declared.items():
        codes = sorted({c for c in cells.tolist() if c is not None}, key=str)
        shown = labels.value_labels.get(col, {})
        parts = []
        for c in codes:
            text = f".{c}" if isinstance(c, str) else code_text(c)
            label = shown.get(c, shown.get(int(c), None) if isinstance(c, float) and c.is_integer() else None)
            parts.append(f'{text} "{label}"' if label else text)
        if parts:
            out[col] = ", ".join(parts)
    return out


def value_labels_text(labels: SurveyLabels | None, frame: pl.DataFrame) -> dict[str, dict[str, str]]:
    """Column -> {code as text: label} of the labelled columns that hold their labels in ``frame``."""
    if labels is None or labels.mode != "labels":
        return {}
    return {
        c: {code_text(k) if isinstance(k, float) else str(k): v for k, v in labels.value_labels[c].items()}
        for c in labels.labelled
        if c in frame.columns and frame.schema[c] in (pl.Categorical, pl.String)
    }


def survey_name_problem(columns: Iterable[str], ending: str) -> str | None:
    """Why a ``.sav``/``.dta`` release cannot hold these columns (a name SPSS or Stata refuses), with the fix; None when it can."""
    if ending not in (".sav", ".dta"):
        return None
    bad = next((c for c in columns if not _valid_name(c)), None)
    if bad is None:
        return None
    program = "SPSS" if ending == ".sav" else "Stata"
    return (f"column {bad!r} is not a valid {program} variable name (letters, digits and _ only, starting with a letter, "
            f"at most 32 characters): rename it before sdckit, or write Parquet, CSV or .rds")
