"""``sdckit describe``: the data at a glance."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer
from rich.table import Table

from sdckit.cli._common import (
    DATA_HELP,
    JSON_HELP,
    data_source,
    handles_errors,
    parse_columns,
    print_json,
    reads_data,
    stdout,
)


def register(app: typer.Typer) -> None:
    app.command("describe")(describe)


@handles_errors
@reads_data
def describe(
    data: Path = typer.Argument(..., help=DATA_HELP),
    columns: str | None = typer.Option(None, "--columns", "-c", help="Comma-separated columns (default: all)."),
    as_json: bool = typer.Option(False, "--json", help=JSON_HELP),
    read: Any = None,  # filled by @reads_data
) -> None:
    """Rows, columns, types, number of distinct values and missing values per column."""
    # lazy: sdckit --help stays fast
    from sdckit.report._overview import describe_data

    summary = describe_data(data_source(data, read), parse_columns(columns))
    summary["source"] = data.name
    if as_json:
        print_json(summary)
        return
    n_rows, n_cols = summary["n_rows"], summary["n_columns"]
    stdout.print(
        f"[bold]{summary['source']}[/]: {n_rows:,} row{'' if n_rows == 1 else 's'}, "
        f"{n_cols} column{'' if n_cols == 1 else 's'}"
    )
    table = Table("column", "type", "distinct", "missing", "example")
    for col in summary["columns"]:
        table.add_row(col["name"], col["dtype"], f"{col['n_distinct']:,}", f"{col['n_missing']:,}", str(col["example"]))
    stdout.print(table)
