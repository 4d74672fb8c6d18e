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

__all__ = ["Figures", "Plot", "cells_changed", "column_loss", "figures_of", "group_size_plot", "loss_plot", "risk_plot", "without_plot"]


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
            **({"consistent: users in groups < k (a missing cell matching any value)": f"{m.consistent_n_below_k:,}"}
               if m.consistent_n_below_k is not None else {}),
            **({"population exposure at k (weighted)": _pct(m.population_exposure_at_k)}
               if m.population_exposure_at_k is not None else {}),
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
        attack = m.numeric_risk or {}
        for metric, link in (attack.get("linkage") or {}).items():  # the release measure's linkage attacks
            out[f"record linkage ({metric}): nearest is the true record"] = _pct(link["share_nearest"])
        if attack.get("d_risk"):
            out["dRisk (masked value within its interval)"] = _pct(attack["d_risk"]["share"])
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


@dataclass(frozen=True)
class Plot:
    """One figure of the page: what it shows (``title``, naming the keys it uses) and its bars."""

    id: str
    title: str
    keys: tuple[str, ...]
    bars: tuple[tuple[str, float], ...]
    """``(label, value)`` per bar, in order."""
    unit: str = "records"

    def svg(self) -> str:
        """The plot as an inline SVG: one ``<rect>`` per bar carrying its label and value
        (``data-label``, ``data-value``), the value also printed above it."""
        width, height, left, bottom, top = 460, 220, 40, 58, 38
        n = max(len(self.bars), 1)
        slot = (width - left - 10) / n
        peak = max((v for _, v in self.bars), default=0.0) or 1.0
        body = [f'<svg xmlns="http://www.w3.org/2000/svg" class="plot-svg" width="{width}" height="{height}" '
                f'viewBox="0 0 {width} {height}" role="img" aria-label="{_xml(self.title)}">',
                f"<title>{_xml(self.title)}</title>",
                f'<text x="{width / 2}" y="14" text-anchor="middle" font-size="11" class="plot-title">'
                f"{_xml(_clip(self.title, 80))}</text>",
                f'<text x="{width / 2}" y="28" text-anchor="middle" font-size="10" fill="#555">{_xml(_clip(self._subtitle(), 90))}</text>',
                f'<line x1="{left}" y1="{height - bottom}" x2="{width - 10}" y2="{height - bottom}" stroke="#333"/>']
        for i, (label, value) in enumerate(self.bars):
            h = (height - bottom - top) * (value / peak if peak else 0)
            x = left + i * slot + slot * 0.15
            y = height - bottom - h
            shown = _value_text(value, self.unit)
            body.append(f'<rect x="{x:.1f}" y="{y:.1f}" width="{slot * 0.7:.1f}" height="{h:.1f}" fill="#3b6ea5" '
                        f'data-label="{_xml(label)}" data-value="{value!r}"><title>{_xml(label)}: {shown}</title></rect>')
            body.append(f'<text x="{x + slot * 0.35:.1f}" y="{y - 3:.1f}" text-anchor="middle" font-size="9">{shown}</text>')
            body.append(f'<text x="{x + slot * 0.35:.1f}" y="{height - bottom + 12}" text-anchor="end" font-size="9" '
                        f'transform="rotate(-30 {x + slot * 0.35:.1f} {height - bottom + 12})">{_xml(_clip(label, 22))}</text>')
        body.append("</svg>")
        return "".join(body)

    def _subtitle(self) -> str:
        return f"keys: {', '.join(self.keys)}" if self.keys else "no keys"


def _clip(text: str, n: int) -> str:
    return text if len(text) <= n else text[: n - 1] + "…"


def _value_text(value: float, unit: str) -> str:
    if unit == "share":
        return f"{100 * value:.3g} %"
    return f"{int(value):,}" if float(value).is_integer() else f"{value:.3g}"


def _xml(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace('"', "&quot;")


def risk_plot(figures: Figures, which: str) -> Plot:
    """The histogram of individual risk of ``figures`` (records per risk interval), titled with its
    keys, its weight and its global risk: the same :class:`~sdckit.risk.IndividualRisk` as the table's row."""
    risk = figures.risk
    keys = tuple(risk.columns) if risk is not None else ()
    source = f"weights {risk.weights}" if risk is not None and risk.weights else "no weights: r = 1 / f_k"
    glob = f"global risk {_pct(figures.global_risk)}" if figures.global_risk is not None else "no risk measured"
    title = f"Individual risk, {which}: {len(keys)} keys ({source}); {glob}"
    bars = tuple((label, float(c)) for label, c in risk.histogram()) if risk is not None else ()
    return Plot(f"risk-{which.split()[0]}", title, keys, bars)


def group_size_plot(figures: Figures, which: str) -> Plot:
    """Records by the size of their group on the keys (1, 2, ..., k-1, k or more), a missing cell a
    value of its own (the figure of the table's "exposure, a missing cell as a value")."""
    m = figures.measure
    risk = figures.risk
    keys = tuple(risk.columns) if risk is not None else tuple(m.quasi_identifiers)
    bars: list[tuple[str, float]] = []
    if risk is not None:
        f = np.asarray(risk.sample_frequency)
        for size in range(1, m.k):
            bars.append((f"groups of {size}", float(np.sum(f == size))))
        bars.append((f"groups of {m.k}+", float(np.sum(f >= m.k))))
    below = sum(v for _, v in bars[:-1])
    title = f"Records by group size, {which}: {len(keys)} keys, k = {m.k}; {int(below):,} in groups < k"
    return Plot(f"groups-{which.split()[0]}", title, keys, tuple(bars))


def loss_plot(loss: Sequence[dict[str, Any]], keys: Sequence[str]) -> Plot:
    """Share of cells changed per released column (the information-loss table)."""
    bars = tuple((str(r["column"]), float(r["share_changed"])) for r in loss)
    return Plot("loss", f"Cells changed per released column ({len(bars)} columns)", tuple(keys), bars, unit="share")


def without_plot(figures: Figures) -> Plot:
    """Exposure at k without each key (the release measure's ``exposure_without``): which key drives the risk."""
    m = figures.measure
    bars = tuple((f"without {c}", float(v)) for c, v in m.exposure_without.items())
    return Plot("without", f"Exposure at k = {m.k} of the release with one key left out (now {_pct(m.exposure_at_k)})",
                tuple(m.quasi_identifiers), bars, unit="share")
