"""HPKE (RFC 9180) sealing and key handling, on the ``cryptography`` package's own HPKE module.

Nothing here implements a primitive: :class:`cryptography.hazmat.primitives.hpke.Suite` does the KEM,
key schedule and AEAD (single-shot base mode, ``enc || ciphertext``). This module chooses the suite,
builds the ``info`` label that binds a ciphertext to one protocol, collection, round and recipient,
and (de)serialises keys.

Suites (``SuiteName``):

* ``"x25519"`` (default): DHKEM(X25519, HKDF-SHA256), HKDF-SHA256, ChaCha20-Poly1305.
  RFC 9180 ids (0x0020, 0x0001, 0x0003); 32-byte ``enc``; ciphertext = 32 + len(pt) + 16 bytes.
* ``"mlkem768-x25519"``: the hybrid post-quantum KEM ML-KEM-768 + X25519 (``KEM.MLKEM768_X25519``
  in ``cryptography`` >= 47), HKDF-SHA256, ChaCha20-Poly1305; 1,120-byte ``enc``.
"""

from __future__ import annotations

import base64
from dataclasses import dataclass
from typing import Any, Literal, TypeAlias, cast, get_args

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives import hpke
from cryptography.hazmat.primitives.asymmetric import mlkem, x25519

from sdckit.errors import MalformedMessageError, ParameterError

SuiteName: TypeAlias = Literal["x25519", "mlkem768-x25519"]
Recipient: TypeAlias = Literal["shuffler", "curator", "analyst"]

PROTOCOL_LABEL = b"sdckit/shuffle-protocol/v1"
"""Prefix of every HPKE ``info`` string (a distinct label per protocol version)."""

_KEMS = {"x25519": hpke.KEM.X25519, "mlkem768-x25519": hpke.KEM.MLKEM768_X25519}
_SUITES = {
    name: hpke.Suite(kem, hpke.KDF.HKDF_SHA256, hpke.AEAD.CHACHA20_POLY1305) for name, kem in _KEMS.items()
}
ENC_LENGTH = {name: kem.enc_length() for name, kem in _KEMS.items()}
"""Bytes of the encapsulated key that starts every ciphertext, per suite."""
AEAD_TAG = 16
_X25519_LEN = 32
_MLKEM768_PUBLIC_LEN = 1184
_MLKEM768_SEED_LEN = 64


def check_suite(suite: str) -> SuiteName:
    """Return ``suite`` if it is a known suite name, else raise :class:`ParameterError`."""
    if suite not in _SUITES:
        raise ParameterError(f"unknown HPKE suite {suite!r}; use one of {', '.join(get_args(SuiteName))}.")
    return cast(SuiteName, suite)


def info_label(collection: str, round_: int, recipient: Recipient, *, plan_sha256: str | None = None) -> bytes:
    """The HPKE ``info`` for one collection, round and recipient.

    ``sdckit/shuffle-protocol/v1|<collection>|round=<r>|to=<recipient>``: a ciphertext sealed for the
    curator in round 1 of collection ``a`` does not open as anything else (another round, another
    collection, the analyst), so a message cannot be replayed across contexts.

    Examples
    --------
    Round 2's outer layer (to the shuffler) also carries ``|plan=<SHA-256 of the plan>``
    (:meth:`~sdckit.protocol.PublishedPlan.sha256`, issue 37): a row sealed for another plan than
    the one the shuffler pinned does not open there, so it is refused before its credential is
    spent.

    >>> info_label("adult", 1, "curator")
    b'sdckit/shuffle-protocol/v1|adult|round=1|to=curator'
    """
    parts = [PROTOCOL_LABEL, collection.encode(), f"round={round_}".encode(), f"to={recipient}".encode()]
    if plan_sha256 is not None:
        parts.append(f"plan={plan_sha256}".encode())
    return b"|".join(parts)


def sealed_length(suite: SuiteName, plaintext_length: int) -> int:
    """Length in bytes of an HPKE ciphertext of a ``plaintext_length``-byte plaintext."""
    return ENC_LENGTH[suite] + plaintext_length + AEAD_TAG


