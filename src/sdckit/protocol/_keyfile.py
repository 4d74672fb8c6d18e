"""Key files: the private key written with mode 0600, the public key beside it as ``<name>.pub``.

Format (JSON, one object): ``{"sdckit_key": 1, "suite": "x25519", "private": "<base64url>",
"public": "<suite>:<base64url>"}``; the ``.pub`` file holds the ``public`` string only.
"""

from __future__ import annotations

import base64
import json
import os
from pathlib import Path

from sdckit.errors import ConfigError, FileNotFoundInputError
from sdckit.protocol._crypto import PrivateKey, PublicKey, SuiteName

_VERSION = 1


def write_private_key(path: str | os.PathLike[str], key: PrivateKey, *, force: bool = False) -> Path:
    """Write ``key`` to ``path`` (created 0600, never world-readable even briefly) and its public
    key to ``path.pub``; refuse to overwrite unless ``force``. Returns the path of the public file."""
    p = Path(path)
    if p.exists() and not force:
        raise ConfigError(f"{str(p)!r} exists; pass force=True (--force) to replace the key.")
    payload = {
        "sdckit_key": _VERSION,
        "suite": key.suite,
        "private": base64.urlsafe_b64encode(key.to_bytes()).decode(),
        "public": key.public_key().to_text(),
    }
    flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC
    fd = os.open(p, flags, 0o600)  # mode applies at creation; chmod below covers an existing file
    try:
        os.fchmod(fd, 0o600)
        os.write(fd, (json.dumps(payload) + "\n").encode())
    finally:
        os.close(fd)
    pub = p.with_name(p.name + ".pub")
    pub.write_text(key.public_key().to_text() + "\n")
    return pub


def generate_key_file(
    path: str | os.PathLike[str], *, suite: SuiteName = "x25519", force: bool = False
) -> PublicKey:
    """Generate a key, write it with :func:`write_private_key`, return its public key."""
    key = PrivateKey.generate(suite)
    write_private_key(path, key, force=force)
    return key.public_key()


def read_private_key(path: str | os.PathLike[str]) -> PrivateKey:
    """Read a key file written by :func:`write_private_key`."""
    p = Path(path)
    if not p.exists():
        raise FileNotFoundInputError(str(path))
    try:
        payload = json.loads(p.read_text())
        if payload.get("sdckit_key") != _VERSION:
            raise ValueError("not an sdckit key file (version 1)")
        raw = base64.urlsafe_b64decode(payload["private"].encode())
        return PrivateKey.from_bytes(payload["suite"], raw)
    except (ValueError, KeyError, TypeError, AttributeError) as err:
        raise ConfigError(
            f"cannot read the key file {str(p)!r}: {err}. Create one with `sdckit protocol keygen`."
        ) from None
