"""``sdckit microaggregate``: microaggregation, moment restoration, positivity, and the utility table."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.table import Table

from sdckit._io import write_table
from sdckit.cli._common import JSON_HELP, handles_errors, parse_columns, print_json, progress, stdout

_METHODS = ("mdav", "mdav_blocked", "vmdav", "rank", "pca", "single")
_POSITIVITY = ("same", "subset", "global")


def register(app: typer.Typer) -> None:
    """Add ``microaggregate`` to the root app."""
    app.command("microaggregate")(microaggregate)


@handles_errors
def microaggregate(
    data: Path = typer.Argument(..., help="A CSV, Parquet or JSON-lines file."),
    columns: str | None = typer.Option(
        None, "--columns", "-c", help="Comma-separated numeric columns (default: all)."
    ),
    k: int = typer.Option(3, "--k", "-k", help="Smallest group size."),
    method: str = typer.Option("mdav", "--method", help=f"Grouping method: {', '.join(_METHODS)}."),
    restore_moments: bool = typer.Option(
        False,
        "--restore-moments",
        help="Apply T(x) = A x + b so the release has the original mean and covariance.",
    ),
    positivity: str | None = typer.Option(
        None,
        "--positivity",
        help="Restore moments but keep non-negative columns non-negative: same, subset or global.",
    ),
    out: Path | None = typer.Option(None, "--out", "-o", help="Write the release here (.parquet or .csv)."),
    seed: int = typer.Option(0, "--seed", help="Seed of the utility measures (k-means, ECDF sample)."),
    as_json: bool = typer.Option(False, "--json", help=JSON_HELP),
) -> None:
    """Microaggregate numeric columns (groups of >= k records) and print the utility table."""
    if method not in _METHODS:
        raise typer.BadParameter(f"{method!r}; use one of {', '.join(_METHODS)}", param_hint="--method")
    if positivity is not None and positivity not in _POSITIVITY:
        raise typer.BadParameter(f"{positivity!r}; use same, subset or global", param_hint="--positivity")
    from sdckit._io import read_path
    from sdckit.microagg import Microaggregation, MomentRestorer, PositivityRestorer, utility_table

    frame = read_path(data)
    cols = parse_columns(columns)
    with progress("microaggregating", quiet=as_json):
        model = Microaggregation(k=k, method=method, columns=cols).fit(frame)  # type: ignore[arg-type]
        release = model.transform(frame)
        names = list(model.columns_)
        stats = None
        if positivity is not None:
            groups = model.groups_ if model.groups_.ndim == 1 else None
            pos = PositivityRestorer(mode=positivity, columns=names).fit(frame, release, groups=groups)  # type: ignore[arg-type]
            release = pos.transform(release)
            stats = pos.stats_
        elif restore_moments:
            release = MomentRestorer(columns=names).fit(frame, release).transform(release)
        table = utility_table(frame, release, columns=names, seed=seed)
    if out is not None:
        write_table(release, out)
    payload = {
        "source": data.name,
        "columns": names,
        "k": k,
        "method": method,
        "restore_moments": restore_moments or positivity is not None,
        "positivity": positivity,
        "n_rows": int(model.groups_.shape[0]),
        "n_groups": model.n_groups_,
        "information_loss_pct": model.information_loss_,
        "positivity_stats": stats.to_dict() if stats is not None else None,
        "utility": table.to_dict(),
        "out": str(out) if out is not None else None,
    }
    if as_json:
        print_json(payload)
        return
    stdout.print(
        f"[bold]{data.name}[/]: {payload['n_rows']:,} rows, {len(names)} columns, {method} k={k}: "
        f"{model.n_groups_:,} groups, information loss {model.information_loss_:.4f} % (microaggregated)"
    )
    if stats is not None:
        stdout.print(
            f"positivity ({positivity}): {stats.n_negative_records:,} records negative after T, "
            f"{stats.n_kept:,} kept microaggregated, {stats.n_transformed:,} transformed, "
            f"{stats.n_reverted:,} reverted, {stats.n_filled_cells:,} cells filled"
        )
    rich_table = Table("measure", "value", title="utility and risk of the release")
    for name, value in table.rows():
        rich_table.add_row(name, f"{value:.6g}")
    stdout.print(rich_table)
    if out is not None:
        stdout.print(f"release written to {out}")
