"""Counts a second party checks (issue 37): the analyst recounts a plan's or pair queries'
published counts from the round-1 messages it received itself, and co-signs them.

In a collection whose spec sets ``count_check``, every device seals each round-1 and pair-round
message twice: to the curator and, under its own HPKE ``info`` (``round=1|to=analyst``,
``round=3|to=analyst``), to the analyst (:meth:`sdckit.protocol.User.round1`,
:meth:`~sdckit.protocol.User.pairs`). The shuffler forwards each copy to its owner. Before a
plan or pair queries reach a device, the analyst compares their evidence with its own counts
(:func:`recount_problems`) and signs a ``check`` document naming the exact document it checked
(the SHA-256 of its RFC 8785 bytes, :func:`countersign`); devices and the shuffler refuse a plan or
queries without that signature (:func:`verify_countersigned`). A curator that lies about the counts
is then caught unless the analyst colludes with it.

Signing is Ed25519 through :mod:`sdckit.protocol._signing`; nothing here implements a primitive.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any

from cryptography.hazmat.primitives.asymmetric import ed25519

from sdckit.errors import MalformedMessageError
from sdckit.protocol._signing import canonical_json, sign_document, verify_document
from sdckit.protocol._spec import PlanRefusedError
from sdckit.protocol._wire import REDACTED, encode_value

CHECK_KIND = "check"
"""``kind`` of the analyst's co-signature (``signer`` is ``analyst``)."""
CHECKED = ("plan", "pairs")
REDACTED_KEY = encode_value(REDACTED)


def document_sha256(document: Mapping[str, Any]) -> str:
    """SHA-256 (hex) of a document's RFC 8785 bytes: what a co-signature names."""
    return hashlib.sha256(canonical_json(dict(document))).hexdigest()


def evidence_counts(
    kind: str, document: Mapping[str, Any]
) -> tuple[dict[str, dict[str, int]], dict[str, Any]]:
    """The published counts of a plan (``evidence.counts``) or pair queries (``evidence``), and the
    plan's recodings (``{}`` for pair queries)."""
    ev = document.get("evidence") or {}
    if not isinstance(ev, Mapping):
        return {}, {}
    counts = ev.get("counts", {}) if kind == "plan" else ev
    recodings = document.get("recodings", {}) if kind == "plan" else {}
    if not isinstance(counts, Mapping) or not isinstance(recodings, Mapping):
        return {}, {}
    return {str(c): dict(v) for c, v in counts.items() if isinstance(v, Mapping)}, dict(recodings)


PairTables = Mapping[tuple[str, ...], Mapping[tuple[str, ...], int]]
"""``{(column a, column b): {(key a, key b): messages}}``, keys canonical (:func:`encode_value`)."""


def recount_problems(
    kind: str,
    document: Mapping[str, Any],
    own: Mapping[str, Mapping[str, int]],
    own_pairs: PairTables | None = None,
) -> list[str]:
    """Where the published counts of ``document`` (a plan or pair queries) disagree with ``own``,
    the round-1 counts the analyst made itself (``{feature: {value key: messages}}``); ``[]`` when
    they agree.

    The published counts of a column must be the analyst's counts of that feature, mapped through
    the plan's recoding of it when it has one (a value the recoding does not list is counted as
    redacted), with some values merged into the redaction marker's key (rare values): every other
    key must carry exactly the analyst's count, the marker's key at most the rest, and the column's
    total must be the analyst's total up to the plan's declared ``moved`` messages (misnamed or
    missing round-1 messages, already charged in its bound, :func:`~sdckit.protocol.robust_counts`).
    A plan or queries that publish counts of no column are not checked here (they release nothing,
    or :func:`~sdckit.protocol.verify_plan` refuses them). A plan whose evidence holds pair tables
    (``blocks``) has each table recounted the same way from ``own_pairs``, the analyst's count of
    the pair-round copies sealed to it (every cell through the plan's recodings, equal up to
    ``moved``); a table the analyst did not receive is a problem.

    Examples
    --------
    >>> own = {"age": {"30": 7, "79": 1, "40": 6}}
    >>> recount_problems("pairs", {"evidence": {"age": {"30": 7, '{"redacted":true}': 7}}}, own)
    []
    >>> recount_problems("pairs", {"evidence": {"age": {"30": 13, "79": 1}}}, own)
    ["column 'age': 13 messages carry '30' by the published counts, 7 by the analyst's"]
    """
    counts, recodings = evidence_counts(kind, document)
    ev = document.get("evidence") or {}
    moved = ev.get("moved", 0) if kind == "plan" and isinstance(ev, Mapping) else 0
    moved = moved if isinstance(moved, int) and moved >= 0 else 0
    problems: list[str] = []
    if kind == "plan" and isinstance(ev, Mapping) and ev.get("blocks"):
        problems += _block_problems(ev.get("blocks"), own_pairs or {}, recodings, moved)
    for column, published in sorted(counts.items()):
        mine = own.get(column)
        if mine is None:
            problems.append(f"column {column!r}: the analyst received no round-1 message of it")
            continue
        mapping = recodings.get(column)
        mapped: dict[str, int] = {}
        for key, n in mine.items():
            label = _recoded(mapping, key)
            mapped[label] = mapped.get(label, 0) + int(n)
        merged = 0
        for key, n in sorted(published.items()):
            if key == REDACTED_KEY:
                continue
            have = mapped.get(key, 0)
            if n != have and abs(n - have) > moved:
                problems.append(
                    f"column {column!r}: {n} messages carry {key!r} by the published counts, {have} by the analyst's"
                )
        for key, have in mapped.items():
            if key not in published or key == REDACTED_KEY:
                merged += have
        rest = published.get(REDACTED_KEY, 0)
        if isinstance(rest, int) and rest > merged + moved:
            problems.append(
                f"column {column!r}: {rest} messages are redacted by the published counts, at most "
                f"{merged} by the analyst's"
            )
        total_pub = sum(int(x) for x in published.values() if isinstance(x, int))
        total_own = sum(int(x) for x in mine.values())
        if abs(total_pub - total_own) > moved:
            problems.append(
                f"column {column!r}: the published counts hold {total_pub} messages, the analyst received {total_own}"
            )
    return problems


