"""Generate ``protocol-v1.json``, the cross-language test vectors of the shuffle protocol.

Run from the repository root: ``python tests/protocol/vectors/generate.py`` (writes the file
beside this script). Every key and seed is fixed (SHA-256 of a public label: they protect
nothing), so every field is reproducible except the HPKE ciphertexts and the VOPRF proof, which
the libraries randomise (a fresh ephemeral key, a fresh proof nonce): for those the file holds
the output of one run, and the checks open or verify them instead of comparing bytes.

Checked by ``tests/protocol/test_vectors.py`` (Python: decodes and verifies with the production
code, and re-derives every deterministic field) and ``clients/js/test/vectors.test.mjs`` (the
TypeScript SDK).
"""

from __future__ import annotations

import hashlib
import json
import math
import random
import struct
import sys
from pathlib import Path
from typing import Any

from cryptography.hazmat.primitives.asymmetric import ed25519
from voprf import ristretto

from sdckit.protocol import REDACTED, CollectionSpec, PrivateKey
from sdckit.protocol._crypto import info_label, seal
from sdckit.protocol._enrol import _KEY_INFO, ENROL_ROUNDS, Credential, Issuer, _b64, token_input
from sdckit.protocol._signing import canonical_json, sign_document, verify_key_to_text
from sdckit.protocol._spec import PAIR_ROUND, PairQueries, PairQuery, PublishedPlan, Redaction
from sdckit.protocol._wire import KIND_PAIR, encode_value, pack_batch, pack_feature, pack_row

PATH = Path(__file__).with_name("protocol-v1.json")
COLLECTION = "vectors"


def fixed(label: str, n: int = 32) -> bytes:
    """``n`` bytes fixed by ``label`` (public test material, never a secret)."""
    return hashlib.sha256(f"sdckit/test-vectors/v1|{label}".encode()).digest()[:n]


def float_bits(x: float) -> str:
    return struct.pack(">d", x).hex()


# values as the TypeScript side builds them: a JavaScript number is an int when it is a safe
# integer, else a float; "float" wraps a whole float (FloatValue); bits give the exact double
VALUE_CASES: list[tuple[str, Any]] = [
    ("null", None),
    ("bool", True),
    ("bool", False),
    ("int", 0),
    ("int", 39),
    ("int", -7),
    ("int", 2**53 - 1),
    ("str", "Male"),
    ("str", ""),
    ("str", 'quote " backslash \\ tab \t newline \n nul \x00 del \x7f'),
    ("str", "Zürich € 😀 \u2028"),
    ("redacted", REDACTED),
    *[
        ("float", x)
        for x in (
            0.0,
            -0.0,
            39.0,
            39.5,
            -2.5,
            0.1,
            1 / 3,
            1e16,
            1e15,
            123456789012345.6,
            1e-4,
            1e-5,
            1.5e-7,
            5e-324,
            1.7976931348623157e308,
            2.0**53,
            2.0**60,
            1e21,
            1e22,
            100.0,
            float("nan"),
            float("inf"),
            float("-inf"),
        )
    ],
]


def _random_doubles(n: int) -> list[float]:
    """``n`` finite doubles from every exponent range (fixed bit patterns: reproducible)."""
    rng = random.Random(20240101)
    out: list[float] = []
    while len(out) < n:
        x = struct.unpack(">d", rng.getrandbits(64).to_bytes(8, "big"))[0]
        if math.isfinite(x):
            out.append(x)
    return out


VALUE_CASES += [("float", x) for x in _random_doubles(300)]
VALUE_CASES += [
    ("float", float(rng_x)) for rng_x in (0.5, 1.25, 7e-5, 9.999999999999999e15, 1.0000000000000002)
]


def _value_json(kind: str, v: Any) -> dict[str, Any]:
    if kind == "float":
        return {"kind": kind, "bits": float_bits(v)}
    if kind == "redacted":
        return {"kind": kind}
    return {"kind": kind, "json": v}


def _keys() -> dict[str, tuple[PrivateKey, ed25519.Ed25519PrivateKey]]:
    return {
        role: (
            PrivateKey.from_bytes("x25519", fixed(f"{role}|x25519")),
            ed25519.Ed25519PrivateKey.from_private_bytes(fixed(f"{role}|ed25519")),
        )
        for role in ("shuffler", "curator", "analyst")
    }


