"""Value counts: single columns (what a curator behind a shuffler sees) and known blocks of columns."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import narwhals as nw
import numpy as np
from numpy.typing import ArrayLike, NDArray

from sdckit._checks import (
    as_scalar_or_array,
    check_groupable,
    threshold,
    warn_identifier,
    warn_weight_columns,
)
from sdckit._io import DataSource, MissingPolicy, read_data
from sdckit._scale import collect_small
from sdckit.errors import ColumnNotFoundError, EmptyTableError, InputError
from sdckit.risk._counts._blocks import REDACTED, BlockCounts, block_key, is_redacted, make_block


@dataclass(frozen=True, eq=False)
class Marginals:
    """The value counts of each column separately, with no link between columns.

    This is exactly what the curator of the shuffle protocol learns in round 1 (anonymity notes §5):
    for each column j, how many users hold each value. Counts are kept sorted ascending (rarest
    first), which is the order the bounds of :func:`joint_exposure_bound` sacrifice values in.

    Build with :meth:`from_data` (a table) or :meth:`from_counts` (counts received elsewhere).

    Examples
    --------
    >>> m = Marginals.from_counts({"sex": {"Male": 21790, "Female": 10771}, "race": {"White": 27816,
    ...     "Black": 3124, "Asian-Pac-Islander": 1039, "Amer-Indian-Eskimo": 311, "Other": 271}})
    >>> m.n, m.supports
    (32561, {'sex': 2, 'race': 5})
    >>> m.exposure("race", k=300)   # share of users whose race is held by < 300 users
    0.008322840207610331
    """

    n: int
    """Number of users (each column's counts sum to it)."""
    columns: tuple[str, ...]
    """Column names, in the order given."""
    counts: Mapping[str, NDArray[np.int64]]
    """Per column, the positive counts of its observed values, ascending (int64)."""
    values: Mapping[str, tuple[Any, ...]]
    """Per column, the values aligned with ``counts`` (null kept as None)."""
    blocks: Mapping[tuple[str, ...], BlockCounts] = field(default_factory=dict)
    """Known joint counts of blocks of columns (e.g. pair tables), keyed by their column tuple;
    empty for single-column marginals. :func:`joint_exposure_bound` (``method="best"``) also
    minimises over the partitions of J into these blocks."""

    @classmethod
    def from_counts(
        cls,
        counts: Mapping[str, Mapping[Any, int] | Sequence[int]],
        *,
        n: int | None = None,
        blocks: Mapping[tuple[str, ...], Mapping[Any, int]] | None = None,
    ) -> Marginals:
        """Marginals from ``{column: {value: count}}`` (or ``{column: [counts]}`` without labels).

        Every column's counts must sum to the same number of users (each user sends one message per
        column); zero counts are dropped (an unobserved value is not in the support).

        ``blocks`` adds joint tables, ``{("age", "sex"): {(17, "Male"): 220, ...}, ...}``: keys are
        tuples of values in the block's column order; a value withheld because it is rare is
        :data:`sdckit.risk.REDACTED` (such a cell aggregates unknown true cells; see
        :func:`joint_exposure_bound`). A block's cells must count the same n users, and its known
        cells must agree with the single-column counts.

        Raises
        ------
        EmptyTableError : no columns, or a column with no users.
        InputError : a negative or fractional count, or columns whose totals differ.
        """
        if not counts:
            raise EmptyTableError("no columns given; pass {'column': {'value': count, ...}, ...}.")
        cols: dict[str, NDArray[np.int64]] = {}
        vals: dict[str, tuple[Any, ...]] = {}
        totals: dict[str, int] = {}
        for name, raw in counts.items():
            name = str(name)
            if isinstance(raw, Mapping):
                labels: list[Any] = list(raw.keys())
                numbers: list[Any] = list(raw.values())
            else:
                numbers = list(raw)
                labels = list(range(len(numbers)))
            try:
                arr = np.asarray(numbers, dtype=np.float64) if numbers else np.zeros(0)
            except (TypeError, ValueError):
                raise InputError(
                    f"column {name!r}: counts must be numbers of users, e.g. {{'Male': 21790}}; got {numbers[:3]!r}."
                ) from None
            for label, raw_x, x in zip(labels, numbers, arr, strict=True):
                if not math.isfinite(x) or x < 0 or x != math.floor(x):
                    raise InputError(
                        f"column {name!r}: the count of value {label!r} is {raw_x!r}; counts are whole "
                        "numbers >= 0 of users holding the value."
                    )
            ints = arr.astype(np.int64)
            keep = ints > 0
            ints = ints[keep]
            labels = [lab for lab, k in zip(labels, keep, strict=True) if k]
            if ints.size == 0:
                raise EmptyTableError(
                    f"column {name!r} has no users (all counts are 0); drop it or send its counts."
                )
            order = np.argsort(ints, kind="stable")
            cols[name] = np.ascontiguousarray(ints[order])
            vals[name] = tuple(labels[i] for i in order)
            totals[name] = int(ints.sum())
        distinct = set(totals.values())
        if n is not None and distinct != {int(n)}:
            bad = next(c for c, v in totals.items() if v != int(n))
            raise InputError(
                f"column {bad!r} counts {totals[bad]:,} users but n={int(n):,}; every column must count "
                "every user once (give the missing users a value such as 'unknown')."
            )
        if len(distinct) > 1:
            first = next(iter(totals))
            bad = next(c for c, v in totals.items() if v != totals[first])
            raise InputError(
                f"column {bad!r} counts {totals[bad]:,} users but column {first!r} counts {totals[first]:,}; "
                "every column must count every user once (give the missing users a value such as 'unknown')."
            )
        n_users = distinct.pop()
        known: dict[tuple[str, ...], BlockCounts] = {}
        if blocks:
            singles = {c: dict(zip(vals[c], cols[c].tolist(), strict=True)) for c in cols}
            for bcols, table in blocks.items():
                if isinstance(bcols, str):
                    raise InputError(
                        f"block {bcols!r}: name a block by a tuple of columns, e.g. ('age', 'sex')."
                    )
                b = make_block(bcols, table, n=n_users, singles=singles)
                known[b.columns] = b
        return cls(n=n_users, columns=tuple(cols), counts=cols, values=vals, blocks=known)

    @classmethod
    def from_data(
        cls,
        data: DataSource,
        columns: Sequence[str] | str | None = None,
        *,
        missing: MissingPolicy = "value",
        blocks: Sequence[Sequence[str]] | None = None,
        redact: Mapping[str, Any] | None = None,
    ) -> Marginals:
        """Count the values of each column of a table (counted where it lives for lazy frames).

        Missing values are one more value by default (``missing="value"``); ``"drop"`` drops the
        rows with a missing value in any of ``columns`` first. Warns (:class:`SdcWarning`) for a
        column that looks like a survey weight or holds a different value in every row.

        ``blocks`` also counts the joint table of each given tuple of columns, e.g.
        ``blocks=[("age", "sex"), ("race", "native-country")]`` (each within ``columns``).
        ``redact`` (``{column: values}``) withholds those values in the block tables: they become
        :data:`sdckit.risk.REDACTED`, as in the protocol's pair round, where rare values are redacted;
        the single-column counts stay complete.
        """
        d = read_data(data, columns, missing=missing)
        check_groupable(d.frame, d.columns)
        warn_weight_columns(d.columns)
        out: dict[str, dict[Any, int]] = {}
        for c in d.columns:
            counted = collect_small(d.frame.group_by(c).agg(nw.len().alias("__n")), what=f"the value counts of {c}")
            keys = counted[c].to_list()
            ns = counted["__n"].to_numpy().astype(np.int64)
            out[c] = dict(zip(keys, ns.tolist(), strict=True))
        if not out or sum(next(iter(out.values())).values()) == 0:
            raise EmptyTableError("the table has no rows; there is nothing to measure.")
        tables: dict[tuple[str, ...], dict[Any, int]] = {}
        hidden = {str(c): set(v) for c, v in (redact or {}).items()}
        for c in hidden:
            if c not in d.columns:
                raise ColumnNotFoundError(c, tuple(d.columns))
        for bcols in blocks or ():
            key = block_key([bcols] if isinstance(bcols, str) else bcols)
            for c in key:
                if c not in d.columns:
                    raise ColumnNotFoundError(c, tuple(d.columns))
            counted = collect_small(
                d.frame.group_by(list(key)).agg(nw.len().alias("__n")), what=f"the cell counts of {', '.join(key)}"
            )
            lists = [counted[c].to_list() for c in key]
            cell_ns: list[int] = counted["__n"].to_list()
            if not any(hidden.get(c) for c in key):  # nothing redacted: the cells as counted
                tables[key] = dict(zip(zip(*lists, strict=True), cell_ns, strict=True))
                continue
            table: dict[Any, int] = {}
            for cell, x in zip(zip(*lists, strict=True), cell_ns, strict=True):
                cell = tuple(
                    REDACTED if v in hidden.get(c, ()) else v for c, v in zip(key, cell, strict=True)
                )
                table[cell] = table.get(cell, 0) + int(x)
            tables[key] = table
        m = cls.from_counts(out)
        if tables:  # counted here from one table: consistent by construction, not re-validated
            singles = {c: dict(zip(m.values[c], m.counts[c].tolist(), strict=True)) for c in m.columns}
            built = {k: make_block(k, t, n=m.n, singles=singles, check=False) for k, t in tables.items()}
            m = replace(m, blocks=built)
        for c in m.columns:
            if m.counts[c].size == m.n and m.n > 2:
                warn_identifier(c, m.n, m.n)
        return m

    @property
    def supports(self) -> dict[str, int]:
        """Number of observed values m_j of each column."""
        return {c: int(self.counts[c].size) for c in self.columns}

    def select(self, columns: Sequence[str]) -> Marginals:
        """The marginals of a subset of the columns (order as given)."""
        for c in columns:
            if c not in self.counts:
                raise ColumnNotFoundError(str(c), self.columns)
        cols = tuple(str(c) for c in columns)
        inside = set(cols)
        return Marginals(
            n=self.n,
            columns=cols,
            counts={c: self.counts[c] for c in cols},
            values={c: self.values[c] for c in cols},
            blocks={k: b for k, b in self.blocks.items() if inside.issuperset(k)},
        )

    def recode(self, maps: Mapping[str, Mapping[Any, Any]]) -> Marginals:
        """The counts after recoding values (``{column: {old: new}}``, unmapped values kept), blocks included.

        Merging values only coarsens every group, so bounds stay valid for the recoded release; a
        redacted cell stays redacted (its true values are still unknown). Planners that generalise
        values should recode through here so that the pair tables follow.
        """
        for c in maps:
            if c not in self.counts:
                raise ColumnNotFoundError(str(c), self.columns)
        singles: dict[str, dict[Any, int]] = {}
        for c in self.columns:
            mp = maps.get(c, {})
            out: dict[Any, int] = {}
            for v, x in zip(self.values[c], self.counts[c].tolist(), strict=True):
                key = mp.get(v, v)
                out[key] = out.get(key, 0) + x
            singles[c] = out
        tables = {key: recode_block(b, [maps.get(c, {}) for c in b.columns]) for key, b in self.blocks.items()}
        out_m = Marginals.from_counts(singles, blocks=tables)
        return out_m.select(self.columns)

    def singles(self) -> Marginals:
        """The same marginals without any block (what round 1 of the protocol gives)."""
        return Marginals(n=self.n, columns=self.columns, counts=self.counts, values=self.values)

    def exposure(self, column: str, *, k: ArrayLike | None = None, t: ArrayLike | None = None) -> Any:
        """Q_j: the share of users whose value of ``column`` is held by <= floor(t n) (or < k) users."""
        if column not in self.counts:
            raise ColumnNotFoundError(str(column), self.columns)
        thr = threshold(self.n, k=k, t=t)
        c = self.counts[column]
        csum = np.concatenate([[0], np.cumsum(c)])
        idx = np.searchsorted(c, thr, side="right")
        out = csum[idx] / self.n
        return as_scalar_or_array(np.asarray(out, dtype=np.float64), np.ndim(thr) == 0)

    def to_dict(self) -> dict[str, Any]:
        """JSON form: ``{"n": ..., "counts": {column: {value: count}}}`` (values as text); with blocks
        also ``"blocks": [{"columns": [...], "cells": [[[v1, v2], count], ...]}]`` (values as text, a
        redacted value as ``"REDACTED"``)."""

        def text(v: Any) -> str:
            return "REDACTED" if is_redacted(v) else ("null" if v is None else str(v))

        out: dict[str, Any] = {
            "n": self.n,
            "counts": {
                c: {
                    ("null" if v is None else str(v)): int(x)
                    for v, x in zip(self.values[c], self.counts[c], strict=True)
                }
                for c in self.columns
            },
        }
        if self.blocks:
            out["blocks"] = [
                {
                    "columns": list(b.columns),
                    "cells": [
                        [[text(v) for v in cell], int(x)]
                        for cell, x in zip(
                            b.values + b.redacted_values, [*b.counts, *b.redacted_counts], strict=True
                        )
                    ],
                }
                for b in self.blocks.values()
            ]
        return out

    def __repr__(self) -> str:
        sup = ", ".join(f"{c}: {m}" for c, m in self.supports.items())
        extra = f", blocks={len(self.blocks)}" if self.blocks else ""
        return f"Marginals(n={self.n}, supports={{{sup}}}{extra})"


def recode_block(block: BlockCounts, maps: Sequence[Mapping[Any, Any]]) -> dict[tuple[Any, ...], int]:
    """A block's table after recoding each column's values with ``maps`` (one per column, in the
    block's order; unmapped values kept, a redacted value stays redacted)."""
    table: dict[tuple[Any, ...], int] = {}
    cells = block.values + block.redacted_values
    for cell, x in zip(cells, [*block.counts.tolist(), *block.redacted_counts.tolist()], strict=True):
        new = tuple(v if is_redacted(v) else mp.get(v, v) for v, mp in zip(cell, maps, strict=True))
        table[new] = table.get(new, 0) + x
    return table
