"""The wire format: canonical values, fixed-length padded plaintexts, salted messages, batches.

Inner plaintext (what the curator or analyst decrypts), always exactly ``pad_length`` bytes::

    version (1 byte, = 1) | kind (1 byte: 1 feature message, 2 row message, 3 pair message) | salt (16 bytes)
    | body length (2 bytes, big-endian) | body (canonical JSON, UTF-8) | zero bytes up to pad_length

so every ciphertext of a round has the same length whatever the value [seed; anonymity notes §5].
Round-1 body: ``["<feature>", value]``; round-2 body: ``[["<column>", value], ...]`` in plan order;
pair-round body: ``[["<column a>", value], ["<column b>", value]]`` in the query's order.

Values are encoded canonically: ``None``, ``bool``, ``int``, ``float`` (shortest round-trip repr;
NaN and infinities allowed) and ``str`` as JSON scalars; ``date``, ``datetime``, ``time``,
``Decimal``, ``bytes`` and a redaction marker as one-key objects. Equal values give equal
encodings, and the decoder gives back a value equal to the original (type included).

A batch (an HTTP body of several ciphertexts) is ``b"SDCB" | version (1) | count (4) | count x
(length (4) | bytes)``, all big-endian.
"""

from __future__ import annotations

import base64
import datetime as dt
import json
import math
import struct
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from sdckit.errors import MalformedMessageError, ParameterError

WIRE_VERSION = 1
SALT_LENGTH = 16
KIND_FEATURE = 1
KIND_ROW = 2
KIND_PAIR = 3
_HEADER = struct.Struct(">BB16sH")
HEADER_LENGTH = _HEADER.size  # 20 bytes
_BATCH_MAGIC = b"SDCB"
_BATCH_HEAD = struct.Struct(">4sBI")
_LEN = struct.Struct(">I")


class Redacted:
    """The marker a user sends instead of a value it redacts (local suppression, seed §8)."""

    _instance: Redacted | None = None

    def __new__(cls) -> Redacted:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "REDACTED"

    def __reduce__(self) -> str:
        return "REDACTED"


REDACTED = Redacted()
"""The single redaction marker."""


def _tag(value: Any) -> Any:
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        if value == 0.0:
            return 0.0  # -0.0 == 0.0: one value, one encoding
        return value if math.isfinite(value) else {"float": repr(value)}
    if value is REDACTED:
        return {"redacted": True}
    if isinstance(value, dt.datetime):
        return {"datetime": value.isoformat()}
    if isinstance(value, dt.date):
        return {"date": value.isoformat()}
    if isinstance(value, dt.time):
        return {"time": value.isoformat()}
    if isinstance(value, dt.timedelta):
        return {"timedelta_us": (value.days * 86_400 + value.seconds) * 1_000_000 + value.microseconds}
    if isinstance(value, Decimal):
        return {"decimal": str(value)}
    if isinstance(value, bytes):
        return {"bytes": base64.b64encode(value).decode()}
    item = getattr(value, "item", None)  # numpy scalars
    if callable(item):
        return _tag(item())
    raise ParameterError(
        f"cannot encode a value of type {type(value).__name__}; cast the column to text or numbers first"
    )


def _untag(obj: Any) -> Any:
    if isinstance(obj, list):  # a value is a scalar or a one-key tagged object (never nested)
        raise MalformedMessageError("a value is a JSON scalar or a one-key tagged object, not an array")
    if not isinstance(obj, dict):
        return obj
    if len(obj) != 1:
        raise MalformedMessageError("a tagged value must have exactly one key")
    ((tag, payload),) = obj.items()
    try:
        if tag == "float":
            if payload not in ("nan", "inf", "-inf"):
                raise ValueError(payload)
            return float(payload)
        if tag == "redacted":
            return REDACTED
        if tag == "datetime":
            return dt.datetime.fromisoformat(payload)
        if tag == "date":
            return dt.date.fromisoformat(payload)
        if tag == "time":
            return dt.time.fromisoformat(payload)
        if tag == "timedelta_us":
            return dt.timedelta(microseconds=int(payload))
        if tag == "decimal":
            return Decimal(payload)
        if tag == "bytes":
            return base64.b64decode(payload.encode(), validate=True)
    except (ValueError, TypeError, AttributeError, ArithmeticError):  # Overflow (timedelta), decimal errors
        raise MalformedMessageError(f"bad payload for the value tag {tag!r}") from None
    raise MalformedMessageError(f"unknown value tag {tag!r}")


