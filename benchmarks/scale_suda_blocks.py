"""What blocking costs SUDA2: the exact search on all of Adult against the search within blocks.

``with_suda2(frame, keys, block=...)`` (Dask, Spark) runs the exact SUDA2 search inside each block
as a table of its own. This script measures, on Adult (32,561 rows) with the report's 8
quasi-identifiers, how far those scores are from the exact ones for a few block choices: the share
of records whose SUDA score differs, the records with at least one MSU in each, and the DIS-SUDA
differences. The blocks run through the same per-block function as on a cluster (in memory here,
so that the comparison is not timed against a scheduler).

Run: ``cd benchmarks && ../.venv/bin/python scale_suda_blocks.py``.
"""

from __future__ import annotations

import time

import numpy as np
import polars as pl

from sdckit.datasets import ADULT_QUASI_IDENTIFIERS, load_adult
from sdckit.risk import suda2
from sdckit.risk._measures._suda import dis_scores
from sdckit.risk._measures._suda_blocks import _blocked_in_memory

KEYS = list(ADULT_QUASI_IDENTIFIERS)


def main() -> None:
    adult = load_adult().with_row_index("__id")
    t0 = time.perf_counter()
    exact = suda2(adult, KEYS)
    t_exact = time.perf_counter() - t0
    print(f"keys: {', '.join(KEYS)}; exact: {exact.n_special:,} records with an MSU, {t_exact:.1f} s")
    print("| block | blocks | records whose score differs | records with an MSU (exact / blocked) "
          "| mean abs. DIS difference | max abs. DIS difference | time |")
    for block in ["sex", "race", "relationship", "marital-status"]:
        t0 = time.perf_counter()
        done = _blocked_in_memory(adult, KEYS, [block], "value").sort("__id")
        took = time.perf_counter() - t0
        scores = done["suda_score"].to_numpy()
        dis = dis_scores(scores, n_pair_rows=exact.n_pair_rows, m=len(KEYS), dis_fraction=0.01)
        differ = float(np.mean(scores != exact.scores))
        gap = np.abs(dis - exact.dis_scores)
        n_blocks = adult[block].n_unique()
        print(f"| `{block}` | {n_blocks} | {differ:.1%} | {exact.n_special:,} / {int(np.count_nonzero(scores)):,} "
              f"| {gap.mean():.4f} | {gap.max():.3f} | {took:.1f} s |")


if __name__ == "__main__":
    pl.Config.set_tbl_rows(20)
    main()
