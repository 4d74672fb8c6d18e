"""The attacks an outsider runs (issue 34): against anonymeter, brute-force recounts, and simulation.

* anonymeter 1.1.0's figures on a table where its design applies (``_anonymeter_case.py`` says how
  they were computed: anonymeter cannot be installed beside numpy 2), and live when it is importable;
* singling out recounted by brute force, and duplicate-aware where anonymeter's deduplication misleads;
* the Wilson rate against the roots of its defining quadratic; the risk interval's coverage by
  simulation;
* CASC microaggregated at k = 3 (MDAV): the verdict warns, and a budget refuses it (exit 3).
"""

from __future__ import annotations

import math
from collections import Counter
from pathlib import Path

import numpy as np
import pandas as pd
import polars as pl
import pytest

from sdckit.microagg import MDAV
from sdckit.risk._measures._attacks import (
    attack_risk,
    inference_attack,
    judge_attacks,
    linkability_attack,
    release_attacks,
    singling_out_attack,
    wilson_rate,
)

DATA = Path(__file__).resolve().parents[1] / "data"

# --- the anonymeter case: its design applies (see _anonymeter_case.py for how its figures were computed) ---

N = 1000


def population(n: int, rng: np.random.Generator) -> pd.DataFrame:
    """Two correlated numbers and three categories, one of them tied to the first number."""
    x1 = rng.normal(size=n)
    x2 = x1 * 0.6 + rng.normal(size=n) * 0.8
    c1 = np.where(x1 + rng.normal(size=n) > 0, "a", "b")
    return pd.DataFrame({"c1": c1, "c2": rng.choice(list("pqrs"), n), "c3": rng.choice(list("uvwxyz"), n),
                         "x1": x1.round(4), "x2": x2.round(4)})


def mask(df: pd.DataFrame, rng: np.random.Generator) -> pd.DataFrame:
    """30 % of c2 and c3 redrawn at random; the numbers with a little noise."""
    out = df.copy()
    for c, values in (("c2", list("pqrs")), ("c3", list("uvwxyz"))):
        flip = rng.random(len(df)) < 0.3
        out.loc[flip, c] = rng.choice(values, int(flip.sum()))
    out["x1"] = (df["x1"] + rng.normal(scale=0.003, size=len(df))).round(4)
    out["x2"] = (df["x2"] + rng.normal(scale=0.003, size=len(df))).round(4)
    return out


def case(seed: int) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """(targets, release, control)."""
    rng = np.random.default_rng(seed)
    ori, control = population(N, rng), population(N, rng)
    return ori, mask(ori, rng), control


# anonymeter 1.1.0, (risk, ci low, ci high) at 95 %, n_attacks=300; SinglingOutEvaluator(n_cols=3,
# seed=seed).evaluate(mode="multivariate"); LinkabilityEvaluator(aux_cols=(["x1"], ["x2"]), n_neighbors=1);
# InferenceEvaluator(aux_cols=["x1", "x2"], secret="c1"); on case(seed) (see _anonymeter_case.py).
ANONYMETER = {
    1: {"singling_out": (0.014, 0.0, 0.1159), "linkability": (0.202, 0.1561, 0.248), "inference": (0.967, 0.9384, 0.9957)},
    2: {"singling_out": (0.1633, 0.0835, 0.2432), "linkability": (0.1529, 0.1107, 0.1951), "inference": (0.9828, 0.9655, 1.0)},
    3: {"singling_out": (0.1111, 0.0303, 0.192), "linkability": (0.1888, 0.1439, 0.2337), "inference": (0.9828, 0.9655, 1.0)},
}


def _ours(seed: int) -> dict[str, tuple[float, float, float]]:
    ori, syn, ctl = (pl.from_pandas(d) for d in case(seed))
    rng = np.random.default_rng(1000 + seed)
    so = singling_out_attack(ori, syn, ctl, n_attacks=300, n_cols=3, rng=rng)
    lk = linkability_attack(ori, syn, ctl, aux_cols=(["x1"], ["x2"]), n_attacks=300, rng=rng)
    cols = ["x1", "x2", "c1"]
    inf, _ = inference_attack(ori.select(cols), syn.select(cols), ctl.select(cols), secrets=["c1"], n_attacks=300, rng=rng)
    return {r.attack: (r.risk, r.risk_low, r.risk_high) for r in (so, lk, inf)}


def _agree(ours: tuple[float, float, float], theirs: tuple[float, float, float]) -> bool:
    """Two independent estimates of one risk agree when their difference is within the interval of the
    difference: sqrt(h1^2 + h2^2), h the half-widths (anonymeter's interval widened by ours)."""
    h_ours = (ours[2] - ours[1]) / 2
    h_theirs = (theirs[2] - theirs[1]) / 2
    return abs(ours[0] - theirs[0]) <= math.hypot(h_ours, h_theirs) + 1e-9


@pytest.mark.parametrize("seed", sorted(ANONYMETER))
def test_attacks_agree_with_anonymeter_where_its_design_applies(seed: int) -> None:
    ours = _ours(seed)
    for attack, theirs in ANONYMETER[seed].items():
        assert _agree(ours[attack], theirs), (attack, ours[attack], theirs)
    assert ours["inference"][0] > 0.9
    assert ours["linkability"][0] > 0.1


