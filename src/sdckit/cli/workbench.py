"""``sdckit app``: the release workbench in the browser (a thin layer over :mod:`sdckit.app`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer

from sdckit.cli._common import DATA_HELP, handles_errors, print_json, reads_data, stdout


def register(app: typer.Typer) -> None:
    app.command("app")(workbench)


@handles_errors
@reads_data
def workbench(
    data: Path | None = typer.Argument(None, help=DATA_HELP + " Default: none (load one in the page, or the bundled Adult data)."),
    host: str = typer.Option("127.0.0.1", "--host", help="Address to listen on (loopback by default; another needs --token)."),
    port: int = typer.Option(0, "--port", min=0, max=65535, help="Port (default: a free one)."),
    token: str | None = typer.Option(None, "--token", help="A secret every request must carry (required with a --host beyond loopback)."),
    no_browser: bool = typer.Option(False, "--no-browser", help="Print the address only; do not open a browser."),
    as_json: bool = typer.Option(False, "--json", help="Print the address as JSON ({\"url\": ...}); errors as JSON too."),
    read: Any = None,  # filled by @reads_data
) -> None:
    """Open the release workbench: load data, set roles, add masking steps, watch the risk change, export.

    The server runs on this machine only (loopback) unless --host says otherwise, and then only with
    --token; the data never leaves the machine. Stop it with Ctrl+C.
    """
    # lazy: sdckit --help stays fast
    from sdckit.errors import ParameterError

    loopback = host in ("127.0.0.1", "localhost", "::1")
    if not loopback and not token:
        raise ParameterError(
            f"--host {host} makes the workbench (and the data in it) reachable from other machines; give a secret "
            "with --token (e.g. --token $(python -c 'import secrets; print(secrets.token_urlsafe())')), or leave --host out."
        )
    if token is not None:
        # lazy: sdckit --help stays fast
        from sdckit.app._security import check_token

        check_token(token)
    # lazy: sdckit --help stays fast
    from sdckit._io._optional import require

    for module in ("fastapi", "uvicorn"):
        require(module, extra="app", what="sdckit app")
    if port:
        # lazy: sdckit --help stays fast
        from sdckit.cli._common import check_port_free

        check_port_free(host, port)
    initial = None
    options: dict[str, Any] = {}
    if data is not None:
        if not data.exists() and str(data).lower() != "adult":
            # lazy: sdckit --help stays fast
            from sdckit.errors import FileNotFoundInputError

            raise FileNotFoundInputError(str(data))
        initial = str(data)
        # lazy: sdckit --help stays fast
        from sdckit._io import ReadOptions

        if read is not None and read != ReadOptions():
            # lazy: sdckit --help stays fast
            from sdckit.app._workspace import read_options

            options = read_options({"separator": read.separator, "encoding": read.encoding, "decimal": read.decimal,
                                    "na_values": ",".join(read.na_values)})

    def ready(url: str) -> None:
        if as_json:
            print_json({"url": url, "host": host, "token_required": token is not None})
        else:
            stdout.print(f"sdckit app: [bold]{url}[/]  (Ctrl+C stops it; the data stays on this machine)", highlight=False)
        if not no_browser:
            # lazy: sdckit --help stays fast
            import webbrowser

            webbrowser.open(url)

    # lazy: sdckit --help stays fast
    from sdckit.app import serve

    serve(initial=initial, read=options, host=host, port=port, token=token, on_ready=ready)
