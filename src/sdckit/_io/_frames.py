"""Reading paths and wrapping native frames with narwhals."""

from __future__ import annotations

import csv
import gzip
import io
import os
import warnings
import zlib
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeAlias

import narwhals as nw
import numpy as np
import polars as pl
from numpy.typing import NDArray

from sdckit._io._bounds import check_parquet, check_stream, check_zip
from sdckit._io._formats import (
    READERS,
    ReadOptions,
    apply_na_values,
    read_excel,
    read_r,
    read_stat,
    sniff_separator,
)
from sdckit.errors import (
    ColumnNotFoundError,
    EmptyTableError,
    FileNotFoundInputError,
    MissingExtraError,
    ParameterError,
    SdcWarning,
    UnreadableInputError,
)

DataSource: TypeAlias = "str | os.PathLike[str] | Any"
"""A path (CSV, TSV, Parquet, JSON lines, optionally gzipped; Excel/ODS, SPSS, Stata, SAS and R
files with ``sdckit[formats]``) or a frame: pandas, polars, pyarrow, or a lazy frame that narwhals
accepts (polars LazyFrame, DuckDB relation, Dask, PySpark)."""

_READERS = {
    ".csv": "csv",
    ".tsv": "tsv",
    ".txt": "csv",
    ".parquet": "parquet",
    ".pq": "parquet",
    ".jsonl": "ndjson",
    ".ndjson": "ndjson",
    ".json": "ndjson",
    **READERS,
}


MAX_DECOMPRESSED_BYTES = 2 << 30
"""Largest size (bytes, 2 GiB) a gzipped input may expand to; a larger file is refused."""
MAX_DECOMPRESSION_RATIO = 100
"""Largest ratio of decompressed to compressed size a gzipped input may have (text data compresses
5-20 times; a decompression bomb, e.g. 8 MB of gzip expanding to 4.5 GiB, over 500 times)."""
_INFLATE_CHUNK = 1 << 20


def check_decompressed_size(
    path: Path, *, max_bytes: int | None = None, max_ratio: float | None = None
) -> int:
    """Stream ``path`` (gzip, every member) through the decompressor without keeping its output, and
    refuse it once it expands beyond ``max_bytes`` (default :data:`MAX_DECOMPRESSED_BYTES`) or
    ``max_ratio`` times its size on disk (default :data:`MAX_DECOMPRESSION_RATIO`). Memory stays
    at one chunk of 1 MiB of output. Returns the decompressed size.

    Raises :class:`UnreadableInputError` (one line, with the fix) for a file over either limit.
    """
    cap_bytes = MAX_DECOMPRESSED_BYTES if max_bytes is None else max_bytes
    ratio = MAX_DECOMPRESSION_RATIO if max_ratio is None else max_ratio
    on_disk = max(1, path.stat().st_size)
    cap = min(cap_bytes, int(ratio * on_disk))
    total = 0
    with open(path, "rb") as fh:
        d = zlib.decompressobj(wbits=31)
        buf = b""
        while True:
            if not buf and not (buf := fh.read(_INFLATE_CHUNK)):
                break
            try:
                total += len(d.decompress(buf, _INFLATE_CHUNK))
            except zlib.error:
                return total  # not (valid) gzip: the reader reports its own message
            if total > cap:
                raise UnreadableInputError(
                    f"{str(path)!r} expands beyond {cap:,} bytes ({ratio:g} times its {on_disk:,} bytes on "
                    f"disk, at most {cap_bytes:,}): refused as a possible decompression bomb; if you trust it, "
                    f"decompress it first (gunzip {path.name}) and give the plain file."
                )
            if d.eof:  # a gzip file may hold several members, one after the other
                buf, d = d.unused_data, zlib.decompressobj(wbits=31)
            else:
                buf = d.unconsumed_tail
    return total


def _format_of(path: Path) -> str:
    suffixes = [s.lower() for s in path.suffixes]
    if suffixes and suffixes[-1] == ".gz":
        suffixes = suffixes[:-1]
        if suffixes and _READERS.get(suffixes[-1]) in ("excel", "stat", "r"):
            raise UnreadableInputError(
                f"{str(path)!r}: {suffixes[-1]} files are read unzipped; unzip it first (gunzip {path.name})."
            )
    if not suffixes or suffixes[-1] not in _READERS:
        known = ", ".join(sorted(_READERS))
        raise UnreadableInputError(
            f"cannot tell the format of {str(path)!r} from its name. "
            f"Use one of the endings {known} (optionally followed by .gz)."
        )
    return _READERS[suffixes[-1]]


