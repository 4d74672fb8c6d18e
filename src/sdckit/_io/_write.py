"""Output paths: checked before any work is done, and write failures turned into one clear error."""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from sdckit.errors import OutputError


def check_output_path(
    path: str | os.PathLike[str],
    *,
    inputs: Sequence[str | os.PathLike[str]] = (),
) -> Path:
    """Return ``path`` as a :class:`~pathlib.Path` once it is known to be writable.

    Called before any computation, so a typo in an output path costs nothing. Raises
    :class:`OutputError` when the folder does not exist (or is a file), when a folder stands at
    ``path``, when the folder is not writable, or when ``path`` is one of ``inputs`` (writing there
    would overwrite the data being read).
    """
    p = Path(path)
    if p.is_dir():
        raise OutputError(f"{str(path)!r} is a folder; give a file name, e.g. {str(p / 'out.csv')!r}.")
    parent = p.parent
    if not parent.exists():
        raise OutputError(
            f"cannot write {str(path)!r}: the folder {str(parent)!r} does not exist. Create it first."
        )
    if not parent.is_dir():
        raise OutputError(f"cannot write {str(path)!r}: {str(parent)!r} is a file, not a folder.")
    if not os.access(parent, os.W_OK | os.X_OK) or (p.exists() and not os.access(p, os.W_OK)):
        raise OutputError(f"cannot write {str(path)!r}: permission denied. Choose another folder.")
    for source in inputs:
        s = Path(source)
        if p.exists() and s.exists() and p.resolve() == s.resolve():
            raise OutputError(
                f"{str(path)!r} is the input file; writing there would overwrite the data. "
                "Choose another output name."
            )
    return p


@contextmanager
def writing(path: str | os.PathLike[str]) -> Iterator[Path]:
    """Context for the write itself: an ``OSError`` (disk full, permission) becomes :class:`OutputError`."""
    try:
        yield Path(path)
    except OutputError:
        raise
    except OSError as err:
        reason = err.strerror or str(err) or type(err).__name__
        raise OutputError(f"cannot write {str(path)!r}: {reason}.") from None


_WRITERS = (".parquet", ".pq", ".csv", ".csv.gz", ".tsv", ".jsonl", ".ndjson")


def read_back_options(path: str | os.PathLike[str]) -> dict[str, Any]:
    """The :func:`~sdckit._io.read_data` keywords that read a file :func:`write_table` wrote as written.

    Whatever options read the input, the written text file is UTF-8, comma-separated (tab for
    ``.tsv``) with ``.`` decimals, a missing value an empty field and an empty text a quoted ``""``:
    so only the empty field is missing, and a text value ``NA`` or ``-9`` stays a value.
    """
    separator = "\t" if Path(path).name.lower().endswith(".tsv") else ","
    return {"separator": separator, "encoding": "utf-8", "decimal": ".", "na_values": ("",)}


def write_table(frame: Any, path: str | os.PathLike[str]) -> Path:
    """Write a polars DataFrame by the path's ending: Parquet, CSV (optionally ``.gz``), TSV, JSON lines.

    The folder is created if needed; an unknown ending or a failed write raises :class:`OutputError`.
    """
    p = Path(path)
    name = p.name.lower()
    ending = next((e for e in sorted(_WRITERS, key=len, reverse=True) if name.endswith(e)), None)
    if ending is None:
        raise OutputError(
            f"cannot write {p.name!r}: end the name in one of {', '.join(_WRITERS)} to choose the format."
        )
    p.parent.mkdir(parents=True, exist_ok=True)
    with writing(p):
        if ending in (".parquet", ".pq"):
            frame.write_parquet(p)
        elif ending == ".csv.gz":
            frame.write_csv(p, compression="gzip", check_extension=False)
        elif ending == ".csv":
            frame.write_csv(p)
        elif ending == ".tsv":
            frame.write_csv(p, separator="\t")
        else:
            frame.write_ndjson(p)
    return p
