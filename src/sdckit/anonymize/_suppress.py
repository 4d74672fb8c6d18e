"""Local suppression to k-anonymity: by default with decoys, so that every released row is identical
(suppressed cells included) to at least k - 1 others; by name, sdcMicro's algorithm (a missing cell
matching any value)."""

from __future__ import annotations

import hashlib
import math
from collections.abc import Sequence
from typing import Any, Self

import narwhals as nw
import numpy as np
from numpy.typing import NDArray

from sdckit._checks import check_group_size
from sdckit._estimator import RandomState, as_generator
from sdckit._io import DataSource, check_columns
from sdckit.anonymize._base import Anonymizer, with_nulls
from sdckit.anonymize._certificate import (
    Certificate,
    certify,
    lagrangian_release,
    optimal_release,
    wildcard_floor,
)
from sdckit.anonymize._decoys import (
    decoy_suppress,
    distinct_rows,
    exact_group_sizes,
    suppressed_value_posterior,
)
from sdckit.anonymize._entities import entity_counts, entity_suppress
from sdckit.anonymize._suppress_kernel import greedy_suppress, restore_cells
from sdckit.anonymize._suppress_lazy import (
    LazyResult,
    apply_plan,
    group_table,
    is_lazy,
    suppress_lazy,
    table_codes,
    table_fingerprint,
)
from sdckit.errors import ParameterError
from sdckit.risk._counts._wildcard import column_codes, wildcard_group_sizes, wildcard_sizes

__all__ = ["SUPPRESSION_METHODS", "LocalSuppressor", "local_suppression", "redaction_allowance", "wildcard_group_sizes"]

SUPPRESSION_METHODS = ("decoys", "optimal", "sdcmicro")
"""``decoys`` (default): every released row identical to >= k - 1 others; ``optimal``: the same
guarantee with the fewest cells (a mixed-integer program, within a time limit); ``sdcmicro``:
sdcMicro's ``localSuppression`` (every record's wildcard group >= k, a missing cell matching any value)."""


def redaction_allowance(
    n_candidates: int, probability: float, n: int, *, k: int, delta: float
) -> tuple[float, int]:
    """Exposure allowance of random redaction: ``(min(1, k D_max / n), D_max)``.

    [derived, as the protocol's decoys] D, the number of redacted cells, is a sum of
    ``n_candidates`` independent Bernoulli(``probability``) coins with mean mu. Bernstein's
    inequality gives D <= D_max = ceil(mu + a), a = L/3 + sqrt(L^2/9 + 2 mu L), L = ln(1/delta),
    with probability >= 1 - delta. A redacted cell moves one record out of its group when missing
    is read as a value; a group of >= k that falls below k keeps at most k - 1 records, so the
    share of records in groups smaller than k grows by at most k D / n.
    """
    mu = n_candidates * probability
    if mu <= 0:
        return 0.0, 0
    log_term = math.log(1.0 / delta)
    a = log_term / 3 + math.sqrt(log_term**2 / 9 + 2 * mu * log_term)
    d_max = min(n_candidates, math.ceil(mu + a))
    return min(1.0, k * d_max / n), d_max


def suppress_to_k(codes: NDArray[np.int32], k: int, rank: NDArray[np.int64] | None = None) -> NDArray[np.bool_]:
    """The cells (n, p) to suppress so every wildcard group has >= k records (see :class:`LocalSuppressor`).

    ``codes`` are integer codes, -1 for a missing cell; ``rank[j]`` the preference of key j (higher is
    suppressed first; default: the number of distinct values).
    """
    _n, p = codes.shape
    if rank is None:
        rank = (codes.max(axis=0, initial=-1) + 1).astype(np.int64)
    top = int(codes.max(initial=0))
    dtype = np.int16 if top < np.iinfo(np.int16).max else np.int32
    work = np.ascontiguousarray(codes.T.astype(dtype))
    orig = work.copy()
    sizes = wildcard_sizes(codes)
    unsafe = np.flatnonzero(sizes < k)
    if unsafe.size:
        order = unsafe[np.argsort(sizes[unsafe], kind="stable")].astype(np.int64)
        greedy_suppress(work, sizes, k, order, rank)
        cells = np.flatnonzero(((work < 0) & (orig >= 0)).T.ravel()).astype(np.int64)
        by_importance = np.argsort(rank[cells % p], kind="stable")  # important keys first
        restore_cells(work, orig, sizes, k, cells[by_importance])
    return np.ascontiguousarray(((work < 0) & (orig >= 0)).T)


