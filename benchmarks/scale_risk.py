"""Per-record risk on a distributed frame: polars in memory against Dask, with the rows collected.

n rows x 6 integer keys (supports 2..12, 2 % of the cells missing in two of them: 4 missingness
patterns), a sampling weight and a sensitive column, written as 8 Parquet files. Measured: the
wildcard group sizes, the individual risk (wildcard reading, weighted) and l-diversity; in memory
(polars read + the numpy result) and on Dask (threads, 2 workers; the per-record columns written
back to Parquet by the workers). The driver rows are sdckit's ``driver_rows()``, which the tests
check against an instrumented scheduler; every engine gives the in-memory result (checked here
on the sum of each column).

Run: ``cd benchmarks && ../.venv/bin/python scale_risk.py --rows 1000000``.
"""

from __future__ import annotations

import argparse
import tempfile
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from sdckit._scale import driver_rows
from sdckit.risk import (
    individual_risk,
    l_diversity,
    wildcard_group_sizes,
    with_individual_risk,
    with_wildcard_sizes,
)

KEYS = [f"k{j}" for j in range(6)]
SUPPORTS = (2, 3, 5, 7, 9, 12)


def write(path: Path, n: int, *, files: int = 8, seed: int = 20261202) -> None:
    rng = np.random.default_rng(seed)
    cols: dict[str, Any] = {"id": np.arange(n)}
    for j, (k, s) in enumerate(zip(KEYS, SUPPORTS, strict=True)):
        values = rng.integers(0, s, n).astype(float)
        if j >= 4:
            values[rng.random(n) < 0.02] = np.nan
        cols[k] = values
    cols["w"] = 1.0 + rng.gamma(2.0, 20.0, n)
    cols["diagnosis"] = rng.integers(0, 6, n)
    df = pl.DataFrame(cols).with_columns(pl.col("k4", "k5").fill_nan(None))
    path.mkdir(parents=True, exist_ok=True)
    step = -(-n // files)
    for i in range(files):
        df.slice(i * step, step).write_parquet(path / f"part-{i}.parquet")


def timed(fn: Callable[[], Any]) -> tuple[float, Any, int]:
    before = driver_rows()
    t0 = time.perf_counter()
    out = fn()
    return time.perf_counter() - t0, out, driver_rows() - before


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=1_000_000)
    args = ap.parse_args()
    warnings.filterwarnings("ignore", category=FutureWarning)
    import dask
    import dask.dataframe as dd

    dask.config.set(scheduler="threads", num_workers=2)
    with tempfile.TemporaryDirectory() as tmp:
        data = Path(tmp) / "keys"
        write(data, args.rows)
        glob = str(data / "*.parquet")
        print(f"{args.rows:,} rows x {len(KEYS)} keys, 8 Parquet files")
        print("| measure | polars (in memory) | Dask (threads, 2) | rows reaching the driver (Dask) |")

        def mem_wild() -> float:
            return float(wildcard_group_sizes(pl.read_parquet(glob), KEYS).sum())

        def dask_wild() -> float:
            out = with_wildcard_sizes(dd.read_parquet(glob), KEYS)
            out.to_parquet(Path(tmp) / "wild")
            return float(dd.read_parquet(Path(tmp) / "wild")["wildcard_size"].sum().compute())

        def mem_risk() -> float:
            return individual_risk(pl.read_parquet(glob), KEYS, weights="w", missing="wildcard").expected_reidentifications

        def dask_risk() -> float:
            out = with_individual_risk(dd.read_parquet(glob), KEYS, weights="w", missing="wildcard")
            out.to_parquet(Path(tmp) / "risk")
            return float(dd.read_parquet(Path(tmp) / "risk")["risk_individual"].sum().compute())

        def mem_ld() -> float:
            return l_diversity(pl.read_parquet(glob), KEYS, ["diagnosis"]).not_diverse(3)

        def dask_ld() -> float:
            return l_diversity(dd.read_parquet(glob), KEYS, ["diagnosis"]).not_diverse(3)

        for name, mem, dist, collected in [
            ("wildcard group sizes (written)", mem_wild, dask_wild, 0),
            ("individual risk, wildcard, weighted (written)", mem_risk, dask_risk, 0),
            ("l-diversity (distinct, entropy, recursive)", mem_ld, dask_ld, 0),
        ]:
            t_mem, v_mem, _ = timed(mem)
            t_dask, v_dask, rows = timed(dist)
            same = np.isclose(v_mem, v_dask, rtol=1e-9)
            print(f"| {name} | {t_mem:.1f} s | {t_dask:.1f} s ({t_dask / t_mem:.2f}x) | {rows - collected:,} "
                  f"| {'same' if same else f'DIFFERENT {v_mem} {v_dask}'}")


if __name__ == "__main__":
    main()
