"""Datasets shipped inside sdckit.

* :func:`load_adult`: the UCI Adult (Census Income, 1994) data, 32,561 training rows and 16,281
  test rows, 15 columns, CC BY 4.0. Cite Becker, B. & Kohavi, R. (1996). *Adult* [Dataset]. UCI
  Machine Learning Repository. https://doi.org/10.24432/C5XW20
"""

from sdckit.datasets._adult import ADULT_COLUMNS, ADULT_NUMERIC, ADULT_QUASI_IDENTIFIERS, load_adult

__all__ = ["ADULT_COLUMNS", "ADULT_NUMERIC", "ADULT_QUASI_IDENTIFIERS", "load_adult"]