def _ending(path: Path) -> str:
    suffixes = [s.lower() for s in path.suffixes]
    return suffixes[-1] if suffixes else ""


def read_path(path: str | os.PathLike[str], options: ReadOptions | None = None) -> pl.DataFrame:
    """Read a data file into a polars DataFrame, by its ending.

    CSV/TSV (``.gz`` allowed), Parquet, JSON lines; with the extra ``sdckit[formats]`` also
    ``.xlsx``/``.xls``/``.ods`` (first sheet), ``.sav``/``.zsav``/``.por``, ``.dta``,
    ``.sas7bdat``, ``.xpt`` (value labels as categories) and ``.rds``/``.RData``/``.rda``.

    Text files follow ``options`` (:class:`ReadOptions`: separator sniffed unless given, encoding,
    decimal mark, the strings read as missing, by default empty, ``NA`` and ``NaN``). Fields are
    stripped of surrounding blanks (the UCI files pad them) and numbers re-typed; no value is
    dropped. Blank lines are not rows (a file ending in an empty line gains no all-null user).
    Raises :class:`FileNotFoundInputError` for a missing path and :class:`UnreadableInputError`
    for a file that does not parse, including a row with more or fewer fields than the header (the
    message gives its line number) and a reader that is not installed (the message gives the
    ``pip install``).
    """
    opts = options if options is not None else ReadOptions()
    p = Path(path)
    if not p.exists():
        raise FileNotFoundInputError(str(path))
    if p.is_dir():
        raise UnreadableInputError(f"{str(path)!r} is a folder; give the path of a data file.")
    fmt = _format_of(p)
    if p.stat().st_size == 0:
        raise EmptyTableError(f"{str(path)!r} is empty (0 bytes): no header and no rows. Check the export.")
    if _ending(p) == ".gz":
        check_decompressed_size(p)  # before any reader inflates it whole
    elif fmt == "parquet":
        check_parquet(p)  # from its footer: rows, row groups, the size in memory
    elif fmt == "excel" and _ending(p) in (".xlsx", ".xlsm", ".ods"):
        check_zip(p)  # a zip of XML
    elif fmt == "r":
        check_stream(p)  # .rds and .RData are gzip, bzip2 or xz streams
    if fmt in ("excel", "stat", "r"):
        return _read_other(p, fmt, opts)
    sep = "\t" if fmt == "tsv" else ","
    source: Path | io.BytesIO = p
    try:
        if fmt in ("csv", "tsv"):
            text = _decoded(p, opts) if not opts.is_utf8 else None
            if text is not None:
                source = io.BytesIO(text.encode("utf-8"))
            sep = opts.separator or sniff_separator(
                text[:65536] if text is not None else _head_text(p), fallback=sep, decimal=opts.decimal
            )
            if opts.decimal == "," and sep == ",":
                raise UnreadableInputError(
                    f"{str(path)!r} separates its fields with commas, so its decimal mark cannot be a comma. "
                    "Give the separator, e.g. --separator ';', or leave out --decimal ','."
                )
            df = pl.read_csv(
                source,
                separator=sep,
                infer_schema_length=10_000,
                try_parse_dates=False,
                null_values=[v for v in opts.na_values if v != ""] or None,
                decimal_comma=opts.decimal == ",",
            )
        elif fmt == "parquet":
            df = pl.read_parquet(p)
        else:
            df = pl.read_ndjson(p)
    except UnreadableInputError:
        raise
    except (pl.exceptions.PolarsError, OSError, ValueError) as err:
        first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        if fmt in ("csv", "tsv") and "fields" in first:
            _check_row_widths(p, sep, opts.encoding)  # raises naming the line
        if fmt in ("csv", "tsv") and "utf-8" in first.lower():
            raise UnreadableInputError(_NOT_UTF8.format(path=str(path))) from None
        if fmt == "ndjson" and _starts_with(p, b"["):
            raise UnreadableInputError(
                f"{str(path)!r} holds one JSON array; sdckit reads JSON lines (one object per line). "
                "Convert it, e.g. jq -c '.[]' in.json > out.jsonl, or save it as CSV or Parquet."
            ) from None
        raise UnreadableInputError(
            f"cannot read {str(path)!r} as {fmt.upper()}: {first}. "
            "Check that the file is complete and of the format its name says."
        ) from None
    if fmt in ("csv", "tsv"):
        if any("\ufffd" in c for c in df.columns):  # polars decodes the header lossily
            raise UnreadableInputError(_NOT_UTF8.format(path=str(path)))
        stripped = [c.strip() for c in df.columns]
        if len(set(stripped)) < len(stripped) or any("_duplicated_" in c for c in df.columns):
            _check_header_names(p, sep, opts.encoding)  # polars renamed a repeated name
        if df.width == 1 and (other := _other_separator(df.columns[0], sep)):
            name = df.columns[0] if len(df.columns[0]) <= 40 else df.columns[0][:40] + "..."
            raise UnreadableInputError(
                f"{str(path)!r} reads as one column named {name!r}: its fields look separated by "
                f"{other!r}, not {sep!r}. Give the separator, e.g. --separator {other!r} "
                f"(separator={other!r} in Python)."
            )
        if df.width > 1 and df[df.columns[-1]].null_count():
            # polars pads a short row, and reads a blank line as a row, with nulls: check the file
            blank = _check_row_widths(p, sep, opts.encoding)
            if blank:
                df = df.with_row_index("__row__").filter(~pl.col("__row__").is_in(blank)).drop("__row__")
        df = _strip_padding(apply_na_values(df, opts.na_values), opts.decimal)
        df = _r_row_names(df, p.name)
    return df


