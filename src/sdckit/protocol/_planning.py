"""The curator's decision: from round-1 marginals to a :class:`PublishedPlan` (pure).

The planner itself is :func:`sdckit.plan.plan_release`; this module adapts the counts the curator
holds (keyed by canonical value encodings), applies the local-suppression extension, and records
the outcome as the public plan.
"""

from __future__ import annotations

import heapq
import json
import math
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any, Literal, TypeAlias

from sdckit.errors import InputError, ParameterError, SdcError
from sdckit.protocol._spec import (
    MAX_RECODED_VALUES,
    MAX_RECODING_BYTES,
    CollectionSpec,
    PairQueries,
    PairQuery,
    PlanRefusedError,
    PublishedPlan,
    Redaction,
    Setting,
    recoding_bytes,
)
from sdckit.protocol._wire import HEADER_LENGTH, REDACTED, decode_value, encode_value

if TYPE_CHECKING:
    from sdckit.anonymize import Hierarchy
    from sdckit.risk import Marginals

PlanMethod: TypeAlias = Literal["lower", "support", "theorem2", "theorem3", "best"]
"""Bound used by :func:`sdckit.plan.plan_release` (see its documentation)."""

REDACTED_KEY = encode_value(REDACTED)
"""Canonical key of the redaction marker, ``'{"redacted":true}'``."""


def suppress_rare(counts: Mapping[str, Mapping[str, int]], k: int) -> dict[str, Counter[str]]:
    """Merge, per feature, the values held by fewer than ``k`` users into :data:`REDACTED`.

    [derived] Merging values coarsens every user's group on any J (a group can only grow), so the
    share of users in groups smaller than k can only fall: a bound computed on these merged
    marginals bounds the release in which the holders redact. The random redactions of non-holders
    (the decoys of seed §8) are *not* a coarsening — a decoy leaves its group, which can fall below
    k — and are accounted for separately by :func:`decoy_allowance`.
    """
    out: dict[str, Counter[str]] = {}
    for f, c in counts.items():
        merged: Counter[str] = Counter()
        for key, n in c.items():
            merged[REDACTED_KEY if n < k else key] += n
        out[f] = merged
    return out


def decoy_probability(n: int, holders: int, k: int) -> float:
    """Probability that a non-holder redacts: ``min(1, k / (n - holders))``, so each rule draws k
    decoys in expectation and the redacted group is never just the holders [derived]."""
    others = n - holders
    return 1.0 if others <= k else k / others


def decoy_allowance(
    rules: Sequence[Redaction], counts: Mapping[str, Mapping[str, int]], n: int, *, k: int, delta: float
) -> tuple[float, int]:
    """Share of users the decoys can add to the exposure, and the decoy count it allows for.

    [derived] Let D be the number of users who redact as decoys (non-holders of a rule's value who
    draw the rule's coin). Starting from the release in which only holders redact, a decoy leaves
    its group g; a group of at least k users that falls below k keeps at most k - 1 users, and at
    most D groups lose a member. So the users in groups smaller than k grow by at most
    D (the decoys) + (k - 1) D (their old group-mates): the exposure grows by at most k D / n.
    D is a sum of independent Bernoulli coins with mean mu = sum over rules of (n - holders) q;
    Bernstein's inequality gives D <= mu + a with probability >= 1 - delta, where
    a = L/3 + sqrt(L^2/9 + 2 mu L) and L = ln(1/delta).

    Returns (min(1, k D_max / n), D_max).
    """
    if not rules:
        return 0.0, 0
    mu = sum((n - counts[r.feature].get(r.value_key, 0)) * r.probability for r in rules)
    log_term = math.log(1.0 / delta)
    a = log_term / 3 + math.sqrt(log_term**2 / 9 + 2 * mu * log_term)
    d_max = math.ceil(mu + a)
    return min(1.0, k * d_max / n), d_max


def _redaction_rules(
    counts: Mapping[str, Mapping[str, int]], columns: Sequence[str], k: int, n: int
) -> list[Redaction]:
    return [
        Redaction(feature=f, value_key=key, probability=decoy_probability(n, held, k))
        for f in columns
        for key, held in counts[f].items()
        if held < k
    ]


def consistent_counts(
    counts: Mapping[str, Mapping[str, int]], n_users: int | None = None
) -> tuple[dict[str, Mapping[str, int]], dict[str, str]]:
    """Split ``counts`` into the features whose totals equal ``n_users`` (default: the most common
    total; on a tie, none is trusted) and the reasons the others are left out.

    Examples
    --------
    >>> ok, why = consistent_counts({"a": {"1": 3}, "b": {"1": 2, "2": 1}, "c": {"1": 4}})
    >>> sorted(ok), why
    (['a', 'b'], {'c': 'counts 4 messages for 3 users (a stray, duplicate or missing message)'})
    """
    totals = {f: sum(int(n) for n in c.values()) for f, c in counts.items()}
    if n_users is None:
        freq = Counter(totals.values()).most_common()
        if not freq:
            return {}, {}
        if len(freq) > 1 and freq[0][1] == freq[1][1]:
            return {}, {
                f: f"counts {t} messages; no total is shared by most features, so none is trusted "
                "(give n_users, the complete submissions the shuffler admitted)"
                for f, t in totals.items()
            }
        n_users = freq[0][0]
    ok = {f: c for f, c in counts.items() if totals[f] == n_users}
    why = {
        f: f"counts {t} messages for {n_users} users (a stray, duplicate or missing message)"
        for f, t in totals.items()
        if t != n_users
    }
    return ok, why


