"""The ``sdckit`` command line: a thin layer that parses, calls the library and renders.

Each command group lives in its own module with a ``register(app)`` function; this module only
assembles them. Exit codes: 0 success, 1 an error in the input or parameters (one red line, no
traceback), 2 a usage error (unknown option, bad value for an option).
"""

from __future__ import annotations

import typer

from sdckit import __version__
from sdckit.cli import anonymize, describe, microagg, protocol, report, risk, spectral

app = typer.Typer(
    name="sdckit",
    help="Statistical disclosure control with measured privacy and measured utility.",
    no_args_is_help=True,
    pretty_exceptions_show_locals=False,  # locals can hold microdata
    add_completion=False,
    rich_markup_mode="rich",
)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"sdckit {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: bool = typer.Option(
        False, "--version", callback=_version, is_eager=True, help="Print the version and exit."
    ),
) -> None:
    """Statistical disclosure control with measured privacy and measured utility."""


for _module in (describe, risk, protocol, spectral, microagg, report, anonymize):
    _module.register(app)


def main() -> None:
    """Entry point of the ``sdckit`` script."""
    app()


__all__ = ["app", "main"]