def _dumps(obj: Any) -> bytes:
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode()


def encode_value(value: Any) -> str:
    """The canonical text of one value (used as the counting key for marginals).

    Examples
    --------
    >>> encode_value("Male"), encode_value(39), encode_value(39.0), encode_value(None)
    ('"Male"', '39', '39.0', 'null')
    """
    return _dumps(_tag(value)).decode()


def decode_value(text: str) -> Any:
    """Inverse of :func:`encode_value`."""
    try:
        obj = json.loads(text)
    except (ValueError, RecursionError):  # also digits beyond int_max_str_digits, deep nesting
        raise MalformedMessageError("a value is not valid JSON") from None
    return _untag(obj)


@dataclass(frozen=True)
class FeatureMessage:
    """A decrypted round-1 message: one feature's value of one (unknown) user, and its salt."""

    feature: str
    value_key: str
    """Canonical encoding of the value (:func:`encode_value`), the key marginals are counted by."""
    salt: bytes


@dataclass(frozen=True)
class RowMessage:
    """A decrypted round-2 message: one user's values of the planned columns, and its salt."""

    columns: tuple[str, ...]
    values: tuple[Any, ...]
    salt: bytes


def _pad(kind: int, salt: bytes, body: bytes, pad_length: int, what: str) -> bytes:
    need = HEADER_LENGTH + len(body)
    if need > pad_length:
        raise ParameterError(
            f"{what} needs {need} bytes but messages are padded to {pad_length}; "
            f"raise the collection's pad length to at least {need} (every message gets that length)."
        )
    if len(salt) != SALT_LENGTH:
        raise ParameterError(f"a salt has {SALT_LENGTH} bytes, got {len(salt)}")
    return _HEADER.pack(WIRE_VERSION, kind, salt, len(body)) + body + bytes(pad_length - need)


def pack_feature(feature: str, value: Any, salt: bytes, pad_length: int) -> bytes:
    """Round-1 inner plaintext of ``pad_length`` bytes for one feature's value."""
    body = _dumps([feature, _tag(value)])
    return _pad(KIND_FEATURE, salt, body, pad_length, f"feature {feature!r} with its value")


def pack_row(
    columns: Sequence[str], values: Sequence[Any], salt: bytes, pad_length: int, *, kind: int = KIND_ROW
) -> bytes:
    """Round-2 inner plaintext of ``pad_length`` bytes for one user's planned columns (with
    ``kind=KIND_PAIR``: a pair-round message, the same body for the query's columns)."""
    body = _dumps([[c, _tag(v)] for c, v in zip(columns, values, strict=True)])
    return _pad(kind, salt, body, pad_length, f"a row of {len(columns)} column(s)")


def _unpad(plain: bytes, kind: int, pad_length: int | None) -> tuple[bytes, Any]:
    if pad_length is not None and len(plain) != pad_length:
        raise MalformedMessageError(f"plaintext of {len(plain)} bytes; this round pads to {pad_length}")
    if len(plain) < HEADER_LENGTH:
        raise MalformedMessageError("plaintext shorter than the message header")
    version, got_kind, salt, n = _HEADER.unpack_from(plain)
    if version != WIRE_VERSION:
        raise MalformedMessageError(f"wire version {version}; this build reads version {WIRE_VERSION}")
    if got_kind != kind:
        raise MalformedMessageError(f"message kind {got_kind} where kind {kind} was expected")
    end = HEADER_LENGTH + n
    if end > len(plain) or any(plain[end:]):
        raise MalformedMessageError("bad body length or non-zero padding")
    try:
        body = json.loads(plain[HEADER_LENGTH:end].decode(), parse_constant=_no_constant)
        _dumps(body)  # a lone surrogate (\ud800) parses but cannot be encoded or counted
    except (ValueError, RecursionError):
        # ValueError covers bad UTF-8 and JSON, NaN/Infinity literals (values tag them), integers
        # beyond int_max_str_digits and unencodable strings; RecursionError deep nesting. All
        # are the sender's fault: reject the message, never fail the batch.
        raise MalformedMessageError("the message body is not canonical UTF-8 JSON") from None
    return salt, body


