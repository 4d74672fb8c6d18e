"""``sdckit report`` on a wide file: 2,000 rows x 500 columns (target: under 30 s).

20 categorical columns (a few values each) and 480 continuous ones, nothing named: the CLI guesses
the roles, and the experiments (microaggregation, private PCA) run on at most
``EXPERIMENT_MAX_COLUMNS`` of the guessed numeric columns. Times the command end to end as a user
runs it (a subprocess, stderr piped: one progress line per stage) and prints its peak memory.

    cd benchmarks && ../.venv/bin/python report_wide.py
"""

from __future__ import annotations

import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import polars as pl

from _harness import Timing, emit

CLI = "import sys; from sdckit.cli import main; sys.argv[0] = 'sdckit'; main()"


def wide_table(n: int = 2_000, n_categorical: int = 20, n_numeric: int = 480, seed: int = 22) -> pl.DataFrame:
    """n rows: ``c00..`` categorical (2-6 text values), ``x000..`` continuous (log-normal, correlated)."""
    rng = np.random.default_rng(seed)
    cols: dict[str, object] = {}
    for j in range(n_categorical):
        m = 2 + j % 5
        cols[f"c{j:02d}"] = rng.choice([f"v{i}" for i in range(m)], n)
    base = rng.normal(size=(n, 8))
    mix = rng.normal(size=(8, n_numeric))
    numeric = np.exp(0.3 * (base @ mix) / np.sqrt(8) + 0.5 * rng.normal(size=(n, n_numeric)))
    for j in range(n_numeric):
        cols[f"x{j:03d}"] = numeric[:, j]
    return pl.DataFrame(cols)


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "wide.csv"
        wide_table().write_csv(path)
        argv = [sys.executable, "-c", CLI, "report", str(path), "-o", str(Path(tmp) / "wide.html")]
        subprocess.run(argv, capture_output=True, check=True)  # warm the JIT caches (numba), as a second run finds them
        runs, cpu = [], []
        log = ""
        for _ in range(2):
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            t0 = time.perf_counter()
            done = subprocess.run(argv, capture_output=True, text=True, check=True)
            runs.append(time.perf_counter() - t0)
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            cpu.append(after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime)
            log = done.stderr
    peak_mb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    # CPU seconds beside wall-clock: on a shared machine the wall-clock figure includes waiting for a core
    emit("report: 2,000 x 500 (guessed roles), CLI", Timing(statistics.median(runs), min(runs), tuple(runs)), target=30.0,
         cpu_s=round(statistics.median(cpu), 1), peak_rss_mb=round(peak_mb), load_1min=round(os.getloadavg()[0], 1))
    for line in log.splitlines():
        print(f"    {line}")


if __name__ == "__main__":
    main()
