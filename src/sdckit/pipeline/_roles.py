"""Column roles: what each column is, what is released, and guesses that are shown, never silent.

A pipeline file names the roles (see :mod:`sdckit.pipeline._config`). With no roles,
:func:`guess_roles` proposes quasi-identifiers from the data and flags every column it keeps out
(a near-unique column, a weight-like column, an ID-like column, a target-like column), each with
the fix. ``sdckit plan``, ``sdckit report`` and the pipeline use it.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import polars as pl

from sdckit._checks import _WEIGHT_NAME

__all__ = ["Flag", "Roles", "guess_roles"]

_ID_NAME = re.compile(r"(^|[^a-z])(id|ids|uuid|guid|key|record|serial|ssn|respondent|case|caseid|personid|pid|hhid)([^a-z]|$)|_id$|^id_")
_HOUSEHOLD_NAME = re.compile(r"(^|[^a-z])(hid|hhid|hh|hh_id|household|household_id|hhno|family_id|firm_id|entity)([^a-z]|$)")
_TARGET_NAME = re.compile(r"(^|[^a-z])(target|label|class|outcome|y|income|salary|diagnosis|disease|response)([^a-z]|$)")
NEAR_UNIQUE = 0.5
"""A column with at least this share of distinct values among the rows is near-unique."""


@dataclass(frozen=True)
class Flag:
    """A column a guess kept out of (or put into) a role, and how to make it explicit."""

    column: str
    kind: str
    """``near-unique``, ``weight-like``, ``id-like``, ``household-like``, ``target-like`` or ``guessed``."""
    message: str

    def to_dict(self) -> dict[str, str]:
        return {"column": self.column, "kind": self.kind, "message": self.message}


@dataclass(frozen=True)
class Roles:
    """Every column's role for one release (after defaults and guesses)."""

    quasi_identifiers: tuple[str, ...]
    numeric: tuple[str, ...] = ()
    sensitive: tuple[str, ...] = ()
    weight: tuple[str, ...] = ()
    identifiers: tuple[str, ...] = ()
    keep: tuple[str, ...] = ()
    categorical: tuple[str, ...] = ()
    """Columns whose values are categories even when numbers (declared, or labelled in the input file)."""
    guessed: bool = False
    """True when the quasi-identifiers were guessed from the data."""
    flags: tuple[Flag, ...] = field(default_factory=tuple)
    household: str | None = None
    """The column grouping rows into households/entities (released as fresh random ids, or dropped)."""
    household_columns: tuple[str, ...] = ()
    """Household-level columns: one value per household."""
    household_id: str = "random"
    """``random`` (the household column goes out as fresh random ids) or ``drop``."""

    def released(self, columns: Sequence[str]) -> tuple[str, ...]:
        """The columns of ``columns`` (in order) that have a releasing role."""
        out = set(self.quasi_identifiers) | set(self.numeric) | set(self.sensitive) | set(self.weight) | set(self.keep)
        out -= set(self.identifiers)
        if self.household is not None and self.household_id == "random":
            out.add(self.household)
        return tuple(c for c in columns if c in out)

    def not_released(self, columns: Sequence[str]) -> dict[str, str]:
        """Columns withheld, with why: ``identifier`` or ``no role``."""
        rel = set(self.released(columns))
        return {
            c: ("identifier, never released" if c in self.identifiers
                else "household id, dropped (household_id: drop)" if c == self.household else "no role")
            for c in columns if c not in rel
        }

    def to_dict(self) -> dict[str, Any]:
        return {
            "quasi_identifiers": list(self.quasi_identifiers),
            "numeric": list(self.numeric),
            "sensitive": list(self.sensitive),
            "weight": list(self.weight),
            "identifiers": list(self.identifiers),
            "keep": list(self.keep),
            "categorical": list(self.categorical),
            "guessed": self.guessed,
            "flags": [f.to_dict() for f in self.flags],
            **({"household": self.household, "household_columns": list(self.household_columns),
                "household_id": self.household_id} if self.household is not None else {}),
        }


