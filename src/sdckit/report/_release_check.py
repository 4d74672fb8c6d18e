"""The report's section 'Input and release, side by side': the release measured as written.

It renders the :class:`~sdckit.risk.ReleaseMeasure` of the input (its role columns as they are)
and of the release (after the masking steps, only the columns with a releasing role), the roles
of every column, the guesses with their fixes, and the linear relations found. It computes
nothing itself.
"""

from __future__ import annotations

import html
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from sdckit.report._fmt import pct as _pct
from sdckit.report._report import Block, Section, metrics, paragraph, table

if TYPE_CHECKING:
    from sdckit.pipeline._roles import Roles
    from sdckit.risk import ReleaseMeasure

__all__ = ["alert", "beside", "headline", "release_check_section"]


def alert(text: str) -> Block:
    """A paragraph in bold red (a release over its budget)."""
    return Block(f'<p class="alert" style="color:#b00020;font-weight:bold">{html.escape(text)}</p>', "paragraph")


def _l_text(measure: ReleaseMeasure) -> str:
    if not measure.l_diversity:
        return "not measured"
    parts = []
    for col, value in measure.l_diversity.items():
        if isinstance(value, Mapping):
            l_value = value.get("l", value.get("l_diversity", value.get("min_l")))
            t = value.get("t_closeness")
            closeness = f", t-closeness {t:.4g}" if isinstance(t, (int, float)) else ""
            parts.append(f"{col}: l = {l_value}{closeness}" if l_value is not None else f"{col}: {dict(value)}")
        else:
            parts.append(f"{col}: l = {value}")
    return "; ".join(parts)


def _groups_cell(measure: ReleaseMeasure) -> Any:
    """The number of groups, counted by the table's one rule: with missing cells matching any value a
    record's group overlaps others, so there is no count of groups to set beside k-anonymity."""
    if measure.n_missing_cells and measure.missing_semantics == "wildcard":
        return "– (a missing cell matches any value: groups overlap)"
    return measure.n_groups


def _missing_note(release: ReleaseMeasure) -> str:
    """How the missing cells were counted, when the headline is sdcMicro's wildcard reading."""
    strict = getattr(release, "exposure_missing_as_value", None)
    if not release.n_missing_cells or strict is None or release.missing_semantics == "value":
        return ""
    return (
        f" Each of the {release.n_missing_cells:,} missing quasi-identifier cells is counted as matching any "
        f"value (sdcMicro's rule for suppressed cells, missing_semantics: wildcard); read as a value of its own, "
        f"{_pct(strict)} of users would be in groups smaller than k."
    )


def headline(release: ReleaseMeasure) -> str:
    """The headline in plain words, in the reading the budget uses."""
    k = release.k
    if release.missing_semantics == "value":
        if release.n_below_k == 0:
            other = "other" if k == 2 else "others"
            return f"every released row looks exactly like at least {k - 1} {other} (suppressed cells included)"
        return (
            f"{_pct(release.exposure_at_k)} of released rows are in groups of fewer than {k} identical rows "
            f"(suppressed cells included; the budget allows {_pct(release.budget)})"
        )
    return (
        f"{_pct(release.exposure_at_k)} of users are in groups smaller than k = {k}, a suppressed cell matching "
        f"any value (sdcMicro's reading; the budget allows {_pct(release.budget)})"
    )


def beside(release: ReleaseMeasure) -> str:
    """The two other figures, stated beside the headline."""
    k = release.k
    parts = []
    if release.consistent_below_k is not None:
        parts.append(
            f"an attacker who knows a person's quasi-identifiers finds fewer than {k} consistent released rows "
            f"for {_pct(release.consistent_below_k)} of users ({release.consistent_n_one or 0:,} with a single one)"
        )
    if release.missing_semantics == "value" and release.exposure_wildcard is not None:
        parts.append(
            f"with a suppressed cell matching any value (sdcMicro's reading), {_pct(release.exposure_wildcard)} of "
            f"users are in groups smaller than {k}"
        )
    if release.population_exposure_at_k is not None:
        parts.append(
            f"weighted by {release.weight_column} (the population), {_pct(release.population_exposure_at_k)} "
            f"below {k}"
            + (f" and {_pct(release.population_consistent_below_k)} with fewer than {k} consistent rows"
               if release.population_consistent_below_k is not None else "")
        )
    return ("Beside it: " + "; ".join(parts) + ".") if parts else ""


