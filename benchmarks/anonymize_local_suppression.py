"""Local suppression to k = 3 against sdcMicro's ``localSuppression``, local suppression with decoys on
adult.yaml's recoding at k = 5, and the lattice planner on Adult.

Data: a synthetic key table of 32,561 rows x 8 keys with supports 2, 3, 4, 5, 6, 7, 8, 10, value j of
each key drawn with probability proportional to 1 / j (seed 20261201). Target: under 10 s at k = 3.
sdcMicro needs more than 600 s on this table, so with ``PEER_RLIB`` set the peer runs in the same
process on the first ``PEER_ROWS`` rows (both tools timed on that same smaller table, ratio printed)
and on the full table only with ``--peer-full`` (a 900 s timeout). Without ``PEER_RLIB`` the
benchmark says that the peer was not run. The planner line times ``plan_release`` on Adult (8
quasi-identifiers, k = 5, budget 0.05, built-in hierarchies, suppression 0.2, no withholding).

The decoys line (issue 21): Adult recoded as issue 21 states it (adult.yaml's former recoding: age in
10-year bands, education in 6 levels, native-country in 12 regions), 8 keys, k = 5; ``LocalSuppressor`` (decoys,
the default) against sdcMicro's ``localSuppression`` on the same keys, each release given its cells,
its time and the three figures: identical rows (share of users in groups of fewer than k identical
rows), consistent count (share of users with fewer than k consistent rows) and wildcard (sdcMicro's
reading). Target: at most 25,000 cells in under 10 s (a simple greedy: 29,900; the floor: 11,103).

Issue 38: every decoys and exact-mode line also prints the certificate (cells, the proven lower bound,
the gap and how it was proven). The census line (``--census N``, default 100,000 rows; ``--census
1000000`` for the README figure) runs the decoys kernel on the synthetic table above at N rows, k = 3,
in a child process: CPU seconds (``time.process_time``) and peak memory above the data (the growth
of the child's peak resident set, ``resource.getrusage``, after the key codes are built), with an
independent check (plain polars group_by) that every released row is in a group of at least k.
Target at 10^6 rows: at most 20 CPU-s and 300 MB.

    cd benchmarks && PYTHONPATH=../src ../.venv/bin/python anonymize_local_suppression.py [--quick] [--peer-full]
        [--census N] [--census-only] [--optimal-seconds S] [--certificate-seconds S] [--adult-only]

The Adult decoys line's timed fits use ``time_limit=0`` (the floor); one more fit gets the
certificate's Lagrangian bound within ``--certificate-seconds`` (default 120), its CPU printed.
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from _harness import bench, emit
from sdckit.anonymize import LocalSuppressor
from sdckit.datasets import ADULT_QUASI_IDENTIFIERS, load_adult, load_adult_hierarchies
from sdckit.plan import plan_release
from sdckit.risk import Marginals, wildcard_group_sizes

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
    return LocalSuppressor(k=K, method="sdcmicro").fit(frame)


PEER_DECOY_SCRIPT = r"""
suppressMessages(library(sdcMicro))
d <- read.csv("{path}", check.names = FALSE, na.strings = "")
names(d) <- gsub("-", "_", names(d))  # sdcMicro evaluates the key names: no hyphen
keys <- names(d)
for (v in keys) d[[v]] <- as.factor(d[[v]])
t0 <- proc.time()[["elapsed"]]
s <- localSuppression(createSdcObj(d, keyVars = keys), k = {k})
el <- proc.time()[["elapsed"]] - t0
write.csv(extractManipData(s)[, keys], "{out}", row.names = FALSE, na = "")
cat(sprintf("%s %.3f %d\n", as.character(packageVersion("sdcMicro")), el, sum(s@localSuppression$totalSupps)))
"""


def adult_recoded() -> pl.DataFrame:
    from sdckit.anonymize import GlobalRecoder

    rules = {
        "age": {"hierarchy": "adult:age", "level": 2},
        "education": {"hierarchy": "adult:education", "level": 1},
        "native-country": {"hierarchy": "adult:native-country", "level": 1},
    }
    return GlobalRecoder(rules=rules).fit_transform(load_adult()).select(list(ADULT_QUASI_IDENTIFIERS))


def three_figures(release: pl.DataFrame, known: pl.DataFrame, k: int) -> dict[str, str]:
    from sdckit.risk import measure_release

    m = measure_release(release, quasi_identifiers=list(known.columns), k=k, budget=0.05, known=known)
    return {
        "identical_rows": f"{100 * m.exposure_at_k:.2f}%",
        "consistent": f"{100 * (m.consistent_below_k or 0.0):.2f}%",
        "wildcard": f"{100 * (m.exposure_wildcard or 0.0):.2f}%",
    }


def census_child(n: int) -> None:
    """In a child process: the decoys kernel on ``n`` synthetic rows; prints one JSON line."""
    from sdckit.anonymize._certificate import certify
    from sdckit.anonymize._decoys import decoy_suppress, distinct_rows

    frame = synthetic(n)
    codes = np.ascontiguousarray(frame.to_numpy().astype(np.int32) - 1)
    decoy_suppress(codes[:2000], K, np.ones(codes.shape[1]), np.random.default_rng())  # compile the kernels
    base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    cpu0 = time.process_time()
    got = decoy_suppress(codes, K, np.ones(codes.shape[1]), np.random.default_rng())
    cpu = time.process_time() - cpu0
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    cells = int(got.suppressed.sum())
    cpu1 = time.process_time()
    origins, _, counts = distinct_rows(codes)
    cert = certify(origins, counts, K, cells, time_limit=60)
    cert_cpu = time.process_time() - cpu1
    released = pl.DataFrame(np.where(got.suppressed, -1, codes), schema=list(frame.columns))
    smallest = int(released.group_by(released.columns).len()["len"].min())  # plain polars, -1 a value
    unsafe = int(counts[counts < K].sum())
    print(json.dumps({"rows": n, "cpu": cpu, "mb": (peak - base) / 1024, "cells": cells, "unsafe": unsafe,
                      "smallest": smallest, "bound": cert.lower_bound, "gap": cert.gap, "bound_method": cert.method,
                      "cert_cpu": cert_cpu}))


def decoys_census(n: int) -> None:
    done = subprocess.run([sys.executable, __file__, "--census-child", str(n)], capture_output=True, text=True,
                          check=True, timeout=3600)
    got = json.loads(done.stdout.strip().splitlines()[-1])
    assert got["smallest"] >= K
    emit(f"decoys kernel {n:,}x8 k={K} (census)", got["cpu"], target=20.0 if n >= 1_000_000 else None,
         cpu_seconds=round(got["cpu"], 1), mb_above_data=round(got["mb"]), unsafe_rows=got["unsafe"],
         cells=got["cells"], bound=got["bound"], gap=f"{100 * got['gap']:.1f}%", bound_method=got["bound_method"],
         certificate_cpu_seconds=round(got["cert_cpu"], 1))


def peer_on_adult(known: pl.DataFrame, keys: list[str]) -> tuple[str, float, int, dict[str, str]] | None:
    """sdcMicro's ``localSuppression`` at k = 5 on the same recoded keys: (version, seconds, cells, the three
    figures of its release); None without ``PEER_RLIB`` or when it fails (said)."""
    if not os.environ.get("PEER_RLIB"):
        return None
    with tempfile.TemporaryDirectory() as tmp:
        path, out = Path(tmp) / "keys.csv", Path(tmp) / "out.csv"
        known.write_csv(path)
        script = Path(tmp) / "peer.R"
        script.write_text(PEER_DECOY_SCRIPT.format(path=path, out=out, k=5), encoding="utf-8")
        env = {**os.environ, "R_LIBS_USER": os.environ["PEER_RLIB"]}
        try:
            done = subprocess.run(["Rscript", str(script)], capture_output=True, text=True, env=env, timeout=900,
                                  check=True)
        except (subprocess.TimeoutExpired, subprocess.CalledProcessError) as err:
            print(f"peer sdcMicro on the recoded Adult keys failed or timed out: {type(err).__name__}")
            return None
        version, seconds, cells = done.stdout.split()[-3:]
        peer_release = pl.read_csv(out, infer_schema=False).rename(dict(zip(
            pl.read_csv(out, n_rows=0).columns, keys, strict=True)))
        peer_known = known.select([pl.col(c).cast(pl.String) for c in keys])
        return version, float(seconds), int(cells), three_figures(peer_release, peer_known, 5)


def beside_peer(peer: tuple[str, float, int, dict[str, str]] | None) -> dict[str, Any]:
    """``emit``'s arguments for the peer's run beside a line: its name and time, its cells and figures."""
    if peer is None:
        return {}
    version, seconds, cells, figures = peer
    return {"peer": (f"sdcMicro {version} localSuppression", seconds), "peer_cells": cells,
            **{f"peer_{key}": value for key, value in figures.items()}}


def decoys_on_adult(quick: bool, certificate_seconds: float) -> tuple[str, float, int, dict[str, str]] | None:
    keys = list(ADULT_QUASI_IDENTIFIERS)
    known = adult_recoded()
    models: list[LocalSuppressor] = []
    # the timed fits: the decoys with the floor as the bound (time_limit=0); then one fit with the
    # certificate's Lagrangian bound given ``certificate_seconds`` (its time printed on its own)
    t = bench(lambda: models.append(LocalSuppressor(k=5, columns=keys, time_limit=0).fit(known)),
              repeat=1 if quick else 3, warmup=1)
    cpu0 = time.process_time()
    models.append(LocalSuppressor(k=5, columns=keys, time_limit=certificate_seconds).fit(known))
    cpu = time.process_time() - cpu0  # CPU seconds of one fit with its certificate: other load left out
    model = models[-1]
    release = model.transform(known)
    assert int(release.group_by(keys).len()["len"].min()) >= 5  # plain polars, a missing cell a value
    figures = three_figures(release, known, 5)
    # the default fit's bound is the floor (quick); the Lagrangian bound of its release, computed here
    from sdckit.anonymize._certificate import certify
    from sdckit.anonymize._decoys import distinct_rows

    codes = np.ascontiguousarray(np.column_stack([
        known[c].cast(pl.String).rank("dense").fill_null(0).cast(pl.Int64).to_numpy() - 1 for c in keys
    ]).astype(np.int32))
    origins, _, counts = distinct_rows(codes)
    cert = certify(origins, counts, 5, model.n_suppressed_, time_limit=certificate_seconds).as_dict()
    figures.update(bound=cert["lower_bound"], gap=f"{100 * cert['gap']:.1f}%", bound_method=cert["bound_method"],
                   certificate_seconds=certificate_seconds)
    peer = peer_on_adult(known, keys)
    label = "local suppression with decoys, Adult recoded 32,561x8 k=5"
    if not os.environ.get("PEER_RLIB"):
        print("peer not run: set PEER_RLIB to run sdcMicro's localSuppression on the same keys")
    emit(label, t, target=10.0, cpu_seconds=round(cpu, 1), cells=model.n_suppressed_, **figures, **beside_peer(peer))
    return peer


def optimal_on_adult(seconds: float, peer: tuple[str, float, int, dict[str, str]] | None = None) -> None:
    """The exact mode on the same keys, cut off after ``seconds``: the best release found and its gap, beside
    sdcMicro's ``localSuppression`` on the same keys (``peer``, from the decoys line) when it ran."""
    keys = list(ADULT_QUASI_IDENTIFIERS)
    known = adult_recoded()
    t0 = time.perf_counter()
    model = LocalSuppressor(k=5, columns=keys, method="optimal", time_limit=seconds).fit(known)
    elapsed = time.perf_counter() - t0
    release = model.transform(known)
    smallest = int(release.group_by(keys).len()["len"].min())  # plain polars, a missing cell a value
    hidden = sum(release[c].null_count() for c in keys) - sum(known[c].null_count() for c in keys)
    cert = model.certificate_
    figures = dict(cells=hidden, smallest_group=smallest, bound=cert["lower_bound"], gap=f"{100 * cert['gap']:.1f}%",
                   bound_method=cert["bound_method"], proven_optimal=model.optimal_,
                   **three_figures(release, known, 5))
    label = f"local suppression optimal (time limit {seconds:g} s), Adult recoded 32,561x8 k=5"
    emit(label, elapsed, **figures, **beside_peer(peer))


def main() -> None:
    if "--census-child" in sys.argv:
        census_child(int(sys.argv[sys.argv.index("--census-child") + 1]))
        return
    census = int(sys.argv[sys.argv.index("--census") + 1]) if "--census" in sys.argv else 100_000
    decoys_census(census)
    if "--census-only" in sys.argv:
        return
    quick = "--quick" in sys.argv
    cert_seconds = float(sys.argv[sys.argv.index("--certificate-seconds") + 1]) if "--certificate-seconds" in sys.argv else 120.0
    seconds = float(sys.argv[sys.argv.index("--optimal-seconds") + 1]) if "--optimal-seconds" in sys.argv else 120.0
    if "--adult-only" in sys.argv:
        optimal_on_adult(seconds, decoys_on_adult(quick, cert_seconds))
        return
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

    optimal_on_adult(seconds, decoys_on_adult(quick, cert_seconds))
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