def robust_counts(
    counts: Mapping[str, Mapping[str, int]], n_users: int | None = None
) -> tuple[dict[str, Counter[str]], int]:
    """Every feature's counts brought to ``n_users`` users (default: the messages counted divided
    by the features, rounded), and D, the messages moved to get there.

    A feature counting more messages than users (a participant named it twice inside its one
    submission) loses the excess from its most common values; one counting fewer (a participant
    left it out, or its message was rejected) gains the missing users as the redaction marker.
    [derived] The adjusted counts are the marginals of a table T' of ``n_users`` rows that differs
    from the released table in at most D rows: the misnamers' rows, at most the deficit, and the
    honest users whose value was among the removed ones, at most the excess. Moving one row makes
    at most k users newly exposed (it may leave a group of k, whose k - 1 others fall below k, and
    sit alone), so a bound B on T' gives B + k D / n on the release (:func:`decide_plan`).

    Examples
    --------
    >>> adjusted, moved = robust_counts({"a": {"1": 3, "2": 1}, "b": {"1": 2}}, n_users=3)
    >>> dict(adjusted["a"]), dict(adjusted["b"]), moved
    ({'1': 2, '2': 1}, {'1': 2, '{"redacted":true}': 1}, 2)
    """
    totals = {f: sum(int(x) for x in c.values()) for f, c in counts.items()}
    n = int(n_users) if n_users is not None else round(sum(totals.values()) / max(1, len(totals)))
    out: dict[str, Counter[str]] = {}
    moved = 0
    for f, c in counts.items():
        adjusted = Counter({key: int(x) for key, x in c.items() if int(x) > 0})
        excess = totals[f] - n
        if excess > 0:
            heap = [(-x, key) for key, x in adjusted.items()]
            heapq.heapify(heap)
            for _ in range(excess):  # one at a time from the most common value
                x, key = heapq.heappop(heap)
                adjusted[key] -= 1
                if x + 1 < 0:
                    heapq.heappush(heap, (x + 1, key))
            adjusted = +adjusted
        elif excess < 0:
            adjusted[REDACTED_KEY] += -excess
        moved += abs(excess)
        out[f] = adjusted
    return out, moved


