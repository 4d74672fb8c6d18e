"""Calibration of the population-risk estimators on a population whose truth is known.

The population: 10^6 persons drawn from a Chow-Liu tree fitted exactly on the bundled UCI Adult
data (the maximum-mutual-information spanning tree of the quasi-identifiers, its conditional
tables the Adult frequencies): Adult's strongest pairwise dependence, at a size where
uniqueness is rare but real. Each repetition draws a 1 %, 5 % and 10 % simple random sample
(OS entropy), predicts from the sample alone who is unique in the population and what share is,
and compares with the truth:

* AUC for individual uniqueness (each sampled person labelled unique in the population or not);
* the error of the estimated share of population uniques (estimate - truth, in percentage points).

Estimators: Zayatz, Pitman and SNB (population counts; as a person's score they give the same
probability to every sample unique, so their AUC is that of "unique in the sample"), sdcMicro's
individual risk (Benedetti-Franconi, weights N / n; a person's score r_i), the seed's statistical
exposure (plug-in Q^stat_N(2): the expected unique share of a *fresh* sample of N), and the
Gaussian copula of Rocher, Hendrickx and de Montjoye (2019).

Run:  PYTHONPATH=src python benchmarks/risk_calibration.py --repetitions 100
      (default 10 repetitions; --population 200000 for a quick look)
"""

from __future__ import annotations

import argparse
import time
from itertools import combinations

import numpy as np
import polars as pl
from sklearn.metrics import mutual_info_score, roc_auc_score

from sdckit.datasets import load_adult
from sdckit.risk import individual_risk, plugin_exposure
from sdckit.risk._measures._population import (
    GaussianCopulaUniqueness,
    pitman_uniques,
    sample_class_sizes,
    snb_uniques,
    zayatz_uniques,
)

QIS = ["age", "sex", "race", "marital-status", "education", "workclass", "relationship", "native-country"]
FRACTIONS = (0.01, 0.05, 0.10)


def chow_liu_population(adult: pl.DataFrame, columns: list[str], size: int, rng: np.random.Generator) -> pl.DataFrame:
    """``size`` persons from the Chow-Liu tree of ``columns`` fitted on ``adult`` (exact frequencies)."""
    codes = {c: adult[c].cast(pl.String).to_numpy() for c in columns}
    levels = {c: np.unique(codes[c]) for c in columns}
    idx = {c: np.searchsorted(levels[c], codes[c]) for c in columns}
    weights = {(a, b): mutual_info_score(idx[a], idx[b]) for a, b in combinations(columns, 2)}
    parent: dict[str, str | None] = {columns[0]: None}
    while len(parent) < len(columns):  # Prim's algorithm on mutual information
        a, b = max(((a, b) for a in parent for b in columns if b not in parent),
                   key=lambda e: weights.get(e, weights.get((e[1], e[0]), 0.0)))
        parent[b] = a
    out: dict[str, np.ndarray] = {}
    root = columns[0]
    p = np.bincount(idx[root], minlength=len(levels[root])) / adult.height
    out[root] = rng.choice(len(levels[root]), size=size, p=p)
    for child, par in parent.items():
        if par is None:
            continue
        table = np.zeros((len(levels[par]), len(levels[child])))
        np.add.at(table, (idx[par], idx[child]), 1.0)
        table /= table.sum(axis=1, keepdims=True)
        values = np.empty(size, dtype=np.int64)
        for v in range(len(levels[par])):
            rows = np.flatnonzero(out[par] == v)
            values[rows] = rng.choice(len(levels[child]), size=rows.size, p=table[v])
        out[child] = values
    return pl.DataFrame({c: levels[c][out[c]] for c in columns}).with_columns(pl.col("age").cast(pl.Int64))


