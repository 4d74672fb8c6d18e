"""Linear relations among numeric columns, and the refusal to mask one side of a relation.

A release that masks PTOTVAL but publishes PEARNVAL and POTHVAL unchanged gives PTOTVAL back to
anyone who adds them, when PTOTVAL = PEARNVAL + POTHVAL holds in every row. Such relations are
the null space of the centred data: a unit vector v with ||Z v|| / sqrt(n) = s_min / sqrt(n) ~ 0,
where Z holds the standardised columns (population sd) and s_min is a singular value of Z. The
relation in original units is sum_j (v_j / sd_j) (x_j - mean_j) = 0.

Exact relations have a relative residual sd below ``exact_tol`` (1e-9); near-exact ones below
``near_tol`` (default 0.01: the relation predicts the column to 1 % of its sd). A null space of
dimension d > 1 is returned in reduced row-echelon form, so each relation has one leading column
and is as sparse as the basis allows.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import narwhals as nw
import numpy as np
from numpy.typing import NDArray

from sdckit._io import as_narwhals, check_numeric
from sdckit.errors import ParameterError

__all__ = [
    "LinearRelation",
    "LinearRelationError",
    "check_linear_relations",
    "enough_rows",
    "find_linear_relations",
    "guard_masking",
]


class LinearRelationError(ParameterError):
    """Masking one side of a linear relation while the other side is released unchanged."""


@dataclass(frozen=True)
class LinearRelation:
    """``target = intercept + sum_j coefficients[j] * others[j]`` holds in every row, up to ``residual_sd``."""

    target: str
    """The column the relation is solved for (a masked one when the relation ties masked to unmasked)."""
    others: tuple[str, ...]
    """The columns on the right-hand side."""
    coefficients: tuple[float, ...]
    """Coefficient of each of ``others`` (original units)."""
    intercept: float
    """Constant term (original units)."""
    residual_sd: float
    """sd of target minus the right-hand side, as a share of the target's sd (0 for an exact relation)."""
    exact: bool
    """True when the residual is at rounding level."""

    @property
    def columns(self) -> tuple[str, ...]:
        """Every column the relation involves."""
        return (self.target, *self.others)

    def formula(self) -> str:
        """``PTOTVAL = PEARNVAL + POTHVAL`` (coefficients of 1 omitted, 4 significant digits)."""
        terms: list[str] = []
        for name, c in zip(self.others, self.coefficients, strict=True):
            mag = abs(c)
            body = name if abs(mag - 1.0) < 1e-6 else f"{mag:.4g} * {name}"
            sign = "-" if c < 0 else "+"
            terms.append(body if not terms and sign == "+" else (f"- {body}" if not terms else f"{sign} {body}"))
        rhs = " ".join(terms) or "0"
        scale = max(1.0, max((abs(c) for c in self.coefficients), default=1.0))
        if abs(self.intercept) > 1e-9 * scale * 1e3:
            rhs += f" {'-' if self.intercept < 0 else '+'} {abs(self.intercept):.4g}"
        approx = "" if self.exact else f" (approximately: residual {100 * self.residual_sd:.2g} % of its sd)"
        return f"{self.target} = {rhs}{approx}"

    def to_dict(self) -> dict[str, object]:
        return {
            "formula": self.formula(),
            "target": self.target,
            "others": list(self.others),
            "coefficients": list(self.coefficients),
            "intercept": self.intercept,
            "residual_sd": self.residual_sd,
            "exact": self.exact,
        }


def _rref(a: NDArray[np.float64], tol: float) -> tuple[NDArray[np.float64], list[int]]:
    """Reduced row-echelon form of ``a`` with partial pivoting; returns it and the pivot columns."""
    m = a.copy()
    rows, cols = m.shape
    pivots: list[int] = []
    r = 0
    for c in range(cols):
        if r >= rows:
            break
        p = r + int(np.argmax(np.abs(m[r:, c])))
        if abs(m[p, c]) <= tol:
            continue
        m[[r, p]] = m[[p, r]]
        m[r] /= m[r, c]
        for i in range(rows):
            if i != r:
                m[i] -= m[i, c] * m[r]
        pivots.append(c)
        r += 1
    return m[:r], pivots


