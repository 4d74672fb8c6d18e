"""Rank swapping and correlated noise (issue 26): each against its law by simulation and against sdcMicro.

sdcMicro references: sdcMicro 5.8.1, R 4.2.2, on the seed-free column ``d <- data.frame(a =
as.numeric(1:1000))`` (a swapped value minus the original is its rank displacement). sdcMicro seeds
its generator with ``seed`` as the first of three Tausworthe seeds, so runs with seeds 1, 2, ... are
correlated; the references use 1,000 spread seeds ``(s * 104729 * 9973) %% 2e9 + 1e5``, s = 1..1000.
"""

from __future__ import annotations

import itertools
from fractions import Fraction

import numpy as np
import polars as pl
import pytest

from sdckit.errors import InfeasibleError, ParameterError
from sdckit.microagg import CorrelatedNoise, MomentRestorer, PositivityRestorer, RankSwap, RestoredMasking
from sdckit.microagg._noise import correlated2_noise, correlated_noise, exact_moment_noise
from sdckit.microagg._rankswap import rank_swap_column, swap_partners

X1000 = np.arange(1.0, 1001.0)


def _exact_swap_law(n: int, window: int) -> dict[tuple[int, ...], Fraction]:
    """Probability of each final permutation of the sequential swap (enumerated, no sampling)."""
    law: dict[tuple[int, ...], Fraction] = {}

    def walk(j: int, out: list[int], free: list[bool], prob: Fraction) -> None:
        if j == n:
            law[tuple(out)] = law.get(tuple(out), Fraction(0)) + prob
            return
        if not free[j]:
            walk(j + 1, out, free, prob)
            return
        cand = [c for c in range(j + 1, min(n, j + window)) if free[c]]
        if not cand:
            walk(j + 1, out, free, prob)
            return
        for c in cand:
            o, f = out.copy(), free.copy()
            o[j], o[c], f[j], f[c] = c, j, False, False
            walk(j + 1, o, f, prob / len(cand))

    walk(0, list(range(n)), [True] * n, Fraction(1))
    return law


def test_swap_partners_follow_the_sequential_law() -> None:
    n, window, reps = 7, 4, 20000
    law = _exact_swap_law(n, window)
    rng = np.random.default_rng(1)
    seen: dict[tuple[int, ...], int] = {}
    for _ in range(reps):
        key = tuple(int(v) for v in swap_partners(n, float(window), rng.random(n)))
        seen[key] = seen.get(key, 0) + 1
    assert set(seen) <= set(law)
    for perm, prob in law.items():
        p = float(prob)
        assert abs(seen.get(perm, 0) / reps - p) < 4 * np.sqrt(p * (1 - p) / reps) + 1e-3


def test_rank_swap_is_a_permutation_of_the_coded_column() -> None:
    rng = np.random.default_rng(2)
    x = rng.lognormal(size=500)
    out, window = rank_swap_column(x, rng, r0=0.95)
    order = np.argsort(-x, kind="stable")
    coded = x[order].copy()
    # sdcMicro's single precision: 500 * 0.05f is just below 25, so 24 values are top coded
    coded[:24], coded[-24:] = coded[:24].mean(), coded[-24:].mean()
    assert np.allclose(np.sort(out), np.sort(coded))
    assert out.mean() == pytest.approx(coded.mean())
    assert out.var() == pytest.approx(coded.var())
    assert 0 < window < 1


