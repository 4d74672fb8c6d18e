"""Start-up cost: ``sdckit --help``, ``sdckit risk --help``, ``import sdckit.risk`` and ``import
sdckit.anonymize``, beside bare Python in the same run.

CPU seconds (user + system) of the whole process, from the operating system's accounting of each
finished child (``resource.getrusage(RUSAGE_CHILDREN)``), median of 9 runs after one warm-up.
Targets: the two commands at most 0.3 s of CPU over ``python -c pass`` (issue 16; before: 1.4 s,
every command module and scipy.optimize imported eagerly); ``import sdckit.risk`` at most 0.3 s of
CPU for the whole process (issue 32; 1.9 s then, scipy.optimize, scipy.stats and scipy.spatial
loaded at module level). For each import, ``python -X importtime`` then gives the cumulative time
of the import and of the scipy modules it loads (self times summed; one run, wall-clock), and the
heaviest scipy modules: what a lean start has to defer to the first call that needs them.

    cd benchmarks && ../.venv/bin/python cli_startup.py [--runs 9]
"""

from __future__ import annotations

import argparse
import re
import resource
import statistics
import subprocess
import sys

from _harness import Timing, emit

RUNS = 9
CLI = "import sys; from sdckit.cli import main; sys.argv[0] = 'sdckit'; main()"


IMPORTS = ("sdckit.risk", "sdckit.anonymize")
"""The modules whose import a library user pays first (the riskplan work makes them lean)."""

_LINE = re.compile(r"^import time:\s+(\d+) \|\s+(\d+) \| (\s*)(\S+)$")


def cpu_of(argv: list[str], runs_wanted: int = RUNS) -> Timing:
    """CPU seconds of each run of ``argv`` (output discarded)."""
    runs = []
    for i in range(runs_wanted + 1):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        if i:  # the first run warms the file cache
            runs.append((after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime))
    return Timing(statistics.median(runs), min(runs), tuple(runs))


def importtime(module: str) -> tuple[float, float, int, list[tuple[str, float]]]:
    """``python -X importtime -c "import MODULE"``: the import's cumulative seconds, the seconds of
    the scipy modules it loads (self times summed), how many and the five heaviest (cumulative)."""
    err = subprocess.run([sys.executable, "-X", "importtime", "-c", f"import {module}"], capture_output=True,
                         text=True, check=True).stderr
    total = 0.0
    scipy_self = 0.0
    scipy_top: list[tuple[str, float]] = []
    for line in err.splitlines():
        m = _LINE.match(line)
        if m is None:
            continue
        self_us, cum_us, name = int(m.group(1)), int(m.group(2)), m.group(4)
        if name == module:
            total = cum_us / 1e6
        if name == "scipy" or name.startswith("scipy."):
            scipy_self += self_us / 1e6
            scipy_top.append((name, cum_us / 1e6))
    heaviest = sorted(scipy_top, key=lambda x: -x[1])[:5]
    return total, scipy_self, len(scipy_top), heaviest


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=RUNS, help=f"timed runs per figure (default {RUNS})")
    runs = parser.parse_args().runs
    bare = cpu_of([sys.executable, "-c", "pass"], runs)
    emit("python -c pass (CPU s)", bare)

    def over_bare(t: Timing) -> Timing:
        return Timing(t.median - bare.median, t.best - bare.best, tuple(r - bare.median for r in t.runs))

    for args in (["--help"], ["risk", "--help"]):
        t = cpu_of([sys.executable, "-c", CLI, *args], runs)
        emit(f"sdckit {' '.join(args)} (CPU s over bare Python)", over_bare(t), target=0.3, total_cpu_s=round(t.median, 3))
    # the floor under sdckit.risk: the libraries its public API is made of, loaded by themselves
    floor = cpu_of([sys.executable, "-c", "import numpy, polars, narwhals"], runs)
    emit("import numpy, polars, narwhals (CPU s, whole process: the floor)", floor)
    for module in IMPORTS:
        t = cpu_of([sys.executable, "-c", f"import {module}"], runs)
        total, scipy_s, n_scipy, heaviest = importtime(module)
        emit(
            f"import {module} (CPU s, whole process)", t, target=0.3 if module == "sdckit.risk" else None,
            over_bare_cpu_s=round(t.median - bare.median, 3), over_floor_cpu_s=round(t.median - floor.median, 3),
            importtime_s=round(total, 3),
            scipy_importtime_s=round(scipy_s, 3), scipy_modules=n_scipy,
        )
        if heaviest:
            print("    heaviest scipy imports (cumulative s): "
                  + ", ".join(f"{name} {sec:.3f}" for name, sec in heaviest), flush=True)


if __name__ == "__main__":
    main()
