"""``sdckit datasets``: the data sets bundled with sdckit, listed or exported to a file."""

from __future__ import annotations

from pathlib import Path

import typer

from sdckit.cli._common import JSON_HELP, handles_errors, print_json, stdout

datasets_app = typer.Typer(
    name="datasets",
    help="The bundled data sets: list them, export one to a file (to try the other commands on).",
    no_args_is_help=True,
)

# name -> (split of load_adult, description)
_DATASETS = {
    "adult": ("train", "UCI Adult (Census Income 1994), training split: 32,561 rows, 15 columns; CC BY 4.0."),
    "adult-test": ("test", "UCI Adult, test split: 16,281 rows, 15 columns; CC BY 4.0."),
}


def register(app: typer.Typer) -> None:
    """Add the ``datasets`` group."""
    app.add_typer(datasets_app, name="datasets")


@datasets_app.command("list")
@handles_errors
def list_cmd(as_json: bool = typer.Option(False, "--json", help=JSON_HELP)) -> None:
    """The bundled data sets and what they hold."""
    if as_json:
        print_json({name: about for name, (_, about) in _DATASETS.items()})
        return
    for name, (_, about) in _DATASETS.items():
        stdout.print(f"[bold]{name}[/]: {about}", highlight=False)


@datasets_app.command("export")
@handles_errors
def export(
    name: str = typer.Argument(..., help="adult or adult-test."),
    out: Path = typer.Argument(..., help="The file to write: .csv, .csv.gz, .tsv, .parquet or .jsonl."),
    force: bool = typer.Option(False, "--force", help="Replace an existing file."),
    as_json: bool = typer.Option(False, "--json", help=JSON_HELP),
) -> None:
    """Write a bundled data set to a file, e.g. ``sdckit datasets export adult adult.csv``."""
    # lazy: sdckit --help stays fast
    from sdckit._io import check_output_path, write_table
    from sdckit.datasets import load_adult

    if name not in _DATASETS:
        raise typer.BadParameter(f"{name!r}; use one of {', '.join(_DATASETS)}", param_hint="NAME")
    check_output_path(out)
    if out.exists() and not force:  # an export of bundled data is the same each time: keep the file
        if as_json:
            print_json({"dataset": name, "out": str(out), "written": False})
        else:
            stdout.print(f"{out} exists already: kept (add --force to write it again)")
        return
    frame = load_adult(_DATASETS[name][0])  # type: ignore[arg-type]
    write_table(frame, out)
    if as_json:
        print_json({"dataset": name, "out": str(out), "written": True, "n_rows": frame.height,
                    "columns": frame.columns})
        return
    stdout.print(f"{name}: {frame.height:,} rows, {frame.width} columns written to {out}")