def _r_row_names(df: pl.DataFrame, name: str) -> pl.DataFrame:
    """R's ``write.csv`` without ``row.names = FALSE`` writes an unnamed first column "1", "2", ...:
    name it ``rownames`` and say so (it identifies every row; leave it out of quasi-identifiers)."""
    if not df.width or df.columns[0] != "" or "rownames" in df.columns:
        return df
    first = df[df.columns[0]]
    if first.dtype.is_integer() and first.to_list() == list(range(1, df.height + 1)):
        warnings.warn(
            f"the first column of {name!r} has no name and numbers the rows 1, 2, ...: R's row names "
            "(write.csv without row.names = FALSE). It is kept as column 'rownames'; leave it out of the "
            "quasi-identifiers, or write the file with row.names = FALSE.",
            SdcWarning,
            stacklevel=3,
        )
        return df.rename({"": "rownames"})
    return df


def _read_other(p: Path, fmt: str, opts: ReadOptions) -> pl.DataFrame:
    """Spreadsheets, SPSS/Stata/SAS and R files (the optional readers)."""
    ending = _ending(p)
    try:
        if fmt == "excel":
            df = apply_na_values(read_excel(p), opts.na_values)
        elif fmt == "stat":
            df = read_stat(p, ending, None if opts.is_utf8 else opts.encoding, opts.labels)
        else:
            df = read_r(p, ending)
    except (UnreadableInputError, MissingExtraError):
        raise
    except Exception as err:  # the readers raise their own types; the message is what matters
        first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        raise UnreadableInputError(
            f"cannot read {str(p)!r} as a {ending} file: {first}. Check that the file is complete and of "
            "the format its name says."
        ) from None
    if df.width == 0:
        raise EmptyTableError(f"{str(p)!r} has no columns; there is nothing to measure.")
    return df


def _head_text(path: Path, size: int = 65536) -> str:
    """The first bytes of a UTF-8 text file (decompressed), decoded leniently, for sniffing."""
    opener = gzip.open if path.suffix.lower() == ".gz" else open
    try:
        with opener(path, "rb") as fh:
            head = bytes(fh.read(size))
    except (OSError, EOFError):
        return ""
    return head.decode("utf-8", errors="replace").removeprefix("\ufeff")


def _decoded(path: Path, opts: ReadOptions) -> str:
    """The whole text file decoded with ``opts.encoding`` (for encodings polars does not read)."""
    opener = gzip.open if path.suffix.lower() == ".gz" else open
    try:
        with opener(path, "rb") as fh:
            raw = bytes(fh.read())
    except (OSError, EOFError) as err:
        raise UnreadableInputError(f"cannot read {str(path)!r}: {err}.") from None
    try:
        return raw.decode(opts.encoding)
    except UnicodeDecodeError as err:
        line = raw[: err.start].count(b"\n") + 1
        raise UnreadableInputError(
            f"line {line} of {path.name!r} is not {opts.encoding} text (byte {raw[err.start]:#04x}). "
            "Give the file's encoding, e.g. --encoding cp1252 or --encoding utf-8."
        ) from None


