"""The workbench's re-measure after a step on Adult (32,561 rows x 15 columns): what a user waits for.

A re-measure is the app's whole work after a change: :func:`sdckit.pipeline.run_pipeline` on the
state's config (read, plan, every step, measure the input and the release) plus the page's figures
(global risk, information loss per column), exactly :meth:`sdckit.app._workspace.Workspace.measure`.
Rows: after a recode step (age, education, native-country to their built-in hierarchy levels),
target under 1 s; after recode + local suppression to k = 5 on the 8 quasi-identifiers, target
under 5 s (issue 28). Median of 3 runs after one untimed run (the compiled kernels loaded); ``cpu_s`` is the process's CPU
time over one run (all threads), the work itself when the machine is shared.

With ``PEER_RLIB`` set, sdcMicro's re-measure after the same recoding runs in the same run: an
``sdcMicroObj`` on the 8 keys, then ``globalRecode`` of age (which recomputes the risk, as sdcApp
does after each change), timed inside R around the call; the ratio is printed. sdcMicro's
``localSuppression`` on these 8 keys takes more than 600 s (see anonymize_local_suppression.py),
so no peer is run for that row.

    cd benchmarks && PYTHONPATH=../src ../.venv/bin/python app_remeasure.py [--quick]
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import TypeVar

from _harness import bench, emit
from sdckit.app._session import parse_step
from sdckit.app._workspace import Workspace
from sdckit.datasets import ADULT_QUASI_IDENTIFIERS, load_adult

T = TypeVar("T")

RECODE = ('{rules: {age: {hierarchy: "adult:age", level: 2}, education: {hierarchy: "adult:education", level: 1}, '
          'native-country: {hierarchy: "adult:native-country", level: 1}}}')

PEER_SCRIPT = r"""
suppressMessages(library(sdcMicro))
d <- read.csv("{path}", check.names = FALSE, stringsAsFactors = TRUE)
keys <- c({keys})
s <- createSdcObj(d, keyVars = keys)
t0 <- proc.time()[["elapsed"]]
s <- globalRecode(s, column = "age", breaks = c(0, seq(20, 90, 10), 100))
el <- proc.time()[["elapsed"]] - t0
cat(sprintf("%s %.3f\n", as.character(packageVersion("sdcMicro")), el))
"""


def peer_recode() -> tuple[str, float] | None:
    rlib = os.environ.get("PEER_RLIB")
    if not rlib:
        return None
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "adult.csv"
        load_adult().write_csv(path)
        script = Path(tmp) / "peer.R"
        keys = ", ".join(f'"{k}"' for k in ADULT_QUASI_IDENTIFIERS)
        script.write_text(PEER_SCRIPT.format(path=path, keys=keys), encoding="utf-8")
        out = subprocess.run(["Rscript", str(script)], capture_output=True, text=True, timeout=900, check=True,
                             env={**os.environ, "R_LIBS_USER": rlib})
        version, seconds = out.stdout.split()[-2:]
        return f"sdcMicro {version} globalRecode", float(seconds)


def cpu_seconds(fn: Callable[[], T]) -> tuple[float, T]:
    """CPU seconds of the process (all threads) over one call, and its result: on a shared machine the
    wall time also counts the others' load; the CPU time is the work itself."""
    t0 = time.process_time()
    out = fn()
    return time.process_time() - t0, out


def main() -> None:
    quick = "--quick" in sys.argv
    ws = Workspace()
    try:
        ws.load("adult", {})
        # age recoded to bands: a categorical key (the Adult default has it numeric as well)
        base = replace(ws.state, roles=tuple((c, "quasi_identifier" if c == "age" else r) for c, r in ws.state.roles))
        recode = replace(base, steps=(parse_step("recode", RECODE, 0),))
        suppress = replace(base, steps=(*recode.steps, parse_step("local_suppression", "{k: 5}", 1)))
        repeat = 1 if quick else 3
        noop = lambda *_a, **_k: None  # noqa: E731

        t_recode = bench(lambda: ws.measure(recode, noop), repeat=repeat, warmup=1)
        cpu, run = cpu_seconds(lambda: ws.measure(recode, noop))
        assert run.result.release_measure is not None
        peer = peer_recode()
        if peer is None:
            print("peer not run: set PEER_RLIB (see ../shared/peer/README.md) to time sdcMicro's globalRecode here")
        emit("app re-measure after recode (Adult 32,561x15)", t_recode, target=1.0, peer=peer,
             exposure=round(run.result.release_measure.exposure_at_k, 4), cpu_s=round(cpu, 2))
        t_suppress = bench(lambda: ws.measure(suppress, noop), repeat=repeat, warmup=1)
        cpu, run = cpu_seconds(lambda: ws.measure(suppress, noop))
        assert run.result.release_measure is not None
        assert run.result.release_measure.exposure_at_k == 0.0
        emit("app re-measure after local suppression, 8 keys", t_suppress, target=5.0,
             cells=run.result.steps[-1].details.get("cells_changed"), cpu_s=round(cpu, 2))
    finally:
        ws.close()


if __name__ == "__main__":
    main()
