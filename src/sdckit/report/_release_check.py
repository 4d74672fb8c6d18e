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

__all__ = ["alert", "beside", "headline", "posterior_text", "release_check_section"]


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
    entity = getattr(release, "entity", None)
    if entity is not None:  # k over households/entities (issue 35): the unit an attacker recognises
        if release.n_below_k == 0:
            return (f"every group of identical released rows holds at least {k} distinct households/entities "
                    f"({entity}; suppressed cells included)")
        return (
            f"{_pct(release.exposure_at_k)} of released rows are in groups of fewer than {k} distinct households/"
            f"entities ({entity}; {release.n_single_entity_rows or 0:,} rows in groups of one entity's rows; the "
            f"budget allows {_pct(release.budget)})"
        )
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
    hh = getattr(release, "household_risk", None)
    if hh:
        parts.append(
            f"household risk (sdcMicro's hier_risk: a household is re-identified if any member is) "
            f"{_pct(hh['global_risk'])}, {hh['expected_households']:.3g} households expected re-identified of "
            f"{hh['n_households']:,}"
        )
    if release.population_exposure_at_k is not None:
        parts.append(
            f"weighted by {release.weight_column} (the population), {_pct(release.population_exposure_at_k)} "
            f"below {k}"
            + (f" and {_pct(release.population_consistent_below_k)} with fewer than {k} consistent rows"
               if release.population_consistent_below_k is not None else "")
        )
    return ("Beside it: " + "; ".join(parts) + ".") if parts else ""


ATTACK_NAMES = {"singling_out": "singling out", "linkability": "linkability", "inference": "attribute inference"}


def _one_attack(name: str, got: Mapping[str, Any]) -> str:
    text = f"{ATTACK_NAMES[name]} {got['risk']:.3f} [{got['risk_low']:.3f}, {got['risk_high']:.3f}]"
    secret = got.get("detail", {}).get("secret")
    text += f" (secret {secret})" if name == "inference" and secret else ""
    return text + (f", budget {got['budget']:.3f}" if got.get("budget") is not None else "")


def attack_text(release: ReleaseMeasure) -> str:
    """The attacks in one or two sentences (empty when not run): each risk with its interval; a warning
    or the refusal when they show risk."""
    figures = release.attacks
    if not figures:
        return ""
    done = [n for n in ATTACK_NAMES if figures.get(n)]
    listed = "; ".join(_one_attack(n, figures[n]) for n in done)
    text = (
        f"Attacks on the release with every released column known, against {figures['n_control']:,} held-out "
        f"control records (risk = (attack - control) / (1 - control), {100 * figures['confidence']:.0f} % interval): "
        f"{listed}."
    )
    over = release.attacks_over_budget
    if over:
        return (text + " Over budget: " + ", ".join(ATTACK_NAMES[n] for n in over) + ". To fix: mask the columns "
                "the attacks use (strata: quasi_identifiers on a microaggregation step, a larger k, coarser or "
                "withheld non-key columns).")
    shows = release.attacks_show_risk
    if shows:
        return (
            f"WARNING: the attacks show risk ({', '.join(ATTACK_NAMES[n] for n in shows)}: a risk above "
            f"{100 * figures['warn_risk']:.0f} %, its interval clear of 0). " + text + " Mask the columns they use (e.g. strata: "
            "quasi_identifiers on a microaggregation step, a larger k), or set attacks: budget: in the pipeline "
            "to refuse such a release."
        )
    return text


