"""``sdckit protocol``: keys, services and an end-to-end simulation of the shuffle protocol."""

from __future__ import annotations

from contextlib import ExitStack
from pathlib import Path
from typing import Any

import typer
from rich.table import Table

from sdckit.cli._common import (
    JSON_HELP,
    check_port_free,
    data_source,
    handles_errors,
    parse_columns,
    print_json,
    progress,
    reads_data,
    stderr,
    stdout,
)

protocol_app = typer.Typer(
    name="protocol",
    help="The shuffle protocol: users -> shuffler -> curator (marginals, plan) -> analyst (release).",
    no_args_is_help=True,
)


def register(app: typer.Typer) -> None:
    """Add the ``protocol`` command group to the root app."""
    app.add_typer(protocol_app, name="protocol")


@protocol_app.command("keygen")
@handles_errors
def keygen(
    path: Path = typer.Argument(
        ...,
        help="Where to write the private keys (mode 0600, never through a symlink); the public key goes "
        "to PATH.pub, the signature verification key (pinned by devices) to PATH.verify.",
    ),
    suite: str = typer.Option(
        "x25519", "--suite", help="x25519 (default) or mlkem768-x25519 (hybrid post-quantum)."
    ),
    force: bool = typer.Option(False, "--force", help="Replace an existing key file."),
    as_json: bool = typer.Option(False, "--json", help=JSON_HELP),
) -> None:
    """Generate an HPKE key pair for a shuffler, curator or analyst."""
    # lazy: sdckit --help stays fast
    from sdckit.protocol import generate_key_file
    from sdckit.protocol._crypto import check_suite

    if suite not in ("x25519", "mlkem768-x25519"):
        raise typer.BadParameter(
            f"unknown suite {suite!r}; use x25519 or mlkem768-x25519", param_hint="--suite"
        )
    public = generate_key_file(path, suite=check_suite(suite), force=force)
    if as_json:
        print_json(
            {
                "private_key_file": str(path),
                "public_key_file": f"{path}.pub",
                "verify_key_file": f"{path}.verify",
                "public_key": public.to_text(),
            }
        )
        return
    stdout.print(f"wrote [bold]{path}[/] (0600), {path}.pub and {path}.verify (give it to the devices)")
    stdout.print(public.to_text(), highlight=False, soft_wrap=True)


@protocol_app.command("serve")
@handles_errors
def serve(
    role: str = typer.Argument(..., help="shuffler, curator or analyst."),
    config: Path = typer.Option(..., "--config", help="The service's YAML or JSON config file."),
    as_json: bool = typer.Option(
        False, "--json", help="Errors, and the line saying where it listens, as JSON."
    ),
) -> None:
    """Run one service in the foreground (Ctrl-C stops it)."""
    # lazy: sdckit --help stays fast
    from sdckit.protocol.services import ROLES, load_config
    from sdckit.protocol.services import serve as run

    if role not in ROLES:
        raise typer.BadParameter(
            f"unknown role {role!r}; use shuffler, curator or analyst", param_hint="ROLE"
        )
    cfg = load_config(config, role=role)
    check_port_free(cfg.host, cfg.port)  # one clear line, exit 1, before the banner
    if as_json:
        print_json({"role": role, "url": f"http://{cfg.host}:{cfg.port}", "openapi": "/openapi.json"})
    else:
        stderr.print(f"{role} on http://{cfg.host}:{cfg.port} (OpenAPI at /docs and /openapi.json)")
    run(cfg)


