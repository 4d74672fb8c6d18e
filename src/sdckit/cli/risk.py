"""``sdckit risk`` and ``sdckit plan``: measure re-identification risk, plan a release."""

from __future__ import annotations

import itertools
import json
import math
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import typer
from rich.markup import escape
from rich.table import Table

from sdckit.cli._common import (
    JSON_HELP,
    KEEP_ORDER_HELP,
    check_command_outputs,
    check_plot_path,
    data_source,
    handles_errors,
    k_option,
    order_note,
    parse_columns,
    print_json,
    progress,
    read_table,
    reads_data,
    save_figure,
    shuffle_rows,
    stderr,
    stdout,
)
from sdckit.cli._common import (
    PLOT_SUFFIXES as PLOT_SUFFIXES,  # kept importable from here
)
from sdckit.errors import FileNotFoundInputError, UnreadableInputError

if TYPE_CHECKING:  # not imported at run time: `sdckit risk --help` stays fast
    from sdckit._checks import BoundMethod
    from sdckit._io import MissingPolicy
    from sdckit.plan._planner import Setting


def register(app: typer.Typer) -> None:
    """Add ``risk`` and ``plan`` to the root app."""
    app.command("risk")(risk)
    app.command("plan")(plan)


def _missing_option(value: str) -> str:
    if value not in ("value", "drop"):
        raise typer.BadParameter("use 'value' (missing is a value, the default) or 'drop' (drop those rows)")
    return value


_MISSING = typer.Option("value", "--missing", callback=_missing_option, help="'value' or 'drop'.")


def _method_option(value: str) -> str:
    if value not in ("best", "theorem2", "theorem3", "support"):
        raise typer.BadParameter(
            f"{value!r}: use best, theorem2, theorem3 or support (upper bounds; 'lower' guarantees nothing)"
        )
    return value


def _setting_option(value: str) -> str:
    if value not in ("fixed", "statistical"):
        raise typer.BadParameter(
            f"{value!r}: use fixed (the counted users are released) or statistical (a fresh sample of "
            "--n-release users is released)"
        )
    return value


def _pct(x: float) -> str:
    return "–" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{100 * x:.4g}%"


def _write_report(path: Path, section: Any, inputs: dict[str, Any], parameters: dict[str, Any]) -> None:
    # lazy: sdckit --help stays fast
    from sdckit.report import Report

    rep = Report("sdckit risk report", inputs=inputs, parameters=parameters)
    rep.add(section)
    html_path, _ = rep.write(path)
    stderr.print(f"Report written to [bold]{html_path.resolve()}[/]")  # stdout stays clean for --json


