"""The ``sdckit`` command line: a thin layer that parses, calls the library and renders.

Each command group lives in its own module with a ``register(app)`` function; this module only
lists them in :data:`COMMANDS` and loads a module when one of its commands runs, so that
``sdckit --help`` imports neither numpy nor polars nor scipy. To add a command, write its module
(with ``register``) and add one line to :data:`COMMANDS`: the name, the module, the one-line help
shown by ``sdckit --help``.

Exit codes (:class:`sdckit.cli._exit.ExitCode`, the one place they are defined): 0 success (for
``run``: released); 1 an error in the input or parameters (one red line, or with ``--json`` an
``{"error": {...}}`` object on stdout; no traceback); 2 a usage error (unknown option, bad value for
an option); 3 refused: the release is over its budget (the report is written, the data file is not);
70 an internal error, i.e. a bug (a short message; the traceback with ``SDCKIT_DEBUG=1``).
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Sequence
from typing import Any

import typer
from typer._click import core as click  # typer vendors click (0.26+): its classes, not click's
from typer._click import exceptions as click_exceptions
from typer.core import Abort, TyperCommand, TyperGroup, TyperOption

from sdckit.cli._exit import EXIT_CODES_HELP, ExitCode, internal_error

COMMANDS: dict[str, tuple[str, str]] = {
    # name: (module that registers it, one-line help of `sdckit --help`)
    "describe": ("sdckit.cli.describe", "Rows, columns, types, distinct and missing values per column."),
    "datasets": ("sdckit.cli.datasets", "The bundled data sets: list them, export one to a file."),
    "risk": ("sdckit.cli.risk", "k-anonymity, uniques, exposure and its bounds from marginals, entropy."),
    "plan": ("sdckit.cli.risk", "Choose the columns to release so at most --budget of users are in groups < k."),
    "protocol": ("sdckit.cli.protocol", "The shuffle protocol: keys, services, an end-to-end simulation."),
    "spectral": ("sdckit.cli.spectral", "Private PCA: separation U(t), leakage, the privacy-utility curve, design."),
    "noise": ("sdckit.cli.spectral", "Add local noise of variance t to each answer and write the result."),
    "recode": ("sdckit.cli.anonymize", "Global recoding and top/bottom coding: intervals, mappings, hierarchy levels."),
    "suppress": ("sdckit.cli.anonymize", "Local suppression to k: the fewest key cells set to missing (a wildcard)."),
    "pram": ("sdckit.cli.anonymize", "Post-randomise categorical columns (invariant PRAM or a given matrix)."),
    "microaggregate": ("sdckit.cli.microagg", "Microaggregate numeric columns and print the utility table."),
    "report": ("sdckit.cli.report", "Write the self-contained HTML report (risk, plan, microaggregation, PCA)."),
    "run": ("sdckit.cli.report", "Run a release pipeline file: measure, plan, mask, write data and report."),
    "compare": ("sdckit.cli.compare", "Compare candidate releases (masking, DP synthetic data) on one risk-utility map."),
    "app": ("sdckit.cli.workbench", "The release workbench in the browser: roles, steps, risk before/after, undo, export."),
}
"""Every top-level command: name -> (module with ``register(app)``, one-line help)."""


def load_command(name: str) -> click.Command:
    """Import the module of command ``name`` and return its click command (a group for groups)."""
    module = importlib.import_module(COMMANDS[name][0])
    sub = typer.Typer(rich_markup_mode="rich", pretty_exceptions_show_locals=False)
    sub.callback()(lambda: None)  # a callback keeps a one-command module a group
    module.register(sub)
    group = typer.main.get_command(sub)
    assert isinstance(group, TyperGroup)
    command = group.commands[name]
    command.short_help = command.short_help or COMMANDS[name][1]
    return command


class _Flag(TyperOption):
    """A boolean flag that skips typer's coercion layer (which imports pydantic, ~0.1 s)."""

    def process_value(self, ctx: click.Context, value: Any) -> Any:
        value = bool(value)
        return self.callback(ctx, self, value) if self.callback is not None else value