@dataclass(frozen=True)
class PublicKey:
    """A recipient's public key with its suite; ``to_bytes``/``from_bytes`` use the raw encoding
    (X25519: 32 bytes; hybrid: ML-KEM-768 public key (1,184 bytes) then X25519 (32 bytes))."""

    suite: SuiteName
    key: Any
    """The ``cryptography`` public-key object the suite encrypts to."""

    def to_bytes(self) -> bytes:
        if self.suite == "x25519":
            return self.key.public_bytes_raw()
        mlkem_pub, x_pub = self.key
        return bytes(mlkem_pub.public_bytes_raw() + x_pub.public_bytes_raw())

    @classmethod
    def from_bytes(cls, suite: str, raw: bytes) -> PublicKey:
        name = check_suite(suite)
        try:
            if name == "x25519":
                return cls(name, x25519.X25519PublicKey.from_public_bytes(raw))
            if len(raw) != _MLKEM768_PUBLIC_LEN + _X25519_LEN:
                raise ValueError(f"expected {_MLKEM768_PUBLIC_LEN + _X25519_LEN} bytes, got {len(raw)}")
            m = mlkem.MLKEM768PublicKey.from_public_bytes(raw[:_MLKEM768_PUBLIC_LEN])
            x = x25519.X25519PublicKey.from_public_bytes(raw[_MLKEM768_PUBLIC_LEN:])
            return cls(name, (m, x))
        except ValueError as err:
            raise MalformedMessageError(f"not a {name} public key: {err}") from None

    def to_text(self) -> str:
        """``"<suite>:<base64url>"``, the form served by ``/v1/keys`` and stored in key files."""
        return f"{self.suite}:{base64.urlsafe_b64encode(self.to_bytes()).decode()}"

    @classmethod
    def from_text(cls, text: str) -> PublicKey:
        suite, _, b64 = text.partition(":")
        try:
            raw = base64.urlsafe_b64decode(b64.encode())
        except ValueError:
            raise MalformedMessageError("a public key must be '<suite>:<base64url bytes>'") from None
        return cls.from_bytes(suite, raw)

    def _hpke_key(self) -> Any:
        if self.suite == "x25519":
            return self.key
        m, x = self.key
        return hpke.MLKEM768X25519PublicKey(m, x)


@dataclass(frozen=True, repr=False)
class PrivateKey:
    """A recipient's private key (never printed: ``repr`` shows only the suite)."""

    suite: SuiteName
    key: Any

    def __repr__(self) -> str:
        return f"PrivateKey(suite={self.suite!r}, <secret>)"

    @classmethod
    def generate(cls, suite: SuiteName = "x25519") -> PrivateKey:
        """A fresh key from the OS CSPRNG (through OpenSSL)."""
        name = check_suite(suite)
        if name == "x25519":
            return cls(name, x25519.X25519PrivateKey.generate())
        return cls(name, (mlkem.MLKEM768PrivateKey.generate(), x25519.X25519PrivateKey.generate()))

    def public_key(self) -> PublicKey:
        if self.suite == "x25519":
            return PublicKey(self.suite, self.key.public_key())
        m, x = self.key
        return PublicKey(self.suite, (m.public_key(), x.public_key()))

    def to_bytes(self) -> bytes:
        """Raw secret: X25519 scalar (32 bytes); hybrid: ML-KEM-768 seed (64) then X25519 (32)."""
        if self.suite == "x25519":
            return self.key.private_bytes_raw()
        m, x = self.key
        return bytes(m.private_bytes_raw() + x.private_bytes_raw())

    @classmethod
    def from_bytes(cls, suite: str, raw: bytes) -> PrivateKey:
        name = check_suite(suite)
        try:
            if name == "x25519":
                return cls(name, x25519.X25519PrivateKey.from_private_bytes(raw))
            if len(raw) != _MLKEM768_SEED_LEN + _X25519_LEN:
                raise ValueError(f"expected {_MLKEM768_SEED_LEN + _X25519_LEN} bytes, got {len(raw)}")
            m = mlkem.MLKEM768PrivateKey.from_seed_bytes(raw[:_MLKEM768_SEED_LEN])
            x = x25519.X25519PrivateKey.from_private_bytes(raw[_MLKEM768_SEED_LEN:])
            return cls(name, (m, x))
        except ValueError as err:
            raise ParameterError(f"not a {name} private key: {err}") from None

    def _hpke_key(self) -> Any:
        if self.suite == "x25519":
            return self.key
        m, x = self.key
        return hpke.MLKEM768X25519PrivateKey(m, x)


def seal(public_key: PublicKey, plaintext: bytes, info: bytes) -> bytes:
    """HPKE base-mode single-shot encryption: ``enc || AEAD(plaintext)`` (RFC 9180 §6.1).

    Randomised (a fresh ephemeral key per call), so equal plaintexts give unrelated ciphertexts.
    """
    suite = _SUITES[public_key.suite]
    return suite.encrypt(plaintext, public_key._hpke_key(), info=info)


def open_sealed(private_key: PrivateKey, ciphertext: bytes, info: bytes) -> bytes:
    """Inverse of :func:`seal`; raises :class:`MalformedMessageError` if the ciphertext is truncated,
    altered, sealed to another key or under another ``info`` label."""
    suite = _SUITES[private_key.suite]
    if len(ciphertext) < ENC_LENGTH[private_key.suite] + AEAD_TAG:
        raise MalformedMessageError(
            f"ciphertext of {len(ciphertext)} bytes is shorter than the {private_key.suite} minimum"
        )
    try:
        return suite.decrypt(ciphertext, private_key._hpke_key(), info=info)
    except (InvalidTag, ValueError):
        raise MalformedMessageError(
            "ciphertext does not open: truncated, altered, sealed to another key or for another round"
        ) from None
