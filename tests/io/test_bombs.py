"""Bounded inputs (issue 37): files small on disk that expand to hundreds of megabytes or more are
refused from their metadata, or after streaming a bounded amount through the decompressor, with one
line naming the file and the fix; the peak memory of reading one is measured in a subprocess."""

from __future__ import annotations

import functools
import gzip
import json
import struct
import subprocess
import sys
import zlib
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pyreadstat
import pytest

from sdckit._io import _bounds, read_path
from sdckit.errors import UnreadableInputError

SRC = Path(__file__).resolve().parents[2] / "src"
MiB = 1 << 20


def parquet_bomb(path: Path, rows: int = 50_000_000) -> Path:
    """One int64 column of zeros: ~200 KB on disk, 400 MB as a column in memory."""
    table = pa.table({"x": pa.array(np.zeros(10_000_000, dtype=np.int64))})
    with pq.ParquetWriter(path, table.schema, compression="zstd") as writer:
        for _ in range(rows // 10_000_000):
            writer.write_table(table, row_group_size=10_000_000)
    return path


@functools.lru_cache(maxsize=2)
def _deflated(size: int, unit: bytes) -> tuple[bytes, int]:
    comp = zlib.compressobj(9, zlib.DEFLATED, -15)
    chunk = unit * (MiB // len(unit))
    parts = [comp.compress(chunk) for _ in range(size // len(chunk))]
    parts.append(comp.flush())
    return b"".join(parts), (size // len(chunk)) * len(chunk)


def spreadsheet_bomb(path: Path, size: int = 400 * MiB, *, lie: bool = False) -> Path:
    """An .xlsx (or .ods) whose sheet XML is ``size`` bytes of empty rows, deflated ~1000 times;
    with ``lie`` its zip directory declares 1,000 bytes."""
    data, real = _deflated(size, b"<row/>")
    name = "xl/worksheets/sheet1.xml" if path.suffix == ".xlsx" else "content.xml"
    # the zip written by hand: local header, data, central directory (sizes as declared)
    declared = 1000 if lie else real
    crc = 0
    name_b = name.encode()
    local = struct.pack("<4sHHHHHIIIHH", b"PK\x03\x04", 20, 0, 8, 0, 0, crc, len(data), declared, len(name_b), 0)
    central = struct.pack("<4sHHHHHHIIIHHHHHII", b"PK\x01\x02", 20, 20, 0, 8, 0, 0, crc, len(data), declared,
                          len(name_b), 0, 0, 0, 0, 0, 0)
    body = local + name_b + data
    end = struct.pack("<4sHHHHIIH", b"PK\x05\x06", 0, 0, 1, 1, len(central) + len(name_b), len(body), 0)
    path.write_bytes(body + central + name_b + end)
    return path


def test_parquet_bomb_is_refused_from_its_footer(tmp_path: Path) -> None:
    bomb = parquet_bomb(tmp_path / "bomb.parquet")
    assert bomb.stat().st_size < 3 * MiB
    with pytest.raises(UnreadableInputError, match=r"bomb\.parquet' expands to at least .* in memory \(50,000,000 rows\): "
                                                   r"refused as a possible decompression bomb.*pass the frame"):
        read_path(bomb)


def test_parquet_row_group_and_cell_caps(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "groups.parquet"
    table = pa.table({"a": list(range(100)), "b": [1.5] * 100})
    pq.write_table(table, path, row_group_size=10)  # 10 row groups, 200 cells
    assert read_path(path).height == 100  # within every cap
    monkeypatch.setattr(_bounds, "MAX_ROW_GROUPS", 5)
    with pytest.raises(UnreadableInputError, match="has 10 row groups"):
        read_path(path)
    monkeypatch.setattr(_bounds, "MAX_ROW_GROUPS", 100)
    monkeypatch.setattr(_bounds, "MAX_CELLS", 150)
    with pytest.raises(UnreadableInputError, match=r"holds 100 rows of 2 columns \(200 cells\)"):
        read_path(path)


@pytest.mark.parametrize("ending", [".xlsx", ".ods"])
@pytest.mark.parametrize("lie", [False, True])
def test_spreadsheet_bomb_is_refused(tmp_path: Path, ending: str, lie: bool) -> None:
    bomb = spreadsheet_bomb(tmp_path / f"bomb{ending}", lie=lie)
    assert bomb.stat().st_size < 9 * MiB
    what = "expands beyond" if lie else "declares 400 MiB of content"
    with pytest.raises(UnreadableInputError, match=rf"bomb\{ending}' {what}.*decompression bomb.*save the sheet as CSV"):
        read_path(bomb)


def test_ordinary_spreadsheet_and_parquet_still_read(tmp_path: Path) -> None:
    frame = pd.DataFrame({"age": [30, 41, 52], "sex": ["f", "m", "f"]})
    frame.to_excel(tmp_path / "ok.xlsx", index=False)
    assert read_path(tmp_path / "ok.xlsx")["age"].to_list() == [30, 41, 52]
    pq.write_table(pa.Table.from_pandas(frame), tmp_path / "ok.parquet")
    assert read_path(tmp_path / "ok.parquet").height == 3


def test_r_file_bomb_is_refused(tmp_path: Path) -> None:
    bomb = tmp_path / "bomb.rds"
    with gzip.open(bomb, "wb", compresslevel=9) as fh:
        chunk = b"\0" * MiB
        for _ in range(300):
            fh.write(chunk)
    assert bomb.stat().st_size < 2 * MiB
    with pytest.raises(UnreadableInputError, match=r"bomb\.rds' expands beyond 256 MiB \(gzip\).*gunzip bomb\.rds"):
        read_path(bomb)


def test_stat_file_cells_cap(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "s.zsav"
    pyreadstat.write_sav(pd.DataFrame({"a": np.arange(50.0), "b": np.ones(50)}), str(path), compress=True)
    assert read_path(path).height == 50
    monkeypatch.setattr(_bounds, "MAX_CELLS", 60)
    with pytest.raises(UnreadableInputError, match=r"s\.zsav' holds 50 rows of 2 columns \(100 cells\)"):
        read_path(path)


_PEAK = """
import json, sys
from sdckit._io import read_path
try:
    read_path(sys.argv[1])
    refused = False
except Exception as err:
    refused = "decompression bomb" in str(err)
# VmHWM, not ru_maxrss: Linux carries the parent's peak across fork and exec into ru_maxrss, so a fat
# test worker would be counted; the high-water mark of this process's own memory starts at exec
hwm = next(line for line in open("/proc/self/status") if line.startswith("VmHWM:"))
print(json.dumps({"refused": refused, "peak_mib": int(hwm.split()[1]) / 1024}))
"""


@pytest.mark.parametrize("kind", ["parquet", "xlsx"])
def test_bomb_refused_under_500_mib(tmp_path: Path, kind: str) -> None:
    bomb = parquet_bomb(tmp_path / "b.parquet") if kind == "parquet" else spreadsheet_bomb(tmp_path / "b.xlsx", lie=True)
    out = subprocess.run([sys.executable, "-c", _PEAK, str(bomb)], capture_output=True, text=True, timeout=120,
                         env={"PYTHONPATH": str(SRC), "PATH": "/usr/bin:/bin"}, check=True)
    got = json.loads(out.stdout.strip().splitlines()[-1])
    assert got["refused"]
    assert got["peak_mib"] < 500, got
    print(f"{kind} bomb of {bomb.stat().st_size / MiB:.2f} MiB refused at a peak of {got['peak_mib']:.0f} MiB")
