"""Numeric disclosure risk (issue 26): record linkage against brute force, dRisk and dRiskRMD against sdcMicro.

Reference values: sdcMicro 5.8.1 (robustbase covMcd), R 4.2.2, on CASC Census (tests/data) and
masked tables rebuilt here exactly (sdckit MDAV is deterministic; the noise uses numpy's
``default_rng(26)``), written with ``np.savetxt(..., fmt="%.17g")`` and read in R as
``x <- read.csv("x.csv", header=FALSE)``, ``xm <- read.csv("masked.csv", header=FALSE)``.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import polars as pl
import pytest
from scipy.spatial.distance import cdist

from sdckit.errors import InputError, ParameterError
from sdckit.microagg import MDAV, interval_disclosure
from sdckit.risk import d_risk, d_risk_rmd, measure_release, record_linkage
from sdckit.risk._measures._linkage import mcd_covariance

DATA = Path(__file__).resolve().parents[1] / "data"
C4 = [0, 1, 2, 3]  # AFNLWGT, AGI, EMCONTRB, FEDTAX
C7 = [0, 1, 2, 3, 5, 6, 10]  # ... STATETAX, TAXINC, FICA (no exact linear relation: covMcd needs that)


@pytest.fixture(scope="module")
def casc() -> np.ndarray:
    return pl.read_csv(DATA / "casc_census.csv.gz").to_numpy().astype(np.float64)


def _noise(x: np.ndarray, share: float) -> np.ndarray:
    rng = np.random.default_rng(26)
    return x + rng.standard_normal(x.shape) * share * x.std(axis=0, ddof=1)


def _brute_linkage(x: np.ndarray, xm: np.ndarray, k: int, metric: str, rng: np.random.Generator, reps: int) -> tuple[float, float]:
    """Full distance matrix; the own original's rank under random tie-breaks, averaged over ``reps`` draws."""
    mean, sd = x.mean(axis=0), x.std(axis=0, ddof=1)
    z, zm = (x - mean) / sd, (xm - mean) / sd
    if metric == "euclidean":
        d = cdist(zm, z)
    else:
        d = cdist(zm, z, metric="mahalanobis", VI=np.linalg.inv(np.cov(z, rowvar=False)))
    d = np.round(d, 9)  # equal distances compare equal
    n = x.shape[0]
    near = within = 0.0
    for _ in range(reps):
        order = np.lexsort((rng.random((n, n)), d), axis=1)  # by distance, ties at random
        rank = np.argmax(order == np.arange(n)[:, None], axis=1)
        near += np.mean(rank == 0)
        within += np.mean(rank < k)
    return near / reps, within / reps


@pytest.mark.parametrize("metric", ["euclidean", "mahalanobis"])
def test_linkage_matches_brute_force_without_ties(metric: str) -> None:
    rng = np.random.default_rng(3)
    x = rng.lognormal(size=(150, 4))
    xm = x + rng.normal(scale=0.4, size=x.shape) * x.std(axis=0)
    got = record_linkage(x, xm, k=3, metric=metric)  # type: ignore[arg-type]
    want = _brute_linkage(x, xm, 3, metric, rng, reps=1)
    assert (got.share_nearest, got.share_within_k) == pytest.approx(want, abs=1e-12)
    assert 0 < got.share_nearest < got.share_within_k < 1


@pytest.mark.parametrize("method", ["tree", "scan"])
def test_both_counting_methods_match_brute_force(method: str) -> None:
    from sdckit.risk._measures._linkage import _linkage_coordinates, link_ranks

    rng = np.random.default_rng(8)
    x = rng.lognormal(size=(200, 9))
    xm = x * np.exp(rng.normal(scale=0.3, size=x.shape))
    z, zm = _linkage_coordinates(x, xm, "euclidean")
    nearer, _ = link_ranks(z, zm, 5, method=method)  # type: ignore[arg-type]
    d = cdist(zm, z)
    want = (d < np.diag(d)[:, None] - 1e-9).sum(axis=1)
    assert np.array_equal(np.minimum(nearer, 5), np.minimum(want, 5))
    assert 0 < np.mean(want == 0) < 1