def decide_plan(
    counts: Mapping[str, Mapping[str, int]],
    *,
    collection: str,
    k: int,
    budget: float,
    method: PlanMethod = "best",
    weights: Mapping[str, float] | None = None,
    setting: Setting = "fixed",
    n_release: int | None = None,
    local_suppression: bool = False,
    delta: float = 0.05,
    n_users: int | None = None,
    pair_tables: Mapping[tuple[str, ...], Mapping[tuple[str, ...], int]] | None = None,
    pair_queries: PairQueries | None = None,
    hierarchies: Mapping[str, Any] | None = None,
    round2_pad: int | None = None,
) -> PublishedPlan:
    """Decide which features are released, and how coarsely, with :func:`sdckit.plan.plan_release`.

    A feature whose counts do not add up to the number of users (``n_users``, e.g. the complete
    submissions the shuffler admitted; default: the most common total over the features) holds a
    stray, duplicate or missing message; it is left out of the plan (reason in ``excluded``) and
    the others are planned, so one stray message cannot block planning (:func:`consistent_counts`).

    Parameters
    ----------
    counts : ``{feature: {value_key: users}}`` counted in round 1.
    collection : Collection id the plan is for.
    k : Group size (users) of the k-anonymity target.
    budget : Largest share of users (0..1) allowed in groups smaller than ``k``.
    method : Bound used by the planner in the fixed setting.
    weights : Utility weight per feature (default 1 each).
    setting : ``"fixed"`` uses the bounds of anonymity notes §2 on the counted users;
        ``"statistical"`` treats round 1 as a sample and plans for a release of ``n_release``
        users with the estimators of §3.
    n_release : Users expected in round 2 (statistical setting; default: as many as round 1).
    local_suppression : Also publish redaction rules for the rare values (count < k) of the
        planned features, and plan on the marginals with those values merged (:func:`suppress_rare`);
        the bound then includes the decoys' allowance (:func:`decoy_allowance`), and when that
        breaks the budget the plan is made without local suppression.
    delta : The plan's bound holds with probability >= 1 - delta (statistical setting: over the
        round-1 sample; with local suppression: over the decoys' coins; with both, >= 1 - 2 delta).
    n_users : Users counted in round 1; features whose total differs are left out.
    pair_tables, pair_queries : The pair round's tables as counted (``{(a, b): {(key a, key b):
        users}}``, the redaction marker's key for a redacted value) and the published queries. In
        the fixed setting without local suppression the planner then bounds with the blocks
        (:meth:`sdckit.risk.Marginals.from_counts` with ``blocks``); a table whose total is not
        the users of round 1 is left out. The plan records ``rounds`` (with ``"pairs"``), the
        queries' bound (``pair_bound``) and the measured share of users in received cells < k
        (``pair_measured``).
    hierarchies : ``{feature: hierarchy}`` (a :class:`sdckit.anonymize.Hierarchy`, a built-in
        name such as ``"adult:age"``, a CSV path or ``{value: [level 1, ...]}``): search recoding
        levels (:func:`sdckit.plan.plan_release` with ``hierarchies``) on the round-1 counts, the
        pair tables recoded alike (:meth:`sdckit.risk.Marginals.recode`). Fixed setting only,
        without local suppression. The plan's ``recodings`` map every counted value of each
        recoded feature to its generalised value (:func:`key_hierarchy`); a value outside the
        mapping is sent redacted (:meth:`PublishedPlan.generalise`).
    round2_pad : The collection's round-2 plaintext length: with recodings, a plan whose longest
        possible row (each column's longest value as sent) does not fit raises
        :class:`ParameterError` here, not when users send.
    """
    # lazy: start-up time (`import sdckit.protocol`, on users' devices, does not load sdckit.risk)
    from sdckit._checks import group_size
    from sdckit.plan import plan_release
    from sdckit.risk import Marginals

    k = group_size(k)
    if hierarchies:
        if setting != "fixed":
            raise ParameterError(
                "hierarchies: recoding is planned in the fixed setting only (the bound on recoded "
                "marginals needs the round-2 users to be the counted ones); drop hierarchies or use "
                "setting='fixed'"
            )
        if local_suppression:
            raise ParameterError(
                "hierarchies with local_suppression: redaction rules are decided on raw values; plan "
                "one or the other"
            )
        unknown = sorted(set(hierarchies) - set(counts))
        if unknown:
            raise ParameterError(
                f"hierarchies for {unknown}: not features counted in round 1 ({sorted(counts)})"
            )
    if setting == "fixed" and counts:
        adjusted, moved = robust_counts(counts, n_users)
        if moved:
            return _allowance_plan(
                adjusted,
                moved,
                collection=collection,
                k=k,
                budget=budget,
                method=method,
                weights=weights,
                local_suppression=local_suppression,
                delta=delta,
                pair_tables=pair_tables,
                pair_queries=pair_queries,
                hierarchies=hierarchies,
                round2_pad=round2_pad,
            )
    counts, inconsistent = consistent_counts(counts, n_users)

    def replan(**changes: Any) -> PublishedPlan:
        """This decision again on the consistent counts, with ``changes`` to its parameters."""
        same: dict[str, Any] = {
            "collection": collection,
            "k": k,
            "budget": budget,
            "method": method,
            "weights": weights,
            "setting": setting,
            "n_release": n_release,
            "delta": delta,
        }
        return decide_plan(counts, **{**same, **changes})

    if not counts:
        return PublishedPlan(
            collection=collection,
            columns=(),
            k=k,
            budget=float(budget),
            bound=0.0,
            method="nothing released: no feature's counts add up to the users",
            excluded=inconsistent,
            n_round1=int(n_users or 0),
            setting=setting,
        )
    if inconsistent:
        kept = replan(
            local_suppression=local_suppression,
            pair_tables=pair_tables,
            pair_queries=pair_queries,
            hierarchies={c: h for c, h in (hierarchies or {}).items() if c in counts} or None,
            round2_pad=round2_pad,
        )
        return replace(kept, excluded={**inconsistent, **kept.excluded})
    # statistical setting: plan on the raw sample marginals. Which values are rare depends on the
    # sample, which the DKW step does not cover; redacting them in the fresh release only coarsens
    # it, so the raw bound stays valid for it.
    merge = local_suppression and setting == "fixed"
    effective = suppress_rare(counts, k) if merge else {f: Counter(c) for f, c in counts.items()}
    marginals = Marginals.from_counts({f: dict(c) for f, c in effective.items()})
    n1 = marginals.n
    pair_fields: dict[str, object] = {}
    if pair_tables and pair_queries is not None and setting == "fixed" and not local_suppression:
        marginals, measured = pair_marginals(effective, pair_tables, k=k)
        pair_fields = {
            "rounds": ("singles", "pairs", "release"),
            "pair_bound": float(pair_queries.bound),
            "pair_measured": measured,
        }
    if setting == "statistical":
        columns, bound, how, excluded = statistical_plan(
            marginals,
            k=k,
            budget=budget,
            n_release=n_release or n1,
            method=method,
            weights=weights,
            delta=delta,
        )
    elif hierarchies:
        return _recoding_plan(
            marginals,
            effective,
            hierarchies,
            collection=collection,
            k=k,
            budget=budget,
            method=method,
            weights=weights,
            round2_pad=round2_pad,
            pair_fields=pair_fields,
        )
    else:
        plan = plan_release(marginals, k=k, budget=budget, weights=weights, method=method)
        columns, bound, how, excluded = tuple(plan.columns), plan.bound, plan.method, dict(plan.excluded)
    redactions: list[Redaction] = []
    if local_suppression:
        redactions = _redaction_rules(counts, columns, k, n1)
        allowance, d_max = decoy_allowance(redactions, counts, n1, k=k, delta=delta)
        plain = replan(local_suppression=False)

        def weight(cols: Sequence[str]) -> float:
            return sum((weights or {}).get(c, 1.0) for c in cols)

        # local suppression only when, decoys included, it fits the budget and releases more
        if bound + allowance > budget or weight(columns) <= weight(plain.columns):
            return plain
        bound, how = bound + allowance, f"{how} + decoy allowance k D/n (D <= {d_max}, delta={delta:g})"
    extra: dict[str, Any] = {}
    if setting == "statistical":
        extra = {
            "n_release": int(n_release or n1),
            "delta": float(delta),
            "candidates": len(marginals.columns),
        }
    elif redactions:
        extra = {"delta": float(delta)}
    return PublishedPlan(
        collection=collection,
        columns=columns,
        k=k,
        budget=float(budget),
        bound=float(bound),
        method=how,
        excluded=excluded,
        n_round1=n1,
        setting=setting,
        redactions=tuple(redactions),
        evidence=plan_evidence(marginals, columns, **extra),
        **pair_fields,  # type: ignore[arg-type]
    )