def test_rank_displacement_agrees_with_sdcmicro() -> None:
    # rankSwap(d, variables = "a", P = 0.05, TopPercent = 0, BottomPercent = 0, seed = seed):
    #   mean |d| = 27.3876 (se 0.0203); quantiles of |d| over 200 runs: 50 % 29, 90 % 46, 99 % 49, max 49; no 0
    # rankSwap(d, variables = "a", seed = seed) (R0 = 0.95, top/bottom 5 %), records 51..950:
    #   mean |d| = 44.2888 (se 0.0348); quantiles 46, 75, 81, max 81; top coded 976, bottom coded 25
    d_p, d_r0, tops, bottoms = [], [], set(), set()
    for s in range(200):
        rng = np.random.default_rng(s)
        out, _ = rank_swap_column(X1000, rng, p=5, top_percent=0, bottom_percent=0)
        d_p.append(np.abs(out - X1000))
        out, _ = rank_swap_column(X1000, rng, r0=0.95)
        d_r0.append(np.abs(out - X1000)[50:950])
        tops.update(out[X1000 > 951].tolist())
        bottoms.update(out[X1000 < 50].tolist())
    a, b = np.concatenate(d_p), np.concatenate(d_r0)
    assert a.mean() == pytest.approx(27.3876, abs=5 * np.hypot(0.0203, a.std() / np.sqrt(200 * 5)))
    assert b.mean() == pytest.approx(44.2888, abs=5 * np.hypot(0.0348, b.std() / np.sqrt(200 * 5)))
    assert [*list(np.quantile(a, [0.5, 0.9, 0.99])), a.max()] == [29, 46, 49, 49]
    assert [*list(np.quantile(b, [0.5, 0.9, 0.99])), b.max()] == [46, 75, 81, 81]
    assert a.min() > 0
    assert b.min() > 0
    assert tops == {976.0}
    assert bottoms == {25.0}


def test_rank_swap_parameters_and_defaults() -> None:
    assert RankSwap().random_state is None  # OS entropy unless asked
    x = X1000.reshape(-1, 1)
    assert not np.array_equal(RankSwap().fit_transform(x), RankSwap().fit_transform(x))
    assert np.array_equal(RankSwap(random_state=3).fit_transform(x), RankSwap(random_state=3).fit_transform(x))
    with pytest.raises(ParameterError, match="one of p, r0 and k0"):
        RankSwap(p=5, r0=0.9).fit(x)
    with pytest.raises(ParameterError, match="percentage"):
        RankSwap(p=500).fit(x)
    frame = pl.DataFrame({"a": X1000, "b": X1000[::-1], "keep": ["x"] * 1000})
    out = RankSwap(p=2, columns=["a"], random_state=0).fit_transform(frame)
    assert out["b"].equals(frame["b"])
    assert out["keep"].equals(frame["keep"])


def test_correlated_noise_law_by_simulation() -> None:
    rng = np.random.default_rng(5)
    x = rng.multivariate_normal([1, 2, 3], [[1, 0.8, 0.3], [0.8, 1, 0.5], [0.3, 0.5, 2]], size=150)
    s = np.cov(x, rowvar=False)
    reps = 400
    acc = np.zeros((3, 3))
    mean = np.zeros(3)
    gen = np.random.default_rng(0)
    for _ in range(reps):
        e = correlated_noise(x, 0.2, gen) - x
        acc += np.cov(e, rowvar=False) / reps
        mean += e.mean(axis=0) / reps
    assert np.abs(acc - 0.2 * s).max() < 0.02 * np.abs(s).max()  # E cov(e) = c S
    assert np.abs(mean).max() < 0.01


def test_correlated_noise_agrees_with_sdcmicro_on_casc(census_x: np.ndarray) -> None:
    # addNoise(x[, 1:4], noise = 10, method = "correlated") over set.seed(1..200): mean cov(xm - x) / cov(x),
    # diagonal 0.1001 0.0994 0.0997 0.0994
    # addNoise(x[, 1:4], method = "correlated2", delta = 0.1): mean ratios of the column means 1.00004 1.00010
    # 1.00014 1.00019, of the variances 0.99995 1.00052 1.00043 0.99986, of the correlations (2,3) 0.98979
    # (2,4) 0.99006 (3,4) 0.99010
    x = census_x[:, :4]
    s, r = np.cov(x, rowvar=False), np.corrcoef(x, rowvar=False)
    cov_ratio = np.zeros(4)
    means, variances, corr = np.zeros(4), np.zeros(4), np.zeros((4, 4))
    reps = 200
    gen = np.random.default_rng(0)
    for _ in range(reps):
        e = correlated_noise(x, 0.1, gen) - x
        cov_ratio += np.diag(np.cov(e, rowvar=False)) / np.diag(s) / reps
        m = correlated2_noise(x, 0.1, gen)
        means += m.mean(axis=0) / x.mean(axis=0) / reps
        variances += m.var(axis=0, ddof=1) / np.diag(s) / reps
        corr += np.corrcoef(m, rowvar=False) / r / reps
    assert cov_ratio == pytest.approx([0.1001, 0.0994, 0.0997, 0.0994], abs=0.003)
    assert means == pytest.approx([1.00004, 1.00010, 1.00014, 1.00019], abs=0.002)
    assert variances == pytest.approx([0.99995, 1.00052, 1.00043, 0.99986], abs=0.01)
    assert [corr[1, 2], corr[1, 3], corr[2, 3]] == pytest.approx([0.98979, 0.99006, 0.99010], abs=0.003)
    assert [corr[1, 2], corr[1, 3], corr[2, 3]] == pytest.approx([0.99] * 3, abs=0.003)  # 1 - delta^2