def _no_constant(name: str) -> Any:
    raise ValueError(f"bare {name}: non-finite floats are tagged")


def pack_feature_length(feature: str, value: Any) -> int:
    """Bytes a round-1 plaintext needs before padding (the smallest pad length that fits)."""
    return HEADER_LENGTH + len(_dumps([feature, _tag(value)]))


def pack_row_length(columns: Sequence[str], values: Sequence[Any]) -> int:
    """Bytes a round-2 plaintext needs before padding (the smallest pad length that fits)."""
    return HEADER_LENGTH + len(_dumps([[c, _tag(v)] for c, v in zip(columns, values, strict=True)]))


def unpack_feature(plain: bytes, pad_length: int | None = None) -> FeatureMessage:
    """Parse a round-1 inner plaintext; :class:`MalformedMessageError` on anything unexpected."""
    salt, body = _unpad(plain, KIND_FEATURE, pad_length)
    if not (isinstance(body, list) and len(body) == 2 and isinstance(body[0], str)):
        raise MalformedMessageError("a feature message body is [feature, value]")
    value = _untag(body[1])
    return FeatureMessage(body[0], encode_value(value), salt)


def unpack_row(plain: bytes, pad_length: int | None = None, *, kind: int = KIND_ROW) -> RowMessage:
    """Parse a round-2 (or, with ``kind=KIND_PAIR``, pair-round) inner plaintext;
    :class:`MalformedMessageError` on anything unexpected."""
    salt, body = _unpad(plain, kind, pad_length)
    if not (isinstance(body, list) and all(isinstance(p, list) and len(p) == 2 for p in body)):
        raise MalformedMessageError("a row message body is [[column, value], ...]")
    columns = tuple(p[0] for p in body)
    if not all(isinstance(c, str) for c in columns):
        raise MalformedMessageError("column names must be strings")
    return RowMessage(columns, tuple(_untag(p[1]) for p in body), salt)


def pack_batch(messages: Iterable[bytes]) -> bytes:
    """Frame ciphertexts into one body (see the module docstring).

    Examples
    --------
    >>> unpack_batch(pack_batch([b"ab", b"c"]))
    [b'ab', b'c']
    """
    items = list(messages)
    parts = [_BATCH_HEAD.pack(_BATCH_MAGIC, WIRE_VERSION, len(items))]
    for m in items:
        parts.append(_LEN.pack(len(m)))
        parts.append(m)
    return b"".join(parts)


def unpack_batch(body: bytes, *, max_messages: int = 1_000_000) -> list[bytes]:
    """Inverse of :func:`pack_batch`; :class:`MalformedMessageError` for a bad or truncated frame."""
    if len(body) < _BATCH_HEAD.size:
        raise MalformedMessageError("batch shorter than its header")
    magic, version, count = _BATCH_HEAD.unpack_from(body)
    if magic != _BATCH_MAGIC or version != WIRE_VERSION:
        raise MalformedMessageError("not an sdckit batch (magic 'SDCB', version 1)")
    if count > max_messages:
        raise MalformedMessageError(f"batch of {count} messages; the limit is {max_messages}")
    out: list[bytes] = []
    pos = _BATCH_HEAD.size
    for _ in range(count):
        if pos + _LEN.size > len(body):
            raise MalformedMessageError("batch truncated inside a length field")
        (n,) = _LEN.unpack_from(body, pos)
        pos += _LEN.size
        if pos + n > len(body):
            raise MalformedMessageError("batch truncated inside a message")
        out.append(body[pos : pos + n])
        pos += n
    if pos != len(body):
        raise MalformedMessageError("trailing bytes after the last message of the batch")
    return out
