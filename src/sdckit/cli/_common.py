"""What every command shares: error handling, JSON output, consoles, progress bars, parsing."""

from __future__ import annotations

import functools
import json
import sys
import warnings
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, ParamSpec, TypeVar

import typer
from rich.console import Console
from rich.progress import BarColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

from sdckit._io import check_output_path
from sdckit.errors import SdcError, SdcWarning
from sdckit.report import to_jsonable

P = ParamSpec("P")
R = TypeVar("R")

stdout = Console()
stderr = Console(stderr=True)

JSON_HELP = "Print the result as JSON (stable keys) instead of tables."

PLOT_SUFFIXES = (".svg", ".png", ".pdf")


@contextmanager
def user_errors() -> Iterator[None]:
    """Turn an :class:`SdcError` into one red line on stderr and exit code 1 (no traceback).

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
            stderr.print(f"[bold red]Error:[/] {err}", highlight=False, soft_wrap=True)
            raise typer.Exit(code=1) from None


def handles_errors(func: Callable[P, R]) -> Callable[P, R]:
    """Decorator form of :func:`user_errors` for command functions (keeps the signature)."""

    @functools.wraps(func)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        with user_errors():
            return func(*args, **kwargs)

    return wrapper


def print_json(payload: Any) -> None:
    """Write ``payload`` as JSON to stdout (numpy values converted, NaN as null; dates, decimals and
    other scalars a table can hold, e.g. an example value in ``describe``, as their text)."""
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
    check_suffix(path, PLOT_SUFFIXES, "--plot")
    check_output_path(path, inputs=inputs)


@contextmanager
def progress(description: str, *, total: float | None = None, quiet: bool = False) -> Iterator[Callable[..., None]]:
    """A progress bar on stderr (so ``--json`` on stdout stays clean); yields ``advance(n=1)``.

    Hidden when ``quiet`` or when stderr is not a terminal. With ``total=None`` it is a spinner.
    """
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