def verdict(release: ReleaseMeasure, allow_over_budget: bool) -> str:
    """One sentence: safe or not, with the release's own figure, and the two other figures beside it."""
    extra = beside(release)
    extra = f" {extra}" if extra else ""
    if release.within_budget:
        return (
            f"Within budget: in the release as written, {headline(release)} (k = {release.k}, budget "
            f"{_pct(release.budget)}); k-anonymity {release.k_anonymity:,}, {release.n_unique:,} unique rows."
            + extra + _missing_note(release)
        )
    head = (
        f"NOT SAFE TO RELEASE: in the release, {headline(release)}; {release.n_unique:,} rows are unique."
    ) + extra + _missing_note(release)
    if allow_over_budget:
        return head + " The data file was written anyway because the pipeline sets allow_over_budget: true."
    return head + " No data file was written."


def release_check_section(
    input_measure: ReleaseMeasure,
    release: ReleaseMeasure,
    *,
    roles: Roles | None = None,
    not_released: Mapping[str, str] | None = None,
    relations: Sequence[Any] = (),
    allow_over_budget: bool = False,
    reproducible: bool = False,
    shuffled: bool = True,
) -> Section:
    """Section 'Input and release, side by side'."""
    refused = not release.within_budget and not allow_over_budget
    section = Section(
        "release_check",
        "Input and release, side by side",
        data={
            "input": input_measure.to_dict(),
            "release": release.to_dict(),
            "within_budget": release.within_budget,
            "refused": refused,
            "allow_over_budget": allow_over_budget,
            "roles": roles.to_dict() if roles is not None else None,
            "not_released": dict(not_released or {}),
            "linear_relations": [r.to_dict() for r in relations],
        },
    )
    section.add(
        metrics(
            [
                (f"users in groups < {release.k}, release", 100 * release.exposure_at_k, "%"),
                ("k-anonymity of the release", release.k_anonymity, ""),
                ("unique users in the release", release.n_unique, ""),
                *(
                    [(f"users with < {release.k} consistent rows", 100 * release.consistent_below_k, "%")]
                    if release.consistent_below_k is not None else []
                ),
                *(
                    [(f"users in groups < {release.k}, wildcard (sdcMicro)", 100 * release.exposure_wildcard, "%")]
                    if release.exposure_wildcard is not None else []
                ),
            ]
        )
    )
    text = verdict(release, allow_over_budget)
    if reproducible:
        text += (" NOT FOR PUBLICATION: a reproducible run (reproducible: true); whoever learns its seed can undo "
                 "the random steps (tell decoys from suppressions, PRAM'd records from unperturbed ones).")
    if not shuffled:
        text += " The rows keep the input's order (shuffle_rows: false): anyone with the input links them by position."
    section.data["reproducible"] = reproducible
    section.data["rows_shuffled"] = shuffled
    section.add(alert(text) if not release.within_budget or reproducible or not shuffled else paragraph(text))
    idisc_in = input_measure.interval_disclosure
    idisc = release.interval_disclosure
    rows: list[tuple[Any, ...]] = [
        ("quasi-identifiers measured", ", ".join(input_measure.quasi_identifiers), ", ".join(release.quasi_identifiers),
         "the columns an intruder is assumed to know"),
        ("k-anonymity (smallest group)", input_measure.k_anonymity, release.k_anonymity,
         "size of the smallest group of users sharing their quasi-identifier values"),
        (f"users in groups < k = {release.k}", _pct(input_measure.exposure_at_k), _pct(release.exposure_at_k),
         f"share of users an intruder can narrow down to fewer than {release.k} people (the budget applies here)"),
        ("unique users", input_measure.n_unique, release.n_unique, "users alone in their group"),
        (f"users with < {release.k} consistent released rows", _pct(input_measure.exposure_at_k),
         _pct(release.consistent_below_k) if release.consistent_below_k is not None else "not measured",
         "per user, the released rows consistent with the user's true quasi-identifiers (a suppressed cell "
         "consistent with anything): what an attacker who knows the person faces"),
        (f"users in groups < k = {release.k}, a missing cell matching any value",
         _pct(input_measure.exposure_wildcard if input_measure.exposure_wildcard is not None
              else input_measure.exposure_at_k),
         _pct(release.exposure_wildcard) if release.exposure_wildcard is not None else "–",
         "sdcMicro's reading of suppressed cells, for comparison with sdcMicro"),
        ("groups", _groups_cell(input_measure), _groups_cell(release),
         "distinct combinations of the quasi-identifiers, counted by the rule of the headline row"),
        ("columns released", len(input_measure.columns), len(release.columns), "columns in the file"),
        ("l-diversity of the sensitive columns", _l_text(input_measure), _l_text(release),
         "fewest distinct sensitive values in a group; l = 1: some group shares one value, which an intruder "
         "then learns"),
        (
            "interval disclosure of the masked columns (±5 % sd)",
            _pct(idisc_in["share"]) if idisc_in else "all records (unmasked)",
            _pct(idisc["share"]) if idisc else "– (no masked numeric column)",
            "records whose every masked original value lies within ±5 % of a standard deviation of the "
            "released one (SDID risk; lower is safer)",
        ),
    ]
    section.add(
        table(rows, ["measure", "input, as is", "release, as written", "what it measures"],
              caption="Both columns measure the same quasi-identifiers; the release with its released values "
                      "(a microaggregated age is one value per group, a suppressed cell '*' a value of its own).")
    )
    if release.fixes:
        section.add(paragraph("What would bring the release within budget:"))
        section.add(table([(i + 1, f) for i, f in enumerate(release.fixes)], ["#", "fix"]))
    if idisc and idisc.get("per_column"):
        section.add(
            table(
                [(c, _pct(v)) for c, v in idisc["per_column"].items()],
                ["masked column", "records whose original lies within ±5 % sd of the released value"],
            )
        )
    if release.numeric_risk:
        section.add(numeric_risk_table(release.numeric_risk))
    if roles is not None:
        role_of: dict[str, str] = {}
        for role in ("identifiers", "weight", "keep", "sensitive", "numeric", "quasi_identifiers"):
            for c in getattr(roles, role):
                role_of[c] = role if c not in role_of else f"{role_of[c]}, {role}"
        withheld = dict(not_released or {})
        listed = [*release.columns, *withheld]
        section.add(
            table(
                [(c, role_of.get(c, "no role"), "yes" if c in release.columns else f"no: {withheld.get(c, '')}")
                 for c in listed],
                ["column", "role", "released"],
                caption="A column with no role is not released; identifiers never are.",
            )
        )
        if roles.flags:
            section.add(paragraph("Guesses and doubts, each with its fix:"))
            section.add(table([(f.column, f.kind, f.message) for f in roles.flags], ["column", "flag", "fix"]))
    if relations:
        section.add(
            paragraph(
                "Linear relations among the numeric columns (found before masking): "
                + "; ".join(r.formula() for r in relations)
                + ". Masking one side while the other goes out unchanged would undo the masking; the pipeline "
                "refuses that unless allow_linear_relations is set."
            )
        )
    section.add(
        paragraph(
            f"Counted on the table exactly as written. A missing cell counts as "
            f"{'matching any value' if release.missing_semantics == 'wildcard' else 'a value of its own'} "
            "in the headline; the consistent count takes it as consistent with anything. "
            + (release.l_diversity_note + "." if release.l_diversity_note else ""),
            note=True,
        )
    )
    section.summary = text
    return section