class _LazyGroup(TyperGroup):
    """The root group: commands come from :data:`COMMANDS`, imported only when run (or asked for
    their own help); the root help lists them from the table without importing anything."""

    _listing = False
    _loaded: dict[str, click.Command]

    def get_help_option(self, ctx: click.Context) -> TyperOption | None:
        option = super().get_help_option(ctx)
        if option is not None and type(option) is TyperOption:
            option.__class__ = _Flag  # the root's --help (None when absent) is parsed on every call
        return option

    def list_commands(self, ctx: click.Context) -> list[str]:
        return list(COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in COMMANDS:
            return None
        if self._listing:  # the root --help: the table's line, nothing imported
            return TyperCommand(cmd_name, help=COMMANDS[cmd_name][1], short_help=COMMANDS[cmd_name][1])
        loaded = self.__dict__.setdefault("_loaded", {})
        if cmd_name not in loaded:
            loaded[cmd_name] = load_command(cmd_name)
        return loaded[cmd_name]

    def main(
        self,
        args: Sequence[str] | None = None,
        prog_name: str | None = None,
        complete_var: str | None = None,
        standalone_mode: bool = True,
        windows_expand_args: bool = True,
        **kwargs: Any,
    ) -> Any:
        """As click's, except that a parsing error of a ``--json`` command line is printed as
        ``{"error": {...}}`` on stdout (same exit code, 2)."""
        # lazy: sdckit --help stays fast
        from sdckit.cli._common import json_requested, usage_error_as_json

        argv = list(sys.argv[1:] if args is None else args)
        if not standalone_mode or not json_requested(argv):
            return super().main(argv, prog_name, complete_var, standalone_mode=standalone_mode,
                                windows_expand_args=windows_expand_args, **kwargs)
        try:
            rv = super().main(argv, prog_name, complete_var, standalone_mode=False,
                              windows_expand_args=windows_expand_args, **kwargs)
        except click_exceptions.ClickException as err:
            usage_error_as_json(err)
            sys.exit(err.exit_code)
        except Abort:
            sys.exit(1)
        sys.exit(rv if isinstance(rv, int) else 0)

    def format_help(self, ctx: click.Context, formatter: Any) -> None:
        self._listing = True
        try:
            super().format_help(ctx, formatter)
        finally:
            self._listing = False


app = typer.Typer(
    name="sdckit",
    cls=_LazyGroup,
    help="Statistical disclosure control with measured privacy and measured utility.\n\n" + EXIT_CODES_HELP,
    no_args_is_help=True,
    pretty_exceptions_show_locals=False,  # locals can hold microdata
    add_completion=False,
    rich_markup_mode="rich",
)


def _version(value: bool) -> None:
    if value:
        # lazy: sdckit --help stays fast
        from sdckit import __version__

        typer.echo(f"sdckit {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: bool = typer.Option(
        False, "--version", callback=_version, is_eager=True, help="Print the version and exit."
    ),
) -> None:
    """Statistical disclosure control with measured privacy and measured utility."""


def main() -> None:
    """Entry point of the ``sdckit`` script: an exception that is not an sdckit error (a bug) exits
    :attr:`ExitCode.INTERNAL_ERROR` with a short message, never a traceback (unless ``SDCKIT_DEBUG=1``)."""
    try:
        app()
    except KeyboardInterrupt:
        sys.exit(130)  # the shell's code for Ctrl+C
    except Exception as err:
        # lazy: sdckit --help stays fast
        from sdckit.errors import SdcError

        if isinstance(err, SdcError):  # raised outside a command's error handling (e.g. while loading it)
            print(f"Error: {err}", file=sys.stderr)
            sys.exit(ExitCode.INPUT_ERROR)
        sys.exit(internal_error(err))


__all__ = ["COMMANDS", "ExitCode", "app", "load_command", "main"]
