"""The protocol as web services: one FastAPI app per role, SQLite storage, a config file each.

Start one with ``sdckit protocol serve shuffler|curator|analyst --config FILE`` (or
``python -m sdckit.protocol.services ROLE --config FILE``). See :mod:`._apps` for the endpoints.
"""

from sdckit.protocol.services._apps import analyst_app, build_app, curator_app, serve, shuffler_app
from sdckit.protocol.services._config import ROLES, Role, ServiceConfig, load_config
from sdckit.protocol.services._store import AnalystStore, CuratorStore, ShufflerStore

__all__ = [
    "ROLES",
    "AnalystStore",
    "CuratorStore",
    "Role",
    "ServiceConfig",
    "ShufflerStore",
    "analyst_app",
    "build_app",
    "curator_app",
    "load_config",
    "serve",
    "shuffler_app",
]
