"""Service configuration files (YAML or JSON), one per role."""

from __future__ import annotations

import hmac
import json
import math
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
    """Pool size (messages) at which the shuffler releases an open round."""
    min_batch: int = 0
    """Fewest users whose messages the shuffler forwards at once, even after a flush (0: the batch
    threshold). An open round keeps this many users in reserve, so its closing batch is not small."""
    at_close: Literal["hold", "drop"] = "hold"
    """What happens to a flushed round's pool of fewer than ``min_batch`` users: held until enough
    late users join, or dropped (counted as ``dropped``)."""
    forward_chunk: int = 2000
    """Messages per forwarding request (also capped by ``forward_max_bytes``)."""
    forward_max_bytes: int = 4 * 1024 * 1024
    """Largest forwarding request body (bytes); keep it under the receivers' ``max_body_bytes``."""
    quarantine_after: int = 20
    """A pool the next hop refuses this many times in a row is quarantined (admin: inspect, retry, drop)."""
    pool_ttl_seconds: float = 30 * 86_400.0
    """A registered collection expires this long after registration, counted on the shuffler's
    running time (monotonic clock; a jump of the wall clock changes nothing; the time left is stored
    at each clean stop, so after a crash the run since the last stop is not counted): it then admits no
    submission, forwards what it holds, and is forgotten once its pool is empty (acknowledged
    messages are never dropped by expiry; spent credentials are kept)."""
    close_after_seconds: float | None = None
    """Shuffler: a round closes (as by the admin's flush) this long after its first message (None:
    only by the flush). Users who arrive later are held until ``min_batch`` of them arrived."""
    close_after_users: int | None = None
    """Shuffler: a round closes once it admitted this many users (None: no count)."""
    credential_rate: int = 10
    """Requests per minute allowed per credential (and per invite); more get 429."""
    curator_verify_key: str = ""
    """The curator's Ed25519 verification key (``ed25519:...``, its ``key.json.verify``; shuffler only)."""
    analyst_verify_key: str = ""
    """The analyst's Ed25519 verification key (shuffler only)."""
    header_timeout: float = 10.0
    """Seconds a connection may take to send a request's head; slower ones are closed."""
    idle_timeout: float = 30.0
    """Seconds a connection may stay silent in the middle of a request; then it is closed."""
    poll_seconds: float = 0.2
    """How often the shuffler checks its pools."""
    max_body_bytes: int = 8 * 1024 * 1024
    """Largest request body accepted (bytes); larger gets 413."""
    max_batch_messages: int = 100_000
    """Largest number of messages in one request."""
    store: str = ""
    """Shuffler: empty for the embedded SQLite store (one process), or ``postgresql://...`` for
    replicas: collections, invites, spent credentials and closed rounds shared in PostgreSQL, each
    replica's pool in its own ``<data_dir>/shuffler.sqlite3`` (or the ``SDCKIT_STORE`` variable)."""
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
            if name in d and not isinstance(d[name], str):
                raise ConfigError(
                    f"{name} is a {type(d[name]).__name__}, not text; quote it in YAML "
                    f'({name}: "...") or use {name}_file'
                )
            path = d.pop(f"{name}_file", None)
            if path:
                d[name] = _resolve(base, str(path)).read_text().strip()
            env = os.environ.get(f"SDCKIT_{name.upper()}")
            if env and not d.get(name):
                d[name] = env
        if not d.get("store") and os.environ.get("SDCKIT_STORE"):
            d["store"] = os.environ["SDCKIT_STORE"]
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
        for name in ("admin_token", "relay_token"):
            check_token(name, getattr(self, name))
        if hmac.compare_digest(self.admin_token.encode(), self.relay_token.encode()):
            raise ConfigError(
                "admin_token and relay_token are the same; give each its own random token (a relay "
                "must not be able to act as an admin)"
            )
        if self.role == "shuffler":
            if not (self.curator_url and self.analyst_url):
                raise ConfigError("a shuffler needs curator_url and analyst_url to forward to")
            if not (self.curator_verify_key and self.analyst_verify_key):
                raise ConfigError(
                    "a shuffler needs curator_verify_key and analyst_verify_key (the 'ed25519:...' "
                    "line of each one's key.json.verify) to check what it relays"
                )
        if self.store and (
            self.role != "shuffler" or not self.store.startswith(("postgresql://", "postgres://"))
        ):
            raise ConfigError(
                f"store={self.store!r}: only a shuffler takes a store, a postgresql://... URL (its replicas "
                "share it); leave it empty for the embedded SQLite store"
            )
        if self.batch_threshold < 1 or self.forward_chunk < 1 or self.max_body_bytes < 1024:
            raise ConfigError("batch_threshold and forward_chunk must be >= 1, max_body_bytes >= 1024")
        if self.min_batch < 0 or self.forward_max_bytes < 1024 or self.quarantine_after < 1:
            raise ConfigError("min_batch must be >= 0, forward_max_bytes >= 1024, quarantine_after >= 1")
        if self.at_close not in ("hold", "drop"):
            raise ConfigError(f"at_close={self.at_close!r}: use hold or drop")
        if not (self.header_timeout > 0 and self.idle_timeout > 0 and self.pool_ttl_seconds > 0):
            raise ConfigError("header_timeout, idle_timeout and pool_ttl_seconds must be > 0")

    @property
    def min_batch_users(self) -> int:
        """``min_batch`` with 0 read as the batch threshold."""
        return self.min_batch or self.batch_threshold

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


_ALPHABETS = (
    (str.islower, 26),
    (str.isupper, 26),
    (str.isdigit, 10),
)


def token_bits(token: str) -> float:
    """A generous estimate of a token's entropy: length x log2 of the alphabet its character
    classes span (lower, upper, digits, other: 32 symbols), capped by the distinct characters used."""
    if not token:
        return 0.0
    size = sum(n for test, n in _ALPHABETS if any(test(c) for c in token))
    if any(not (c.isascii() and c.isalnum()) for c in token):
        size += 32
    return len(token) * math.log2(max(2, min(size, len(set(token)) ** 2)))


def check_token(name: str, token: str) -> None:
    """Refuse a missing, whitespace-only or guessable (< 128 bits) bearer token."""
    fix = "generate one with `python -c 'import secrets; print(secrets.token_urlsafe(32))'`"
    if not token.strip():
        raise ConfigError(f"{name} is missing or only whitespace; {fix}")
    if token != token.strip() or any(c.isspace() for c in token):
        raise ConfigError(f"{name} contains whitespace; {fix}")
    if token_bits(token) < 128:
        raise ConfigError(f"{name} carries fewer than 128 bits (about {token_bits(token):.0f}); {fix}")


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
