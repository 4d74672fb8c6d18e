"""The curator's global-suppression decision: which columns to release (anonymity notes §5, step 4)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np

from sdckit.errors import ColumnNotFoundError, InfeasibleError, ParameterError
from sdckit.risk._bounds import _bound
from sdckit.risk._checks import UPPER_METHODS, BoundMethod, check_budget, check_k, check_method
from sdckit.risk._marginals import Marginals
from sdckit.risk._statistical_bound import _statistical_bound, check_delta, check_n_release

SearchKind = Literal["exact", "greedy"]
Setting = Literal["fixed", "statistical"]
"""``"fixed"``: the release is the very table whose marginals were counted (anonymity notes §2);
``"statistical"``: the counts come from a sample and the release is a fresh sample (§3, §5)."""

MAX_EXACT_COLUMNS = 20
"""Up to this many columns the search over column sets is exact (branch and bound); greedy beyond."""


@dataclass(frozen=True, kw_only=True)
class ReleasePlan:
    """Which columns to release so that at most ``budget`` of users can be in groups smaller than k.

    The guarantee is a bound computed from the single-column marginals only (no joint counts). In
    the fixed setting, with these columns released the share of users in groups smaller than ``k``
    is at most ``bound``. In the statistical setting, the expected share in a fresh release of
    ``n_release`` users is at most ``bound`` with probability >= 1 - ``delta`` over the sample.
    """

    columns: tuple[str, ...]
    """The columns to release, in the order of the marginals."""
    k: int
    """The group size every user should reach (k-anonymity)."""
    budget: float
    """Share of users (0..1) allowed in groups smaller than k."""
    bound: float
    """Upper bound (share of users, 0..1) on the exposure of the released columns at k; <= budget."""
    method: str
    """The bound used (``"best"``, ``"theorem2"``, ``"theorem3"`` or ``"support"``)."""
    excluded: Mapping[str, str] = field(default_factory=dict)
    """Why each column was left out, e.g. ``{'native-country': 'bound 0.12 > budget 0.05 ...'}``."""
    weight: float = 0.0
    """Total weight of the released columns (default weight: 1 per column)."""
    n: int = 0
    """Number of users the marginals count."""
    search: SearchKind = "exact"
    """``"exact"``: the largest total weight among all column sets (bounds only grow when columns
    are added); ``"greedy"``: columns added one at a time (more than 20 candidate columns)."""
    setting: Setting = "fixed"
    """``"fixed"``: ``bound`` holds for the counted users themselves, with certainty;
    ``"statistical"``: ``bound`` is on Q^stat_n(k), the expected share of a fresh release of
    ``n_release`` users, and holds with probability >= 1 - ``delta``."""
    n_release: int | None = None
    """Users in the fresh release (statistical setting; None in the fixed setting)."""
    delta: float | None = None
    """Statistical setting: probability (0..1) that the bound of the chosen columns fails, over the
    draw of the sample, whichever columns were chosen; None in the fixed setting (no failure)."""

    def to_dict(self) -> dict[str, Any]:
        """JSON form with stable keys (``budget`` and ``bound`` are shares of users)."""
        return {
            "columns": list(self.columns),
            "k": self.k,
            "budget": self.budget,
            "bound": self.bound,
            "method": self.method,
            "excluded": dict(self.excluded),
            "weight": self.weight,
            "n": self.n,
            "search": self.search,
            "setting": self.setting,
            "n_release": self.n_release,
            "delta": self.delta,
        }


class _Evaluator:
    """Memoised bound of a column set at one threshold (only answers below ``budget`` are sharp).

    With ``statistical=(n_release, delta, d)``, the bound is instead the statistical one of
    :func:`statistical_exposure_bound`, valid simultaneously for all sets of the d candidate columns
    (always sharp).
    """

    def __init__(
        self,
        marginals: Marginals,
        thr: int,
        method: str,
        budget: float,
        statistical: tuple[int, float, int] | None = None,
    ) -> None:
        self.marginals, self.thr, self.method, self.budget = marginals, thr, method, budget
        self.statistical = statistical
        self.cache: dict[frozenset[str], float] = {}
        self.options: dict[tuple[str, str], Any] = {}

    def __call__(self, cols: Sequence[str], *, sharp: bool = False) -> float:
        key = frozenset(cols)
        if not sharp and key in self.cache:
            return self.cache[key]
        order = [c for c in self.marginals.columns if c in key]
        if self.statistical is not None:
            if key not in self.cache:
                n_release, delta, n_columns = self.statistical
                self.cache[key] = _statistical_bound(
                    self.marginals.select(order),
                    k=self.thr + 1,
                    n_release=n_release,
                    method=self.method,
                    delta=delta,
                    n_columns=n_columns,
                )
            return self.cache[key]
        value = float(
            _bound(
                self.marginals.select(order),
                np.asarray(self.thr),
                self.method,
                None if sharp else self.budget,
            )
        )
        if not sharp:
            self.cache[key] = value
        return value


def plan_release(
    marginals: Marginals,
    *,
    k: int,
    budget: float,
    weights: Mapping[str, float] | None = None,
    method: BoundMethod = "best",
    columns: Sequence[str] | None = None,
    setting: Setting = "fixed",
    n_release: int | None = None,
    delta: float = 0.05,
) -> ReleasePlan:
    """Choose the columns to release: the largest total weight whose exposure bound at k is <= budget.

    Global suppression decided from marginals alone [seed; anonymity notes §5 step 4]: the curator
    keeps the set J maximising sum_{j in J} w_j subject to B_J((k - 1) / n) <= budget, where B is the
    upper bound ``method`` of :func:`joint_exposure_bound`. Ties go to the smaller bound.

    In the statistical setting (anonymity notes §5: the counted users are a sample of a population,
    the release a fresh sample of ``n_release`` users), B_J is replaced by the bound of
    :func:`statistical_exposure_bound` on Q^stat_n(k), each set at delta / (2^d - 1) for d candidate
    columns, so that the chosen set's bound holds with probability >= 1 - delta (union bound over
    every set the search could choose after seeing the counts).

    Parameters
    ----------
    marginals : the value counts the curator holds.
    k : the group size every user should reach (>= 1).
    budget : share of users (0..1) allowed in groups smaller than k.
    weights : value of releasing each column (default 1 each, i.e. the most columns); >= 0.
    method : an upper bound: ``"best"`` (default), ``"theorem2"``, ``"theorem3"`` or ``"support"``.
    columns : the candidate columns (default: all columns of the marginals).
    setting : ``"fixed"`` (default): the release is the counted table itself; ``"statistical"``:
        the counts are of a sample and the release is a fresh sample of ``n_release`` users.
    n_release : users in the fresh release (statistical setting only, required there).
    delta : statistical setting: probability (0..1, exclusive) that the plan's bound fails, over the
        draw of the sample. Ignored in the fixed setting, whose bound always holds.

    Returns
    -------
    ReleasePlan : the columns, the bound, and why each other column was left out.

    Raises
    ------
    ParameterError : k < 1, budget outside [0, 1], a negative weight, ``method="lower"`` (a lower
        bound guarantees nothing), an unknown setting, ``n_release`` missing in the statistical
        setting or given in the fixed one, or delta outside (0, 1).
    InfeasibleError : k larger than the number of users (of the release, in the statistical
        setting): no release meets the budget.

    Notes
    -----
    Exact branch and bound up to 20 candidate columns: an exactly minimised bound only grows when a
    column is added (each factor w_j >= 1), so a set over budget prunes all its supersets; a branch
    is also cut when even adding every remaining column cannot beat the best weight found. Beyond
    20 columns, greedy: repeatedly add the heaviest column that keeps the bound within budget.
    Every returned plan has its bound checked, whatever the search.

    Examples
    --------
    >>> m = Marginals.from_counts({"sex": [21790, 10771], "race": [27816, 3124, 1039, 311, 271],
    ...                            "id": [1] * 32561})
    >>> plan = plan_release(m, k=5, budget=0.01)
    >>> plan.columns, round(plan.bound, 5)
    (('sex', 'race'), 0.00123)
    >>> plan.excluded["id"]
    'alone its bound is 1 > budget 0.01'
    """
    if method not in UPPER_METHODS:
        check_method(method)
        raise ParameterError(
            f"method={method!r} is a lower bound and guarantees nothing; plan with 'best', 'theorem2', "
            "'theorem3' or 'support'."
        )
    if setting not in ("fixed", "statistical"):
        raise ParameterError(f"setting={setting!r}: use 'fixed' (the counted users are released) or 'statistical'.")
    statistical = setting == "statistical"
    if statistical and n_release is None:
        raise ParameterError(
            "setting='statistical' plans for a fresh release: give n_release, the number of users in it."
        )
    if not statistical and n_release is not None:
        raise ParameterError(
            f"n_release={n_release!r} is only for setting='statistical'; in the fixed setting the release is "
            "the counted users."
        )
    k_int = int(check_k(k))
    b = check_budget(budget)
    n_rel = check_n_release(n_release) if statistical else None
    dlt = check_delta(delta) if statistical else None
    cands = list(marginals.columns if columns is None else columns)
    for c in cands:
        if c not in marginals.counts:
            raise ColumnNotFoundError(str(c), marginals.columns)
    w: dict[str, float] = {c: 1.0 for c in cands}
    if weights is not None:
        for c, v in weights.items():
            if c not in w:
                raise ColumnNotFoundError(str(c), cands)
            if not np.isfinite(v) or v < 0:
                raise ParameterError(f"weight of column {c!r} is {v!r}; weights are finite and >= 0.")
            w[c] = float(v)
    n = marginals.n
    thr = k_int - 1
    n_users = n_rel if n_rel is not None else n
    if n_users <= thr:
        who = "released users" if statistical else "users"
        raise InfeasibleError(
            f"k={k_int} is larger than the {n_users:,} {who}: nobody can be in a group of k. "
            f"Lower k to at most {n_users}."
        )
    stat = None
    if n_rel is not None and dlt is not None:
        stat = (n_rel, dlt, len(cands))  # union bound over the 2^d - 1 sets the search may choose
    evaluate = _Evaluator(marginals, thr, method, b, stat)
    alone = {c: evaluate([c]) for c in cands}
    feasible = [c for c in cands if alone[c] <= b]
    feasible.sort(key=lambda c: (-w[c], alone[c]))
    chosen: list[str]
    if len(feasible) <= MAX_EXACT_COLUMNS:
        search: SearchKind = "exact"
        chosen = _exact(feasible, w, evaluate, b)
    else:
        search = "greedy"
        chosen = _greedy(feasible, w, evaluate, b)
    ordered = tuple(c for c in marginals.columns if c in set(chosen))
    bound = evaluate(ordered, sharp=True) if ordered else 0.0
    excluded: dict[str, str] = {}
    what = "statistical bound" if statistical else "bound"
    for c in cands:
        if c in chosen:
            continue
        if alone[c] > b:
            excluded[c] = f"alone its {what} is {evaluate([c], sharp=True):.4g} > budget {b:g}"
            continue
        with_c = evaluate([*ordered, c], sharp=True)
        if with_c > b:
            excluded[c] = f"with the chosen columns the {what} would be {with_c:.4g} > budget {b:g}"
        else:
            excluded[c] = f"not chosen (weight {w[c]:g}); adding it gives {what} {with_c:.4g}"
    return ReleasePlan(
        columns=ordered,
        k=k_int,
        budget=b,
        bound=bound,
        method=method,
        excluded=excluded,
        weight=float(sum(w[c] for c in ordered)),
        n=n,
        search=search,
        setting=setting,
        n_release=n_rel,
        delta=dlt,
    )


def _exact(cands: list[str], w: Mapping[str, float], evaluate: _Evaluator, budget: float) -> list[str]:
    suffix = np.concatenate([np.cumsum([w[c] for c in cands][::-1])[::-1], [0.0]])
    best: list[Any] = [-1.0, np.inf, []]  # weight, bound, columns

    def dfs(i: int, current: list[str], weight: float, bound: float) -> None:
        if weight > best[0] or (weight == best[0] and bound < best[1]):
            best[:] = [weight, bound, list(current)]
        if i == len(cands) or weight + suffix[i] < best[0]:
            return
        trial = [*current, cands[i]]
        value = evaluate(trial)
        if value <= budget:
            dfs(i + 1, trial, weight + w[cands[i]], value)
        dfs(i + 1, current, weight, bound)

    dfs(0, [], 0.0, 0.0)
    chosen: list[str] = best[2]
    return chosen


def _greedy(cands: list[str], w: Mapping[str, float], evaluate: _Evaluator, budget: float) -> list[str]:
    chosen: list[str] = []
    left = list(cands)
    while left:
        scored = [(c, evaluate([*chosen, c])) for c in left]
        ok = [(c, v) for c, v in scored if v <= budget]
        if not ok:
            break
        c, _ = min(ok, key=lambda cv: (-w[cv[0]], cv[1]))
        chosen.append(c)
        left.remove(c)
    return chosen
