"""Exposure curve (group-size histogram) of 1,000,000 and 10,000,000 rows x 8 categorical columns.

Peer: sdcMicro's freqCalc takes about 1.9 s for 1,000,000 x 8 on this kind of machine (figure given
in issue 3, not re-measured here: R is not installed). Targets: >= 5x faster than the peer at 1e6,
under 5 s at 1e7. Run: ``cd benchmarks && ../.venv/bin/python risk_exposure.py``.
"""

from __future__ import annotations

import warnings

import numpy as np
import polars as pl

from _harness import bench, emit
from sdckit.risk import exposure_curve

SUPPORTS = (2, 3, 4, 5, 6, 7, 8, 10)
PEER = ("sdcMicro freqCalc (1e6 x 8)", 1.9)


def make(n: int, *, seed: int = 20261130) -> pl.DataFrame:
    """n rows, 8 categorical columns with the supports above (uniform values)."""
    rng = np.random.default_rng(seed)
    cols = {}
    for j, m in enumerate(SUPPORTS):
        labels = np.array([f"v{j}_{i}" for i in range(m)])
        cols[f"q{j}"] = pl.Series(labels[rng.integers(0, m, n)]).cast(pl.Categorical)
    return pl.DataFrame(cols)


def main() -> None:
    warnings.simplefilter("ignore")
    names = [f"q{j}" for j in range(len(SUPPORTS))]
    df = make(1_000_000)
    emit("risk exposure_curve 1e6x8 polars categorical", bench(lambda: exposure_curve(df, names), repeat=5),
         peer=PEER, target=1.9 / 5)
    for label, frame in (
        ("polars string", df.with_columns(pl.all().cast(pl.String))),
        ("pandas categorical", df.to_pandas()),
        ("polars lazy (group_by)", df.lazy()),
    ):
        emit(f"risk exposure_curve 1e6x8 {label}", bench(lambda f=frame: exposure_curve(f, names), repeat=3),
             peer=PEER, target=1.9 / 5)
    big = make(10_000_000)
    emit("risk exposure_curve 1e7x8 polars categorical", bench(lambda: exposure_curve(big, names), repeat=3),
         target=5.0)


if __name__ == "__main__":
    main()
