"""Ed25519-signed documents: how the shuffler relays the curator's and analyst's keys, spec and plan
to devices without being able to alter them.

Signing is :class:`cryptography.hazmat.primitives.asymmetric.ed25519.Ed25519PrivateKey`; nothing here
implements a primitive. A signed document is the JSON object::

    {"kind": "keys" | "spec" | "plan" | "enrolment", "signer": "<role>", "document": {...},
     "signature": "<base64url of Ed25519 over the canonical JSON of {kind, signer, document}>"}

Canonical JSON is RFC 8785 (JCS, the ``rfc8785`` package): keys sorted by UTF-16 code units, no
spaces, UTF-8, numbers formatted as ECMAScript does (``1.0`` is ``1``, ``1e21`` is ``1e+21``), no
NaN, integers within +-(2^53 - 1); any JCS implementation (the TypeScript SDK uses
``canonicalize``) reproduces the signed bytes. A device pins the owners' verification keys
(``ed25519:<base64url>``) out of band; a relay that changes one byte is caught by
:func:`verify_document`.
"""

from __future__ import annotations

import base64
from collections.abc import Mapping
from typing import Any

import rfc8785
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric import ed25519

from sdckit.errors import MalformedMessageError, ParameterError

_PREFIX = "ed25519:"


def canonical_json(obj: Any) -> bytes:
    """RFC 8785 (JCS) bytes of ``obj``; :class:`ValueError` (``rfc8785.CanonicalizationError``) for
    what JCS cannot represent (NaN, an integer beyond 2^53 - 1, a non-text key, a lone surrogate)."""
    return rfc8785.dumps(obj)


def _canonical(kind: str, signer: str, document: Mapping[str, Any]) -> bytes:
    return canonical_json({"kind": kind, "signer": signer, "document": dict(document)})


def verify_key_to_text(key: ed25519.Ed25519PublicKey) -> str:
    """``ed25519:<base64url of the 32 raw bytes>``."""
    return _PREFIX + base64.urlsafe_b64encode(key.public_bytes_raw()).decode()


def verify_key_from_text(text: str) -> ed25519.Ed25519PublicKey:
    """Inverse of :func:`verify_key_to_text`; :class:`MalformedMessageError` for anything else."""
    if not isinstance(text, str) or not text.startswith(_PREFIX):
        raise MalformedMessageError("a verification key is 'ed25519:<base64url>'")
    try:
        return ed25519.Ed25519PublicKey.from_public_bytes(base64.urlsafe_b64decode(text[len(_PREFIX) :]))
    except ValueError:
        raise MalformedMessageError("not an Ed25519 verification key") from None


def sign_document(
    key: ed25519.Ed25519PrivateKey, kind: str, signer: str, document: Mapping[str, Any]
) -> dict[str, Any]:
    """The signed form of ``document`` (see the module docstring); :class:`ParameterError` for a
    document JCS cannot represent."""
    try:
        text = _canonical(kind, signer, document)
    except rfc8785.CanonicalizationError as err:
        raise ParameterError(
            f"the {kind} document cannot be signed: {err} (JSON numbers must be finite, integers "
            "within +-(2^53 - 1), keys text)"
        ) from None
    sig = key.sign(text)
    return {
        "kind": kind,
        "signer": signer,
        "document": dict(document),
        "signature": base64.urlsafe_b64encode(sig).decode(),
    }


def verify_document(signed: Any, key: ed25519.Ed25519PublicKey, *, kind: str, signer: str) -> dict[str, Any]:
    """The document of ``signed`` if it is a ``kind`` document signed by ``signer`` with ``key``;
    :class:`MalformedMessageError` otherwise (altered, re-signed, another kind or signer)."""
    if not isinstance(signed, Mapping):
        raise MalformedMessageError(f"a signed {kind} document is a JSON object")
    doc = signed.get("document")
    if signed.get("kind") != kind or signed.get("signer") != signer or not isinstance(doc, Mapping):
        raise MalformedMessageError(f"not a {kind} document signed by the {signer}")
    try:
        sig = base64.urlsafe_b64decode(str(signed.get("signature", "")))
        key.verify(sig, _canonical(kind, signer, doc))
    except (ValueError, InvalidSignature, TypeError):  # ValueError includes CanonicalizationError
        raise MalformedMessageError(
            f"the {kind} document does not carry the {signer}'s signature: altered on the way, or "
            "signed by another key (check the pinned verification key)"
        ) from None
    return dict(doc)