JCS_CASES: list[Any] = [
    {"b": 1, "a": [1.0, 0.1, 1e21, 1e-7, -0.0, 2**53 - 1, 123456789012.5], "c": {"z": None, "y": True}},
    {"\u20ac": "euro", "\U0001f600": "smile", "\ufb01": "ligature", "a": "\u2028\x1f"},
    [{"budget": 0.05, "bound": 0.012345678901234568, "k": 5}],
]


def build() -> dict[str, Any]:
    """Every vector; the sealed ciphertexts and the VOPRF proof are fresh on each call."""
    keys = _keys()
    pub = {role: k.public_key().to_text() for role, (k, _) in keys.items()}
    verify = {role: verify_key_to_text(s.public_key()) for role, (_, s) in keys.items()}
    spec = CollectionSpec(
        id=COLLECTION,
        features=("age", "sex", "race"),
        round1_pad=64,
        round2_pad=128,
        max_budget=1.0,  # a whole float: JCS writes 1, Python's json 1.0
        keys=dict(pub),
        count_check=False,  # protocol v1's spec as first signed (the check has its own vectors)
    )
    plan = PublishedPlan(
        collection=COLLECTION,
        columns=("age", "sex"),
        k=2,  # honest: the counts give 0.1 + the decoy allowance 2 x 7 / 40 = 0.45 (both SDKs recompute it)
        budget=0.5,
        bound=0.46,
        method="best",
        excluded={"race": "above the budget"},
        n_round1=40,
        rounds=("singles", "pairs", "release"),
        pair_bound=1e-07,  # JCS writes 1e-7, Python's json 1e-07
        pair_measured=0.0,
        redactions=(Redaction(feature="sex", value_key=encode_value("Other"), probability=0.25),),
        recodings={
            "age": {encode_value(a): encode_value(f"{a // 10 * 10}-{a // 10 * 10 + 9}") for a in (38, 39, 52)}
        },
        evidence={
            "n": 40,
            "counts": {"age": {'"30-39"': 30, '"50-59"': 10}, "sex": {'"Male"': 25, '"Female"': 15}},
        },
    )
    pairs = PairQueries(
        collection=COLLECTION,
        k=5,
        queries=(PairQuery(columns=("sex", "race"), redact={"race": ('"Other"',)}, bound=0.4),),
        bound=0.4,  # honest: Theorem 2 with nothing sacrificed, 4 x 4 / 40
        budget=0.5,
        pad=96,
        evidence={"race": {'"White"': 30, '{"redacted":true}': 10}, "sex": {'"Male"': 25, '"Female"': 15}},
    )
    seed = fixed("enrolment seed")
    issuer = Issuer(seed, COLLECTION)
    terms = {
        "collection": COLLECTION,
        "enrolment": "tokens",
        "issuer_keys": issuer.public_keys,
        "min_batch": 100,
        "keys": dict(pub),
        "message_lengths": {"1": 32 + 32 + 64 + 16 + 16, "2": 32 + 32 + 128 + 16 + 16},
    }
    documents = [
        sign_document(
            keys["curator"][1],
            "keys",
            "curator",
            {"role": "curator", "suite": "x25519", "public_key": pub["curator"]},
        ),
        sign_document(
            keys["analyst"][1],
            "keys",
            "analyst",
            {"role": "analyst", "suite": "x25519", "public_key": pub["analyst"]},
        ),
        sign_document(
            keys["shuffler"][1],
            "keys",
            "shuffler",
            {"role": "shuffler", "suite": "x25519", "public_key": pub["shuffler"]},
        ),
        sign_document(keys["curator"][1], "spec", "curator", spec.to_dict()),
        sign_document(keys["shuffler"][1], "enrolment", "shuffler", terms),
        sign_document(keys["curator"][1], "plan", "curator", plan.to_dict()),
        sign_document(keys["curator"][1], "pairs", "curator", pairs.to_dict()),
    ]
    salt = fixed("salt", 16)
    row = {"age": 39, "sex": "Male", "race": "White"}
    features = [
        {
            "feature": f,
            "value": _value_json("int" if f == "age" else "str", row[f]),
            "plaintext": pack_feature(f, row[f], salt, spec.round1_pad).hex(),
        }
        for f in spec.features
    ]
    rows = [
        {
            "kind": 2,
            "pad": spec.round2_pad,
            "columns": ["age", "sex"],
            "values": [_value_json("str", "30-39"), _value_json("redacted", REDACTED)],
            "plaintext": pack_row(["age", "sex"], ["30-39", REDACTED], salt, spec.round2_pad).hex(),
        },
        {
            "kind": KIND_PAIR,
            "pad": pairs.pad,
            "columns": ["sex", "race"],
            "values": [_value_json("str", "Male"), _value_json("float", 2.5)],
            "plaintext": pack_row(["sex", "race"], ["Male", 2.5], salt, pairs.pad, kind=KIND_PAIR).hex(),
        },
    ]

    # each round's message on the wire: Enc(shuffler, Enc(inner recipient, plaintext)), then a batch
    def double(round_: int, inner: str, plain: bytes) -> str:
        sealed = seal(keys[inner][0].public_key(), plain, info_label(COLLECTION, round_, inner))  # type: ignore[arg-type]
        bound = plan.sha256() if round_ == 2 else None  # round 2: the plan's hash in the outer label
        return seal(
            keys["shuffler"][0].public_key(), sealed, info_label(COLLECTION, round_, "shuffler", plan_sha256=bound)
        ).hex()

    rounds = [
        {"round": 1, "inner": "curator", "plaintext": features[0]["plaintext"]},
        {"round": PAIR_ROUND, "inner": "curator", "plaintext": rows[1]["plaintext"]},
        {"round": 2, "inner": "analyst", "plaintext": rows[0]["plaintext"]},
    ]
    for r in rounds:
        r["sealed"] = double(r["round"], r["inner"], bytes.fromhex(r["plaintext"]))
        bound = plan.sha256() if r["round"] == 2 else None
        if bound is not None:
            r["plan_sha256"] = bound
        r["info_outer"] = info_label(COLLECTION, r["round"], "shuffler", plan_sha256=bound).decode()
        r["info_inner"] = info_label(COLLECTION, r["round"], r["inner"]).decode()  # type: ignore[arg-type]
    batch = [bytes.fromhex("00ff"), b"", bytes(range(5))]
    credentials = []
    for r in ENROL_ROUNDS:
        nonce = fixed(f"nonce|{r}")
        c = Credential(r, nonce, issuer._ev[r].evaluate_known_input(token_input(COLLECTION, r, nonce)))
        credentials.append(
            {
                "round": r,
                "nonce": nonce.hex(),
                "token_input": token_input(COLLECTION, r, nonce).hex(),
                "output": c.output.hex(),
                "text": c.to_text(),
                "id": c.id.hex(),
            }
        )
    _client, blinded = ristretto.Client.blind(token_input(COLLECTION, 1, fixed("nonce|1")))
    answer = issuer.evaluate([[_b64(blinded.serialize())]])["1"]
    return {
        "version": 1,
        "about": (
            "sdckit shuffle protocol v1 test vectors (docs/protocol.md, 'Wire format'); generated by "
            "tests/protocol/vectors/generate.py from fixed keys. Hex unless named text or base64url."
        ),
        "jcs": [{"input": c, "canonical": canonical_json(c).decode()} for c in JCS_CASES],
        "values": [{**_value_json(kind, v), "encoded": encode_value(v)} for kind, v in VALUE_CASES],
        "keys": {
            role: {
                "hpke_secret": k.to_bytes().hex(),
                "hpke_public": pub[role],
                "ed25519_seed": s.private_bytes_raw().hex(),
                "verify_key": verify[role],
            }
            for role, (k, s) in keys.items()
        },
        "documents": [
            {
                "signed": d,
                "canonical": canonical_json({k: d[k] for k in ("kind", "signer", "document")}).decode(),
            }
            for d in documents
        ],
        "wire": {
            "salt": salt.hex(),
            "round1_pad": spec.round1_pad,
            "features": features,
            "rows": rows,
            "batch": {"messages": [m.hex() for m in batch], "frame": pack_batch(batch).hex()},
        },
        "rounds": rounds,
        "voprf": {
            "suite": "ristretto255-SHA512",
            "mode": "VOPRF",
            "seed": seed.hex(),
            "collection": COLLECTION,
            "keys": [
                {
                    "round": r,
                    "info": (_KEY_INFO + f"{COLLECTION}|round={r}".encode()).decode(),
                    "public_key": issuer.public_keys[str(r)],
                }
                for r in ENROL_ROUNDS
            ],
            "credentials": credentials,
            "evaluation": {"round": 1, "blinded": _b64(blinded.serialize()), "answer": answer},
        },
    }


def main() -> None:
    PATH.write_text(json.dumps(build(), indent=1, ensure_ascii=False) + "\n")
    print(f"wrote {PATH}", file=sys.stderr)


if __name__ == "__main__":
    main()