def _ranks(importance: Any, names: list[str], supports: NDArray[np.int64]) -> NDArray[np.int64]:
    """Suppression preference per key: higher is suppressed first."""
    p = len(names)
    if importance is None:
        return supports.astype(np.int64)  # more categories: suppressed first (as sdcMicro's default)
    if isinstance(importance, str) or not isinstance(importance, Sequence):
        raise ParameterError(
            f"importance={importance!r}: give the key columns from most to least important, e.g. "
            f"{names[::-1]!r}, or one number per key (1 = most important, as sdcMicro)."
        )
    items = list(importance)
    if all(isinstance(v, str) for v in items):
        unknown = [v for v in items if v not in names]
        if unknown:
            raise ParameterError(
                f"importance names {unknown[0]!r}, which is not a key column; keys: {names}."
            )
        if len(set(items)) != len(items):
            raise ParameterError("importance names a column twice; list each key once.")
        listed = {c: i for i, c in enumerate(items)}
        # listed keys in order (most important = lowest rank); unlisted ones are suppressed first
        return np.array(
            [listed.get(c, p + 1) * 1000 + int(supports[j]) for j, c in enumerate(names)], dtype=np.int64
        )
    if len(items) != p or not all(
        isinstance(v, (int, np.integer)) and not isinstance(v, bool) for v in items
    ):
        raise ParameterError(
            f"importance={items!r}: give one whole number per key column ({p}), 1 = most important."
        )
    return np.asarray(items, dtype=np.int64) * 1000 + supports.astype(np.int64)


