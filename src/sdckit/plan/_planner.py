"""The curator's global-suppression decision: which columns to release (anonymity notes §5, step 4)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal

import narwhals as nw
import numpy as np
from numpy.typing import NDArray

from sdckit._checks import UPPER_METHODS, BoundMethod, check_budget, check_k, check_method
from sdckit._io import as_narwhals, check_columns
from sdckit.anonymize import GlobalRecoder, LocalSuppressor
from sdckit.anonymize._base import eager_frame, frame_columns
from sdckit.anonymize._certificate import row_floor
from sdckit.anonymize._decoys import decoy_suppress, distinct_rows
from sdckit.anonymize._hierarchy import as_hierarchy
from sdckit.anonymize._lazy import aggregate, lazy_frame, value_counts
from sdckit.errors import ColumnNotFoundError, InfeasibleError, ParameterError
from sdckit.plan._lattice import (
    DataExposure,
    LazyExposure,
    LossMeasure,
    check_loss,
    column_levels,
    column_loss,
    label_codes,
    recoded_counts,
    search_lattice,
)
from sdckit.risk._bounds._joint import _bound
from sdckit.risk._bounds._statistical_bound import _statistical_bound, check_delta, check_n_release
from sdckit.risk._counts._blocks import BlockCounts, make_block
from sdckit.risk._counts._marginals import Marginals, recode_block

SearchKind = Literal["exact", "greedy", "lattice"]
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
    levels: Mapping[str, int] = field(default_factory=dict)
    """Lattice search: the recoding level of each candidate column (0 = raw; a column without a
    hierarchy has 0 or 1 = withheld). Empty for the keep/withhold search."""
    recodings: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    """Lattice search: the :class:`~sdckit.anonymize.GlobalRecoder` rule of each recoded column,
    ``{"mapping": {value: label}}`` (JSON-able, self-contained)."""
    loss: float | None = None
    """Information loss of the plan (0..1): the recoding loss ``loss_measure`` averaged with the
    column weights, plus the share of key cells suppressed."""
    loss_measure: str | None = None
    """``"entropy"`` (non-uniform entropy) or ``"precision"``; None for the keep/withhold search."""
    suppressed: Mapping[str, int] = field(default_factory=dict)
    """Cells local suppression sets to missing in each released column (data given only)."""
    n_suppressed: int = 0
    """Total cells suppressed."""
    exposure: float | None = None
    """Data given: the share of records in groups smaller than k in the release itself (recoded and
    suppressed with decoys), groups of identical rows, a missing cell a value of its own; None when
    planned from marginals alone."""
    n_nodes: int = 0
    """Nodes of the recoding lattice (product over columns of levels + 1)."""
    n_evaluated: int = 0
    """Nodes whose exposure was computed (the others were pruned)."""
    suppression_bound: int = 0
    """Proven lower bound on the cells any release of the chosen recoding needs for identical-row k
    (the certificate's floor, :mod:`sdckit.anonymize._certificate`); 0 without suppression."""
    loss_bound: float | None = None
    """With suppression: the least total loss any candidate node could reach, proven (recoding loss +
    the certified cells' share) over the acceptable nodes the planner scored (``n_certified``)."""
    n_certified: int = 0
    """Acceptable nodes whose suppression cost was certified (lower bound) when choosing."""

    @property
    def loss_gap(self) -> float | None:
        """(loss - loss_bound) / loss: how far the proposal can be from the best certified candidate."""
        if self.loss is None or self.loss_bound is None:
            return None
        return 0.0 if self.loss <= 0 else max(0.0, (self.loss - self.loss_bound) / self.loss)

    def apply(self, data: Any) -> Any:
        """The release this plan describes: columns kept, recoded, then locally suppressed to k.

        Withheld columns are dropped; the recodings are those of :attr:`recodings`; local
        suppression with decoys (when the plan suppresses cells) draws its decoys from OS entropy,
        so its cells are close to, not always equal to, :attr:`suppressed` (one draw the planner
        counted). Same frame type out: a lazy frame (polars LazyFrame, DuckDB, Dask, Spark) stays
        lazy, recoded where its rows live (local suppression on it is :class:`LocalSuppressor`'s).
        """
        lazy = lazy_frame(data)
        frame: Any = lazy if lazy is not None else eager_frame(data)
        names = as_narwhals(frame).collect_schema().names()
        withheld = [c for c in self.excluded if c in names]
        out = frame.drop(withheld).to_native() if withheld else frame.to_native()
        if self.recodings:
            out = GlobalRecoder(rules={c: dict(r) for c, r in self.recodings.items()}).fit_transform(out)
        if self.n_suppressed:
            out = LocalSuppressor(k=self.k, columns=list(self.columns)).fit_transform(out)
        return out

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
            "levels": dict(self.levels),
            "recodings": {c: dict(r) for c, r in self.recodings.items()},
            "loss": self.loss,
            "loss_measure": self.loss_measure,
            "suppressed": dict(self.suppressed),
            "n_suppressed": self.n_suppressed,
            "exposure": self.exposure,
            "n_nodes": self.n_nodes,
            "n_evaluated": self.n_evaluated,
            "suppression_bound": self.suppression_bound,
            "loss_bound": self.loss_bound,
            "loss_gap": self.loss_gap,
            "n_certified": self.n_certified,
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
    hierarchies: Mapping[str, Any] | None = None,
    data: Any = None,
    suppression: float | None = None,
    loss: LossMeasure = "entropy",
    withhold: bool = True,
    progress: Callable[[int], None] | None = None,
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
    hierarchies : ``{column: hierarchy}`` (a :class:`~sdckit.anonymize.Hierarchy`, a CSV path, or a
        built-in name such as ``"adult:age"``): search recoding levels instead of keep/withhold
        (see Notes). Columns without one keep the choice raw / withheld.
    data : the table itself (fixed setting). With it, each node's exposure is counted exactly on
        the recoded table instead of bounded from the marginals, and local suppression is possible.
    suppression : with ``data``: the share of records (0..1) local suppression may treat. A node
        whose exposure is at most ``max(budget, suppression)`` is acceptable; when its exposure is
        over the budget, :class:`~sdckit.anonymize.LocalSuppressor` brings every record to k (a
        missing cell matching any value) and the plan counts the cells.
    loss : the recoding loss the lattice search minimises: ``"entropy"`` (default, non-uniform
        entropy normalised per column) or ``"precision"`` (level / top level).
    withhold : whether the lattice may withhold a column (its top level, one label for everyone, or
        level 1 of a column without a hierarchy). With ``withhold=False`` every column is released
        with at least two labels; pair it with ``suppression`` for what recoding leaves exposed.
    progress : called with the number of nodes evaluated so far (for a progress bar).

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

    With ``hierarchies`` or ``data`` the search runs over the lattice of recoding levels (one level
    per column, 0 = raw up to the top): nodes in ascending loss, Flash-style pruning (a node over
    the budget makes all its specialisations over it; a node within it makes all its
    generalisations within it, at more loss), the first acceptable node wins. From marginals alone
    a node's bound is the bound ``method`` on the recoded marginals (recoding maps single-column
    counts to single-column counts), so it stays a sound bound on the recoded release; in the
    statistical setting it is the statistical bound of the recoded marginals at delta / (number of
    nodes), a union bound over every node the search could choose. With
    ``suppression`` the best three acceptable nodes are suppressed and the one with the least
    total loss (recoding loss + share of key cells suppressed) is chosen.

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
    if hierarchies is not None or data is not None or suppression is not None:
        if statistical and (data is not None or suppression is not None):
            raise ParameterError(
                "in the statistical setting the release is a fresh sample, so counting the sample's table "
                "(data=, suppression=) says nothing exact about it; plan with hierarchies= alone there."
            )
        return _plan_lattice(
            marginals,
            k=int(check_k(k)),
            budget=check_budget(budget),
            weights=weights,
            method=method,
            columns=columns,
            hierarchies=hierarchies or {},
            data=data,
            suppression=suppression,
            loss=check_loss(loss),
            withhold=bool(withhold),
            progress=progress,
            statistical=(check_n_release(n_release), check_delta(delta)) if statistical else None,
        )
    k_int = int(check_k(k))
    b = check_budget(budget)
    n_rel = check_n_release(n_release) if statistical else None
    dlt = check_delta(delta) if statistical else None
    cands, w = _candidates(marginals, columns, weights)
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