def numeric_risk_table(risk: Mapping[str, Any]) -> Any:
    """Numeric disclosure risk of the masked columns: record linkage, sdcMicro's dRisk and dRiskRMD."""
    link = risk["linkage"]
    k = risk["k"]
    rows: list[tuple[Any, ...]] = [
        ("linked: own original nearest", _pct(link["euclidean"]["share_nearest"]),
         "released records whose nearest original record (standardised columns) is their own: an intruder "
         "holding the originals links them back"),
        (f"linked: own original within the {k} nearest", _pct(link["euclidean"]["share_within_k"]),
         f"released records whose own original is among the {k} nearest originals"),
        ("linked by Mahalanobis distance: nearest", _pct(link["mahalanobis"]["share_nearest"]),
         "the same, with distances in the original covariance"),
        ("sdcMicro dRisk (±5 % masked sd)", _pct(risk["d_risk"]["share"]),
         "records whose every original value lies within ±5 % of the masked column's sd of the released one"),
    ]
    rmd = risk.get("d_risk_rmd")
    if rmd:
        rows.append(("sdcMicro dRiskRMD (risk1 / risk2)", f"{_pct(rmd['risk1'])} / {_pct(rmd['risk2'])}",
                     "intervals scaled by the robust Mahalanobis distance; risk2 counts only released records "
                     "with no other released record nearby"))
    return table(rows, ["numeric risk of the masked columns", "release", "what it measures"],
                 caption=f"On {len(risk['columns'])} masked numeric column(s), {risk['n']:,} complete records; "
                         "lower is safer.")