def test_exact_noise_keeps_mean_and_covariance_and_follows_its_law() -> None:
    rng = np.random.default_rng(6)
    n, c = 30, 0.5
    x = rng.lognormal(size=(n, 2))
    x[0] = [20.0, 0.1]  # a high-leverage record
    s = np.cov(x, rowvar=False)
    design = np.column_stack([np.ones(n), x - x.mean(axis=0)])
    leverage = np.einsum("ij,ij->i", design @ np.linalg.pinv(design.T @ design), design)
    reps = 2500
    second = np.zeros((n, 2, 2))
    gen = np.random.default_rng(0)
    for r in range(reps):
        out = exact_moment_noise(x, c, gen)
        if r < 5:
            assert np.allclose(out.mean(axis=0), x.mean(axis=0), rtol=1e-12)
            assert np.allclose(np.cov(out, rowvar=False), s, rtol=1e-10)
        e = np.sqrt(1 + c) * (out - x.mean(axis=0)) - (x - x.mean(axis=0))
        second += np.einsum("ij,ik->ijk", e, e) / reps
    for i in (0, 5):
        want = (n - 1) * c * s * (1 - leverage[i]) / (n - 1 - 2)
        assert np.abs(second[i] - want).max() < 0.12 * np.abs(want).max()  # ~3 standard errors


def test_noise_keeps_exact_linear_identities(census: pl.DataFrame) -> None:
    for law in ("correlated", "exact"):
        out = CorrelatedNoise(law=law, noise=0.3, random_state=1).fit_transform(census)  # type: ignore[arg-type]
        gap = (out["PTOTVAL"] - out["PEARNVAL"] - out["POTHVAL"]).abs().max()
        assert gap < 1e-6 * float(census["PTOTVAL"].abs().max())


def test_exact_noise_needs_rows_and_parameters_are_checked() -> None:
    with pytest.raises(InfeasibleError, match="rows"):
        CorrelatedNoise(law="exact", random_state=0).fit_transform(np.random.default_rng(0).normal(size=(6, 3)))
    with pytest.raises(ParameterError, match="noise"):
        CorrelatedNoise(noise=0).fit(np.ones((5, 2)))
    with pytest.raises(ParameterError, match="law"):
        CorrelatedNoise(law="romm").fit(np.ones((5, 2)))  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "masker",
    [RankSwap(p=10, random_state=0), CorrelatedNoise(noise=0.3, random_state=0),
     CorrelatedNoise(law="correlated2", delta=0.3, random_state=0)],
)
def test_restoration_applies_to_any_masking(masker: object) -> None:
    x = np.random.default_rng(7).lognormal(size=(400, 3))
    out = RestoredMasking(masker=masker).fit_transform(x)
    assert np.allclose(out.mean(axis=0), x.mean(axis=0))
    assert np.allclose(np.cov(out, rowvar=False), np.cov(x, rowvar=False))
    pos = RestoredMasking(masker=masker, restorer=PositivityRestorer()).fit_transform(x)
    assert pos.min() >= 0
    with pytest.raises(ParameterError, match="masker"):
        RestoredMasking().fit(x)
    assert isinstance(RestoredMasking(masker=masker, restorer=MomentRestorer()).fit(x).restorer_, MomentRestorer)


def test_every_permutation_law_entry_is_a_valid_involution() -> None:
    for perm in _exact_swap_law(6, 3):
        assert all(perm[perm[i]] == i for i in range(6))
        assert all(abs(perm[i] - i) < 3 for i in range(6))
    assert list(itertools.islice(_exact_swap_law(2, 2), 1)) == [(1, 0)]
