"""Build and run the app of a role."""

from __future__ import annotations

from fastapi import FastAPI

from sdckit.errors import ConfigError
from sdckit.protocol.services._analyst import analyst_app
from sdckit.protocol.services._common import run_server
from sdckit.protocol.services._config import ServiceConfig
from sdckit.protocol.services._curator import curator_app
from sdckit.protocol.services._shuffler import shuffler_app


def build_app(cfg: ServiceConfig) -> FastAPI:
    """The app of ``cfg.role``."""
    if cfg.role == "shuffler":
        return shuffler_app(cfg)
    if cfg.role == "curator":
        return curator_app(cfg)
    if cfg.role == "analyst":
        return analyst_app(cfg)
    raise ConfigError(f"unknown role {cfg.role!r}")


def serve(cfg: ServiceConfig) -> None:
    """Run the service of ``cfg.role`` in the foreground (see :func:`._common.run_server`)."""
    run_server(build_app(cfg), cfg)
