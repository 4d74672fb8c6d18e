"""utility_table speed: muargus_free1 (4,000 x 34) and CASC Census (1,080 x 13), MDAV k = 3 release.

Before issue 16 the cubic propensity model built every monomial (C(37, 3) - 1 = 7,769 features on
muargus_free1) and ran for more than 150 s; Census took 38 s. Targets: < 5 s and < 2 s, every
measure computed. The line states how many polynomial terms U_p used (``"auto"`` keeps one Newton
step under 1e9 flops: all 559 on Census, a seeded sample of the interactions on muargus_free1).
No peer: sdcMicro has no cubic pMSE. The figure is CPU time (the measures run on one thread), so
that a busy shared machine does not inflate it; the wall-clock median is printed beside it.

    cd benchmarks && ../.venv/bin/python microagg_utility.py
"""

from __future__ import annotations

import statistics
import time
from pathlib import Path

import polars as pl

from _harness import Timing, bench, emit
from sdckit.microagg import MDAV, utility_table

DATA = Path(__file__).resolve().parents[1] / "tests" / "data"
CASES = (("muargus_free1 4,000x34", "muargus_free1.csv.gz", 5.0), ("Census 1,080x13", "casc_census.csv.gz", 2.0))


def main() -> None:
    for name, file, target in CASES:
        frame = pl.read_csv(DATA / file)
        release = MDAV(k=3).fit_transform(frame)
        utility_table(frame.head(60), release.head(60))  # compile the ECDF kernel
        wall = bench(lambda f=frame, r=release: utility_table(f, r), repeat=3, warmup=0)
        cpu = []
        for _ in range(3):
            t0 = time.process_time()
            table = utility_table(frame, release)
            cpu.append(time.process_time() - t0)
        emit(
            f"microagg utility_table {name} (MDAV k=3), CPU s",
            Timing(statistics.median(cpu), min(cpu), tuple(cpu)),
            target=target,
            wall_median_s=round(wall.median, 2),
            U_p=round(table.propensity, 5),
            terms=f"{table.propensity_terms}/{table.propensity_terms_total}",
        )


if __name__ == "__main__":
    main()