class LocalSuppressor(Anonymizer):
    """Local suppression: key cells set to missing so that every record is k-anonymous.

    ``method="decoys"`` (default): every released row is identical, cell for cell and a missing
    cell being a value of its own, to at least k - 1 other released rows. For each slice (the rows
    equal on the keys outside a set S) holding rows in groups smaller than k, S is suppressed in all
    those rows, and the group they form is topped up to k with *decoys*: rows of the same slice
    drawn at random (OS entropy by default) from groups larger than k, never taking a group below
    k. The cheapest options (importance-weighted cells per protected row) go first, in rounds; a
    last pass gives cells back to rows of groups larger than k whenever an existing group shows
    more of their true values (:func:`sdckit.anonymize._decoys.decoy_suppress`). With the rows
    released in random order, the rows of a group are exchangeable: whatever the attacker knows of
    the algorithm and of a person, the posterior that a given row is that person is at most 1/k,
    and every person's true quasi-identifiers are consistent with at least k released rows.
    ``hidden_value_share_`` observes how far a group's composition gives its suppressed values away
    (not a bound). The estimator keeps the input's row order (scikit-learn's alignment): shuffle the
    rows before publishing (the pipeline and ``sdckit suppress`` do), or identical rows are not
    exchangeable.

    ``method="optimal"``: the same guarantee with the fewest cells: the mixed-integer program of
    :mod:`sdckit.anonymize._certificate` solved with HiGHS (``scipy.optimize.milp``) within
    ``time_limit`` seconds, cut off at the decoys' cell count; the best release found (the decoys'
    when the program is too large or nothing better is found in time) and its certified gap. Among
    the releases with the fewest cells one is drawn at random (OS entropy by default), and which rows
    of a distinct input row go where too.

    Every method reports ``certificate_``: the cells suppressed, a proven lower bound on the fewest
    cells any release meeting the same guarantee needs, and the gap (see the module above).

    ``method="sdcmicro"``: sdcMicro's ``localSuppression``. A missing cell matches any value: records r and s
    are in each other's group when, for every key j, r_j = s_j or either is missing, and the
    release is k-anonymous when every record's group (:func:`wildcard_group_sizes`) holds >= k
    records. Missing cells already in the data count the same way.

    Greedy, records below k taken from the smallest group up: for each, the one cell whose
    suppression brings its group to k (the least important such key), else the two cells that do,
    else the cell that adds the most records. Groups only grow when a cell is suppressed, so every
    record treated stays >= k. A last pass puts back every suppressed cell (most important keys
    first) whose return keeps all groups >= k.

    With ``random_redaction=p`` (the seed's variant, §8): in each key column that lost cells, every
    other present cell is also set to missing with the published probability p, so a missing cell
    does not single out the holder of a rare value. Wildcard groups only grow, so k-anonymity
    (missing as a wildcard) still holds. Read with missing as a value, the D redacted cells can add
    at most k D / n to the share of records in groups smaller than k: ``redaction_allowance_`` is
    that allowance at D_max, the Bernstein bound on D that holds with probability >= 1 - ``delta``
    (:func:`redaction_allowance`).

    Parameters
    ----------
    k : group size every record must reach (>= 1).
    columns : the key variables (quasi-identifiers); default all columns.
    importance : which keys to keep: column names from most to least important (unlisted keys
        are suppressed first), or one number per key, 1 = most important (sdcMicro's
        ``importance``). Default: keys with more distinct values are suppressed first. With
        decoys a cell of the most important key costs twice one of the least important (ties
        only, 1.001 times, without ``importance``).
    method : ``"decoys"`` (default) or ``"sdcmicro"`` (see above).
    random_redaction : (``sdcmicro`` only) probability p (0..1) of redacting the other cells of a
        column that lost cells; None (default) for none.
    random_state : seed of the decoys and the random redaction: an int >= 0 (tests and
        reproductions only: whoever knows it can tell decoys from suppressions), a numpy Generator,
        or None (default) for fresh OS entropy.
    delta : failure probability of the redaction allowance (0..1).
    entity : (``decoys`` only) the column grouping rows into households or entities (not a key):
        then every group of identical released rows holds rows of at least k distinct entities
        (:func:`sdckit.anonymize._entities.entity_suppress` after the row-level decoys), and
        ``group_sizes_`` counts entities.
    household_columns : keys whose value is one per household (with ``entity``): a cell
        suppressed for one member is suppressed for every member.
    time_limit : seconds for the certificate's linear relaxation and for ``method="optimal"``'s
        program (default 30; 0: the floor is the bound and ``optimal`` keeps the decoys).

    Attributes
    ----------
    columns_ : tuple of str, the key columns.
    suppressed_ : bool array (n, p), the cells suppressed to reach k.
    redacted_ : bool array (n, p), the cells redacted at random (all False without redaction).
    n_suppressed_ : int, cells suppressed (redactions not included; decoys included).
    group_sizes_ : int64 array (n,), group sizes of the release (all >= k): identical rows with
        decoys, wildcard groups with ``sdcmicro``.
    hidden_value_share_ : dict, how far the composition of each released group gives its suppressed
        values away, observed on this release (not a bound;
        :func:`~sdckit.anonymize._decoys.suppressed_value_posterior`): ``rows`` with a suppressed
        cell, ``mean`` (an attacker who knows every original row and the algorithm, reading the keys
        only, guesses the hidden values of such a row right with this probability on average) and
        ``max`` (nothing keeps it below 1). The other released columns can tell more; the pipeline
        measures that (:func:`sdckit.risk._measures._posterior.row_posterior`).
    value_posterior_ : dict, the former name of ``hidden_value_share_`` (the same figures).
    redaction_allowance_ : float, share of records the redaction may add to the exposure with
        missing read as a value (0 without redaction).
    certificate_ : dict, ``{"cells", "lower_bound", "gap", "bound_method"}``: cells suppressed, a
        proven lower bound on the fewest cells for the same guarantee (identical rows for decoys and
        optimal, wildcard groups for sdcmicro), ``(cells - bound) / cells`` and how the bound was proven
        (``"lp"``, ``"mip"``, ``"floor"``, ``"wildcard-floor"``). Not set on lazy frames.
    optimal_ : bool, the release is proven to have the fewest cells (bound == cells).
    changes_ : dict, per key ``{"cells_changed", "values_merged": 0, "cells_suppressed",
        "cells_redacted"}``.
    n_passes_ : int, (lazy frames only) distributed passes over the rows, each a group-by: the
        first counts the groups the decoy rounds run on, the last verifies that no released group
        is smaller than k (2 for a frame that gives the same rows each time it is computed).
    n_rounds_ : int, (lazy frames only) decoy rounds run on the driver's group table.

    On a polars LazyFrame, Dask or Spark frame (decoys only) the rows never reach the driver:
    fit counts the groups where the rows live, runs the decoy rounds on the group table (with the
    same ``random_state``, the very groups of the in-memory release) and transform returns a lazy
    frame of the same kind (:mod:`sdckit.anonymize._suppress_lazy`); the per-row attributes
    (``suppressed_``, ``redacted_``, ``group_sizes_``, ``hidden_value_share_``) are then not set.

    Notes
    -----
    Each step scans the table once (O(n p), vectorised over records), so the cost is O(S n p) for
    S suppressed cells, memory O(n p). On sdcMicro's testdata at k = 3 it suppresses 6 cells for
    the keys urbrur, roof, walls, water, electcon and 177 with relat and sex added (sdcMicro 5.8.1:
    8 and 293).

    References
    ----------
    .. [1] Templ, M., Kowarik, A. and Meindl, B. (2015). Statistical disclosure control for
       micro-data using the R package sdcMicro. J. Stat. Softw. 67(4) (``localSuppression``).
    .. [2] The statistical-anonymity seed, §8 (local suppression with random redaction).

    Examples
    --------
    >>> import polars as pl
    >>> df = pl.DataFrame({"sex": ["f", "f", "m", "m", "m"], "age": [30, 30, 30, 40, 40]})
    >>> ls = LocalSuppressor(k=2, method="sdcmicro").fit(df)
    >>> ls.transform(df)["sex"].to_list(), ls.n_suppressed_
    (['f', 'f', None, 'm', 'm'], 1)
    >>> int(LocalSuppressor(k=2).fit(df).group_sizes_.min())  # with decoys: identical rows, >= 2
    2
    """

    def __init__(
        self,
        *,
        k: int = 3,
        columns: Sequence[str] | None = None,
        importance: Sequence[str] | Sequence[int] | None = None,
        method: str = "decoys",
        random_redaction: float | None = None,
        random_state: RandomState = None,
        delta: float = 0.05,
        entity: str | None = None,
        household_columns: Sequence[str] | None = None,
        time_limit: float = 30.0,
    ) -> None:
        self.k = k
        self.columns = columns
        self.importance = importance
        self.method = method
        self.random_redaction = random_redaction
        self.random_state = random_state
        self.delta = delta
        self.entity = entity
        self.household_columns = household_columns
        self.time_limit = time_limit

    def __sklearn_tags__(self) -> Any:
        tags = super().__sklearn_tags__()
        tags.non_deterministic = (
            self.method in ("decoys", "optimal") or bool(self.random_redaction)
        ) and self.random_state is None
        return tags

    def fit(self, X: DataSource, y: None = None) -> Self:
        """Decide the cells to suppress (and redact) in ``X``."""
        k = check_group_size(self.k)
        if self.method not in SUPPRESSION_METHODS:
            raise ParameterError(
                f"method={self.method!r}: use 'decoys' (every released row identical to >= k - 1 others), "
                "'optimal' (the same with the fewest cells, within time_limit seconds) or "
                "'sdcmicro' (sdcMicro's localSuppression, a missing cell matching any value)."
            )
        if isinstance(self.time_limit, bool) or not isinstance(self.time_limit, (int, float)) or not self.time_limit >= 0:
            raise ParameterError(
                f"time_limit={self.time_limit!r} must be a number of seconds >= 0, e.g. 30 (0: no relaxation, the floor "
                "is the certificate's bound)."
            )
        p_red = self.random_redaction
        if p_red and self.method != "sdcmicro":
            raise ParameterError(
                f"random_redaction={p_red!r} applies to method='sdcmicro'; the default method draws its decoys "
                "at random already. Leave random_redaction out, or set method='sdcmicro'."
            )
        if p_red is not None and (
            isinstance(p_red, bool) or not isinstance(p_red, (int, float)) or not 0 <= p_red <= 1
        ):
            raise ParameterError(
                f"random_redaction={p_red!r} must be a probability between 0 and 1, e.g. 0.05."
            )
        if not isinstance(self.delta, (int, float)) or not 0 < self.delta < 1:
            raise ParameterError(f"delta={self.delta!r} must be strictly between 0 and 1, e.g. 0.05.")
        as_generator(self.random_state)  # a bad random_state fails here, before any data is read
        if is_lazy(X):
            return self._fit_lazy(X, k)
        self._lazy: tuple[Any, LazyResult] | None = None
        frame, names, _ = self._frame_in(X, self.columns, reset=True)
        n = len(frame)
        if n < k:
            raise ParameterError(
                f"k={k} is larger than the {n} records (n_samples = {n}); no release is k-anonymous. Lower k."
            )
        codes = np.empty((len(names), n), dtype=np.int32)
        for j, name in enumerate(names):
            codes[j] = column_codes(frame[name])
        original = codes.copy()
        supports = (codes.max(axis=1) + 1).astype(np.int64) if n else np.zeros(len(names), np.int64)
        rank = _ranks(self.importance, names, supports)
        codes_rows = np.ascontiguousarray(original.T)
        entity_ids = self._entity_codes(frame, names, n)
        self.optimal_ = False
        if self.method in ("decoys", "optimal"):
            weight = _decoy_weight(rank, self.importance is not None)
            rng = as_generator(self.random_state)
            got = decoy_suppress(codes_rows, k, weight, rng)
            suppressed = got.suppressed
            origins, inverse, counts = distinct_rows(codes_rows)
            # the Lagrangian bound (tens of seconds on a large program) for the exact mode only: the
            # default fit stays quick, its bound the relaxation's when small, else the floor
            cert = certify(origins, counts, k, int(suppressed.sum()), time_limit=float(self.time_limit),
                           lagrangian=self.method == "optimal")
            if self.method == "optimal" and cert.lower_bound < cert.cells:
                suppressed, cert = self._optimal(codes_rows, origins, inverse, counts, k, weight, rng, suppressed, cert)
            elif cert.lower_bound == cert.cells:
                self.optimal_ = True
            if entity_ids is not None:
                # k distinct households per group after the row-level release; the row-level bound stays a
                # bound (a release with k households per group has k rows per group), the cells are recounted
                shared = np.isin(np.asarray(names, dtype=object), list(self.household_columns or ()))
                over = entity_suppress(codes_rows, suppressed, entity_ids, k, weight, rng, shared)
                suppressed = over.suppressed
                self.entity_passes_ = over.passes
                self.n_decoy_entities_ = over.decoy_entities
                cells = int(suppressed.sum())
                cert = Certificate(cells, min(cert.lower_bound, cells), cert.method, cert.seconds)
                self.optimal_ = self.optimal_ and cert.lower_bound == cells
        else:
            suppressed = suppress_to_k(codes_rows, k, rank)
            cells = int(suppressed.sum())
            cert = Certificate(cells, min(cells, wildcard_floor(wildcard_sizes(codes_rows), k)), "wildcard-floor")
        self.certificate_ = cert.as_dict()
        redacted = np.zeros_like(suppressed)
        allowance = 0.0
        if p_red:
            rng = as_generator(self.random_state)
            lost = np.asarray(suppressed.any(axis=0), dtype=bool)
            candidates = (~suppressed) & (original.T >= 0) & lost[None, :]
            redacted = candidates & (rng.random(candidates.shape) < p_red)
            allowance, _ = redaction_allowance(
                int(candidates.sum()), float(p_red), n, k=k, delta=float(self.delta)
            )
        final = np.ascontiguousarray(np.where(suppressed | redacted, -1, original.T).astype(np.int32))
        self.group_sizes_ = exact_group_sizes(final) if self.method in ("decoys", "optimal") else wildcard_sizes(final)
        if entity_ids is not None:
            self.group_sizes_ = entity_counts(final, entity_ids)
        self.hidden_value_share_ = suppressed_value_posterior(codes_rows, final)
        self.value_posterior_ = self.hidden_value_share_  # the former name, kept working
        self.columns_ = tuple(names)
        self.suppressed_ = suppressed
        self.redacted_ = redacted
        self.n_suppressed_ = int(suppressed.sum())
        self.redaction_allowance_ = float(allowance)
        self.changes_ = {
            name: {
                "cells_changed": int(suppressed[:, j].sum() + redacted[:, j].sum()),
                "values_merged": 0,
                "cells_suppressed": int(suppressed[:, j].sum()),
                "cells_redacted": int(redacted[:, j].sum()),
            }
            for j, name in enumerate(names)
        }
        self.n_rows_ = n
        self.fingerprint_ = _fingerprint(frame, names)
        return self

    def _optimal(
        self, codes: NDArray[np.int32], origins: NDArray[np.int32], inverse: NDArray[np.int64],
        counts: NDArray[np.int64], k: int, weight: NDArray[np.float64], rng: np.random.Generator,
        decoys: NDArray[np.bool_], cert: Certificate,
    ) -> tuple[NDArray[np.bool_], Certificate]:
        """The exact program, cut off at the decoys' cells; its release when it is at least as good,
        the decoys' otherwise (the best found when the time runs out). The bound is the best proven
        by the relaxation and the program's search."""
        got = optimal_release(
            origins, counts, k, upper=cert.cells, rng=rng, time_limit=float(self.time_limit), tiebreak=weight - 1.0
        )
        if got is None:
            return self._lagrangian(codes, origins, inverse, counts, k, weight, rng, decoys, cert)
        bound = max(cert.lower_bound, got.certificate.lower_bound)
        if got.certificate.cells > cert.cells:
            self.optimal_ = bound >= cert.cells
            return decoys, Certificate(cert.cells, min(bound, cert.cells), "mip")
        self.optimal_ = got.optimal or bound >= got.certificate.cells
        released = _assign_rows(codes, inverse, got.cand.origin, got.cand.patterns[got.cand.pattern], got.x, rng)
        suppressed = (released < 0) & (codes >= 0)
        cells = int(suppressed.sum())
        return suppressed, Certificate(cells, min(bound, cells), "mip", got.certificate.seconds)

    def _lagrangian(
        self, codes: NDArray[np.int32], origins: NDArray[np.int32], inverse: NDArray[np.int64],
        counts: NDArray[np.int64], k: int, weight: NDArray[np.float64], rng: np.random.Generator,
        decoys: NDArray[np.bool_], cert: Certificate,
    ) -> tuple[NDArray[np.bool_], Certificate]:
        """The program too large to solve: the release the certificate's Lagrangian multipliers guide
        (:func:`lagrangian_release`) when it has fewer cells than the decoys' and every released row
        is in an identical group of >= k (recounted here), the decoys' otherwise."""
        if cert.lagrange is None:
            return decoys, cert
        got = lagrangian_release(origins, counts, k, *cert.lagrange, weight, rng)
        if got is None or not np.array_equal(np.bincount(got[0], weights=got[2], minlength=counts.size), counts):
            return decoys, cert  # (every input row released once: checked, not assumed)
        released = _assign_rows(codes, inverse, got[0], got[1], got[2], rng)
        suppressed = (released < 0) & (codes >= 0)
        cells = int(suppressed.sum())
        if cells >= cert.cells or int(exact_group_sizes(released).min(initial=k)) < k:
            return decoys, cert
        return suppressed, Certificate(cells, min(cert.lower_bound, cells), cert.method, cert.seconds)

    def _fit_lazy(self, X: Any, k: int) -> Self:
        """Decoys on a polars LazyFrame, Dask or Spark frame, in distributed passes
        (:mod:`sdckit.anonymize._suppress_lazy`): only group tables reach the driver."""
        if self.method != "decoys":
            raise ParameterError(
                f"method={self.method!r} compares every record with every other one and needs all rows in memory; "
                "on a lazy or distributed frame use method='decoys' (the default: it works on the group counts), "
                "or collect the frame first."
            )
        frame = nw.from_native(X)
        names = check_columns(frame, self.columns)
        table = group_table(frame if isinstance(frame, nw.LazyFrame) else frame.lazy(), names)
        supports = np.asarray(
            [int(np.max(column_codes(table[c]), initial=-1)) + 1 for c in names], dtype=np.int64
        )
        weight = _decoy_weight(_ranks(self.importance, names, supports), self.importance is not None)
        got = suppress_lazy(X, names, k, weight, as_generator(self.random_state), table)
        cells = sum((p.cells for p in got.plans), np.zeros(len(names), dtype=np.int64))
        self.columns_ = tuple(names)
        self.n_features_in_ = len(frame.columns)
        self.feature_names_in_ = np.asarray(frame.columns, dtype=object)
        self.n_passes_ = got.n_passes
        self.n_rounds_ = sum(p.rounds for p in got.plans)
        self.n_suppressed_ = int(cells.sum())
        self.n_decoy_cells_ = sum(p.decoy_cells for p in got.plans)
        # the certificate on the input's group table ("__sdc_n": its counts; the rows never reach the driver)
        origins, inverse, _ = distinct_rows(table_codes(table, names))
        counts = np.bincount(inverse, weights=np.asarray(table["__sdc_n"].to_numpy(), dtype=np.float64))
        cert = certify(origins, counts.astype(np.int64), k, self.n_suppressed_, time_limit=float(self.time_limit))
        self.certificate_ = cert.as_dict()
        self.optimal_ = cert.lower_bound >= cert.cells
        self.redaction_allowance_ = 0.0
        self.changes_ = {
            name: {"cells_changed": int(cells[j]), "values_merged": 0, "cells_suppressed": int(cells[j]), "cells_redacted": 0}
            for j, name in enumerate(names)
        }
        self.n_rows_ = got.n_rows
        self.fingerprint_ = got.fingerprint
        self._lazy = (X, got)
        return self

    def _entity_codes(self, frame: Any, names: list[str], n: int) -> NDArray[np.int64] | None:
        """The entity column's codes 0..m-1 (None without ``entity``), checked."""
        if self.entity is None:
            if self.household_columns:
                raise ParameterError("household_columns need entity: name the column that groups rows into households.")
            return None
        if self.method not in ("decoys", "optimal"):
            raise ParameterError(
                f"entity={self.entity!r} works with method='decoys' or 'optimal' (every released group holds k "
                "distinct entities); leave method out."
            )
        if self.entity in names:
            raise ParameterError(f"entity={self.entity!r} is also a key column; the household id is never a key.")
        unknown = [c for c in (self.household_columns or ()) if c not in names]
        if unknown:
            raise ParameterError(
                f"household_columns names {unknown[0]!r}, which is not a key column; keys: {names}. A household-level "
                "column that is not a key is never suppressed."
            )
        check_columns(frame, [self.entity])  # a missing column is named, with its near matches
        ids = column_codes(frame[self.entity])
        if (ids < 0).any():
            raise ParameterError(f"entity column {self.entity!r} has missing values; every row needs its entity id.")
        return ids.astype(np.int64)

    def transform(self, X: DataSource) -> Any:
        """Set the decided cells of ``X`` (the fitted table) to missing; other columns untouched.

        On a lazy or distributed frame the result is a frame of the same kind, still lazy.
        """
        lazy = getattr(self, "_lazy", None)
        if lazy is not None:
            return self._transform_lazy(X, *lazy)
        self.check_is_fitted("suppressed_")
        frame, names, was_array = self._frame_in(X, list(self.columns_), reset=False)
        if len(frame) != self.n_rows_ or _fingerprint(frame, names) != self.fingerprint_:
            raise ParameterError(
                "LocalSuppressor decides cells for the very table it was fitted on, and this is another "
                "table; call fit_transform(...) on it instead."
            )
        masks = {name: self.suppressed_[:, j] | self.redacted_[:, j] for j, name in enumerate(names)}
        return self._write_output(with_nulls(frame, masks), was_array)


    def _transform_lazy(self, X: Any, fitted: Any, got: LazyResult) -> Any:
        if X is fitted:
            return got.release
        if not is_lazy(X):
            raise ParameterError(
                "LocalSuppressor was fitted on a lazy frame and decides cells for that very frame; "
                "call fit_transform(...) on this table instead."
            )
        frame = nw.from_native(X)
        table = group_table(frame if isinstance(frame, nw.LazyFrame) else frame.lazy(), list(self.columns_))
        if table_fingerprint(table, list(self.columns_)) != self.fingerprint_:
            raise ParameterError(
                "LocalSuppressor decides cells for the very table it was fitted on, and this is another "
                "table; call fit_transform(...) on it instead."
            )
        out = X
        for plan in got.plans:
            out = apply_plan(out, plan)
        return out


