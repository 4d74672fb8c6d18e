"""Generate ``checks-v1.json``: what a device must accept or refuse, for both SDKs (issue 37).

Run from the repository root: ``PYTHONPATH=src python tests/protocol/vectors/generate_checks.py``.

Each plan and pair-query case says either the bound a device recomputes from the published
counts or the words of its refusal. The expected bounds are NOT taken from the code under test:
they come from :func:`brute_bound` below, an exhaustive search over every sacrifice vector r of
Theorem 2 (w_j = m_j - r_j) and Theorem 3 (w_j = n / c_j,(r_j+1)) and the support bound
(anonymity notes §2), plus the closed-form allowances (decoys: k D / n with Bernstein's D;
moved messages: k D / n). Checked by ``tests/protocol/test_check_vectors.py`` (Python's
``verify_plan``/``verify_pairs``/``Client``) and ``clients/js/test/checks.test.mjs`` (the SDK).
"""

from __future__ import annotations

import copy
import hashlib
import itertools
import json
import math
from pathlib import Path
from typing import Any

from cryptography.hazmat.primitives.asymmetric import ed25519

from sdckit.protocol import REDACTED, CollectionSpec, PrivateKey, encode_value
from sdckit.protocol._signing import sign_document, verify_key_to_text

PATH = Path(__file__).with_name("checks-v1.json")
CID = "checks"
RK = encode_value(REDACTED)


def fixed(label: str) -> bytes:
    """32 bytes fixed by ``label`` (public test material, never a secret)."""
    return hashlib.sha256(f"sdckit/check-vectors/v1|{label}".encode()).digest()


def brute_bound(counts: list[list[int]], n: int, k: int, method: str = "best") -> float:
    """min over every r of sum_j S_j(r_j) / n + tau prod_j w_j(r_j), by exhaustive search."""
    tau = (k - 1) / n
    if not counts:
        return 1.0 if n <= k - 1 else 0.0
    cs = [sorted(c) for c in counts]
    out = []
    if method in ("support", "best"):
        out.append(min(1.0, tau * math.prod(len(c) for c in cs)))
    for kind in ("theorem2", "theorem3"):
        if method not in (kind, "best"):
            continue
        best = math.inf
        for r in itertools.product(*(range(len(c)) for c in cs)):
            s = sum(sum(c[:rj]) for c, rj in zip(cs, r, strict=True))
            w = math.prod(
                (len(c) - rj) if kind == "theorem2" else n / c[rj] for c, rj in zip(cs, r, strict=True)
            )
            best = min(best, s / n + tau * w)
        out.append(min(1.0, best))
    return min(out)


def decoy_allowance(rules: int, k: int, n: int, delta: float = 0.05) -> float:
    mu = rules * min(k, n)
    L = math.log(1 / delta)
    return min(1.0, k * math.ceil(mu + L / 3 + math.sqrt(L * L / 9 + 2 * mu * L)) / n)


SPEC = {"id": CID, "features": ["age", "sex", "race", "edu"], "min_k": 2, "max_budget": 0.5}

# 60 users: honest counts of four columns
AGE = {'"20-29"': 22, '"30-39"': 20, '"40-49"': 12, '"50+"': 6}
SEX = {'"Male"': 35, '"Female"': 25}
RACE = {'"White"': 48, '"Black"': 9, RK: 3}
EDU = {'"HS"': 30, '"BSc"': 20, '"MSc"': 7, '"PhD"': 3}


def plan(
    columns: list[str], counts: dict[str, dict[str, int]], k: int, bound: float, **more: Any
) -> dict[str, Any]:
    n = sum(next(iter(counts.values())).values()) if counts else 0
    d: dict[str, Any] = {
        "collection": CID,
        "columns": columns,
        "k": k,
        "budget": 0.5,
        "bound": bound,
        "method": "best",
        "excluded": {},
        "n_round1": n,
        "setting": "fixed",
        "redactions": [],
        "rounds": ["singles", "release"],
        "pair_bound": None,
        "pair_measured": None,
    }
    if columns:
        d["evidence"] = {"n": n, "counts": {c: counts[c] for c in columns}}
    for key, v in more.items():
        if key in ("delta", "moved", "blocks"):
            d["evidence"][key] = v
        else:
            d[key] = v
    return d


