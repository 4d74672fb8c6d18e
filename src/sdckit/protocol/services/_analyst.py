"""The analyst service: receives round-2 rows and serves the released table. Devices never reach
it: the shuffler relays its signed key (``/internal/v1/keys``, relay token)."""

from __future__ import annotations

import json
import threading
from typing import Any

from fastapi import Body, Depends, FastAPI, HTTPException

from sdckit.protocol._spec import CollectionSpec, PublishedPlan
from sdckit.protocol.parties import Analyst
from sdckit.protocol.services._common import (
    bearer,
    check_id,
    party_lookup,
    receive_route,
    receiver_app,
    role_parts,
)
from sdckit.protocol.services._config import ServiceConfig
from sdckit.protocol.services._store import AnalystStore


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

    receive_route(app, store, cfg, party, expected_round=2, role="analyst", events=events)

    @app.get("/admin/v1/collections/{collection}/release", dependencies=[admin], tags=["admin"])
    def release(collection: str) -> dict[str, Any]:
        """The released rows: ``{"columns": [...], "rows": [[value, ...], ...]}`` with values in
        their canonical JSON encoding (tagged objects for dates, redactions, ...)."""
        a = party(collection)
        rows = store.rows(collection)
        return {"columns": list(a.plan.columns), "rows": [json.loads(r) for r in rows]}

    return app
