"""Targeted record swapping beside sdcMicro's ``recordSwap`` (issue 35): time and the invariants.

Data: ``sdckit.datasets.make_households`` (regions > districts, household size, age group,
nationality), 2,000 households by default (``--households N`` for more). Both tools swap at
rate 0.1 with hierarchy region > district, similarity profile household size, k-anonymity 3 on
age group and nationality, over several seeds, and print per tool: time, households swapped
(mean and range over the seeds), records swapped, households at risk swapped (counted here on
the outputs, the at-risk rule written out with polars), and the per-district swapped households
(the mean over seeds of both tools side by side, largest gap). With ``PEER_RLIB`` unset the peer
is not run, and the benchmark says so.

    cd benchmarks && PYTHONPATH=../src ../.venv/bin/python anonymize_record_swap.py [--households 20000]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import tempfile
import time
from pathlib import Path

import numpy as np
import polars as pl

from _harness import bench, emit
from sdckit.anonymize import RecordSwapper
from sdckit.datasets import make_households

HIER = ["region", "district"]
RISK = ["age_group", "national"]
RATE, K, SEEDS = 0.1, 3, 8

PEER_SCRIPT = r"""
suppressMessages({{library(sdcMicro); library(data.table)}})
d <- fread("{path}")
for (seed in 1:{seeds}) {{
  t0 <- proc.time()[["elapsed"]]
  s <- recordSwap(d, hid = "hid", hierarchy = c("region", "district"), similar = list(c("hsize")),
                  swaprate = {rate}, k_anonymity = {k}, risk_variables = c("age_group", "national"),
                  return_swapped_id = TRUE, seed = seed, log_file_name = "{log}")
  el <- proc.time()[["elapsed"]] - t0
  u <- unique(s[, .(hid, hid_swapped, district)])
  fwrite(u, sprintf("{out}_%d.csv", seed))
  cat(sprintf("seconds %d %.6f\n", seed, el))
}}
"""


def at_risk(d: pl.DataFrame) -> set[int]:
    """Households with a member in a group of fewer than K records on RISK and the areas down to some level."""
    out: set[int] = set()
    for h in range(len(HIER)):
        sizes = d.select(pl.len().over([*RISK, *HIER[: h + 1]]).alias("n"), "hid")
        out |= set(sizes.filter(pl.col("n") < K)["hid"].to_list())
    return out


def summary(name: str, moved: list[pl.DataFrame], risky: set[int], seconds: float, d: pl.DataFrame) -> pl.DataFrame:
    """One line per tool; returns the per-district mean of swapped households."""
    n_hh = [m.height for m in moved]
    sizes = dict(d.group_by("hid").len().iter_rows())
    records = [sum(sizes[h] for h in m["hid"].to_list()) for m in moved]
    risky_swapped = [len(risky & set(m["hid"].to_list())) for m in moved]
    emit(f"record_swap {name}", seconds, households=d["hid"].n_unique(),
         swapped_households=f"{np.mean(n_hh):.1f} [{min(n_hh)}-{max(n_hh)}]",
         swapped_records=f"{np.mean(records):.1f}", at_risk=f"{min(risky_swapped)}-{max(risky_swapped)}/{len(risky)}")
    per = pl.concat(m.group_by("district").len() for m in moved)
    return per.group_by("district").agg((pl.col("len").sum() / len(moved)).alias(name))


def ours(d: pl.DataFrame) -> tuple[list[pl.DataFrame], float]:
    moved = []
    first = d.group_by("hid", maintain_order=True).agg(pl.col("district").first())
    for seed in range(SEEDS):
        sw = RecordSwapper(household="hid", hierarchy=HIER, similar=[["hsize"]], swap_rate=RATE, k_anonymity=K,
                           risk_variables=RISK, random_state=seed).fit(d)
        ids = set(d.filter(pl.Series(sw.swapped_))["hid"].to_list())
        moved.append(first.filter(pl.col("hid").is_in(ids)))  # the household's original district
    t = bench(lambda: RecordSwapper(household="hid", hierarchy=HIER, similar=[["hsize"]], swap_rate=RATE,
                                    k_anonymity=K, risk_variables=RISK).fit(d), repeat=3)
    return moved, t.median


def peer(d: pl.DataFrame) -> tuple[list[pl.DataFrame], float] | None:
    rlib = os.environ.get("PEER_RLIB")
    if not rlib:
        return None
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "hh.csv"
        d.write_csv(path)
        script = Path(tmp) / "swap.R"
        script.write_text(PEER_SCRIPT.format(path=path, seeds=SEEDS, rate=RATE, k=K, log=Path(tmp) / "log.txt",
                                             out=Path(tmp) / "out"))
        done = subprocess.run(["Rscript", str(script)], capture_output=True, text=True, check=True, timeout=900,
                              env={**os.environ, "R_LIBS_USER": rlib})
        secs = [float(line.split()[2]) for line in done.stdout.splitlines() if line.startswith("seconds")]
        moved = []
        for seed in range(1, SEEDS + 1):
            u = pl.read_csv(Path(tmp) / f"out_{seed}.csv")
            # the output's district is the swapped one: take the original district from the input
            ids = u.filter(pl.col("hid") != pl.col("hid_swapped"))["hid"].unique()
            moved.append(d.group_by("hid", maintain_order=True).agg(pl.col("district").first())
                         .filter(pl.col("hid").is_in(ids.to_list())))
    return moved, float(np.median(secs))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--households", type=int, default=2000)
    args = parser.parse_args()
    d = make_households(args.households, random_state=2026)
    risky = at_risk(d)
    t0 = time.perf_counter()
    mine, seconds = ours(d)
    print(f"# {d.height:,} records in {d['hid'].n_unique():,} households; {len(risky):,} at risk at k = {K}; "
          f"swap rate {RATE} ({time.perf_counter() - t0:.1f} s)")
    table = summary("sdckit", mine, risky, seconds, d)
    got = peer(d)
    if got is None:
        print("# peer not run: set PEER_RLIB to an R library with sdcMicro to compare with recordSwap")
        return
    theirs, peer_seconds = got
    emit("record_swap sdckit vs sdcMicro", seconds, peer=("recordSwap", peer_seconds))
    table = table.join(summary("sdcMicro", theirs, risky, peer_seconds, d), on="district", how="full",
                       coalesce=True).fill_null(0).sort("district")
    gap = (table["sdckit"] - table["sdcMicro"]).abs()
    print(f"# per district, mean households swapped over {SEEDS} seeds (largest gap {gap.max():.2f}):")
    print(table)


if __name__ == "__main__":
    main()
