"""Shared fixtures: a small sample of the bundled Adult data (CC BY 4.0, shipped in sdckit.datasets)."""

from __future__ import annotations

import os
import secrets
import time
from collections.abc import Callable, Iterator
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


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[str]:
    """A PostgreSQL server URL: ``SDCKIT_TEST_POSTGRES`` (what ``.ci/run`` exports), else a
    throwaway cluster started here with ``initdb``/``pg_ctl`` when the server binaries are
    installed (so ``make test`` alone covers PostgreSQL), else the test is skipped saying why."""
    url = os.environ.get("SDCKIT_TEST_POSTGRES", "")
    if url:
        yield url
        return
    pytest.importorskip("psycopg", reason="psycopg is not installed (pip install sdckit[protocol])")
    from sdckit.protocol.services._pgcluster import TempPostgres, find_initdb

    if find_initdb() is None:
        pytest.skip(
            "no PostgreSQL: set SDCKIT_TEST_POSTGRES=postgresql://... or install the server "
            "(Debian: apt-get install postgresql) for a throwaway cluster"
        )
    with TempPostgres() as started:
        yield started


@pytest.fixture
def postgres_url(postgres_server: str) -> Iterator[str]:
    """A fresh, empty database on :func:`postgres_server` for one test (dropped after it)."""
    from urllib.parse import urlsplit

    import psycopg

    name = f"sdckit_t_{secrets.token_hex(6)}"
    with psycopg.connect(postgres_server, autocommit=True) as con:
        con.execute(f'CREATE DATABASE "{name}"')
    yield urlsplit(postgres_server)._replace(path=f"/{name}").geturl()
    with psycopg.connect(postgres_server, autocommit=True) as con:
        con.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
