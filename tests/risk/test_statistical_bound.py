"""The statistical-setting bound and planner against simulated populations with known laws.

Every population law p below is written out in the test; the exact statistical exposure of a fresh
release of n users is Q^stat_n(k) = sum_v p_v P(Bin(n - 1, p_v) <= k - 2) (anonymity notes §3),
computed with scipy.stats.binom directly, never with sdckit.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from scipy.stats import binom

from sdckit.errors import ColumnNotFoundError, InfeasibleError, ParameterError
from sdckit.plan import plan_release
from sdckit.risk import Marginals, joint_exposure_bound, statistical_exposure_bound

SEED = 20261130


def exact_qstat(law: np.ndarray, n: int, k: int) -> float:
    law = law[law > 0]
    return float(np.sum(law * binom.cdf(k - 2, n - 1, law)))


def release_exposure(rng: np.random.Generator, law: np.ndarray, n: int, k: int) -> float:
    """Share of n fresh users (drawn from ``law``) whose value is held by fewer than k of them."""
    counts = np.bincount(rng.choice(law.size, size=n, p=law), minlength=law.size)
    return float(counts[(counts > 0) & (counts < k)].sum() / n)


def sample_marginals(rng: np.random.Generator, law: np.ndarray, shape: tuple[int, ...], n_hat: int) -> Marginals:
    """Draw n_hat users from the joint ``law`` on ``shape``; keep only the single-column counts."""
    cells = np.unravel_index(rng.choice(law.size, size=n_hat, p=law), shape)
    out = {}
    for j, col in enumerate(cells):
        c = np.bincount(col, minlength=shape[j])
        out[f"c{j}"] = {int(v): int(x) for v, x in enumerate(c) if x > 0}
    return Marginals.from_counts(out)


def project(law: np.ndarray, shape: tuple[int, ...], cols: tuple[int, ...]) -> np.ndarray:
    """The joint law of the columns ``cols`` (sum over the others)."""
    other = tuple(j for j in range(len(shape)) if j not in cols)
    return law.reshape(shape).sum(axis=other).ravel()


# Rare tail: half the users share one value, the other half spread over 500 values of mass 0.001.
# Q^stat is about 0.5 and the bound about 0.5 + D, so a bound that forgot the sampling error fails
# in about half of the repetitions: these scenarios can catch an unsound bound.
TAIL = np.concatenate([[0.5], np.full(500, 0.001)])
SCENARIOS = {
    "tail, one column": (TAIL, (501,), 1000, 10, 20_000),
    "tail x fair coin": (np.outer(TAIL, [0.5, 0.5]).ravel(), (501, 2), 1000, 10, 20_000),
    "dependent 2 x 3, small release": (
        np.array([[0.40, 0.20, 0.02], [0.25, 0.10, 0.03]]).ravel(),
        (2, 3),
        60,
        5,
        5_000,
    ),
}


def test_fresh_releases_average_the_exact_statistical_exposure() -> None:
    # The target itself: the mean share below k over fresh releases is Q^stat (Monte Carlo check of
    # the formula used as the reference below). A per-release share lies in [0, 1], so its variance
    # is at most q (1 - q); 4 standard errors.
    law, _, n, k, _ = SCENARIOS["dependent 2 x 3, small release"]
    rng = np.random.default_rng(SEED)
    reps = 4000
    q = exact_qstat(law, n, k)
    q_mc = float(np.mean([release_exposure(rng, law, n, k) for _ in range(reps)]))
    assert abs(q_mc - q) < 4 * math.sqrt(q * (1 - q) / reps)


@pytest.mark.parametrize("name", list(SCENARIOS))
@pytest.mark.parametrize("delta", [0.05, 0.3])
def test_bound_holds_with_probability_one_minus_delta(name: str, delta: float) -> None:
    law, shape, n, k, n_hat = SCENARIOS[name]
    q = exact_qstat(law, n, k)
    rng = np.random.default_rng(SEED)
    reps = 150
    bounds = np.array(
        [
            statistical_exposure_bound(sample_marginals(rng, law, shape, n_hat), k=k, n_release=n, delta=delta)
            for _ in range(reps)
        ]
    )
    failures = int(np.sum(bounds < q))
    assert failures <= delta * reps, (q, np.sort(bounds)[:5])
    assert np.all(bounds <= 1.0)
    assert np.median(bounds) < 0.6  # informative, not the trivial bound 1


def test_bound_is_close_to_the_truth_on_the_rare_tail() -> None:
    # one column: the sample's exposure is exact, so the bound is Q^stat + about D + the 2D shift
    law, shape, n, k, n_hat = SCENARIOS["tail, one column"]
    m = sample_marginals(np.random.default_rng(SEED), law, shape, n_hat)
    d = math.sqrt(math.log(2 / 0.05) / (2 * n_hat))
    bound = statistical_exposure_bound(m, k=k, n_release=n)
    assert exact_qstat(law, n, k) <= bound <= exact_qstat(law, n, k) + 4 * d


@pytest.mark.filterwarnings("ignore:budget=0.6:sdckit.errors.SdcWarning")  # a large budget, on purpose
def test_plan_holds_with_probability_one_minus_delta() -> None:
    # three columns, the planner picks a set after seeing the counts; the chosen set's bound must
    # still cover its exact Q^stat in >= 1 - delta of the repetitions (union bound over the sets)
    pa = TAIL
    pb = np.array([0.5, 0.5])
    pc = np.array([0.7, 0.2, 0.1])
    shape = (pa.size, pb.size, pc.size)
    law = np.einsum("i,j,k->ijk", pa, pb, pc).ravel()
    n, k, n_hat, delta, budget = 1000, 5, 20_000, 0.1, 0.6
    rng = np.random.default_rng(SEED)
    reps, failures, chosen = 40, 0, set()
    for _ in range(reps):
        m = sample_marginals(rng, law, shape, n_hat)
        plan = plan_release(m, k=k, budget=budget, setting="statistical", n_release=n, delta=delta)
        cols = tuple(int(c[1:]) for c in plan.columns)
        chosen.add(cols)
        if cols:
            failures += exact_qstat(project(law, shape, cols), n, k) > plan.bound
    assert failures <= delta * reps
    assert chosen != {()}  # the plans release something


@pytest.mark.filterwarnings("ignore:budget=0.7:sdckit.errors.SdcWarning")  # a large budget, on purpose
def test_plan_bound_is_the_union_bound() -> None:
    rng = np.random.default_rng(SEED)
    law, shape = np.outer(TAIL, [0.5, 0.5]).ravel(), (501, 2)
    m = sample_marginals(rng, law, shape, 20_000)
    plan = plan_release(m, k=5, budget=0.7, setting="statistical", n_release=1000, delta=0.05)
    assert plan.columns == ("c0", "c1")
    # d = 2 candidate columns: 3 non-empty sets, each bounded at delta / 3
    alone = statistical_exposure_bound(m, k=5, n_release=1000, delta=0.05 / 3)
    assert plan.bound == pytest.approx(alone, rel=1e-9)
    assert plan.bound > statistical_exposure_bound(m, k=5, n_release=1000, delta=0.05)
    assert plan.to_dict()["setting"] == "statistical"
    assert plan.to_dict()["delta"] == 0.05
    assert plan.to_dict()["n_release"] == 1000


def _first_version(m: Marginals, k: int, n: int, delta: float) -> float:
    """The protocol's first formula, min over t of B(t + 2D) + D + F(t) on its grid (public API)."""
    d = math.sqrt(math.log(2 / delta) / (2 * m.n))
    t = np.concatenate([[0.0], np.geomspace(1.0 / n, 1.0, 64)])
    b = np.asarray(joint_exposure_bound(m, t=np.minimum(1.0, t + 2 * d)), dtype=float)
    return float(min(1.0, np.min(b + d + binom.cdf(k - 2, n - 1, t))))


