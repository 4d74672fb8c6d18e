"""Risk and masking where the rows live: polars, DuckDB, Dask and Spark (local) on the same files.

Two jobs, each read from the same Parquet files:

1. the exposure curve (group-size histogram) of ``--rows`` rows x 8 categorical keys;
2. blocked MDAV (k = 3) on ``--mdav-rows`` rows x 5 numeric columns in blocks of about
   ``--block-rows`` rows (a block-key column), the release written back to Parquet.

polars is the baseline of the ratios (time / polars time). DuckDB counts in SQL but has no
partition-map API, so for MDAV sdckit collects the relation and says so (an SdcWarning). Dask
(threads, 2 workers) and Spark (``local[2]``) run MDAV block by block and write the release from
the workers. "rows at driver" counts what comes back to this process: the size histogram for
the exposure, the moment rows (one per partition) and block sizes for MDAV; never a data row.

Run: ``cd benchmarks && ../.venv/bin/python scale_frames.py`` (defaults 10,000,000 rows each);
``--rows``/``--mdav-rows`` smaller on a busy machine: the script prints what it ran.
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from _harness import emit
from sdckit._scale import driver_rows, local_spark
from sdckit.microagg import Microaggregation, distributed_microaggregate
from sdckit.risk import exposure_curve

SUPPORTS = (2, 3, 4, 5, 6, 7, 8, 10)
KEYS = [f"q{j}" for j in range(len(SUPPORTS))]
NUMERIC = [f"x{j}" for j in range(5)]
K = 3


def write_keys(path: Path, n: int, *, seed: int = 20261201, files: int = 8) -> None:
    rng = np.random.default_rng(seed)
    path.mkdir(parents=True)
    per = -(-n // files)
    for f in range(files):
        m = min(per, n - f * per)
        cols = {}
        for j, s in enumerate(SUPPORTS):
            labels = np.array([f"v{j}_{i}" for i in range(s)])
            cols[f"q{j}"] = labels[rng.integers(0, s, m)]
        pl.DataFrame(cols).write_parquet(path / f"part-{f:03d}.parquet")


def write_numeric(path: Path, n: int, block_rows: int, *, seed: int = 20261202, files: int = 8) -> None:
    rng = np.random.default_rng(seed)
    path.mkdir(parents=True)
    n_blocks = max(1, n // block_rows)
    per = -(-n // files)
    start = 0
    for f in range(files):
        m = min(per, n - f * per)
        cov = np.full((5, 5), 0.5) + 0.5 * np.eye(5)
        x = rng.multivariate_normal(np.zeros(5), cov, m) * [1, 10, 100, 1000, 5] + [0, 50, 500, 1e4, 20]
        frame = pl.DataFrame({"id": np.arange(start, start + m), "block": rng.integers(0, n_blocks, m)})
        frame = frame.with_columns([pl.Series(c, x[:, j]) for j, c in enumerate(NUMERIC)])
        frame.write_parquet(path / f"part-{f:03d}.parquet")
        start += m


def timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    t0 = time.perf_counter()
    out = fn()
    return time.perf_counter() - t0, out


def spark_session() -> Any:
    if shutil.which("java") is None:
        return None
    try:
        return local_spark("sdckit-bench", cores=2, driver_memory="6g")
    except ImportError:
        return None


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=10_000_000, help="rows of the exposure job")
    ap.add_argument("--mdav-rows", type=int, default=10_000_000, help="rows of the blocked-MDAV job")
    ap.add_argument("--block-rows", type=int, default=2_000, help="rows per block (block key)")
    ap.add_argument("--engines", default="polars,duckdb,dask,spark")
    ap.add_argument("--jobs", default="exposure,mdav", help="which jobs to run")
    args = ap.parse_args()
    engines = args.engines.split(",")
    warnings.simplefilter("ignore")
    import dask
    import dask.dataframe as dd
    import duckdb

    dask.config.set(scheduler="threads", num_workers=2)
    spark = spark_session() if "spark" in engines else None
    if "spark" in engines and spark is None:
        print("spark: not run (pyspark or Java missing)")
    tmp = Path(tempfile.mkdtemp(prefix="sdckit-scale-"))
    try:
        keys, num = tmp / "keys", tmp / "numeric"
        jobs = args.jobs.split(",")
        if "exposure" in jobs:
            write_keys(keys, args.rows)
        if "mdav" in jobs:
            write_numeric(num, args.mdav_rows, args.block_rows)
        glob_keys, glob_num = str(keys / "*.parquet"), str(num / "*.parquet")
        n_blocks = max(1, args.mdav_rows // args.block_rows)
        ran = []
        if "exposure" in jobs:
            ran.append(f"exposure: {args.rows:,} rows x {len(KEYS)} keys")
        if "mdav" in jobs:
            ran.append(f"blocked MDAV k={K}: {args.mdav_rows:,} rows x {len(NUMERIC)} numeric, {n_blocks:,} blocks "
                       f"of ~{args.block_rows:,} rows")
        print(f"ran {'; '.join(ran)}; engines {', '.join(engines)}; machine {os.cpu_count()} cores (shared)",
              flush=True)

        # -- 1. exposure
        base = None
        ref = None
        for engine in engines if "exposure" in jobs else []:
            if engine == "spark" and spark is None:
                continue
            if engine == "polars":
                secs, curve = timed(lambda: exposure_curve(pl.read_parquet(glob_keys), KEYS))
            elif engine == "duckdb":
                secs, curve = timed(lambda: exposure_curve(duckdb.read_parquet(glob_keys), KEYS))
            elif engine == "dask":
                secs, curve = timed(lambda: exposure_curve(dd.read_parquet(glob_keys), KEYS))
            else:
                secs, curve = timed(lambda: exposure_curve(spark.read.parquet(str(keys)), KEYS))
            ref = curve if ref is None else ref
            same = curve.to_dict() == ref.to_dict()
            base = secs if engine == "polars" else base
            emit(f"scale exposure {args.rows:.0e}x8 {engine}", secs,
                 ratio_vs_polars=f"{secs / base:.2f}" if base else "n/a",
                 rows_at_driver=len(curve.sizes) if engine != "polars" else "all (eager)",
                 same_as_polars=same)

        # -- 2. blocked MDAV, release written to Parquet
        if "mdav" not in jobs:
            return
        mic = Microaggregation(k=K, method="mdav_blocked", blocks=["block"], columns=NUMERIC)
        Microaggregation(k=K, method="mdav_blocked", blocks=["block"], columns=NUMERIC).fit_transform(
            pl.read_parquet(glob_num).filter(pl.col("block") < 2)
        )  # compile the kernel outside the timings
        base = None
        check: dict[str, float] = {}
        for engine in engines:
            if engine == "spark" and spark is None:
                continue
            out = tmp / f"release-{engine}"
            before = driver_rows()
            if engine == "polars":
                secs, _ = timed(lambda out=out: mic.fit_transform(pl.read_parquet(glob_num)).write_parquet(out))
                at_driver = "all (in memory)"
            elif engine == "duckdb":
                secs, _ = timed(lambda out=out: mic.fit_transform(duckdb.read_parquet(glob_num)).write_parquet(str(out)))
                at_driver = "all (collected, with a warning)"
            elif engine == "dask":
                secs, _ = timed(lambda out=out: distributed_microaggregate(
                    dd.read_parquet(glob_num), k=K, blocks=["block"], columns=NUMERIC).to_parquet(str(out)))
                at_driver = str(driver_rows() - before)
            else:
                secs, _ = timed(lambda out=out: distributed_microaggregate(
                    spark.read.parquet(str(num)), k=K, blocks=["block"], columns=NUMERIC
                ).write.mode("overwrite").parquet(str(out)))
                at_driver = str(driver_rows() - before)
            base = secs if engine == "polars" else base
            release = pl.scan_parquet(str(out / "*.parquet") if out.is_dir() else str(out))
            check[engine] = float(release.select(pl.col("x3").sum()).collect().item())
            emit(f"scale blocked MDAV {args.mdav_rows:.0e}x5 {engine}", secs,
                 ratio_vs_polars=f"{secs / base:.2f}" if base else "n/a", rows_at_driver=at_driver,
                 same_sum_as_polars=abs(check[engine] - check.get("polars", check[engine]))
                 <= 1e-9 * abs(check[engine]))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
        if spark is not None:
            spark.stop()


if __name__ == "__main__":
    main()