def test_attacks_agree_with_anonymeter_live() -> None:
    pytest.importorskip("anonymeter")  # not installable beside numpy 2 (see _anonymeter_case.py)
    from anonymeter.evaluators import LinkabilityEvaluator

    ori, syn, ctl = case(4)
    r = LinkabilityEvaluator(ori=ori, syn=syn, control=ctl, n_attacks=300, aux_cols=(["x1"], ["x2"])).evaluate().risk()
    got = linkability_attack(*(pl.from_pandas(d) for d in (ori, syn, ctl)), aux_cols=(["x1"], ["x2"]), n_attacks=300,
                             rng=np.random.default_rng(4))
    assert _agree((got.risk, got.risk_low, got.risk_high), (r.value, r.ci[0], r.ci[1]))


def test_singling_out_is_recounted_by_brute_force() -> None:
    """Queries on every column of a category table: a query is a whole released row, kept when no other
    released row equals it; it succeeds when exactly one target record equals it. Every such row found
    (attempts enough), the successes are a count over the distinct rows."""
    rng = np.random.default_rng(5)
    cols = ["a", "b", "c"]

    def table(n: int) -> pl.DataFrame:
        return pl.DataFrame({c: rng.choice(["0", "1", "2", "3"], n) for c in cols})

    targets, control = table(150), table(150)
    release = targets.with_columns(pl.when(pl.Series(rng.random(150) < 0.2)).then(pl.lit("0")).otherwise(pl.col("b")).alias("b"))
    rel_rows = Counter(release.rows())
    tgt_rows = Counter(targets.rows())
    ctl_rows = Counter(control.rows())
    unique = [r for r, m in rel_rows.items() if m == 1]
    got = singling_out_attack(targets, release, control, n_attacks=len(unique), n_cols=3, max_attempts=200_000,
                              rng=np.random.default_rng(6))
    assert got.detail["queries_found"] == len(unique)
    assert got.n_success == sum(tgt_rows[r] == 1 for r in unique)
    assert got.n_control_success == sum(ctl_rows[r] == 1 for r in unique)
    assert 0 < got.n_success < len(unique)


