"""The analyst service: receives round-2 rows and serves the released table. Devices never reach
it: the shuffler relays its signed key (``/internal/v1/keys``, relay token)."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

from fastapi import Body, Depends, FastAPI, HTTPException

from sdckit.protocol._recount import CHECKED, countersign, recount_problems
from sdckit.protocol._spec import PAIR_ROUND, CollectionSpec, PairQueries, PublishedPlan
from sdckit.protocol.parties import Analyst, Curator, PairCurator
from sdckit.protocol.services._common import (
    bearer,
    check_id,
    party_lookup,
    receive_route,
    receiver_app,
    role_parts,
)
from sdckit.protocol.services._config import ServiceConfig
from sdckit.protocol.services._store import AnalystStore, CuratorStore


def analyst_app(cfg: ServiceConfig) -> FastAPI:
    """The analyst service: receives round-2 rows and serves the released table."""
    key, signing, store, log, events = role_parts(cfg, AnalystStore)
    parties: dict[str, Analyst] = {}
    for cid, (spec, plan) in store.collections().items():
        if plan is not None:
            parties[cid] = Analyst(key, CollectionSpec.from_dict(spec), PublishedPlan.from_dict(plan))

    app = receiver_app(cfg, key, signing, store, log, "analyst")
    admin = Depends(bearer(cfg.admin_token, "admin"))
    creating = threading.Lock()

    party = party_lookup(parties, " with a plan")

    # counts a second party checks (issue 37): the analyst's own count of the round-1 copies sealed
    # to it, in a store of its own (the curator's schema: salts, counts), and its co-signature
    witness_store = CuratorStore(Path(cfg.data_dir) / "analyst-witness.sqlite3", synchronous=cfg.sqlite_synchronous)
    witnesses: dict[str, Curator] = {
        cid: Curator(key, CollectionSpec.from_dict(spec), role="analyst")
        for cid, (spec, _) in witness_store.collections().items()
    }
    witness = party_lookup(witnesses, " counted by the analyst (PUT /admin/v1/collections/{id}/witness)")
    # and of the pair-round copies, once the analyst co-signed the pair queries they answer
    pair_witnesses: dict[str, PairCurator] = {}
    for cid, w in witnesses.items():
        if (doc := witness_store.pair_queries(cid)) is not None:
            pair_witnesses[cid] = PairCurator(key, w.spec, PairQueries.from_dict(doc), role="analyst")
    pair_witness = party_lookup(pair_witnesses, " with pair queries the analyst co-signed")
    relay = Depends(bearer(cfg.relay_token, "relay"))

    @app.put("/admin/v1/collections/{collection}/witness", dependencies=[admin], tags=["admin"])
    def witness_create(collection: str, spec: dict[str, Any] = Body(...)) -> dict[str, Any]:
        """Count a collection's round-1 copies sealed to the analyst (a spec with ``count_check``
        that pins this analyst's key); idempotent for the same spec, 409 for another."""
        s = CollectionSpec.from_dict({**spec, "id": check_id(collection)})
        if not s.count_check or s.keys.get("analyst") != key.public_key().to_text():
            raise HTTPException(422, "the spec must set count_check and pin this analyst's key")
        with creating:
            old = witnesses.get(collection)
            if old is not None and old.spec != s:
                raise HTTPException(409, f"collection {collection!r} is counted with another spec")
            witness_store.put_collection(collection, s.to_dict(), None)
            witnesses[collection] = Curator(key, s, role="analyst")
        return s.to_dict()

    @app.post("/internal/v1/collections/{collection}/check", dependencies=[relay], tags=["relay"])
    def check(collection: str, payload: dict[str, Any] = Body(...)) -> dict[str, Any]:
        """Recount the published counts of a plan or pair queries (``{"kind": "plan" | "pairs",
        "signed": <the curator's signed document>}``) from the analyst's own round-1 counts and
        co-sign them (:func:`sdckit.protocol._recount.countersign`); 409 naming the disagreement."""
        witness(collection)
        kind, signed = payload.get("kind"), payload.get("signed")
        if not isinstance(signed, dict):
            raise HTTPException(422, 'give {"kind": "plan" | "pairs", "signed": {...}}')
        document = signed.get("document")
        if kind not in CHECKED or not isinstance(document, dict) or signed.get("kind") != kind:
            raise HTTPException(422, 'give {"kind": "plan" | "pairs", "signed": {...}}')
        if document.get("collection") != collection:
            raise HTTPException(409, f"the {kind} is for {document.get('collection')!r}")
        counts, tables = witness_store.counts(collection), witness_store.pair_tables(collection)
        problems = recount_problems(kind, document, counts, tables)
        if problems:
            events.add(f"{kind} refused by the recount")
            log.warning("%s of %r refused by the recount: %s", kind, collection, problems[0])
            raise HTTPException(409, "; ".join(problems[:3]))
        if kind == "pairs":
            with creating:  # count the pair round of exactly the queries co-signed, and of no others
                old = witness_store.pair_queries(collection)
                if old is not None and old != document:
                    raise HTTPException(
                        409, f"the analyst co-signed other pair queries of {collection!r}; those stand"
                    )
                if old is None:
                    queries = PairQueries.from_dict(document)
                    witness_store.set_pair_queries(collection, document)
                    pair_witnesses[collection] = PairCurator(key, witness(collection).spec, queries, role="analyst")
        return countersign(signing, kind, collection, document)

    @app.put("/admin/v1/collections/{collection}", dependencies=[admin], tags=["admin"])
    def create(collection: str, payload: dict[str, Any] = Body(...)) -> dict[str, Any]:
        """Register a collection with its published plan: ``{"spec": {...}, "plan": {...}}``."""
        try:
            s = CollectionSpec.from_dict({**payload["spec"], "id": check_id(collection)})
            p = PublishedPlan.from_dict(payload["plan"])
        except (KeyError, TypeError):
            raise HTTPException(422, 'give {"spec": {...}, "plan": {...}}') from None
        if p.collection != collection:
            raise HTTPException(422, f"the plan is for {p.collection!r}")
        unknown = [c for c in p.columns if c not in s.features]
        if unknown:
            raise HTTPException(422, f"planned column(s) {unknown} are not features of the collection")
        if s.suite != key.suite:
            raise HTTPException(422, f"the analyst's key is {key.suite}; the spec asks for {s.suite}")
        with creating:  # check and register in one step
            old = parties.get(collection)
            if old is not None and (old.spec != s or old.plan != p):
                raise HTTPException(409, f"collection {collection!r} exists with another spec or plan")
            store.put_collection(collection, s.to_dict(), p.to_dict())
            parties[collection] = Analyst(key, s, p)
        log.info("collection %r registered with %d planned column(s)", collection, len(p.columns))
        return {"spec": s.to_dict(), "plan": p.to_dict()}

    receive_route(
        app,
        store,
        cfg,
        party,
        expected_round=2,
        role="analyst",
        events=events,
        extra_rounds={1: witness, PAIR_ROUND: pair_witness},
        extra_stores={1: witness_store, PAIR_ROUND: witness_store},
    )

    @app.get("/admin/v1/collections/{collection}/release", dependencies=[admin], tags=["admin"])
    def release(collection: str) -> dict[str, Any]:
        """The released rows: ``{"columns": [...], "rows": [[value, ...], ...]}`` with values in
        their canonical JSON encoding (tagged objects for dates, redactions, ...)."""
        a = party(collection)
        rows = store.rows(collection)
        return {"columns": list(a.plan.columns), "rows": [json.loads(r) for r in rows]}

    return app