def _assign_rows(
    codes: NDArray[np.int32], inverse: NDArray[np.int64], entry_origin: NDArray[np.int64],
    entry_codes: NDArray[np.int32], entry_m: NDArray[np.int64], rng: np.random.Generator,
) -> NDArray[np.int32]:
    """The released codes: the rows of each distinct input row, in random order, sent to its
    patterns (entry e: ``entry_m[e]`` rows of ``entry_origin[e]`` released as ``entry_codes[e]``)."""
    keep = entry_m > 0
    entry_origin, entry_codes, entry_m = entry_origin[keep], entry_codes[keep], entry_m[keep]
    by_origin = np.argsort(entry_origin, kind="stable")
    perm = rng.permutation(inverse.size)
    order = perm[np.argsort(inverse[perm], kind="stable")]
    entry_of_row = np.repeat(by_origin, entry_m[by_origin])
    released = np.empty_like(codes)
    released[order] = entry_codes[entry_of_row]
    return released


def _decoy_weight(rank: NDArray[np.int64], importance_given: bool) -> NDArray[np.float64]:
    """Cost of one suppressed cell per key: 1 for the least important key, up to 2 for the most
    important (1.001 without ``importance``: then only ties are broken)."""
    spread = float(rank.max() - rank.min()) + 1.0 if rank.size else 1.0
    scale = 1.0 if importance_given else 1e-3
    return 1.0 + scale * (rank.max(initial=0) - rank).astype(np.float64) / spread