def _block_problems(
    blocks: Any, own_pairs: PairTables, recodings: Mapping[str, Any], moved: int
) -> list[str]:
    """Where a plan's published pair tables disagree with the analyst's own (see
    :func:`recount_problems`)."""
    if not isinstance(blocks, list):
        return ["the plan's pair tables (evidence.blocks) do not parse"]
    problems: list[str] = []
    for block in blocks:
        try:
            columns = tuple(str(c) for c in block["columns"])
            published: dict[tuple[str, ...], int] = {}
            for cell in block["cells"]:
                key = tuple(str(x) for x in cell[:-1])
                published[key] = published.get(key, 0) + int(cell[-1])
        except (TypeError, KeyError, ValueError, IndexError):
            return ["the plan's pair tables (evidence.blocks) do not parse"]
        table = _own_table(own_pairs, columns)
        if table is None:
            problems.append(
                f"pair table {list(columns)}: the analyst received no pair-round message of it, so it "
                "cannot be recounted"
            )
            continue
        mapped: dict[tuple[str, ...], int] = {}
        for key, n in table.items():
            label = tuple(_recoded(recodings.get(c), x) for c, x in zip(columns, key, strict=True))
            mapped[label] = mapped.get(label, 0) + int(n)
        for key in sorted(set(published) | set(mapped)):
            pub, have = published.get(key, 0), mapped.get(key, 0)
            if abs(pub - have) > moved:
                problems.append(
                    f"pair table {list(columns)}: {pub} messages carry {list(key)!r} by the published "
                    f"counts, {have} by the analyst's"
                )
                break  # one cell per table names the disagreement
    return problems


def _own_table(own_pairs: PairTables, columns: tuple[str, ...]) -> dict[tuple[str, ...], int] | None:
    """The analyst's table of ``columns``, in that column order (a query may have listed them the
    other way round)."""
    if columns in own_pairs:
        return dict(own_pairs[columns])
    flipped = tuple(reversed(columns))
    if flipped in own_pairs:
        return {tuple(reversed(key)): n for key, n in own_pairs[flipped].items()}
    return None


def _recoded(mapping: Any, key: str) -> str:
    """A value key through a plan's recoding of its column (not listed: the redaction marker)."""
    return key if not isinstance(mapping, Mapping) else str(mapping.get(key, REDACTED_KEY))


def countersign(
    key: ed25519.Ed25519PrivateKey, kind: str, collection: str, document: Mapping[str, Any]
) -> dict[str, Any]:
    """The analyst's signed ``check`` of ``document`` (a plan or pair queries, as the curator
    signed it): ``{"of": kind, "collection": ..., "sha256": ...}``."""
    if kind not in CHECKED:
        raise ValueError(f"the analyst checks {' and '.join(CHECKED)}, not {kind!r}")
    body = {"of": kind, "collection": collection, "sha256": document_sha256(document)}
    return sign_document(key, CHECK_KIND, "analyst", body)


def verify_countersigned(
    check: Any, analyst_key: ed25519.Ed25519PublicKey, kind: str, collection: str, document: Mapping[str, Any]
) -> None:
    """Refuse (:class:`~sdckit.protocol.PlanRefusedError`) a plan or pair queries that do not carry
    the analyst's valid check of exactly this document."""
    what = "plan" if kind == "plan" else "pair queries"
    if check is None:
        raise PlanRefusedError(
            f"the {what} of {collection!r} is refused: the analyst has not checked its counts against the "
            "round-1 messages it received (no co-signature); nothing is sent for it"
        )
    try:
        body = verify_document(check, analyst_key, kind=CHECK_KIND, signer="analyst")
    except MalformedMessageError as err:
        raise PlanRefusedError(
            f"the {what} of {collection!r} is refused: {err}; nothing is sent for it"
        ) from None
    want = {"of": kind, "collection": collection, "sha256": document_sha256(document)}
    if body != want:
        raise PlanRefusedError(
            f"the {what} of {collection!r} is refused: the analyst's co-signature is for another document; "
            "nothing is sent for it"
        )
