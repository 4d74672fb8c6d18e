"""The cross-language test vectors (tests/protocol/vectors/protocol-v1.json): decoded and verified
with the production code, and every deterministic field re-derived by the committed generator.
The TypeScript SDK checks the same file (clients/js/test/vectors.test.mjs)."""

from __future__ import annotations

import base64
import copy
import hashlib
import importlib.util
import json
import math
import struct
from pathlib import Path
from typing import Any

import pytest

from sdckit.errors import MalformedMessageError
from sdckit.protocol import REDACTED, PrivateKey, PublishedPlan, decode_value, encode_value
from sdckit.protocol._crypto import info_label, open_sealed
from sdckit.protocol._enrol import Credential, Issuer, _unb64
from sdckit.protocol._signing import canonical_json, verify_document, verify_key_from_text
from sdckit.protocol._wire import KIND_PAIR, pack_batch, unpack_batch, unpack_feature, unpack_row

VECTORS = Path(__file__).parent / "vectors"


def _generator() -> Any:
    spec = importlib.util.spec_from_file_location("sdckit_vectors_generate", VECTORS / "generate.py")
    assert spec is not None
    assert spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture(scope="module")
def vec() -> dict[str, Any]:
    return dict(json.loads((VECTORS / "protocol-v1.json").read_text()))


def _value(case: dict[str, Any]) -> Any:
    if case["kind"] == "float":
        return struct.unpack(">d", bytes.fromhex(case["bits"]))[0]
    if case["kind"] == "redacted":
        return REDACTED
    return case["json"]


