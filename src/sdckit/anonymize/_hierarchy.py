"""Generalisation hierarchies: one row per original value, one column per level (ARX's format)."""

from __future__ import annotations

import csv
import io
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from sdckit.errors import FileNotFoundInputError, InputError, ParameterError, UnreadableInputError

BUILTIN_PREFIX = "adult:"
"""A hierarchy named ``"adult:<column>"`` is the built-in one of that Adult column."""

_BUILTIN = resources.files("sdckit") / "datasets" / "hierarchies"
"""The built-in hierarchies' resource folder, one ``<dataset>_<column>.csv`` each (read as package
data through ``sdckit``: the datasets package, a layer above, is not imported)."""

ADULT_HIERARCHY_COLUMNS: tuple[str, ...] = tuple(
    sorted(f.name.removeprefix("adult_").removesuffix(".csv") for f in _BUILTIN.iterdir() if f.name.startswith("adult_") and f.name.endswith(".csv"))
)
"""The Adult columns with a built-in hierarchy (the 8 quasi-identifiers), listed from the resource folder."""


@dataclass(frozen=True, eq=False)
class Hierarchy:
    """A generalisation hierarchy of one column: level 0 is the value itself, the last the coarsest.

    ``table[value]`` is the tuple of the value's labels at levels 1..L (every row has L labels).
    Values are matched by their text (``30`` and ``"30"`` are the same value), so one table serves
    integer and text columns.

    Examples
    --------
    >>> h = Hierarchy.from_rows([["17", "[15, 20)", "*"], ["23", "[20, 25)", "*"]])
    >>> h.n_levels, h.map([17, 23], 1)
    (2, ['[15, 20)', '[20, 25)'])
    """

    table: Mapping[str, tuple[str, ...]]
    """Original value (as text) -> labels at levels 1..n_levels."""
    name: str = "hierarchy"
    """Where it came from (a path, or ``adult:<column>``), for messages."""

    @property
    def n_levels(self) -> int:
        """Number of levels above the raw values (the top level is ``n_levels``)."""
        return len(next(iter(self.table.values()))) if self.table else 0

    @classmethod
    def from_rows(cls, rows: Sequence[Sequence[Any]], *, name: str = "hierarchy") -> Hierarchy:
        """From rows ``[value, level1, level2, ...]``, all of the same length (>= 2)."""
        table: dict[str, tuple[str, ...]] = {}
        width = None
        for i, row in enumerate(rows):
            cells = [str(c).strip() for c in row]
            if not cells or all(c == "" for c in cells):
                continue
            if len(cells) < 2:
                raise InputError(
                    f"{name}: row {i + 1} has only the value {cells[0]!r}; a hierarchy row is the value "
                    "followed by its label at each level, e.g. 34;[30, 40);*."
                )
            if width is None:
                width = len(cells)
            elif len(cells) != width:
                raise InputError(
                    f"{name}: row {i + 1} has {len(cells)} fields but the first row has {width}; every "
                    "value needs a label at every level."
                )
            if cells[0] in table:
                raise InputError(f"{name}: value {cells[0]!r} is listed twice; list each value once.")
            table[cells[0]] = tuple(cells[1:])
        if not table:
            raise InputError(f"{name}: the hierarchy has no rows.")
        return cls(table=table, name=name)

    @classmethod
    def from_csv(cls, path: str | os.PathLike[str]) -> Hierarchy:
        """Read an ARX-style hierarchy file: no header, ``;`` or ``,`` between fields."""
        p = Path(path)
        if not p.exists():
            raise FileNotFoundInputError(str(path))
        try:
            text = p.read_text(encoding="utf-8-sig")
        except (OSError, UnicodeDecodeError) as err:
            raise UnreadableInputError(f"cannot read the hierarchy {str(path)!r}: {err}.") from None
        return cls.from_text(text, name=str(path))

    @classmethod
    def from_text(cls, text: str, *, name: str = "hierarchy") -> Hierarchy:
        """Parse the text of a hierarchy file (see :meth:`from_csv`)."""
        first = next((line for line in text.splitlines() if line.strip()), "")
        sep = ";" if ";" in first else ","
        return cls.from_rows(list(csv.reader(io.StringIO(text), delimiter=sep)), name=name)

    def check_level(self, level: int, column: str) -> int:
        """``level`` checked against 0..n_levels."""
        if isinstance(level, bool) or not isinstance(level, int) or not 0 <= level <= self.n_levels:
            raise ParameterError(
                f"column {column!r}: level={level!r}; the hierarchy {self.name} has levels 0 (raw) to "
                f"{self.n_levels}."
            )
        return level

    def label(self, value: Any, level: int, column: str = "?") -> Any:
        """The label of one value at ``level`` (level 0: the value itself; None stays None)."""
        if value is None or level == 0:
            return value
        key = _text(value)
        if key not in self.table:
            raise InputError(
                f"column {column!r}: value {key!r} is not in the hierarchy {self.name}; add a row for it "
                "(the value, then its label at each level)."
            )
        return self.table[key][level - 1]

    def map(self, values: Sequence[Any], level: int, column: str = "?") -> list[Any]:
        """Labels of ``values`` at ``level``."""
        return [self.label(v, level, column) for v in values]


