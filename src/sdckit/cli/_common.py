"""What every command shares: error handling, JSON output, consoles, progress bars, parsing."""

from __future__ import annotations

import errno
import functools
import inspect
import json
import re
import socket
import sys
import time
import warnings
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, ParamSpec, TypeVar

import typer
from rich.console import Console
from rich.markup import escape
from typer._click import exceptions as click  # typer vendors click (0.26+)

from sdckit.cli._exit import ExitCode
from sdckit.errors import SdcError, SdcWarning

P = ParamSpec("P")
R = TypeVar("R")

stdout = Console()
stderr = Console(stderr=True)

JSON_HELP = "Print the result as JSON (stable keys) instead of tables."

DATA_HELP = (  # rich markup: the backslash keeps "[formats]" from being read as a tag
    "A data file: CSV, TSV, Parquet, JSON lines (.gz allowed); .xlsx/.ods, SPSS .sav, Stata .dta, "
    "SAS .sas7bdat/.xpt, R .rds/.RData with sdckit\\[formats]."
)

PLOT_SUFFIXES = (".svg", ".png", ".pdf")

KEEP_ORDER_HELP = (
    "Write the rows in the input's order. By default they are shuffled (OS entropy): rows kept in input "
    "order link every released row to its input row by position."
)


def _cli_words(message: str) -> str:
    """A library message in the words of the command line: ``decimal=','`` -> ``--decimal ','``,
    ``missing='drop'`` -> ``--missing drop``."""
    message = re.sub(r"\bPass missing=(['\"])(\w+)\1", r"Pass --missing \2", message)
    message = re.sub(r" \((?:separator|encoding|decimal)=[^)]* in Python\)", "", message)  # the option is named already
    return re.sub(r"\b(separator|encoding|decimal)=", lambda m: f"--{m.group(1)} ", message)


def split_fix(message: str) -> tuple[str, str | None]:
    """``("what is wrong.", "what to do.")`` from an error text: its first sentence is the problem,
    the sentences after it the fix (None when there is only one)."""
    text = message.strip()
    parts = re.split(r"(?<=[.;:!?])\s+(?=[A-Z`'\"(])", text, maxsplit=1)
    if len(parts) < 2:
        parts = re.split(r";\s+|,\s+(?=e\.g\.)", text, maxsplit=1)
    return (parts[0], parts[1]) if len(parts) == 2 else (text, None)


def error_payload(kind: str, message: str) -> dict[str, Any]:
    """The ``--json`` form of an error: ``{"error": {"type", "message", "fix"}}``."""
    _, fix = split_fix(message)
    if fix is None and kind == "UsageError":
        fix = "Run the command with --help to see the options it takes."
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
        # narwhals' notice that its Dask support moves to a package of its own: about narwhals'
        # packaging, nothing the user can act on in a release run
        warnings.filterwarnings("ignore", message=".*narwhals-dask.*", category=FutureWarning)
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
            text = _cli_words(str(err))
            if as_json:
                print_json(error_payload(type(err).__name__, text))
            else:
                stderr.print(f"[bold red]Error:[/] {escape(text)}", highlight=False, soft_wrap=True)
            raise typer.Exit(code=ExitCode.INPUT_ERROR) from None
        except click.UsageError as err:  # raised by the command body: still exit 2
            if not as_json:
                raise
            print_json(error_payload("UsageError", _usage_text(err)))
            raise typer.Exit(code=err.exit_code) from None


def _usage_text(err: click.UsageError) -> str:
    hint = err.param_hint if isinstance(err, click.BadParameter) else None
    if isinstance(err, click.BadParameter) and hint is None and err.param is not None:
        hint = err.param.get_error_hint()
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
    # lazy: sdckit --help stays fast
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


def k_option(value: int | None) -> int | None:
    """A ``--k`` callback: k >= 2, with the message every command and the pipeline give."""
    if value is not None and value < 2:
        # lazy: sdckit --help stays fast
        from sdckit._checks import k_message

        raise typer.BadParameter(k_message(value).replace("k=", "", 1))
    return value


def check_suffix(path: Path, suffixes: Sequence[str], option: str) -> None:
    """Refuse an output file whose ending the command cannot write (a usage error, exit 2)."""
    if not any(path.name.lower().endswith(s) for s in suffixes):
        choices = ", ".join(suffixes[:-1]) + " or " + suffixes[-1] if len(suffixes) > 1 else suffixes[0]
        raise typer.BadParameter(f"{path.name}: give a {choices} file", param_hint=option)


