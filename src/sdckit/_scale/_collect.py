"""The one door through which a distributed or lazy frame's rows reach the driver.

Every distributed pass that brings something back (group sizes, value counts, one moment row per
partition) goes through :func:`collect_small`, which counts the rows for :func:`driver_rows` and
warns, naming the number of rows and what they are, when more than ``limit`` come back. A measure
that genuinely needs every row calls it with ``limit=None`` and ``what=`` saying so; the warning
then tells the user before the rows arrive.
"""

from __future__ import annotations

import warnings
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
