"""The one door through which a distributed or lazy frame's rows reach the driver.

Every distributed pass that brings something back (group sizes, value counts, one moment row per
partition) goes through :func:`collect_small`, which counts the rows for :func:`driver_rows` and
warns, naming the number of rows and what they are, when more than ``limit`` come back. A measure
that genuinely needs every row calls it with ``limit=None`` and ``what=`` saying so; the warning
then tells the user before the rows arrive.
"""

from __future__ import annotations

import sys
import warnings
from pathlib import Path
from typing import Any

import narwhals as nw

from sdckit._scale._engines import _DRIVER_ROWS
from sdckit.errors import SdcWarning


def count_driver_rows(rows: int) -> None:
    """Add ``rows`` to the :func:`~sdckit._scale.driver_rows` counter (for passes that collect
    through an engine's own API rather than :func:`collect_small`)."""
    _DRIVER_ROWS[0] += int(rows)


def collect_small(frame: Any, *, what: str, limit: int | None = 100_000) -> nw.DataFrame[Any]:
    """Collect a lazy narwhals frame of aggregates (or pass an eager one through), counting its rows.

    Parameters
    ----------
    frame : narwhals LazyFrame or DataFrame
        The aggregate to bring to the driver (group sizes, value counts, ...).
    what : str
        What the rows are, for the warning (``"group sizes of age, sex"``).
    limit : int or None
        More rows than this trigger an :class:`~sdckit.errors.SdcWarning` naming the count;
        ``None`` disables the check (the caller has warned already).
    """
    if isinstance(frame, nw.LazyFrame):
        eager = frame.collect()
        count_driver_rows(len(eager))
    else:
        eager = frame
    if limit is not None and len(eager) > limit:
        warnings.warn(
            f"{len(eager):,} rows of {what} were brought to the driver (more than {limit:,}); "
            "coarsen the keys or compute this on the cluster",
            SdcWarning,
            stacklevel=2,
        )
    return eager


def collect_all(frame: Any, *, what: str, instead: str = "") -> nw.DataFrame[Any]:
    """Collect every row of a lazy narwhals frame for a computation that needs them in memory,
    counting them and warning (an :class:`~sdckit.errors.SdcWarning` naming the rows); an eager
    frame passes through silently. ``instead`` names the way that keeps the rows where they live."""
    if not isinstance(frame, nw.LazyFrame):
        return frame
    eager = collect_small(frame, what=what, limit=None)
    warnings.warn(
        f"{what} needs the rows in memory: all {len(eager):,} rows of the lazy frame were brought to the "
        f"driver.{' ' + instead if instead else ''}",
        SdcWarning,
        stacklevel=_user_level(),
    )
    return eager


def _user_level() -> int:
    """``stacklevel`` of the first caller outside sdckit (the user's line), seen from collect_all."""
    package = str(Path(__file__).resolve().parent.parent)
    frame = sys._getframe(1)
    level = 1
    while frame.f_back is not None and str(Path(frame.f_code.co_filename).resolve()).startswith(package):
        frame = frame.f_back
        level += 1
    return level