def _key_text(value: Any) -> str:
    # lazy: start-up time (`import sdckit.protocol`, on users' devices, does not load sdckit.risk)
    from sdckit.risk._counts._blocks import is_redacted

    return REDACTED_KEY if is_redacted(value) else str(value)


def plan_evidence(marginals: Marginals, columns: Sequence[str], **extra: Any) -> dict[str, Any]:
    """The counts a plan's bound was computed from, restricted to the planned ``columns`` (with the
    blocks inside them), as :attr:`PublishedPlan.evidence`: devices and the shuffler recompute the
    bound from them (:func:`verify_plan`). Empty for a plan that releases nothing."""
    if not columns:
        return {}
    m = marginals.select(list(columns))
    out: dict[str, Any] = {
        "n": int(m.n),
        "counts": {
            c: {_key_text(v): int(x) for v, x in zip(m.values[c], m.counts[c].tolist(), strict=True)}
            for c in columns
        },
        **extra,
    }
    if m.blocks:
        out["blocks"] = [
            {
                "columns": list(b.columns),
                "cells": sorted(
                    [*(_key_text(v) for v in cell), int(x)]
                    for cell, x in zip(
                        b.values + b.redacted_values,
                        [*b.counts.tolist(), *b.redacted_counts.tolist()],
                        strict=True,
                    )
                ),
            }
            for b in m.blocks.values()
        ]
    return out


_TOLERANCE = 1e-9


def _refuse(what: str, collection: str, why: str) -> None:
    raise PlanRefusedError(f"the {what} of {collection!r} is refused: {why}; nothing is sent for it")


def _floors(what: str, spec: CollectionSpec, collection: str, k: int, budget: float, bound: float) -> None:
    if collection != spec.id:
        _refuse(what, spec.id, f"it is for collection {collection!r}")
    if k < spec.min_k:
        _refuse(what, collection, f"k = {k} is below the collection's floor min_k = {spec.min_k}")
    if budget > spec.max_budget + 1e-12:
        _refuse(
            what,
            collection,
            f"budget {budget:g} is above the collection's ceiling max_budget = {spec.max_budget:g}",
        )
    if bound > budget + 1e-12:
        _refuse(what, collection, f"its bound {bound:.4g} is above its budget {budget:g}")


