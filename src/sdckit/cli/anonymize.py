"""``sdckit recode``, ``sdckit suppress``, ``sdckit pram``: anonymise microdata, keep every column."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import typer
from rich.table import Table

from sdckit._io import check_output_path, check_outputs, read_path
from sdckit.cli._common import (
    JSON_HELP,
    KEEP_ORDER_HELP,
    handles_errors,
    k_option,
    order_note,
    parse_columns,
    print_json,
    progress,
    stdout,
    write_release,
)
from sdckit.errors import FileNotFoundInputError, UnreadableInputError

_SEED_HELP = (
    "Seed of the random draws, for tests and reproductions only: whoever knows it can undo the "
    "randomisation. Omit it for OS entropy."
)


def register(app: typer.Typer) -> None:
    """Add ``recode``, ``suppress`` and ``pram`` to the root app."""
    app.command("recode")(recode)
    app.command("suppress")(suppress)
    app.command("pram")(pram)


def _pairs(values: list[str] | None, option: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for item in values or []:
        name, sep, value = item.partition("=")
        if not sep or not name.strip() or not value.strip():
            raise typer.BadParameter(f"{item!r}: use COLUMN=VALUE", param_hint=option)
        if name.strip() in out:
            raise typer.BadParameter(f"column {name.strip()!r} is given twice", param_hint=option)
        out[name.strip()] = value.strip()
    return out


def hierarchy_options(values: list[str] | None, option: str = "--hierarchy") -> dict[str, str]:
    """``--hierarchy COLUMN=SOURCE`` (repeatable) as ``{column: source}``; the item ``adult`` stands
    for every built-in Adult hierarchy (``adult:COLUMN``)."""
    # lazy: sdckit --help stays fast
    from sdckit.anonymize._hierarchy import ADULT_HIERARCHY_COLUMNS, BUILTIN_PREFIX

    out: dict[str, str] = {}
    for item in values or []:
        if item.strip() == "adult":
            out |= {c: f"{BUILTIN_PREFIX}{c}" for c in ADULT_HIERARCHY_COLUMNS}
        else:
            out |= _pairs([item], option)
    return out


def _read_rules(value: str) -> dict[str, Any]:
    """``--rules``: a JSON object, or a .json / .yaml file holding one."""
    path = Path(value)
    text = value
    if value.lower().endswith((".json", ".yaml", ".yml")):
        if not path.exists():
            raise FileNotFoundInputError(value)
        text = path.read_text(encoding="utf-8")
    try:
        if value.lower().endswith((".yaml", ".yml")):
            # lazy: sdckit --help stays fast
            import yaml

            rules = yaml.safe_load(text)
        else:
            rules = json.loads(text)
    except (json.JSONDecodeError, ValueError) as err:
        raise UnreadableInputError(
            f"cannot read --rules {value[:60]!r}: {err}. Give JSON such as "
            '\'{"age": {"breaks": [20, 40, 60]}}\' or a .json/.yaml file.'
        ) from None
    if not isinstance(rules, dict):
        raise UnreadableInputError("--rules must be an object {column: rule}.")
    return rules


def _changes_table(changes: dict[str, dict[str, int]], title: str) -> Table:
    keys = list(next(iter(changes.values())).keys()) if changes else []
    table = Table("column", *[k.replace("_", " ") for k in keys], title=title)
    for col, row in changes.items():
        table.add_row(col, *[f"{row[k]:,}" for k in keys])
    return table


def _finish(
    payload: dict[str, Any], release: Any, out: Path | None, as_json: bool, title: str, *, data: Path, frame: Any,
    keep_order: bool = False, seed: int | None = None,
) -> None:
    """Write the release (rows shuffled unless ``keep_order``; the seed of a reproduction shuffles
    it too) and print what was done."""
    if out is not None:
        payload["rows_shuffled"] = write_release(release, out, data=data, frame=frame, keep_order=keep_order, seed=seed)
    if as_json:
        print_json(payload)
        return
    stdout.print(_changes_table(payload["changes"], title))
    if out is not None:
        stdout.print(f"release written to {out}; {order_note(keep_order)}")


@handles_errors
def recode(
    data: Path = typer.Argument(..., help="A CSV, TSV, Parquet or JSON-lines file (.gz allowed)."),
    rules: str | None = typer.Option(
        None,
        "--rules",
        help='Rules as JSON, e.g. \'{"age": {"breaks": [20, 40, 60]}}\', or a .json/.yaml file.',
    ),
    breaks: list[str] | None = typer.Option(
        None, "--breaks", help="COLUMN=b1,b2,... numeric intervals [b_i, b_i+1), or (b_i, b_i+1] with --closed right (repeatable)."
    ),
    hierarchy: list[str] | None = typer.Option(
        None,
        "--hierarchy",
        help="COLUMN=SOURCE: an ARX-style CSV or a built-in name such as adult:age (repeatable).",
    ),
    mapping: list[str] | None = typer.Option(
        None,
        "--mapping",
        help="COLUMN=OLD:NEW,OLD:NEW merges values into labels, e.g. water=3:3-8,4:3-8 (sdcMicro's groupAndRename; "
        "repeatable).",
    ),
    level: list[str] | None = typer.Option(
        None, "--level", help="COLUMN=L, the hierarchy level (default 1)."
    ),
    closed: str = typer.Option(
        "left", "--closed", help="Intervals of --breaks: left ([a, b), the default) or right ((a, b], sdcMicro's "
        "globalRecode; a value outside the breaks becomes missing)."
    ),
    out: Path | None = typer.Option(
        None, "--out", "-o", help="Write the release here (.parquet, .csv, ...)."
    ),
    keep_order: bool = typer.Option(False, "--keep-order", help=KEEP_ORDER_HELP),
    as_json: bool = typer.Option(False, "--json", help=JSON_HELP),
) -> None:
    """Global recoding: numbers into intervals, categories by a mapping or a hierarchy level."""
    if closed not in ("left", "right"):
        raise typer.BadParameter(f"{closed!r}; use left or right", param_hint="--closed")
    # lazy: sdckit --help stays fast
    from sdckit.anonymize import GlobalRecoder

    spec: dict[str, Any] = _read_rules(rules) if rules else {}
    for col, text in _pairs(breaks, "--breaks").items():
        try:
            spec[col] = {"breaks": [float(b) for b in text.split(",") if b.strip()]}
        except ValueError:
            raise typer.BadParameter(
                f"{text!r}: give numbers, e.g. age=20,40,60", param_hint="--breaks"
            ) from None
    for col, text in _pairs(mapping, "--mapping").items():
        pairs = [part.split(":", 1) for part in text.split(",") if part.strip()]
        if not pairs or any(len(pair) != 2 or not pair[0].strip() for pair in pairs):
            raise typer.BadParameter(f"{text!r}: give OLD:NEW pairs, e.g. water=3:3-8,4:3-8", param_hint="--mapping")
        spec[col] = {"mapping": {old.strip(): new.strip() for old, new in pairs}}
    levels = _pairs(level, "--level")
    for col, source in _pairs(hierarchy, "--hierarchy").items():
        try:
            lvl = int(levels.pop(col, "1"))
        except ValueError:
            raise typer.BadParameter(f"level of {col!r}: give a whole number", param_hint="--level") from None
        spec[col] = {"hierarchy": source, "level": lvl}
    if levels:
        raise typer.BadParameter(f"--level for {sorted(levels)} without --hierarchy", param_hint="--level")
    if not spec:
        raise typer.BadParameter("give --rules, --breaks, --mapping or --hierarchy", param_hint="--rules")
    if out is not None:  # the rules file and hierarchy files are inputs too
        check_outputs([out], [data, rules, *(str(s.get("hierarchy")) for s in spec.values() if "hierarchy" in s)])
    frame = read_path(data)
    model = GlobalRecoder(rules=spec, closed=closed).fit(frame)
    release = model.transform(frame)
    payload = {
        "source": data.name,
        "rules": model.rules_,
        "changes": model.changes_,
        "out": str(out) if out else None,
    }
    _finish(payload, release, out, as_json, f"{data.name}: global recoding", data=data, frame=frame,
            keep_order=keep_order)


@handles_errors
def suppress(
    data: Path = typer.Argument(..., help="A CSV, TSV, Parquet or JSON-lines file (.gz allowed)."),
    columns: str = typer.Option(..., "--columns", "-c", help="The key variables, e.g. age,sex,zip."),
    k: int = typer.Option(3, "--k", "-k", callback=k_option, help="Group size every record must reach (>= 2)."),
    importance: str | None = typer.Option(
        None, "--importance", help="Keys from most to least important (kept first), e.g. sex,age."
    ),
    method: str = typer.Option(
        "decoys", "--method",
        help="decoys (default: every released row identical to >= k - 1 others), optimal (the same with the "
             "fewest cells, a mixed-integer program within 30 s) or sdcmicro (sdcMicro's "
             "localSuppression, a missing cell matching any value).",
    ),
    random_redaction: float | None = typer.Option(
        None,
        "--random-redaction",
        help="With --method sdcmicro: probability (0..1) that other cells of a suppressed column are redacted too.",
    ),
    seed: int | None = typer.Option(None, "--seed", help=_SEED_HELP),
    out: Path | None = typer.Option(
        None, "--out", "-o", help="Write the release here (.parquet, .csv, ...)."
    ),
    keep_order: bool = typer.Option(False, "--keep-order", help=KEEP_ORDER_HELP),
    as_json: bool = typer.Option(False, "--json", help=JSON_HELP),
    household: str | None = typer.Option(
        None, "--household", "--entity",
        help="Household/entity id column: every group of identical released rows then holds >= k distinct "
             "households, and the id is written as fresh random ids (never the input's).",
    ),
    household_columns: str | None = typer.Option(
        None, "--household-columns",
        help="With --household: keys with one value per household (suppressed for every member or none).",
    ),
) -> None:
    """Local suppression: key cells set to missing so every record is k-anonymous.

    By default with decoys: every released row is identical, suppressed cells included, to at least
    k - 1 others. With --method sdcmicro a missing cell matches any value (sdcMicro's localSuppression).
    """
    # lazy: sdckit --help stays fast
    import polars as pl

    # lazy: sdckit --help stays fast
    from sdckit.anonymize import LocalSuppressor

    # lazy: sdckit --help stays fast
    from sdckit.pipeline._run import fresh_household_ids

    keys = parse_columns(columns)
    if out is not None:
        check_output_path(out, inputs=[data])
    frame = read_path(data)
    with progress("suppressing", quiet=as_json):
        model = LocalSuppressor(
            k=k,
            columns=keys,
            importance=parse_columns(importance),
            method=method,
            random_redaction=random_redaction,
            random_state=seed,
            entity=household,
            household_columns=parse_columns(household_columns),
        ).fit(frame)
        release = model.transform(frame)
        if household is not None and isinstance(release, pl.DataFrame):  # never the input's ids
            release = release.with_columns(fresh_household_ids(release[household], seed))
    payload = {
        "source": data.name,
        "columns": list(model.columns_),
        "k": k,
        "method": method,
        "n_rows": model.n_rows_,
        "n_suppressed": model.n_suppressed_,
        "hidden_value_share": model.hidden_value_share_,
        "value_posterior": model.hidden_value_share_,  # the former key
        "n_redacted": int(model.redacted_.sum()),
        "random_redaction": random_redaction,
        "redaction_allowance": model.redaction_allowance_,
        "min_group_size": int(model.group_sizes_.min()) if model.n_rows_ else 0,
        "random": method in ("decoys", "optimal") or bool(random_redaction),
        "reproducible": seed is not None,
        "changes": model.changes_,
        "certificate": model.certificate_,
        "out": str(out) if out else None,
        "household": household,
    }
    if not as_json:
        stdout.print(
            f"[bold]{data.name}[/]: {model.n_rows_:,} records, k = {k}: {model.n_suppressed_:,} cells suppressed"
            + (
                f", {payload['n_redacted']:,} redacted at random (p = {random_redaction:g})"
                if random_redaction
                else ""
            )
            + f"; smallest group ({'missing matches any value' if method == 'sdcmicro' else 'identical rows'}): "
            f"{payload['min_group_size']:,}" + (f" distinct households ({household}; written as fresh random ids)"
                                                if household else "")
        )
        cert = model.certificate_
        stdout.print(
            f"certificate: any release meeting the same guarantee needs at least {cert['lower_bound']:,} cells "
            f"(proven by {cert['bound_method']}); this one is within {100 * cert['gap']:.1f} % of it"
        )
        if random_redaction:
            stdout.print(
                f"exposure allowance of the redaction (missing read as a value): {100 * model.redaction_allowance_:.4g}%"
            )
    _finish(payload, release, out, as_json, "cells per key", data=data, frame=frame, keep_order=keep_order, seed=seed)


@handles_errors
def pram(
    data: Path = typer.Argument(..., help="A CSV, TSV, Parquet or JSON-lines file (.gz allowed)."),
    columns: str = typer.Option(..., "--columns", "-c", help="The categorical columns to randomise."),
    pd: float = typer.Option(0.8, "--pd", help="Smallest probability of keeping a value (invariant PRAM)."),
    matrix: str | None = typer.Option(
        None, "--matrix", help="User matrices as JSON {column: {from: {to: p}}} or a .json/.yaml file."
    ),
    seed: int | None = typer.Option(None, "--seed", help=_SEED_HELP),
    out: Path | None = typer.Option(
        None, "--out", "-o", help="Write the release here (.parquet, .csv, ...)."
    ),
    keep_order: bool = typer.Option(False, "--keep-order", help=KEEP_ORDER_HELP),
    as_json: bool = typer.Option(False, "--json", help=JSON_HELP),
) -> None:
    """PRAM: redraw each value from its row of an invariant (or given) transition matrix."""
    # lazy: sdckit --help stays fast
    from sdckit.anonymize import PRAM

    cols = parse_columns(columns)
    if out is not None:
        check_output_path(out, inputs=[data])
    frame = read_path(data)
    model = PRAM(columns=cols, pd=pd, matrix=_read_rules(matrix) if matrix else None, random_state=seed)
    release = model.fit_transform(frame)  # the very draw whose changes are reported
    payload = {
        "source": data.name,
        "columns": list(model.columns_),
        "pd": pd,
        "seed": seed,
        "transition": {
            c: {"values": [str(v) for v in vals], "matrix": P.tolist()}
            for c, (vals, P) in model.transition_.items()
        },
        "changes": model.changes_,
        "out": str(out) if out else None,
    }
    _finish(payload, release, out, as_json, f"{data.name}: PRAM", data=data, frame=frame, keep_order=keep_order,
            seed=seed)