def _candidates(
    marginals: Marginals, columns: Sequence[str] | None, weights: Mapping[str, float] | None
) -> tuple[list[str], dict[str, float]]:
    """The candidate columns (checked) and their weights (default 1, finite and >= 0)."""
    cands = list(marginals.columns if columns is None else columns)
    for c in cands:
        if c not in marginals.counts:
            raise ColumnNotFoundError(str(c), marginals.columns)
    w: dict[str, float] = {c: 1.0 for c in cands}
    for c, v in (weights or {}).items():
        if c not in w:
            raise ColumnNotFoundError(str(c), cands)
        if not np.isfinite(v) or v < 0:
            raise ParameterError(f"weight of column {c!r} is {v!r}; weights are finite and >= 0.")
        w[c] = float(v)
    return cands, w


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


MAX_LATTICE_NODES = 2_000_000
"""The lattice search refuses more nodes than this (give fewer levels or fewer columns)."""


def _plan_lattice(
    marginals: Marginals,
    *,
    k: int,
    budget: float,
    weights: Mapping[str, float] | None,
    method: str,
    columns: Sequence[str] | None,
    hierarchies: Mapping[str, Any],
    data: Any,
    suppression: float | None,
    loss: str,
    withhold: bool,
    progress: Callable[[int], None] | None,
    statistical: tuple[int, float] | None = None,
) -> ReleasePlan:
    """The lattice planner (see :func:`plan_release`, Notes). ``statistical=(n_release, delta)``:
    each node's bound is the statistical one at delta / (number of nodes), a union bound over
    every node the search could choose."""
    cands, w = _candidates(marginals, columns, weights)
    for c in hierarchies:
        if c not in cands:
            raise ColumnNotFoundError(str(c), cands)
    if suppression is not None:
        if data is None:
            raise ParameterError(
                "suppression needs the table (local suppression works on the joint records): pass data=..."
            )
        if isinstance(suppression, bool) or not isinstance(suppression, (int, float)) or not 0 <= suppression <= 1:
            raise ParameterError(f"suppression={suppression!r} must be a share of records between 0 and 1, e.g. 0.05.")
    n = marginals.n
    n_users = statistical[0] if statistical is not None else n
    if n_users < k:
        who = "released users" if statistical is not None else "users"
        raise InfeasibleError(f"k={k} is larger than the {n_users:,} {who}: nobody can be in a group of k. Lower k.")
    cols = [column_levels(marginals, c, as_hierarchy(hierarchies[c], c) if c in hierarchies else None) for c in cands]
    if not withhold:
        cols = [_without_withholding(c) for c in cols]
    n_nodes = int(np.prod([c.top + 1 for c in cols], dtype=np.float64))
    if n_nodes > MAX_LATTICE_NODES:
        raise ParameterError(
            f"the recoding lattice has {n_nodes:,} nodes (more than {MAX_LATTICE_NODES:,}); plan fewer columns or "
            "give hierarchies with fewer levels."
        )
    losses = [column_loss(marginals, c, loss) for c in cols]
    recoded_cache: dict[tuple[str, int], dict[Any, int]] = {}

    known_blocks = marginals.select(cands).blocks
    by_name = {c.name: c for c in cols}
    block_cache: dict[tuple[tuple[str, ...], tuple[int, ...]], BlockCounts] = {}

    def node_marginals(node: tuple[int, ...]) -> Marginals:
        counts = {}
        for col, lvl in zip(cols, node, strict=True):
            if (col.name, lvl) not in recoded_cache:
                recoded_cache[(col.name, lvl)] = recoded_counts(marginals, col, lvl)
            counts[col.name] = recoded_cache[(col.name, lvl)]
        singles = Marginals.from_counts(counts)
        if not known_blocks:
            return singles
        # the pair tables are recoded too, so the block bound applies; a block's table depends on
        # its own columns' levels only, so it is recoded once per combination of those levels
        level = dict(zip(by_name, node, strict=True))
        blocks = {}
        for key, b in known_blocks.items():
            at = (key, tuple(level[c] for c in b.columns))
            if at not in block_cache:
                maps = [by_name[c].labels[level[c]] if level[c] else {} for c in b.columns]
                block_cache[at] = make_block(b.columns, recode_block(b, maps), n=n, singles=counts, check=False)
            blocks[key] = block_cache[at]
        return replace(singles, blocks=blocks)

    def node_bound(node: tuple[int, ...], cap: float | None = budget) -> float:
        m = node_marginals(node)
        keep = [c for c in m.columns if m.counts[c].size > 1]  # a one-value column splits no group
        if statistical is not None:  # every node is a candidate release: delta / n_nodes each
            n_release, delta = statistical
            return _statistical_bound(
                m.select(keep), k=k, n_release=n_release, method=method, delta=delta, n_sets=n_nodes
            )
        return float(_bound(m.select(keep), np.asarray(k - 1), method, cap)) if keep else float(n < k)

    measure: DataExposure | LazyExposure | None = None
    if data is not None and _lazy_data(data) is not None:
        if suppression is not None:
            raise ParameterError(
                "suppression= with a lazy or distributed table counts cells per record, which needs the rows in "
                "memory; plan the recoding with data= alone (exact exposure per node, counted where the rows "
                "live), then apply local suppression to the release (LocalSuppressor)."
            )
        measure = _lazy_measure(data, marginals, cands, label_codes(cols, marginals), k)
    elif data is not None:
        measure = DataExposure(_data_codes(data, marginals, cands), label_codes(cols, marginals), k)
    evaluate: Callable[[tuple[int, ...]], float]
    if measure is not None:
        evaluate = measure
        limit = max(budget, suppression or 0.0)
    else:
        evaluate = node_bound
        limit = budget
    keep_n = CERTIFIED_NODES if suppression else 1
    try:
        result = search_lattice(cols, losses, [w[c] for c in cands], evaluate, limit, keep=keep_n, progress=progress)
    except InfeasibleError:
        what = "exposure" if measure is not None else "bound"
        raise InfeasibleError(
            f"no recoding of {', '.join(cands)} has {what} <= {limit:g} at k={k}"
            + (" without withholding a column" if not withhold else "")
            + "; allow withholding, give coarser hierarchies, raise the budget"
            + (" or the suppression share." if measure is not None else ", or plan with data= and suppression=.")
        ) from None
    chosen = result.feasible[0]
    suppressed: dict[str, int] = {}
    released_exposure: float | None = result.exposure if measure is not None else None
    supp_bound = 0
    loss_bound: float | None = None
    if measure is not None and suppression:
        # every candidate's suppression cost certified from below (the floor), then the decoys run
        # only where that bound leaves room to beat the best total found so far (cheapest bound first)
        assert isinstance(measure, DataExposure)  # lazy data plans without suppression
        scored = []
        for node_loss, node, node_exposure in result.feasible:
            floor = 0 if node_exposure <= budget else _suppression_floor(measure, node, k)
            scored.append((node_loss + floor / (n * len(cands)), floor, node_loss, node, node_exposure))
        scored.sort(key=lambda r: r[0])
        loss_bound = scored[0][0]
        best_total = np.inf
        for lower, floor, node_loss, node, node_exposure in scored:
            if lower >= best_total:
                break  # no later node can do better: its certified total is already higher
            if node_exposure <= budget:
                total, cells = node_loss, {}
            else:
                cells = _suppression_cells(measure, node, cands, k)
                total = node_loss + sum(cells.values()) / (n * len(cands))
            if total < best_total:
                best_total, chosen, suppressed, supp_bound = total, (node_loss, node, node_exposure), cells, floor
        if suppressed:
            released_exposure = 0.0  # every row identical to >= k - 1 others, suppressed cells included
    levels = {c.name: lvl for c, lvl in zip(cols, chosen[1], strict=True)}
    # a column recoded to one label (its top, or withheld without a hierarchy) is not released
    released = [c.name for c in cols if len(set(c.labels[levels[c.name]].values())) > 1 or levels[c.name] == 0]
    recodings: dict[str, dict[str, Any]] = {}
    for col in cols:
        lvl = levels[col.name]
        if col.name in released and lvl > 0:
            recodings[col.name] = {
                "mapping": {("null" if v is None else str(v)): lab for v, lab in col.labels[lvl].items()}
            }
    bound = node_bound(chosen[1], None) if measure is None else float(released_exposure or 0.0)
    excluded = {
        c: "withheld (recoded to one value): the least-loss acceptable node of the recoding lattice"
        for c in cands
        if c not in released
    }
    n_supp = int(sum(suppressed.values()))
    total_loss = chosen[0] + (n_supp / (n * len(cands)) if cands else 0.0)
    return ReleasePlan(
        columns=tuple(c for c in marginals.columns if c in released),
        k=k,
        budget=budget,
        bound=bound,
        method=method if measure is None else "exact",
        excluded=excluded,
        weight=float(sum(w[c] for c in released)),
        n=n,
        search="lattice",
        setting="statistical" if statistical is not None else "fixed",
        n_release=statistical[0] if statistical is not None else None,
        delta=statistical[1] if statistical is not None else None,
        levels=levels,
        recodings=recodings,
        loss=float(total_loss),
        loss_measure=loss,
        suppressed=suppressed,
        n_suppressed=n_supp,
        exposure=released_exposure,
        n_nodes=result.n_nodes,
        n_evaluated=result.n_evaluated,
        suppression_bound=supp_bound,
        loss_bound=loss_bound,
        n_certified=len(result.feasible) if loss_bound is not None else 0,
    )


