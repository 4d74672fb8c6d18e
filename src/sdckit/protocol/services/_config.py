"""Service configuration files (YAML or JSON), one per role."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any, Literal, TypeAlias

import yaml

from sdckit.errors import ConfigError, FileNotFoundInputError

Role: TypeAlias = Literal["shuffler", "curator", "analyst"]
ROLES: tuple[Role, ...] = ("shuffler", "curator", "analyst")


@dataclass(frozen=True, kw_only=True)
class ServiceConfig:
    """Everything one service needs. Relative paths are relative to the config file's folder.

    Tokens may be given inline (``admin_token``) or, better, in a file (``admin_token_file``) or
    the environment (``SDCKIT_ADMIN_TOKEN``, ``SDCKIT_RELAY_TOKEN``).
    """

    role: Role
    key_file: str
    """The role's HPKE private key (``sdckit protocol keygen``)."""
    data_dir: str
    """Folder of the SQLite store (``<role>.sqlite3``) and the log (``<role>.log``)."""
    admin_token: str = ""
    """Bearer token of the admin endpoints."""
    relay_token: str = ""
    """Bearer token between roles: the shuffler sends it, the curator and the analyst require it."""
    host: str = "127.0.0.1"
    port: int = 8470
    curator_url: str = ""
    """Where the shuffler forwards round 1 (shuffler only)."""
    analyst_url: str = ""
    """Where the shuffler forwards round 2 (shuffler only)."""
    batch_threshold: int = 100
    """Smallest pool (messages) the shuffler releases, unless the round is flushed."""
    forward_chunk: int = 2000
    """Messages per forwarding request."""
    poll_seconds: float = 0.2
    """How often the shuffler checks its pools."""
    max_body_bytes: int = 8 * 1024 * 1024
    """Largest request body accepted (bytes); larger gets 413."""
    max_batch_messages: int = 100_000
    """Largest number of messages in one request."""
    sqlite_synchronous: Literal["NORMAL", "FULL"] = "NORMAL"
    """``NORMAL`` survives a killed process (WAL); ``FULL`` also survives power loss."""

    @classmethod
    def from_mapping(cls, raw: Mapping[str, Any], *, base: Path | None = None) -> ServiceConfig:
        known = {f.name for f in fields(cls)}
        extra = {k for k in raw if k not in known and k not in ("admin_token_file", "relay_token_file")}
        if extra:
            raise ConfigError(f"unknown key(s) {sorted(extra)} in the service config; known: {sorted(known)}")
        d = dict(raw)
        for name in ("admin_token", "relay_token"):
            path = d.pop(f"{name}_file", None)
            if path:
                d[name] = _resolve(base, str(path)).read_text().strip()
            env = os.environ.get(f"SDCKIT_{name.upper()}")
            if env and not d.get(name):
                d[name] = env
        for name in ("key_file", "data_dir"):
            if name in d:
                d[name] = str(_resolve(base, str(d[name])))
        if d.get("role") not in ("shuffler", "curator", "analyst"):
            raise ConfigError(f"role={d.get('role')!r}: use shuffler, curator or analyst")
        try:
            cfg = cls(**d)
        except TypeError as err:
            raise ConfigError(f"service config: {err}") from None
        cfg.check()
        return cfg

    def check(self) -> None:
        """Raise :class:`ConfigError` for a config that cannot work."""
        if len(self.admin_token) < 16:
            raise ConfigError(
                "admin_token is missing or shorter than 16 characters; generate one with "
                "`python -c 'import secrets; print(secrets.token_urlsafe(32))'`"
            )
        if len(self.relay_token) < 16:
            raise ConfigError("relay_token is missing or shorter than 16 characters (shared by the roles)")
        if self.role == "shuffler" and not (self.curator_url and self.analyst_url):
            raise ConfigError("a shuffler needs curator_url and analyst_url to forward to")
        if self.batch_threshold < 1 or self.forward_chunk < 1 or self.max_body_bytes < 1024:
            raise ConfigError("batch_threshold and forward_chunk must be >= 1, max_body_bytes >= 1024")

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _resolve(base: Path | None, path: str) -> Path:
    p = Path(path).expanduser()
    return p if p.is_absolute() or base is None else (base / p)


def load_config(path: str | os.PathLike[str], *, role: str | None = None) -> ServiceConfig:
    """Read a YAML or JSON service config; ``role`` (when given) must match the file's role."""
    p = Path(path)
    if not p.exists():
        raise FileNotFoundInputError(str(path))
    try:
        raw = json.loads(p.read_text()) if p.suffix == ".json" else yaml.safe_load(p.read_text())
    except (json.JSONDecodeError, yaml.YAMLError) as err:
        raise ConfigError(f"cannot parse {str(p)!r}: {err}") from None
    if not isinstance(raw, Mapping):
        raise ConfigError(f"{str(p)!r} must hold a mapping of settings")
    if role is not None:
        raw = {"role": role, **raw}
        if raw["role"] != role:
            raise ConfigError(f"{str(p)!r} configures a {raw['role']}, not a {role}")
    return ServiceConfig.from_mapping(raw, base=p.parent)
