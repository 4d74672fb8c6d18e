"""Distance-based record linkage (``sdckit.risk.record_linkage``) at scale: n records x p columns.

The data are those of ``microagg_linear_transformation.py`` part 2: p correlated log-normal columns
(two factors plus noise), masked by 5 % multiplicative noise (``noise``), or by replacing each record
with the mean of a group of 3 records consecutive on the first principal axis (``mdav3``, what MDAV
at k = 3 releases). Prints n, columns, masking, wall-clock seconds and CPU seconds.

    cd benchmarks && ../.venv/bin/python risk_record_linkage.py            # n = 20,000 (a few seconds)
    cd benchmarks && ../.venv/bin/python risk_record_linkage.py --n 100000 # the README figure (10^5 x 12)
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from _harness import emit
from sdckit.risk import record_linkage

SEED = 20261130


def data(n: int, p: int, masking: str) -> tuple[np.ndarray, np.ndarray]:
    """n x p originals and their masked release."""
    rng = np.random.default_rng(SEED)
    factors = rng.standard_normal((n, 2))
    x = np.exp(factors @ rng.standard_normal((2, p)) * 0.5 + 0.3 * rng.standard_normal((n, p)))
    if masking == "noise":
        return x, x * np.exp(0.05 * rng.standard_normal(x.shape))
    z = (x - x.mean(axis=0)) / x.std(axis=0)
    order = np.argsort(z @ np.linalg.eigh(np.cov(z, rowvar=False))[1][:, -1])
    xm = np.empty_like(x)
    for group in np.array_split(order, n // 3):
        xm[group] = x[group].mean(axis=0)
    return x, xm


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=20_000, help="records (the README figure: 100000)")
    parser.add_argument("--columns", type=int, nargs="+", default=[4, 12])
    args = parser.parse_args()
    for p in args.columns:
        for masking in ("noise", "mdav3"):
            x, xm = data(args.n, p, masking)
            cpu, wall = time.process_time(), time.perf_counter()
            link = record_linkage(x, xm, k=5)
            wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
            print(f"n={args.n} columns={p} masking={masking} seconds={wall:.2f} cpu_seconds={cpu:.2f}")
            emit(f"record_linkage {args.n}x{p} {masking}", wall, cpu_seconds=cpu,
                 nearest=link.share_nearest, within_5=link.share_within_k)


if __name__ == "__main__":
    main()
