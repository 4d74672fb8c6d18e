"""Output paths: checked before any work is done, and write failures turned into one clear error."""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from sdckit._io._outputs import atomic_output, check_outputs
from sdckit.errors import OutputError


def check_output_path(
    path: str | os.PathLike[str],
    *,
    inputs: Sequence[str | os.PathLike[str]] = (),
) -> Path:
    """Return ``path`` as a :class:`~pathlib.Path` once it is known to be writable.

    Called before any computation, so a typo in an output path costs nothing: the one-path form of
    :func:`~sdckit._io._outputs.check_outputs` (the path resolved, symlinks followed; refused when
    it is one of ``inputs``, a folder, too long a name, or in a folder that cannot be written).
    """
    return check_outputs([path], inputs)[0]


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


_WRITERS = (".parquet", ".pq", ".csv", ".csv.gz", ".tsv", ".jsonl", ".ndjson", ".sav", ".dta", ".rds")


def read_back_options(path: str | os.PathLike[str]) -> dict[str, Any]:
    """The :func:`~sdckit._io.read_data` keywords that read a file :func:`write_table` wrote as written.

    Whatever options read the input, the written text file is UTF-8, comma-separated (tab for
    ``.tsv``) with ``.`` decimals, a missing value an empty field and an empty text a quoted ``""``:
    so only the empty field is missing, and a text value ``NA`` or ``-9`` stays a value.
    """
    separator = "\t" if Path(path).name.lower().endswith(".tsv") else ","
    return {"separator": separator, "encoding": "utf-8", "decimal": ".", "na_values": ("",)}


def write_table(
    frame: Any, path: str | os.PathLike[str], *, atomic: bool = True, labels: Any = None, shown: str | None = None
) -> Path:
    """Write a polars DataFrame by the path's ending: Parquet, CSV (optionally ``.gz``), TSV, JSON
    lines, SPSS ``.sav`` or Stata ``.dta`` (with ``labels``, a :class:`~sdckit._io.SurveyLabels`), or
    R's ``.rds`` (a data frame; categories and labelled columns as factors).

    The folder is created if needed; an unknown ending or a failed write raises :class:`OutputError`.
    The file is written to a temporary file beside it and renamed into place when complete
    (``atomic=False`` writes ``path`` itself: for a path already staged by
    :func:`~sdckit._io._outputs.staged_outputs`; ``shown`` is then the output's name for messages).
    """
    p = Path(path)
    name = p.name.lower()
    ending = next((e for e in sorted(_WRITERS, key=len, reverse=True) if name.endswith(e)), None)
    if ending is None:
        raise OutputError(
            f"cannot write {p.name!r}: end the name in one of {', '.join(_WRITERS)} to choose the format."
        )
    if not atomic:
        with writing(p):
            _write_as(frame, p, ending, labels, shown=shown)
        return p
    with atomic_output(p) as temp:
        _write_as(frame, temp, ending, labels, shown=p.name)
    return p


def writer_ending(path: str | os.PathLike[str]) -> str | None:
    """The ending :func:`write_table` writes ``path`` by, or None when it writes no such file."""
    name = Path(path).name.lower()
    return next((e for e in sorted(_WRITERS, key=len, reverse=True) if name.endswith(e)), None)


def check_writable_format(path: str | os.PathLike[str]) -> None:
    """Refuse, before any work, an output name whose ending :func:`write_table` does not write."""
    if writer_ending(path) is None:
        raise OutputError(
            f"cannot write {Path(path).name!r}: end the name in one of {', '.join(_WRITERS)} to choose the format."
        )


def _write_as(frame: Any, p: Path, ending: str, labels: Any, shown: str | None = None) -> None:
    if ending in (".parquet", ".pq"):
        frame.write_parquet(p)
    elif ending == ".csv.gz":
        frame.write_csv(p, compression="gzip", check_extension=False)
    elif ending == ".csv":
        frame.write_csv(p)
    elif ending == ".tsv":
        frame.write_csv(p, separator="\t")
    elif ending in (".sav", ".dta"):
        # lazy: start-up time (loads polars)
        from sdckit._io._survey import write_survey

        write_survey(frame, p, ending, labels, shown=shown)
    elif ending == ".rds":
        # lazy: start-up time (pyreadr and pandas load only for an R release)
        from sdckit._io._formats import write_r

        write_r(frame, p, labels)
    else:
        frame.write_ndjson(p)