def verify_plan(plan: PublishedPlan, spec: CollectionSpec, *, n_users: int | None = None) -> float:
    """Check a published plan against the collection's pinned floors and recompute its bound from
    the counts published with it; returns the recomputed bound.

    Refused (:class:`~sdckit.protocol.PlanRefusedError`, naming the reason): another collection or
    setting, k below ``spec.min_k``, a budget above ``spec.max_budget``, a bound above the budget,
    no published counts, counts of more users than ``n_users`` (the shuffler's admitted round-1
    users) or than the plan says, a recoded column counting a value the recoding cannot produce,
    or a claimed bound below the one ``spec.bound_method`` gives on the published counts (plus the
    decoy allowance of its redaction rules, or the statistical bound in that setting).
    """
    # lazy: start-up time (`import sdckit.protocol`, on users' devices, does not load sdckit.risk)
    from sdckit.risk import Marginals, joint_exposure_bound

    what, cid = "plan", spec.id
    _floors(what, spec, plan.collection, plan.k, plan.budget, plan.bound)
    if plan.setting != spec.setting:
        _refuse(what, cid, f"its setting {plan.setting!r} is not the collection's {spec.setting!r}")
    if not plan.columns:
        return 0.0
    ev = plan.evidence
    counts = ev.get("counts") if isinstance(ev, Mapping) else None
    if not isinstance(counts, Mapping) or set(counts) != set(plan.columns):
        _refuse(what, cid, "it does not publish the counts of its columns, so its bound cannot be checked")
    assert isinstance(counts, Mapping)
    if not all(
        isinstance(v, Mapping) and all(type(x) is int and x >= 0 for x in v.values()) for v in counts.values()
    ):  # int() would truncate 25.5 to 25: a count is a whole number as published, or refused
        _refuse(what, cid, "its published counts do not parse (a count is not a whole number >= 0)")
    try:
        blocks = {
            tuple(str(c) for c in b["columns"]): {
                tuple(_risk_key(str(x)) for x in cell[:-1]): int(cell[-1]) for cell in b["cells"]
            }
            for b in ev.get("blocks", [])
        }
        marginals = Marginals.from_counts(
            {str(c): {str(key): int(x) for key, x in v.items()} for c, v in counts.items()}, blocks=blocks
        )
    except (SdcError, TypeError, ValueError, KeyError, AttributeError) as err:
        _refuse(what, cid, f"its published counts do not parse ({str(err)[:120]})")
    n = marginals.n
    if n != plan.n_round1 or n != ev.get("n"):
        _refuse(what, cid, f"its counts hold {n} users but it says {plan.n_round1}")
    if n_users is not None and n > n_users:
        _refuse(what, cid, f"its counts hold {n} users but the shuffler admitted {n_users}")
    for c, mapping in plan.recodings.items():
        produced = {*mapping.values(), REDACTED_KEY}
        if not set(counts[c]) <= produced:
            _refuse(what, cid, f"column {c!r} counts values its recoding cannot produce")
    if plan.setting == "statistical":
        # lazy: start-up time (`import sdckit.protocol`, on users' devices, does not load sdckit.risk)
        from sdckit.risk._bounds._statistical_bound import _statistical_bound

        try:
            n_release, delta, candidates = int(ev["n_release"]), float(ev["delta"]), int(ev["candidates"])
        except (KeyError, TypeError, ValueError):
            _refuse(what, cid, "it does not publish n_release, delta and candidates")
        if not (0 < delta < 1 and candidates >= len(plan.columns) and n_release >= 1):
            _refuse(what, cid, "its n_release, delta or candidates are out of range")
        bound = _statistical_bound(
            marginals.select(list(plan.columns)),
            k=plan.k,
            n_release=n_release,
            method=spec.bound_method,
            delta=delta,
            n_columns=candidates,
        )
    else:
        bound = float(
            joint_exposure_bound(marginals, k=plan.k, method=spec.bound_method, columns=list(plan.columns))  # type: ignore[arg-type]
        )
    if plan.redactions:
        if not all(r.feature in plan.columns for r in plan.redactions):
            _refuse(what, cid, "a redaction rule names a column outside the plan")
        delta = float(ev.get("delta", 0.05))
        if not 0 < delta < 1:
            _refuse(what, cid, "its delta is out of range")
        # (n - holders) q = k when q < 1 (q = k / (n - holders)), else n - holders <= k: mu <= k per rule
        mu = float(len(plan.redactions) * min(plan.k, n))
        log_term = math.log(1.0 / delta)
        d_max = math.ceil(mu + log_term / 3 + math.sqrt(log_term**2 / 9 + 2 * mu * log_term))
        bound += min(1.0, plan.k * d_max / n)
    moved = ev.get("moved", 0)
    if not isinstance(moved, int) or moved < 0:
        _refuse(what, cid, "its count of moved messages is not a count")
    if moved:
        bound += min(1.0, plan.k * moved / n)
    if bound > plan.bound * (1 + _TOLERANCE) + 1e-12:
        _refuse(what, cid, f"it claims a bound of {plan.bound:.4g} but its own counts give {bound:.4g}")
    if bound > plan.budget + 1e-12:
        _refuse(what, cid, f"its counts give a bound of {bound:.4g}, above its budget {plan.budget:g}")
    return bound


def check_own_values(plan: PublishedPlan, row: Mapping[str, Any]) -> None:
    """Refuse (:class:`~sdckit.protocol.PlanRefusedError`) a plan whose published counts do not
    list this user's own value of an unrecoded planned column (issue 37).

    In the fixed setting the round-2 users are the round-1 users, so every value a user sends raw
    was counted: counts that leave it out are not the counts of the users the plan is sent to (a
    curator claiming one value per column to pass the bound check). A value one of the plan's
    redaction rules sends redacted, and a recoded column (the recoding redacts a value it does not
    list), are sent without revealing it and pass. The statistical setting samples other users, so
    it is not checked there. The message does not repeat the value.
    """
    if plan.setting != "fixed" or not plan.columns:
        return
    counts = plan.evidence.get("counts") if isinstance(plan.evidence, Mapping) else None
    for c in plan.columns:
        if c in plan.recodings or c not in row:
            continue
        key = encode_value(row[c])
        listed = counts.get(c, {}) if isinstance(counts, Mapping) else {}
        if key in listed or any(r.feature == c and r.value_key == key for r in plan.redactions):
            continue
        _refuse(
            "plan",
            plan.collection,
            f"its published counts of {c!r} do not list this device's own value, so they are not the "
            "counts of the users it is sent to",
        )