_NOT_UTF8 = (
    "cannot read {path!r}: it is not UTF-8 text (a binary file, or text in Latin-1 or Windows-1252). "
    "Give its encoding, e.g. --encoding latin-1 (encoding='latin-1' in Python), or save it as UTF-8."
)


def _starts_with(path: Path, prefix: bytes) -> bool:
    """Whether the file's first non-blank bytes (after decompression) are ``prefix``."""
    opener = gzip.open if path.suffix.lower() == ".gz" else open
    try:
        with opener(path, "rb") as fh:
            head = bytes(fh.read(4096))
    except (OSError, EOFError):  # e.g. a truncated .gz: the caller reports the parser's own message
        return False
    return head.removeprefix(b"\xef\xbb\xbf").lstrip().startswith(prefix)


def _other_separator(header: str, used: str) -> str | None:
    """The separator a one-column header seems to use instead of the one it was read with."""
    for sep in (",", ";", "\t", "|"):
        if sep != used and sep in header:
            return sep
    return None


def _csv_rows(path: Path, separator: str, encoding: str = "utf-8") -> Iterator[tuple[int, list[str]]]:
    opener = gzip.open if path.suffix.lower() == ".gz" else open
    enc = "utf-8-sig" if encoding.lower().replace("_", "-") in ("utf-8", "utf8") else encoding
    with opener(path, "rt", encoding=enc, newline="") as fh:
        reader = csv.reader(fh, delimiter=separator)
        for row in reader:
            yield reader.line_num, row


def _check_header_names(path: Path, separator: str, encoding: str = "utf-8") -> None:
    """Raise when the header names a column twice (polars would rename the second 'x_duplicated_0')."""
    first = next(_csv_rows(path, separator, encoding), None)
    names = [c.strip() for c in first[1]] if first else []
    for i, name in enumerate(names):
        if name in names[:i]:
            raise UnreadableInputError(
                f"the header of {path.name!r} names column {name!r} twice (columns {names.index(name) + 1} "
                f"and {i + 1}); rename one so that each column has its own name."
            )


def _check_row_widths(path: Path, separator: str, encoding: str = "utf-8") -> list[int]:
    """Raise for the first row whose number of fields differs from the header's; return the data-row
    indices of blank lines (which polars reads as all-null rows)."""
    blank: list[int] = []
    try:
        rows = _csv_rows(path, separator, encoding)
        header = next(rows, None)
        if header is None:
            return []
        width = len(header[1])
        for i, (line, row) in enumerate(rows):
            if not row:
                blank.append(i)
            elif len(row) != width:
                raise UnreadableInputError(
                    f"line {line} of {path.name!r} has {len(row)} field(s) but the header has {width} "
                    f"(separator {separator!r}). Quote values that contain the separator, fix that line, "
                    "or give the right separator, e.g. --separator ';'."
                )
    except (csv.Error, UnicodeDecodeError, OSError, EOFError):  # stricter than polars: keep its reading
        return []
    return blank


def _strip_padding(df: pl.DataFrame, decimal: str = ".") -> pl.DataFrame:
    """Strip padded names and fields (", Male" in the UCI files) and re-type padded numbers."""
    df = df.rename({c: c.strip() for c in df.columns if c != c.strip()})
    text = [c for c, t in df.schema.items() if t == pl.String]
    if not text:
        return df
    df = df.with_columns(pl.col(text).str.strip_chars())
    retyped = []
    for c in text:
        col = df[c].str.replace(",", ".", literal=True) if decimal == "," else df[c]
        for dtype in (pl.Int64, pl.Float64):
            try:
                retyped.append(col.cast(dtype, strict=True))
                break
            except pl.exceptions.PolarsError:
                continue
    return df.with_columns(retyped) if retyped else df


