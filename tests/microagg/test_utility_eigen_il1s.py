"""Eigenvalue distance (both definitions) and IL1s (both normalisations), written out in numpy and
checked against the peer (issue 10)."""

from __future__ import annotations

import numpy as np
import pytest

from sdckit.errors import ParameterError
from sdckit.microagg import eigen_distance, il1s

# A small table and a masked version (pairs of rows averaged), typed in by hand.
X = np.array(
    [[1, 2, 0.5], [2, 1, 0.1], [3, 4, 0.9], [4, 3, 0.4], [5, 6, 0.3], [6, 8, 0.8], [7, 7, 0.2], [9, 5, 0.7]],
    dtype=np.float64,
)
XM = np.array(
    [
        [1.5, 1.5, 0.3],
        [1.5, 1.5, 0.3],
        [3.5, 3.5, 0.65],
        [3.5, 3.5, 0.65],
        [5.5, 7, 0.55],
        [5.5, 7, 0.55],
        [8, 6, 0.45],
        [8, 6, 0.45],
    ]
)
# Peer: R sdcMicro 5.8.1, x <- data.frame(X), xm <- data.frame(XM) with the values above:
#   dUtility(x, xm, method="IL1s")  -> 7.6891550063181
#   dUtility(x, xm, method="eigen") -> 0.767430035711034
PEER_IL1S_SUM = 7.6891550063181
PEER_EIGEN = 0.767430035711034


def _eigen_by_hand(a: np.ndarray, b: np.ndarray, *, own: bool) -> float:
    za = (a - a.mean(axis=0)) / a.std(axis=0)
    ref = b if own else a
    zb = (b - ref.mean(axis=0)) / ref.std(axis=0)
    la = np.sort(np.linalg.eigvalsh(np.cov(za, rowvar=False)))[::-1]
    lb = np.sort(np.linalg.eigvalsh(np.cov(zb, rowvar=False)))[::-1]
    return float(np.sum(np.abs(la - lb) / la))


def test_sdcmicro_eigen_is_the_correlation_spectra() -> None:
    # sdcMicro: eigen(var(scale(x))) vs eigen(var(scale(xm))) = eigenvalues of the two correlation matrices
    la = np.sort(np.linalg.eigvalsh(np.corrcoef(X, rowvar=False)))[::-1]
    lb = np.sort(np.linalg.eigvalsh(np.corrcoef(XM, rowvar=False)))[::-1]
    by_hand = float(np.sum(np.abs(la - lb) / la))
    assert eigen_distance(X, XM, method="sdcmicro") == pytest.approx(by_hand, rel=1e-12)
    assert eigen_distance(X, XM, method="sdcmicro") == pytest.approx(PEER_EIGEN, rel=1e-12)


def test_original_eigen_uses_the_originals_scale() -> None:
    assert eigen_distance(X, XM) == pytest.approx(_eigen_by_hand(X, XM, own=False), rel=1e-12)
    assert eigen_distance(X, XM, method="original") == eigen_distance(X, XM)
    # the two differ, and scaling the masked table moves only the "original" one
    rng = np.random.default_rng(4)
    a = rng.standard_normal((200, 4)) @ rng.standard_normal((4, 4))
    b = a + 0.5 * rng.standard_normal((200, 4))
    for method, own in (("original", False), ("sdcmicro", True)):
        assert eigen_distance(a, b, method=method) == pytest.approx(_eigen_by_hand(a, b, own=own), rel=1e-10)
    assert eigen_distance(a, 3 * b, method="sdcmicro") == pytest.approx(
        eigen_distance(a, b, method="sdcmicro")
    )
    assert eigen_distance(a, 3 * b) > 5 * eigen_distance(a, b)
    with pytest.raises(ParameterError, match="method='sdc'"):
        eigen_distance(a, b, method="sdc")


def test_il1s_two_normalisations() -> None:
    n, p = X.shape
    cells = np.abs(X - XM) / (np.sqrt(2.0) * X.std(axis=0, ddof=1))
    assert il1s(X, XM) == pytest.approx(cells.sum() / (n * p), rel=1e-13)  # the literature's mean
    assert cells.sum() == pytest.approx(PEER_IL1S_SUM, rel=1e-12)  # sdcMicro's sum over cells
    assert il1s(X, XM) * n * p == pytest.approx(PEER_IL1S_SUM, rel=1e-12)