@handles_errors
@reads_data
def risk(
    data: Path = typer.Argument(..., help="A CSV, TSV, Parquet or JSON-lines file (.gz allowed)."),
    columns: str = typer.Option(
        ..., "--columns", "-c", help="Comma-separated quasi-identifiers, e.g. age,sex,zip."
    ),
    k: int | None = typer.Option(None, "--k", "-k", callback=k_option, help="Group size, >= 2 (default 5 unless --t is given)."),
    t: float | None = typer.Option(
        None, "--t", help="Share of rows instead of k: groups of <= t*n users count."
    ),
    missing: str = _MISSING,
    as_json: bool = typer.Option(False, "--json", help=JSON_HELP),
    plot: Path | None = typer.Option(
        None, "--plot", help="Write the exposure curve and its bounds to this .svg, .png or .pdf file."
    ),
    report: Path | None = typer.Option(
        None, "--report", help="Also write an HTML report with the risk section."
    ),
    budget: float | None = typer.Option(
        None, "--budget", help="The largest share of users (0..1) allowed in groups smaller than k, for the release plan in the --report section [default: 0.05]."
    ),
    read: Any = None,  # filled by @reads_data
    weights: str | None = typer.Option(
        None, "--weights", help="Sampling-weight column: adds F_k (sum of weights) and the individual risk model."
    ),
    sensitive: str | None = typer.Option(
        None, "--sensitive", help="Comma-separated sensitive columns: adds l-diversity and t-closeness."
    ),
    suda: bool = typer.Option(False, "--suda", help="Also find minimal sample uniques (SUDA2, DIS-SUDA scores)."),
    household: str | None = typer.Option(
        None, "--household", "--entity",
        help="Household/entity id column: adds the household risk (sdcMicro's hier_risk) and k over households "
             "(distinct households per group of identical keys).",
    ),
) -> None:
    """k-anonymity, uniques, exposure, the bounds from marginals beside the truth, entropy, supports;
    individual and global risk; with --sensitive l-diversity; with --suda SUDA2; with --household the
    household risk and k over households."""
    # lazy: sdckit --help stays fast
    from sdckit.risk import (
        entity_group_sizes,
        household_risk,
        individual_risk,
        l_diversity,
        risk_summary,
        suda2,
    )

    if k is not None and t is not None:
        raise typer.BadParameter("give --k or --t, not both")
    if budget is not None and report is None:  # else it would be silently ignored
        raise typer.BadParameter("--budget only sets the plan in --report; add --report FILE, or use sdckit plan")
    budget = 0.05 if budget is None else budget
    cols = parse_columns(columns)
    if plot is not None:  # checked before the work, not after
        check_plot_path(plot, inputs=[data])
    check_command_outputs(files=[plot], reports=[report], inputs=[data])
    sens = parse_columns(sensitive) if sensitive is not None else None
    policy = cast("MissingPolicy", missing)
    with progress("reading", total=5, quiet=as_json) as step:
        table = read_table(data, read)[0]  # read once for every measure
        step(description="exposure and bounds")
        summary = risk_summary(table, cols or [], k=k, t=t, missing=policy, weights=weights)
        step(description="individual risk")
        ir = individual_risk(table, cols or [], weights=weights, missing=policy)
        step(description="l-diversity")
        ld = l_diversity(table, cols or [], sens, t_closeness=True, missing=policy) if sens else None
        step(description="SUDA2")
        sd = suda2(table, cols or [], missing=policy) if suda else None
        hh = _households(table, cols or [], household, weights, policy, summary, household_risk, entity_group_sizes)
        step()
    if plot is not None:
        # lazy: sdckit --help stays fast
        from sdckit.report._risk import exposure_figure

        fig = exposure_figure(summary)
        save_figure(fig, plot, bbox_inches="tight")
    if report is not None:
        # lazy: sdckit --help stays fast
        from sdckit.report._risk import risk_review_section

        section = risk_review_section(
            table,
            cols or [],
            k=summary.max_exposed_size + 1,
            budget=budget,
            missing=policy,
            weights=weights,
            sensitive=sens,
            suda=suda,
        )
        _write_report(
            report,
            section,
            {"data": data.name},
            {"k": summary.max_exposed_size + 1, "budget": budget}
            | ({"weights": weights} if weights else {})
            | ({"sensitive": sens} if sens else {}),
        )
    if as_json:
        payload = summary.to_dict() | {"individual_risk": ir.to_dict()}
        if ld is not None:
            payload["l_diversity"] = ld.to_dict()
        if sd is not None:
            payload["suda2"] = sd.to_dict()
        if hh is not None:
            payload["households"] = hh
        print_json(payload)
        return
    at = (
        f"k = {summary.k}"
        if summary.k is not None
        else f"t = {summary.t:g} (groups of <= {summary.max_exposed_size})"
    )
    stdout.print(
        f"[bold]{data.name}[/]: {summary.n:,} users on {', '.join(summary.columns)}"
        + (f" ({summary.n_dropped:,} rows with missing values dropped)" if summary.n_dropped else "")
    )
    stdout.print(
        f"k-anonymity {summary.k_anonymity:,}; {summary.n_unique:,} unique users; {summary.n_groups:,} groups; "
        f"entropy {summary.entropy_bits:.3f} bits"
    )
    tbl = Table("quantity", f"share of users ({at})")
    tbl.add_row("[bold]true exposure[/]", f"[bold]{_pct(summary.exposure)}[/]")
    for name, label in (
        ("lower", "lower bound (max single column)"),
        ("support", "support bound t·Πm_j"),
        ("theorem2", "Theorem 2 (best sacrificed values)"),
        ("theorem3", "Theorem 3 (optimised over c)"),
        ("best", "best upper bound from marginals"),
    ):
        tbl.add_row(label, _pct(summary.bounds[name]))
    tbl.add_row("entropy bound H/log2(1/t)", _pct(summary.entropy_bound))
    tbl.add_row("sharp entropy bound", _pct(summary.entropy_bound_sharp))
    stdout.print(tbl)
    cols_tbl = Table("column", "support", "exposed alone", "exposed without it")
    for c in summary.per_column:
        cols_tbl.add_row(c.column, f"{c.support:,}", _pct(c.exposure_alone), _pct(c.exposure_without))
    stdout.print(cols_tbl)
    _print_measures(summary, ir, ld, sd)
    if hh is not None:
        stdout.print(
            f"Households ({hh['household']}): {hh['n_households']:,}; k over households {hh['k_over_households']:,} "
            f"(distinct households in the smallest group); {_pct(hh['share_below_k'])} of rows in groups of fewer "
            f"than {hh['k']} households, {hh['rows_single_household']:,} rows in groups of one household's rows. "
            f"Household risk (sdcMicro's hier_risk) {_pct(hh['global_risk'])}, "
            f"{hh['expected_reidentifications']:.2f} expected re-identifications (members), "
            f"{hh['expected_households']:.2f} households."
        )
    if plot is not None:
        stdout.print(f"Plot written to [bold]{plot}[/]")