def guess_roles(
    frame: pl.DataFrame,
    *,
    exclude: Sequence[str] = (),
    sensitive: Sequence[str] = (),
    weight: Sequence[str] = (),
    identifiers: Sequence[str] = (),
    categorical: Sequence[str] = (),
) -> Roles:
    """Guess quasi-identifiers (and numeric columns to mask) for data with no roles; flag every doubt.

    A ``categorical`` column (``sex`` coded 1/2, a labelled SPSS variable) is never a numeric column
    to mask, whatever its type: a quasi-identifier candidate like a text column.

    Quasi-identifiers: text, boolean and integer columns, except near-unique ones (more than 10
    distinct values and at least half the rows distinct) and columns that look like a survey weight (name), an identifier (name, or a different
    value in most rows) or a target/sensitive attribute (name, e.g. ``income``, ``label``), and
    except the columns given as ``sensitive``, ``weight``, ``identifiers`` or in ``exclude``.
    Numeric columns to mask: numeric columns with more than 10 distinct values that are not
    weights or identifiers. Every column kept out by a guess gets a :class:`Flag` with the fix: also
    a constant column (kind ``constant``: kept as is, never a key) and a coarser copy of another
    candidate key (kind ``coarser-copy``: one value per value of the finer key, as ``relat2`` of
    ``relat``; not released, never a key).
    """
    n = frame.height
    declared = set(exclude) | set(sensitive) | set(weight) | set(identifiers)
    qis: list[str] = []
    numeric: list[str] = []
    flags: list[Flag] = []
    guessed_weight, guessed_ids, guessed_sensitive = list(weight), list(identifiers), list(sensitive)
    keep: list[str] = []
    cats = set(categorical)
    for name, dtype in frame.schema.items():
        if name in declared:
            continue
        if name in cats:
            dtype = pl.String()  # a category: judged as text, never averaged
        n_distinct = frame[name].n_unique()
        low = name.lower()
        if _WEIGHT_NAME.search(low):
            guessed_weight.append(name)
            flags.append(Flag(name, "weight-like", f"{name!r} looks like a survey weight: not a quasi-identifier. "
                              f"Declare it (weight: [{name}]) or, if it is an attribute, list it under quasi_identifiers."))
            continue
        if n > 1 and n_distinct <= 1:  # flag kind ``constant``
            keep.append(name)
            flags.append(Flag(name, "constant", f"{name!r} holds one value in all {n:,} rows: it tells nothing apart, "
                              f"so it is no quasi-identifier; released as is (keep). Declare its role to change that."))
            continue
        if _TARGET_NAME.search(low):
            if dtype.is_numeric() and n_distinct > 10:
                numeric.append(name)
                flags.append(Flag(name, "target-like", f"{name!r} looks like a target or sensitive attribute: not a "
                                  f"quasi-identifier; masked as numeric. Declare its role (numeric or sensitive: [{name}])."))
            else:
                guessed_sensitive.append(name)
                flags.append(Flag(name, "target-like", f"{name!r} looks like a target or sensitive attribute: not a "
                                  f"quasi-identifier. Declare it (sensitive: [{name}]) or list it under quasi_identifiers."))
            continue
        if _HOUSEHOLD_NAME.search(low) and "weight" not in low:
            guessed_ids.append(name)
            flags.append(Flag(name, "household-like", f"{name!r} looks like a household or entity id ({n_distinct:,} "
                              f"values in {n:,} rows): withheld. If it groups rows into households, declare it "
                              f"(household: {name}): k then counts households and it is released as fresh random ids."))
            continue
        unique = n > 2 and n_distinct == n
        counter = unique and dtype.is_integer() and _is_counter(frame[name])
        if _ID_NAME.search(low) or counter or (unique and not dtype.is_numeric()):
            guessed_ids.append(name)
            flags.append(Flag(name, "id-like", f"{name!r} looks like an identifier ({n_distinct:,} distinct values in "
                              f"{n:,} rows): withheld. Declare it (identifiers: [{name}]) or, to release it, under keep."))
            continue
        if n_distinct > 10 and n_distinct >= NEAR_UNIQUE * n:
            if dtype.is_numeric():
                numeric.append(name)
                flags.append(Flag(name, "near-unique", f"{name!r} has {n_distinct:,} distinct values in {n:,} rows: "
                                  "a continuous attribute, masked as numeric and not a quasi-identifier. Declare its role "
                                  f"(numeric, keep or identifiers: [{name}])."))
            else:
                guessed_ids.append(name)
                flags.append(Flag(name, "near-unique", f"{name!r} is near-unique ({n_distinct:,} distinct values in "
                                  f"{n:,} rows): withheld. Declare it (identifiers: [{name}]) or, to release it, under keep."))
            continue
        if dtype.is_numeric() and n_distinct > 10:
            numeric.append(name)
        if not dtype.is_float():  # near-unique columns were set aside above
            qis.append(name)
    for coarse, fine in _coarser_copies(frame, qis):
        qis.remove(coarse)
        flags.append(Flag(coarse, "coarser-copy", f"{coarse!r} is a coarser copy of {fine!r} (each value of {fine!r} "
                          f"goes with one value of {coarse!r}): no quasi-identifier of its own and not released, since "
                          f"beside a recoded {fine!r} it would give the finer values back. Declare its role "
                          f"(quasi_identifiers or keep: [{coarse}]) to release it."))
    if qis:
        flags.append(Flag(", ".join(qis), "guessed", "quasi-identifiers guessed from the data (text, boolean and "
                          "integer columns with few distinct values); declare quasi_identifiers to choose them."))
    return Roles(
        quasi_identifiers=tuple(qis),
        numeric=tuple(numeric),
        sensitive=tuple(guessed_sensitive),
        weight=tuple(guessed_weight),
        identifiers=tuple(guessed_ids),
        keep=tuple(keep),
        categorical=tuple(c for c in frame.columns if c in cats),
        guessed=True,
        flags=tuple(flags),
    )


