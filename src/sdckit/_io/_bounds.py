"""Bounded inputs: every compressed or columnar input is sized before a reader inflates it.

A file small on disk can expand to gigabytes in memory: a gzip, bzip2 or xz stream (``.csv.gz``, an R
``.rds``), a Parquet file whose run-length or dictionary encoding repeats one value millions of times,
a spreadsheet (``.xlsx``, ``.ods``: zip archives of XML), or a compressed SPSS, Stata or SAS file. Each
is measured here first, with memory bounded by one chunk (streams, zip members) or by the file's own
metadata (Parquet footers, SPSS/Stata/SAS headers), and refused with one line naming the file, the
size it would reach, the limit and what to do, when it would expand beyond

* :data:`MAX_DECOMPRESSED_BYTES` (2 GiB) in all, or
* :data:`MAX_EXPANSION_RATIO` times its size on disk once above :data:`RATIO_FLOOR_BYTES` (256 MiB;
  ordinary data compresses 3 to 20 times, a bomb hundreds to a million times), or
* :data:`MAX_CELLS` cells (rows times columns), or, for Parquet, :data:`MAX_ROW_GROUPS` row groups
  or a footer of more than :data:`MAX_FOOTER_BYTES`.

Reading a 3 MB Parquet bomb or a 9 MB spreadsheet bomb is then refused after reading a few kilobytes
of metadata or streaming at most :data:`RATIO_FLOOR_BYTES` through the decompressor, never by running
out of memory (``tests/io/test_bombs.py`` measures the peak memory in a subprocess).
"""

from __future__ import annotations

import bz2
import lzma
import struct
import zipfile
import zlib
from pathlib import Path
from typing import Any

import polars as pl

from sdckit.errors import UnreadableInputError

__all__ = [
    "MAX_CELLS",
    "MAX_DECOMPRESSED_BYTES",
    "MAX_EXPANSION_RATIO",
    "MAX_FOOTER_BYTES",
    "MAX_ROW_GROUPS",
    "RATIO_FLOOR_BYTES",
    "check_parquet",
    "check_stat_size",
    "check_stream",
    "check_zip",
    "expansion_cap",
]

MAX_DECOMPRESSED_BYTES = 2 << 30
"""Largest size (bytes, 2 GiB) any input may expand to in memory."""
MAX_EXPANSION_RATIO = 100
"""Largest ratio of expanded to on-disk size above :data:`RATIO_FLOOR_BYTES`."""
RATIO_FLOOR_BYTES = 256 << 20
"""Below this expanded size (256 MiB) the ratio is not checked (a small file of one repeated value is fine)."""
MAX_CELLS = 250_000_000
"""Largest number of cells (rows times columns) of a Parquet, SPSS, Stata or SAS input (2 GB as floats)."""
MAX_ROW_GROUPS = 100_000
"""Largest number of Parquet row groups (each costs metadata and a decoder)."""
MAX_FOOTER_BYTES = 64 << 20
"""Largest Parquet footer (its metadata, read whole before any data)."""
_CHUNK = 1 << 20


def expansion_cap(on_disk: int, *, max_bytes: int | None = None, max_ratio: float | None = None) -> int:
    """The most bytes a file of ``on_disk`` bytes may expand to (see the module's text)."""
    cap_bytes = MAX_DECOMPRESSED_BYTES if max_bytes is None else max_bytes
    ratio = MAX_EXPANSION_RATIO if max_ratio is None else max_ratio
    return int(min(cap_bytes, max(min(RATIO_FLOOR_BYTES, cap_bytes), ratio * max(1, on_disk))))


def _refuse(path: Path, what: str, fix: str) -> UnreadableInputError:
    return UnreadableInputError(f"{str(path)!r} {what}: refused as a possible decompression bomb; {fix}")


def _size_text(n: float) -> str:
    for unit, size in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= size:
            return f"{n / size:.3g} {unit}"
    return f"{int(n)} bytes"


def _limit_text(cap: int, on_disk: int) -> str:
    return (f"at most {_size_text(cap)} ({MAX_EXPANSION_RATIO} times its {_size_text(on_disk)} on disk above "
            f"{_size_text(RATIO_FLOOR_BYTES)}, and never above {_size_text(MAX_DECOMPRESSED_BYTES)})")


_MAGIC = {b"\x1f\x8b": "gzip", b"BZh": "bzip2", b"\xfd7zXZ\x00": "xz"}


def stream_kind(path: Path) -> str | None:
    """``gzip``, ``bzip2`` or ``xz`` by the file's first bytes; None for anything else."""
    try:
        with open(path, "rb") as fh:
            head = fh.read(6)
    except OSError:
        return None
    return next((kind for magic, kind in _MAGIC.items() if head.startswith(magic)), None)


def _decompressor(kind: str) -> Any:
    if kind == "gzip":
        return zlib.decompressobj(wbits=31)
    if kind == "bzip2":
        return bz2.BZ2Decompressor()
    return lzma.LZMADecompressor()