def _households(
    table: Any, cols: list[str], household: str | None, weights: str | None, policy: Any, summary: Any,
    household_risk: Any, entity_group_sizes: Any,
) -> dict[str, Any] | None:
    """Household risk and k over households (None without --household)."""
    if household is None:
        return None
    if household in cols:
        raise typer.BadParameter(f"--household {household} is also a key column; the household id is never a key.")
    hr = household_risk(table, cols, household=household, weights=weights,
                        missing="value" if policy == "value" else policy)
    k = summary.k if summary.k is not None else summary.max_exposed_size + 1
    frame = table.select([*cols, household]).drop_nulls() if policy == "drop" else table.select([*cols, household])
    sizes = entity_group_sizes(frame, cols, frame[household])
    return {**hr.to_dict(), "k": k, "k_over_households": int(sizes.min()) if sizes.size else 0,
            "share_below_k": float((sizes < k).mean()) if sizes.size else 0.0,
            "rows_single_household": int((sizes == 1).sum())}


def _print_measures(summary: Any, ir: Any, ld: Any, sd: Any) -> None:
    """The disclosure-review measures: weights, individual and global risk, l-diversity, SUDA2."""
    if ir.weights:
        pop = "" if summary.exposure_population is None else f"; F_k < k for {_pct(summary.exposure_population)}"
        stdout.print(
            f"Weights [bold]{ir.weights}[/]: estimated population "
            f"{float((ir.population_frequency / ir.sample_frequency).sum()):,.0f}"
            f" units over the keys{pop} (sample f_k < k: {_pct(summary.exposure)})"
        )
    model = "Benedetti-Franconi, weights " + ir.weights if ir.weights else "no weights: r = 1/f_k"
    tbl = Table("individual risk", "value")
    tbl.add_row("[bold]expected re-identifications[/]", f"[bold]{ir.expected_reidentifications:,.3f}[/]")
    tbl.add_row("global risk (share of records)", _pct(ir.global_risk))
    tbl.add_row("highest individual risk", _pct(ir.max_risk))
    tbl.add_row("records with risk > 0.1", f"{ir.n_above(0.1):,}")
    tbl.caption = model
    stdout.print(tbl)
    if ld is not None:
        lt = Table("sensitive column", "distinct l", "entropy l", f"recursive ({ld.c:g}, l)",
                   "users not 2-diverse", "t-closeness")
        for s in ld.per_column:
            lt.add_row(s.column, f"{s.l}", f"{float(s.entropy_l.min()):.3g}", f"{int(s.recursive_l.min())}",
                       _pct(ld.not_diverse(2, column=s.column)), f"{s.t:.3g}" if s.t is not None else "–")
        stdout.print(lt)
    if sd is not None:
        st = Table("SUDA2", "value")
        st.add_row("records with an MSU", f"{sd.n_special:,}")
        st.add_row("MSUs by size", ", ".join(f"{i + 1}: {int(c):,}" for i, c in enumerate(sd.msu_counts.sum(axis=0))))
        st.add_row("highest DIS-SUDA score", f"{float(sd.dis_scores.max()):.4g}")
        st.add_row("mean DIS-SUDA score", f"{float(sd.dis_scores.mean()):.4g}")
        stdout.print(st)