def vec(c: dict[str, int]) -> list[int]:
    return list(c.values())


def plan_cases() -> list[dict[str, Any]]:
    cases: list[dict[str, Any]] = []

    def ok(name: str, p: dict[str, Any], bound: float, spec: dict[str, Any] | None = None) -> None:
        cases.append({"name": name, "plan": p, "spec": spec or SPEC, "bound": bound, "refused": None})

    def no(name: str, p: dict[str, Any], words: str, spec: dict[str, Any] | None = None) -> None:
        cases.append({"name": name, "plan": p, "spec": spec or SPEC, "bound": None, "refused": words})

    two = {"age": AGE, "sex": SEX}
    b2 = brute_bound([vec(AGE), vec(SEX)], 60, 3)
    ok("honest: two columns, the exact bound claimed", plan(["age", "sex"], two, 3, b2), b2)
    ok("honest: a looser claim is accepted", plan(["age", "sex"], two, 3, min(0.5, b2 + 0.01)), b2)
    four = {
        c: {v: 10 * x for v, x in m.items()}
        for c, m in (("age", AGE), ("sex", SEX), ("race", RACE), ("edu", EDU))
    }
    b4 = brute_bound([vec(x) for x in four.values()], 600, 2)
    assert b4 <= 0.5, b4
    ok("honest: four columns", plan(list(four), four, 2, b4), b4)
    ok("nothing planned: bound 0", plan([], {}, 3, 0.0), 0.0)
    sup = brute_bound([vec(AGE), vec(SEX)], 60, 2, "support")
    ok(
        "the spec's support bound",
        plan(["age", "sex"], two, 2, sup),
        sup,
        {**SPEC, "bound_method": "support"},
    )
    dec = brute_bound([vec(AGE), vec(SEX)], 60, 2) + decoy_allowance(1, 2, 60)
    redaction = [{"feature": "sex", "value_key": '"Other"', "probability": 0.1}]
    ok("honest: the decoy allowance added", plan(["age", "sex"], two, 2, dec, redactions=redaction), dec)
    mv = brute_bound([vec(AGE), vec(SEX)], 60, 2) + 2 * 3 / 60
    ok("honest: the moved messages' allowance added", plan(["age", "sex"], two, 2, mv, moved=3), mv)

    # a pair table inside the plan: J is the known block itself, so the bound is its exact exposure
    # (cells of at most k - 1 users), below what the single columns give
    def cells(t: dict[tuple[str, str], int]) -> list[list[Any]]:
        return sorted([a, b, x] for (a, b), x in t.items())

    full = {('"20-29"', '"Male"'): 13, ('"20-29"', '"Female"'): 9, ('"30-39"', '"Male"'): 12,
            ('"30-39"', '"Female"'): 8, ('"40-49"', '"Male"'): 7, ('"40-49"', '"Female"'): 5,
            ('"50+"', '"Male"'): 3, ('"50+"', '"Female"'): 3}  # fmt: skip
    exposure = sum(x for x in full.values() if x <= 2) / 60
    assert exposure == 0.0 < b2
    ok(
        "honest: a pair table backs a claim below the single columns' bound",
        plan(["age", "sex"], two, 3, 0.01, blocks=[{"columns": ["age", "sex"], "cells": cells(full)}]),
        exposure,
    )
    thin = {**full, ('"40-49"', '"Male"'): 6, ('"40-49"', '"Female"'): 6, ('"50+"', '"Male"'): 4,
            ('"50+"', '"Female"'): 2}  # fmt: skip
    assert sum(x for x in thin.values() if x <= 2) / 60 > 0.01
    no(
        "a pair table that does not back the claim",
        plan(["age", "sex"], two, 3, 0.01, blocks=[{"columns": ["age", "sex"], "cells": cells(thin)}]),
        "claims a bound",
    )

    # refusals: one per check
    # issue 37: a plan claiming 0.004 over 4 columns whose own counts give 1.0 (here 60 users, k 20)
    small = {"age": AGE, "sex": SEX, "race": RACE, "edu": EDU}
    assert brute_bound([vec(x) for x in small.values()], 60, 20) == 1.0
    no("the false bound of issue 37", plan(list(small), small, 20, 0.004), "claims a bound")
    no("a claim just below the recomputed bound", plan(["age", "sex"], two, 3, b2 * 0.999), "claims a bound")
    no("k below the floor", plan(["age", "sex"], two, 1, 0.0), "min_k")
    no("budget above the ceiling", {**plan(["age", "sex"], two, 3, b2), "budget": 0.9}, "max_budget")
    no("bound above its budget", {**plan(["age", "sex"], two, 3, b2), "budget": 0.01}, "above its budget")
    no("another collection", {**plan(["age", "sex"], two, 3, b2), "collection": "other"}, "for collection")
    no("another setting", {**plan(["age", "sex"], two, 3, b2), "setting": "statistical"}, "setting")
    p = plan(["age", "sex"], two, 3, b2)
    del p["evidence"]
    no("no published counts", p, "does not publish the counts")
    p = plan(["age", "sex"], two, 3, b2)
    del p["evidence"]["counts"]["sex"]
    no("the counts of a column missing", p, "does not publish the counts")
    p = plan(["age", "sex"], two, 3, b2)
    p["n_round1"] = 59
    no("counts of more users than it says", p, "users but it says")
    no(
        "columns counting different users",
        plan(["age", "sex"], {"age": AGE, "sex": {'"Male"': 35, '"Female"': 24}}, 3, b2),
        "do not parse",
    )
    no(
        "a count that is not a whole number",
        plan(["age", "sex"], {"age": AGE, "sex": {'"Male"': 35, '"Female"': 25.5}}, 3, b2),
        "do not parse",
    )
    p = plan(["age", "sex"], two, 3, b2, recodings={"age": {"25": '"20-29"', "33": '"30-39"'}})
    no("a recoded column counting values its recoding cannot produce", p, "recoding cannot produce")
    no(
        "the decoy allowance left out",
        plan(["age", "sex"], two, 2, dec - 0.05, redactions=redaction),
        "claims a bound",
    )
    no(
        "a redaction rule outside the plan",
        plan(["age", "sex"], two, 2, 0.5, redactions=[{**redaction[0], "feature": "race"}]),
        "outside the plan",
    )
    no(
        "the moved messages' allowance left out",
        plan(["age", "sex"], two, 2, mv - 0.05, moved=3),
        "claims a bound",
    )
    no("a negative count of moved messages", plan(["age", "sex"], two, 2, 0.5, moved=-1), "moved messages")
    return cases