@pytest.mark.parametrize("name", list(SCENARIOS))
@pytest.mark.parametrize(("k", "n"), [(2, 100), (5, 1000), (10, 10_000)])
def test_never_above_the_first_version(name: str, k: int, n: int) -> None:
    law, shape, _, _, n_hat = SCENARIOS[name]
    m = sample_marginals(np.random.default_rng(SEED), law, shape, n_hat)
    assert statistical_exposure_bound(m, k=k, n_release=n) <= _first_version(m, k, n, 0.05) * (1 + 1e-9)


def test_monotone_in_delta_and_sample_size() -> None:
    law, shape, n, k, n_hat = SCENARIOS["tail x fair coin"]
    m = sample_marginals(np.random.default_rng(SEED), law, shape, n_hat)
    by_delta = [statistical_exposure_bound(m, k=k, n_release=n, delta=d) for d in (0.001, 0.01, 0.05, 0.2, 0.5)]
    assert all(a >= b for a, b in itertools.pairwise(by_delta))
    assert by_delta[0] > by_delta[-1]
    # the same proportions counted on 1x, 4x, 16x, 64x as many users: D shrinks as 1/sqrt(n_hat)
    by_size = [
        statistical_exposure_bound(
            Marginals.from_counts({c: {v: x * f for v, x in zip(m.values[c], m.counts[c], strict=True)} for c in m.columns}),
            k=k,
            n_release=n,
        )
        for f in (1, 4, 16, 64)
    ]
    assert all(a >= b for a, b in itertools.pairwise(by_size))
    assert by_size[0] > by_size[-1]
    # more columns can only raise it
    assert statistical_exposure_bound(m, k=k, n_release=n, columns=["c0"]) <= statistical_exposure_bound(
        m, k=k, n_release=n
    )