GRAM_FROM = 100
"""From this many (non-constant) columns, relations are found from the Gram matrix's eigenvectors
instead of the SVD (same null space, several times cheaper)."""


def find_linear_relations(
    x: NDArray[np.float64],
    names: Sequence[str],
    *,
    near_tol: float = 0.01,
    exact_tol: float = 1e-9,
    prefer: Iterable[str] = (),
) -> list[LinearRelation]:
    """Exact and near-exact linear relations among the columns of ``x`` (rows with a missing value skipped).

    Parameters
    ----------
    x : (n, p) numeric matrix.
    names : the p column names.
    near_tol : largest relative residual sd of a near-exact relation (share of the target's sd).
    exact_tol : relative residual below which a relation is called exact.
    prefer : columns to solve relations for when possible (e.g. the masked ones), in order.

    Notes
    -----
    Constant columns are left out (a constant is its own trivial relation). Z = (x - mean) / sd
    (population sd); its right singular vectors with s / sqrt(n) <= near_tol span the (near) null
    space [Golub & Van Loan, *Matrix Computations*, §5.5]. Cost O(n p^2) time, O(n p) memory.
    With fewer than :data:`MIN_ROWS_PER_COLUMN` complete rows per non-constant column no relation is
    returned: n rows make any n - 1 centred columns dependent, a relation of the sample, not of the data.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> a, b = rng.normal(size=50), rng.normal(size=50)
    >>> [r.formula() for r in find_linear_relations(np.c_[a, b, a + b], ["a", "b", "total"], prefer=["total"])]  # largest term first
    ['total = b + a']
    """
    x = np.asarray(x, dtype=np.float64)
    if x.ndim != 2 or x.shape[1] != len(names):
        raise ParameterError(f"x has shape {x.shape}; expected (n, {len(names)}) for columns {list(names)}.")
    x = x[~np.isnan(x).any(axis=1)]
    n = x.shape[0]
    if n < 3 or x.shape[1] < 2:
        return []
    mean, sd = x.mean(axis=0), x.std(axis=0)
    live = np.flatnonzero(sd > 0)
    names = [str(c) for c in names]
    if live.size < 2 or not enough_rows(n, int(live.size)):
        return []  # too few rows: any columns would look related
    z = (x[:, live] - mean[live]) / sd[live]
    if live.size <= n and live.size < GRAM_FROM:  # thin SVD: O(n p^2) time, O(n p) memory (never the n x n factor)
        _, s, vt = np.linalg.svd(z, full_matrices=False)
        rel = s / np.sqrt(n)
    else:  # fewer rows than columns, or many columns: the p x p Gram matrix has the whole null space
        # (eigh of Z'Z/n costs ~7x less than the SVD at 480 columns; its eigenvalues are s^2/n and a
        # near-relation's s^2/n <= near_tol^2 = 1e-4 is far above their rounding error)
        lam, vecs = np.linalg.eigh(z.T @ z / n)
        rel, vt = np.sqrt(np.clip(lam, 0.0, None)), vecs.T
    null = vt[rel <= near_tol]
    if null.shape[0] == 0:
        return []
    order = list(range(live.size))
    wanted = list(prefer)
    preferred = [i for i, j in enumerate(live) if names[int(j)] in set(wanted)]
    preferred.sort(key=lambda i: wanted.index(names[int(live[i])]))
    order = preferred + [i for i in order if i not in preferred]
    basis, pivots = _rref(null[:, order], tol=1e-8)
    out: list[LinearRelation] = []
    for row, piv in zip(basis, pivots, strict=True):
        coef_z = np.zeros(live.size)
        coef_z[order] = row  # back to column order; coef_z[order[piv]] == 1
        target_i = order[piv]
        # sum_j coef_z[j] (x_j - m_j) / sd_j = 0  =>  x_t = m_t - sd_t * sum_{j != t} coef_z[j] (x_j - m_j) / sd_j
        others = [i for i in range(live.size) if i != target_i and abs(coef_z[i]) > 1e-9]
        others.sort(key=lambda i: -abs(coef_z[i]))  # the largest contribution (in sd units) first
        if not others:
            continue
        t = live[target_i]
        coefs = [-sd[t] * coef_z[i] / sd[live[i]] for i in others]
        intercept = mean[t] - sum(c * mean[live[i]] for c, i in zip(coefs, others, strict=True))
        pred = intercept + x[:, live[others]] @ np.asarray(coefs)
        resid = float(np.std(x[:, t] - pred) / sd[t])
        if resid > near_tol:
            continue
        out.append(
            LinearRelation(
                target=names[t],
                others=tuple(names[live[i]] for i in others),
                coefficients=tuple(float(_tidy(c)) for c in coefs),
                intercept=float(_tidy(intercept)),
                residual_sd=resid if resid > exact_tol else 0.0,
                exact=resid <= exact_tol,
            )
        )
    return out