def check_stream(path: Path, *, max_bytes: int | None = None, max_ratio: float | None = None) -> int:
    """Stream a gzip, bzip2 or xz file (every member) through its decompressor, keeping one chunk of
    output at a time, and refuse it once it expands beyond :func:`expansion_cap`. Returns the expanded
    size (0 for a file that is none of the three; a corrupt stream is left to the reader's message)."""
    kind = stream_kind(path)
    if kind is None:
        return 0
    on_disk = max(1, path.stat().st_size)
    cap = expansion_cap(on_disk, max_bytes=max_bytes, max_ratio=max_ratio)
    total = 0
    with open(path, "rb") as fh:
        d = _decompressor(kind)
        buf = b""
        while True:
            if not buf and not (buf := fh.read(_CHUNK)):
                break
            try:
                if kind == "gzip":
                    total += len(d.decompress(buf, _CHUNK))
                    rest = d.unconsumed_tail
                else:
                    total += len(d.decompress(buf, max_length=_CHUNK))
                    rest = b"" if d.needs_input else None
            except (zlib.error, OSError, EOFError, lzma.LZMAError):
                return total
            if total > cap:
                unzip = {"gzip": "gunzip", "bzip2": "bunzip2", "xz": "unxz"}[kind]
                raise _refuse(path, f"expands beyond {_size_text(cap)} ({kind})",
                              f"the limit is {_limit_text(cap, on_disk)}. If you trust it, decompress it first "
                              f"({unzip} {path.name}) and give the plain file.")
            if d.eof:  # several members, one after the other
                buf, d = d.unused_data, _decompressor(kind)
            elif rest is None:  # bz2/xz want more input: the buffer was consumed
                buf = b""
            else:
                buf = rest
    return total


def check_zip(path: Path, *, max_bytes: int | None = None, max_ratio: float | None = None) -> int:
    """Refuse a zip container (``.xlsx``, ``.xlsm``, ``.ods``) whose members expand beyond
    :func:`expansion_cap`: first by the sizes its directory declares, then by inflating each member
    in chunks (a directory can lie). Returns the expanded size; a file that is no zip is left to the reader."""
    on_disk = max(1, path.stat().st_size)
    cap = expansion_cap(on_disk, max_bytes=max_bytes, max_ratio=max_ratio)
    try:
        archive = zipfile.ZipFile(path)
    except (zipfile.BadZipFile, OSError):
        return 0
    fix = (f"the limit is {_limit_text(cap, on_disk)}. If you trust it, open it in a spreadsheet program and save "
           "the sheet as CSV.")
    with archive:
        members = archive.infolist()
        declared = sum(m.file_size for m in members)
        if declared > cap:
            raise _refuse(path, f"declares {_size_text(declared)} of content in {len(members):,} parts", fix)
        total = 0
        with open(path, "rb") as raw:
            for member in members:
                total += _inflated(raw, member, cap - total, path, fix)
    return total


def _inflated(raw: Any, member: zipfile.ZipInfo, room: int, path: Path, fix: str) -> int:
    """The bytes one zip member inflates to, streamed from its compressed bytes (never trusting the size
    the directory declares, which a reader like calamine's does not check either); refused beyond ``room``."""
    if member.compress_type not in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED):
        return 0  # the reader refuses methods it does not know
    raw.seek(member.header_offset)
    local = raw.read(30)
    if len(local) < 30 or local[:4] != b"PK\x03\x04":
        return 0
    name_len, extra_len = struct.unpack("<HH", local[26:30])
    raw.seek(member.header_offset + 30 + name_len + extra_len)
    left = member.compress_size
    if member.compress_type == zipfile.ZIP_STORED:
        if left > room:
            raise _refuse(path, f"holds {_size_text(left)} in {member.filename!r}", fix)
        return int(left)
    d = zlib.decompressobj(-15)
    total = 0
    buf = b""
    while True:
        if not buf:
            if left <= 0:
                break
            buf = raw.read(min(_CHUNK, left))
            if not buf:
                break
            left -= len(buf)
        try:
            total += len(d.decompress(buf, _CHUNK))
        except zlib.error:
            return total  # the reader reports its own message
        if total > room:
            raise _refuse(path, f"expands beyond {_size_text(total)} in {member.filename!r}", fix)
        if d.eof:
            break
        buf = d.unconsumed_tail
    return total


