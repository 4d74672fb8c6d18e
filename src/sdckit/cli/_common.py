"""What every command shares: error handling, JSON output, consoles, progress bars, parsing."""

from __future__ import annotations

import functools
import json
import re
import sys
import warnings
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, ParamSpec, TypeVar

import typer
from typer._click import exceptions as click  # typer vendors click (0.26+)
from rich.console import Console

from sdckit.errors import SdcError, SdcWarning

P = ParamSpec("P")
R = TypeVar("R")

stdout = Console()
stderr = Console(stderr=True)

JSON_HELP = "Print the result as JSON (stable keys) instead of tables."

PLOT_SUFFIXES = (".svg", ".png", ".pdf")


def split_fix(message: str) -> tuple[str, str | None]:
    """``("what is wrong.", "what to do.")`` from an error text: its first sentence is the problem,
    the sentences after it the fix (None when there is only one)."""
    parts = re.split(r"(?<=[.;:!?])\s+(?=[A-Z`'\"(])", message.strip(), maxsplit=1)
    return (parts[0], parts[1]) if len(parts) == 2 else (message.strip(), None)


def error_payload(kind: str, message: str) -> dict[str, Any]:
    """The ``--json`` form of an error: ``{"error": {"type", "message", "fix"}}``."""
    _, fix = split_fix(message)
    return {"error": {"type": kind, "message": message, "fix": fix}}


def json_requested(argv: Sequence[str]) -> bool:
    """Whether a command line asks for JSON output (``--json`` before any ``--``)."""
    for arg in argv:
        if arg == "--":
            return False
        if arg == "--json":
            return True
    return False


@contextmanager
def user_errors(*, as_json: bool = False) -> Iterator[None]:
    """Turn an :class:`SdcError` into one red line on stderr and exit code 1 (no traceback); with
    ``as_json``, into ``{"error": {"type", "message", "fix"}}`` on stdout, still exit code 1.

    An :class:`SdcWarning` (legal but suspicious input) becomes one yellow ``Warning:`` line on
    stderr, each message once; other warnings keep Python's usual display.
    """
    with warnings.catch_warnings():  # restores the filters and showwarning on exit
        warnings.simplefilter("default", SdcWarning)
        shown: set[str] = set()
        python_show = warnings.showwarning

        def show(message: Warning | str, category: type[Warning], *args: Any, **kwargs: Any) -> None:
            if not issubclass(category, SdcWarning):
                python_show(message, category, *args, **kwargs)
            elif str(message) not in shown:
                shown.add(str(message))
                stderr.print(f"[bold yellow]Warning:[/] {message}", highlight=False, soft_wrap=True)

        warnings.showwarning = show
        try:
            yield
        except SdcError as err:
            if as_json:
                print_json(error_payload(type(err).__name__, str(err)))
            else:
                stderr.print(f"[bold red]Error:[/] {err}", highlight=False, soft_wrap=True)
            raise typer.Exit(code=1) from None
        except click.UsageError as err:  # raised by the command body: still exit 2
            if not as_json:
                raise
            print_json(error_payload("UsageError", _usage_text(err)))
            raise typer.Exit(code=err.exit_code) from None


def _usage_text(err: click.UsageError) -> str:
    hint = err.param_hint if isinstance(err, click.BadParameter) else None
    if isinstance(err, click.BadParameter) and hint is None and err.param is not None:
        hint = err.param.get_error_hint(err.ctx) if err.ctx is not None else err.param.name
    return f"invalid value for {hint}: {err.message}" if hint else err.message


def handles_errors(func: Callable[P, R]) -> Callable[P, R]:
    """Decorator form of :func:`user_errors` for command functions (keeps the signature); a
    command's ``as_json`` parameter switches errors to JSON."""

    @functools.wraps(func)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        with user_errors(as_json=bool(kwargs.get("as_json", False))):
            return func(*args, **kwargs)

    return wrapper


def usage_error_as_json(err: click.ClickException) -> None:
    """Print a parsing error (unknown option, bad value) of a ``--json`` command line as JSON."""
    kind = "UsageError" if isinstance(err, click.UsageError) else type(err).__name__
    text = _usage_text(err) if isinstance(err, click.UsageError) else err.format_message()
    print_json(error_payload(kind, text))


def print_json(payload: Any) -> None:
    """Write ``payload`` as JSON to stdout (numpy values converted, NaN as null; dates, decimals and
    other scalars a table can hold, e.g. an example value in ``describe``, as their text)."""
    from sdckit.report import to_jsonable

    sys.stdout.write(json.dumps(to_jsonable(payload), indent=2, sort_keys=False, default=str) + "\n")
    sys.stdout.flush()


def parse_columns(value: str | None) -> list[str] | None:
    """``"a,b, c"`` -> ``["a", "b", "c"]``; None or empty -> None (all columns)."""
    if value is None:
        return None
    cols = [c.strip() for c in value.split(",") if c.strip()]
    if not cols:
        raise typer.BadParameter("give at least one column name, e.g. --columns age,sex")
    return cols


def check_suffix(path: Path, suffixes: Sequence[str], option: str) -> None:
    """Refuse an output file whose ending the command cannot write (a usage error, exit 2)."""
    if not any(path.name.lower().endswith(s) for s in suffixes):
        choices = ", ".join(suffixes[:-1]) + " or " + suffixes[-1] if len(suffixes) > 1 else suffixes[0]
        raise typer.BadParameter(f"{path.name}: give a {choices} file", param_hint=option)


def check_plot_path(path: Path, *, inputs: Sequence[Path] = ()) -> None:
    """Refuse a ``--plot`` file of another type or over an input file; call it before the work."""
    from sdckit._io import check_output_path

    check_suffix(path, PLOT_SUFFIXES, "--plot")
    check_output_path(path, inputs=inputs)


@contextmanager
def progress(description: str, *, total: float | None = None, quiet: bool = False) -> Iterator[Callable[..., None]]:
    """A progress bar on stderr (so ``--json`` on stdout stays clean); yields ``advance(n=1)``.

    Hidden when ``quiet`` or when stderr is not a terminal. With ``total=None`` it is a spinner.
    """
    from rich.progress import BarColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    if quiet or not stderr.is_terminal:

        def noop(*_: Any, **__: Any) -> None:
            return None

        yield noop
        return
    columns: Sequence[Any] = (
        SpinnerColumn(),
        TextColumn("[progress.description]{task.description}"),
        BarColumn(),
        TimeElapsedColumn(),
    )
    with Progress(*columns, console=stderr, transient=True) as bar:
        task = bar.add_task(description, total=total)

        def advance(n: float = 1, description: str | None = None) -> None:
            bar.update(task, advance=n, description=description or bar.tasks[0].description)

        yield advance