def _tidy(c: float) -> float:
    """Snap a coefficient to the nearest integer or half when it is within rounding of it."""
    r = round(c * 2) / 2
    return r if abs(c - r) <= 1e-9 * max(1.0, abs(c)) else c


MIN_ROWS_PER_COLUMN = 2
"""Relations are looked for only with at least this many complete rows per (non-constant) column: with
n rows, any n - 1 centred columns are linearly dependent (8 rows of 8 columns always are), and random
data of n >= 2 p rows has no near-relation at 1 % (the smallest singular value of an n x p Gaussian
matrix, over sqrt(n), is about 1 - sqrt(p / n) >= 0.29)."""


def enough_rows(n_rows: int, n_columns: int) -> bool:
    """Whether ``n_rows`` complete rows can show a relation among ``n_columns`` columns (:data:`MIN_ROWS_PER_COLUMN`)."""
    return n_rows >= MIN_ROWS_PER_COLUMN * n_columns


def _null_dimension(x: NDArray[np.float64], tol: float) -> int:
    """The number of independent (near-)exact relations among the columns of ``x`` (complete rows)."""
    if x.shape[1] == 0:
        return 0
    sd = x.std(axis=0)
    live = sd > 0
    if live.sum() < 2:
        return 0
    z = (x[:, live] - x[:, live].mean(axis=0)) / sd[live]
    if z.shape[1] < GRAM_FROM and z.shape[1] <= z.shape[0]:
        s = np.linalg.svd(z, compute_uv=False) / np.sqrt(z.shape[0])
        return int(np.sum(s <= tol)) + max(0, int(live.sum()) - len(s))
    lam = np.linalg.eigvalsh(z.T @ z / z.shape[0])  # as in find_linear_relations: the same values, squared
    return int(np.sum(np.sqrt(np.clip(lam, 0.0, None)) <= tol))


def _leaking_relation(
    x: NDArray[np.float64], names: list[str], hit: list[str], raw: list[str], relations: list[LinearRelation], tol: float
) -> LinearRelation | None:
    """The relation that ties masked to released unmasked columns, or None when every relation found is
    among masked columns only (masked together) or among unmasked ones only.

    A leak is a relation not made of those two kinds: the null space of all the columns is larger than
    the null spaces of the masked ones and of the unmasked ones together (counted at twice the
    tolerance, so that a relation at the edge of it is not split by rounding). Named, when it can be,
    as a masked column solved from unmasked ones (``PTOTVAL = PEARNVAL + POTHVAL``).
    """
    col = {c: i for i, c in enumerate(names)}
    both = _null_dimension(x[:, [col[c] for c in hit + raw]], tol)
    apart = _null_dimension(x[:, [col[c] for c in hit]], 2 * tol) + _null_dimension(x[:, [col[c] for c in raw]], 2 * tol)
    if both <= apart:
        return None
    for target in hit:
        solved = find_linear_relations(x[:, [col[target]] + [col[c] for c in raw]], [target, *raw], near_tol=tol, prefer=[target])
        found = next((r for r in solved if r.target == target), None)
        if found is not None:
            return found
    hit_set, raw_set = set(hit), set(raw)
    return next((r for r in relations if set(r.columns) & hit_set and set(r.columns) & raw_set), None)