def as_narwhals(
    source: DataSource, options: ReadOptions | None = None
) -> nw.DataFrame[Any] | nw.LazyFrame[Any]:
    """Wrap a path (read with ``options``) or a native frame as a narwhals frame (eager or lazy, as given)."""
    if isinstance(source, (str, os.PathLike)):
        return nw.from_native(read_path(source, options), eager_only=True)
    if isinstance(source, (nw.DataFrame, nw.LazyFrame)):
        return source
    if isinstance(source, np.ndarray):
        raise UnreadableInputError(
            "a bare numpy array has no column names; wrap it first, e.g. "
            "polars.DataFrame(array, schema=['a', 'b', ...])."
        )
    if isinstance(source, Mapping):
        lengths = {str(k): len(v) if hasattr(v, "__len__") else 1 for k, v in source.items()}
        if len(set(lengths.values())) > 1:
            shown = ", ".join(f"{k!r}: {n}" for k, n in list(lengths.items())[:6])
            raise UnreadableInputError(
                f"the columns of the mapping have different lengths ({shown}); give one value per row in each."
            )
        return nw.from_native(pl.DataFrame(dict(source)), eager_only=True)
    try:
        return nw.from_native(source)
    except nw.exceptions.DuplicateError:
        raw = getattr(source, "column_names", None)  # pyarrow; pandas and others: .columns
        names = [str(c) for c in list(raw if raw is not None else getattr(source, "columns", []))]
        twice = next((c for i, c in enumerate(names) if c in names[:i]), "?")
        raise UnreadableInputError(
            f"the table names column {twice!r} more than once; rename the copies so that each column has "
            "its own name."
        ) from None
    except TypeError:
        raise UnreadableInputError(
            f"cannot read an object of type {type(source).__name__}. Give a path (CSV, Parquet, "
            "JSON lines) or a pandas, polars or pyarrow table."
        ) from None


def is_lazy(frame: nw.DataFrame[Any] | nw.LazyFrame[Any]) -> bool:
    """True for a lazy frame (counted where it lives, never collected whole)."""
    return isinstance(frame, nw.LazyFrame)


def native_kind(source: DataSource) -> str:
    """A short human name of the input: the file name or the frame's type."""
    if isinstance(source, (str, os.PathLike)):
        return Path(source).name
    mod = type(source).__module__.split(".")[0]
    return f"{mod}.{type(source).__name__}"


def check_columns(
    frame: nw.DataFrame[Any] | nw.LazyFrame[Any], columns: Sequence[str] | str | None
) -> list[str]:
    """Return the requested column names, checked; all columns when ``columns`` is None.

    A comma-separated string is split (``"age,sex"``). Unknown names raise
    :class:`ColumnNotFoundError` listing the near matches; duplicates are an error too.
    """
    available = list(frame.collect_schema().names())
    if not available:
        raise EmptyTableError("the table has no columns.")
    unnamed = [a for a in available if not isinstance(a, str)]
    if unnamed:
        raise UnreadableInputError(
            f"column names must be text; this table has {unnamed[0]!r} ({type(unnamed[0]).__name__}). "
            "Name the columns first, e.g. df.columns = [f'x{i}' for i in range(df.shape[1])]."
        )
    if columns is None:
        return available
    if isinstance(columns, str):
        columns = [c.strip() for c in columns.split(",") if c.strip()]
    elif not isinstance(columns, Iterable) or isinstance(columns, bytes):
        raise ParameterError(f"columns={columns!r}: give column names, e.g. ['age', 'sex'] or 'age,sex'.")
    wanted = [str(c) for c in columns]
    if not wanted:
        raise ColumnNotFoundError("", available)
    for c in wanted:
        if c not in available:
            raise ColumnNotFoundError(c, available)
    seen: set[str] = set()
    for c in wanted:
        if c in seen:
            raise UnreadableInputError(f"column {c!r} is named twice; name each column once.")
        seen.add(c)
    return wanted


def like_input(
    original: DataSource,
    columns: Mapping[str, NDArray[Any] | Sequence[Any]],
) -> Any:
    """Return ``original`` with ``columns`` replaced or appended, as the caller's own frame type.

    Other columns and the row order are untouched. A path in gives a polars DataFrame out. This is
    the one place that decides the output type (like scikit-learn's ``set_output``).
    """
    frame = as_narwhals(original)
    if is_lazy(frame):
        raise UnreadableInputError(
            "a lazy frame cannot take new per-row columns; collect it first (e.g. .collect())."
        )
    assert isinstance(frame, nw.DataFrame)
    ns = nw.get_native_namespace(frame)
    new = []
    for name, values in columns.items():
        arr = np.asarray(values)
        if arr.shape[0] != len(frame):
            raise UnreadableInputError(
                f"internal: column {name!r} has {arr.shape[0]} values for {len(frame)} rows."
            )
        new.append(nw.new_series(name, arr, backend=ns))
    out = frame.with_columns(*new) if new else frame
    return out.to_native()
