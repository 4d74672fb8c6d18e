"""The common way to time something and print it, with the ratio against a peer when one is given.

Usage in a benchmark script::

    from _harness import bench, emit
    t = bench(lambda: exposure_curve(df, cols), repeat=5)
    emit("risk_exposure 1e6x8", t, peer=("sdcMicro freqCalc", 1.9))

Figures are wall-clock seconds: the median of ``repeat`` runs after ``warmup`` untimed runs (JIT
compilation and caches warm). Each line is also appended as JSON to ``$SDCKIT_BENCH_JSON`` when set.
"""

from __future__ import annotations

import json
import os
import platform
import statistics
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any


@dataclass(frozen=True)
class Timing:
    """Seconds per run: median, best and all runs."""

    median: float
    best: float
    runs: tuple[float, ...]


def bench(fn: Callable[[], Any], *, repeat: int = 5, warmup: int = 1) -> Timing:
    """Run ``fn`` ``warmup`` times untimed, then ``repeat`` times timed."""
    for _ in range(warmup):
        fn()
    runs = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        runs.append(time.perf_counter() - t0)
    return Timing(statistics.median(runs), min(runs), tuple(runs))


def _fmt(seconds: float) -> str:
    if seconds < 1e-3:
        return f"{seconds * 1e6:.1f} µs"
    if seconds < 1:
        return f"{seconds * 1e3:.1f} ms"
    return f"{seconds:.2f} s"


def emit(
    name: str,
    timing: Timing | float,
    *,
    peer: tuple[str, float] | None = None,
    target: float | None = None,
    **extra: Any,
) -> None:
    """Print one figure line: name, median, best, ratio to the peer, target met or not, extras."""
    t = timing if isinstance(timing, Timing) else Timing(timing, timing, (timing,))
    parts = [f"{name:<44}", f"median {_fmt(t.median):>10}", f"best {_fmt(t.best):>10}"]
    if peer is not None:
        pname, psec = peer
        parts.append(f"peer {pname} {_fmt(psec)} -> {psec / t.median:.1f}x faster")
    if target is not None:
        parts.append(f"target {_fmt(target)}: {'met' if t.median <= target else 'MISSED'}")
    parts += [f"{k}={v}" for k, v in extra.items()]
    print("  ".join(parts), flush=True)
    out = os.environ.get("SDCKIT_BENCH_JSON")
    if out:
        record = {"name": name, **asdict(t), "peer": peer, "target": target, **extra,
                  "machine": f"{platform.machine()} {os.cpu_count()} cores"}
        with open(out, "a", encoding="utf-8") as fh:
            fh.write(json.dumps(record) + "\n")
