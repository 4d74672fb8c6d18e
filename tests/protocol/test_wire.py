"""Canonical values, fixed-length padding, batches."""

from __future__ import annotations

import datetime as dt
import math
import os
from decimal import Decimal

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sdckit.errors import MalformedMessageError, ParameterError
from sdckit.protocol import (
    REDACTED,
    PrivateKey,
    decode_value,
    encode_value,
    info_label,
    pack_batch,
    pack_feature,
    pack_row,
    seal,
    unpack_batch,
    unpack_feature,
    unpack_row,
)

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(10**18), max_value=10**18),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=30),
    st.dates(),
    st.datetimes(),
)


def _same(a: object, b: object) -> bool:
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a):
        return math.isnan(b)
    return type(a) is type(b) and a == b


@settings(max_examples=200, deadline=None)
@given(scalars)
def test_value_round_trip_keeps_type(value: object) -> None:
    assert _same(decode_value(encode_value(value)), value)


@settings(max_examples=100, deadline=None)
@given(scalars, scalars)
def test_encoding_is_canonical(a: object, b: object) -> None:
    # equal values (same type) <=> equal encodings; 1 and 1.0 and True stay distinct
    assert (encode_value(a) == encode_value(b)) == (_same(a, b) or (a == b and type(a) is type(b)))


def test_other_types_and_marker() -> None:
    for v in (Decimal("1.10"), b"\x00\xff", dt.time(12, 30), dt.timedelta(days=1, microseconds=5), REDACTED):
        assert decode_value(encode_value(v)) == v
    assert decode_value(encode_value(REDACTED)) is REDACTED
    assert encode_value(1) != encode_value(1.0) != encode_value(True)
    with pytest.raises(ParameterError, match="cannot encode"):
        encode_value(object())


@settings(max_examples=100, deadline=None)
@given(st.text(min_size=1, max_size=20), scalars)
def test_every_feature_plaintext_has_the_pad_length(feature: str, value: object) -> None:
    salt = os.urandom(16)
    plain = pack_feature(feature, value, salt, 256)
    assert len(plain) == 256
    msg = unpack_feature(plain, 256)
    assert msg.feature == feature
    assert msg.salt == salt
    assert msg.value_key == encode_value(value)


def test_ciphertext_length_does_not_depend_on_the_value() -> None:
    key = PrivateKey.generate()
    info = info_label("c", 1, "curator")
    values = ["", "a", "Married-civ-spouse" * 5, 0, 10**17, None, 3.25]
    lengths = {len(seal(key.public_key(), pack_feature("f", v, os.urandom(16), 256), info)) for v in values}
    assert lengths == {32 + 256 + 16}


def test_row_round_trip() -> None:
    salt = os.urandom(16)
    plain = pack_row(["age", "sex"], [39, REDACTED], salt, 128)
    msg = unpack_row(plain, 128)
    assert msg.columns == ("age", "sex")
    assert msg.values == (39, REDACTED)
    assert msg.salt == salt


def test_too_long_value_names_the_fix() -> None:
    with pytest.raises(ParameterError, match="raise the collection's pad length to at least"):
        pack_feature("f", "x" * 300, os.urandom(16), 256)
    with pytest.raises(ParameterError, match="salt"):
        pack_feature("f", 1, b"short", 256)


def test_malformed_plaintexts_are_rejected() -> None:
    good = bytearray(pack_feature("f", "v", os.urandom(16), 64))
    cases = {
        "truncated": bytes(good[:10]),
        "wrong length": bytes(good[:63]),
        "version": bytes([9]) + bytes(good[1:]),
        "kind": bytes(good[:1]) + bytes([2]) + bytes(good[2:]),
        "padding": bytes(good[:-1]) + b"\x01",
        "body length": bytes(good[:18]) + b"\x00\x30" + bytes(good[20:]),
    }
    for name, plain in cases.items():
        with pytest.raises(MalformedMessageError):
            unpack_feature(plain, 64 if name != "truncated" else None)
    with pytest.raises(MalformedMessageError):
        unpack_row(bytes(good), 64)  # a feature message is not a row message


