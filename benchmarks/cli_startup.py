"""Start-up cost of the command line: ``sdckit --help`` and ``sdckit risk --help`` against bare Python.

CPU seconds (user + system) of the whole process, from the operating system's accounting of each
finished child (``resource.getrusage(RUSAGE_CHILDREN)``), median of 9 runs after one warm-up.
Target (issue 16): at most 0.3 s of CPU over ``python -c pass``. Before: 1.4 s (every command
module and scipy.optimize imported eagerly).

    cd benchmarks && ../.venv/bin/python cli_startup.py
"""

from __future__ import annotations

import resource
import statistics
import subprocess
import sys

from _harness import Timing, emit

RUNS = 9
CLI = "import sys; from sdckit.cli import main; sys.argv[0] = 'sdckit'; main()"


def cpu_of(argv: list[str]) -> Timing:
    """CPU seconds of each run of ``argv`` (output discarded)."""
    runs = []
    for i in range(RUNS + 1):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        if i:  # the first run warms the file cache
            runs.append((after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime))
    return Timing(statistics.median(runs), min(runs), tuple(runs))


def main() -> None:
    bare = cpu_of([sys.executable, "-c", "pass"])
    emit("python -c pass (CPU s)", bare)
    for args in (["--help"], ["risk", "--help"]):
        t = cpu_of([sys.executable, "-c", CLI, *args])
        over = Timing(t.median - bare.median, t.best - bare.best, tuple(r - bare.median for r in t.runs))
        emit(f"sdckit {' '.join(args)} (CPU s over bare Python)", over, target=0.3, total_cpu_s=round(t.median, 3))


if __name__ == "__main__":
    main()
