"""MDAV speed against sdcMicro's MDAV (C++), and the blocked variant on 1,000,000 rows.

Data: 10 standard-normal columns (seed 20261130), k = 3. Peer figures are sdcMicro 5.8.1
``microaggregation(method="mdav")`` timings quoted in issue 6, measured on this kind of machine
(R is not installed here): 0.42 s at n = 10,000, 13.2 s at 50,000, about 67 s at 100,000.
Targets: 5x faster at 50,000 and 100,000 with the information loss of exact MDAV (the kernel
returns exactly the groups of the plain algorithm; tests check it); 1,000,000 rows through the
blocked variant in under a minute, its information-loss cost measured against exact MDAV.

    cd benchmarks && ../.venv/bin/python microagg_mdav.py [--quick]
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable

import numpy as np

from _harness import bench, emit
from sdckit.microagg import blocked_mdav_groups, information_loss, mdav_groups, standardize
from sdckit.microagg._groups import group_centres

PEER = {10_000: 0.42, 50_000: 13.2, 100_000: 67.0}
P, K, SEED = 10, 3, 20261130
BLOCKS = (10_000, 25_000)  # rows per block of the blocked variant: time vs information loss


def cpu_seconds(fn: Callable[[], object]) -> float:
    """CPU time of one run (process time): less sensitive than wall time on a shared machine."""
    t0 = time.process_time()
    fn()
    return round(time.process_time() - t0, 2)


def il_of(x: np.ndarray, groups: np.ndarray) -> float:
    return information_loss(x, group_centres(x, groups))


def main() -> None:
    quick = "--quick" in sys.argv
    rng = np.random.default_rng(SEED)
    mdav_groups(standardize(rng.standard_normal((100, P))), K)  # compile / load the cached kernel
    sizes = (10_000,) if quick else (10_000, 50_000, 100_000)
    exact_il: dict[int, float] = {}
    for n in sizes:
        z = standardize(rng.standard_normal((n, P)))
        groups: list[np.ndarray] = []
        t = bench(
            lambda z=z, groups=groups: groups.append(mdav_groups(z, K)),
            repeat=3 if n <= 50_000 else 1,
            warmup=0,
        )
        exact_il[n] = il_of(z, groups[-1])
        emit(
            f"microagg MDAV exact n={n:,} p={P} k={K}",
            t,
            peer=("sdcMicro mdav", PEER[n]),
            target=PEER[n] / 5 if n >= 50_000 else None,
            il_pct=round(exact_il[n], 4),
            cpu_s=cpu_seconds(lambda z=z: mdav_groups(z, K)),
        )
        if n == sizes[-1]:
            for block in BLOCKS:
                il_b = il_of(z, blocked_mdav_groups(z, K, block_size=block))
                print(
                    f"  blocked ({block:,}-row blocks) at n={n:,}: IL {il_b:.4f} % vs exact "
                    f"{exact_il[n]:.4f} % (+{100 * (il_b / exact_il[n] - 1):.1f} %)",
                    flush=True,
                )
    n_big = 100_000 if quick else 1_000_000
    z = standardize(rng.standard_normal((n_big, P)))
    for block in BLOCKS:
        out: list[np.ndarray] = []
        t = bench(
            lambda block=block, out=out: out.append(blocked_mdav_groups(z, K, block_size=block)),
            repeat=1,
            warmup=0,
        )
        sizes_b = np.bincount(out[-1])
        emit(
            f"microagg MDAV blocked n={n_big:,} p={P} k={K} block={block:,}",
            t,
            target=60.0,
            il_pct=round(il_of(z, out[-1]), 4),
            min_group=int(sizes_b.min()),
            n_groups=len(sizes_b),
        )


if __name__ == "__main__":
    main()
