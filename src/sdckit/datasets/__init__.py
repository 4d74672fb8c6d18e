"""Datasets shipped inside sdckit.

* :func:`load_adult`: the UCI Adult (Census Income, 1994) data, 32,561 training rows and 16,281
  test rows, 15 columns, CC BY 4.0. Cite Becker, B. & Kohavi, R. (1996). *Adult* [Dataset]. UCI
  Machine Learning Repository. https://doi.org/10.24432/C5XW20
* :func:`make_households`: a synthetic household survey (regions, districts, household size),
  made for the purpose (targeted record swapping, household risk);
* :func:`load_adult_hierarchies`: generalisation hierarchies of its 8 quasi-identifiers (age bands,
  education levels, countries to regions and continents, ...), for recoding and planning.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from sdckit.datasets._adult import ADULT_COLUMNS, ADULT_NUMERIC, ADULT_QUASI_IDENTIFIERS, load_adult
from sdckit.datasets._households import make_households

if TYPE_CHECKING:
    from sdckit.anonymize import Hierarchy


def load_adult_hierarchies() -> dict[str, Hierarchy]:
    """The built-in Adult hierarchies, ``{column: Hierarchy}`` (see :func:`sdckit.anonymize.adult_hierarchies`)."""
    from sdckit.anonymize._hierarchy import adult_hierarchies  # lazy: start-up time (sklearn, numba)

    return adult_hierarchies()


__all__ = ["ADULT_COLUMNS", "ADULT_NUMERIC", "ADULT_QUASI_IDENTIFIERS", "load_adult", "load_adult_hierarchies", "make_households"]
