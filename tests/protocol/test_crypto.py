"""HPKE sealing, info labels, keys and key files."""

from __future__ import annotations

import os
import stat

import pytest
from cryptography.hazmat.bindings._rust import openssl as rust_openssl
from cryptography.hazmat.primitives import hpke
from cryptography.hazmat.primitives.asymmetric import x25519

from sdckit.errors import ConfigError, MalformedMessageError, ParameterError
from sdckit.protocol import (
    PrivateKey,
    PublicKey,
    generate_key_file,
    info_label,
    open_sealed,
    read_private_key,
    seal,
    sealed_length,
)

SUITES = ["x25519", "mlkem768-x25519"]


def test_library_hpke_matches_rfc9180_a21() -> None:
    # RFC 9180, Appendix A.2.1: DHKEM(X25519, HKDF-SHA256), HKDF-SHA256, ChaCha20Poly1305, base mode,
    # sequence number 0 (aad "Count-0"). Values copied from the RFC's published test vectors.
    sk_rm = bytes.fromhex("8057991eef8f1f1af18f4a9491d16a1ce333f695d4db8e38da75975c4478e0fb")
    pk_rm = bytes.fromhex("4310ee97d88cc1f088a5576c77ab0cf5c3ac797f3d95139c6c84b5429c59662a")
    enc = bytes.fromhex("1afa08d3dec047a643885163f1180476fa7ddb54c6a8029ea33f95796bf2ac4a")
    info = bytes.fromhex("4f6465206f6e2061204772656369616e2055726e")  # "Ode on a Grecian Urn"
    aad = bytes.fromhex("436f756e742d30")  # "Count-0"
    pt = bytes.fromhex("4265617574792069732074727574682c20747275746820626561757479")
    ct = bytes.fromhex(
        "1c5250d8034ec2b784ba2cfd69dbdb8af406cfe3ff938e131f0def8c8b60b4db21993c62ce81883d2dd1b51a28"
    )
    key = x25519.X25519PrivateKey.from_private_bytes(sk_rm)
    assert key.public_key().public_bytes_raw() == pk_rm
    suite = hpke.Suite(hpke.KEM.X25519, hpke.KDF.HKDF_SHA256, hpke.AEAD.CHACHA20_POLY1305)
    assert rust_openssl.hpke._decrypt_with_aad(suite, enc + ct, key, info=info, aad=aad) == pt
    # and the module's own opening path is the same primitive (empty aad): a vector ciphertext
    # with a non-empty aad must not open without it
    with pytest.raises(MalformedMessageError):
        open_sealed(PrivateKey("x25519", key), enc + ct, info)


@pytest.mark.parametrize("suite", SUITES)
def test_seal_open_round_trip_and_length(suite: str) -> None:
    key = PrivateKey.generate(suite)  # type: ignore[arg-type]
    info = info_label("c1", 1, "curator")
    for n in (0, 1, 256):
        pt = os.urandom(n)
        ct = seal(key.public_key(), pt, info)
        # RFC 9180: Nenc = 32 for DHKEM(X25519); hybrid ML-KEM-768 (ciphertext 1,088) + X25519 (32) = 1,120;
        # ChaCha20-Poly1305 tag Nt = 16 (RFC 8439)
        assert len(ct) == {"x25519": 32, "mlkem768-x25519": 1120}[suite] + n + 16 == sealed_length(suite, n)  # type: ignore[arg-type]
        assert open_sealed(key, ct, info) == pt


def test_sealing_is_randomised() -> None:
    key = PrivateKey.generate()
    info = info_label("c1", 1, "curator")
    assert seal(key.public_key(), b"same", info) != seal(key.public_key(), b"same", info)


@pytest.mark.parametrize(
    "other", [("c2", 1, "curator"), ("c1", 2, "curator"), ("c1", 1, "analyst"), ("c1", 1, "shuffler")]
)
def test_info_label_binds_collection_round_and_recipient(other: tuple[str, int, str]) -> None:
    key = PrivateKey.generate()
    ct = seal(key.public_key(), b"x", info_label("c1", 1, "curator"))
    with pytest.raises(MalformedMessageError, match="does not open"):
        open_sealed(key, ct, info_label(*other))  # type: ignore[arg-type]


def test_labels_are_distinct() -> None:
    labels = {
        info_label(c, r, who)
        for c in ("a", "b")
        for r in (1, 2)
        for who in ("shuffler", "curator", "analyst")
    }
    assert len(labels) == 12


@pytest.mark.parametrize("suite", SUITES)
def test_wrong_key_truncated_and_altered_ciphertexts_fail(suite: str) -> None:
    key, other = PrivateKey.generate(suite), PrivateKey.generate(suite)  # type: ignore[arg-type]
    info = info_label("c", 1, "curator")
    ct = seal(key.public_key(), b"hello world", info)
    bad = [ct[:-1], ct[:10], b"", ct[:-1] + bytes([ct[-1] ^ 1])]
    for c in bad:
        with pytest.raises(MalformedMessageError):
            open_sealed(key, c, info)
    with pytest.raises(MalformedMessageError):
        open_sealed(other, ct, info)


@pytest.mark.parametrize("suite", SUITES)
def test_key_serialisation_round_trip(suite: str) -> None:
    key = PrivateKey.generate(suite)  # type: ignore[arg-type]
    again = PrivateKey.from_bytes(suite, key.to_bytes())
    assert again.public_key().to_bytes() == key.public_key().to_bytes()
    pub = PublicKey.from_text(key.public_key().to_text())
    info = info_label("c", 2, "analyst")
    assert open_sealed(again, seal(pub, b"v", info), info) == b"v"
    assert "secret" in repr(key)
    assert key.to_bytes().hex() not in repr(key)


def test_bad_public_keys_are_malformed() -> None:
    with pytest.raises(MalformedMessageError):
        PublicKey.from_text("x25519:AAAA")
    with pytest.raises(MalformedMessageError):
        PublicKey.from_bytes("mlkem768-x25519", b"\x00" * 40)
    with pytest.raises(ParameterError, match="unknown HPKE suite"):
        PublicKey.from_bytes("rsa", b"")


def test_key_file_is_private_and_round_trips(tmp_path: os.PathLike[str]) -> None:
    path = os.path.join(tmp_path, "curator.key")
    pub = generate_key_file(path, suite="x25519")
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    with open(path + ".pub") as fh:
        assert fh.read().strip() == pub.to_text()
    key = read_private_key(path)
    assert key.public_key().to_text() == pub.to_text()
    with pytest.raises(ConfigError, match="exists"):
        generate_key_file(path)
    generate_key_file(path, force=True)
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    with open(path, "w") as fh:
        fh.write("{not json")
    with pytest.raises(ConfigError, match="keygen"):
        read_private_key(path)
