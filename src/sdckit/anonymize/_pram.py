"""PRAM: post-randomisation of categorical columns by a Markov transition matrix."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal, Self

import narwhals as nw
import numpy as np
from numpy.typing import NDArray

from sdckit._estimator import RandomState, as_generator
from sdckit._io import DataSource
from sdckit._scale import collect_if_lazy, is_distributed, map_partitions, restore_kind
from sdckit._scale._lazy import _lazy_kind
from sdckit.anonymize._base import (
    Anonymizer,
    change_counts,
    from_codes,
    native_out,
    text_values,
)
from sdckit.anonymize._lazy import partition_tallies, value_counts
from sdckit.errors import InputError, ParameterError


def invariant_matrix(counts: NDArray[np.int64], pd: float) -> NDArray[np.float64]:
    """Invariant transition matrix P = (1 - theta) I + theta 1 pi^T for the value shares pi.

    pi P = (1 - theta) pi + theta pi (sum_i pi_i) = pi, so the expected counts after PRAM equal the
    counts before. theta = min(1, (1 - pd) / (1 - min_i pi_i)) is the largest perturbation with
    every diagonal entry p_ii = 1 - theta (1 - pi_i) >= pd.
    """
    pi = counts / counts.sum()
    m = pi.size
    if m <= 1:
        return np.ones((m, m))
    theta = min(1.0, (1.0 - pd) / (1.0 - float(pi.min())))
    return (1.0 - theta) * np.eye(m) + theta * np.ones((m, 1)) * pi[None, :]


def sdcmicro_matrix(counts: NDArray[np.int64], keep: NDArray[np.float64], alpha: float) -> NDArray[np.float64]:
    """sdcMicro's ``pram`` matrix (5.8.1, R/pram.R ``calcTransitionMatrix``) for drawn diagonals ``keep``.

    With L values of shares p (the column's counts over its non-missing cells) and the draws
    keep_i ~ U(pd, 1): P has p_ii = keep_i and p_ij = (1 - keep_i) / (L - 1) off the diagonal;
    Q[k, j] = P[j, k] p_j / sum_l p_l P[l, k] is the backward matrix (Bayes: P(original j | released k));
    R = P Q is invariant (p R = p), and the matrix applied is Rs = alpha R + (1 - alpha) I.
    (sdcMicro divides the counts by the sum of the factor's codes, not by the count; Q is unchanged
    by any scale of p, so the matrix is the same.) Its diagonal is not bounded below by pd: a rare
    value is kept with probability about alpha keep_i^2 + ... + (1 - alpha), as low as 0.17 at
    pd = 0.6, alpha = 1 in the reference (tests/anonymize/test_pram.py).
    """
    p = counts / counts.sum()
    m = p.size
    if m <= 1:
        return np.ones((m, m))
    P = np.repeat(((1.0 - keep) / (m - 1))[:, None], m, axis=1)
    np.fill_diagonal(P, keep)
    s = p @ P  # s_k = sum_j p_j P[j, k]
    Q = (P * p[:, None]).T / s[:, None]  # Q[k, j] = P[j, k] p_j / s_k
    return alpha * (P @ Q) + (1.0 - alpha) * np.eye(m)


class PRAM(Anonymizer):
    """Post-randomisation: each cell's value is redrawn from row ``P[value]`` of a transition matrix.

    Invariant PRAM (default, ``method="invariant"``): P = (1 - theta) I + theta 1 pi^T, pi the
    column's value shares in the fitted data, so that pi P = pi and the expected value counts after
    PRAM equal the counts before; theta is the largest with every diagonal entry >= ``pd``
    (:func:`invariant_matrix`). Here ``pd`` is a guarantee: **every cell keeps its value with
    probability at least pd**, rare values included.

    ``method="sdcmicro"``: sdcMicro's construction (``pram(x, pd=, alpha=)``, :func:`sdcmicro_matrix`),
    also invariant: each value's diagonal is drawn keep_i ~ U(pd, 1), the matrix P with that
    diagonal and equal off-diagonal entries is turned into R = P Q (Q its backward matrix) and
    alpha R + (1 - alpha) I is applied. There ``pd`` is the lower end of a draw *before* the
    invariant transform, not a bound on what is kept: a rare value can be kept with probability far
    below pd (0.17 at pd = 0.6, alpha = 1 in sdcMicro 5.8.1's own matrix for a value of 2 % of the
    cells), so the share of cells changed differs from the default at the same pd. The matrix is
    random (drawn at ``fit`` from ``random_state``).

    Or a user matrix per column,
    ``{column: {from_value: {to_value: probability}}}`` (rows sum to 1; values matched by text).
    Missing cells stay missing. The matrices are published with the release so analysts can
    correct their estimates (E[counts'] = counts P). A value not seen in ``fit`` has no row and
    ``transform`` refuses it (it would otherwise go out unperturbed).

    On a Dask or Spark frame the matrices come from distributed value counts and each partition
    draws from ``SeedSequence(random_state, spawn_key=(partition, batch))`` (fresh OS entropy by
    default); the result is a lazy frame of the same kind (docs/scale.md). A polars LazyFrame or
    DuckDB relation is collected, with a warning, and given back as its kind.

    The output keeps the input's row order (scikit-learn's row alignment); shuffle the rows before
    publishing (``sdckit run`` and every CLI command that writes rows do), or the unchanged columns
    link each released row to its input row by position.

    Parameters
    ----------
    columns : the categorical columns (default: all, or those of ``matrix``).
    pd : ``method="invariant"``: the smallest probability that a cell keeps its value (0..1);
        ``method="sdcmicro"``: the lower end of sdcMicro's U(pd, 1) diagonal draws (no bound on
        what is kept).
    method : ``"invariant"`` (default) or ``"sdcmicro"`` (see above).
    alpha : sdcMicro's ``alpha`` (0..1), the weight of the invariant matrix R against the identity;
        ``method="sdcmicro"`` only.
    matrix : user transition matrices (see above), instead of invariant ones.
    random_state : seed of the draws: an int >= 0 gives the same release on every call (tests and
        reproductions only: whoever knows it can undo the draws); a numpy Generator continues its
        stream from call to call; None (default) fresh OS entropy.

    Attributes
    ----------
    columns_ : tuple of str.
    transition_ : dict, per column ``(values, P)``: the values (list) and the (m, m) matrix.
    changes_ : dict, per column ``{"cells_changed", "values_merged"}`` on the fitted data.

    References
    ----------
    .. [1] Gouweleeuw, J. M., Kooiman, P., Willenborg, L. C. R. J. and de Wolf, P.-P. (1998).
       Post randomisation for statistical disclosure control: theory and implementation.
       J. Official Statistics 14(4), 463-478.

    Examples
    --------
    >>> import polars as pl
    >>> df = pl.DataFrame({"region": ["a"] * 6 + ["b"] * 4})
    >>> pram = PRAM(pd=0.8, random_state=1).fit(df)
    >>> pram.transition_["region"][1].round(3).tolist()
    [[0.867, 0.133], [0.2, 0.8]]
    """

    def __init__(
        self,
        *,
        columns: Sequence[str] | None = None,
        pd: float = 0.8,
        matrix: Mapping[str, Mapping[Any, Mapping[Any, float]]] | None = None,
        random_state: RandomState = None,
        method: Literal["invariant", "sdcmicro"] = "invariant",
        alpha: float = 0.5,
    ) -> None:
        self.columns = columns
        self.pd = pd
        self.matrix = matrix
        self.method = method
        self.alpha = alpha
        self.random_state = random_state

    def __sklearn_tags__(self) -> Any:
        tags = super().__sklearn_tags__()
        tags.non_deterministic = self.random_state is None  # fresh OS entropy: each draw differs
        return tags

    def fit_transform(self, X: DataSource, y: None = None) -> Any:
        """Fit, then release the very draw whose changes ``changes_`` records (also without a seed)."""
        if is_distributed(X):
            self._fit(X)
            entropy = self._entropy()
            self._record_distributed(X, entropy)
            return self._release_distributed(X, entropy)
        if _lazy_kind(X) is not None:
            return restore_kind(self.fit_transform(collect_if_lazy(X, type(self).__name__)), X)
        frame, was_array = self._fit(X)
        drawn = self._draw(frame)
        self._record(frame, drawn)
        return self._write_output(self._release(frame, drawn), was_array)

    def fit(self, X: DataSource, y: None = None) -> Self:
        """Build each column's transition matrix and record the changes a draw makes on ``X``.

        With ``random_state=None`` each draw uses fresh OS entropy, so a later ``transform`` gives
        another draw than the one ``changes_`` describes; :meth:`fit_transform` gives that one.
        """
        if is_distributed(X):
            self._fit(X)
            self._record_distributed(X, self._entropy())
            return self
        if _lazy_kind(X) is not None:
            return self.fit(collect_if_lazy(X, type(self).__name__))
        frame, _ = self._fit(X)
        assert frame is not None
        self._record(frame, self._draw(frame))
        return self

    def _record(self, frame: nw.DataFrame[Any], drawn: dict[str, tuple[NDArray[np.int64], list[Any]]]) -> None:
        self.changes_ = {
            name: change_counts(text_values(frame[name]), np.array(drawn[name][1], dtype=object))
            for name in self.columns_
        }

    def _fit(self, X: DataSource) -> tuple[Any, bool]:
        if isinstance(self.pd, bool) or not isinstance(self.pd, (int, float)) or not 0 <= self.pd <= 1:
            raise ParameterError(f"pd={self.pd!r} must be a probability between 0 and 1, e.g. 0.8.")
        as_generator(self.random_state)  # a bad random_state fails here, before any data is read
        if self.method not in ("invariant", "sdcmicro"):
            raise ParameterError(f"method={self.method!r}: use 'invariant' (pd a guaranteed minimum) or 'sdcmicro'.")
        if isinstance(self.alpha, bool) or not isinstance(self.alpha, (int, float)) or not 0 <= self.alpha <= 1:
            raise ParameterError(f"alpha={self.alpha!r} must be a weight between 0 and 1, e.g. 0.5 (sdcMicro's default).")
        matrix_rng = self._matrix_rng()
        if self.matrix is not None and not isinstance(self.matrix, Mapping):
            raise ParameterError(
                f"matrix={self.matrix!r}: give {{column: {{from_value: {{to_value: probability}}}}}}, e.g. "
                "{'region': {'a': {'a': 0.9, 'b': 0.1}, 'b': {'b': 1.0}}}."
            )
        columns = self.columns if self.columns is not None else (list(self.matrix) if self.matrix else None)
        lazy = self._lazy_in(X, columns, reset=True) if is_distributed(X) else None
        frame: Any
        if lazy is not None:  # value counts from a distributed group_by (one row per value)
            frame, names = lazy
            was_array = False
            schema = frame.collect_schema()
            tallies = {}
            for name in names:
                values, n = value_counts(frame, name, schema[name])
                texts = [str(v) for v in values]
                order = sorted(range(len(values)), key=texts.__getitem__)
                tallies[name] = ([values[i] for i in order], n[order])
        else:
            frame, names, was_array = self._frame_in(X, columns, reset=True)
        stray = [c for c in (self.matrix or {}) if c not in names]
        if stray:
            raise ParameterError(
                f"matrix gives a transition matrix for column {stray[0]!r}, which is not among the "
                f"randomised columns {names}; add it to columns=[...] or drop it from matrix."
            )
        transition: dict[str, tuple[list[Any], NDArray[np.float64]]] = {}
        for name in names:
            if lazy is not None:
                observed, counts = tallies[name]
            else:
                values = text_values(frame[name]).tolist()
                observed = sorted({v for v in values if v is not None}, key=str)
                index = {v: i for i, v in enumerate(observed)}
                counts = np.bincount([index[v] for v in values if v is not None], minlength=len(observed))
            if self.matrix is not None and name in self.matrix:
                transition[name] = _user_matrix(name, self.matrix[name], observed)
            else:
                if self.method == "sdcmicro":
                    keep = matrix_rng.uniform(float(self.pd), 1.0, size=len(observed))
                    P = sdcmicro_matrix(counts.astype(np.int64), keep, float(self.alpha))
                else:
                    P = invariant_matrix(counts.astype(np.int64), float(self.pd))
                transition[name] = (observed, P)
        self.transition_ = transition
        self.columns_ = tuple(names)
        return frame, was_array

    def _matrix_rng(self) -> np.random.Generator:
        """The stream of sdcMicro's diagonal draws: for an int seed a stream apart from the cells'."""
        rs = self.random_state
        if isinstance(rs, (int, np.integer)) and not isinstance(rs, bool):
            return np.random.default_rng([int(rs), 0x5DC])
        return as_generator(rs)

    def _draw(self, frame: nw.DataFrame[Any]) -> dict[str, tuple[NDArray[np.int64], list[Any]]]:
        rng = as_generator(self.random_state)
        out: dict[str, tuple[NDArray[np.int64], list[Any]]] = {}
        for name in self.columns_:
            cats = self.transition_[name][0]
            _, new = self._draw_column(name, text_values(frame[name]).tolist(), rng)
            out[name] = (new, [None if c < 0 else cats[c] for c in new])
        return out

    def _draw_column(
        self, name: str, values: list[Any], rng: np.random.Generator
    ) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
        """(codes before, codes drawn) of one column's values (None = missing, code -1, kept).

        The drawn code of a cell with code c is the first j with u < sum_{l <= j} P[c, l], u ~ U(0, 1)."""
        cats, P = self.transition_[name]
        index = {str(v): i for i, v in enumerate(cats)}
        codes = np.full(len(values), -1, dtype=np.int64)
        for r, v in enumerate(values):
            if v is not None:
                if str(v) not in index:
                    raise InputError(
                        f"column {name!r}: value {v!r} was not seen in fit and has no row in the "
                        "transition matrix; fit PRAM on this table."
                    )
                codes[r] = index[str(v)]
        u = rng.random(len(values))
        new = codes.copy()
        cum = np.cumsum(P, axis=1)
        if cats:  # a column with no value (all missing) stays as it is
            cum[:, -1] = 1.0
        for c in range(len(cats)):
            rows = np.flatnonzero(codes == c)
            if rows.size:
                new[rows] = np.minimum(np.searchsorted(cum[c], u[rows], side="right"), len(cats) - 1)
        return codes, new

    # --- Dask and Spark: the draws of a partition come from SeedSequence(entropy, spawn_key=(partition, batch))

    def _entropy(self) -> int:
        """The root of the per-partition seeds: ``random_state`` itself for an int (reproducible),
        fresh OS entropy for None, a draw of the stream for a Generator."""
        rs = self.random_state
        if isinstance(rs, (int, np.integer)) and not isinstance(rs, bool):
            return int(rs)
        if rs is None:
            return int(np.random.SeedSequence().entropy)  # type: ignore[arg-type]  # fresh OS entropy
        return int(as_generator(rs).integers(0, 2**63 - 1))

    def _draw_partition(
        self, pdf: Any, key: tuple[int, int], entropy: int
    ) -> dict[str, tuple[NDArray[np.int64], NDArray[np.int64]]]:
        import pandas as pd  # lazy: an optional engine's library

        rng = np.random.default_rng(np.random.SeedSequence(entropy, spawn_key=key))
        return {
            name: self._draw_column(name, [None if pd.isna(v) else v for v in pdf[name].tolist()], rng)
            for name in self.columns_
        }

    def _release_distributed(self, X: Any, entropy: int) -> Any:
        """The released frame, drawn partition by partition (still lazy, same kind)."""
        import pandas as pd  # lazy: an optional engine's library

        def release(pdf: Any, key: tuple[int, int]) -> Any:
            out = pdf.copy()
            for name, (_, new) in self._draw_partition(pdf, key, entropy).items():
                cats = self.transition_[name][0]
                drawn = pd.Series([None if c < 0 else cats[c] for c in new], index=pdf.index, dtype=object)
                try:
                    out[name] = drawn.astype(pdf[name].dtype)
                except (TypeError, ValueError):  # e.g. a missing cell in a numpy integer column
                    out[name] = drawn
            return out

        return map_partitions(X, release)

    def _record_distributed(self, X: Any, entropy: int) -> None:
        """``changes_`` of the draw seeded by ``entropy``, from per-partition (column, from, to, n)
        tallies (at most m^2 rows per column and partition reach the driver)."""
        import pandas as pd  # lazy: an optional engine's library

        names = list(self.columns_)

        def tally(pdf: Any, key: tuple[int, int]) -> Any:
            drawn = self._draw_partition(pdf, key, entropy)
            rows = []
            for j, name in enumerate(names):
                codes, new = drawn[name]
                pairs, n = np.unique(np.column_stack([codes, new]), axis=0, return_counts=True)
                rows += [(j, int(a), int(b), int(c)) for (a, b), c in zip(pairs.reshape(-1, 2), n, strict=True)]
            return pd.DataFrame(rows, columns=["j", "src", "dst", "n"], dtype="int64")

        table = partition_tallies(X, tally, ["j", "src", "dst", "n"])
        self.changes_ = {}
        for j, name in enumerate(names):
            part = table[(table[:, 0] == j) & (table[:, 3] > 0)]
            kept = part[part[:, 1] >= 0]
            self.changes_[name] = {
                "cells_changed": int(kept[kept[:, 1] != kept[:, 2], 3].sum()),
                "values_merged": max(0, len(set(kept[:, 1].tolist())) - len(set(kept[:, 2].tolist()))),
            }

    def transform(self, X: DataSource) -> Any:
        """Draw the released values of the fitted columns (seeded by ``random_state``)."""
        self.check_is_fitted("transition_")
        if is_distributed(X):
            self._lazy_in(X, list(self.columns_), reset=False)
            return self._release_distributed(X, self._entropy())
        if _lazy_kind(X) is not None:
            return restore_kind(self.transform(collect_if_lazy(X, type(self).__name__)), X)
        frame, _, was_array = self._frame_in(X, list(self.columns_), reset=False)
        return self._write_output(self._release(frame, self._draw(frame)), was_array)

    def _release(self, frame: nw.DataFrame[Any], drawn: dict[str, tuple[NDArray[np.int64], list[Any]]]) -> Any:
        replaced = {}
        for name, (new, _) in drawn.items():
            cats = list(self.transition_[name][0])
            replaced[name] = from_codes(frame, name, np.where(new < 0, len(cats), new), [*cats, None])
        return native_out(frame, replaced)


def _user_matrix(
    name: str, spec: Mapping[Any, Mapping[Any, float]], observed: list[Any]
) -> tuple[list[Any], NDArray[np.float64]]:
    if not isinstance(spec, Mapping) or not all(isinstance(r, Mapping) for r in spec.values()):
        raise ParameterError(
            f"column {name!r}: matrix must be {{from_value: {{to_value: probability}}}}, e.g. "
            "{'a': {'a': 0.9, 'b': 0.1}, 'b': {'b': 1.0}}."
        )
    by_text = {str(v): v for v in observed}
    labels = list(dict.fromkeys([*map(str, observed), *map(str, spec)]))
    for row in spec.values():
        labels.extend(str(t) for t in row if str(t) not in labels)
    missing_rows = [v for v in map(str, observed) if v not in {str(f) for f in spec}]
    if missing_rows:
        raise ParameterError(
            f"column {name!r}: value {missing_rows[0]!r} has no row in the matrix; give every value a row."
        )
    m = len(labels)
    pos = {lab: i for i, lab in enumerate(labels)}
    P = np.eye(m)
    for f, row in spec.items():
        i = pos[str(f)]
        P[i] = 0.0
        for t, prob in row.items():
            if isinstance(prob, bool) or not isinstance(prob, (int, float)) or not 0 <= prob <= 1:
                raise ParameterError(f"column {name!r}: P[{f!r}][{t!r}] = {prob!r} is not a probability.")
            P[i, pos[str(t)]] = float(prob)
        if abs(P[i].sum() - 1.0) > 1e-9:
            raise ParameterError(
                f"column {name!r}: the row of value {f!r} sums to {P[i].sum():.6g}; each row sums to 1."
            )
    cats = [by_text.get(lab, _like(lab, observed)) for lab in labels]
    return cats, P


def _like(label: str, observed: list[Any]) -> Any:
    """A target value not observed, typed like the observed ones (int/float columns)."""
    sample = observed[0] if observed else label
    for kind in (int, float):
        if isinstance(sample, kind) and not isinstance(sample, bool):
            try:
                return kind(label)
            except ValueError:
                return label
    return label