def test_linkage_ties_counted_as_random_tie_breaks() -> None:
    rng = np.random.default_rng(4)
    base = rng.integers(0, 3, size=(20, 2)).astype(np.float64)
    x = np.repeat(base, 4, axis=0)  # every original appears 4 times: ties at every distance
    xm = x + rng.integers(-1, 2, size=x.shape) * 0.5
    got = record_linkage(x, xm, k=2)
    near, within = _brute_linkage(x, xm, 2, "euclidean", rng, reps=400)
    assert got.share_nearest == pytest.approx(near, abs=0.01)
    assert got.share_within_k == pytest.approx(within, abs=0.01)
    _, inverse, counts = np.unique(x, axis=0, return_inverse=True, return_counts=True)
    # an unmasked release: m equal originals at distance 0 link with chance 1/m
    assert record_linkage(x, x, k=1).share_nearest == pytest.approx(np.mean(1 / counts[inverse.ravel()]))


def test_linkage_of_an_unmasked_release_is_one_and_errors_are_clear() -> None:
    x = np.random.default_rng(0).normal(size=(40, 3))
    assert record_linkage(x, x).share_nearest == 1.0
    with pytest.raises(InputError, match="same rows"):
        record_linkage(x, x[:-1])
    with pytest.raises(ParameterError, match="k=0"):
        record_linkage(x, x, k=0)
    with pytest.raises(ParameterError, match="metric"):
        record_linkage(x, x, metric="cosine")  # type: ignore[arg-type]


def test_d_risk_matches_sdcmicro_on_casc(casc: np.ndarray) -> None:
    # sdcMicro 5.8.1: dRisk(x[, c(1,2,3,4)], xm = xm)  (k = 0.05)
    mdav = MDAV(k=3).fit_transform(casc[:, C4])
    assert d_risk(casc[:, C4], mdav) == pytest.approx(0.0111111111, abs=1e-10)
    noise10 = _noise(casc, 0.1)
    assert d_risk(casc[:, C4], noise10[:, C4]) == pytest.approx(0.0314814815, abs=1e-10)
    assert d_risk(casc, noise10) == 0.0  # dRisk(x, xm = xm) on all 13 columns: 0
    assert d_risk(casc, _noise(casc, 0.01)) == 1.0  # sdcMicro: 1
    # sdckit's interval disclosure uses the original sd: another figure on the same data
    assert interval_disclosure(casc[:, :1], noise10[:, :1]) == pytest.approx(430 / 1080)
    assert d_risk(casc[:, :1], noise10[:, :1]) == pytest.approx(431 / 1080)


def test_d_risk_reads_missing_comparisons_as_inside() -> None:
    x = np.array([[1.0, 2.0], [3.0, np.nan], [5.0, 6.0]])
    xm = np.array([[1.0, 9.0], [3.0, 4.0], [5.0, 6.0]])
    assert d_risk(x, xm) == pytest.approx(2 / 3)  # row 0 is out on column 2, row 1's NaN counts as inside


# robustbase covMcd(scale(x[, c(1,2,3,4,6,7,11)]))$cov, set.seed(1) (the same with set.seed(2))
COV_MCD = np.array([
    1.3568148345011841, 0.084038762074962386, 0.0745425008076359, 0.056737949457463625, -0.045320372960048073,
    0.075845911999220431, 0.11282212551490423, 0.084038762074962386, 0.89179718535326191, 0.61473051647076615,
    0.62903930638442762, 0.55297720696131425, 0.8130942960927835, 0.77983253913926143, 0.0745425008076359,
    0.61473051647076615, 1.4401431399508284, 0.36729484339517526, 0.29783508175066864, 0.4940606071405344,
    0.69526219610048878, 0.056737949457463625, 0.62903930638442762, 0.36729484339517526, 0.49831886465319364,
    0.41413308014119998, 0.61846603608733064, 0.56746901249605775, -0.045320372960048073, 0.55297720696131425,
    0.29783508175066864, 0.41413308014119998, 0.47685669870909941, 0.52596510757981196, 0.4960933089255723,
    0.075845911999220431, 0.8130942960927835, 0.4940606071405344, 0.61846603608733064, 0.52596510757981196,
    0.7899550794974749, 0.71033367837760997, 0.11282212551490423, 0.77983253913926143, 0.69526219610048878,
    0.56746901249605775, 0.4960933089255723, 0.71033367837760997, 1.0943547861597047,
]).reshape(7, 7)

# sdcMicro 5.8.1: dRiskRMD(x[, c7], xm = xm[, c7]) -> (risk1, risk2, wrisk1, wrisk2)
RMD_REFERENCE = {
    "mdav5": (0.0509259259, 0.0, 0.5391539310, 0.0),
    "noise10": (0.1046296296, 0.1046296296, 2.6518301964, 2.6518301964),
    "noise1": (0.6120370370, 0.6120370370, 75.1602851044, 75.1602851044),
}


