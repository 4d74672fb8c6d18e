"""Which joint counts a curator may safely ask for after round 1 (anonymity notes §8, issue 17).

After the single-column counts, the curator can ask the users for the counts of pairs (then
triples) of columns. Asking is itself a disclosure: the curator learns the table it asks for. So
values rare at k (held by fewer than k users) are redacted in every query, and a query is only
asked when an upper bound, computed *before* asking from what the curator already holds, on the
share of users sitting in a cell smaller than k of the table it will receive keeps the total within
the budget.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from sdckit._checks import check_budget, check_k
from sdckit.errors import ColumnNotFoundError, InputError, ParameterError
from sdckit.risk._bounds._joint import joint_exposure_bound
from sdckit.risk._counts._blocks import MERGED, is_redacted
from sdckit.risk._counts._marginals import Marginals


@dataclass(frozen=True)
class BlockQuery:
    """One query of the middle round: the joint counts of ``columns``, rare values redacted."""

    columns: tuple[str, ...]
    """The columns whose joint counts are asked for."""
    redact: Mapping[str, tuple[Any, ...]]
    """Per column, the values sent as :data:`REDACTED` (held by fewer than k users)."""
    bound: float
    """Upper bound, computed before asking, on the share of users (0..1) in a cell of fewer than k
    users of the table the curator will receive (rare values merged into REDACTED)."""

    def to_dict(self) -> dict[str, Any]:
        """JSON form (values as text)."""
        return {
            "columns": list(self.columns),
            "redact": {c: [_text(v) for v in vs] for c, vs in self.redact.items()},
            "bound": self.bound,
        }


@dataclass(frozen=True)
class QueryPlan:
    """The joint counts a curator asks for, and what asking for them can expose.

    ``bound`` is min(1, sum of the queries' bounds): the share of users who sit in a cell of fewer
    than k users in at least one received table is at most the sum over the tables (a union bound).
    """

    queries: tuple[BlockQuery, ...]
    """The queries to ask, in the order chosen."""
    k: int
    """Group size: values held by fewer than k users are redacted; a cell below k counts as exposed."""
    budget: float
    """Share of users (0..1) the received tables may expose, by the union bound."""
    bound: float
    """min(1, sum of the queries' bounds) <= budget."""
    rare: Mapping[str, tuple[Any, ...]]
    """Per column, the values rare at k (redacted in every query)."""
    skipped: Mapping[tuple[str, ...], str] = field(default_factory=dict)
    """Candidate queries not asked, with the reason."""

    @property
    def blocks(self) -> list[tuple[str, ...]]:
        """The asked column tuples, for ``Marginals.from_data(..., blocks=plan.blocks, redact=plan.redact)``."""
        return [q.columns for q in self.queries]

    @property
    def redact(self) -> dict[str, set[Any]]:
        """Per column, the values to redact in the block tables."""
        return {c: set(v) for c, v in self.rare.items() if v}

    def received_exposure(self, received: Marginals) -> dict[str, Any]:
        """Measured after the round: the share of users in a received cell of fewer than k users.

        ``received`` holds the tables as received (redacted cells as aggregates). Per query the
        share is exact (the curator sees these counts); across queries the share exposed in at least
        one table lies between the largest and the sum (``"max"``, ``"sum"``).
        """
        per: dict[str, float] = {}
        for q in self.queries:
            b = received.blocks.get(q.columns)
            if b is None:
                raise InputError(
                    f"the received marginals lack the table of {q.columns!r}; count it with "
                    "Marginals.from_data(data, columns, blocks=plan.blocks, redact=plan.redact)."
                )
            small = int(b.counts[b.counts < self.k].sum()) + int(
                b.redacted_counts[b.redacted_counts < self.k].sum()
            )
            per[" x ".join(q.columns)] = small / received.n
        values = list(per.values())
        return {"per_query": per, "max": max(values, default=0.0), "sum": min(1.0, sum(values))}

    def to_dict(self) -> dict[str, Any]:
        """JSON form with stable keys."""
        return {
            "k": self.k,
            "budget": self.budget,
            "bound": self.bound,
            "queries": [q.to_dict() for q in self.queries],
            "rare": {c: [_text(v) for v in vs] for c, vs in self.rare.items()},
            "skipped": {" x ".join(c): why for c, why in self.skipped.items()},
        }


def _text(v: Any) -> str:
    return "REDACTED" if is_redacted(v) else ("null" if v is None else str(v))


def rare_values(marginals: Marginals, k: int) -> dict[str, tuple[Any, ...]]:
    """Per column, the values held by fewer than ``k`` users (the ones a query must redact)."""
    return {
        c: tuple(v for v, x in zip(marginals.values[c], marginals.counts[c], strict=True) if x < k)
        for c in marginals.columns
    }


def coarsen(marginals: Marginals, rare: Mapping[str, Sequence[Any]]) -> Marginals:
    """The marginals of the columns with their rare values merged into one value, :data:`MERGED`.

    These are the tables the users send in a query with those values redacted: a received cell
    with :data:`REDACTED` is an ordinary cell of the merged columns (``REDACTED`` becomes
    ``MERGED``). Blocks received with the same redaction therefore carry over exactly.
    """
    maps = {c: {v: MERGED for v in rare.get(c, ())} for c in marginals.columns}
    merged = marginals.recode(maps)
    if not merged.blocks:
        return merged
    tables: dict[tuple[str, ...], dict[Any, int]] = {}
    for key, b in merged.blocks.items():
        table: dict[Any, int] = {}
        for cell, x in zip(
            b.values + b.redacted_values, [*b.counts.tolist(), *b.redacted_counts.tolist()], strict=True
        ):
            new = tuple(MERGED if is_redacted(v) else v for v in cell)
            table[new] = table.get(new, 0) + x
        tables[key] = table
    singles = {c: dict(zip(merged.values[c], merged.counts[c].tolist(), strict=True)) for c in merged.columns}
    kept = {}
    for key, table in tables.items():
        try:  # redacted with another rare set: not a table of these merged columns; leave it out
            Marginals.from_counts({c: singles[c] for c in key}, blocks={key: table})
        except InputError:
            continue
        kept[key] = table
    return Marginals.from_counts(singles, blocks=kept)


def choose_pair_queries(
    marginals: Marginals,
    k: int,
    budget: float,
    *,
    columns: Sequence[str] | None = None,
    triples: bool = False,
    max_queries: int | None = None,
) -> QueryPlan:
    """Choose which pairs (and, with ``triples=True``, triples) of columns to ask counts for.

    Every value held by fewer than ``k`` users is redacted in every query (its holders send
    :data:`REDACTED`), so the curator receives the joint table of the *merged* columns. Before
    asking, the curator bounds that table's exposure at k: B_Q = :func:`joint_exposure_bound` of the
    merged columns of Q (their single counts, and for a triple also the pair tables already
    received). The share of users who are in a cell of fewer than k users in at least one received
    table is at most sum_Q B_Q (union bound); queries are added while that sum stays within
    ``budget``, in decreasing order of log(prod of merged supports) / B_Q (the joint support a
    query can reveal per unit of exposure), pairs before triples.

    Parameters
    ----------
    marginals : what the curator holds (round 1: single-column counts; for triples, also the pair
        tables received, redacted with the same k).
    k : group size (>= 1): the k of the release.
    budget : share of users (0..1) the received tables may expose (union bound).
    columns : candidate columns (default: all).
    triples : also consider triples (their bound uses the pair tables in ``marginals``).
    max_queries : stop after this many queries.

    Returns
    -------
    QueryPlan : the queries with their redactions and bounds, the total bound, the skipped ones.

    Examples
    --------
    >>> from sdckit.datasets import load_adult
    >>> m = Marginals.from_data(load_adult(), ["workclass", "marital-status", "race", "sex"])
    >>> plan = choose_pair_queries(m, k=5, budget=0.05)
    >>> len(plan.queries), round(plan.bound, 4)
    (6, 0.0209)
    """
    k_int = int(check_k(k))
    b = check_budget(budget)
    if max_queries is not None and (not isinstance(max_queries, int) or max_queries < 0):
        raise ParameterError(f"max_queries={max_queries!r}: give a whole number >= 0, or None for no limit.")
    cands = list(marginals.columns if columns is None else columns)
    for c in cands:
        if c not in marginals.counts:
            raise ColumnNotFoundError(str(c), marginals.columns)
    rare = rare_values(marginals, k_int)
    merged = coarsen(marginals.select(cands), rare)
    supports = merged.supports
    sizes = [2, 3] if triples else [2]
    chosen: list[BlockQuery] = []
    skipped: dict[tuple[str, ...], str] = {}
    total = 0.0
    for size in sizes:
        scored = []
        for q in itertools.combinations(cands, size):
            if q in marginals.blocks:
                continue  # already known
            bound = float(joint_exposure_bound(merged, k=k_int, columns=list(q)))
            gain = sum(math.log(supports[c]) for c in q)
            scored.append((-(gain / max(bound, 1e-12)), bound, q))
        scored.sort()
        for _, bound, q in scored:
            if max_queries is not None and len(chosen) >= max_queries:
                skipped[q] = f"the limit of {max_queries} queries is reached"
            elif gain_free(q, supports):
                skipped[q] = "every column has one merged value: nothing to learn"
            elif total + bound > b:
                skipped[q] = (
                    f"its bound {bound:.4g} would bring the total to {total + bound:.4g} > budget {b:g}"
                )
            else:
                chosen.append(BlockQuery(q, {c: rare[c] for c in q if rare[c]}, bound))
                total += bound
    return QueryPlan(
        queries=tuple(chosen),
        k=k_int,
        budget=b,
        bound=min(1.0, total),
        rare={c: rare[c] for c in cands},
        skipped=skipped,
    )


def received_marginals(
    data: Any,
    columns: Sequence[str],
    k: int,
    budget: float,
    *,
    triples: bool = False,
    missing: Any = "value",
    singles: Marginals | None = None,
) -> tuple[Marginals, QueryPlan]:
    """What a curator holds after the middle round, counted on ``data``: the single counts, and the
    tables of the queries :func:`choose_pair_queries` allows at ``k`` within ``budget`` (rare values
    redacted). With ``triples``, a second step then asks triples with those pair tables received,
    within what is left of ``budget``, so the union bound covers both steps.

    Returns the received marginals and one :class:`QueryPlan` for everything asked (``bound`` the
    sum over both steps). ``singles`` are the single counts when already counted.
    """
    cols = list(columns)
    first = choose_pair_queries(singles or Marginals.from_data(data, cols, missing=missing), k, budget)
    received = Marginals.from_data(data, cols, missing=missing, blocks=first.blocks, redact=first.redact)
    if not triples or budget - first.bound <= 0:
        return received, first
    second = choose_pair_queries(received, k, budget - first.bound, triples=True)
    more = tuple(q for q in second.queries if q.columns not in received.blocks)
    if not more:
        return received, first
    plan = QueryPlan(
        queries=first.queries + more,
        k=first.k,
        budget=float(budget),
        bound=min(1.0, first.bound + sum(q.bound for q in more)),
        rare=first.rare,  # rare at k on the singles: the same values are redacted in every query
        skipped=second.skipped,
    )
    return Marginals.from_data(data, cols, missing=missing, blocks=plan.blocks, redact=plan.redact), plan


def gain_free(q: Sequence[str], supports: Mapping[str, int]) -> bool:
    """A query over columns that each have a single (merged) value reveals nothing new."""
    return bool(np.prod([supports[c] for c in q]) <= 1) or sum(supports[c] > 1 for c in q) < 2
