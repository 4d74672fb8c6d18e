"""``sdckit risk`` and ``sdckit plan``: measure re-identification risk, plan a release."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any, cast

import typer
from rich.table import Table

from sdckit._io import MissingPolicy, writing
from sdckit.cli._common import (
    JSON_HELP,
    check_plot_path,
    handles_errors,
    parse_columns,
    print_json,
    stderr,
    stdout,
)
from sdckit.cli._common import (
    PLOT_SUFFIXES as PLOT_SUFFIXES,  # kept importable from here
)
from sdckit.errors import FileNotFoundInputError, UnreadableInputError
from sdckit.risk._checks import BoundMethod
from sdckit.risk._planner import Setting


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
    from sdckit.report import Report

    rep = Report("sdckit risk report", inputs=inputs, parameters=parameters)
    rep.add(section)
    html_path, _ = rep.write(path)
    stderr.print(f"Report written to [bold]{html_path.resolve()}[/]")  # stdout stays clean for --json


@handles_errors
def risk(
    data: Path = typer.Argument(..., help="A CSV, TSV, Parquet or JSON-lines file (.gz allowed)."),
    columns: str = typer.Option(
        ..., "--columns", "-c", help="Comma-separated quasi-identifiers, e.g. age,sex,zip."
    ),
    k: int | None = typer.Option(None, "--k", "-k", help="Group size (default 5 unless --t is given)."),
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
) -> None:
    """k-anonymity, uniques, exposure, the bounds from marginals beside the truth, entropy, supports."""
    from sdckit.risk import risk_summary

    if k is not None and t is not None:
        raise typer.BadParameter("give --k or --t, not both")
    if budget is not None and report is None:  # else it would be silently ignored
        raise typer.BadParameter("--budget only sets the plan in --report; add --report FILE, or use sdckit plan")
    budget = 0.05 if budget is None else budget
    cols = parse_columns(columns)
    if plot is not None:  # checked before the work, not after
        check_plot_path(plot, inputs=[data])
    summary = risk_summary(str(data), cols or [], k=k, t=t, missing=cast(MissingPolicy, missing))
    if plot is not None:
        from sdckit.report._risk import exposure_figure

        fig = exposure_figure(summary)
        with writing(plot):
            fig.savefig(plot, bbox_inches="tight")
    if report is not None:
        from sdckit.report._risk import risk_section

        section = risk_section(
            str(data),
            cols or [],
            k=summary.max_exposed_size + 1,
            budget=budget,
            missing=cast(MissingPolicy, missing),
        )
        _write_report(
            report, section, {"data": data.name}, {"k": summary.max_exposed_size + 1, "budget": budget}
        )
    if as_json:
        print_json(summary)
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
    if plot is not None:
        stdout.print(f"Plot written to [bold]{plot}[/]")


def _read_marginals(path: Path) -> Any:
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


@handles_errors
def plan(
    data: Path | None = typer.Argument(
        None, help="A CSV, TSV, Parquet or JSON-lines file, .gz allowed (or use --from-marginals)."
    ),
    columns: str | None = typer.Option(None, "--columns", "-c", help="Candidate columns (default: all)."),
    k: int = typer.Option(5, "--k", "-k", help="Group size every user should reach."),
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
) -> None:
    """Choose the columns to release so at most --budget of users are in groups smaller than k."""
    from sdckit.risk import Marginals, plan_release

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
    cols = parse_columns(columns)
    if from_marginals is not None:
        marg = _read_marginals(from_marginals)
        source = from_marginals.name
    else:
        assert data is not None
        marg = Marginals.from_data(str(data), cols, missing=cast(MissingPolicy, missing))
        source = data.name
    result = plan_release(
        marg,
        k=k,
        budget=budget,
        weights=_parse_weights(weights),
        method=cast(BoundMethod, method),
        columns=cols,
        setting=cast(Setting, setting),
        n_release=n_release,
        delta=0.05 if delta is None else delta,
    )
    if report is not None:
        from sdckit.report._risk import plan_section

        _write_report(
            report,
            plan_section(result),
            {"data": source},
            {"k": k, "budget": budget, "method": method, "setting": setting}
            | ({"n_release": result.n_release, "delta": result.delta} if setting == "statistical" else {}),
        )
    if as_json:
        print_json(result)
        return
    shown = ", ".join(result.columns) if result.columns else "(no column)"
    stdout.print(f"[bold]{source}[/]: {result.n:,} users, k = {result.k}, budget {_pct(result.budget)}")
    if result.setting == "statistical":
        stdout.print(
            f"Statistical setting: the counts are a sample; the bound is on the expected share of a fresh "
            f"release of {result.n_release:,} users and holds with probability >= {1 - (result.delta or 0):.4g}"
        )
    stdout.print(
        f"Release: [bold green]{shown}[/]  (bound {_pct(result.bound)}, {result.method}, {result.search} search)"
    )
    if result.excluded:
        tbl = Table("excluded column", "why")
        for c, why in result.excluded.items():
            tbl.add_row(c, why)
        stdout.print(tbl)