def verify_pairs(queries: PairQueries, spec: CollectionSpec, *, n_users: int | None = None) -> float:
    """Check published pair queries against the collection's floors and recompute each query's
    bound (``best``, on the published counts of its columns, rare values merged); returns the sum.

    Refused (:class:`~sdckit.protocol.PlanRefusedError`) as :func:`verify_plan`, and when a
    published value is held by fewer than k users (it would be sent in clear) or a query's bound is
    below the recomputed one.
    """
    # lazy: start-up time (`import sdckit.protocol`, on users' devices, does not load sdckit.risk)
    from sdckit.risk import Marginals, joint_exposure_bound

    what, cid = "pair queries", spec.id
    _floors(what, spec, queries.collection, queries.k, queries.budget, queries.bound)
    if not queries.queries:
        return 0.0
    cols = sorted({c for q in queries.queries for c in q.columns})
    ev = queries.evidence
    if set(ev) != set(cols):
        _refuse(
            what, cid, "they do not publish the counts of their columns, so their bounds cannot be checked"
        )
    for c in cols:
        rare = [key for key, x in ev[c].items() if key != REDACTED_KEY and x < queries.k]
        if rare:
            _refuse(what, cid, f"column {c!r} publishes a value held by fewer than k = {queries.k} users")
    try:
        marginals = Marginals.from_counts({c: dict(ev[c]) for c in cols})
    except SdcError as err:
        _refuse(what, cid, f"their published counts do not parse ({str(err)[:120]})")
    if n_users is not None and marginals.n > n_users:
        _refuse(what, cid, f"their counts hold {marginals.n} users but the shuffler admitted {n_users}")
    total = 0.0
    for q in queries.queries:
        b = float(joint_exposure_bound(marginals, k=queries.k, columns=list(q.columns)))
        if b > q.bound * (1 + _TOLERANCE) + 1e-12:
            _refuse(
                what,
                cid,
                f"query {list(q.columns)} claims a bound of {q.bound:.4g} but the counts give {b:.4g}",
            )
        total += b
    if min(1.0, total) > queries.budget + 1e-12:
        _refuse(what, cid, f"their bounds add up to {total:.4g}, above the budget {queries.budget:g}")
    return min(1.0, total)


HELD_REASON = "misnamed or missing round-1 messages"
"""Start of the reason an empty plan states when misnamed or missing messages took its budget
(:func:`_allowance_plan`); the shuffler holds round 2 on such a plan."""


def _allowance_plan(
    adjusted: Mapping[str, Mapping[str, int]], moved: int, *, budget: float, k: int, **rest: Any
) -> PublishedPlan:
    """The plan on counts brought to the users (:func:`robust_counts`), within ``budget`` less the
    allowance k D / n for the D messages moved; its bound includes the allowance."""
    n = sum(next(iter(adjusted.values())).values())
    allowance = min(1.0, k * moved / n) if n else 1.0
    why = f"{moved} message(s) named the wrong feature or were missing (allowance k D/n = {allowance:.4g})"
    if allowance >= budget:
        # issue 37: an empty plan states why, per feature, so devices and operators see it; the
        # shuffler holds round 2 on a plan that releases nothing (HELD_REASON in its evidence)
        reason = f"{HELD_REASON}: {why} takes the whole budget {budget:g}"
        return PublishedPlan(
            collection=rest["collection"],
            columns=(),
            k=k,
            budget=float(budget),
            bound=0.0,
            method=f"nothing released: {why} takes the whole budget",
            n_round1=n,
            excluded=dict.fromkeys(adjusted, reason),
            evidence={"n": n, "moved": moved, "held": reason},
        )
    plan = decide_plan(adjusted, budget=budget - allowance, k=k, n_users=n, **rest)
    if not plan.columns:
        reason = f"{HELD_REASON}: nothing fits within budget - k D/n ({why})"
        return replace(
            plan,
            budget=float(budget),
            method=f"{plan.method}; within budget - k D/n ({why})",
            excluded={f: f"{plan.excluded.get(f, 'left out')}; {reason}" for f in adjusted},
            evidence={"n": n, "moved": moved, "held": reason},
        )
    return replace(
        plan,
        budget=float(budget),
        bound=min(1.0, plan.bound + allowance),
        method=f"{plan.method} + allowance k D/n for D = {moved} ({why})",
        evidence={**plan.evidence, "moved": moved},
    )


def key_hierarchy(hierarchy: Any, column: str, keys: Sequence[str]) -> Hierarchy:
    """``hierarchy`` restated on canonical value keys: the row of each key in ``keys`` is the
    encoded label, at every level, of the value the key encodes.

    Round-1 counts are keyed by :func:`encode_value` (``'39'``, ``'"Male"'``, ``'null'``); a
    hierarchy matches values by their text (``39``, ``39.0`` and ``"39"`` alike), so each key is
    decoded before it is labelled, and labels are encoded as the keys users will send (``None``
    stays ``None``, encoded ``'null'``).

    Raises
    ------
    ParameterError : more than :data:`MAX_RECODED_VALUES` values (the mapping goes into the plan).

    Examples
    --------
    >>> h = key_hierarchy("adult:age", "age", ["39", "17.0"])
    >>> h.table["39"], h.table["17.0"]
    (('"[35, 40)"', '"[30, 40)"', '"[20, 40)"', '"*"'), ('"[15, 20)"', '"[10, 20)"', '"[0, 20)"', '"*"'))
    """
    # lazy: start-up time (loads scipy, sklearn)
    from sdckit.anonymize import Hierarchy
    from sdckit.anonymize._hierarchy import as_hierarchy

    if len(keys) > MAX_RECODED_VALUES:
        raise ParameterError(
            f"column {column!r} has {len(keys):,} distinct values in round 1; a recoding lists every value "
            f"in the plan, at most {MAX_RECODED_VALUES:,}: drop its hierarchy (it is then released raw or "
            "withheld) or coarsen it before round 1"
        )
    h = as_hierarchy(hierarchy, column)

    def row(key: str) -> tuple[str, ...]:
        if key == REDACTED_KEY:  # a redacted value (a missing message) stays redacted
            return (REDACTED_KEY,) * h.n_levels
        try:
            return tuple(
                encode_value(h.label(decode_value(key), level, column)) for level in range(1, h.n_levels + 1)
            )
        except InputError:  # a value the hierarchy has no row for: redacted at every level, not an error
            return (REDACTED_KEY,) * h.n_levels

    table = {key: row(key) for key in keys}
    return Hierarchy(table=table, name=h.name)


