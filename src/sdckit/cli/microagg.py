"""``sdckit microaggregate``: microaggregation, moment restoration, positivity, and the utility table."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import typer
from rich.table import Table

from sdckit.cli._common import (
    JSON_HELP,
    KEEP_ORDER_HELP,
    check_command_outputs,
    handles_errors,
    k_option,
    order_note,
    parse_columns,
    print_json,
    progress,
    read_table,
    reads_data,
    stdout,
    write_release,
)

if TYPE_CHECKING:
    from sdckit._io import ReadOptions

_METHODS = ("mdav", "mdav_blocked", "vmdav", "rank", "pca", "single")
_POSITIVITY = ("same", "subset", "global")
_UTILITY = ("none", "basic", "full")


def register(app: typer.Typer) -> None:
    """Add ``microaggregate`` to the root app."""
    app.command("microaggregate")(microaggregate)


@handles_errors
@reads_data
def microaggregate(
    data: Path = typer.Argument(..., help="A CSV, Parquet or JSON-lines file."),
    columns: str | None = typer.Option(
        None, "--columns", "-c", help="Comma-separated numeric columns (default: all)."
    ),
    k: int = typer.Option(3, "--k", "-k", callback=k_option, help="Smallest group size (>= 2)."),
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
    utility: str = typer.Option(
        "full", "--utility",
        help="Measures to print: full (all), basic (no ECDF, cluster or propensity model), none.",
    ),
    missing: str = typer.Option(
        "error", "--missing", help="Rows with a missing value in the columns: 'error' (default) or 'drop'."
    ),
    read: ReadOptions = None,  # type: ignore[assignment]  # filled by @reads_data
    allow_linear_relations: bool = typer.Option(
        False,
        "--allow-linear-relations",
        help="Release even when a linear relation (e.g. TOTAL = A + B) ties the masked columns to columns "
        "left unchanged, which undoes the masking.",
    ),
    keep_order: bool = typer.Option(False, "--keep-order", help=KEEP_ORDER_HELP),
    as_json: bool = typer.Option(False, "--json", help=JSON_HELP),
) -> None:
    """Microaggregate numeric columns (groups of >= k records) and print the utility table."""
    if method not in _METHODS:
        raise typer.BadParameter(f"{method!r}; use one of {', '.join(_METHODS)}", param_hint="--method")
    if positivity is not None and positivity not in _POSITIVITY:
        raise typer.BadParameter(f"{positivity!r}; use same, subset or global", param_hint="--positivity")
    if utility not in _UTILITY:
        raise typer.BadParameter(f"{utility!r}; use none, basic or full", param_hint="--utility")
    if missing not in ("error", "drop"):
        raise typer.BadParameter(f"{missing!r}; use error or drop", param_hint="--missing")
    # lazy: sdckit --help stays fast
    from sdckit.microagg import Microaggregation, MomentRestorer, PositivityRestorer, utility_table

    check_command_outputs(files=[out], inputs=[data])  # before the work; never over the input file
    cols = parse_columns(columns)
    frame, n_dropped = read_table(data, read, drop_missing_in=(cols or []) if missing == "drop" else None)
    with progress("microaggregating", total=2 if utility != "none" else 1, quiet=as_json) as advance:
        model = Microaggregation(
            k=k, method=method, columns=cols, allow_linear_relations=allow_linear_relations  # type: ignore[arg-type]
        ).fit(frame)
        release = model.transform(frame)
        names = list(model.columns_)
        stats = None
        if positivity is not None:
            # 2-D per-column ids (method="rank") are accepted too: positivity keeps every group whole.
            pos = PositivityRestorer(mode=positivity, columns=names).fit(frame, release, groups=model.groups_)  # type: ignore[arg-type]
            release = pos.transform(release)
            stats = pos.stats_
        elif restore_moments:
            release = MomentRestorer(columns=names).fit(frame, release).transform(release)
        advance(1, description="utility and risk measures")
        table = (
            utility_table(frame, release, columns=names, seed=seed, level=utility)  # type: ignore[arg-type]
            if utility != "none"
            else None
        )
    shuffled = False
    if out is not None:
        shuffled = write_release(release, out, data=data, frame=frame, read=read, keep_order=keep_order)
    payload = {
        "source": data.name,
        "columns": names,
        "k": k,
        "method": method,
        "restore_moments": restore_moments or positivity is not None,
        "positivity": positivity,
        "n_rows": int(model.groups_.shape[0]),
        "n_dropped": n_dropped,
        "n_groups": model.n_groups_,
        "information_loss_pct": model.information_loss_,
        "positivity_stats": stats.to_dict() if stats is not None else None,
        "utility": table.to_dict() if table is not None else None,
        "out": str(out) if out is not None else None,
        "rows_shuffled": shuffled,
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
    if n_dropped:
        stdout.print(f"{n_dropped:,} rows with missing values dropped (--missing drop)")
    if table is not None:
        rich_table = Table("measure", "value", title="utility and risk of the release")
        for name, value in table.rows():
            rich_table.add_row(name, "not computed (--utility basic)" if value != value else f"{value:.6g}")
        stdout.print(rich_table)
        if table.propensity_terms:
            stdout.print(table.propensity_note, highlight=False)
    if out is not None:
        stdout.print(f"release written to {out}; {order_note(keep_order)}")
