"""Linked columns: released columns that reveal a quasi-identifier (a coarser copy of a key, or a
column such as ``relationship`` that nearly fixes ``sex`` and ``marital-status``).

A column c is *linked* to a key q when it removes a large share of q's uncertainty:

    U(q | c) = 1 - H(q | c) / H(q) = I(q; c) / H(q)      (Theil's uncertainty coefficient)

measured on the data, with the mutual information corrected for its small-sample bias
(Miller-Madow: E[I_hat] ~ (|q| - 1)(|c| - 1) / (2 n ln 2) bits under independence), so that a
near-unique column (many values, few rows) is not taken for a copy; with households, a value shared by
a household's members counts once per household (members are not independent observations). A released linked column
undoes the suppression of the key it reveals: a row whose ``sex`` is suppressed but whose
``relationship`` says *Husband* shows its sex. The pipeline therefore counts linked columns as
quasi-identifiers (or suppresses them with the key cell, sdcMicro's ghost variables).

Pure logic, no I/O.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import polars as pl

__all__ = [
    "LINKED_THRESHOLD",
    "LinkedColumn",
    "find_linked_columns",
    "linked_by",
    "uncertainty_coefficient",
    "uncertainty_from_entropies",
]

LINKED_THRESHOLD = 0.3
"""Default U(q | c) from which a released column counts as linked to key q (``relationship`` -> ``sex``:
0.43, ``-> marital-status``: 0.57 on Adult; sdcMicro's testdata2 ``water3`` -> ``water``: 0.35;
``income`` -> ``marital-status``: 0.085, not linked)."""


@dataclass(frozen=True)
class LinkedColumn:
    """A released column and the keys it reveals, with U(q | c) per key (0..1)."""

    column: str
    keys: tuple[str, ...]
    coefficients: tuple[float, ...]
    declared: bool = False
    """True when the pipeline file declares the link (``linked:``), False when the data show it."""

    def to_dict(self) -> dict[str, object]:
        return {
            "column": self.column,
            "keys": list(self.keys),
            "uncertainty_coefficient": dict(zip(self.keys, self.coefficients, strict=True)),
            "declared": self.declared,
        }

    def describe(self) -> str:
        """``relationship (reveals marital-status 57 %, sex 43 %)``."""
        parts = [
            f"{q} {100 * u:.0f} %" if not math.isnan(u) else q
            for q, u in zip(self.keys, self.coefficients, strict=True)
        ]
        return f"{self.column} (reveals {', '.join(parts)}{'; declared' if self.declared else ''})"


def _codes(series: pl.Series) -> np.ndarray:
    """Integer codes of a column, a missing value a code of its own."""
    return np.asarray(series.cast(pl.String).fill_null("\x00missing").rank("dense").to_numpy(), dtype=np.int64) - 1


def _entropy(counts: np.ndarray) -> float:
    p = counts[counts > 0] / counts.sum()
    return float(-(p * np.log2(p)).sum())


def uncertainty_coefficient(key: pl.Series, column: pl.Series, units: pl.Series | None = None) -> float:
    """U(key | column) = I(key; column) / H(key), bias-corrected (Miller-Madow), in [0, 1]; 0 for a constant key.

    ``units``: the household (entity) of each row. A value the members of a household share is one
    observation, not one per member: counted per row, a household-level amount such as the household's
    income, near-unique, is seen 2-3 times with the same region in every household and looks like a copy
    of it (U 0.49 on ``examples/data/households.csv``, where income is drawn independently of region; 0.0
    counted once per household). So each (unit, key, column) triple is counted once.
    """
    if units is not None:
        triples = pl.DataFrame({"u": units, "q": key, "c": column}).unique(maintain_order=True)
        key, column = triples["q"], triples["c"]
    q, c = _codes(key), _codes(column)
    if q.size == 0:
        return 0.0
    joint = np.unique(q * (int(c.max()) + 1) + c, return_counts=True)[1]
    return uncertainty_from_entropies(
        _entropy(np.bincount(q)), _entropy(np.bincount(c)), _entropy(joint),
        n_key_values=np.unique(q).size, n_column_values=np.unique(c).size, n=q.size,
    )


def uncertainty_from_entropies(
    h_key: float, h_column: float, h_joint: float, *, n_key_values: int, n_column_values: int, n: int
) -> float:
    """U(key | column) of :func:`uncertainty_coefficient` from the entropies (bits) of the key, the
    column and the pair, their numbers of distinct values and the rows: what a distributed frame's
    grouped aggregates give (:func:`sdckit.pipeline.run_distributed`).

    U = (H(q) + H(c) - H(q, c) - (|q| - 1)(|c| - 1) / (2 n ln 2)) / H(q), clipped to [0, 1].
    """
    if n == 0 or h_key <= 0:
        return 0.0
    mutual = h_key + h_column - h_joint
    bias = (n_key_values - 1) * (n_column_values - 1) / (2 * n * math.log(2))
    return float(min(1.0, max(0.0, (mutual - bias) / h_key)))


def find_linked_columns(
    frame: pl.DataFrame,
    keys: Sequence[str],
    candidates: Sequence[str],
    *,
    threshold: float = LINKED_THRESHOLD,
    units: str | None = None,
) -> tuple[LinkedColumn, ...]:
    """The ``candidates`` with U(q | c) >= ``threshold`` for some key q of ``keys`` (keys sorted by U, largest first);
    ``units``: the household (entity) column, whose shared values count once per household
    (:func:`uncertainty_coefficient`).

    Examples
    --------
    >>> import polars as pl
    >>> df = pl.DataFrame({"relat": [1, 2, 3, 4, 1, 2, 3, 4] * 5, "relat2": [10, 10, 30, 30, 10, 10, 30, 30] * 5,
    ...                    "noise": [1, 2, 2, 1, 2, 1, 1, 2] * 5})
    >>> [c.column for c in find_linked_columns(df, ["relat"], ["relat2", "noise"])]
    ['relat2']
    """
    ids = frame[units] if units is not None and units in frame.columns else None
    return linked_by(
        lambda q, c: uncertainty_coefficient(frame[q], frame[c], ids),
        [q for q in keys if q in frame.columns],
        [c for c in candidates if c in frame.columns],
        threshold=threshold,
    )


def linked_by(
    coefficient: Callable[[str, str], float], keys: Sequence[str], candidates: Sequence[str], *, threshold: float
) -> tuple[LinkedColumn, ...]:
    """The ``candidates`` c with ``coefficient(q, c)`` (U(q | c)) >= ``threshold`` for some key q, keys sorted
    by U, largest first: :func:`find_linked_columns` on whatever computes U (a frame in memory, or the
    group counts of a distributed one)."""
    out: list[LinkedColumn] = []
    for c in candidates:
        if c in keys:
            continue
        scored = [(q, coefficient(q, c)) for q in keys]
        hits = sorted(((q, u) for q, u in scored if u >= threshold), key=lambda t: -t[1])
        if hits:
            out.append(LinkedColumn(c, tuple(q for q, _ in hits), tuple(u for _, u in hits)))
    return tuple(out)