def _read_marginals(path: Path) -> Any:
    # lazy: sdckit --help stays fast
    from sdckit.risk import Marginals

    if not path.exists():
        raise FileNotFoundInputError(str(path))
    try:
        payload = json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as err:
        raise UnreadableInputError(
            f"cannot read {str(path)!r} as JSON: {err}. Expected {{'column': {{'value': count, ...}}, ...}}."
        ) from None
    if isinstance(payload, dict) and isinstance(payload.get("counts"), dict):
        return Marginals.from_counts(payload["counts"], n=payload.get("n"))
    if not isinstance(payload, dict) or not all(isinstance(v, (dict, list)) for v in payload.values()):
        raise UnreadableInputError(
            f"{str(path)!r} is not a table of counts; expected {{'column': {{'value': count, ...}}, ...}}."
        )
    return Marginals.from_counts(payload)


def _with_pairs(
    marg: Any, source: Any, mode: str, *, k: int, budget: float, triples: bool, missing: str
) -> tuple[Any, dict[str, Any]]:
    """The marginals with pair (and triple) tables counted on the data: ``all`` pairs in full, or
    what a curator receives asking safely (:func:`sdckit.plan.received_marginals`)."""
    # lazy: sdckit --help stays fast
    from sdckit.plan import received_marginals
    from sdckit.risk import Marginals

    cols = list(marg.columns)
    policy = cast("MissingPolicy", missing)
    if mode == "all":
        blocks = list(itertools.combinations(cols, 2))
        return Marginals.from_data(source(), cols, missing=policy, blocks=blocks), {
            "mode": "all", "blocks": [list(b) for b in blocks], "query_bound": None
        }
    received, plan = received_marginals(
        source(), cols, k, budget, triples=triples, missing=policy, singles=marg
    )
    return received, {"mode": "auto", "blocks": [list(b) for b in plan.blocks], "query_bound": plan.bound}


def _parse_weights(value: str | None) -> dict[str, float] | None:
    if not value:
        return None
    out: dict[str, float] = {}
    for part in value.split(","):
        if not part.strip():
            continue
        malformed = typer.BadParameter(
            f"{part!r}: use name=number, e.g. --weights age=2,sex=1", param_hint="--weights"
        )
        name, sep, num = part.partition("=")
        name = name.strip()
        if not sep or not name:
            raise malformed
        if name in out:
            raise typer.BadParameter(f"column {name!r} is weighted twice; weigh each column once",
                                     param_hint="--weights")
        try:
            out[name] = float(num)
        except ValueError:
            raise malformed from None
    return out or None


def _guessed_quasi_identifiers(
    data: Path, sensitive: str | None, weight: str | None, identifiers: str | None, read: Any = None,
    categorical: str | None = None,
) -> list[str]:
    """No --columns: guessed quasi-identifiers only (never targets, weights or IDs); each guess is said on stderr.

    A ``--categorical`` column, and a labelled column of an SPSS/Stata/SAS file, is judged as a category."""
    # lazy: sdckit --help stays fast
    from sdckit._io import read_path
    from sdckit._io._survey import read_labels
    from sdckit.pipeline._roles import guess_roles

    labels = read_labels(data, labels=getattr(read, "labels", "labels"))
    roles = guess_roles(
        read_path(data, read),
        sensitive=parse_columns(sensitive) or (),
        weight=parse_columns(weight) or (),
        identifiers=parse_columns(identifiers) or (),
        categorical=[*(parse_columns(categorical) or ()), *(labels.labelled if labels is not None else ())],
    )
    if not roles.quasi_identifiers:
        raise typer.BadParameter("no column looks like a quasi-identifier; name them with --columns", param_hint="--columns")
    stderr.print(f"[yellow]Quasi-identifiers guessed[/] (no --columns): {', '.join(roles.quasi_identifiers)}", highlight=False)
    for flag in roles.flags:
        if flag.kind != "guessed":
            stderr.print(f"[yellow]{flag.kind}:[/] {escape(flag.message)}", highlight=False, soft_wrap=True)
    return list(roles.quasi_identifiers)


