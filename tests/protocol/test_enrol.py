"""Enrolment credentials (VOPRF), signed documents, plan consistency, token checks: pure logic."""

from __future__ import annotations

import json
import secrets
from pathlib import Path

import pytest
from cryptography.hazmat.primitives.asymmetric import ed25519
from hypothesis import given, settings
from hypothesis import strategies as st
from voprf import ristretto

from sdckit.errors import ConfigError, MalformedMessageError
from sdckit.protocol._enrol import ENROL_ROUNDS, Credential, Enrolment, Issuer
from sdckit.protocol._keyfile import generate_key_file, read_signing_key
from sdckit.protocol._planning import consistent_counts
from sdckit.protocol._signing import sign_document, verify_document, verify_key_from_text, verify_key_to_text
from sdckit.protocol._spec import PAIR_ROUND
from sdckit.protocol.services._config import token_bits


def test_the_voprf_library_matches_rfc_9497_test_vector() -> None:
    """RFC 9497 Appendix A.1.2 (ristretto255-SHA512, VOPRF mode), test vector 1: DeriveKeyPair
    from Seed = a3 x 32 and KeyInfo = "test key", then Evaluate(Input = 00)."""
    ev = ristretto.Evaluator.from_seed(bytes([0xA3]) * 32, b"test key")
    assert (
        ev.public_key.serialize().hex() == "c803e2cc6b05fc15064549b5920659ca4a77b2cca6f04f6b357009335476ad4e"
    )
    assert ev.evaluate_known_input(b"\x00").hex() == (
        "b58cfbe118e0cb94d79b5fd6a6dafb98764dff49c14e1770b566e42402da1a7d"
        "a4d8527693914139caee5bd03903af43a491351d23b430948dd50cde10d32b3c"
    )


def test_credentials_are_bound_to_collection_round_and_key() -> None:
    seed = secrets.token_bytes(32)
    issuer = Issuer(seed, "c")
    assert ENROL_ROUNDS == (1, 2, PAIR_ROUND)
    assert len(set(issuer.public_keys.values())) == 3  # a key per round
    pending = Enrolment("c", users=3)
    creds = pending.finish(issuer.evaluate(pending.blinded), issuer.public_keys)
    assert len(creds) == 3
    assert len({c[r].nonce for c in creds for r in ENROL_ROUNDS}) == 9
    for c in creds:
        for r in ENROL_ROUNDS:
            assert issuer.verify(c[r])
        assert not issuer.verify(Credential(2, c[1].nonce, c[1].output))  # another round
        assert not Issuer(seed, "d").verify(c[1])  # another collection
        assert not Issuer(secrets.token_bytes(32), "c").verify(c[1])  # another key
        assert Credential.from_text(c[1].to_text(), 1) == c[1]
    bad = bytearray(creds[0][1].output)
    bad[0] ^= 1
    assert not issuer.verify(Credential(1, creds[0][1].nonce, bytes(bad)))
    # the device checks the proof: an answer made with another key is refused
    other = Issuer(secrets.token_bytes(32), "c")
    pending = Enrolment("c")
    with pytest.raises(MalformedMessageError, match="issuer key"):
        pending.finish(other.evaluate(pending.blinded), issuer.public_keys)
    # a device enrols for a prefix of the rounds (the order of the keys)
    two = Enrolment("c", ENROL_ROUNDS[:2])
    (got,) = two.finish(issuer.evaluate(two.blinded), issuer.public_keys)
    assert set(got) == {1, 2}
    with pytest.raises(ValueError, match="prefix"):
        Enrolment("c", (1, PAIR_ROUND))
    with pytest.raises(MalformedMessageError):
        Credential.from_text("no-dot", 1)
    with pytest.raises(MalformedMessageError):
        issuer.evaluate([["not base64 !!"]])
    with pytest.raises(MalformedMessageError, match="per user"):
        issuer.evaluate([pending.blinded[0] * 2])  # more inputs than rounds


def test_an_input_blinded_for_another_round_than_its_position_verifies_for_none() -> None:
    """One key per round position: three round-1 inputs under one invite give one credential."""
    from voprf import ristretto

    from sdckit.protocol._enrol import _b64, _unb64, token_input

    issuer = Issuer(secrets.token_bytes(32), "c")
    nonces = [secrets.token_bytes(32) for _ in ENROL_ROUNDS]
    blinds = [ristretto.Client.blind(token_input("c", 1, n)) for n in nonces]
    answer = issuer.evaluate([[_b64(b.serialize()) for _, b in blinds]])
    valid = []
    for (client, _), n, r in zip(blinds, nonces, ENROL_ROUNDS, strict=True):
        out = ristretto.VerifiableBatchOutput.deserialize(_unb64(answer[str(r)], "x"))
        key = ristretto.PublicKey.deserialize(_unb64(issuer.public_keys[str(r)], "x"))
        (o,) = ristretto.Client.finalize_batch([client], out, key)
        valid.append([rr for rr in ENROL_ROUNDS if issuer.verify(Credential(rr, n, bytes(o)))])
    assert valid == [[1], [], []]


def test_signed_documents_catch_any_change() -> None:
    key = ed25519.Ed25519PrivateKey.generate()
    pub = verify_key_from_text(verify_key_to_text(key.public_key()))
    doc = sign_document(key, "spec", "curator", {"id": "c", "features": ["a", "b"]})
    assert verify_document(doc, pub, kind="spec", signer="curator") == {"id": "c", "features": ["a", "b"]}
    tampered = json.loads(json.dumps(doc))
    tampered["document"]["features"] = ["a"]
    for bad, kw in [
        (tampered, {"kind": "spec", "signer": "curator"}),
        (doc, {"kind": "plan", "signer": "curator"}),
        (doc, {"kind": "spec", "signer": "analyst"}),
        ({**doc, "signature": "AAAA"}, {"kind": "spec", "signer": "curator"}),
        ([1], {"kind": "spec", "signer": "curator"}),
    ]:
        with pytest.raises(MalformedMessageError):
            verify_document(bad, pub, **kw)  # type: ignore[arg-type]
    with pytest.raises(MalformedMessageError):
        verify_document(doc, ed25519.Ed25519PrivateKey.generate().public_key(), kind="spec", signer="curator")


@settings(max_examples=60, deadline=None)
@given(
    n=st.integers(1, 50),
    features=st.lists(st.integers(-3, 3), min_size=1, max_size=6),
)
def test_consistent_counts_keeps_exactly_the_features_that_add_up(n: int, features: list[int]) -> None:
    counts = {f"f{i}": {"v": max(0, n + d)} for i, d in enumerate(features)}
    ok, why = consistent_counts(counts, n)
    assert set(ok) | set(why) == set(counts)
    assert not set(ok) & set(why)
    for f, c in counts.items():
        assert (f in ok) == (sum(c.values()) == n)


def test_token_strength() -> None:
    assert token_bits(secrets.token_urlsafe(16)) >= 128
    assert token_bits("a" * 64) < 128
    assert token_bits(" " * 16) < 128


def test_key_files_carry_a_verification_key(tmp_path: Path) -> None:
    path = tmp_path / "k.json"
    generate_key_file(path)
    sk = read_signing_key(path)
    assert (tmp_path / "k.json.verify").read_text().strip() == verify_key_to_text(sk.public_key())
    old = json.loads(path.read_text())
    del old["signing"]
    path.unlink()
    path.write_text(json.dumps(old))
    path.chmod(0o600)
    with pytest.raises(ConfigError, match="no signing key"):
        read_signing_key(path)