def check_plot_path(path: Path, *, inputs: Sequence[Path] = ()) -> None:
    """Refuse a ``--plot`` file of another type or over an input file; call it before the work."""
    # lazy: sdckit --help stays fast
    from sdckit._io import check_output_path

    check_suffix(path, PLOT_SUFFIXES, "--plot")
    check_output_path(path, inputs=inputs)


def check_command_outputs(
    *, files: Sequence[Path | None] = (), reports: Sequence[Path | None] = (), inputs: Sequence[Any] = ()
) -> None:
    """Before any work: every output of a command (``files``, and each HTML report with its JSON
    sidecar) resolved and checked against every input and each other (:func:`sdckit._io.check_outputs`)."""
    # lazy: sdckit --help stays fast
    from sdckit._io import check_outputs
    from sdckit.report import Report

    outs: list[Path | None] = list(files)
    for report in reports:
        if report is not None:
            outs.extend(Report.outputs(report))
    check_outputs(outs, inputs, make_folders=True)  # a missing folder is created (if its parent is writable)


def shuffle_rows(frame: Any, *, keep_order: bool = False, seed: int | None = None) -> tuple[Any, Any]:
    """``(rows in random order, the order)``: released row i is input row ``order[i]``. OS entropy
    unless ``seed`` (a reproduction); ``keep_order`` returns the frame as it is and ``None``."""
    if keep_order or frame.height < 2:
        return frame, None
    # lazy: sdckit --help stays fast
    import numpy as np

    order = np.random.default_rng(seed).permutation(frame.height)
    return frame[order], order


def order_note(keep_order: bool) -> str:
    """What the output says about the order of its rows."""
    if keep_order:
        return "rows in the input's order (--keep-order): anyone holding the input links them by position"
    return "rows shuffled (OS entropy; --keep-order to keep the input's order)"


def write_release(
    release: Any, out: Path, *, data: Path, frame: Any, read: Any = None, keep_order: bool = False,
    seed: int | None = None,
) -> bool:
    """Write a command's release, its rows shuffled unless ``keep_order`` (returns True when shuffled);
    a ``.sav``/``.dta`` one gets the input file's labels and declared missing values, and each cell
    the command set to missing is declared as the suppression code."""
    # lazy: sdckit --help stays fast
    from sdckit._io import write_table

    labels = None
    if out.name.lower().endswith((".sav", ".dta")):
        # lazy: sdckit --help stays fast
        from sdckit._io._survey import SurveyLabels, read_labels

        mode = getattr(read, "labels", "labels")
        labels = (read_labels(data, labels=mode) or SurveyLabels()).select(release.columns)
        if frame.height == release.height:
            labels = labels.with_suppressed({
                c: release[c].is_null().to_numpy() & ~frame[c].is_null().to_numpy()
                for c in release.columns if c in frame.columns
            })
    release, order = shuffle_rows(release, keep_order=keep_order, seed=seed)
    if labels is not None and order is not None:
        labels = labels.with_suppressed({c: m[order] for c, m in labels.suppressed.items()})
    write_table(release, out, labels=labels)
    return order is not None


def save_figure(fig: Any, path: Path, **kwargs: Any) -> None:
    """Save a matplotlib figure atomically (a temporary file renamed into place)."""
    # lazy: sdckit --help stays fast
    from sdckit._io import atomic_output

    with atomic_output(path) as temp:
        fig.savefig(temp, format=path.suffix.lstrip(".").lower(), **kwargs)


@contextmanager
def progress(
    description: str, *, total: float | None = None, quiet: bool = False, lines_when_piped: bool = False
) -> Iterator[Callable[..., None]]:
    """A progress bar on stderr (so ``--json`` on stdout stays clean); yields ``advance(n=1)``.

    Hidden when ``quiet``. When stderr is not a terminal (piped, a log file) it is hidden too, or,
    with ``lines_when_piped``, one plain line per stage (``advance(description=...)``) with the
    time elapsed. With ``total=None`` it is a spinner.
    """
    # lazy: sdckit --help stays fast
    from rich.progress import BarColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    if not quiet and not stderr.is_terminal and lines_when_piped:
        start = time.perf_counter()
        stderr.print(f"{description}: started", markup=False, highlight=False, soft_wrap=True)

        def line(n: float = 1, description: str | None = None) -> None:
            if description:
                stderr.print(f"  {time.perf_counter() - start:6.1f} s  {description}", markup=False, highlight=False,
                             soft_wrap=True)

        yield line
        stderr.print(f"{description}: done in {time.perf_counter() - start:.1f} s", markup=False, highlight=False,
                     soft_wrap=True)
        return
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


# --- reading data files: the same four options on every command that reads one -------------------