@handles_errors
@reads_data
def plan(
    data: Path | None = typer.Argument(
        None, help="A CSV, TSV, Parquet or JSON-lines file, .gz allowed (or use --from-marginals)."
    ),
    columns: str | None = typer.Option(
        None, "--columns", "-c", help="Candidate quasi-identifiers (default: guessed, never targets, weights or IDs)."
    ),
    sensitive: str | None = typer.Option(None, "--sensitive", help="Sensitive columns: never candidates."),
    weight: str | None = typer.Option(None, "--weight", help="Survey weight column(s): never candidates."),
    identifiers: str | None = typer.Option(None, "--identifiers", help="Identifier columns: never candidates."),
    categorical: str | None = typer.Option(
        None, "--categorical", help="Columns that are categories even when numbers (sex = 1/2), for the guess of candidates."
    ),
    k: int = typer.Option(5, "--k", "-k", callback=k_option, help="Group size every user should reach (>= 2)."),
    budget: float = typer.Option(
        0.05, "--budget", help="The largest share of users (0..1) allowed in groups smaller than k."
    ),
    from_marginals: Path | None = typer.Option(
        None,
        "--from-marginals",
        help="JSON of single-column counts {column: {value: count}} instead of DATA.",
    ),
    method: str = typer.Option(
        "best", "--method", callback=_method_option, help="best, theorem2, theorem3 or support."
    ),
    weights: str | None = typer.Option(
        None, "--weights", help="Value of each column, e.g. age=3,sex=1 (default 1)."
    ),
    missing: str = _MISSING,
    as_json: bool = typer.Option(False, "--json", help=JSON_HELP),
    report: Path | None = typer.Option(
        None, "--report", help="Also write an HTML report with the plan section."
    ),
    setting: str = typer.Option(
        "fixed",
        "--setting",
        callback=_setting_option,
        help="fixed: the counted users are released; statistical: the counts are a sample and a fresh "
        "sample of --n-release users is released.",
    ),
    n_release: int | None = typer.Option(
        None, "--n-release", help="Users in the fresh release (required with --setting statistical)."
    ),
    delta: float | None = typer.Option(
        None,
        "--delta",
        help="Statistical setting: probability (0..1) that the plan's bound fails (default 0.05).",
    ),
    read: Any = None,  # filled by @reads_data
    hierarchy: list[str] | None = typer.Option(
        None,
        "--hierarchy",
        help="COLUMN=SOURCE (ARX-style CSV or built-in adult:COLUMN), or 'adult' for all built-in Adult "
        "hierarchies: search recoding levels, not only keep/withhold (repeatable).",
    ),
    suppression: float | None = typer.Option(
        None,
        "--suppression",
        help="With DATA: share of records (0..1) local suppression may treat after recoding.",
    ),
    keep_all: bool = typer.Option(
        False, "--keep-all", help="Never withhold a column (or recode it to one value); needs --hierarchy."
    ),
    loss: str = typer.Option("entropy", "--loss", help="Recoding loss to minimise: entropy or precision."),
    out: Path | None = typer.Option(
        None, "--out", "-o", help="With DATA: write the planned release (recoded, suppressed) here."
    ),
    keep_order: bool = typer.Option(False, "--keep-order", help=KEEP_ORDER_HELP),
    pairs: str | None = typer.Option(
        None,
        "--pairs",
        help="With DATA: also bound with pair tables. auto: the pairs a curator may safely ask for at k "
        "(rare values redacted, what it learns within --pairs-budget); all: every pair's full table.",
    ),
    pairs_budget: float | None = typer.Option(
        None, "--pairs-budget", help="With --pairs auto: share of users (0..1) the asked tables may expose (default: --budget)."
    ),
    triples: bool = typer.Option(
        False, "--triples", help="With --pairs auto: then also triples, within what is left of --pairs-budget."
    ),
) -> None:
    """Choose the columns to release so at most --budget of users are in groups smaller than k.

    With --hierarchy the planner searches recoding levels per column (from the marginals, or with
    DATA on the counted table itself), and with --suppression it suppresses what recoding leaves.
    """
    # lazy: sdckit --help stays fast
    from sdckit.cli.anonymize import hierarchy_options
    from sdckit.plan import plan_release
    from sdckit.risk import Marginals

    if (data is None) == (from_marginals is None):
        raise typer.BadParameter("give DATA or --from-marginals (one of them)")
    if setting == "statistical" and n_release is None:
        raise typer.BadParameter(
            "--setting statistical plans for a fresh release: give its size with --n-release N",
            param_hint="--n-release",
        )
    if setting == "fixed" and (n_release is not None or delta is not None):  # else silently ignored
        raise typer.BadParameter(
            "--n-release and --delta are for --setting statistical; the fixed setting releases the counted "
            "users and its bound always holds",
            param_hint="--setting",
        )
    if loss not in ("entropy", "precision"):
        raise typer.BadParameter(f"{loss!r}: use entropy or precision", param_hint="--loss")
    hier = hierarchy_options(hierarchy)
    lattice = bool(hier) or suppression is not None or keep_all
    if pairs not in (None, "auto", "all"):
        raise typer.BadParameter(f"{pairs!r}: use auto (the safe pairs) or all (every pair)", param_hint="--pairs")
    if pairs is not None and data is None:
        raise typer.BadParameter("--pairs needs DATA (the pair tables are counted on it)", param_hint="--pairs")
    if (triples or pairs_budget is not None) and pairs != "auto":
        raise typer.BadParameter("--triples and --pairs-budget go with --pairs auto", param_hint="--triples")
    if pairs_budget is not None and not 0 <= pairs_budget <= 1:
        raise typer.BadParameter(f"{pairs_budget!r}: give a share of users between 0 and 1", param_hint="--pairs-budget")
    if setting == "statistical" and (suppression is not None or out is not None):
        raise typer.BadParameter(
            "with --setting statistical the plan is for a fresh sample, not for DATA: drop --suppression "
            "and --out, and recode the fresh release with `sdckit recode` using the plan's recodings",
            param_hint="--suppression/--out",
        )
    if (suppression is not None or out is not None) and data is None:
        raise typer.BadParameter("--suppression and --out need DATA (the joint records)", param_hint="--suppression")
    if keep_all and not hier:
        raise typer.BadParameter("--keep-all needs --hierarchy (else the only level is raw)", param_hint="--keep-all")
    check_command_outputs(files=[out], reports=[report], inputs=[data, from_marginals])
    cols = parse_columns(columns)
    if cols is None and data is not None:
        cols = _guessed_quasi_identifiers(data, sensitive, weight, identifiers, read, categorical)
    frame = None
    if from_marginals is not None:
        marg = _read_marginals(from_marginals)
        source = from_marginals.name
    else:
        assert data is not None
        if lattice:
            frame = read_table(data, read)[0]
            if missing == "drop":
                frame = frame.drop_nulls(cols)
        marg = Marginals.from_data(frame if frame is not None else data_source(data, read), cols, missing=cast("MissingPolicy", missing))
        source = data.name
    pair_info: dict[str, Any] | None = None
    if pairs is not None:
        assert data is not None
        marg, pair_info = _with_pairs(
            marg, lambda: frame if frame is not None else data_source(data, read), pairs, k=k,
            budget=budget if pairs_budget is None else pairs_budget, triples=triples, missing=missing,
        )
    if lattice and cols is None:
        cols = list(marg.columns)
    if lattice:
        hier = {c: h for c, h in hier.items() if c in (cols or marg.columns)}
    lattice_kw: dict[str, Any] = {}

    with progress("searching the recoding lattice", quiet=as_json or not lattice) as advance:
        if lattice:
            lattice_kw = {
                "hierarchies": hier,
                "data": frame if setting == "fixed" else None,  # the sample is not the release
                "suppression": suppression,
                "withhold": not keep_all,
                "loss": loss,
                "progress": lambda _: advance(),
            }
        result = plan_release(
            marg,
            k=k,
            budget=budget,
            weights=_parse_weights(weights),
            method=cast("BoundMethod", method),
            columns=cols,
            setting=cast("Setting", setting),
            n_release=n_release,
            delta=0.05 if delta is None else delta,
            **lattice_kw,
        )
    if out is not None:  # the planned release: the planned columns only (no ID, weight or other column rides along)
        # lazy: sdckit --help stays fast
        import polars as pl

        from sdckit._io import write_table

        if frame is None:
            assert data is not None
            frame = read_table(data, read)[0]
        released = result.apply(frame)
        write_table(shuffle_rows(released.select([c for c in result.columns if c in released.columns]),
                                 keep_order=keep_order)[0] if result.columns else pl.DataFrame(), out)
    if report is not None:
        # lazy: sdckit --help stays fast
        from sdckit.report._risk import plan_section

        _write_report(
            report,
            plan_section(result),
            {"data": source},
            {"k": k, "budget": budget, "method": method, "setting": setting}
            | ({"n_release": result.n_release, "delta": result.delta} if setting == "statistical" else {}),
        )
    if as_json:
        print_json(result.to_dict() | ({"pairs": pair_info} if pair_info is not None else {}))
        return
    shown = ", ".join(result.columns) if result.columns else "(no column)"
    stdout.print(f"[bold]{source}[/]: {result.n:,} users, k = {result.k}, budget {_pct(result.budget)}")
    if result.setting == "statistical":
        stdout.print(
            f"Statistical setting: the counts are a sample; the bound is on the expected share of a fresh "
            f"release of {result.n_release:,} users and holds with probability >= {1 - (result.delta or 0):.4g}"
        )
    if pair_info is not None:
        asked = ", ".join(" x ".join(b) for b in pair_info["blocks"]) or "none"
        stdout.print(
            f"Bounded with {len(pair_info['blocks'])} {pair_info['mode']} block table(s): {asked}"
            + (
                f"; what a curator learns from them is bounded by {_pct(pair_info['query_bound'])}"
                if pair_info.get("query_bound") is not None
                else ""
            ),
            highlight=False,
            soft_wrap=True,
        )
    stdout.print(
        f"Release: [bold green]{shown}[/]  (bound {_pct(result.bound)}, {result.method}, {result.search} search)"
    )
    if result.search == "lattice":
        lv = Table("column", "level", title=f"recoding ({result.n_evaluated:,} of {result.n_nodes:,} nodes evaluated)")
        for c, level in result.levels.items():
            lv.add_row(c, str(level) + ("" if c in result.columns else " (withheld)"))
        stdout.print(lv)
        stdout.print(
            f"loss {result.loss:.4g} ({result.loss_measure} + share of cells suppressed); "
            f"{result.n_suppressed:,} cells suppressed"
            + (
                f"; exposure of the release (missing matches any value) {_pct(result.exposure)}"
                if result.exposure is not None
                else ""
            )
        )
        if result.loss_bound is not None and result.loss_gap is not None:
            stdout.print(
                f"certified: no release of the {result.n_certified} best acceptable recodings loses less than "
                f"{result.loss_bound:.4g}; this proposal is within {100 * result.loss_gap:.1f} % of it "
                f"(at least {result.suppression_bound:,} cells needed at the chosen recoding)"
            )
    if out is not None:
        stdout.print(f"release written to {out}: the {len(result.columns)} planned column(s) only; {order_note(keep_order)}")
    if result.excluded:
        tbl = Table("excluded column", "why")
        for c, why in result.excluded.items():
            tbl.add_row(c, why)
        stdout.print(tbl)
