"""The release pipeline at census scale: recode, local suppression, measure, on polars, Dask and Spark.

Synthetic data from Adult's marginals and pairs: the 8 quasi-identifiers drawn as a chain of
pairwise conditionals (age from its marginal, then each next column from its conditional on the
previous one, both counted on the bundled Adult data), so every single column has Adult's
marginal and each neighbouring pair Adult's joint. Generated in chunks of 10^6 rows (O(n) time
and memory per chunk) and written once to temporary Parquet files, which every engine reads.

The pipeline (``engine: dask`` or ``spark`` reading the files; ``polars``: the files read into
one DataFrame in memory and the same steps run on it): ``recode`` (age in 20-year
bands, education in 6 levels, occupation in groups, native-country in regions: adult.yaml's
recoding with the built-in hierarchies), ``local_suppression`` (decoys, k = 5), the release
shuffled and written (Parquet), the written release measured (k-anonymity of identical rows); ``polars-full`` runs
``run_pipeline`` in memory instead, with the whole release check (much slower: consistent counts,
wildcard sizes, individual risk, the file re-read and re-measured).
Per run: wall time, peak driver memory (this Python process's peak RSS growth; for Spark also the
driver JVM's: in ``local[2]`` mode the driver JVM runs the executors too, so its figure is the
whole local cluster's heap), rows at the driver (sdckit's ``driver_rows()`` and an independent
counter: a counting Dask scheduler; Spark's collect calls patched, as in tests/scale/conftest.py).

Run: ``cd benchmarks && python scale_pipeline.py --rows 100000,1000000 --engines polars,dask,spark``
(default ``--rows 100000,1000000,10000000``).
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
import threading
import time
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from _harness import emit
from sdckit._scale import driver_rows, local_spark
from sdckit.datasets import load_adult

CHAIN = ["age", "marital-status", "sex", "occupation", "workclass", "education", "race", "native-country"]
"""The quasi-identifiers in the order of the chain of pairwise conditionals."""
K = 5
CHUNK = 1_000_000
RECODE = {
    "age": {"hierarchy": "adult:age", "level": 3},
    "education": {"hierarchy": "adult:education", "level": 1},
    "occupation": {"hierarchy": "adult:occupation", "level": 1},
    "native-country": {"hierarchy": "adult:native-country", "level": 1},
}


def chain_tables(adult: pl.DataFrame) -> tuple[list[np.ndarray], np.ndarray, list[np.ndarray]]:
    """Per column its values; the first column's marginal; per next column the cumulative
    conditional P(x_j <= v | x_{j-1} = u) as a (values of u, values of x_j) table."""
    values = [np.asarray(adult[c].drop_nulls().unique().sort().to_numpy()) for c in CHAIN]
    codes = [np.searchsorted(values[j], adult[c].to_numpy()) for j, c in enumerate(CHAIN)]
    first = np.bincount(codes[0], minlength=len(values[0])).astype(float)
    cdfs = []
    for j in range(1, len(CHAIN)):
        joint = np.zeros((len(values[j - 1]), len(values[j])))
        np.add.at(joint, (codes[j - 1], codes[j]), 1.0)
        cdfs.append(np.cumsum(joint / joint.sum(axis=1, keepdims=True), axis=1))
    return values, np.cumsum(first / first.sum()), cdfs


def write_synthetic(folder: Path, n: int, *, seed: int = 20261202) -> None:
    """n rows from the chain, in Parquet files of at most CHUNK rows (never more than a chunk in memory)."""
    values, first, cdfs = chain_tables(load_adult())
    rng = np.random.default_rng(seed)
    folder.mkdir(parents=True)
    for f, start in enumerate(range(0, n, CHUNK)):
        m = min(CHUNK, n - start)
        code = np.minimum(np.searchsorted(first, rng.random(m), side="right"), len(first) - 1)
        cols = {CHAIN[0]: values[0][code]}
        for j in range(1, len(CHAIN)):
            cdf = cdfs[j - 1]
            u = rng.random(m)
            nxt = np.empty(m, dtype=np.int64)
            for a in np.unique(code):  # inverse CDF of the conditional, one previous value at a time
                rows = np.flatnonzero(code == a)
                nxt[rows] = np.minimum(np.searchsorted(cdf[a], u[rows], side="right"), cdf.shape[1] - 1)
            code = nxt
            cols[CHAIN[j]] = values[j][code]
        pl.DataFrame(cols).with_columns(pl.col("age").cast(pl.Int64)).write_parquet(folder / f"part-{f:04d}.parquet")


class Peak:
    """Peak RSS growth of this process (sampled every 50 ms, beside ru_maxrss) while active."""

    def __init__(self) -> None:
        self.peak = 0
        self._stop = threading.Event()

    @staticmethod
    def rss() -> int:
        with open("/proc/self/statm") as fh:
            return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")

    def __enter__(self) -> Peak:
        self.base = self.rss()
        self.peak = self.base

        def sample() -> None:
            while not self._stop.wait(0.05):
                self.peak = max(self.peak, self.rss())

        self._thread = threading.Thread(target=sample, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self.peak = max(self.peak, self.rss())

    @property
    def growth_mb(self) -> float:
        return (self.peak - self.base) / 2**20


def jvm_heap_mb(spark: Any) -> float:
    """The driver JVM's live heap after a full GC, in MB (in local mode the driver JVM also runs the
    executors: this is the whole local cluster's heap)."""
    jvm = spark.sparkContext._jvm
    jvm.java.lang.System.gc()
    time.sleep(0.5)
    rt = jvm.java.lang.Runtime.getRuntime()
    return (rt.totalMemory() - rt.freeMemory()) / 2**20


