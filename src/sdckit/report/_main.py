"""Assemble the main report from the sections each subpackage provides."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from sdckit._io import DataSource
from sdckit.report._overview import overview_section
from sdckit.report._report import Report


def build_report(
    source: DataSource | None = None,
    *,
    seed: int = 20261130,
    advance: Callable[..., None] | None = None,
) -> Report:
    """The main report for ``source`` (default: the bundled Adult data)."""
    data: Any
    if source is None:
        from sdckit.datasets import load_adult

        data, name = load_adult(), "UCI Adult (bundled, 32,561 rows)"
    else:
        data, name = source, str(source)
    rep = Report("sdckit release report", inputs={"data": name}, parameters={}, seed=seed)
    rep.add(overview_section(data))
    if advance is not None:
        advance()
    return rep
