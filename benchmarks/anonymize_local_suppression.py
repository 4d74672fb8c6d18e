"""Local suppression to k = 3 against sdcMicro's ``localSuppression``, and the lattice planner on Adult.

Data: a synthetic key table of 32,561 rows x 8 keys with supports 2, 3, 4, 5, 6, 7, 8, 10, value j of
each key drawn with probability proportional to 1 / j (seed 20261201). Target: under 10 s at k = 3.
sdcMicro needs more than 600 s on this table, so with ``PEER_RLIB`` set the peer runs in the same
process on the first ``PEER_ROWS`` rows (both tools timed on that same smaller table, ratio printed)
and on the full table only with ``--peer-full`` (a 900 s timeout). Without ``PEER_RLIB`` the
benchmark says that the peer was not run. The planner line times ``plan_release`` on Adult (8
quasi-identifiers, k = 5, budget 0.05, built-in hierarchies, suppression 0.2, no withholding).

    cd benchmarks && PYTHONPATH=../src ../.venv/bin/python anonymize_local_suppression.py [--quick] [--peer-full]
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import polars as pl

from _harness import bench, emit
from sdckit.anonymize import LocalSuppressor
from sdckit.datasets import ADULT_QUASI_IDENTIFIERS, load_adult, load_adult_hierarchies
from sdckit.risk import Marginals, plan_release, wildcard_group_sizes

N, K, SEED = 32_561, 3, 20261201
SUPPORTS = (2, 3, 4, 5, 6, 7, 8, 10)
PEER_ROWS = 5_000


def synthetic(n: int = N) -> pl.DataFrame:
    rng = np.random.default_rng(SEED)
    cols = {}
    for j, m in enumerate(SUPPORTS):
        p = 1.0 / np.arange(1, m + 1)
        cols[f"k{j + 1}"] = rng.choice(m, n, p=p / p.sum()) + 1
    return pl.DataFrame(cols)


PEER_SCRIPT = r"""
suppressMessages(library(sdcMicro))
d <- read.csv("{path}")
keys <- names(d)
for (v in keys) d[[v]] <- as.factor(d[[v]])
t0 <- proc.time()[["elapsed"]]
s <- localSuppression(createSdcObj(d, keyVars = keys), k = {k})
el <- proc.time()[["elapsed"]] - t0
cat(sprintf("%s %.3f %d\n", as.character(packageVersion("sdcMicro")), el, sum(s@localSuppression$totalSupps)))
"""


def run_peer(frame: pl.DataFrame, timeout: float) -> tuple[str, float, int] | None:
    """sdcMicro's localSuppression on ``frame``: (version, seconds, cells), None on timeout."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "keys.csv"
        frame.write_csv(path)
        script = Path(tmp) / "peer.R"
        script.write_text(PEER_SCRIPT.format(path=path, k=K), encoding="utf-8")
        env = {**os.environ, "R_LIBS_USER": os.environ["PEER_RLIB"]}
        try:
            out = subprocess.run(
                ["Rscript", str(script)], capture_output=True, text=True, env=env, timeout=timeout, check=True
            )
        except subprocess.TimeoutExpired:
            return None
        version, seconds, cells = out.stdout.split()[-3:]
        return version, float(seconds), int(cells)


def ours(frame: pl.DataFrame) -> LocalSuppressor:
    return LocalSuppressor(k=K).fit(frame)


def main() -> None:
    quick = "--quick" in sys.argv
    full = synthetic()
    ours(full.head(200))  # load the compiled kernels
    small = full.head(PEER_ROWS)
    models: list[LocalSuppressor] = []
    t_small = bench(lambda: models.append(ours(small)), repeat=1 if quick else 3, warmup=0)
    small_cells = models[-1].n_suppressed_
    t_full = bench(lambda: models.append(ours(full)), repeat=1 if quick else 3, warmup=0)
    model = models[-1]
    released = model.transform(full)
    assert wildcard_group_sizes(released).min() >= K  # measured on the released table
    peer_rlib = os.environ.get("PEER_RLIB")
    if not peer_rlib:
        print("peer not run: set PEER_RLIB (see ../shared/peer/README.md) to time sdcMicro here")
        emit(f"local suppression {PEER_ROWS:,}x8 k={K}", t_small, cells=small_cells)
    else:
        got = run_peer(small, timeout=900)
        if got is None:
            print(f"peer sdcMicro timed out on {PEER_ROWS:,} rows")
            emit(f"local suppression {PEER_ROWS:,}x8 k={K}", t_small, cells=small_cells)
        else:
            version, seconds, cells = got
            emit(
                f"local suppression {PEER_ROWS:,}x8 k={K}",
                t_small,
                peer=(f"sdcMicro {version} localSuppression", seconds),
                cells=small_cells,
                peer_cells=cells,
            )
    emit(f"local suppression {N:,}x8 k={K}", t_full, target=10.0, cells=model.n_suppressed_)
    if peer_rlib and "--peer-full" in sys.argv:
        got = run_peer(full, timeout=900)
        if got is None:
            print(f"peer sdcMicro on {N:,}x8: more than 900 s (timed out)")
        else:
            print(f"peer sdcMicro {got[0]} on {N:,}x8: {got[1]:.1f} s, {got[2]:,} cells")
    elif peer_rlib:
        print(f"peer sdcMicro not run on the full {N:,}x8 table (> 600 s); add --peer-full to try (900 s timeout)")

    adult = load_adult()
    keys = list(ADULT_QUASI_IDENTIFIERS)
    marginals = Marginals.from_data(adult, keys)
    hierarchies = load_adult_hierarchies()
    plans = []
    t0 = time.perf_counter()
    plans.append(
        plan_release(marginals, k=5, budget=0.05, hierarchies=hierarchies, data=adult, suppression=0.2, withhold=False)
    )
    elapsed = time.perf_counter() - t0
    plan = plans[-1]
    emit(
        "plan_release Adult 8 QIs k=5 budget 0.05",
        elapsed,
        target=10.0,
        nodes=f"{plan.n_evaluated}/{plan.n_nodes}",
        cells=plan.n_suppressed,
        loss=round(plan.loss or 0.0, 4),
    )


if __name__ == "__main__":
    main()