def _without_withholding(col: Any) -> Any:
    """The column's levels without those that give everyone one label (kept: at least level 0)."""
    keep = [lv for i, lv in enumerate(col.labels) if i == 0 or len(set(lv.values())) > 1 or len(lv) <= 1]
    return replace(col, labels=tuple(keep), hierarchy=col.hierarchy if col.hierarchy is not None else False)


def _lazy_data(data: Any) -> Any:
    return lazy_frame(data)


def _lazy_measure(
    data: Any, marginals: Marginals, columns: Sequence[str], maps: Sequence[Sequence[NDArray[np.int64]]], k: int
) -> LazyExposure:
    """The exact per-node exposure of a lazy table, checked against the marginals (its number of
    rows and each column's values, from one aggregate row and one value count per column)."""
    frame = _lazy_data(data)
    names = check_columns(frame, list(columns))

    n = int(aggregate(frame, [nw.len().alias("n")], what="the number of records")["n"])
    if n != marginals.n:
        raise ParameterError(
            f"data has {n:,} records but the marginals count {marginals.n:,}; plan with the marginals "
            "of this very table (Marginals.from_data(data, columns))."
        )
    schema = frame.collect_schema()
    for name in names:
        known = {v for v in marginals.values[name] if v is not None}
        stray = [v for v in value_counts(frame, name, schema[name])[0] if v not in known]
        if stray:
            raise ParameterError(
                f"column {name!r}: value {stray[0]!r} of the data is not in the marginals; count the marginals "
                "of this very table."
            )
    return LazyExposure(frame, names, [list(marginals.values[c]) for c in names], maps, k, n)


