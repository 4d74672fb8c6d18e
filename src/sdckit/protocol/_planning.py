"""The curator's decision: from round-1 marginals to a :class:`PublishedPlan` (pure).

The planner itself is :func:`sdckit.risk.plan_release`; this module adapts the counts the curator
holds (keyed by canonical value encodings), applies the local-suppression extension, and records
the outcome as the public plan.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Literal, TypeAlias

import numpy as np
from numpy.typing import NDArray

from sdckit.errors import ParameterError
from sdckit.protocol._spec import PublishedPlan, Redaction, Setting
from sdckit.protocol._wire import REDACTED, encode_value

if TYPE_CHECKING:
    from sdckit.risk import Marginals

PlanMethod: TypeAlias = Literal["lower", "support", "theorem2", "theorem3", "best"]
"""Bound used by :func:`sdckit.risk.plan_release` (see its documentation)."""

REDACTED_KEY = encode_value(REDACTED)
"""Canonical key of the redaction marker, ``'{"redacted":true}'``."""


def suppress_rare(counts: Mapping[str, Mapping[str, int]], k: int) -> dict[str, Counter[str]]:
    """Merge, per feature, the values held by fewer than ``k`` users into :data:`REDACTED`.

    [derived] Merging values coarsens every user's group on any J (a group can only grow), so the
    share of users in groups smaller than k can only fall; further random redactions by non-holders
    (the decoys of seed §8) coarsen again. A bound computed on these merged marginals therefore
    bounds the release made under the rules.
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
) -> PublishedPlan:
    """Decide which features are released, with :func:`sdckit.risk.plan_release`.

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
        planned features, and plan on the marginals with those values merged (:func:`suppress_rare`).
    delta : Statistical setting: the plan's bound holds with probability >= 1 - delta.
    """
    from sdckit.risk import Marginals, plan_release

    if not isinstance(k, int) or k < 1:
        raise ParameterError(f"k={k!r}: give a group size >= 1 (users)")
    effective = suppress_rare(counts, k) if local_suppression else {f: Counter(c) for f, c in counts.items()}
    marginals = Marginals.from_counts({f: dict(c) for f, c in effective.items()})
    n1 = marginals.n
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
    else:
        plan = plan_release(marginals, k=k, budget=budget, weights=weights, method=method)
        columns, bound, how, excluded = tuple(plan.columns), plan.bound, plan.method, dict(plan.excluded)
    redactions: list[Redaction] = []
    if local_suppression:
        for f in columns:
            for key, held in counts[f].items():
                if held < k:
                    redactions.append(
                        Redaction(feature=f, value_key=key, probability=decoy_probability(n1, held, k))
                    )
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
    )


def _binom_tail(n: int, t: NDArray[np.float64], k: int) -> NDArray[np.float64]:
    from scipy.stats import binom

    return np.asarray(binom.cdf(k - 2, n - 1, t), dtype=np.float64)


def statistical_bound(
    marginals: Marginals,
    columns: Sequence[str],
    *,
    k: int,
    n_release: int,
    method: PlanMethod = "best",
    delta: float = 0.05,
    grid: int = 64,
) -> float:
    """Upper bound, w.p. >= 1 - delta, on the statistical exposure of a fresh release of
    ``n_release`` users on ``columns``, from the round-1 sample's single-column marginals.

    [derived] For any t in [0, 1], splitting the values v of the joint population law p at t,

        Q^stat_n(k) = sum_v p_v P(Bin(n-1, p_v) <= k-2) <= Q_p(t) + P(Bin(n-1, t) <= k-2),

    since the binomial tail falls as p_v grows. DKW on the sample of n_hat users (anonymity notes
    §3): Q_p(t) <= Q_hat(t + 2D) + D with D = sqrt(ln(2/delta) / (2 n_hat)), simultaneously for all
    t; and Q_hat(s) <= B_J(s), the marginal bound of §2 computed on the sample's marginals. The
    result is min over a geometric grid of t (``grid`` points between 1/n and 1) of
    ``B_J(t + 2D) + D + P(Bin(n-1, t) <= k-2)``, clipped to [0, 1]. Conservative: the DKW term
    (D = 0.0107 for n_hat = 16,000 and delta = 0.05) is the price of not seeing the joint law.
    """
    from sdckit.risk import joint_exposure_bound

    if not columns:
        return 0.0
    n_hat = marginals.n
    d = math.sqrt(math.log(2 / delta) / (2 * n_hat))
    t = np.concatenate([[0.0], np.geomspace(1.0 / n_release, 1.0, grid)])
    s = np.minimum(1.0, t + 2 * d)
    b = np.asarray(
        joint_exposure_bound(marginals, t=s, method=method, columns=list(columns)), dtype=np.float64
    )
    total = b + d + _binom_tail(n_release, t, k)
    return float(min(1.0, total.min()))


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
    """The heaviest set of columns whose :func:`statistical_bound` is within ``budget``.

    Exact search over column sets with pruning: the bound only grows when a column is added (each
    B_J does), so a set over budget prunes its supersets. Returns (columns, bound, method label,
    reasons for the excluded columns).
    """
    if not 0 <= budget <= 1:
        raise ParameterError(f"budget={budget!r}: give a share of users in [0, 1]")
    if not 0 < delta < 1:
        raise ParameterError(f"delta={delta!r}: give a probability in (0, 1), e.g. 0.05")
    cols = list(marginals.columns)
    w = {c: 1.0 for c in cols} | dict(weights or {})
    cache: dict[frozenset[str], float] = {}

    def bound(js: Sequence[str]) -> float:
        key = frozenset(js)
        if key not in cache:
            ordered = [c for c in cols if c in key]
            cache[key] = statistical_bound(
                marginals, ordered, k=k, n_release=n_release, method=method, delta=delta
            )
        return cache[key]

    cands = sorted((c for c in cols if bound([c]) <= budget), key=lambda c: (-w[c], bound([c])))
    best: list[object] = [-1.0, math.inf, ()]

    def dfs(i: int, cur: tuple[str, ...], weight: float, b: float) -> None:
        if weight > best[0] or (weight == best[0] and b < best[1]):  # type: ignore[operator]
            best[:] = [weight, b, cur]
        if i == len(cands) or weight + sum(w[c] for c in cands[i:]) < best[0]:  # type: ignore[operator]
            return
        trial = (*cur, cands[i])
        value = bound(trial)
        if value <= budget:
            dfs(i + 1, trial, weight + w[cands[i]], value)
        dfs(i + 1, cur, weight, b)

    dfs(0, (), 0.0, 0.0)
    chosen = tuple(c for c in cols if c in set(best[2]))  # type: ignore[call-overload]
    excluded = {}
    for c in cols:
        if c in chosen:
            continue
        alone = bound([c])
        if alone > budget:
            excluded[c] = f"alone its statistical bound is {alone:.4g} > budget {budget:g}"
        else:
            excluded[c] = f"with the chosen columns the statistical bound would be {bound([*chosen, c]):.4g}"
    label = f"statistical ({method} bound on the sample marginals + DKW, delta={delta:g}, n={n_release})"
    return chosen, bound(chosen), label, excluded