@settings(max_examples=50, deadline=None)
@given(st.lists(st.binary(max_size=50), max_size=20))
def test_batch_round_trip(messages: list[bytes]) -> None:
    assert unpack_batch(pack_batch(messages)) == messages


def test_bad_batches() -> None:
    body = pack_batch([b"abc", b"de"])
    for bad in (body[:-1], body[:3], b"XXXX" + body[4:], body + b"\x00"):
        with pytest.raises(MalformedMessageError):
            unpack_batch(bad)
    with pytest.raises(MalformedMessageError, match="limit"):
        unpack_batch(body, max_messages=1)


def test_signed_zero_is_one_value() -> None:
    assert encode_value(-0.0) == encode_value(0.0) == "0.0"


@settings(max_examples=50, deadline=None)
@given(st.text(min_size=1, max_size=10), scalars)
def test_needed_length_is_the_smallest_pad_that_fits(feature: str, value: object) -> None:
    from sdckit.protocol._wire import pack_feature_length

    need = pack_feature_length(feature, value)
    assert len(pack_feature(feature, value, os.urandom(16), need)) == need
    with pytest.raises(ParameterError):
        pack_feature(feature, value, os.urandom(16), need - 1)


def _raw_plaintext(body: str, kind: int = 1, pad: int = 256) -> bytes:
    """A plaintext with any body text, header built by hand (not by the code under test)."""
    b = body.encode("utf-8", "surrogatepass")
    return bytes([1, kind]) + b"s" * 16 + len(b).to_bytes(2, "big") + b + bytes(pad - 20 - len(b))


# Bodies a hostile sender can seal: each used to escape as OverflowError, decimal.InvalidOperation,
# ParameterError, ValueError or RecursionError, failing the whole relayed batch (the shuffler then
# retried it forever); each must be one MalformedMessageError (the message is counted as rejected).
HOSTILE_FEATURE_BODIES = [
    '["age",[1]]',  # a list as a value
    '["age",{"timedelta_us":100000000000000000000}]',  # timedelta overflow
    '["age",{"timedelta_us":1e300}]',
    '["age",{"decimal":"abc"}]',  # decimal.InvalidOperation
    '["age","\\ud800"]',  # a lone surrogate cannot be encoded
    '["\\udfff","x"]',
    '["age",NaN]',  # bare constants: non-finite floats are tagged
    '["age",Infinity]',
]


@pytest.mark.parametrize("body", HOSTILE_FEATURE_BODIES)
def test_hostile_feature_bodies_are_malformed(body: str) -> None:
    with pytest.raises(MalformedMessageError):
        unpack_feature(_raw_plaintext(body), 256)


@pytest.mark.parametrize(
    "body",
    [
        '["age",' + "1" * 5000 + "]",  # beyond int_max_str_digits: ValueError from json
        '["age",' + "[" * 3000 + "]" * 3000 + "]",  # RecursionError from json
    ],
)
def test_hostile_bodies_of_large_pads_are_malformed(body: str) -> None:
    with pytest.raises(MalformedMessageError):
        unpack_feature(_raw_plaintext(body, pad=8192), 8192)


@pytest.mark.parametrize("body", ['[["sex",[1]]]', '[["sex",{"decimal":"x"}]]', '[["sex","\\ud800"]]'])
def test_hostile_row_bodies_are_malformed(body: str) -> None:
    with pytest.raises(MalformedMessageError):
        unpack_row(_raw_plaintext(body, kind=2, pad=1024), 1024)


@pytest.mark.parametrize(
    "text", ["[1]", '{"timedelta_us": 1e300}', '{"decimal": "abc"}', "1" * 5000, "[" * 5000]
)
def test_decode_value_raises_malformed_only(text: str) -> None:
    with pytest.raises(MalformedMessageError):
        decode_value(text)
