"""The report's section 'Risk of the release, as written': the figures a reviewer signs.

It renders the :class:`~sdckit.risk.ReleaseMeasure` of the release beside the input's: individual
risk (per-record histogram), global risk and expected re-identifications with the sampling
weights, k-anonymity, l-diversity, interval disclosure, the information loss of each categorical
quasi-identifier, and the PRAM transition matrices of the masking steps. It computes nothing
itself (the pipeline measured the released table, :func:`sdckit.risk.measure_release`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from sdckit.report._fmt import pct
from sdckit.report._release_check import alert
from sdckit.report._report import Block, Section, figure, metrics, paragraph, table

if TYPE_CHECKING:
    from sdckit.pipeline._run import StepLog
    from sdckit.risk import ReleaseMeasure

__all__ = ["pram_matrices", "release_risk_section"]


def pram_matrices(steps: Sequence[StepLog]) -> dict[str, Any]:
    """The transition matrices of every PRAM step, ``{column: {"values": [...], "matrix": [[...]]}}``
    (P[i][j] = probability that value i is released as value j), with the step they came from."""
    out: dict[str, Any] = {}
    for i, step in enumerate(steps):
        for column, m in dict(step.details.get("transition_matrices") or {}).items():
            out[column] = {"step": i + 1, **m}
    return out


def _histogram_figure(before: Mapping[str, Any], after: Mapping[str, Any]) -> Any:
    # lazy: start-up time
    import matplotlib

    matplotlib.use("Agg", force=False)
    # lazy: start-up time
    import matplotlib.pyplot as plt

    labels = [row["interval"] for row in after["histogram"]]
    x = np.arange(len(labels))
    fig, ax = plt.subplots(figsize=(6.4, 3.0))
    ax.bar(x - 0.2, [row["n_records"] for row in before["histogram"]], 0.4, label="input, as is", color="#b33")
    ax.bar(x + 0.2, [row["n_records"] for row in after["histogram"]], 0.4, label="release, as written", color="#2f5aa8")
    ax.set_xticks(x, labels, rotation=30, fontsize=8)
    ax.set_yscale("symlog", linthresh=1)
    ax.set_xlabel("individual re-identification risk r_i")
    ax.set_ylabel("records")
    ax.legend(fontsize=8, frameon=False)
    fig.tight_layout()
    return fig


def _l_cell(measure: ReleaseMeasure, column: str) -> str:
    row = (measure.l_diversity or {}).get(column)
    if not row:
        return "–"
    t = row.get("t_closeness")
    closeness = f", t-closeness {t:.4g}" if isinstance(t, (int, float)) else ""
    return f"l = {row.get('l')}, {pct(row.get('not_2_diverse'))} not 2-diverse{closeness}"


def release_risk_section(
    input_measure: ReleaseMeasure, release: ReleaseMeasure, *, steps: Sequence[StepLog] = (), plot: bool = True
) -> Section:
    """Section 'Risk of the release, as written' (id ``release_risk``)."""
    ir, ir_in = release.individual_risk, input_measure.individual_risk
    matrices = pram_matrices(steps)
    section = Section(
        "release_risk",
        "Risk of the release, as written (beside the input)",
        data={
            "release": {"individual_risk": ir, "k_anonymity": release.k_anonymity, "l_diversity": release.l_diversity,
                        "interval_disclosure": release.interval_disclosure},
            "input": {"individual_risk": ir_in, "k_anonymity": input_measure.k_anonymity,
                      "l_diversity": input_measure.l_diversity},
            "information_loss": release.information_loss,
            "pram_matrices": matrices,
            "warnings": list(release.warnings),
            "weights": release.weights,
            "missing_semantics": release.missing_semantics,
        },
    )
    if ir is None or ir_in is None:
        section.add(paragraph("No quasi-identifier is released: there is no key to re-identify a record on."))
        section.summary = "No quasi-identifier is released."
        return section
    model = (
        f"sampling weights {release.weights!r}: F_k, the estimated population count of a key, is the sum of the "
        "weights over it, and r_i is the Benedetti-Franconi approximation of sdcMicro's measure_risk"
        if release.weights
        else "no sampling weights: the table is taken as the population, r_i = 1 / f_k"
    )
    reading = (
        "a missing (suppressed) cell matches any value (sdcMicro's reading)"
        if release.missing_semantics == "wildcard"
        else "a missing (suppressed) cell is a value of its own"
    )
    section.add(
        metrics(
            [
                ("expected re-identifications, release", f"{ir['expected_reidentifications']:,.2f}", ""),
                ("global risk, release", 100 * ir["global_risk"], "%"),
                ("expected re-identifications, input as is", f"{ir_in['expected_reidentifications']:,.2f}", ""),
                ("k-anonymity, release", release.k_anonymity, ""),
            ]
        ),
        paragraph(
            f"Individual risk r_i is the probability that an intruder who matches record i on "
            f"{', '.join(release.quasi_identifiers)} as released against the population picks the right person "
            f"({model}; {reading}). Summed over the {release.n:,} records it is the expected number of correct "
            f"re-identifications: {ir['expected_reidentifications']:,.2f} in the release "
            f"({pct(ir['global_risk'])} of the records) against {ir_in['expected_reidentifications']:,.2f} in the "
            "input as is."
        ),
    )
    idisc = release.interval_disclosure
    # l-diversity groups a missing cell as a value of its own: in this table only when that is its rule
    same_rule = release.missing_semantics == "value" or not (release.n_missing_cells or input_measure.n_missing_cells)
    rows: list[tuple[Any, ...]] = [
        ("expected re-identifications", f"{ir_in['expected_reidentifications']:,.2f}",
         f"{ir['expected_reidentifications']:,.2f}"),
        ("global risk", pct(ir_in["global_risk"]), pct(ir["global_risk"])),
        ("highest individual risk", pct(ir_in["max_risk"]), pct(ir["max_risk"])),
        ("records with risk > 0.1", ir_in["n_above"]["0.1"], ir["n_above"]["0.1"]),
        ("k-anonymity (smallest group)", input_measure.k_anonymity, release.k_anonymity),
        *[(f"l-diversity of {c}", _l_cell(input_measure, c), _l_cell(release, c)) for c in (release.l_diversity or {})
          if same_rule],
        *([("l-diversity", "–", "in 'Input and release, side by side': its groups read a missing cell as a value "
            "of its own, another rule than this table's")] if release.l_diversity and not same_rule else []),
        ("interval disclosure of the masked columns (±5 % sd)", "all records (unmasked)" if idisc else "–",
         pct(idisc["share"]) if idisc else "– (no masked numeric column)"),
    ]
    section.add(
        table(rows, ["measure", "input, as is", "release, as written"],
              caption=f"Every row of this table counts groups one way: {reading}.")
    )
    if plot:
        section.add(
            figure(_histogram_figure(ir_in, ir), caption="Records per interval of individual risk (log scale), "
                   "input as is against the release as written.")
        )
    section.add(
        table(
            [(a["interval"], a["n_records"], b["n_records"]) for a, b in zip(ir_in["histogram"], ir["histogram"], strict=True)],
            ["individual risk", "records, input", "records, release"],
            caption="Per-record risk histogram",
        )
    )
    loss = (release.information_loss or {}).get("per_column") or {}
    if loss:
        section.add(
            table(
                [(c, pct(v["share_changed"]), pct(v["share_suppressed"]), v["entropy_bits"], v["entropy_lost_bits"],
                  pct(v["share_entropy_lost"])) for c, v in loss.items()],
                ["quasi-identifier", "cells changed", "cells suppressed", "entropy (bits)", "entropy lost (bits)",
                 "share of entropy lost"],
                caption="Information loss of each categorical quasi-identifier: entropy lost = H(original | released), "
                "what a record's original value still leaves unknown after reading the release.",
            )
        )
    for column, m in matrices.items():
        values = m["values"]
        section.add(
            table(
                [(v, *row) for v, row in zip(values, m["matrix"], strict=True)],
                ["original \\ released", *values],
                caption=f"PRAM transition matrix of {column} (step {m['step']}): P[i][j] = probability that value i "
                "is released as j. Published with the release (also in the JSON sidecar) so analysts can correct "
                "their estimates: E[released counts] = original counts x P.",
            )
        )
    section.summary = (
        f"In the release, {ir['expected_reidentifications']:,.2f} expected re-identifications "
        f"(global risk {pct(ir['global_risk'])}) against {ir_in['expected_reidentifications']:,.2f} in the input."
    )
    return section


def warning_blocks(warnings: Sequence[str]) -> list[Block]:
    """The Summary's warnings, one paragraph each (empty when none)."""
    return [alert(f"Warning: {w}.") for w in warnings]