def pairs(
    queries: list[tuple[list[str], float]],
    evidence: dict[str, dict[str, int]],
    k: int,
    bound: float,
    budget: float = 0.5,
) -> dict[str, Any]:
    return {
        "collection": CID,
        "k": k,
        "queries": [{"columns": c, "redact": {}, "bound": b} for c, b in queries],
        "bound": bound,
        "budget": budget,
        "pad": 96,
        "evidence": evidence,
    }


def pair_cases() -> list[dict[str, Any]]:
    cases: list[dict[str, Any]] = []
    ev = {"sex": SEX, "race": {'"White"': 48, '"Black"': 9, RK: 3}, "edu": {'"HS"': 30, '"BSc"': 20, RK: 10}}
    b1 = brute_bound([vec(SEX), vec(ev["race"])], 60, 3)
    b2 = brute_bound([vec(SEX), vec(ev["edu"])], 60, 3)
    total = min(1.0, b1 + b2)
    cases.append(
        {
            "name": "honest: two queries",
            "pairs": pairs([(["sex", "race"], b1), (["sex", "edu"], b2)], ev, 3, total),
            "spec": SPEC,
            "bound": total,
            "refused": None,
        }
    )

    def no(name: str, q: dict[str, Any], words: str) -> None:
        cases.append({"name": name, "pairs": q, "spec": SPEC, "bound": None, "refused": words})

    no(
        "a query claiming less than its counts give",
        pairs([(["sex", "race"], b1 / 2)], {c: ev[c] for c in ("sex", "race")}, 3, b1 / 2),
        "claims a bound",
    )
    no(
        "a value held by fewer than k published",
        pairs([(["sex", "race"], 0.5)], {"sex": SEX, "race": RACE | {'"Black"': 2, RK: 10}}, 3, 0.5),
        "fewer than k",
    )
    no("no published counts", pairs([(["sex", "race"], b1)], {}, 3, b1), "do not publish the counts")
    no(
        "k below the floor",
        pairs([(["sex", "race"], b1)], {c: ev[c] for c in ("sex", "race")}, 1, b1),
        "min_k",
    )
    no(
        "bounds above the budget",
        pairs([(["sex", "race"], b1), (["sex", "edu"], b2)], ev, 3, 0.2, budget=0.2),
        "above the budget",
    )
    return cases


