"""Generate ``count-check-v1.json``: the analyst's co-signature of a plan's or pair queries'
counts (issue 37), what a device must accept or refuse, for both SDKs.

Run from the repository root: ``PYTHONPATH=src python tests/protocol/vectors/generate_count_check.py``.

Keys are those of ``protocol-v1.json`` (fixed test material). Each case is a curator-signed spec
(``count_check`` set or not), a curator-signed plan or pair queries, the ``check`` a shuffler
relays with it (or none), and whether a device accepts it or the words of its refusal. Checked
by ``tests/protocol/test_count_check.py`` (Python's :func:`verify_countersigned` and ``Client``)
and ``clients/js/test/countcheck.test.mjs`` (the SDK).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from cryptography.hazmat.primitives.asymmetric import ed25519

from sdckit.protocol._recount import countersign
from sdckit.protocol._signing import sign_document

PATH = Path(__file__).with_name("count-check-v1.json")
PROTOCOL = json.loads(Path(__file__).with_name("protocol-v1.json").read_text())
CID = "vectors"


def _signing(role: str) -> ed25519.Ed25519PrivateKey:
    return ed25519.Ed25519PrivateKey.from_private_bytes(bytes.fromhex(PROTOCOL["keys"][role]["ed25519_seed"]))


def _doc(kind: str, signer: str) -> dict[str, Any]:
    return next(
        d["signed"]
        for d in PROTOCOL["documents"]
        if d["signed"]["kind"] == kind and d["signed"]["signer"] == signer
    )


def main() -> None:
    curator, analyst = _signing("curator"), _signing("analyst")
    spec = dict(_doc("spec", "curator")["document"])
    checked_spec = sign_document(curator, "spec", "curator", {**spec, "count_check": True})
    plain_spec = _doc("spec", "curator")
    cases: list[dict[str, Any]] = []
    for kind in ("plan", "pairs"):
        signed = _doc(kind, "curator")
        other = sign_document(curator, kind, "curator", {**signed["document"], "bound": 0.0001})
        good = countersign(analyst, kind, CID, signed["document"])
        cases += [
            {
                "name": f"{kind}: co-signed by the analyst",
                "kind": kind,
                "spec": checked_spec,
                "signed": signed,
                "check": good,
                "accept": True,
            },
            {
                "name": f"{kind}: no co-signature",
                "kind": kind,
                "spec": checked_spec,
                "signed": signed,
                "check": None,
                "refusal": "no co-signature",
            },
            {
                "name": f"{kind}: the co-signature of another document",
                "kind": kind,
                "spec": checked_spec,
                "signed": other,
                "check": good,
                "refusal": "another document",
            },
            {
                "name": f"{kind}: co-signed with the curator's key",
                "kind": kind,
                "spec": checked_spec,
                "signed": signed,
                "check": countersign(curator, kind, CID, signed["document"]),
                "refusal": "signature",
            },
            {
                "name": f"{kind}: a spec without count_check needs no co-signature",
                "kind": kind,
                "spec": plain_spec,
                "signed": signed,
                "check": None,
                "accept": True,
            },
        ]
    out = {"about": __doc__.splitlines()[0], "version": 1, "cases": cases}
    PATH.write_text(json.dumps(out, indent=1, sort_keys=True, ensure_ascii=False) + "\n")


if __name__ == "__main__":
    main()