@protocol_app.command("simulate")
@handles_errors
@reads_data
def simulate(
    data: Path = typer.Argument(..., help="A CSV, Parquet or JSON-lines file; one row per user."),
    columns: str = typer.Option(..., "--columns", "-c", help="Comma-separated features of round 1."),
    k: int = typer.Option(5, "--k", min=2, help="Group size of the k-anonymity target (users, >= 2)."),
    budget: float = typer.Option(
        0.05, "--budget", min=0.0, max=1.0, help="The largest share of users (0..1) allowed in groups smaller than k."
    ),
    users: int | None = typer.Option(None, "--users", min=1, help="Use a random sample of this many users."),
    setting: str = typer.Option(
        "fixed", "--setting", help="fixed (same users twice) or statistical (round 1 is a sample)."
    ),
    round1_users: int | None = typer.Option(
        None, "--round1-users", min=1, help="Statistical setting: users in round 1."
    ),
    method: str = typer.Option(
        "best", "--method", help="Planner bound: best, theorem2, theorem3 or support."
    ),
    local_suppression: bool = typer.Option(
        False, "--local-suppression", help="Publish redaction rules for rare values."
    ),
    suite: str = typer.Option("x25519", "--suite", help="x25519 or mlkem768-x25519."),
    batch_threshold: int = typer.Option(
        1000, "--batch-threshold", min=1, help="The shuffler's batch threshold (messages)."
    ),
    min_batch: int | None = typer.Option(
        None, "--min-batch", min=1, help="Fewest users per forwarded batch (default: the batch threshold)."
    ),
    enrolment: str = typer.Option(
        "tokens", "--enrolment", help="tokens (one anonymous credential per user and round) or open."
    ),
    per_request: int = typer.Option(32, "--per-request", min=1, help="Users' messages per HTTP request."),
    seed: int | None = typer.Option(None, "--seed", help="Seed of the user sampling."),
    workdir: Path | None = typer.Option(
        None, "--workdir", help="Keep keys, stores and logs here (default: temporary)."
    ),
    pairs: str | None = typer.Option(
        None,
        "--pairs",
        help="auto: the middle round, where the curator asks for the counts of safe pairs (rare "
        "values redacted) and plans from singles and pairs (fixed setting).",
    ),
    pairs_budget: float | None = typer.Option(
        None,
        "--pairs-budget",
        min=0.0,
        max=1.0,
        help="Share of users (0..1) the pair tables may expose (default: --budget).",
    ),
    hierarchy: list[str] | None = typer.Option(
        None,
        "--hierarchy",
        help="COLUMN=SOURCE (ARX-style CSV or built-in adult:COLUMN), or 'adult' for all built-in Adult "
        "hierarchies: the curator may recode these columns (fixed setting; repeatable).",
    ),
    as_json: bool = typer.Option(False, "--json", help=JSON_HELP),
    read: Any = None,  # filled by @reads_data
) -> None:
    """Run the rounds (singles, optionally pairs, release) on loopback with three real services and
    verify the release."""
    # lazy: sdckit --help stays fast
    from sdckit.cli.anonymize import hierarchy_options
    from sdckit.protocol import simulate as run

    cols = parse_columns(columns) or []
    if setting not in ("fixed", "statistical"):
        raise typer.BadParameter("use fixed or statistical", param_hint="--setting")
    if method not in ("best", "theorem2", "theorem3", "support"):
        raise typer.BadParameter("use best, theorem2, theorem3 or support", param_hint="--method")
    if suite not in ("x25519", "mlkem768-x25519"):
        raise typer.BadParameter("use x25519 or mlkem768-x25519", param_hint="--suite")
    if enrolment not in ("tokens", "open"):
        raise typer.BadParameter("use tokens or open", param_hint="--enrolment")
    if pairs not in (None, "auto"):
        raise typer.BadParameter("use auto (or leave --pairs out)", param_hint="--pairs")
    hier = hierarchy_options(hierarchy)
    if any(item.strip() == "adult" for item in hierarchy or []):  # the built-in set: those of the columns
        hier = {c: h for c, h in hier.items() if c in cols}
    with ExitStack() as stack:
        bars: dict[str, tuple[Any, int]] = {}  # stage -> (advance, users acknowledged so far)

        def on_progress(stage: str, done: int, total: int) -> None:
            if stage not in bars:  # one bar per round, closed with the stack (also on error)
                bars[stage] = (
                    stack.enter_context(progress(f"{stage}: users", total=total, quiet=as_json)),
                    0,
                )
            advance, before = bars[stage]
            advance(done - before)
            bars[stage] = (advance, done)

        result = run(
            data_source(data, read),
            cols,
            k=k,
            budget=budget,
            users=users,
            setting=setting,  # type: ignore[arg-type]
            round1_users=round1_users,
            method=method,  # type: ignore[arg-type]
            local_suppression=local_suppression,
            suite=suite,  # type: ignore[arg-type]
            batch_threshold=batch_threshold,
            min_batch=min_batch,
            enrolment=enrolment,  # type: ignore[arg-type]
            users_per_request=per_request,
            seed=seed,
            workdir=workdir,
            progress=on_progress,
            pairs=pairs,  # type: ignore[arg-type]
            pairs_budget=pairs_budget,
            hierarchies=hier or None,
        )
    if as_json:
        print_json(result.to_dict())
        return
    _render(result)


def _render(result: Any) -> None:
    plan = result.plan
    stdout.print(
        f"[bold]{result.n_round1:,}[/] users in round 1, [bold]{result.n_round2:,}[/] in round 2 "
        f"({result.setting} setting, {result.suite}, enrolment {result.enrolment}); "
        f"{result.seconds['total']:.1f} s"
    )
    marg = Table("feature", "values", "rarest value (users)", title="Round 1: marginals the curator counted")
    for f, counts in result.marginals.items():
        rare = min(counts.items(), key=lambda kv: kv[1]) if counts else ("-", 0)
        marg.add_row(f, f"{len(counts):,}", f"{rare[0]} ({rare[1]:,})")
    stdout.print(marg)
    if result.pairs is not None:
        q = result.pairs["queries"]
        asked = ", ".join(" x ".join(x["columns"]) for x in q["queries"]) or "(none: no pair was safe to ask)"
        stdout.print(
            f"Pair round: asked {asked}; share of users in a received cell < {plan.k}: bound "
            f"{q['bound']:.4f} <= {q['budget']:g}, measured {result.pairs['measured'] or 0.0:.4f}",
            highlight=False,
        )
    stdout.print(f"Rounds: {', '.join(result.rounds)}")
    cols = ", ".join(plan.columns) or "(none)"
    stdout.print(
        f"Plan: release [bold]{cols}[/] at k={plan.k}: bound {plan.bound:.4f} <= budget {plan.budget:g} "
        f"(share of users; {plan.method})"
    )
    for f, why in plan.excluded.items():
        stdout.print(f"  left out [bold]{f}[/]: {why}", highlight=False)
    if plan.redactions:
        stdout.print(f"  {len(plan.redactions)} redaction rule(s); redacted entries: {dict(result.redacted)}")
    for f, mapping in plan.recodings.items():
        stdout.print(
            f"  recoded [bold]{f}[/]: {len(mapping):,} values to {len(set(mapping.values())):,} generalised values",
            highlight=False,
        )
    ok = "[green]verified[/]" if result.verified else "[bold red]NOT verified[/]"
    stdout.print(
        f"Release: {result.n_released:,} rows; true share of rows in groups < {plan.k}: "
        f"{result.exposure_at_k:.4f} (a redacted entry a value of its own); users with < {plan.k} consistent "
        f"rows (a redacted entry consistent with anything): {result.consistent_below_k or 0.0:.4f}; equals the "
        "input on the planned columns"
        f"{', recoded by the plan,' if plan.recodings else ''} as a multiset: {ok}"
    )
    speed = ", ".join(f"{s} {v:,.0f}" for s, v in result.users_per_second.items() if v == v)
    stdout.print(f"Users per second: {speed}")
