"""``sdckit report`` (the main job) and ``sdckit run`` (a declarative release pipeline)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer
from rich.markup import escape
from rich.table import Table

from sdckit.cli._common import (
    JSON_HELP,
    ExitCode,
    handles_errors,
    k_option,
    parse_columns,
    print_json,
    progress,
    reads_data,
    stderr,
    stdout,
)

# one tick per stage of run_pipeline/build_report: read, plan, steps..., measure, 3 sections, 3 experiments
_STAGES = 9
_MAX_FLAGS = 10
"""Role flags printed on the terminal; the report lists them all."""


def register(app: typer.Typer) -> None:
    app.command("report")(report)
    app.command("run")(run)


@handles_errors
@reads_data
def report(
    data: Path | None = typer.Argument(
        None, help="A CSV, Parquet or JSON-lines file (default: the bundled UCI Adult data)."
    ),
    config: Path | None = typer.Option(None, "--config", help="A pipeline file (YAML/JSON) with columns, k, budget, steps."),
    output: Path = typer.Option(Path("report.html"), "--out", "--output", "-o", help="Where to write the HTML page (the JSON sidecar goes beside it)."),
    quasi_identifiers: str | None = typer.Option(None, "--quasi-identifiers", "-q", help="Comma-separated columns an attacker may know (default: guessed, and said so)."),
    numeric: str | None = typer.Option(None, "--numeric", help="Comma-separated numeric columns to mask."),
    sensitive: str | None = typer.Option(None, "--sensitive", help="Comma-separated sensitive columns (never quasi-identifiers; l-diversity)."),
    weight: str | None = typer.Option(None, "--weight", help="Survey weight column(s) (never quasi-identifiers)."),
    identifiers: str | None = typer.Option(None, "--identifiers", help="Comma-separated identifier columns (never released)."),
    keep: str | None = typer.Option(None, "--keep", help="Comma-separated columns released as they are (not quasi-identifiers)."),
    categorical: str | None = typer.Option(None, "--categorical", help="Comma-separated columns that are categories even when numbers (sex = 1/2): never averaged (labelled SPSS/Stata columns are categorical already)."),
    k: int | None = typer.Option(None, "--k", callback=k_option, help="Group size of k-anonymity, >= 2 (default 5)."),
    budget: float | None = typer.Option(None, "--budget", min=0.0, max=1.0, help="The largest share of users (0..1) allowed in groups smaller than k, for the plan (default 0.05)."),
    seed: int | None = typer.Option(None, "--seed", min=0, help="Make every random step reproducible from this seed (recorded; the report marks it not for "
                                   "publication). Default: fresh OS entropy."),
    simulate_protocol: int | None = typer.Option(
        None, "--simulate-protocol", min=0, metavar="USERS",
        help="Also run this many users through the shuffle protocol on loopback and report it.",
    ),
    as_json: bool = typer.Option(False, "--json", help=JSON_HELP),
    read: Any = None,  # filled by @reads_data
) -> None:
    """Write the self-contained HTML report: the release measured beside the input, risk, plan, masking, summary.

    With a pipeline file, its steps run in memory (nothing but the report is written) and the report
    measures their release, with the experiments the file lists; without one, the release is the
    input's role columns as they are and the experiments on the input (curator plan,
    microaggregation, private PCA) all run. Piped, one progress line per stage goes to stderr.
    """
    # lazy: sdckit --help stays fast
    from sdckit.pipeline import PipelineConfig, load_config, run_pipeline
    from sdckit.pipeline._config import EXPERIMENTS
    from sdckit.report._main import build_report

    cfg = load_config(config) if config is not None else PipelineConfig()
    overrides: dict[str, object] = {}
    if config is None:  # messages name where a setting came from: here the options, not "<dict>"
        overrides["source"] = "the command line"
        overrides["experiments"] = EXPERIMENTS  # without a pipeline the report is about the input: all of it
        overrides["name"] = f"Report on the input: {data.name if data is not None else 'UCI Adult'} (no masking)"
    if data is not None:
        overrides["input"] = str(data)
    # lazy: sdckit --help stays fast
    from sdckit._io import ReadOptions

    if read is not None and read != ReadOptions():  # the options given override the file's read section
        overrides["read"] = {"separator": read.separator, "encoding": read.encoding, "decimal": read.decimal,
                             "na_values": read.na_values, "labels": read.labels}
    for key, text in (("quasi_identifiers", quasi_identifiers), ("numeric", numeric), ("sensitive", sensitive),
                      ("weight", weight), ("identifiers", identifiers), ("keep", keep), ("categorical", categorical)):
        if text is not None:
            overrides[key] = tuple(parse_columns(text) or ()) or None
    for key, value in (("k", k), ("budget", budget), ("seed", seed), ("simulate_protocol", simulate_protocol)):
        if value is not None:
            overrides[key] = value
    if seed is not None:
        overrides["reproducible"] = True
    cfg = cfg.replace(**overrides)
    # lazy: sdckit --help stays fast
    from sdckit.cli._common import check_command_outputs

    check_command_outputs(reports=[output], inputs=[data, config, cfg.input if not cfg.uses_adult else None])
    with progress("Building the report", total=_STAGES + len(cfg.steps), quiet=as_json,
                  lines_when_piped=True) as advance:
        result = run_pipeline(cfg, advance=advance)
        html_path, json_path = build_report(result, advance=advance).write(output)
    measure = result.release_measure
    if as_json:
        print_json({"report": str(html_path.resolve()), "sidecar": str(json_path.resolve()), "plan": result.plan.to_dict(),
                    "release": measure.to_dict() if measure is not None else None,
                    "roles": result.roles.to_dict() if result.roles is not None else None})
    else:
        _print_roles(result)
        if measure is not None:
            _print_verdict(result)
        stdout.print(f"Report written to [bold]{html_path.resolve()}[/]")
        stdout.print(f"Every figure is also in {json_path.resolve()}")
    if config is not None and result.refused:  # the pipeline's release would be refused by `sdckit run`
        if not as_json:
            stderr.print("[bold red]Refused:[/] the pipeline's release is over its budget (see the report).")
        raise typer.Exit(ExitCode.REFUSED)


def _print_roles(result: object) -> None:
    # lazy: sdckit --help stays fast
    from sdckit.pipeline import PipelineResult

    assert isinstance(result, PipelineResult)
    roles = result.roles
    if roles is None:
        return
    if roles.guessed:
        stdout.print(f"[yellow]Quasi-identifiers guessed[/] (no roles given; name them with -q): {', '.join(roles.quasi_identifiers)}")
    flags = [flag for flag in roles.flags if flag.kind != "guessed"]
    for flag in flags[:_MAX_FLAGS]:
        stdout.print(f"[yellow]{flag.kind}:[/] {escape(flag.message)}", highlight=False)
    if len(flags) > _MAX_FLAGS:  # a wide file: the rest are in the report's roles table
        stdout.print(f"[yellow]... and {len(flags) - _MAX_FLAGS:,} more flags[/] (every one is in the report)")
    if result.not_released:
        stdout.print(escape("Not released: " + ", ".join(f"{c} ({why})" for c, why in result.not_released.items())))


def _print_verdict(result: object) -> None:
    # lazy: sdckit --help stays fast
    from sdckit.pipeline import PipelineResult
    from sdckit.report._release_check import verdict

    assert isinstance(result, PipelineResult)
    measure = result.release_measure
    assert measure is not None
    text = verdict(measure, result.config.allow_over_budget)
    if result.config.reproducible:
        stdout.print("[bold yellow]Reproducible run (seed given): not for publication[/] (whoever learns the seed can "
                     "undo the random steps).")
    if not result.config.shuffle_rows:
        stdout.print("[yellow]Rows in the input's order (shuffle_rows: false):[/] they link to the input by position.")
    _print_attacker(result)
    if result.posterior is not None:
        # lazy: sdckit --help stays fast
        from sdckit.report._release_check import posterior_text

        colour = "green" if result.posterior_within_budget else "bold red"
        text_p = posterior_text(result.posterior, result.config.budget, measure.exposure_at_k, result.posterior_pass)
        stdout.print(f"[{colour}]{escape(text_p)}[/]", highlight=False)
    if result.within_budget:  # the attacks showing risk without a budget: a warning, not a refusal
        colour = "bold yellow" if measure.attacks_show_risk else "green"
        stdout.print(f"[{colour}]{escape(text)}[/]", highlight=False)
        return
    if measure.within_budget:  # over budget by the posterior only
        stdout.print("[bold red]NOT SAFE TO RELEASE: the released columns beside the keys single people out (above).[/]")
        if not result.config.posterior_pass:
            stdout.print("  [red]fix:[/] add 'posterior_pass: true' to the pipeline (it suppresses the key cells the "
                         "other columns give away), or mask those columns (microaggregate, recode, or drop them)")
        return
    stdout.print(f"[bold red]{escape(text)}[/]", highlight=False)
    for fix in measure.fixes:
        stdout.print(f"  [red]fix:[/] {fix}")


def _print_attacker(result: Any) -> None:
    """Which columns the guarantee assumes the attacker knows, the linked columns, a wider attacker."""
    # lazy: sdckit --help stays fast
    from sdckit.report._release_check import assumed_attacker

    stdout.print(escape(assumed_attacker(result.release_measure, result.linked)), highlight=False)
    if result.linked is not None and result.linked.columns:
        stdout.print(f"[yellow]{escape(result.linked.describe())}[/]", highlight=False)
    for s in result.scenarios[1:]:
        consistent = "" if s.consistent_below_k is None else (
            f"; {100 * s.consistent_below_k:.3g} % of users with fewer than {s.k} consistent rows "
            f"({s.consistent_n_one:,} with one)")
        stdout.print(escape(
            f"Wider attacker (keys + {', '.join(s.extra)}): {100 * s.exposure_at_k:.3g} % of rows in groups of fewer "
            f"than {s.k} identical rows{consistent} (not under the budget)."), highlight=False)


@handles_errors
def run(
    pipeline: Path = typer.Argument(..., help="The pipeline file (YAML or JSON); see examples/pipelines/."),
    as_json: bool = typer.Option(False, "--json", help=JSON_HELP),
    seed: int | None = typer.Option(
        None, "--seed", min=0,
        help="Make every random step reproducible from this seed (tests, reproductions): the report marks the "
             "release not for publication. Default: fresh OS entropy, no seed recorded.",
    ),
) -> None:
    """Run a release pipeline: mask, measure the release as written, write it and the report.

    Over budget (the release's exposure at k above the budget), it writes the report, marked not
    safe with what would fix it, writes no data file, and exits 3 (refused), unless the pipeline sets
    ``allow_over_budget: true`` (then the file is written and the summary says so in red).
    """
    # lazy: sdckit --help stays fast
    from sdckit.pipeline import check_pipeline_outputs, load_config, run_pipeline, write_outputs
    from sdckit.report._main import build_report

    cfg = load_config(pipeline)
    if seed is not None:
        cfg = cfg.replace(seed=seed, reproducible=True)
    check_pipeline_outputs(cfg, [pipeline])  # before any work: no output over an input, every output writable
    if cfg.engine != "polars":
        _run_distributed(cfg, as_json)
        return
    with progress(f"Running {pipeline.name}", total=_STAGES + len(cfg.steps), quiet=as_json,
                  lines_when_piped=True) as advance:
        result = run_pipeline(cfg, advance=advance)
        # write_outputs measures the data file again before it writes this report (nothing when they differ)
        report = build_report(result, advance=advance, verified_on=result.data_output) if cfg.output_report else None
        written = write_outputs(result, report=report, inputs=[pipeline])
    measure = result.release_measure
    payload = {
        "within_budget": result.within_budget,
        "refused": result.refused,
        "release": measure.to_dict() if measure is not None else None,
        # why a release within budget on its keys is refused: what the other released columns give away
        "posterior": result.posterior.to_dict() if result.posterior is not None else None,
        "posterior_within_budget": result.posterior_within_budget,
        "posterior_pass": result.posterior_pass,
        "plan": result.plan.to_dict(),
        "steps": [s.to_dict() for s in result.steps],
        "rows": result.protected.height,
        "columns": result.protected.columns,
        "not_released": result.not_released,
        "outputs": {k: str(v.resolve()) for k, v in written.items()},
        "labels": result.labels.to_dict() if result.labels is not None and result.labels.file_format else None,
    }
    if as_json:
        print_json(payload)
        if result.refused:
            raise typer.Exit(ExitCode.REFUSED)
        return
    stdout.print(f"[bold]{cfg.name}[/]")
    table = Table("step", "kind", "effect")
    for i, step in enumerate(result.steps, 1):
        table.add_row(str(i), step.kind, step.description)
    if result.steps:
        stdout.print(table)
    _print_roles(result)
    for warning in measure.warnings if measure is not None else ():
        stdout.print(f"[yellow]warning:[/] {escape(warning)}", highlight=False)
    _print_verdict(result)
    for kind, path in written.items():
        if kind != "set_aside":
            stdout.print(f"{kind}: [bold]{path.resolve()}[/]")
    if "set_aside" in written:
        stderr.print(f"[yellow]The data file of an earlier run at {cfg.output_data} was renamed {written['set_aside'].name}[/] "
                     "(it is not this release).", highlight=False)
    if result.refused:
        over = ", ".join(measure.attacks_over_budget) if measure is not None else ""
        stderr.print("[bold red]Refused:[/] the release is over its budget"
                     + (f" (attacks over their budget: {over})" if over else "")
                     + "; no data file was written (see the report).")
        raise typer.Exit(ExitCode.REFUSED)


def _run_distributed(cfg: Any, as_json: bool) -> None:
    """``engine: dask`` or ``spark``: the steps where the rows live, the release written as Parquet part files."""
    # lazy: sdckit --help stays fast
    from sdckit.pipeline import run_distributed, write_distributed

    with progress(f"Running {cfg.name} on {cfg.engine}", total=2, quiet=as_json, lines_when_piped=True) as advance:
        advance(0, description="the steps where the rows live (local suppression: counted passes)")
        result = run_distributed(cfg)
        advance(description="the workers write the part files; then they are read back and measured")
        written = write_distributed(result)
        advance(description="written and measured")
    payload = {
        "engine": result.engine,
        "within_budget": written.within_budget,
        "refused": written.refused,
        "release": written.measure,
        "steps": [s.to_dict() for s in result.steps],
        "outputs": {"data": str(written.path.resolve())} if written.path else {},
        "parts": len(written.files),
        "linked": result.linked.to_dict() if result.linked is not None else None,
        "not_measured": list(result.not_measured),
    }
    if as_json:
        print_json(payload)
    else:
        stdout.print(f"[bold]{escape(cfg.name)}[/] ({result.engine})")
        if result.linked is not None and result.linked.columns:
            stdout.print(f"[yellow]{escape(result.linked.describe())}[/]")
        for i, step in enumerate(result.steps, 1):
            stdout.print(f"  {i}. {step.kind}: {escape(step.description)}")
        m = written.measure
        stdout.print(
            f"Release as written: {m['n_rows']:,} rows in {m['n_groups']:,} groups, k-anonymity {m['k_anonymity']}, "
            f"exposure at k = {m['k']}: {m['exposure_at_k']:.2%} (budget {m['budget']:.2%})"
        )
        if result.not_measured:
            stdout.print(
                "[yellow]Not measured on this engine[/] (engine: polars measures them): "
                + escape("; ".join(result.not_measured))
                + ". The figures above are for the quasi-identifiers alone."
            )
        if written.path is not None:
            stdout.print(f"data: [bold]{written.path.resolve()}[/] ({len(written.files)} Parquet part files)")
        if written.set_aside is not None:
            stderr.print(f"[yellow]The release of an earlier run at {cfg.output_data} was renamed {written.set_aside.name}[/]")
    if written.refused:
        if not as_json:
            stderr.print("[bold red]Refused:[/] the release is over its budget; no data was written.")
        raise typer.Exit(ExitCode.REFUSED)
