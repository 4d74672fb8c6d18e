"""The comparison's report: the risk-utility map with every candidate's spread, the frontier, epsilon and the budget."""

from __future__ import annotations

from typing import Any

import numpy as np

from sdckit.compare._run import CompareResult
from sdckit.report._report import Report, Section, figure, paragraph, table

__all__ = ["build_compare_report", "summary_rows"]


def _fmt(v: float | None) -> str:
    return "–" if v is None else f"{v:.4g}"


def summary_rows(result: CompareResult) -> list[dict[str, Any]]:
    """One row per candidate: every figure's mean and range, epsilon, budget, frontier, draws."""
    rows = []
    for c in result.results:
        row: dict[str, Any] = {
            "candidate": c.candidate.name,
            "draws": len(c.draws),
            "epsilon": c.epsilon,
            "epsilon_asked": c.candidate.epsilon,
            "within_budget": c.within_budget,
            "frontier": c.candidate.name in result.frontier,
            "files": [str(d.path) for d in c.draws],
            "seconds": float(sum(d.seconds for d in c.draws)),
        }
        for f in result.figures:
            mean, lo, hi = c.stat(f.name)
            row[f.name] = {"mean": mean, "min": lo, "max": hi, "draws": [d.values.get(f.name) for d in c.draws]}
            if f.interval is not None:
                row[f.name]["intervals"] = [d.intervals.get(f.name) for d in c.draws]
        rows.append(row)
    return rows


def _map_figure(result: CompareResult) -> Any:
    # lazy: start-up time
    import matplotlib

    matplotlib.use("Agg", force=False)
    # lazy: start-up time
    import matplotlib.pyplot as plt

    rx, uy = result.figure(result.spec.risk_axis), result.figure(result.spec.utility_axis)
    fig, ax = plt.subplots(figsize=(7.5, 5.0))
    front = []
    for i, c in enumerate(result.results):
        x, y = c.stat(rx.name)[0], c.stat(uy.name)[0]
        x0, x1 = c.band(rx.name)
        y0, y1 = c.band(uy.name)
        if x is None or y is None or x0 is None or x1 is None or y0 is None or y1 is None:
            continue
        on_front = c.candidate.name in result.frontier
        colour = "#2f5aa8" if c.within_budget else "#b33"
        ax.errorbar(
            x, y, xerr=[[max(x - x0, 0.0)], [max(x1 - x, 0.0)]], yerr=[[max(y - y0, 0.0)], [max(y1 - y, 0.0)]], fmt="o" if c.candidate.epsilon is None else "s",
            color=colour, ms=8 if on_front else 5, mfc=colour if on_front else "white", capsize=3,
        )
        label = f"{i + 1}"
        ax.annotate(label, (x, y), textcoords="offset points", xytext=(6, 4), fontsize=9)
        if on_front:
            front.append((x, y))
    if len(front) > 1:
        fx, fy = zip(*sorted(front), strict=True)
        ax.plot(fx, fy, ls="--", color="#555", lw=1, label="frontier")
        ax.legend(fontsize=8, frameon=False)
    ax.set_xlabel(f"risk: {rx.label} ({rx.better} is better)")
    ax.set_ylabel(f"utility loss: {uy.label} ({uy.better} is better)")
    ax.set_title("Risk-utility map: filled = on the frontier; square = DP; red = over budget", fontsize=9)
    fig.tight_layout()
    return fig


def build_compare_report(result: CompareResult, *, plot: bool = True) -> Report:
    """The HTML report (sections ``map`` and ``figures``) with its JSON sidecar's data."""
    spec = result.spec
    config = spec.config
    report = Report(
        f"Which release is better? {len(result.results)} candidates of {config.input or 'adult'}",
        inputs={"data": config.input or "adult", "rows": result.input_frame.height, "columns": result.input_frame.columns},
        parameters={"k": config.k, "budget": config.budget, "quasi_identifiers": list(config.quasi_identifiers or ()),
                    "repeat": spec.repeat, "risk_axis": spec.risk_axis, "utility_axis": spec.utility_axis,
                    "regression": None if spec.regression is None else spec.regression.__dict__},
    )
    rows = summary_rows(result)
    rx, uy = result.figure(spec.risk_axis), result.figure(spec.utility_axis)
    budgets = config.attacks.budgets() if config.attacks.run else {}
    attack_budget = "".join(f"; {a} <= {v:g}" for a, v in budgets.items())
    section = Section("map", "Risk-utility map of every candidate, each measured on its written file",
                      data={"candidates": rows, "frontier": result.frontier, "seconds": result.seconds})
    if plot:
        section.add(figure(_map_figure(result), caption=(
            f"Each point is a candidate's mean over its draws (bars: the range over the draws, each drawn from OS "
            f"entropy, widened by each draw's own confidence interval where the figure has one: the attacks). x: {rx.label}; y: {uy.label}. The dashed line joins the frontier: no other candidate is "
            "better on both.")))
    section.add(table(
        [(i + 1, r["candidate"], _fmt(r[rx.name]["mean"]), _fmt(r[uy.name]["mean"]),
          "–" if r["epsilon"] is None else f"{r['epsilon']:.3g}",
          "yes" if r["within_budget"] else "NO", "yes" if r["frontier"] else "", r["draws"]) for i, r in enumerate(rows)],
        ["#", "candidate", rx.name, uy.name, "epsilon (DP)", f"within budget (exposure at k={config.k} <= {config.budget:g}{attack_budget})",
         "frontier", "draws"],
        caption="The map's points. Epsilon is what OpenDP's privacy maps give for the measurements made "
        "(sequential composition), for differentially private candidates only; the column domains are taken as public.",
    ))
    within = [r["candidate"] for r in rows if r["within_budget"]]
    section.add(paragraph(
        f"Within budget (exposure at k = {config.k} of at most {100 * config.budget:g} % on the written file{attack_budget}): "
        + (", ".join(within) if within else "none") + ". On the frontier: " + ", ".join(result.frontier) + "."))
    section.summary = f"{len(within)} of {len(rows)} candidates within budget; frontier: {', '.join(result.frontier)}."
    report.add(section)
    detail = Section("figures", "Every figure, mean and range over the draws")
    detail.add(table(
        [(r["candidate"], *[
            "–" if r[f.name]["mean"] is None else (
                f"{r[f.name]['mean']:.4g}" + ("" if r["draws"] == 1 or r[f.name]["min"] == r[f.name]["max"]
                                              else f" [{r[f.name]['min']:.3g}, {r[f.name]['max']:.3g}]"))
            for f in result.figures]) for r in rows],
        ["candidate", *[f.name for f in result.figures]],
        caption="; ".join(f"{f.name}: {f.label} ({f.better} is better)" for f in result.figures),
    ))
    detail.add(paragraph(
        "A dash: the figure does not apply (information loss of a synthetic release, whose rows stem from no one; "
        "record linkage of a synthetic release is 0 for the same reason, and closest_share measures what it still "
        "singles out; household risk without a household column, or of synthetic data). The attacks run against a "
        "held-out control: for synthetic data, rows the synthesizer was never given. Every figure was computed on "
        "the file as written and read back."))
    report.add(detail)
    spread = [float(np.ptp(vals)) for r in rows for f in result.figures
              if len(vals := [v for v in r[f.name]["draws"] if v is not None]) > 1]
    detail.data = {"max_spread": max(spread) if spread else 0.0}
    return report
