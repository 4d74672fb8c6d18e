"""``sdckit app``: an interactive release workbench in the browser (``pip install 'sdckit[app]'``).

A local web server (FastAPI + uvicorn, loopback by default) with one page: load a file (anything
:func:`sdckit._io.read_data` reads) or the bundled Adult data, give each column a role (the
pipeline's guesses and flags shown), add, edit, reorder and remove masking steps, and see the
release re-measured after each change, before and after, with undo and redo; ask the planner and
apply its plan as steps; export the pipeline YAML that reproduces the screen with ``sdckit run``,
the released file (only within budget) and the HTML report.

Every figure is the pipeline's own: each state is a :class:`~sdckit.pipeline.PipelineConfig` run by
:func:`~sdckit.pipeline.run_pipeline` (the report built only on request) in a worker thread. Modules:
:mod:`._session` (the state, its undo/redo history and its YAML), :mod:`._forms` (the step forms,
from the step registry), :mod:`._jobs` (worker threads with progress and cancel), :mod:`._figures`
(what the page shows of a run), :mod:`._workspace` (one browser tab's session), :mod:`._server` (the
routes), :mod:`._docs` (the docs' step options table, from the registry), ``templates/`` and
``static/``.
"""

from __future__ import annotations

import socket
import threading
import time
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from fastapi import FastAPI

__all__ = ["create_app", "free_port", "serve"]


def create_app(**kwargs: Any) -> FastAPI:
    """The workbench as an ASGI app (see :func:`sdckit.app._server.create_app`)."""
    # lazy: the app extra (fastapi)
    from sdckit.app._server import create_app as _create

    return _create(**kwargs)


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port free on ``host`` now (the operating system's choice)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


def serve(
    *, initial: str | None = None, read: dict[str, Any] | None = None, host: str = "127.0.0.1", port: int = 0,
    token: str | None = None, on_ready: Any = None,
) -> None:
    """Serve the workbench until interrupted. ``port=0`` takes a free one; ``on_ready(url)`` is
    called once the address is known (the CLI prints it and opens the browser)."""
    # lazy: the app extra
    import uvicorn

    port = port or free_port(host)
    loopback = host in ("127.0.0.1", "localhost", "::1")
    app = create_app(initial=initial, read=read, token=token, check_host=loopback)
    config = uvicorn.Config(app, host=host, port=port, log_level="warning", access_log=False, lifespan="on")
    server = uvicorn.Server(config)
    shown = "127.0.0.1" if host in ("0.0.0.0", "::") else host
    url = f"http://{'[' + shown + ']' if ':' in shown else shown}:{port}/" + (f"?token={token}" if token else "")
    if on_ready is not None:
        def announce() -> None:
            while not server.started and not server.should_exit:
                time.sleep(0.05)
            if server.started:
                on_ready(url)

        threading.Thread(target=announce, daemon=True).start()
    server.run()
