"""Shared helpers: sdcMicro's testdata (tests/data, GPL-2 package data; see its README) and brute force."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pytest

DATA = Path(__file__).resolve().parents[1] / "data"
KEYS5 = ["urbrur", "roof", "walls", "water", "electcon"]
KEYS7 = [*KEYS5, "relat", "sex"]


@pytest.fixture(scope="session")
def testdata() -> pl.DataFrame:
    return pl.read_csv(DATA / "sdcmicro_testdata.csv")


def brute_wildcard_sizes(rows: list[tuple[Any, ...]]) -> np.ndarray:
    """For each row, the rows equal to it or missing (None) in every key: plain Python, O(n^2)."""
    out = []
    for r in rows:
        c = 0
        for s in rows:
            if all(a is None or b is None or a == b for a, b in zip(r, s, strict=True)):
                c += 1
        out.append(c)
    return np.array(out)


def brute_min_size(frame: pl.DataFrame, keys: list[str]) -> int:
    """Smallest wildcard group, counting by sorting-free brute force over distinct patterns."""
    rows = [tuple(r) for r in frame.select(keys).iter_rows()]
    distinct: dict[tuple[Any, ...], int] = {}
    for r in rows:
        distinct[r] = distinct.get(r, 0) + 1
    items = list(distinct.items())
    best = len(rows)
    for r, _ in items:
        c = sum(
            w for s, w in items if all(a is None or b is None or a == b for a, b in zip(r, s, strict=True))
        )
        best = min(best, c)
    return best


class Brute:
    """The brute-force checks, handed to tests as a fixture (importlib mode has no conftest import)."""

    keys5 = KEYS5
    keys7 = KEYS7
    sizes = staticmethod(brute_wildcard_sizes)
    min_size = staticmethod(brute_min_size)


@pytest.fixture(scope="session")
def brute() -> Brute:
    return Brute()