@contextmanager
def counted(engine: str) -> Iterator[list[int]]:
    """Rows handed to the driver, counted at the engine's boundary (independent of sdckit)."""
    box = [0]

    def rows_in(value: object) -> int:
        if isinstance(value, (list, tuple)):
            return sum(rows_in(v) for v in value)
        if isinstance(value, dict):
            return sum(rows_in(v) for v in value.values())
        if hasattr(value, "num_rows"):  # a pyarrow RecordBatch or Table
            return int(value.num_rows)
        shape = getattr(value, "shape", None)
        return int(shape[0]) if shape is not None and len(shape) else 1

    if engine == "dask":
        import dask
        from dask.threaded import get as threaded_get

        def get(dsk: Any, keys: Any, **kw: Any) -> Any:
            out = threaded_get(dsk, keys, num_workers=2, **kw)
            box[0] += rows_in(out)
            return out

        with dask.config.set(scheduler=get):
            yield box
        return
    if engine == "spark":
        from pyspark.sql import DataFrame as SparkFrame

        try:  # Spark 4: the classic implementation overrides the abstract DataFrame's methods
            from pyspark.sql.classic.dataframe import DataFrame as ClassicFrame

            classes = list(ClassicFrame.__mro__)
        except ImportError:
            classes = list(SparkFrame.__mro__)
        depth = [0]
        patched = []
        for cls in classes:
            for name in ("collect", "toPandas", "toLocalIterator", "take", "tail", "_collect_as_arrow"):
                if name not in vars(cls):
                    continue
                original = vars(cls)[name]

                def wrap(self: Any, *a: Any, _o: Callable[..., Any] = original, **kw: Any) -> Any:
                    depth[0] += 1
                    try:
                        out = _o(self, *a, **kw)
                    finally:
                        depth[0] -= 1
                    if depth[0] == 0:  # an outer call only (toPandas calling collect counts once)
                        box[0] += rows_in(out)
                    return out

                patched.append((cls, name, original))
                setattr(cls, name, wrap)
        try:
            yield box
        finally:
            for cls, name, original in patched:
                setattr(cls, name, original)
        return
    yield box


PARTITIONS: list[int | None] = [None]


def config(data_dir: Path, out: Path, engine: str) -> Any:
    from sdckit.pipeline import parse_config

    return parse_config({
        "input": str(data_dir), "engine": engine, "partitions": PARTITIONS[0], "quasi_identifiers": CHAIN, "k": K, "budget": 0.05,
        "steps": [{"recode": {"rules": RECODE}}, {"local_suppression": {"k": K}}],
        "output": {"data": str(out / f"release-{engine}.parquet"), "report": None},
    })


def run_polars(data_dir: Path, out: Path) -> dict[str, Any]:
    """In memory: the files read into one polars DataFrame, then the same steps and measure as the
    engines (``run_distributed`` on its ``.lazy()`` view: one process, every row in its memory)."""
    from sdckit.pipeline import run_distributed, write_distributed

    frame = pl.read_parquet(str(data_dir / "*.parquet"))
    result = run_distributed(config(data_dir, out, "polars"), frame.lazy())
    written = write_distributed(result)
    sup = next(s for s in result.steps if s.kind == "local_suppression")
    m = written.measure
    return {"k_anonymity": m["k_anonymity"], "exposure_at_k": m["exposure_at_k"], "cells": sup.details["cells_changed"],
            "passes": sup.details["n_passes"], "groups": m["n_groups"]}