def _data_codes(data: Any, marginals: Marginals, columns: Sequence[str]) -> NDArray[np.int64]:
    """Each record's value of each column as its index in the marginals' values (checked to match)."""
    frame, names = frame_columns(data, list(columns))
    if len(frame) != marginals.n:
        raise ParameterError(
            f"data has {len(frame):,} records but the marginals count {marginals.n:,}; plan with the marginals "
            "of this very table (Marginals.from_data(data, columns))."
        )
    out = np.empty((len(frame), len(names)), dtype=np.int64)
    for j, name in enumerate(names):
        index = {v: i for i, v in enumerate(marginals.values[name])}
        try:
            out[:, j] = [index[v] for v in frame[name].to_list()]
        except KeyError as err:
            raise ParameterError(
                f"column {name!r}: value {err.args[0]!r} of the data is not in the marginals; count the marginals "
                "of this very table."
            ) from None
    return out


PLAN_DRAW_SEED = 0

CERTIFIED_NODES = 8
"""With suppression, this many acceptable nodes (least recoding loss first) get a certified
suppression cost; the decoys run only on those whose certified total can still win."""


def _suppression_floor(measure: DataExposure, node: tuple[int, ...], k: int) -> int:
    """The certificate's floor on the node's recoded table: no release of it meeting identical-row k
    suppresses fewer cells."""
    rec = measure.recoded(node)
    varied = [j for j in range(rec.shape[1]) if node[j] == 0 or rec[:, j].max() > 0]
    origins, _, counts = distinct_rows(np.ascontiguousarray(rec[:, varied]).astype(np.int32))
    return int(row_floor(origins, counts, k) @ counts)
"""Seed of the decoy draw the planner uses to count a node's cells (an estimate for choosing the
node, not the release: :meth:`ReleasePlan.apply` draws its decoys from OS entropy)."""


def _suppression_cells(measure: DataExposure, node: tuple[int, ...], columns: Sequence[str], k: int) -> dict[str, int]:
    """Cells per column that local suppression with decoys to k removes from the node's recoded table,
    so that every row is identical to at least k - 1 others (the release's headline reading)."""
    rec = measure.recoded(node)
    varied = [j for j in range(rec.shape[1]) if node[j] == 0 or rec[:, j].max() > 0]  # the released columns
    codes = np.ascontiguousarray(rec[:, varied]).astype(np.int32)
    supports = (codes.max(axis=0, initial=-1) + 1).astype(np.float64)
    weight = 1.0 + 1e-3 * (supports.max(initial=0.0) - supports) / (np.ptp(supports) + 1.0 if supports.size else 1.0)
    lost = decoy_suppress(codes, k, weight, np.random.default_rng(PLAN_DRAW_SEED)).suppressed.sum(axis=0)
    return {columns[j]: int(x) for j, x in zip(varied, lost, strict=True) if x}