def verdict(release: ReleaseMeasure, allow_over_budget: bool) -> str:
    """One sentence: safe or not, with the release's own figure, and the two other figures beside it."""
    extra = beside(release)
    extra = f" {extra}" if extra else ""
    attacks = attack_text(release)
    extra += f" {attacks}" if attacks else ""
    if release.within_budget:
        warn = "ATTACKS SHOW RISK (see below); " if release.attacks_show_risk else ""
        return (
            f"{warn}Within budget: in the release as written, {headline(release)} (k = {release.k}, budget "
            f"{_pct(release.budget)}); k-anonymity {release.k_anonymity:,}, {release.n_unique:,} unique rows."
            + extra + _missing_note(release)
        )
    why = (f"in the release, {headline(release)}" if release.exposure_at_k > release.budget + 1e-12
           else "the attacks on the release are over their budget")
    head = (
        f"NOT SAFE TO RELEASE: {why}; {release.n_unique:,} rows are unique."
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
    linked: Any = None,
    scenarios: Sequence[Any] = (),
    posterior: Any = None,
    posterior_pass: Mapping[str, Any] | None = None,
) -> Section:
    """Section 'Input and release, side by side'."""
    posterior_ok = posterior is None or release.exposure_at_k + posterior.share_above <= release.budget + 1e-12
    within = release.within_budget and posterior_ok
    refused = not within and not allow_over_budget
    section = Section(
        "release_check",
        "Input and release, side by side",
        data={
            "input": input_measure.to_dict(),
            "release": release.to_dict(),
            "within_budget": within,
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
    if posterior is not None:
        text += " " + posterior_text(posterior, release.budget, release.exposure_at_k, posterior_pass)
        if release.within_budget and not posterior_ok:
            text = "NOT SAFE TO RELEASE: " + text + (
                " The data file was written anyway (allow_over_budget: true)." if allow_over_budget
                else " No data file was written.")
    if reproducible:
        text += (" NOT FOR PUBLICATION: a reproducible run (reproducible: true); whoever learns its seed can undo "
                 "the random steps (tell decoys from suppressions, PRAM'd records from unperturbed ones).")
    if not shuffled:
        text += " The rows keep the input's order (shuffle_rows: false): anyone with the input links them by position."
    section.data["reproducible"] = reproducible
    section.data["rows_shuffled"] = shuffled
    section.data["linked"] = linked.to_dict() if linked is not None else None
    section.data["row_posterior"] = posterior.to_dict() if posterior is not None else None
    section.data["posterior_bound"] = dict(posterior_pass) if posterior_pass is not None else None
    section.data["scenarios"] = [s.to_dict() for s in scenarios]
    section.add(alert(text) if not within or bool(release.attacks_show_risk) or reproducible or not shuffled else paragraph(text))
    section.add(paragraph(assumed_attacker(release, linked)))
    if linked is not None and linked.columns:
        section.add(paragraph(linked.describe()))
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
    if scenarios:  # after the measure table: the headline first, then what a wider attacker faces
        section.add(scenario_table(scenarios))
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
    if release.attacks:
        section.add(attack_table(release.attacks))
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


def posterior_text(posterior: Any, budget: float, exposure: float = 0.0, bound: Mapping[str, Any] | None = None) -> str:
    """The attacker's posterior on a person's row given every released column, against the budget; with
    ``bound`` (the posterior pass's figures), the bounds that hold for every row and every suppressed cell."""
    k, tol = posterior.k, posterior.tolerance
    d = posterior.to_dict()
    if bound is not None:
        return (
            f"{bound['description']} So, reading every released column ({', '.join(posterior.features) or 'none beside the keys'}), "
            f"an attacker who knows a person's keys and the population's law of the keys and the other columns puts at most "
            f"{bound['row_bound']:.3g} (1/k + {tol:g}) on any person's own row in a group of at least {k} (at most "
            f"{bound['max_row_posterior']:.3f} in this release) and at most {bound['cell_bound']:.3g}, or its column's "
            f"commonest share + {tol:g} where that is larger, on a suppressed cell (at most "
            f"{bound['max_cell_posterior']:.3f} here; {d['mean_cell_posterior']:.2f} on average): computed on this "
            "release after the pass. The cell figure bounds how often a best guess of a suppressed value is right; "
            "an attacker with a model from other data can believe more, not be right more often, and the pass "
            "scored such a model's guesses on this release (its figures open this paragraph; docs/anonymize.md). "
            "Exposure at k plus the people above the row bound: "
            f"{_pct(exposure + posterior.share_above)}; the budget allows {_pct(budget)}."
        )
    cells = (
        f" On the {d['n_suppressed_rows']:,} rows with a suppressed key, the attacker's most probable hidden value "
        f"has posterior {d['mean_cell_posterior']:.2f} on average and at most {d['max_cell_posterior']:.2f} (exact for "
        "this release, not a bound: the value the other columns imply)."
        if d["n_suppressed_rows"] else ""
    )
    return (
        f"Reading every released column ({', '.join(posterior.features) or 'none beside the keys'}), an attacker who "
        f"knows a person's keys and how each released group was formed puts more than 1/k + {tol:g} = "
        f"{1 / k + tol:.3g} on the person's own row for {_pct(posterior.share_above)} of users in groups of at least "
        f"{k} ({d['n_above_1_over_k_plus_tolerance']:,}; at most {posterior.max:.2f} on anyone's row); with the "
        f"exposure at k that makes {_pct(exposure + posterior.share_above)}, and the budget allows {_pct(budget)}."
        + cells
    )


def assumed_attacker(release: ReleaseMeasure, linked: Any = None) -> str:
    """Which columns the guarantee assumes the attacker knows (and reads beside them)."""
    declared = list(linked.declared_keys) if linked is not None and linked.columns else list(release.quasi_identifiers)
    extra = [c for c in release.quasi_identifiers if c not in declared]
    others = [c for c in release.columns if c not in release.quasi_identifiers]
    return (
        f"The guarantee assumes the attacker knows a person's {', '.join(declared)}"
        + (f" (and counts the linked {', '.join(extra)} as keys)" if extra else "")
        + "; the attacker reads every released column"
        + (f", but {', '.join(others)} are not keys: an attacker who also knows them faces the wider scenario below"
           if others else "")
        + "."
    )


def scenario_table(scenarios: Sequence[Any]) -> Block:
    """The headline per attacker: the assumed one and a wider one (``attacker_knows``)."""
    rows = [
        (s.name, ", ".join(s.columns), _pct(s.exposure_at_k),
         _pct(s.consistent_below_k) if s.consistent_below_k is not None else "not measured",
         f"{s.consistent_n_one:,}" if s.consistent_n_one is not None else "–")
        for s in scenarios
    ]
    k = scenarios[0].k
    return table(
        rows,
        ["attacker", "columns known", f"rows in groups < {k} identical rows",
         f"users with < {k} consistent rows", "users with a single consistent row"],
        caption="The headline again for each attacker: what a wrong choice of keys costs. Only the first row is "
                "under the budget and the refusal rule.",
    )


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


def attack_table(figures: Mapping[str, Any]) -> Any:
    """The attacks on the release: attack and control success, the risk with its interval, the budget."""
    what = {
        "singling_out": "queries built from released rows that match exactly one released row (duplicates "
                        "counted) and exactly one person",
        "linkability": "two files of the same persons (quasi-identifiers; the other columns) joined through "
                       "their nearest released row",
        "inference": "a column read off the nearest released row, every other column known",
    }
    rows = [
        (ATTACK_NAMES[n], _pct(g["attack_rate"]), _pct(g["control_rate"]),
         f"{g['risk']:.3f} [{g['risk_low']:.3f}, {g['risk_high']:.3f}]",
         "–" if g.get("budget") is None else f"{g['budget']:.3f}", what[n])
        for n in ATTACK_NAMES if (g := figures.get(n))
    ]
    so = figures.get("singling_out") or {}
    dedup = so.get("detail", {}).get("dedup_only", 0)
    return table(
        rows, ["attack", "success on the release", "success on the control", "risk [interval]", "budget", "attack"],
        caption=(
            f"{figures['n_targets']:,} target and {figures['n_control']:,} control records (the control's released "
            f"rows taken out of the attacked table); {figures['n_attacks']} attacks each. {dedup:,} candidate "
            "queries matched one distinct released row repeated several times: a tool that deduplicates the "
            "release (anonymeter) counts them as singling out; here they do not."
        ),
    )
