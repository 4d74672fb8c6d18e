"""Shared fixtures: a small sample of the bundled Adult data (CC BY 4.0, shipped in sdckit.datasets)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import polars as pl
import pytest

from sdckit.datasets import load_adult

FEATURES = ("age", "sex", "race", "marital-status")


@pytest.fixture(scope="session")
def adult() -> pl.DataFrame:
    return load_adult()


@pytest.fixture(scope="session")
def adult_rows(adult: pl.DataFrame) -> list[dict[str, Any]]:
    """The first 600 Adult users on a few features, as each device would hold them."""
    return list(adult.head(600).select(FEATURES).rows(named=True))


def wait_until(pred: Callable[[], Any], timeout: float = 30.0) -> None:
    """Poll ``pred`` every 50 ms until it holds; AssertionError after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if pred():
            return
        time.sleep(0.05)
    raise AssertionError("condition not reached in time")
