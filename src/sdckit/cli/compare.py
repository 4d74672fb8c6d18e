"""``sdckit compare``: candidate releases of one input on one measured risk-utility map."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.markup import escape
from rich.table import Table

from sdckit.cli._common import JSON_HELP, handles_errors, print_json, progress, stdout


def register(app: typer.Typer) -> None:
    app.command("compare")(compare)


def _fmt(value: float | None) -> str:
    return "–" if value is None else f"{value:.3g}"


@handles_errors
def compare(
    pipeline: Path = typer.Argument(..., help="A pipeline file with a `compare:` section (see docs/compare.md)."),
    repeat: int | None = typer.Option(None, "--repeat", min=1, help="Draws per candidate (default: the file's, else 3)."),
    as_json: bool = typer.Option(False, "--json", help=JSON_HELP),
    seed: int | None = typer.Option(
        None, "--seed", min=0,
        help="Draw every candidate from this seed (tests, reproductions). Default: fresh OS entropy.",
    ),
) -> None:
    """Run every candidate release of one input, write each, measure every written file the same way.

    Prints one line per candidate (its risk and utility figures, epsilon when differentially
    private, within budget or not, on the frontier or not) and writes the HTML report with the
    risk-utility map.
    """
    # lazy: sdckit --help stays fast
    from sdckit.compare import build_compare_report, load_compare, planned_outputs, run_compare, summary_rows

    spec = load_compare(pipeline)
    if repeat is not None:
        spec = type(spec)(**{**spec.__dict__, "repeat": repeat})
    total = len(planned_outputs(spec))
    with progress(f"Comparing {len(spec.candidates)} candidates", total=total, quiet=as_json, lines_when_piped=True) as advance:
        result = run_compare(spec, advance=advance, seed=seed)
    report_paths = build_compare_report(result).write(spec.report) if spec.report else None
    rows = summary_rows(result)
    if as_json:
        print_json({"candidates": rows, "frontier": result.frontier, "seconds": result.seconds,
                    "report": None if report_paths is None else str(report_paths[0].resolve())})
        return
    wanted = [spec.risk_axis, spec.utility_axis, "exposure_at_k", "singling_out", "household_risk", "linkage", "ci_overlap"]
    # a figure that applies to no candidate (no household, no regression) takes no column
    shown = [f for f in dict.fromkeys(wanted) if any(f in r and r[f]["mean"] is not None for r in rows)]
    table = Table("#", "candidate", *shown, "eps", "budget", "front", title=(
        f"{len(rows)} candidates, {sum(r['draws'] for r in rows)} written releases, {result.seconds:.0f} s "
        "(means over the draws; every figure and its range in the report and with --json)"))
    for i, r in enumerate(rows, 1):
        table.add_row(
            str(i), escape(r["candidate"]), *[_fmt(r[f]["mean"]) for f in shown],
            "–" if r["epsilon"] is None else f"{r['epsilon']:.3g}",
            "[green]within[/]" if r["within_budget"] else "[red]over[/]", "*" if r["frontier"] else "",
        )
    stdout.print(table)
    if report_paths is not None:
        stdout.print(f"report: [bold]{report_paths[0].resolve()}[/]")
