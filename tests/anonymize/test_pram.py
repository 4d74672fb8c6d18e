"""PRAM: the invariant marginal by simulation, user matrices, reproducibility."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from sdckit.anonymize import PRAM, invariant_matrix, sdcmicro_matrix
from sdckit.errors import ParameterError


def test_invariant_pram_keeps_the_marginal_in_expectation() -> None:
    values = ["a"] * 500 + ["b"] * 300 + ["c"] * 150 + ["d"] * 50
    df = pl.DataFrame({"v": values, "other": np.arange(1000)})
    truth = np.array([500, 300, 150, 50])
    draws = []
    for seed in range(300):
        out = PRAM(columns=["v"], pd=0.6, random_state=seed).fit_transform(df)
        assert out["other"].to_list() == list(range(1000))
        counts = out["v"].value_counts().sort("v")["count"].to_numpy()
        draws.append(counts)
    draws_arr = np.array(draws)
    mean = draws_arr.mean(axis=0)
    se = draws_arr.std(axis=0, ddof=1) / np.sqrt(len(draws))
    assert (np.abs(mean - truth) < 4 * se + 1e-9).all()
    assert draws_arr.std(axis=0).min() > 1  # it did perturb


def test_invariant_matrix_closed_form() -> None:
    counts = np.array([60, 40])
    P = invariant_matrix(counts, 0.8)
    pi = counts / 100
    assert np.allclose(pi @ P, pi)
    assert np.allclose(P.sum(axis=1), 1)
    assert P.diagonal().min() == pytest.approx(0.8)


def test_user_matrix_and_missing() -> None:
    df = pl.DataFrame({"v": [1, 1, 2, None]})
    p = PRAM(matrix={"v": {"1": {"2": 1.0}, "2": {"2": 1.0}}}, random_state=0).fit(df)
    out = p.transform(df)
    assert out["v"].to_list() == [2, 2, 2, None]
    assert out.schema["v"] == pl.Int64
    assert p.changes_["v"] == {"cells_changed": 2, "values_merged": 1}
    with pytest.raises(ParameterError, match="sums to"):
        PRAM(matrix={"v": {"1": {"2": 0.5}, "2": {"2": 1.0}}}).fit(df)
    with pytest.raises(ParameterError, match="has no row"):
        PRAM(matrix={"v": {"1": {"1": 1.0}}}).fit(df)


def test_same_seed_same_release() -> None:
    df = pl.DataFrame({"v": list("aabbbcccc")})
    a = PRAM(random_state=3).fit_transform(df)
    b = PRAM(random_state=3).fit_transform(df)
    assert a.equals(b)


# sdcMicro 5.8.1 (R 4, ~/.cache/sdckit-peer/rlib), the matrix of pram() for one factor, recorded by:
#   x <- factor(rep(c("a", "b", "c", "d"), c(600, 300, 80, 20)))
#   set.seed(SEED); pds <- runif(4, PD, 1)                       # the draws calcTransitionMatrix makes
#   set.seed(SEED); Rs <- attr(pram(x, pd = PD, alpha = ALPHA), "pram_params")$x$Rs
# (SEED, PD, ALPHA) -> (pds, Rs row by row), printed with sprintf("%.17g").
SDCMICRO_PRAM = {
    (42, 0.8, 0.5): (
        [0.98296120869927106, 0.98741508265957234, 0.8572279069572688, 0.96608952521346514],
        [0.9876217230708132, 0.0039868498650150715, 0.0062197838713253066, 0.0021716431928463643,
         0.007973699730030143, 0.98174496357133267, 0.0084484763075362793, 0.001832860391100821,
         0.046648379034939798, 0.031681786153261053, 0.90378298647085342, 0.017886848340945692,
         0.065149295785390929, 0.027492905866512322, 0.071547393363782782, 0.83581040498431391],
    ),
    (7, 0.6, 1.0): (
        [0.99556371914222841, 0.75909818131476636, 0.64627911150455475, 0.62789947148412462],
        [0.9390191288414873, 0.040476436495040007, 0.016148041968248983, 0.0043563926952237281,
         0.080952872990080013, 0.78737883891813654, 0.099538273772494398, 0.032130014319289198,
         0.12111031476186739, 0.37326852664685406, 0.45216553174880281, 0.05345562684247572,
         0.13069178085671185, 0.48195021478933808, 0.21382250736990291, 0.17353549698404713],
    ),
    (2026, 0.9, 0.25): (
        [0.96986734708771105, 0.95565305058844385, 0.91401399576570841, 0.92857233062386513],
        [0.99021626724157397, 0.0047494646907706318, 0.0033313303146529382, 0.0017029377530024096,
         0.0094989293815412636, 0.98254767354710071, 0.0053535368367029334, 0.0025998602346550175,
         0.024984977359897034, 0.020075763137636, 0.94937939018814632, 0.0055598693143206843,
         0.051088132590072298, 0.038997903519825267, 0.022239477257282741, 0.88767448663281967],
    ),
}
# and over 2,000 matrices at pd = 0.8, alpha = 0.5 (set.seed(1); replicate(2000, ...Rs["d", "d"])):
# the rare value d is kept with probability min 0.585, mean 0.674, max 0.938.


@pytest.mark.parametrize(("seed", "pd", "alpha"), list(SDCMICRO_PRAM))
def test_sdcmicro_matrix_equals_sdcmicros_for_the_same_draws(seed: int, pd: float, alpha: float) -> None:
    draws, expected = SDCMICRO_PRAM[(seed, pd, alpha)]
    got = sdcmicro_matrix(np.array([600, 300, 80, 20]), np.array(draws), alpha)
    assert got == pytest.approx(np.array(expected).reshape(4, 4), abs=1e-14)
    shares = np.array([600, 300, 80, 20]) / 1000
    assert shares @ got == pytest.approx(shares, abs=1e-14)  # invariant
    assert got.sum(axis=1) == pytest.approx(np.ones(4), abs=1e-14)


def test_sdcmicro_method_draws_its_law_and_pd_is_no_minimum() -> None:
    df = pl.DataFrame({"v": ["a"] * 600 + ["b"] * 300 + ["c"] * 80 + ["d"] * 20})
    kept = []
    for seed in range(400):
        pram = PRAM(pd=0.8, alpha=0.5, method="sdcmicro", random_state=seed).fit(df)
        values, P = pram.transition_["v"]
        assert values == ["a", "b", "c", "d"]
        shares = np.array([600, 300, 80, 20]) / 1000
        assert shares @ P == pytest.approx(shares, abs=1e-12)
        kept.append(P[3, 3])
    kept_arr = np.array(kept)
    # sdcMicro 5.8.1 over 2,000 matrices: min 0.585, mean 0.674, max 0.938 (recorded above)
    assert kept_arr.mean() == pytest.approx(0.674, abs=0.01)
    assert 0.58 <= kept_arr.min() < 0.62
    assert kept_arr.max() <= 0.94
    assert (kept_arr < 0.8).mean() > 0.9  # pd = 0.8 is not a minimum here; the default's it is
    default = PRAM(pd=0.8, random_state=0).fit(df).transition_["v"][1]
    assert default.diagonal().min() >= 0.8 - 1e-12


def test_sdcmicro_method_parameters() -> None:
    df = pl.DataFrame({"v": ["a", "b", "b"]})
    with pytest.raises(ParameterError, match="method='sdc'"):
        PRAM(method="sdc").fit(df)  # type: ignore[arg-type]
    with pytest.raises(ParameterError, match=r"alpha=1\.5"):
        PRAM(method="sdcmicro", alpha=1.5).fit(df)
    a = PRAM(method="sdcmicro", random_state=3).fit(df).transition_["v"][1]
    b = PRAM(method="sdcmicro", random_state=3).fit(df).transition_["v"][1]
    assert np.array_equal(a, b)
