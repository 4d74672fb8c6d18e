"""The main job: the whole HTML report for the bundled Adult data (target: under 30 s).

Prints the end-to-end time (build + write) and the time of each stage, from the same progress
callback the CLI's bar uses.

    cd benchmarks && ../.venv/bin/python report_adult.py
"""

from __future__ import annotations

import itertools
import tempfile
import time
from pathlib import Path
from typing import Any

from _harness import Timing, emit
from sdckit.pipeline import PipelineConfig, run_pipeline
from sdckit.pipeline._config import EXPERIMENTS
from sdckit.report import build_report


def main() -> None:
    # warm the JIT caches (numba) once, as a second `sdckit report` run would find them
    run_pipeline(PipelineConfig())
    stages: list[tuple[str, float]] = []

    def advance(*_: Any, description: str | None = None, **__: Any) -> None:
        stages.append((description or "?", time.perf_counter()))

    runs = []
    for _ in range(2):
        stages.clear()
        t0 = time.perf_counter()
        stages.append(("start", t0))
        result = run_pipeline(PipelineConfig(experiments=EXPERIMENTS), advance=advance)  # as `sdckit report`
        with tempfile.TemporaryDirectory() as tmp:
            build_report(result, advance=advance).write(Path(tmp) / "report.html")
        runs.append(time.perf_counter() - t0)
    emit("report: Adult, 32,561 rows, every section", Timing(sorted(runs)[len(runs) // 2], min(runs), tuple(runs)), target=30.0)
    stages.append(("end", time.perf_counter()))
    for (name, t), (_, t_next) in itertools.pairwise(stages):
        print(f"    {name:<40} {t_next - t:6.2f} s")


if __name__ == "__main__":
    main()
