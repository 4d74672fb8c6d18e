"""``sdckit report``: the HTML report (the main job)."""

from __future__ import annotations

from pathlib import Path

import typer

from sdckit.cli._common import handles_errors, progress, stdout


def register(app: typer.Typer) -> None:
    app.command("report")(report)


@handles_errors
def report(
    data: Path | None = typer.Argument(None, help="A CSV, Parquet or JSON-lines file (default: the bundled Adult data)."),
    output: Path = typer.Option(Path("report.html"), "--output", "-o", help="Where to write the HTML page."),
    seed: int = typer.Option(20261130, "--seed", help="Seed of every random step (recorded in the report)."),
) -> None:
    """Write a self-contained HTML report (and a JSON sidecar beside it)."""
    from sdckit.report._main import build_report

    with progress("Building the report") as advance:
        rep = build_report(None if data is None else str(data), seed=seed, advance=advance)
        html_path, json_path = rep.write(output)
    stdout.print(f"Report written to [bold]{html_path.resolve()}[/] (figures in {json_path.name})")