@pytest.mark.parametrize("deduplicate", [False, True])
def test_the_subsample_prefilter_changes_nothing(deduplicate: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    """A candidate dropped because two different released rows of a sample match it matches them in the
    whole table too: with and without the prefilter, the same queries, successes and dedup_only."""
    from sdckit.risk._measures import _attacks

    rng = np.random.default_rng(9)
    x = rng.integers(0, 6, size=(900, 4))
    targets = pl.DataFrame({"a": x[:, 0], "b": x[:, 1].astype(str), "c": x[:, 2] * 1.5, "d": x[:, 3].astype(str)})
    release = pl.concat([targets[:600], targets[:300]])  # duplicates: 300 rows released twice
    control = targets.sample(900, seed=1, with_replacement=True)
    runs = []
    for threshold in (10**9, 10):
        monkeypatch.setattr(_attacks, "SUBSAMPLE_MIN_ROWS", threshold)
        got = singling_out_attack(targets, release, control, n_attacks=40, n_cols=3, max_attempts=3000,
                                  rng=np.random.default_rng(10), deduplicate=deduplicate)
        runs.append((got.n_success, got.n_control_success, got.detail["queries_found"], got.detail["dedup_only"],
                     got.detail["candidates_tried"]))
    assert runs[0] == runs[1]
    assert runs[0][2] > 0
    assert runs[0][3] > 0


def test_singling_out_counts_duplicate_released_rows() -> None:
    """MDAV at k = 3 by hand: each released row is the mean of 3 persons, repeated 3 times. A query built
    from a released row matches its 3 copies: it points at 3 persons, never singles one out. anonymeter's
    reading (deduplicate the release first) keeps such queries and counts those matching one original."""
    rng = np.random.default_rng(7)
    x = np.sort(rng.normal(size=(60, 3)), axis=0)
    targets = pl.DataFrame(x, schema=["a", "b", "c"])
    release = pl.DataFrame(np.repeat(x.reshape(20, 3, 3).mean(axis=1), 3, axis=0), schema=["a", "b", "c"])
    control = pl.DataFrame(rng.normal(size=(60, 3)), schema=["a", "b", "c"])
    aware = singling_out_attack(targets, release, control, n_attacks=50, rng=np.random.default_rng(8))
    dedup = singling_out_attack(targets, release, control, n_attacks=50, rng=np.random.default_rng(8), deduplicate=True)
    assert aware.detail["queries_found"] == 0
    assert aware.n_success == 0
    assert aware.risk == 0.0
    assert aware.detail["dedup_only"] > 0  # the candidates anonymeter would have kept
    assert dedup.detail["queries_found"] > 0
    assert dedup.n_success > 0
    # the reading that misleads: a query matching 3 released rows "singles out" one original
    assert dedup.attack_rate > aware.attack_rate


def test_linkability_and_inference_split_ties_among_identical_rows() -> None:
    """Groups of k identical released rows: the attacker's pick among them is right with chance 1/k."""
    k = 4
    x = np.arange(40, dtype=np.float64).reshape(20, 2) * 10
    targets = pl.DataFrame({"a": np.repeat(x[:, 0], k), "b": np.repeat(x[:, 1], k),
                            "s": [str(i % k) for i in range(20 * k)]})
    release = targets
    control = pl.DataFrame({"a": x[:, 0] + 5, "b": x[:, 1] - 5, "s": ["9"] * 20})
    lk = linkability_attack(targets, release, control, aux_cols=(["a"], ["b"]), n_attacks=80, rng=np.random.default_rng(0))
    assert lk.n_success == pytest.approx(80 / k)
    inf, _ = inference_attack(targets, release, control, secrets=["s"], n_attacks=80, rng=np.random.default_rng(0))
    assert inf.n_success == pytest.approx(80 / k)
    assert inf.n_control_success == 0


def _wilson_by_roots(n: int, s: int, z: float) -> tuple[float, float]:
    """The Wilson interval as the roots of (p - s/n)^2 = z^2 p (1 - p) / n: (centre, half-width)."""
    ph = s / n
    a, b, c = 1 + z * z / n, -(2 * ph + z * z / n), ph * ph
    lo, hi = sorted(np.roots([a, b, c]).real)
    return (lo + hi) / 2, (hi - lo) / 2


@pytest.mark.parametrize(("n", "s"), [(300, 0), (300, 17), (50, 25), (1000, 999)])
def test_wilson_rate_is_the_root_interval(n: int, s: int) -> None:
    centre, half = _wilson_by_roots(n, s, 1.959963984540054)
    assert wilson_rate(n, s, 0.95) == pytest.approx((centre, half), abs=1e-9)


@pytest.mark.parametrize(("pa", "pc"), [(0.30, 0.10), (0.12, 0.10), (0.6, 0.5), (0.05, 0.01)])
def test_risk_interval_covers_the_true_risk(pa: float, pc: float) -> None:
    """4,000 simulated attacks of n = 300 on each side: the 95 % interval holds the true risk
    (pa - pc)/(1 - pc) in 93-98 % of them (first-order propagation of two Wilson errors)."""
    rng = np.random.default_rng(int(1000 * pa + 10 * pc))
    n, reps = 300, 4000
    truth = (pa - pc) / (1 - pc)
    sa, sc = rng.binomial(n, pa, reps), rng.binomial(n, pc, reps)
    hits = 0
    for a, c in zip(sa, sc, strict=True):
        _, lo, hi = attack_risk(n, int(a), n, int(c))
        hits += lo <= truth <= hi
    assert 0.93 <= hits / reps <= 0.985


def test_judge_attacks_budget_and_warning() -> None:
    figures = {"singling_out": {"risk": 0.08, "risk_low": 0.05, "risk_high": 0.11},
               "linkability": {"risk": 0.02, "risk_low": 0.0, "risk_high": 0.04},
               "inference": {"risk": 0.06, "risk_low": 0.01, "risk_high": 0.11}}
    noisy = {"inference": {"risk": 0.12, "risk_low": 0.0, "risk_high": 0.41}}  # above 5 %, but not beyond chance
    assert judge_attacks(noisy, {})["shows_risk"] == []
    got = judge_attacks({k: dict(v) for k, v in figures.items()}, {"singling_out": 0.1, "linkability": 0.01})
    assert got["over_budget"] == ["linkability"]
    assert got["shows_risk"] == ["linkability", "inference"]  # singling out is within its budget


@pytest.fixture(scope="module")
def casc_mdav3() -> tuple[pl.DataFrame, pl.DataFrame]:
    df = pl.read_csv(DATA / "casc_tarragona.csv.gz").cast(pl.Float64)
    xm = MDAV(k=3).fit_transform(df.to_numpy())
    return df, pl.DataFrame(np.asarray(xm), schema=df.columns)


def test_casc_mdav_k3_shows_singling_out_risk(casc_mdav3: tuple[pl.DataFrame, pl.DataFrame]) -> None:
    original, release = casc_mdav3
    got = [release_attacks(original, release, seed=s) for s in (1, 2)]
    risks = [g["singling_out"]["risk"] for g in got]
    assert min(risks) > 0.05, risks
    # duplicate-aware: MDAV repeats every released row 3 times; the candidates matching one row repeated
    # (anonymeter would keep them) are many, and not counted
    assert min(g["singling_out"]["detail"]["dedup_only"] for g in got) > 100


def test_release_attacks_are_reproducible_only_when_seeded(casc_mdav3: tuple[pl.DataFrame, pl.DataFrame]) -> None:
    original, release = casc_mdav3[0][:150], casc_mdav3[1][:150]
    assert release_attacks(original, release, seed=4) == release_attacks(original, release, seed=4)
    a, b = release_attacks(original, release), release_attacks(original, release)
    assert a["singling_out"] != b["singling_out"] or a["linkability"] != b["linkability"]
