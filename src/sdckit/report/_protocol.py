"""The report's section on a run of the shuffle protocol (:func:`sdckit.protocol.simulate`)."""

from __future__ import annotations

from sdckit.protocol import SimulationResult
from sdckit.report._fmt import NO_GUARANTEE, bound_text, in_percent, is_vacuous, pct
from sdckit.report._report import Section, metrics, paragraph, table


def protocol_section(result: SimulationResult) -> Section:
    """Section 'Shuffle protocol': who learned what, the plan and why, the release and its check.

    Shares are shares of users (0..1, shown in percent); speeds are users per second.
    """
    plan = result.plan
    sec = Section(
        id="protocol",
        title="Shuffle protocol (users → shuffler → curator → analyst)",
        data=result.to_dict(),
        summary=(
            f"The shuffle protocol released {', '.join(plan.columns) or 'no column'} for "
            f"{result.n_released:,} users; true share in groups < {plan.k}: {pct(result.exposure_at_k)} "
            f"(planner's bound: {bound_text(plan.bound)}, budget {pct(plan.budget)}); "
            f"release {'verified' if result.verified else 'NOT verified'}."
        ),
    )
    sec.add(
        paragraph(
            "The curator counted each feature's values separately (round 1, one message per feature and "
            "user, shuffled, without sender) and chose the columns below from those marginals alone. The "
            "analyst received one row per user on those columns, shuffled, without sender. The shuffler "
            "saw only ciphertexts of one fixed length. The guarantee needs the shuffler and the "
            "curator/analyst to be run by parties that do not collude."
        ),
        metrics(
            [
                ("users in round 1", result.n_round1, ""),
                ("users in round 2", result.n_round2, ""),
                ("released rows", result.n_released, ""),
                (f"true share in groups < {plan.k}", 100 * result.exposure_at_k, "%"),
                ("planner's bound", NO_GUARANTEE if is_vacuous(plan.bound) else 100 * plan.bound,
                 "" if is_vacuous(plan.bound) else "%"),
                ("budget", 100 * plan.budget, "%"),
            ]
        ),
        table(
            [(f, len(c), min(c.values()) if c else 0) for f, c in result.marginals.items()],
            ["feature", "values", "users holding its rarest value"],
            caption="Round 1: the marginals the curator counted",
        ),
        table(
            [(c, "released") for c in plan.columns] + [(f, in_percent(why)) for f, why in plan.excluded.items()],
            ["feature", "decision"],
            caption=f"The plan at k = {plan.k} ({plan.setting} setting; {plan.method})",
        ),
        paragraph(
            f"Verification: the release {'equals' if result.verified else 'does NOT equal'} the round-2 users' "
            "rows on the planned columns as a multiset. Messages: "
            + "; ".join(f"{who} {dict(t)}" for who, t in result.tallies.items())
            + ".",
            note=True,
        ),
    )
    if plan.redactions:
        sec.add(
            paragraph(
                f"Local suppression: {len(plan.redactions)} redaction rule(s); redacted entries per column: "
                f"{dict(result.redacted)}.",
                note=True,
            )
        )
    return sec