def _rmd_masked(casc: np.ndarray, case: str) -> np.ndarray:
    if case == "mdav5":
        return np.asarray(MDAV(k=5).fit_transform(casc[:, C7]))
    return _noise(casc, 0.1 if case == "noise10" else 0.01)[:, C7]


@pytest.mark.parametrize("case", sorted(RMD_REFERENCE))
def test_d_risk_rmd_matches_sdcmicro_on_casc(casc: np.ndarray, case: str) -> None:
    got = d_risk_rmd(casc[:, C7], _rmd_masked(casc, case), covariance=COV_MCD)
    assert (got.risk1, got.risk2, got.wrisk1, got.wrisk2) == pytest.approx(RMD_REFERENCE[case], abs=1e-9)


def test_own_mcd_is_close_to_robustbase(casc: np.ndarray) -> None:
    z = casc[:, C7]
    z = (z - z.mean(axis=0)) / z.std(axis=0, ddof=1)
    own = mcd_covariance(z)
    assert np.abs(own - COV_MCD).max() < 0.01 * np.abs(COV_MCD).max()
    for case, want in RMD_REFERENCE.items():  # sdckit's MCD: close to robustbase's, not equal
        assert d_risk_rmd(casc[:, C7], _rmd_masked(casc, case), covariance=own).risk1 == pytest.approx(want[0], abs=0.005)


def test_measure_release_states_numeric_risk() -> None:
    rng = np.random.default_rng(5)
    x = pl.DataFrame({"a": rng.lognormal(size=300), "b": rng.normal(size=300), "g": ["u", "v"] * 150})
    released = x.with_columns(pl.col("a") * 1.001, pl.col("b") + 0.3 * rng.normal(size=300))
    m = measure_release(released, quasi_identifiers=["g"], k=5, budget=0.5, original=x, masked=["a", "b"])
    risk = m.numeric_risk
    assert risk is not None
    assert risk["columns"] == ["a", "b"]
    assert risk["k"] == 5
    xa, xm = x.select("a", "b").to_numpy(), released.select("a", "b").to_numpy()
    assert risk["linkage"]["euclidean"]["share_nearest"] == record_linkage(xa, xm).share_nearest
    assert risk["d_risk"]["share"] == d_risk(xa, xm)
    keys = list(m.to_dict())
    assert keys[-1] == "attacks"  # new fields at the end
    assert keys.index("numeric_risk") < keys.index("household_risk")
    assert measure_release(released, quasi_identifiers=["g"], k=5, budget=0.5).numeric_risk is None


@pytest.mark.parametrize("steps", [0, 3, 40, 10_000])
@pytest.mark.parametrize("masking", ["noise", "groups"])
def test_auto_path_in_many_columns_matches_brute_force(steps: int, masking: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """12 columns: the scan with the bounded tree for the records it leaves undone (every split of the
    work between them, from all-tree to all-scan) counts exactly what the full distance matrix does."""
    from sdckit.risk._measures import _linkage

    monkeypatch.setattr(_linkage, "SCAN_STEPS", steps)
    rng = np.random.default_rng(12 + steps)
    x = rng.lognormal(size=(240, 12)) + rng.normal(size=(240, 1))
    if masking == "noise":
        xm = x * np.exp(rng.normal(scale=0.1, size=x.shape))
    else:  # groups of 3 replaced by their mean, as MDAV at k = 3 releases: ties and far own originals
        xm = np.repeat(x.reshape(80, 3, 12).mean(axis=1), 3, axis=0)
    z, zm = _linkage._linkage_coordinates(x, xm, "euclidean")
    nearer, at_most = _linkage.link_ranks(z, zm, 4)
    d = cdist(zm, z)
    own = np.diag(d)[:, None]
    want_less = (d < own - 1e-9).sum(axis=1)
    want_le = (d <= own + 1e-9).sum(axis=1)
    assert np.array_equal(np.minimum(nearer, 4), np.minimum(want_less, 4))
    small = want_less < 4
    assert np.array_equal(at_most[small], want_le[small])
    assert record_linkage(x, xm, k=4).share_within_k == pytest.approx(
        np.mean(np.clip((4 - want_less) / (want_le - want_less), 0, 1)), abs=1e-12
    )