def _recoding_plan(
    marginals: Marginals,
    counts: Mapping[str, Mapping[str, int]],
    hierarchies: Mapping[str, Any],
    *,
    collection: str,
    k: int,
    budget: float,
    method: PlanMethod,
    weights: Mapping[str, float] | None,
    round2_pad: int | None,
    pair_fields: Mapping[str, object],
) -> PublishedPlan:
    """The lattice plan on the round-1 counts (and pair blocks), as a published plan."""
    # lazy: start-up time (loads scipy, sklearn)
    from sdckit.plan import plan_release

    keyed = {c: key_hierarchy(h, c, list(counts[c])) for c, h in hierarchies.items()}
    plan = plan_release(marginals, k=k, budget=budget, weights=weights, method=method, hierarchies=keyed)
    # a value that generalises to the marker (a missing message, a value outside the hierarchy) is
    # left out of the mapping: users send it as the marker (PublishedPlan.generalise)
    recodings = {
        c: {a: b for a, b in r["mapping"].items() if REDACTED_KEY not in (a, b)}
        for c, r in plan.recodings.items()
    }
    if (size := recoding_bytes(recodings)) > MAX_RECODING_BYTES:
        raise ParameterError(
            f"the recodings of {sorted(recodings)} would hold {size:,} bytes in the plan (at most "
            f"{MAX_RECODING_BYTES:,}); give shorter hierarchy labels or drop a hierarchy"
        )
    columns = tuple(plan.columns)
    if round2_pad is not None:
        check_row_fits(columns, counts, recodings, round2_pad)
    levels = ", ".join(f"{c} at level {plan.levels[c]}" for c in columns if c in recodings)
    return PublishedPlan(
        collection=collection,
        columns=columns,
        k=k,
        budget=float(budget),
        bound=float(plan.bound),
        method=f"{plan.method} bound on the recoded marginals (recoding lattice"
        + (f": {levels})" if levels else ": no column recoded)"),
        excluded=dict(plan.excluded),
        n_round1=marginals.n,
        setting="fixed",
        recodings=recodings,
        evidence=plan_evidence(
            marginals.select(list(columns)).recode({c: recodings[c] for c in columns if c in recodings}),
            columns,
        )
        if columns
        else {},
        **pair_fields,  # type: ignore[arg-type]
    )


def check_row_fits(
    columns: Sequence[str],
    counts: Mapping[str, Mapping[str, int]],
    recodings: Mapping[str, Mapping[str, str]],
    round2_pad: int,
) -> int:
    """The longest round-2 plaintext a user of the plan can send, checked against ``round2_pad``.

    Each column contributes its longest value as sent: a recoded column its longest generalised
    value or the redaction marker (:meth:`PublishedPlan.generalise`), another its longest counted
    value. Raises :class:`ParameterError` (naming the longest value of each column) when it does
    not fit.
    """
    longest: dict[str, str] = {}
    for c in columns:
        sent = [*recodings[c].values(), REDACTED_KEY] if c in recodings else list(counts[c])
        longest[c] = max(sent, key=lambda key: len(key.encode()))
    need = HEADER_LENGTH + len(_pair_body(columns)) + sum(len(v.encode()) for v in longest.values())
    if need > round2_pad:
        shown = ", ".join(f"{c}={v[:40]}" for c, v in longest.items())
        raise ParameterError(
            f"a round-2 row of the plan can need {need} bytes ({shown}) but the collection pads round 2 "
            f"to {round2_pad}; give the collection round2_pad >= {need} or shorter hierarchy labels"
        )
    return need


def _risk_key(key: str) -> object:
    # lazy: start-up time (`import sdckit.protocol`, on users' devices, does not load sdckit.risk)
    from sdckit.risk import REDACTED as RISK_REDACTED

    return RISK_REDACTED if key == REDACTED_KEY else key


def pair_marginals(
    counts: Mapping[str, Mapping[str, int]],
    tables: Mapping[tuple[str, ...], Mapping[tuple[str, ...], int]],
    *,
    k: int,
) -> tuple[Marginals, float]:
    """The single counts with the received pair tables as blocks, and the measured share of users
    in a received cell of fewer than ``k`` users (summed over the tables, capped at 1: a user can
    sit in a small cell of several tables).

    Keys are canonical value encodings; a redacted value (the marker's key) becomes
    :data:`sdckit.risk.REDACTED`, a cell aggregating unknown true cells. A table that does not
    count the same users as the single counts (a stray or missing message) is left out.
    """
    # lazy: start-up time (`import sdckit.protocol`, on users' devices, does not load sdckit.risk)
    from sdckit.risk import Marginals

    singles = {f: dict(c) for f, c in counts.items()}
    n = sum(next(iter(singles.values())).values()) if singles else 0
    blocks: dict[tuple[str, ...], dict[tuple[object, ...], int]] = {}
    for cols, table in tables.items():
        if not set(cols) <= set(singles):
            continue
        block = {tuple(_risk_key(x) for x in cell): int(c) for cell, c in table.items() if c > 0}
        try:
            Marginals.from_counts({c: singles[c] for c in cols}, blocks={tuple(cols): block})
        except InputError:
            continue
        blocks[tuple(cols)] = block
    small = sum(c for b in blocks.values() for c in b.values() if c < k)
    measured = min(1.0, small / n) if n else 0.0
    return Marginals.from_counts(singles, blocks=blocks), measured