def test_edge_cases() -> None:
    m = Marginals.from_counts({"a": [5, 3, 2], "b": [6, 4]})
    assert statistical_exposure_bound(m, k=1, n_release=10) == 0.0  # nobody is below k = 1
    assert statistical_exposure_bound(m, k=5, n_release=4) == 1.0  # fewer released users than k
    assert statistical_exposure_bound(m, k=2, n_release=10, columns=[]) == 0.0
    assert statistical_exposure_bound(m, k=2, n_release=10) == 1.0  # 10 users: D = 0.43, vacuous


def test_errors() -> None:
    m = Marginals.from_counts({"a": [5, 3, 2], "b": [6, 4]})
    with pytest.raises(ParameterError, match="n_release"):
        statistical_exposure_bound(m, k=2, n_release=0)
    with pytest.raises(ParameterError, match="delta"):
        statistical_exposure_bound(m, k=2, n_release=10, delta=1.0)
    with pytest.raises(ParameterError, match="guarantees nothing"):
        statistical_exposure_bound(m, k=2, n_release=10, method="lower")
    with pytest.raises(ParameterError, match="k="):
        statistical_exposure_bound(m, k=0, n_release=10)
    with pytest.raises(ColumnNotFoundError):
        statistical_exposure_bound(m, k=2, n_release=10, columns=["z"])
    with pytest.raises(ParameterError, match="give n_release"):
        plan_release(m, k=2, budget=0.1, setting="statistical")
    with pytest.raises(ParameterError, match="only for setting='statistical'"):
        plan_release(m, k=2, budget=0.1, n_release=10)
    with pytest.raises(ParameterError, match="setting="):
        plan_release(m, k=2, budget=0.1, setting="population")  # type: ignore[arg-type]
    with pytest.raises(ParameterError, match="delta"):
        plan_release(m, k=2, budget=0.1, setting="statistical", n_release=10, delta=0.0)
    with pytest.raises(InfeasibleError, match="released users"):
        plan_release(m, k=5, budget=0.1, setting="statistical", n_release=3)


def test_fixed_setting_is_unchanged() -> None:
    m = Marginals.from_counts(
        {"sex": [21790, 10771], "race": [27816, 3124, 1039, 311, 271], "id": [1] * 32561}
    )
    default = plan_release(m, k=5, budget=0.01)
    fixed = plan_release(m, k=5, budget=0.01, setting="fixed", delta=0.5)  # delta is unused there
    assert default == fixed
    assert default.columns == ("sex", "race")
    assert round(default.bound, 5) == 0.00123  # the docstring example of plan_release
    d = default.to_dict()
    assert (d["setting"], d["n_release"], d["delta"]) == ("fixed", None, None)
    assert default.excluded["id"] == "alone its bound is 1 > budget 0.01"
