"""The UCI Adult data, bundled as zstd-compressed Parquet."""

from __future__ import annotations

from importlib import resources
from typing import Literal

import polars as pl

from sdckit.errors import ParameterError

ADULT_COLUMNS: tuple[str, ...] = (
    "age",
    "workclass",
    "fnlwgt",
    "education",
    "education-num",
    "marital-status",
    "occupation",
    "relationship",
    "race",
    "sex",
    "capital-gain",
    "capital-loss",
    "hours-per-week",
    "native-country",
    "income",
)
"""The 15 standard column names, in the order of the UCI files."""

ADULT_QUASI_IDENTIFIERS: tuple[str, ...] = (
    "age",
    "workclass",
    "education",
    "marital-status",
    "occupation",
    "race",
    "sex",
    "native-country",
)
"""Columns an attacker can plausibly know about a person (the report's default)."""

ADULT_NUMERIC: tuple[str, ...] = ("age", "education-num", "capital-gain", "capital-loss", "hours-per-week")
"""Numeric columns masked by default (``fnlwgt`` is a survey weight, not an attribute)."""

_FILES = {"train": "adult.parquet", "test": "adult-test.parquet"}


def load_adult(split: Literal["train", "test"] = "train") -> pl.DataFrame:
    """Load the UCI Adult data as a polars DataFrame.

    Parameters
    ----------
    split : ``"train"`` (``adult.data``, 32,561 rows) or ``"test"`` (``adult.test``, 16,281 rows).

    Notes
    -----
    Converted from the raw UCI files byte-identical to the originals (MD5
    ``5d7c39d7b8804f071cdd1f2a7c460872`` and ``35238206dfdf7f1fe215bbb874adecdc``): fields split
    on ``,`` and stripped of surrounding whitespace, numeric columns as Int64. Missing values stay
    the literal string ``'?'`` (workclass 1,836, occupation 1,843, native-country 583 in the
    training split); exact duplicate rows are kept (they are different people); the test split's
    ``income`` keeps its trailing dot (``'<=50K.'``).

    References
    ----------
    .. [1] Becker, B. and Kohavi, R. (1996). Adult [Dataset]. UCI Machine Learning Repository.
       https://doi.org/10.24432/C5XW20 (CC BY 4.0).
    .. [2] Kohavi, R. (1996). Scaling up the accuracy of Naive-Bayes classifiers: a decision-tree
       hybrid. Proc. KDD-96, 202-207.

    Examples
    --------
    >>> adult = load_adult()
    >>> adult.shape
    (32561, 15)
    >>> int((adult["workclass"] == "?").sum())
    1836
    """
    if split not in _FILES:
        raise ParameterError(f"split={split!r} is not a split of Adult; use 'train' or 'test'.")
    ref = resources.files("sdckit.datasets") / "data" / _FILES[split]
    with resources.as_file(ref) as path:
        return pl.read_parquet(path)