_READ_PARAMS: tuple[tuple[str, Any, Any], ...] = (
    ("separator", str | None, typer.Option(
        None, "--separator", help="Field separator of a text file, e.g. ';' or '\\t' (default: sniffed).",
        rich_help_panel="Reading the file")),
    ("encoding", str, typer.Option(
        "utf-8", "--encoding", help="Text encoding, e.g. latin-1 or cp1252.", rich_help_panel="Reading the file")),
    ("decimal", str, typer.Option(
        ".", "--decimal", help="Decimal mark of a text file: '.' or ','.", rich_help_panel="Reading the file")),
    ("na_values", str, typer.Option(
        ",NA,NaN", "--na-values", help="Comma-separated strings read as missing (default: empty, NA, NaN).",
        rich_help_panel="Reading the file")),
    ("labels", str, typer.Option(
        "labels", "--labels", help="SPSS/Stata/SAS files: a labelled variable shows its value labels ('labels') or "
        "its codes ('codes').", rich_help_panel="Reading the file")),
)


def reads_data(func: Callable[..., R]) -> Callable[..., R]:
    """Give a command ``--separator``, ``--encoding``, ``--decimal``, ``--na-values`` and ``--labels``; the
    command receives them as one ``read`` keyword (a :class:`~sdckit._io.ReadOptions`).

    Put it under :func:`handles_errors` (a bad value is then one red line, exit 1)."""
    sig = inspect.signature(func)
    kept = [p for p in sig.parameters.values() if p.name != "read"]
    extra = [
        inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=option, annotation=annotation)
        for name, annotation, option in _READ_PARAMS
    ]

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> R:
        # lazy: sdckit --help stays fast
        from sdckit._io import ReadOptions
        from sdckit.errors import ParameterError

        na = kwargs.pop("na_values")
        try:
            read = ReadOptions(
                separator=_separator(kwargs.pop("separator")),
                encoding=kwargs.pop("encoding"),
                decimal=kwargs.pop("decimal"),
                na_values=tuple(v.strip() for v in na.split(",")) if na else ("",),
                labels=kwargs.pop("labels"),
            )
        except ParameterError as err:  # a usage error: name the option, not the Python parameter
            raise typer.BadParameter(_cli_words(str(err))) from None
        return func(*args, read=read, **kwargs)

    wrapper.__signature__ = sig.replace(parameters=kept + extra)  # type: ignore[attr-defined]
    wrapper.__annotations__ = {
        **{k: v for k, v in func.__annotations__.items() if k != "read"},
        **{name: annotation for name, annotation, _ in _READ_PARAMS},
    }
    return wrapper


def _separator(value: str | None) -> str | None:
    """``\\t`` and ``tab`` as typed on a command line mean the tab character."""
    if value is None:
        return None
    return "\t" if value in ("\\t", "tab", "TAB") else value


def data_source(path: Path, read: Any) -> Any:
    """What a library function should read: the path itself when the reading options are the
    defaults (its name then shows in the output), else the file read with them (a polars frame)."""
    # lazy: sdckit --help stays fast
    from sdckit._io import ReadOptions, read_path

    return str(path) if read == ReadOptions() else read_path(path, read)


def read_table(path: Path, read: Any, *, drop_missing_in: Sequence[str] | None = None) -> tuple[Any, int]:
    """The file as a polars frame and the number of rows dropped: with ``drop_missing_in`` (a list,
    empty for all columns) the rows with a null or NaN there are left out and counted."""
    # lazy: sdckit --help stays fast
    import polars as pl

    from sdckit._io import read_path

    frame = read_path(path, read)
    if drop_missing_in is None:
        return frame, 0
    cols = list(drop_missing_in) or frame.columns
    # lazy: sdckit --help stays fast
    import narwhals as nw

    from sdckit._io import check_columns

    check_columns(nw.from_native(frame, eager_only=True), cols)
    bad = pl.any_horizontal(
        [pl.col(c).is_null() | (pl.col(c).is_nan() if frame.schema[c].is_float() else pl.lit(False)) for c in cols]
    )
    kept = frame.filter(~bad)
    return kept, frame.height - kept.height


def check_port_free(host: str, port: int) -> None:
    """Raise one clear error when ``host:port`` cannot be bound (in use, or not this machine's)."""
    # lazy: sdckit --help stays fast
    from sdckit.errors import ParameterError

    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as uvicorn does
        try:
            sock.bind((host, port))
        except OSError as err:
            if err.errno == errno.EADDRINUSE:
                raise ParameterError(
                    f"port {port} on {host} is already in use (another service, or this one still running). "
                    "Stop that process, or set another port in the config file."
                ) from None
            raise ParameterError(
                f"cannot listen on {host}:{port}: {err.strerror or err}. Check host and port in the config file."
            ) from None