def _randomised_out(v: dict[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(v)
    for r in out["rounds"]:
        r.pop("sealed")
    out["voprf"].pop("evaluation")
    return out


def test_the_file_is_what_the_generator_derives(vec: dict[str, Any]) -> None:
    fresh = json.loads(json.dumps(_generator().build()))  # through JSON, as the file was written
    assert _randomised_out(fresh) == _randomised_out(vec)


def test_jcs_canonical_forms(vec: dict[str, Any]) -> None:
    for case in vec["jcs"]:
        assert canonical_json(case["input"]).decode() == case["canonical"]
    # written out by hand from RFC 8785 §3.2: UTF-16 key order puts U+1F600 (D83D DE00) before
    # U+FB01, where Python's sort_keys (code points) puts it after; 1.0 is 1, 1e21 is 1e+21
    assert vec["jcs"][1]["canonical"] == '{"a":"\u2028\\u001f","€":"euro","😀":"smile","ﬁ":"ligature"}'
    assert json.dumps(vec["jcs"][1]["input"], sort_keys=True, ensure_ascii=False).index("ﬁ") < json.dumps(
        vec["jcs"][1]["input"], sort_keys=True, ensure_ascii=False
    ).index("😀")
    assert vec["jcs"][0]["canonical"] == (
        '{"a":[1,0.1,1e+21,1e-7,0,9007199254740991,123456789012.5],"b":1,"c":{"y":true,"z":null}}'
    )


def test_value_encodings(vec: dict[str, Any]) -> None:
    for case in vec["values"]:
        v = _value(case)
        assert encode_value(v) == case["encoded"], case
        back = decode_value(case["encoded"])
        assert (math.isnan(back) and math.isnan(v)) if isinstance(v, float) and math.isnan(v) else back == v
    got = {c["encoded"] for c in vec["values"]}
    # Python's repr by hand: scientific below 1e-4 and from 1e16, two exponent digits at least
    assert {
        "1e-05",
        "0.0001",
        "1e+16",
        "1000000000000000.0",
        "5e-324",
        "39.0",
        "0.0",
        '{"float":"-inf"}',
    } <= got


def test_signed_documents_verify_and_a_changed_byte_does_not(vec: dict[str, Any]) -> None:
    keys = {role: verify_key_from_text(k["verify_key"]) for role, k in vec["keys"].items()}
    kinds = []
    for d in vec["documents"]:
        signed = d["signed"]
        doc = verify_document(signed, keys[signed["signer"]], kind=signed["kind"], signer=signed["signer"])
        assert (
            canonical_json({"kind": signed["kind"], "signer": signed["signer"], "document": doc}).decode()
            == d["canonical"]
        )
        kinds.append(signed["kind"])
        altered = copy.deepcopy(signed)
        first = next(iter(altered["document"]))
        altered["document"][first] = "x" if altered["document"][first] != "x" else "y"
        with pytest.raises(MalformedMessageError):
            verify_document(altered, keys[signed["signer"]], kind=signed["kind"], signer=signed["signer"])
    assert kinds == ["keys", "keys", "keys", "spec", "enrolment", "plan", "pairs"]
    # JCS numbers, by hand: Python's json would write 1.0, 1e-07 and 0.0
    spec_text, plan_text = vec["documents"][3]["canonical"], vec["documents"][5]["canonical"]
    assert '"max_budget":1,' in spec_text
    assert '"pair_bound":1e-7,' in plan_text
    assert '"pair_measured":0,' in plan_text


def test_wire_frames_decode(vec: dict[str, Any]) -> None:
    w = vec["wire"]
    salt = bytes.fromhex(w["salt"])
    for f in w["features"]:
        plain = bytes.fromhex(f["plaintext"])
        msg = unpack_feature(plain, w["round1_pad"])
        assert (msg.feature, msg.value_key, msg.salt) == (
            f["feature"],
            encode_value(_value(f["value"])),
            salt,
        )
        # by hand: version 1, kind 1, the salt, a 2-byte big-endian length, the body, zeros
        body = json.dumps([f["feature"], _value(f["value"])], separators=(",", ":")).encode()
        assert plain == b"\x01\x01" + salt + len(body).to_bytes(2, "big") + body + bytes(
            w["round1_pad"] - 20 - len(body)
        )
    for r in w["rows"]:
        msg = unpack_row(bytes.fromhex(r["plaintext"]), r["pad"], kind=r["kind"])
        assert list(msg.columns) == r["columns"]
        assert [encode_value(v) for v in msg.values] == [encode_value(_value(v)) for v in r["values"]]
    assert w["rows"][1]["kind"] == KIND_PAIR
    messages = [bytes.fromhex(m) for m in w["batch"]["messages"]]
    frame = bytes.fromhex(w["batch"]["frame"])
    assert unpack_batch(frame) == messages
    assert pack_batch(messages) == frame
    assert frame[:13] == b"SDCB\x01\x00\x00\x00\x03\x00\x00\x00\x02"  # by hand: magic, version, count, length


def test_each_rounds_message_opens_with_the_fixed_keys(vec: dict[str, Any]) -> None:
    keys = {
        role: PrivateKey.from_bytes("x25519", bytes.fromhex(k["hpke_secret"]))
        for role, k in vec["keys"].items()
    }
    for role, k in vec["keys"].items():
        assert keys[role].public_key().to_text() == k["hpke_public"]
    plan_doc = next(d["signed"]["document"] for d in vec["documents"] if d["signed"]["kind"] == "plan")
    for r in vec["rounds"]:
        # round 2's outer label carries the SHA-256 of the plan's JCS bytes, as both SDKs compute it
        bound = hashlib.sha256(canonical_json(plan_doc)).hexdigest() if r["round"] == 2 else None
        assert r.get("plan_sha256") == bound
        if bound is not None:
            assert PublishedPlan.from_dict(plan_doc).sha256() == bound
        assert r["info_outer"] == info_label("vectors", r["round"], "shuffler", plan_sha256=bound).decode()
        sealed = bytes.fromhex(r["sealed"])
        inner = open_sealed(keys["shuffler"], sealed, r["info_outer"].encode())
        assert open_sealed(keys[r["inner"]], inner, r["info_inner"].encode()).hex() == r["plaintext"]
        assert len(sealed) == 32 + 32 + len(r["plaintext"]) // 2 + 16 + 16
        with pytest.raises(MalformedMessageError):  # another round's label does not open it
            open_sealed(keys["shuffler"], sealed, r["info_inner"].encode())


def test_voprf_keys_credentials_and_the_batch_answer(vec: dict[str, Any]) -> None:
    v = vec["voprf"]
    issuer = Issuer(bytes.fromhex(v["seed"]), v["collection"])
    assert issuer.public_keys == {str(k["round"]): k["public_key"] for k in v["keys"]}
    for c in v["credentials"]:
        cred = Credential.from_text(c["text"], c["round"])
        assert (cred.nonce.hex(), cred.output.hex(), cred.id.hex()) == (c["nonce"], c["output"], c["id"])
        assert issuer.verify(cred)
        assert not issuer.verify(
            Credential(c["round"] % 3 + 1, cred.nonce, cred.output)
        )  # another round's key
    answer = _unb64(v["evaluation"]["answer"], "answer")
    assert len(answer) == 64 + 32  # the DLEQ proof (c, s), then the one evaluated element
    assert len(base64.urlsafe_b64decode(v["evaluation"]["blinded"] + "=")) == 32


NODE_SEAL = """
import { readFileSync } from "node:fs";
const sdk = await import(process.argv[2]);
const vec = JSON.parse(readFileSync(process.argv[3], "utf8"));
const out = [];
for (const r of vec.rounds) {
  const inner = await sdk.seal(sdk.PublicKey.fromText(vec.keys[r.inner].hpke_public), sdk.fromHex(r.plaintext),
                               new TextEncoder().encode(r.info_inner));
  const outer = await sdk.seal(sdk.PublicKey.fromText(vec.keys.shuffler.hpke_public), inner,
                               new TextEncoder().encode(r.info_outer));
  out.push(sdk.toHex(outer));
}
console.log(JSON.stringify(out));
"""


def test_messages_sealed_by_the_sdk_open_in_python(vec: dict[str, Any], tmp_path: Path) -> None:
    """The other direction of the HPKE vectors: the TypeScript SDK seals each round's plaintext
    (in Node.js), the production code opens it (the browser test does the same over HTTP)."""
    import shutil
    import subprocess

    node = shutil.which("node")
    bundle = Path(__file__).resolve().parents[2] / "clients" / "js" / "dist" / "sdckit-device.mjs"
    if node is None or not bundle.exists():
        pytest.skip("needs node and the built SDK (`make test`, or `npm ci && npm run build` in clients/js)")
    script = tmp_path / "seal.mjs"
    script.write_text(NODE_SEAL)
    run = subprocess.run(
        [node, str(script), bundle.as_uri(), str(VECTORS / "protocol-v1.json")],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    sealed = json.loads(run.stdout)
    keys = {
        role: PrivateKey.from_bytes("x25519", bytes.fromhex(k["hpke_secret"]))
        for role, k in vec["keys"].items()
    }
    for r, ct in zip(vec["rounds"], sealed, strict=True):
        inner = open_sealed(keys["shuffler"], bytes.fromhex(ct), r["info_outer"].encode())
        assert open_sealed(keys[r["inner"]], inner, r["info_inner"].encode()).hex() == r["plaintext"]
        assert ct != r["sealed"]  # randomised: a fresh ephemeral key per seal


@pytest.mark.parametrize("bad", [float("nan"), 2**53, {1: "a non-text key"}, "\ud800"])
def test_a_document_jcs_cannot_represent_is_refused_when_signed(bad: Any) -> None:
    from cryptography.hazmat.primitives.asymmetric import ed25519

    from sdckit.errors import ParameterError
    from sdckit.protocol._signing import sign_document

    with pytest.raises(ParameterError, match="cannot be signed"):
        sign_document(ed25519.Ed25519PrivateKey.generate(), "plan", "curator", {"x": bad})