def one_repetition(pop: pl.DataFrame, pop_unique: np.ndarray, fraction: float, rng: np.random.Generator,
                   score_at_most: int) -> dict[str, tuple[float | None, float | None]]:
    """{estimator: (AUC, share error in points)} for one sample."""
    big_n = pop.height
    n = round(fraction * big_n)
    rows = rng.choice(big_n, size=n, replace=False)
    sample = pop[rows]
    truth = pop_unique[rows]
    true_share = pop_unique.mean()
    sizes = sample_class_sizes(sample, QIS)
    f = sample.select(pl.len().over(QIS)).to_series().to_numpy()
    out: dict[str, tuple[float | None, float | None]] = {}
    sample_unique = (f == 1).astype(float)
    auc_su = roc_auc_score(truth, sample_unique)
    for name, fn in (("Zayatz", zayatz_uniques), ("Pitman", pitman_uniques), ("SNB", snb_uniques)):
        est = fn(sizes, population=big_n)
        out[name] = (auc_su, 100 * (est.share - true_share))
    weighted = sample.with_columns(pl.lit(big_n / n).alias("__w"))
    ir = individual_risk(weighted, QIS, weights="__w")
    out["individual risk (sdcMicro)"] = (roc_auc_score(truth, ir.risk), None)
    counts = sample.group_by(QIS).len()["len"].to_numpy()
    out["statistical exposure (plug-in)"] = (None, 100 * (plugin_exposure(counts, n=big_n, k=2) - true_share))
    copula = GaussianCopulaUniqueness(population=big_n).fit(sample, QIS)
    scored = rng.choice(n, size=min(n, score_at_most), replace=False)
    xi = copula.predict_uniqueness(sample[scored])
    out["Gaussian copula (Rocher et al.)"] = (roc_auc_score(truth[scored], xi), 100 * (xi.mean() - true_share))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repetitions", type=int, default=10, help="samples per fraction (100 for the docs' table)")
    ap.add_argument("--population", type=int, default=1_000_000)
    ap.add_argument("--score-at-most", type=int, default=20_000,
                    help="copula: score at most this many sampled persons (a random subset; the share estimate stays unbiased)")
    args = ap.parse_args()
    t0 = time.perf_counter()
    rng = np.random.default_rng(20190723)  # the population is fixed (reproducible); the samples are not
    pop = chow_liu_population(load_adult(), QIS, args.population, rng)
    pop_unique = (pop.select(pl.len().over(QIS)).to_series().to_numpy() == 1)
    print(f"population: {pop.height:,} persons, {len(QIS)} quasi-identifiers ({', '.join(QIS)}); "
          f"{pop_unique.sum():,} population uniques ({100 * pop_unique.mean():.2f} %); built in {time.perf_counter() - t0:.1f} s")
    sample_rng = np.random.default_rng()  # OS entropy
    results: dict[tuple[float, str], list[tuple[float | None, float | None]]] = {}
    for fraction in FRACTIONS:
        for r in range(args.repetitions):
            for name, val in one_repetition(pop, pop_unique, fraction, sample_rng, args.score_at_most).items():
                results.setdefault((fraction, name), []).append(val)
            print(f"  {100 * fraction:g} % sample, repetition {r + 1}/{args.repetitions} "
                  f"({time.perf_counter() - t0:.0f} s)", flush=True)
    print()
    print("| sample | estimator | AUC individual uniqueness (mean ± sd) | share error, points (mean ± sd) | "
          "|share error|, points (mean) |")
    print("| --- | --- | --- | --- | --- |")
    for (fraction, name), vals in results.items():
        auc = [a for a, _ in vals if a is not None]
        err = [e for _, e in vals if e is not None]
        auc_s = f"{np.mean(auc):.3f} ± {np.std(auc):.3f}" if auc else "–"
        err_s = f"{np.mean(err):+.2f} ± {np.std(err):.2f}" if err else "–"
        abs_s = f"{np.mean(np.abs(err)):.2f}" if err else "–"
        print(f"| {100 * fraction:g} % | {name} | {auc_s} | {err_s} | {abs_s} |")
    print(f"\n{args.repetitions} repetitions per fraction; true population-unique share "
          f"{100 * pop_unique.mean():.2f} %; {time.perf_counter() - t0:.0f} s in all")


if __name__ == "__main__":
    main()