MIN_MEAN_GROUP = 5
"""A column determines another only if its values hold this many rows on average (fewer: a chance
dependence of small data, as a near-unique column "determines" every other)."""


def _coarser_copies(frame: pl.DataFrame, candidates: Sequence[str]) -> list[tuple[str, str]]:
    """``(coarse, fine)`` pairs among ``candidates``: ``coarse`` has fewer distinct values than
    ``fine`` and is a function of it (one ``coarse`` value per ``fine`` value, missing a value of
    its own), ``fine`` holding at least :data:`MIN_MEAN_GROUP` rows per value on average. Each
    coarse column is named once, with its finest determining column."""
    n = frame.height
    distinct = {c: frame[c].n_unique() for c in candidates}
    out: list[tuple[str, str]] = []
    for coarse in candidates:
        finer = [f for f in candidates if f != coarse and distinct[coarse] < distinct[f] and n >= MIN_MEAN_GROUP * distinct[f]
                 and (f, coarse) not in out]
        for fine in sorted(finer, key=lambda f: -distinct[f]):
            pairs = frame.select(pl.struct(fine, coarse).n_unique()).item()
            if pairs == distinct[fine]:
                out.append((coarse, fine))
                break
    return out


def _is_counter(s: pl.Series) -> bool:
    """A row counter: distinct integers filling a range (1..n, 100001..100000+n)."""
    lo, hi = s.min(), s.max()
    return lo is not None and hi is not None and int(hi) - int(lo) + 1 == s.len()  # type: ignore[arg-type]


def flag_declared(frame: pl.DataFrame, roles: Roles) -> tuple[Flag, ...]:
    """Doubts about declared roles: a near-unique or weight-like released column, a weight among the quasi-identifiers."""
    n = frame.height
    out: list[Flag] = []
    released = set(roles.released(frame.columns))
    for name in frame.columns:
        if name not in released or name in roles.numeric:
            continue
        n_distinct = frame[name].n_unique()
        if name in roles.quasi_identifiers and _WEIGHT_NAME.search(name.lower()):
            out.append(Flag(name, "weight-like", f"quasi-identifier {name!r} looks like a survey weight; weights make "
                            "almost everyone unique. Move it to weight or identifiers."))
        elif n_distinct > 10 and n_distinct >= NEAR_UNIQUE * n and (
            not frame.schema[name].is_float() or name in roles.weight or name in roles.keep
        ):
            fix = "round it or move it to identifiers" if name in roles.weight else "move it to identifiers, mask it (numeric) or coarsen it"
            out.append(Flag(name, "near-unique", f"{name!r} is released unmasked with {n_distinct:,} distinct values "
                            f"in {n:,} rows: it can link records back to the input; {fix}."))
    return tuple(out)
