"""Recoding, top coding and PRAM where the rows live: polars (eager and lazy), Dask and Spark.

Adult bootstrapped to ``--rows`` rows (age, sex, race, native-country, capital-gain) in one Parquet
file; each engine reads it, runs ``GlobalRecoder`` (age in 5 quantile bins, race and native-country
by their hierarchies), ``TopBottomCoder`` (capital-gain at its 99th percentile) and ``PRAM`` (sex,
pd = 0.9), and writes the release back to Parquet. Dask (threads, 2 workers) and Spark
(``local[2]``) use 8 partitions. "rows at driver" is sdckit's ``driver_rows()`` (the tests check it
against an instrumented scheduler): the value counts, a few summary rows, PRAM's tallies.

Run: ``cd benchmarks && ../.venv/bin/python scale_masking.py --rows 1000000`` (``--engines`` to
choose among polars,lazy,dask,spark).
"""

from __future__ import annotations

import argparse
import tempfile
import time
import warnings
from pathlib import Path
from typing import Any

RULES = {
    "age": {"bins": 5, "method": "quantile"},
    "race": {"hierarchy": "adult:race", "level": 1},
    "native-country": {"hierarchy": "adult:native-country", "level": 2},
}


def mask(X: Any) -> Any:
    from sdckit.anonymize import PRAM, GlobalRecoder, TopBottomCoder

    recoded = GlobalRecoder(rules=RULES).fit_transform(X)
    coded = TopBottomCoder(columns=["capital-gain"], top_quantile=0.99).fit_transform(recoded)
    return PRAM(columns=["sex"], pd=0.9, random_state=1).fit_transform(coded)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--engines", default="polars,lazy,dask,spark")
    args = parser.parse_args()
    warnings.filterwarnings("ignore")
    import polars as pl

    from sdckit._scale import driver_rows
    from sdckit.datasets import load_adult

    work = Path(tempfile.mkdtemp(prefix="sdckit-scale-masking-"))
    source = work / "adult.parquet"
    adult = load_adult().select("age", "sex", "race", "native-country", "capital-gain")
    adult.sample(args.rows, with_replacement=True, seed=1).write_parquet(source)
    print(f"{args.rows:,} rows; {work}")
    for engine in args.engines.split(","):
        before, start = driver_rows(), time.perf_counter()
        if engine == "polars":
            mask(pl.read_parquet(source)).write_parquet(work / "polars.parquet")
        elif engine == "lazy":
            mask(pl.scan_parquet(source)).sink_parquet(work / "lazy.parquet")
        elif engine == "dask":
            import dask
            import dask.dataframe as dd

            with dask.config.set(scheduler="threads", num_workers=2):
                out = mask(dd.read_parquet(source).repartition(npartitions=8))
                out.to_parquet(work / "dask", write_index=False)
        elif engine == "spark":
            from sdckit._scale import local_spark

            spark = local_spark("sdckit-scale-masking", cores=2)
            try:
                mask(spark.read.parquet(str(source)).repartition(8)).write.parquet(str(work / "spark"))
            finally:
                spark.stop()
        else:
            raise SystemExit(f"unknown engine {engine!r}; use polars, lazy, dask or spark")
        print(f"{engine:>7}: {time.perf_counter() - start:7.1f} s, rows at driver {driver_rows() - before:,}")


if __name__ == "__main__":
    main()