def _fingerprint(frame: Any, names: Sequence[str]) -> str:
    """SHA-256 of the key columns' values (as text, with the missing cells' mask), to recognise the
    fitted table: one join per column, not a Python call per cell."""
    digest = hashlib.sha256()
    for name in names:
        series = frame[name]
        missing = np.array(series.is_null().to_numpy(), dtype=bool)
        if series.dtype.is_float():
            missing |= np.asarray(series.is_nan().fill_null(True).to_numpy(), dtype=bool)
        text = series.cast(nw.String).fill_null("").to_list()
        digest.update(np.packbits(missing).tobytes())
        digest.update("\x1f".join(text).encode() + b"\x1e")
    return digest.hexdigest()


def local_suppression(
    data: DataSource,
    columns: Sequence[str] | None = None,
    *,
    k: int = 3,
    importance: Sequence[str] | Sequence[int] | None = None,
    method: str = "decoys",
    random_redaction: float | None = None,
    random_state: int | None = None,
) -> Any:
    """Suppress key cells so that every record is k-anonymous (see :class:`LocalSuppressor`).

    With decoys (default) every released row is identical to at least k - 1 others; with
    ``method="sdcmicro"`` a missing cell matches any value. Returns the same frame type with those
    cells missing.

    Examples
    --------
    >>> import polars as pl
    >>> df = pl.DataFrame({"sex": ["f", "f", "m"], "zip": ["1", "1", "1"]})
    >>> local_suppression(df, ["sex", "zip"], k=3, method="sdcmicro")["sex"].to_list()
    ['f', 'f', None]
    >>> local_suppression(df, ["sex", "zip"], k=3)["sex"].to_list()
    [None, None, None]
    """
    return LocalSuppressor(
        k=k,
        columns=columns,
        importance=importance,
        method=method,
        random_redaction=random_redaction,
        random_state=random_state,
    ).fit_transform(data)