def run_polars_full(data_dir: Path, out: Path) -> dict[str, Any]:
    """In memory, the whole release check: ``run_pipeline`` + ``write_outputs`` (re-read and re-measured)."""
    from sdckit.pipeline import parse_config, run_pipeline, write_outputs

    frame_path = out / "input.parquet"
    pl.scan_parquet(str(data_dir / "*.parquet")).sink_parquet(frame_path)
    cfg = parse_config({
        "input": str(frame_path), "quasi_identifiers": CHAIN, "k": K, "budget": 0.05,
        "steps": [{"recode": {"rules": RECODE}}, {"local_suppression": {"k": K}}],
        "output": {"data": str(out / "release-polars.parquet"), "report": None},
    })
    result = run_pipeline(cfg, report=False)
    write_outputs(result)
    m = result.release_measure
    assert m is not None
    sup = next(s for s in result.steps if s.kind == "local_suppression")
    return {"k_anonymity": m.k_anonymity, "exposure_at_k": m.exposure_at_k, "cells": sup.details["cells_changed"],
            "passes": "-"}


RUNNERS = {"polars": run_polars, "polars-full": run_polars_full}


def run_engine(data_dir: Path, out: Path, engine: str) -> dict[str, Any]:
    from sdckit.pipeline import run_distributed, write_distributed

    result = run_distributed(config(data_dir, out, engine))
    written = write_distributed(result)
    sup = next(s for s in result.steps if s.kind == "local_suppression")
    m = written.measure
    return {"k_anonymity": m["k_anonymity"], "exposure_at_k": m["exposure_at_k"], "cells": sup.details["cells_changed"],
            "passes": sup.details["n_passes"], "parts": len(written.files), "groups": m["n_groups"]}


def runner(engine: str) -> Callable[[Path, Path], dict[str, Any]]:
    return RUNNERS.get(engine) or (lambda d, o: run_engine(d, o, engine))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", default="100000,1000000,10000000", help="comma-separated row counts")
    ap.add_argument("--engines", default="polars,dask,spark",
                    help="polars (in memory, the same steps), dask, spark; polars-full: run_pipeline's whole check")
    ap.add_argument("--partitions", type=int, default=None, help="repartition the input (default: one per file)")
    args = ap.parse_args()
    engines = args.engines.split(",")
    PARTITIONS[0] = args.partitions
    warnings.simplefilter("ignore")
    import dask

    dask.config.set(scheduler="threads", num_workers=2)
    spark = None
    if "spark" in engines:
        if shutil.which("java") is None:
            print("spark: not run (Java missing)")
            engines.remove("spark")
        else:
            spark = local_spark("sdckit-bench", cores=2, driver_memory="4g")
    tmp = Path(tempfile.mkdtemp(prefix="sdckit-scale-pipeline-"))
    try:
        warm = tmp / "warm-up"
        write_synthetic(warm, 5_000)
        for engine in engines:  # imports, compiled kernels, the JVM's classes: outside the figures
            (tmp / f"warm-{engine}").mkdir()
            runner(engine)(warm, tmp / f"warm-{engine}")
        for n in [int(r) for r in args.rows.split(",")]:
            data_dir = tmp / f"synthetic-{n}"
            t0 = time.perf_counter()
            write_synthetic(data_dir, n)
            size_mb = sum(p.stat().st_size for p in data_dir.glob("*.parquet")) / 2**20
            arrow_mb = pl.scan_parquet(str(data_dir / "*.parquet")).head(100_000).collect().estimated_size() / 2**20 * n / min(n, 100_000)
            print(f"{n:,} rows x {len(CHAIN)} quasi-identifiers generated in {time.perf_counter() - t0:.1f} s: "
                  f"{size_mb:.1f} MB of Parquet, about {arrow_mb:.0f} MB in memory (Arrow); machine "
                  f"{os.cpu_count()} cores (shared), load {os.getloadavg()[0]:.1f}", flush=True)
            for engine in engines:
                out = tmp / f"out-{n}-{engine}"
                out.mkdir()
                before = driver_rows()
                jvm0 = jvm_heap_mb(spark) if engine == "spark" else 0.0
                with Peak() as peak, counted(engine) as box:
                    t0 = time.perf_counter()
                    got = runner(engine)(data_dir, out)
                    secs = time.perf_counter() - t0
                extra: dict[str, Any] = {}
                if engine == "spark":
                    extra["jvm_heap_growth_mb"] = f"{jvm_heap_mb(spark) - jvm0:.0f}"
                emit(
                    f"scale pipeline {n:.0e}x8 {engine}", secs,
                    peak_rss_growth_mb=f"{peak.growth_mb:.0f}",
                    data_mb_in_memory=f"{arrow_mb:.0f}",
                    driver_rows=driver_rows() - before if engine in ("dask", "spark") else "all (in memory)",
                    counted_rows=box[0] if engine in ("dask", "spark") else "-",
                    **got, **extra,
                )
                shutil.rmtree(out, ignore_errors=True)
            shutil.rmtree(data_dir, ignore_errors=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
        if spark is not None:
            spark.stop()


if __name__ == "__main__":
    main()