def check_parquet(path: Path, *, max_bytes: int | None = None, max_ratio: float | None = None) -> int:
    """Refuse a Parquet file that would expand beyond :func:`expansion_cap` in memory, or that has more
    than :data:`MAX_CELLS` cells, :data:`MAX_ROW_GROUPS` row groups or a footer of more than
    :data:`MAX_FOOTER_BYTES`, from its footer alone. Returns the estimated size in memory.

    The estimate per column chunk: its values times their width in memory (8 bytes for a number, the
    longer of its minimum and maximum for text, from the statistics), never less than the chunk's
    uncompressed size. With pyarrow installed every chunk is read from the footer; without it, the
    row count (polars reads it from the footer) times the schema's widths (text counted at 8 bytes).
    """
    on_disk = max(1, path.stat().st_size)
    cap = expansion_cap(on_disk, max_bytes=max_bytes, max_ratio=max_ratio)
    fix = (f"the limit is {_limit_text(cap, on_disk)}, {MAX_CELLS:,} cells and {MAX_ROW_GROUPS:,} row groups. If you "
           "trust it, read it yourself (e.g. polars.read_parquet with columns=[...] or n_rows=...) and pass the frame.")
    try:
        with open(path, "rb") as fh:
            fh.seek(-8, 2)
            tail = fh.read(8)
    except OSError:
        return 0
    if len(tail) < 8 or tail[4:] != b"PAR1":
        return 0  # not Parquet: the reader's message
    footer = struct.unpack("<I", tail[:4])[0]
    if footer > MAX_FOOTER_BYTES:
        raise _refuse(path, f"has a Parquet footer of {_size_text(footer)} (at most {_size_text(MAX_FOOTER_BYTES)})", fix)
    try:
        import pyarrow.parquet as pq  # optional (sdckit[frames]): the footer chunk by chunk
    except ImportError:  # pragma: no cover - the test environment has pyarrow
        return _parquet_by_polars(path, cap, fix)
    try:
        meta = pq.ParquetFile(path).metadata
    except Exception:  # a damaged footer: the reader's own message
        return 0
    if meta.num_row_groups > MAX_ROW_GROUPS:
        raise _refuse(path, f"has {meta.num_row_groups:,} row groups", fix)
    cells = meta.num_rows * meta.num_columns
    if cells > MAX_CELLS:
        raise _refuse(path, f"holds {meta.num_rows:,} rows of {meta.num_columns:,} columns ({cells:,} cells)", fix)
    total = 0
    for g in range(meta.num_row_groups):
        group = meta.row_group(g)
        for j in range(group.num_columns):
            total += _chunk_bytes(group.column(j), group.num_rows)
        if total > cap:
            raise _refuse(path, f"expands to at least {_size_text(total)} in memory ({meta.num_rows:,} rows)", fix)
    return total


_WIDTH = {"BOOLEAN": 1, "INT32": 4, "FLOAT": 4, "INT64": 8, "DOUBLE": 8, "INT96": 12}


def _chunk_bytes(chunk: Any, rows: int) -> int:
    kind = str(chunk.physical_type)
    width = _WIDTH.get(kind)
    if width is None and kind == "FIXED_LEN_BYTE_ARRAY":
        width = 16
    if width is None:  # text: the longer of the statistics' bounds, at least an offset's 4 bytes
        width = 4
        stats = chunk.statistics
        if stats is not None and stats.has_min_max:
            width = max(width, *(len(v) if isinstance(v, (str, bytes)) else 8 for v in (stats.min, stats.max)))
    return max(int(chunk.total_uncompressed_size), width * rows)


def _parquet_by_polars(path: Path, cap: int, fix: str) -> int:  # pragma: no cover - without pyarrow
    try:
        rows = int(pl.scan_parquet(path).select(pl.len()).collect().item())
        schema = pl.read_parquet_schema(path)
    except Exception:
        return 0
    cells = rows * len(schema)
    if cells > MAX_CELLS:
        raise _refuse(path, f"holds {rows:,} rows of {len(schema):,} columns ({cells:,} cells)", fix)
    total = rows * 8 * len(schema)
    if total > cap:
        raise _refuse(path, f"expands to at least {_size_text(total)} in memory ({rows:,} rows)", fix)
    return total


def check_stat_size(path: Path, rows: int, widths: list[int]) -> int:
    """Refuse an SPSS, Stata or SAS file (``.zsav``, compressed ``.sav`` and ``.sas7bdat`` included)
    whose header says it holds more than :data:`MAX_CELLS` cells or more than :func:`expansion_cap`
    bytes (``rows`` times the columns' ``widths``)."""
    on_disk = max(1, path.stat().st_size)
    cap = expansion_cap(on_disk)
    fix = (f"the limit is {_limit_text(cap, on_disk)} and {MAX_CELLS:,} cells. If you trust it, export the columns "
           "you need to CSV or Parquet first.")
    cells = max(0, rows) * len(widths)
    if cells > MAX_CELLS:
        raise _refuse(path, f"holds {rows:,} rows of {len(widths):,} columns ({cells:,} cells)", fix)
    total = max(0, rows) * sum(widths)
    if total > cap:
        raise _refuse(path, f"expands to at least {_size_text(total)} in memory ({rows:,} rows)", fix)
    return total
