"""`sdckit compare` on three data sets the examples do not use: the time of the whole comparison.

Each configuration in benchmarks/compare/ compares ten candidate releases (recoding with decoy
suppression or top coding, PRAM, MDAV with and without restoration, additive and correlated
noise, rank swapping, and DP synthetic data: independent marginals at epsilon 1, the MST-like tree
at epsilon 1 and 10), each drawn ``repeat`` times from OS entropy, written, read back and
measured; the report with the map goes to build/compare/<name>.html.

Run:  PYTHONPATH=src python benchmarks/compare_methods.py            (3 draws per candidate)
      PYTHONPATH=src python benchmarks/compare_methods.py --repeat 1 (a quick look)
The issue's target: all three in under 10 minutes on a 2-core machine.
"""

from __future__ import annotations

import argparse
import time
import warnings
from pathlib import Path
from typing import Any

from sdckit.compare import build_compare_report, load_compare, run_compare, summary_rows

HERE = Path(__file__).resolve().parent / "compare"
CONFIGS = ("sdcmicro_testdata.yaml", "casc_census.yaml", "casc_tarragona.yaml")


def _mean(row: dict[str, Any], name: str) -> str:
    got = row.get(name, {}).get("mean")
    return "-" if got is None else f"{got:.3f}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeat", type=int, default=None, help="draws per candidate (default: each file's, 3)")
    args = ap.parse_args()
    start = time.perf_counter()
    for name in CONFIGS:
        spec = load_compare(HERE / name)
        if args.repeat is not None:
            spec = type(spec)(**{**spec.__dict__, "repeat": args.repeat})
        t0 = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the near-unique quasi-identifier warning, once per draw
            result = run_compare(spec)
        assert spec.report is not None
        build_compare_report(result).write(spec.report)
        rows = summary_rows(result)
        n_dp = sum(r["epsilon"] is not None for r in rows)
        print(f"{name}: {len(rows)} candidates ({n_dp} differentially private), "
              f"{sum(r['draws'] for r in rows)} written releases, {time.perf_counter() - t0:.1f} s; "
              f"frontier: {', '.join(result.frontier)}; report {spec.report}", flush=True)
        for r in rows:
            print(f"    {r['candidate']:<60} {spec.risk_axis}={r[spec.risk_axis]['mean']:.3f} "
                  f"{spec.utility_axis}={r[spec.utility_axis]['mean']:.4f} "
                  f"eps={'-' if r['epsilon'] is None else format(r['epsilon'], '.3g')} "
                  + "".join(f"{a}={_mean(r, a)} " for a in ("singling_out", "linkability", "inference"))
                  + f"{'within' if r['within_budget'] else 'over'} budget {r['seconds']:.1f} s")
    print(f"compare_methods: 3 data sets in {time.perf_counter() - start:.1f} s")


if __name__ == "__main__":
    main()
