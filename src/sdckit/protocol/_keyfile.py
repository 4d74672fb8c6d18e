"""Key files: the private keys written with mode 0600, the public keys beside them.

Format (JSON, one object): ``{"sdckit_key": 1, "suite": "x25519", "private": "<base64url>",
"public": "<suite>:<base64url>", "signing": "<base64url Ed25519 seed>", "verify":
"ed25519:<base64url>"}``. ``PATH.pub`` holds the HPKE ``public`` string, ``PATH.verify`` the Ed25519
verification key that devices pin to check documents the shuffler relays (:mod:`._signing`).

Files are created with ``O_CREAT | O_EXCL | O_NOFOLLOW`` (mode 0600 from the first byte), so a key is
never written through a symlink; ``force`` removes an existing regular file first and refuses a
symlink. A private key file readable by group or others is refused at load (``chmod 600``).
"""

from __future__ import annotations

import base64
import json
import os
import stat
from pathlib import Path

from cryptography.hazmat.primitives.asymmetric import ed25519

from sdckit.errors import ConfigError, FileNotFoundInputError
from sdckit.protocol._crypto import PrivateKey, PublicKey, SuiteName
from sdckit.protocol._signing import verify_key_to_text

_VERSION = 1


def _b64(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).decode()


def write_new_file(path: Path, data: bytes, mode: int, *, force: bool = False) -> None:
    """Create ``path`` holding ``data`` with ``mode``, never through a symlink; an existing
    regular file is replaced only with ``force``."""
    if path.is_symlink():
        raise ConfigError(
            f"{str(path)!r} is a symbolic link; refusing to write a key through it. "
            "Remove the link or give the real path."
        )
    if path.exists():
        if not force:
            raise ConfigError(f"{str(path)!r} exists; pass force=True (--force) to replace the key.")
        if not path.is_file():
            raise ConfigError(f"{str(path)!r} is not a regular file; refusing to replace it.")
        path.unlink()
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, mode)
    except FileExistsError:  # created (or linked) between the check and the open
        raise ConfigError(f"{str(path)!r} appeared while writing; refusing to overwrite it.") from None
    try:
        os.fchmod(fd, mode)  # the umask may have removed bits of a public file; never adds any
        os.write(fd, data)
    finally:
        os.close(fd)


def write_private_key(
    path: str | os.PathLike[str],
    key: PrivateKey,
    *,
    signing_key: ed25519.Ed25519PrivateKey | None = None,
    force: bool = False,
) -> Path:
    """Write ``key`` (and an Ed25519 signing key, fresh unless given) to ``path`` (0600), the public
    key to ``path.pub`` and the verification key to ``path.verify``; refuse to overwrite unless
    ``force``, and always refuse a symlink. Returns the path of the public file."""
    p = Path(path)
    sk = signing_key or ed25519.Ed25519PrivateKey.generate()
    payload: dict[str, object] = {
        "sdckit_key": _VERSION,
        "suite": key.suite,
        "private": _b64(key.to_bytes()),
        "public": key.public_key().to_text(),
        "signing": _b64(sk.private_bytes_raw()),
        "verify": verify_key_to_text(sk.public_key()),
    }
    pub, ver = p.with_name(p.name + ".pub"), p.with_name(p.name + ".verify")
    for q in (pub, ver):  # check all three before writing any
        if q.is_symlink():
            raise ConfigError(f"{str(q)!r} is a symbolic link; refusing to write a key through it.")
    write_new_file(p, (json.dumps(payload) + "\n").encode(), 0o600, force=force)
    write_new_file(pub, (key.public_key().to_text() + "\n").encode(), 0o644, force=True)
    write_new_file(ver, (f"{payload['verify']}\n").encode(), 0o644, force=True)
    return pub


def generate_key_file(
    path: str | os.PathLike[str], *, suite: SuiteName = "x25519", force: bool = False
) -> PublicKey:
    """Generate a key pair and a signing key, write them with :func:`write_private_key`, return the
    public key."""
    key = PrivateKey.generate(suite)
    write_private_key(path, key, force=force)
    return key.public_key()


def _payload(path: str | os.PathLike[str]) -> dict[str, object]:
    p = Path(path)
    if not p.exists():
        raise FileNotFoundInputError(str(path))
    mode = stat.S_IMODE(p.stat().st_mode)
    if mode & 0o077:
        raise ConfigError(
            f"the private key file {str(p)!r} has mode {mode:04o}: readable by group or others. "
            f"Run `chmod 600 {p}` (and consider the key exposed)."
        )
    try:
        payload = json.loads(p.read_text())
        if not isinstance(payload, dict) or payload.get("sdckit_key") != _VERSION:
            raise ValueError("not an sdckit key file (version 1)")
        return payload
    except ValueError as err:
        raise ConfigError(
            f"cannot read the key file {str(p)!r}: {err}. Create one with `sdckit protocol keygen`."
        ) from None


def read_private_key(path: str | os.PathLike[str]) -> PrivateKey:
    """Read the HPKE private key of a key file written by :func:`write_private_key`."""
    payload = _payload(path)
    try:
        raw = base64.urlsafe_b64decode(str(payload["private"]).encode())
        return PrivateKey.from_bytes(str(payload["suite"]), raw)
    except (ValueError, KeyError, TypeError, AttributeError) as err:
        raise ConfigError(
            f"cannot read the key file {str(path)!r}: {err}. Create one with `sdckit protocol keygen`."
        ) from None


def read_signing_key(path: str | os.PathLike[str]) -> ed25519.Ed25519PrivateKey:
    """Read the Ed25519 signing key of a key file (files from before signing keys are refused)."""
    payload = _payload(path)
    if "signing" not in payload:
        raise ConfigError(
            f"the key file {str(path)!r} has no signing key (written by an older sdckit); create a "
            "new one with `sdckit protocol keygen --force PATH` and redistribute PATH.verify."
        )
    try:
        return ed25519.Ed25519PrivateKey.from_private_bytes(
            base64.urlsafe_b64decode(str(payload["signing"]).encode())
        )
    except ValueError as err:
        raise ConfigError(f"cannot read the signing key of {str(path)!r}: {err}") from None