def own_value_cases() -> list[dict[str, Any]]:
    """A device refuses counts that do not list its own value of an unrecoded planned column."""
    two = {"age": AGE, "sex": SEX}
    b = brute_bound([vec(AGE), vec(SEX)], 60, 3)
    honest = plan(["age", "sex"], two, 3, b)
    # issue 37: every user on one value per column (its bound checks out)
    one = {"age": {'"20-29"': 60}, "sex": {'"Male"': 60}}
    lying = plan(["age", "sex"], one, 3, 0.04)  # its counts give (k - 1) / n = 0.033: backed
    recoded = plan(["age", "sex"], two, 3, b, recodings={"age": {"25": '"20-29"'}})
    ruled = plan(
        ["age", "sex"],
        two,
        3,
        0.5,
        redactions=[{"feature": "sex", "value_key": '"Other"', "probability": 0.1}],
    )
    return [
        {
            "name": "own values listed",
            "plan": honest,
            "row": {"age": "20-29", "sex": "Male"},
            "refused": None,
        },
        {
            "name": "lying plan, the listed values",
            "plan": lying,
            "row": {"age": "20-29", "sex": "Male"},
            "refused": None,
        },
        {
            "name": "lying plan, another age",
            "plan": lying,
            "row": {"age": "50+", "sex": "Male"},
            "refused": "do not list this device's own value",
        },
        {
            "name": "lying plan, another sex",
            "plan": lying,
            "row": {"age": "20-29", "sex": "Female"},
            "refused": "do not list this device's own value",
        },
        {
            "name": "a recoded column is not checked",
            "plan": recoded,
            "row": {"age": 99, "sex": "Male"},
            "refused": None,
        },
        {
            "name": "a value a redaction rule redacts",
            "plan": ruled,
            "row": {"age": "20-29", "sex": "Other"},
            "refused": None,
        },
        {
            "name": "an unlisted value with no rule",
            "plan": ruled,
            "row": {"age": "20-29", "sex": "X"},
            "refused": "do not list this device's own value",
        },
    ]


def spec_cases(signing: ed25519.Ed25519PrivateKey) -> list[dict[str, Any]]:
    keys = {
        r: PrivateKey.from_bytes("x25519", fixed(f"hpke {r}")).public_key().to_text()
        for r in ("curator", "analyst", "shuffler")
    }
    out = []
    for pinned in [
        ("curator", "analyst", "shuffler"),
        (),
        ("curator",),
        ("curator", "analyst"),
        ("curator", "shuffler"),
        ("analyst", "shuffler"),
    ]:
        # without count_check: these vectors are about pinning (devices that take them opt out)
        spec = CollectionSpec(id=CID, features=("age", "sex"), keys={r: keys[r] for r in pinned}, count_check=False)
        missing = [r for r in ("curator", "analyst", "shuffler") if r not in pinned]
        out.append({"signed": sign_document(signing, "spec", "curator", spec.to_dict()), "unpinned": missing})
    return out


def main() -> None:
    signing = ed25519.Ed25519PrivateKey.from_private_bytes(fixed("ed25519 curator"))
    data = {
        "version": 1,
        "about": __doc__.splitlines()[0],
        "verify_key": verify_key_to_text(signing.public_key()),
        "specs": spec_cases(signing),
        "plans": plan_cases(),
        "pairs": pair_cases(),
        "own_values": own_value_cases(),
    }
    # the cases mutate dicts built from shared ones: write a deep copy, sorted keys for stable diffs
    PATH.write_text(json.dumps(copy.deepcopy(data), indent=1, sort_keys=True) + "\n")
    print(f"wrote {PATH}")


if __name__ == "__main__":
    main()
