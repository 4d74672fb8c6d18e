"""The protocol as web services: one FastAPI app per role, SQLite storage (shuffler replicas: PostgreSQL shared, SQLite pools), a config file each.

Start one with ``sdckit protocol serve shuffler|curator|analyst --config FILE`` (or
``python -m sdckit.protocol.services ROLE --config FILE``). One module per role (:mod:`._shuffler`, :mod:`._curator`, :mod:`._analyst`) and :mod:`._common`.
"""

from sdckit.protocol.services import _check_extra  # noqa: F401 - first: names the extra in one line when missing
from sdckit.protocol.services._analyst import analyst_app
from sdckit.protocol.services._config import ROLES, Role, ServiceConfig, load_config
from sdckit.protocol.services._curator import curator_app
from sdckit.protocol.services._pgstore import PostgresShufflerStore, open_shuffler_store
from sdckit.protocol.services._serve import build_app, serve
from sdckit.protocol.services._shuffler import shuffler_app
from sdckit.protocol.services._store import AnalystStore, CuratorStore, ShufflerStore

__all__ = [
    "ROLES",
    "AnalystStore",
    "CuratorStore",
    "PostgresShufflerStore",
    "Role",
    "ServiceConfig",
    "ShufflerStore",
    "analyst_app",
    "build_app",
    "curator_app",
    "load_config",
    "open_shuffler_store",
    "serve",
    "shuffler_app",
]
