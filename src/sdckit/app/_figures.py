"""The figures the workbench shows for one run of the pipeline, from its own results.

Every risk figure is the pipeline's :class:`~sdckit.risk.ReleaseMeasure` of the table as released
(and of the input, as is); the global risk is :func:`sdckit.risk.individual_risk` on the released
quasi-identifiers; the information loss per column compares each released column with the input,
row by row. Nothing is recomputed another way.
"""

from __future__ import annotations

import io
import math
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import polars as pl

from sdckit.errors import SdcError
from sdckit.risk import individual_risk
from sdckit.risk._measures._release import ReleaseMeasure

__all__ = ["Figures", "cells_changed", "column_loss", "figures_of"]


@dataclass(frozen=True)
class Figures:
    """What the page shows of one measured release."""

    measure: ReleaseMeasure
    global_risk: float | None
    """Mean individual risk (share of expected re-identifications, sdcMicro's ``global$risk``) on the
    released quasi-identifiers, a missing cell counted as a value of its own; None if not computable."""
    expected_reidentifications: float | None
    risk_weight: str | None
    """The weight column of the individual risk (None: the table is its own population, r = 1/f_k)."""
    risk: Any = None
    """The :class:`~sdckit.risk.IndividualRisk` itself (for the report's histogram), or None."""

    def rows(self) -> dict[str, str]:
        """``{figure: text}`` in the order of the table on the page."""
        m = self.measure
        out = {
            "exposure at k (share in groups < k)": _pct(m.exposure_at_k),
            "users in groups < k": f"{m.n_below_k:,}",
            "k-anonymity (smallest group)": f"{m.k_anonymity:,}",
            "uniques (groups of 1)": f"{m.n_unique:,}",
            "groups": f"{m.n_groups:,}",
            "missing key cells": f"{m.n_missing_cells:,}",
            "exposure, a missing cell as a value": _pct(m.exposure_missing_as_value)
            if m.exposure_missing_as_value is not None else _pct(m.exposure_at_k),
            "global risk (mean individual risk)": _pct(self.global_risk) if self.global_risk is not None else "-",
            "expected re-identifications": f"{self.expected_reidentifications:,.1f}"
            if self.expected_reidentifications is not None else "-",
        }
        for column, ld in (m.l_diversity or {}).items():
            out[f"l-diversity of {column} (distinct l)"] = f"{ld['l']:,}"
            if "not_2_diverse" in ld:
                out[f"{column}: share in groups with one value"] = _pct(ld["not_2_diverse"])
        if m.interval_disclosure is not None:
            out["interval disclosure (share within ±5 % sd)"] = _pct(m.interval_disclosure["share"])
        out["within budget"] = "yes" if m.within_budget else "no"
        return out


def _pct(x: float | None) -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "-"
    return f"{100 * x:.3g} %"


def figures_of(
    measure: ReleaseMeasure, table: pl.DataFrame, *, weights: Sequence[str] = ()
) -> Figures:
    """The figures of ``table`` (the release as it goes out, or the input) measured as ``measure``."""
    qis = [c for c in measure.quasi_identifiers if c in table.columns]
    weight = weights[0] if len(weights) == 1 and weights[0] in table.columns else None
    risk = None
    if qis and table.height:
        try:
            risk = individual_risk(table, qis, weights=weight, missing="value")
        except SdcError:  # e.g. weights below 1 in total: then the table is its own population
            try:
                weight = None
                risk = individual_risk(table, qis, weights=None, missing="value")
            except SdcError:
                risk = None
    return Figures(
        measure=measure,
        global_risk=risk.global_risk if risk is not None else None,
        expected_reidentifications=risk.expected_reidentifications if risk is not None else None,
        risk_weight=weight,
        risk=risk,
    )


_PLOT_LOCK = threading.Lock()  # pyplot keeps global state: one figure at a time across sessions


def risk_histogram_svg(figures: Figures) -> str:
    """The report's histogram of individual risk (:func:`sdckit.report._risk.individual_risk_figure`) as SVG."""
    # lazy: start-up time (loads scipy, sklearn)
    from sdckit.report._risk import individual_risk_figure

    if figures.risk is None:
        return '<svg xmlns="http://www.w3.org/2000/svg" width="10" height="10"></svg>'
    with _PLOT_LOCK:
        # lazy: start-up time
        import matplotlib.pyplot as plt

        fig = individual_risk_figure(figures.risk)
        buf = io.StringIO()
        fig.savefig(buf, format="svg", bbox_inches="tight")
        plt.close(fig)
    svg = buf.getvalue()
    return svg[svg.find("<svg"):]


def cells_changed(before: pl.Series, after: pl.Series) -> int:
    """Cells whose released value differs from the input's, row by row (a cell that became missing
    counts; two missing cells are equal). Values are compared as text when the types differ (a
    recoded ``age`` is text)."""
    if before.dtype != after.dtype:
        before, after = before.cast(pl.String), after.cast(pl.String)
    a, b = before.is_null(), after.is_null()
    both = ~a & ~b
    differ = (a != b) | (both & (before != after).fill_null(True))
    return int(differ.sum())


def column_loss(original: pl.DataFrame, release: pl.DataFrame, masked: Sequence[str]) -> list[dict[str, Any]]:
    """Per released column: cells changed (count, share) and, for a masked numeric column, IL1s
    (mean absolute change in units of sqrt(2) sd, :func:`sdckit.microagg._utility.il1s`)."""
    # lazy: start-up time (loads scipy, sklearn, numba)
    from sdckit.microagg._utility import il1s

    out: list[dict[str, Any]] = []
    if original.height != release.height:
        return out
    for c in release.columns:
        if c not in original.columns:
            continue
        n = cells_changed(original[c], release[c])
        row: dict[str, Any] = {"column": c, "cells_changed": n, "share_changed": n / release.height if release.height else 0.0}
        if c in masked and original.schema[c].is_numeric() and release.schema[c].is_numeric():
            x = original[c].cast(pl.Float64).to_numpy().reshape(-1, 1)
            xm = release[c].cast(pl.Float64).to_numpy().reshape(-1, 1)
            ok = ~(np.isnan(x[:, 0]) | np.isnan(xm[:, 0]))
            row["il1s"] = il1s(x[ok], xm[ok]) if ok.sum() > 1 else None
        out.append(row)
    return out
