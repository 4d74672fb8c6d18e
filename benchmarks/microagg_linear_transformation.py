"""The seed's question, "can we improve data utility of other SDLs through linear transformation?", with its cost in risk.

Part 1, the experiment (``sdckit.microagg.experiment``): the eight data types of the seed (n = 1,000,
p = 5), four methods (MDAV k = 15; independent noise of 10 % of each variance; correlated noise
N(0, 0.1 S); rank swapping with a window of 5 % of the records), each released masked, moment-
restored and positivity-restored (mode same, buffer 5 %): IL1s, eigenvalue distance, covariance
change, propensity U_p, and record linkage (own original nearest / within the 5 nearest). Prints
the table (markdown) and the means per method and variant, and writes the plot of risk against
utility per type to docs/figures/microagg_risk_utility.svg.

Part 2, scale: record linkage, dRisk and dRiskRMD on 10^5 records (4 and 12 correlated columns,
MDAV-like masking by 5 % multiplicative noise), with sdcMicro's dRisk in the same run when
``PEER_RLIB`` is set (sdcMicro's dRiskRMD builds the n x n distance matrix: not run at 10^5).

    cd benchmarks && ../.venv/bin/python microagg_linear_transformation.py
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np

from _harness import emit
from sdckit.microagg import EIGHT_TYPES, METHODS, VARIANTS, experiment
from sdckit.risk import d_risk, d_risk_rmd, record_linkage

FIGURE = Path(__file__).resolve().parents[1] / "docs" / "figures" / "microagg_risk_utility.svg"
SEED = 20261130
MEASURES = ("il1s", "eigen_distance", "covariance_change", "propensity", "linkage_nearest", "linkage_within_k")


def _table(rows: list[dict[str, object]]) -> None:
    print("| type | method | variant | n' | IL1s | eigen | cov. change | U_p | linked nearest | linked within 5 |")
    print("| --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for r in rows:
        print(
            f"| {r['type']} | {r['method']} | {r['variant']} | {r['n_negative_records']} | {r['il1s']:.3f} | "
            f"{r['eigen_distance']:.3f} | {r['covariance_change']:.3f} | {r['propensity']:.4f} | "
            f"{100 * float(r['linkage_nearest']):.1f} % | {100 * float(r['linkage_within_k']):.1f} % |"  # type: ignore[arg-type]
        )


def _means(rows: list[dict[str, object]]) -> None:
    print("\nMeans over the eight types:")
    print("| method | variant | IL1s | eigen | cov. change | U_p | linked nearest | linked within 5 |")
    print("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    for method in METHODS:
        for variant in VARIANTS:
            sel = [r for r in rows if r["method"] == method and r["variant"] == variant]
            m = {key: float(np.mean([float(r[key]) for r in sel])) for key in MEASURES}  # type: ignore[arg-type]
            print(
                f"| {method} | {variant} | {m['il1s']:.3f} | {m['eigen_distance']:.3f} | {m['covariance_change']:.3f} | "
                f"{m['propensity']:.4f} | {100 * m['linkage_nearest']:.1f} % | {100 * m['linkage_within_k']:.1f} % |"
            )


def _plot(rows: list[dict[str, object]]) -> None:
    fig, axes = plt.subplots(2, 4, figsize=(16, 7.5))
    colours = dict(zip(METHODS, ("tab:blue", "tab:orange", "tab:green", "tab:red"), strict=True))
    markers = dict(zip(VARIANTS, ("o", "s", "^"), strict=True))
    for ax, name in zip(axes.ravel(), EIGHT_TYPES, strict=True):
        for method in METHODS:
            pts = [next(r for r in rows if r["type"] == name and r["method"] == method and r["variant"] == v) for v in VARIANTS]
            ax.plot([p["propensity"] for p in pts], [100 * float(p["linkage_nearest"]) for p in pts],  # type: ignore[arg-type]
                    color=colours[method], lw=0.8, alpha=0.6)
            for v, p in zip(VARIANTS, pts, strict=True):
                ax.scatter(p["propensity"], 100 * float(p["linkage_nearest"]), color=colours[method],  # type: ignore[arg-type]
                           marker=markers[v], s=30)
        ax.set_title(name, fontsize=9)
        ax.set_xlabel("U_p (lower: more useful)", fontsize=8)
        ax.set_ylabel("linked: own original nearest (%)", fontsize=8)
        ax.tick_params(labelsize=7)
    handles = [plt.Line2D([], [], color=c, lw=2, label=m) for m, c in colours.items()]
    handles += [plt.Line2D([], [], color="grey", marker=mk, ls="", label=v) for v, mk in markers.items()]
    fig.legend(handles=handles, loc="lower center", ncol=7, fontsize=8)
    fig.tight_layout(rect=(0, 0.05, 1, 1))
    FIGURE.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(FIGURE, format="svg", metadata={"Date": None})
    print(f"\nplot written to {FIGURE}")


def _scale() -> None:
    rng = np.random.default_rng(SEED)
    n = 100_000
    for p in (4, 12):
        factors = rng.standard_normal((n, 2))
        x = np.exp(factors @ rng.standard_normal((2, p)) * 0.5 + 0.3 * rng.standard_normal((n, p)))
        xm = x * np.exp(0.05 * rng.standard_normal(x.shape))
        t0 = time.perf_counter()
        link = record_linkage(x, xm, k=5)
        t_link = time.perf_counter() - t0
        emit(f"record_linkage 1e5x{p}", t_link, nearest=link.share_nearest, within_5=link.share_within_k)
        t0 = time.perf_counter()
        share = d_risk(x, xm)
        t_d = time.perf_counter() - t0
        peer = _peer_drisk(x, xm)
        emit(f"d_risk 1e5x{p}", t_d, peer=("sdcMicro dRisk", peer[1]) if peer else None, share=share,
             sdcmicro_share=peer[0] if peer else None)
        t0 = time.perf_counter()
        rmd = d_risk_rmd(x, xm)
        emit(f"d_risk_rmd 1e5x{p}", time.perf_counter() - t0, risk1=rmd.risk1, risk2=rmd.risk2)


def _peer_drisk(x: np.ndarray, xm: np.ndarray) -> tuple[float, float] | None:
    rlib = os.environ.get("PEER_RLIB")
    if not rlib:
        return None
    with tempfile.TemporaryDirectory() as tmp:
        np.savetxt(f"{tmp}/x.csv", x, delimiter=",", fmt="%.17g")
        np.savetxt(f"{tmp}/xm.csv", xm, delimiter=",", fmt="%.17g")
        script = (
            "suppressMessages(library(sdcMicro)); x <- read.csv(commandArgs(TRUE)[1], header=FALSE); "
            "xm <- read.csv(commandArgs(TRUE)[2], header=FALSE); t <- system.time(r <- dRisk(x, xm=xm))[['elapsed']]; "
            "cat(sprintf('%.10f %.4f', r, t))"
        )
        out = subprocess.run(["Rscript", "-e", script, f"{tmp}/x.csv", f"{tmp}/xm.csv"], env={**os.environ, "R_LIBS_USER": rlib},
                             capture_output=True, text=True, check=True).stdout.split()
    return float(out[0]), float(out[1])


def main() -> None:
    t0 = time.perf_counter()
    rows = experiment(n=1000, p=5, k=15, noise=0.1, swap_p=5.0, mode="same", buffer=0.05, seed=SEED)
    print(f"experiment: {len(rows)} rows in {time.perf_counter() - t0:.1f} s\n")
    _table(rows)
    _means(rows)
    _plot(rows)
    if "--no-scale" not in sys.argv:
        _scale()


if __name__ == "__main__":
    main()
