"""Disclosure-review measures: SUDA2, individual risk, l-diversity, with sdcMicro in the same run.

* SUDA2 on sdcMicro's testdata (4,580 rows x 7 keys) and on Adult (32,561 rows x 8 keys);
* individual risk (Benedetti-Franconi, with sampling weights) on 1,000,000 rows x 8 keys;
* l-diversity on sdcMicro's testdata (4,580 rows, 7 keys), on Adult (32,561 rows, 8 keys,
  sensitive ``relationship``; issue 23: at least as fast as sdcMicro) and on 1,000,000 rows
  (8 quasi-identifiers, 1 sensitive column).

When ``PEER_RLIB`` points at the built sdcMicro library (see the developers' guide), the same
computations run in R (``suda2``, ``measure_risk``), timed inside R around the call only (reading
the CSV is not timed); the ratio is printed. Goal (issue 13): no slower than sdcMicro's C++.
Run: ``cd benchmarks && ../.venv/bin/python risk_measures.py`` (``risk_measures.py ldiversity`` for the
l-diversity rows on testdata and Adult alone).
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import warnings
from pathlib import Path

import numpy as np
import polars as pl

from _harness import bench, emit
from sdckit.datasets import ADULT_QUASI_IDENTIFIERS, load_adult
from sdckit.risk import individual_risk, l_diversity, suda2

HERE = Path(__file__).resolve().parent
TESTDATA = HERE.parent / "tests" / "data" / "sdcmicro_testdata.csv"
TESTDATA_KEYS = ["urbrur", "roof", "walls", "water", "electcon", "relat", "sex"]
ADULT_KEYS = list(ADULT_QUASI_IDENTIFIERS)  # the report's 8 quasi-identifiers
SUPPORTS = (2, 3, 4, 5, 6, 7, 8, 10)


def make(n: int, *, seed: int = 20261201) -> pl.DataFrame:
    """n rows: 8 integer keys with the supports above, a sampling weight in [1, 200], a sensitive column."""
    rng = np.random.default_rng(seed)
    cols: dict[str, object] = {f"q{j}": rng.integers(1, m + 1, n) for j, m in enumerate(SUPPORTS)}
    cols["w"] = rng.uniform(1.0, 200.0, n)
    cols["s"] = rng.integers(0, 5, n)
    return pl.DataFrame(cols)


def peer_seconds(script: str, csv: Path) -> float | None:
    """Median seconds of the timed R expression (None when PEER_RLIB is unset or R fails)."""
    rlib = os.environ.get("PEER_RLIB")
    if not rlib:
        return None
    code = (
        "suppressMessages(library(sdcMicro));"
        f"d <- read.csv('{csv}', check.names=FALSE, stringsAsFactors=TRUE);"
        f"ts <- sapply(1:3, function(i) system.time({script})[['elapsed']]);"
        "cat(median(ts), '\\n')"
    )
    env = dict(os.environ, R_LIBS_USER=rlib)
    try:
        out = subprocess.run(
            ["Rscript", "-e", code], capture_output=True, text=True, env=env, check=True, timeout=1800
        )
    except (OSError, subprocess.SubprocessError) as err:
        print(f"peer failed: {err}")
        return None
    return float(out.stdout.strip().split()[-1])


def _keys_r(keys: list[str]) -> str:
    return "c(" + ", ".join(f"'{k}'" for k in keys) + ")"


def ldiversity_rows(tdir: Path) -> None:
    """l-diversity on testdata and Adult, sdckit and sdcMicro's ``ldiversity`` in the same run."""
    td = pl.read_csv(TESTDATA)
    peer = peer_seconds(f"ldiversity(d, keyVars={_keys_r(TESTDATA_KEYS)}, ldiv_index='hhcivil')", TESTDATA)
    emit(
        "risk l_diversity testdata 4580x7, 1 sensitive",
        bench(lambda: l_diversity(td, TESTDATA_KEYS, ["hhcivil"]), repeat=9),
        peer=("sdcMicro ldiversity", peer) if peer else None,
        target=peer,
    )
    adult = load_adult()
    adult_csv = tdir / "adult_ld.csv"
    adult.write_csv(adult_csv)
    peer = peer_seconds(f"ldiversity(d, keyVars={_keys_r(ADULT_KEYS)}, ldiv_index='relationship')", adult_csv)
    emit(
        "risk l_diversity adult 32561x8, 1 sensitive",
        bench(lambda: l_diversity(adult, ADULT_KEYS, ["relationship"]), repeat=9),
        peer=("sdcMicro ldiversity", peer) if peer else None,
        target=peer,
    )


def main() -> None:
    warnings.simplefilter("ignore")
    if not os.environ.get("PEER_RLIB"):
        print("PEER_RLIB is not set: sdcMicro (the peer) was not run; figures are sdckit's alone.")
    with tempfile.TemporaryDirectory() as tmp:
        tdir = Path(tmp)
        ldiversity_rows(tdir)
        if sys.argv[1:] == ["ldiversity"]:
            return
        # SUDA2 on testdata (7 keys)
        td = pl.read_csv(TESTDATA)
        peer = peer_seconds(f"suda2(d, variables={_keys_r(TESTDATA_KEYS)}, DisFraction=0.01)", TESTDATA)
        emit(
            "risk suda2 testdata 4580x7",
            bench(lambda: suda2(td, TESTDATA_KEYS), repeat=5),
            peer=("sdcMicro suda2", peer) if peer else None,
            target=peer,
        )
        # SUDA2 on Adult (8 keys)
        adult = load_adult()
        adult_csv = tdir / "adult.csv"
        adult.write_csv(adult_csv)
        peer = peer_seconds(f"suda2(d, variables={_keys_r(ADULT_KEYS)}, DisFraction=0.01)", adult_csv)
        emit(
            "risk suda2 adult 32561x8",
            bench(lambda: suda2(adult, ADULT_KEYS), repeat=3),
            peer=("sdcMicro suda2", peer) if peer else None,
            target=peer,
            n_msu=suda2(adult, ADULT_KEYS).n_msu,
        )
        # individual risk, 1e6 rows with weights
        big = make(1_000_000)
        big_csv = tdir / "big.csv"
        big.write_csv(big_csv)
        names = [f"q{j}" for j in range(len(SUPPORTS))]
        peer = peer_seconds(f"measure_risk(d, keyVars={_keys_r(names)}, w='w')", big_csv)
        emit(
            "risk individual_risk 1e6x8 weighted",
            bench(lambda: individual_risk(big, names, weights="w"), repeat=3),
            peer=("sdcMicro measure_risk", peer) if peer else None,
            target=peer,
        )
        peer = peer_seconds(f"ldiversity(d, keyVars={_keys_r(names)}, ldiv_index='s')", big_csv)
        emit(
            "risk l_diversity 1e6x8, 1 sensitive",
            bench(lambda: l_diversity(big, names, ["s"]), repeat=3),
            peer=("sdcMicro ldiversity", peer) if peer else None,
            target=peer,
        )


if __name__ == "__main__":
    main()
