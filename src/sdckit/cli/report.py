"""``sdckit report`` (the main job) and ``sdckit run`` (a declarative release pipeline)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import typer
from rich.table import Table

from sdckit.cli._common import JSON_HELP, handles_errors, parse_columns, print_json, progress, stdout

# one tick per stage of run_pipeline/assemble_report: plan, steps..., 6 sections
_STAGES = 8


def register(app: typer.Typer) -> None:
    app.command("report")(report)
    app.command("run")(run)


@handles_errors
def report(
    data: Path | None = typer.Argument(
        None, help="A CSV, Parquet or JSON-lines file (default: the bundled UCI Adult data)."
    ),
    config: Path | None = typer.Option(None, "--config", "-c", help="A pipeline file (YAML/JSON) with columns, k, budget, steps."),
    output: Path = typer.Option(Path("report.html"), "--output", "-o", help="Where to write the HTML page (the JSON sidecar goes beside it)."),
    quasi_identifiers: str | None = typer.Option(None, "--quasi-identifiers", "-q", help="Comma-separated columns an attacker may know."),
    numeric: str | None = typer.Option(None, "--numeric", help="Comma-separated numeric columns to mask."),
    k: int | None = typer.Option(None, "--k", min=1, help="Group size of k-anonymity (default 5)."),
    budget: float | None = typer.Option(None, "--budget", min=0.0, max=1.0, help="The largest share of users (0..1) allowed in groups smaller than k, for the plan (default 0.05)."),
    seed: int | None = typer.Option(None, "--seed", min=0, help="Seed of every random step (recorded in the report; default 20261130)."),
    simulate_protocol: int | None = typer.Option(
        None, "--simulate-protocol", min=0, metavar="USERS",
        help="Also run this many users through the shuffle protocol on loopback and report it.",
    ),
    as_json: bool = typer.Option(False, "--json", help=JSON_HELP),
) -> None:
    """Write the self-contained HTML report: risk, release plan, microaggregation, private PCA, summary."""
    from sdckit.pipeline import PipelineConfig, load_config, run_pipeline

    cfg = load_config(config) if config is not None else PipelineConfig()
    overrides: dict[str, object] = {}
    if data is not None:
        overrides["input"] = str(data)
    if quasi_identifiers is not None:
        overrides["quasi_identifiers"] = tuple(parse_columns(quasi_identifiers) or ())
    if numeric is not None:
        overrides["numeric"] = tuple(parse_columns(numeric) or ())
    for key, value in (("k", k), ("budget", budget), ("seed", seed), ("simulate_protocol", simulate_protocol)):
        if value is not None:
            overrides[key] = value
    cfg = replace(cfg, **overrides)  # type: ignore[arg-type]
    with progress("Building the report", total=_STAGES + len(cfg.steps), quiet=as_json) as advance:
        result = run_pipeline(cfg, advance=advance)
        html_path, json_path = result.report.write(output)
    if as_json:
        print_json({"report": str(html_path.resolve()), "sidecar": str(json_path.resolve()), "plan": result.plan.to_dict()})
        return
    stdout.print(f"Report written to [bold]{html_path.resolve()}[/]")
    stdout.print(f"Every figure is also in {json_path.resolve()}")


@handles_errors
def run(
    pipeline: Path = typer.Argument(..., help="The pipeline file (YAML or JSON); see examples/pipelines/."),
    as_json: bool = typer.Option(False, "--json", help=JSON_HELP),
) -> None:
    """Run a release pipeline: measure, plan, mask, then write the protected data and the report."""
    from sdckit.pipeline import load_config, run_pipeline, write_outputs

    cfg = load_config(pipeline)
    with progress(f"Running {pipeline.name}", total=_STAGES + len(cfg.steps), quiet=as_json) as advance:
        result = run_pipeline(cfg, advance=advance)
        written = write_outputs(result)
    payload = {
        "plan": result.plan.to_dict(),
        "steps": [s.to_dict() for s in result.steps],
        "rows": result.protected.height,
        "columns": result.protected.columns,
        "outputs": {k: str(v.resolve()) for k, v in written.items()},
    }
    if as_json:
        print_json(payload)
        return
    stdout.print(
        f"[bold]{cfg.name}[/]: release {', '.join(result.plan.columns) or 'no quasi-identifier'} "
        f"(bound {result.plan.bound:.3%} of users in groups < {result.plan.k}; budget {result.plan.budget:.1%})"
    )
    table = Table("step", "kind", "effect")
    for i, step in enumerate(result.steps, 1):
        table.add_row(str(i), step.kind, step.description)
    if result.steps:
        stdout.print(table)
    for kind, path in written.items():
        stdout.print(f"{kind}: [bold]{path.resolve()}[/]")
