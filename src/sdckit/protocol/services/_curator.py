"""The curator service: counts round-1 marginals (and, in the optional pair round, the pair tables
it asked for) and decides the plan. Devices never reach it: the
shuffler relays its signed spec, plan and key (``/internal/...``, relay token)."""

from __future__ import annotations

import importlib
import threading
from dataclasses import replace
from typing import Any

from fastapi import Body, Depends, FastAPI, HTTPException
from pydantic import BaseModel, Field, field_validator

from sdckit.errors import ParameterError
from sdckit.protocol._planning import choose_pairs, decide_plan
from sdckit.protocol._signing import sign_document
from sdckit.protocol._spec import PAIR_ROUND, CollectionSpec, PairQueries, UnpinnedSpecError
from sdckit.protocol.parties import Curator, PairCurator
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
    method: str | None = Field(
        None, description="bound of sdckit.plan.plan_release (default and only choice: the spec's bound_method)"
    )
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
    hierarchies: dict[str, str | dict[str, list[str]]] | None = Field(
        None,
        description="recoding hierarchy per feature (fixed setting): a built-in name such as "
        "'adult:age', or the table {value: [label at level 1, level 2, ...]} (no file paths: the "
        "service reads no file a request names)",
    )

    @field_validator("hierarchies")
    @classmethod
    def _no_paths(
        cls, v: dict[str, str | dict[str, list[str]]] | None
    ) -> dict[str, str | dict[str, list[str]]] | None:
        from sdckit.anonymize._hierarchy import BUILTIN_PREFIX  # here: scikit-learn is slow to import

        for feature, h in (v or {}).items():
            if isinstance(h, str) and not h.startswith(BUILTIN_PREFIX):
                raise ValueError(
                    f"hierarchy of {feature[:64]!r}: give a built-in name ({BUILTIN_PREFIX}COLUMN) or the "
                    "table {value: [labels]}, not a path"
                )
        return v


class PairsRequest(BaseModel):
    """Parameters of the pair queries (issue 17's middle round)."""

    k: int = Field(5, ge=1, le=_MAX_K, description="group size: values held by fewer users are redacted")
    budget: float = Field(
        0.05,
        ge=0,
        le=1,
        allow_inf_nan=False,
        description="share of users (0..1) the received pair tables may expose (union bound)",
    )