def _text(value: Any) -> str:
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value).strip()


def adult_hierarchies() -> dict[str, Hierarchy]:
    """The built-in hierarchies of the bundled Adult data's 8 quasi-identifiers.

    * ``age``: 5-, 10- and 20-year bands (``[30, 35)``, ``[30, 40)``, ``[20, 40)``), then ``*``;
    * ``education``: Primary / Secondary / HS-grad / College / Bachelors / Graduate, then
      Low / Medium / High, then ``*``;
    * ``native-country``: regions (e.g. Western-Europe, Caribbean), then continents, then ``*``
      (``South``, as the UCI file spells it, is taken to be South Korea: East-Asia);
    * ``workclass``, ``marital-status``, ``occupation``: one grouping level, then ``*``;
    * ``race``: White / Non-white, then ``*``; ``sex``: ``*``.

    The missing marker ``?`` stays ``?`` below the top level.

    Examples
    --------
    >>> h = adult_hierarchies()
    >>> h["native-country"].label("Cuba", 2), h["age"].label(37, 2)
    ('Americas', '[30, 40)')
    """
    return {c: builtin_hierarchy(BUILTIN_PREFIX + c) for c in ADULT_HIERARCHY_COLUMNS}


def builtin_hierarchy(name: str) -> Hierarchy:
    """A built-in hierarchy by name, e.g. ``"adult:age"``."""
    column = name.removeprefix(BUILTIN_PREFIX)
    if not name.startswith(BUILTIN_PREFIX) or column not in ADULT_HIERARCHY_COLUMNS:
        known = ", ".join(BUILTIN_PREFIX + c for c in ADULT_HIERARCHY_COLUMNS)
        raise ParameterError(f"no built-in hierarchy {name!r}; the built-in ones are {known}.")
    ref = _BUILTIN / f"adult_{column}.csv"
    return Hierarchy.from_text(ref.read_text(encoding="utf-8"), name=name)


def as_hierarchy(spec: Any, column: str) -> Hierarchy:
    """A :class:`Hierarchy` from one, a built-in name (``"adult:age"``), a CSV path, or a mapping
    ``{value: [level1, level2, ...]}`` (JSON-able, as in a pipeline file)."""
    if isinstance(spec, Hierarchy):
        return spec
    if isinstance(spec, str) and spec.startswith(BUILTIN_PREFIX):
        return builtin_hierarchy(spec)
    if isinstance(spec, (str, os.PathLike)):
        return Hierarchy.from_csv(spec)
    if isinstance(spec, Mapping):
        rows = [[k, *(v if isinstance(v, (list, tuple)) else [v])] for k, v in spec.items()]
        return Hierarchy.from_rows(rows, name=f"of column {column!r}")
    raise ParameterError(
        f"column {column!r}: hierarchy={spec!r}; give a CSV path, a built-in name such as 'adult:age', "
        "or a mapping {value: [level1, level2, ...]}."
    )