def check_linear_relations(
    x: NDArray[np.float64],
    names: Sequence[str],
    *,
    masked: Iterable[str],
    released: Iterable[str],
    near_tol: float = 0.01,
) -> list[LinearRelation]:
    """Raise :class:`LinearRelationError` when a relation ties masked columns to released unmasked ones.

    ``names`` are the columns of ``x``; ``masked`` the ones a step changes (masked, recoded into
    bands); ``released`` every column that goes out (masked or not). A relation is harmless when one
    of its columns is withheld, when all of its columns are masked (masked together: a relation among
    masked columns gives none of them back), or when none is. Only relations that hold to
    ``near_tol`` of a column's sd, found with at least :data:`MIN_ROWS_PER_COLUMN` complete rows per
    column, count. Returns every relation found (for the report).
    """
    masked_set, released_set = set(masked), set(released)
    names = [str(c) for c in names]
    relations = find_linear_relations(x, names, near_tol=near_tol, prefer=[c for c in names if c in masked_set])
    if not relations:
        return relations
    hit = [c for c in names if c in masked_set]
    raw = [c for c in names if c not in masked_set and c in released_set]
    if not hit or not raw:
        return relations
    complete = np.asarray(x, dtype=np.float64)
    complete = complete[~np.isnan(complete).any(axis=1)]
    rel = _leaking_relation(complete, names, hit, raw, relations, near_tol)
    if rel is None:
        return relations
    raw_names = [c for c in rel.columns if c in set(raw)]
    hit_names = [c for c in rel.columns if c in masked_set]
    joined = " and ".join(raw_names) if len(raw_names) <= 2 else ", ".join(raw_names[:-1]) + " and " + raw_names[-1]
    alone = " and ".join(hit_names)
    verb = "adding" if all(c == 1.0 for c in rel.coefficients) else "combining"
    withhold = "withhold one" if len(raw_names) > 1 else "withhold it"
    raise LinearRelationError(
        f"{rel.formula()}: masking {alone} alone is undone by {verb} {joined}; "
        f"mask them together or {withhold}. (The relation holds in {complete.shape[0]:,} rows to within "
        f"{100 * near_tol:g} % of {rel.target}'s sd; looser relations are not refused. To release anyway, pass the "
        "explicit override: --allow-linear-relations, allow_linear_relations=True, or `allow_linear_relations: true`.)"
    )


def guard_masking(source: object, masked: Sequence[str], *, allow: bool = False) -> list[LinearRelation]:
    """The check the library's masking entry points run on a frame before they return it.

    Every numeric column of ``source`` other than ``masked`` is released unchanged beside the masked
    ones, so a relation between them raises :class:`LinearRelationError` (unless ``allow``).
    Inputs without column names (numpy arrays) or with no other numeric column pass.
    """
    if allow or isinstance(source, np.ndarray):
        return []

    try:
        frame = as_narwhals(source)
    except Exception:  # not a frame (e.g. a list of lists): nothing named to check
        return []
    if isinstance(frame, nw.LazyFrame):
        return []  # distributed frames are checked by the pipeline on what it writes
    schema = frame.collect_schema()
    numeric = [c for c, t in schema.items() if t.is_numeric() and t != nw.Boolean]
    others = [c for c in numeric if c not in set(masked)]
    if not others:
        return []
    cols = [c for c in numeric if c in set(masked) or c in set(others)]
    x, names = check_numeric(source, cols, missing="drop")
    return check_linear_relations(x, list(names), masked=masked, released=cols)