def curator_app(cfg: ServiceConfig) -> FastAPI:
    """The curator service: counts round-1 marginals and publishes the plan (signed)."""
    key, signing, store, log, events = role_parts(cfg, CuratorStore)
    parties: dict[str, Curator] = {}
    pair_parties: dict[str, PairCurator] = {}
    for cid, (spec, _) in store.collections().items():
        parties[cid] = Curator(key, CollectionSpec.from_dict(spec))
        doc = store.pair_queries(cid)
        if doc is not None:
            pair_parties[cid] = PairCurator(key, parties[cid].spec, PairQueries.from_dict(doc))

    app = receiver_app(cfg, key, signing, store, log, "curator")
    # the planner (sdckit.risk: numpy, polars, numba) takes seconds to import on a loaded machine:
    # import it in the background at start, so the first plan request does not wait for it
    threading.Thread(target=importlib.import_module, args=("sdckit.risk",), name="warm-risk", daemon=True).start()
    admin = Depends(bearer(cfg.admin_token, "admin"))
    relay = Depends(bearer(cfg.relay_token, "relay"))
    creating = threading.Lock()

    party = party_lookup(parties, "")

    @app.put("/admin/v1/collections/{collection}", dependencies=[admin], tags=["admin"])
    def create(collection: str, spec: dict[str, Any] = Body(...)) -> dict[str, Any]:
        """Create a collection (idempotent for the same spec; 409 for a different one). A field
        the body leaves out takes its default: ``count_check`` is on unless it says ``false``."""
        s = CollectionSpec.from_request({**spec, "id": check_id(collection)})
        if s.suite != key.suite:
            raise HTTPException(422, f"the curator's key is {key.suite}; the spec asks for {s.suite}")
        try:  # the curator's key is fixed in the signed spec: devices refuse any other for it
            s = s.with_key("curator", key.public_key().to_text())
        except ParameterError as err:
            raise HTTPException(422, f"{err}: this curator's key is another") from None
        try:  # an unpinned analyst or shuffler key lets that party hand each device its own key
            s.require_pinned("the curator")
        except UnpinnedSpecError as err:
            raise HTTPException(422, str(err)) from None
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

    def check_floors(c: Curator, k: int, budget: float, method: str | None = None) -> None:
        """Refuse a request that devices would refuse (the floors pinned in the signed spec)."""
        spec = c.spec
        if k < spec.min_k or budget > spec.max_budget or (method is not None and method != spec.bound_method):
            raise HTTPException(
                422,
                f"collection {spec.id!r} pins k >= {spec.min_k}, budget <= {spec.max_budget:g} and the "
                f"{spec.bound_method!r} bound; devices refuse anything else",
            )

    def round1_counts(c: Curator) -> dict[str, dict[str, int]]:
        """The round-1 counts of the collection's features (409 while none is counted)."""
        counts = store.counts(c.spec.id)
        if not any(f in counts for f in c.spec.features):
            raise HTTPException(409, "no round-1 message counted yet")
        return {f: counts[f] for f in c.spec.features if f in counts}

    pair_party = party_lookup(
        pair_parties, " with pair queries (POST /admin/v1/collections/{id}/pairs first)"
    )
    receive_route(
        app,
        store,
        cfg,
        party,
        expected_round=1,
        role="curator",
        events=events,
        extra_rounds={PAIR_ROUND: pair_party},
    )

    @app.post("/admin/v1/collections/{collection}/pairs", dependencies=[admin], tags=["admin"])
    def ask_pairs(collection: str, req: PairsRequest) -> dict[str, Any]:
        """Choose the pair queries from the round-1 counts (:func:`sdckit.protocol.choose_pairs`)
        and publish them (once: the same request again returns them, another one is refused)."""
        c = party(collection)
        check_floors(c, req.k, req.budget)
        with creating:
            old = store.pair_queries(collection)
            if old is not None:
                if (old["k"], old["budget"]) != (req.k, req.budget):
                    raise HTTPException(409, f"pair queries of {collection!r} are already published")
                return old
            queries = choose_pairs(
                round1_counts(c),
                collection=collection,
                k=req.k,
                budget=req.budget,
            )
            store.set_pair_queries(collection, queries.to_dict())
            pair_parties[collection] = PairCurator(key, c.spec, queries)
        log.info("pair queries for %r: %d pair(s)", collection, len(queries.queries))
        return queries.to_dict()

    @app.get("/internal/v1/collections/{collection}/pairs", dependencies=[relay], tags=["relay"])
    def get_pairs(collection: str) -> dict[str, Any]:
        """The published pair queries, signed (404 until asked)."""
        party(collection)
        doc = store.pair_queries(collection)
        if doc is None:
            raise HTTPException(404, f"no pair queries for {collection!r}")
        return sign_document(signing, "pairs", "curator", doc)

    @app.get("/admin/v1/collections/{collection}/pairs/tables", dependencies=[admin], tags=["admin"])
    def pair_tables(collection: str) -> dict[str, Any]:
        """The pair tables counted so far: ``[{"columns": [a, b], "cells": [[key a, key b, users]]}]``."""
        party(collection)
        return {
            "collection": collection,
            "tables": [
                {"columns": list(cols), "cells": [[*cell, n] for cell, n in t.items()]}
                for cols, t in store.pair_tables(collection).items()
            ],
        }

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
        check_floors(c, req.k, req.budget, req.method)
        counts = round1_counts(c)
        missing = [f for f in c.spec.features if f not in counts]
        plan = decide_plan(
            counts,
            collection=collection,
            k=req.k,
            budget=req.budget,
            method=(req.method or c.spec.bound_method),  # type: ignore[arg-type]
            weights=req.weights,
            setting=c.spec.setting,
            n_release=req.n_release,
            local_suppression=req.local_suppression,
            n_users=req.n_users,
            pair_tables=store.pair_tables(collection) if collection in pair_parties else None,
            pair_queries=pair_parties[collection].queries if collection in pair_parties else None,
            hierarchies=req.hierarchies,
            round2_pad=c.spec.round2_pad,
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