def choose_pairs(
    counts: Mapping[str, Mapping[str, int]],
    *,
    collection: str,
    k: int,
    budget: float,
    pad: int | None = None,
) -> PairQueries:
    """The pair queries to publish after round 1, with :func:`sdckit.plan.choose_pair_queries`:
    values held by fewer than k users are redacted in every query, and queries are added while the
    union bound on the share of users in a received cell < k stays within ``budget``.

    ``counts`` are the round-1 counts (``{feature: {value_key: users}}``; features whose totals
    disagree are left out, see :func:`consistent_counts`). ``pad`` (default: the next multiple of
    64 bytes that fits the longest pair of values of any query, redaction marker included) is the
    one length of every pair-round plaintext.
    """
    # lazy: start-up time (`import sdckit.protocol`, on users' devices, does not load sdckit.risk)
    from sdckit.plan import choose_pair_queries
    from sdckit.risk import Marginals

    ok, _ = consistent_counts(counts)
    if len(ok) < 2:
        return PairQueries(
            collection=collection, k=k, queries=(), bound=0.0, budget=float(budget), pad=pad or 64
        )
    plan = choose_pair_queries(Marginals.from_counts({f: dict(c) for f, c in ok.items()}), k, budget)
    queries = tuple(
        PairQuery(
            columns=(q.columns[0], q.columns[1]),
            redact={c: tuple(str(v) for v in vs) for c, vs in q.redact.items()},
            bound=float(q.bound),
        )
        for q in plan.queries
    )
    if pad is None:
        longest = {f: max(len(key.encode()) for key in [*c, REDACTED_KEY]) for f, c in ok.items()}
        need = (
            max(
                (HEADER_LENGTH + len(_pair_body(q.columns)) + longest[q.columns[0]] + longest[q.columns[1]])
                for q in queries
            )
            if queries
            else 64
        )
        pad = -(-need // 64) * 64
    asked = {c for q in queries for c in q.columns}
    evidence = {c: dict(suppress_rare({c: ok[c]}, k)[c]) for c in sorted(asked)}
    return PairQueries(
        collection=collection,
        k=k,
        queries=queries,
        bound=float(plan.bound),
        budget=float(budget),
        pad=pad,
        evidence=evidence,
    )


def _pair_body(columns: Sequence[str]) -> bytes:
    """The pair body with empty values: its length plus the two values' lengths is the body's."""
    return (
        json.dumps([[c, None] for c in columns], ensure_ascii=False, separators=(",", ":"))
        .encode()
        .replace(b"null", b"")
    )


def statistical_bound(
    marginals: Marginals,
    columns: Sequence[str],
    *,
    k: int,
    n_release: int,
    method: PlanMethod = "best",
    delta: float = 0.05,
) -> float:
    """Upper bound, w.p. >= 1 - delta, on the statistical exposure of a fresh release of
    ``n_release`` users on ``columns``, from the round-1 sample's single-column marginals.

    :func:`sdckit.risk.statistical_exposure_bound` (its Notes hold the derivation [derived;
    anonymity notes §3, §2]). For one set of columns fixed in advance; :func:`statistical_plan`
    covers the set it chooses with a union bound.
    """
    # lazy: start-up time (`import sdckit.protocol`, on users' devices, does not load sdckit.risk)
    from sdckit.risk import statistical_exposure_bound

    if not columns:
        return 0.0
    return float(
        statistical_exposure_bound(
            marginals, k=k, n_release=n_release, delta=delta, method=method, columns=list(columns)
        )
    )


def statistical_plan(
    marginals: Marginals,
    *,
    k: int,
    budget: float,
    n_release: int,
    method: PlanMethod = "best",
    weights: Mapping[str, float] | None = None,
    delta: float = 0.05,
) -> tuple[tuple[str, ...], float, str, dict[str, str]]:
    """The heaviest set of columns whose statistical bound is within ``budget``.

    :func:`sdckit.plan.plan_release` with ``setting="statistical"``: the bound of
    :func:`sdckit.risk.statistical_exposure_bound` at delta / (2^d - 1) per set of the d features,
    so the chosen set's bound holds with probability >= 1 - delta although it was chosen after
    seeing the counts. Returns (columns, bound, method label, reasons for the excluded columns).
    """
    # lazy: start-up time (loads scipy, sklearn)
    from sdckit.plan import plan_release

    plan = plan_release(
        marginals,
        k=k,
        budget=budget,
        weights=weights,
        method=method,
        setting="statistical",
        n_release=n_release,
        delta=delta,
    )
    label = f"statistical ({method} bound on the sample marginals + DKW, delta={delta:g}, n={n_release})"
    return tuple(plan.columns), plan.bound, label, dict(plan.excluded)
