"""The curator service: counts round-1 marginals and decides the plan. Devices never reach it: the
shuffler relays its signed spec, plan and key (``/internal/...``, relay token)."""

from __future__ import annotations

import threading
from dataclasses import replace
from typing import Any

from fastapi import Body, Depends, FastAPI, HTTPException
from pydantic import BaseModel, Field

from sdckit.protocol._planning import decide_plan
from sdckit.protocol._signing import sign_document
from sdckit.protocol._spec import CollectionSpec
from sdckit.protocol.parties import Curator
from sdckit.protocol.services._common import (
    bearer,
    check_id,
    party_lookup,
    receive_route,
    receiver_app,
    role_parts,
)
from sdckit.protocol.services._config import ServiceConfig
from sdckit.protocol.services._store import CuratorStore

_MAX_K = 2**31 - 1


class PlanRequest(BaseModel):
    """Parameters of the curator's decision."""

    k: int = Field(5, ge=1, le=_MAX_K, description="group size (users) of the k-anonymity target")
    budget: float = Field(
        0.05, ge=0, le=1, allow_inf_nan=False, description="share of users (0..1) allowed in groups < k"
    )
    method: str = Field("best", description="bound of sdckit.risk.plan_release")
    weights: dict[str, float] | None = Field(None, description="utility weight per feature")
    n_release: int | None = Field(
        None, ge=1, le=_MAX_K, description="users expected in round 2 (statistical setting)"
    )
    local_suppression: bool = Field(False, description="publish redaction rules for rare values")
    n_users: int | None = Field(
        None,
        ge=1,
        le=_MAX_K,
        description="complete round-1 submissions (the shuffler's 'users' counter); features whose "
        "counts differ are left out (default: the most common total)",
    )


def curator_app(cfg: ServiceConfig) -> FastAPI:
    """The curator service: counts round-1 marginals and publishes the plan (signed)."""
    key, signing, store, log, events = role_parts(cfg, CuratorStore)
    parties: dict[str, Curator] = {}
    for cid, (spec, _) in store.collections().items():
        parties[cid] = Curator(key, CollectionSpec.from_dict(spec))

    app = receiver_app(cfg, key, signing, store, log, "curator")
    admin = Depends(bearer(cfg.admin_token, "admin"))
    relay = Depends(bearer(cfg.relay_token, "relay"))
    creating = threading.Lock()

    party = party_lookup(parties, "")

    @app.put("/admin/v1/collections/{collection}", dependencies=[admin], tags=["admin"])
    def create(collection: str, spec: dict[str, Any] = Body(...)) -> dict[str, Any]:
        """Create a collection (idempotent for the same spec; 409 for a different one)."""
        s = CollectionSpec.from_dict({**spec, "id": check_id(collection)})
        if s.suite != key.suite:
            raise HTTPException(422, f"the curator's key is {key.suite}; the spec asks for {s.suite}")
        with creating:  # check and create in one step: two racing PUTs cannot both pass the check
            old = parties.get(collection)
            if old is not None and old.spec != s:
                raise HTTPException(409, f"collection {collection!r} exists with another spec")
            store.put_collection(collection, s.to_dict(), None)
            parties[collection] = Curator(key, s)
        log.info("collection %r created with %d feature(s)", collection, len(s.features))
        return s.to_dict()

    @app.get("/internal/v1/collections/{collection}", dependencies=[relay], tags=["relay"])
    def get_spec(collection: str) -> dict[str, Any]:
        """The collection's specification, signed (the shuffler relays it)."""
        return sign_document(signing, "spec", "curator", party(collection).spec.to_dict())

    receive_route(app, store, cfg, party, expected_round=1, role="curator", events=events)

    @app.get("/admin/v1/collections/{collection}/marginals", dependencies=[admin], tags=["admin"])
    def marginals(collection: str) -> dict[str, Any]:
        """``{feature: {value_key: users}}`` counted so far (value keys are canonical JSON)."""
        party(collection)
        return {"collection": collection, "counts": store.counts(collection)}

    @app.post("/admin/v1/collections/{collection}/plan", dependencies=[admin], tags=["admin"])
    def decide(collection: str, req: PlanRequest) -> dict[str, Any]:
        """Decide and publish the plan from the marginals counted so far. A feature whose counts do
        not add up to the users is left out (a stray message does not block the plan)."""
        c = party(collection)
        counts = store.counts(collection)
        missing = [f for f in c.spec.features if f not in counts]
        if len(missing) == len(c.spec.features):
            raise HTTPException(409, "no round-1 message counted yet")
        plan = decide_plan(
            {f: counts[f] for f in c.spec.features if f in counts},
            collection=collection,
            k=req.k,
            budget=req.budget,
            method=req.method,  # type: ignore[arg-type]
            weights=req.weights,
            setting=c.spec.setting,
            n_release=req.n_release,
            local_suppression=req.local_suppression,
            n_users=req.n_users,
        )
        if missing:
            plan = replace(plan, excluded={**dict.fromkeys(missing, "no round-1 message"), **plan.excluded})
        store.set_plan(collection, plan.to_dict())
        log.info("plan for %r: %d column(s)", collection, len(plan.columns))
        return plan.to_dict()

    @app.get("/internal/v1/collections/{collection}/plan", dependencies=[relay], tags=["relay"])
    def get_plan(collection: str) -> dict[str, Any]:
        """The published plan, signed (404 until the curator decided)."""
        party(collection)
        plan = store.collections()[collection][1]
        if plan is None:
            raise HTTPException(404, f"no plan yet for {collection!r}")
        return sign_document(signing, "plan", "curator", plan)

    return app
