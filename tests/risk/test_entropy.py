"""Entropy bounds on exposure (anonymity notes §4)."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sdckit.errors import ParameterError, SdcWarning
from sdckit.risk import entropy_exposure_bound, entropy_exposure_bound_sharp, exposure_curve

from .conftest import table


def test_seed_example_half_unique() -> None:
    # [seed]: n = 2^16, H = 8 bits, t = 2^-16: "up to 50%" of users unique
    # rel 1e-11: t is read a relative 1e-12 up, as everywhere in sdckit.risk (t = k / n means k)
    assert entropy_exposure_bound(8.0, 2.0**-16) == pytest.approx(0.5, rel=1e-11)


def test_tight_example() -> None:
    # anonymity notes §4: 30,780 unique users of 65,536 plus one group of 34,756: H = 7.99992 bits, Q = 0.4697
    n, q_users = 65536, 30780
    big = n - q_users
    h = q_users / n * 16 + big / n * math.log2(n / big)  # closed form of the entropy of this table
    assert h == pytest.approx(7.99992, abs=5e-6)
    sizes = np.array([1, big])
    from sdckit.risk import ExposureCurve

    curve = ExposureCurve(sizes, np.array([q_users, 1]), columns=["x"])
    assert curve.entropy == pytest.approx(h, rel=1e-13)
    assert curve.at(2.0**-16) == q_users / n
    sharp = entropy_exposure_bound_sharp(h, 2.0**-16)
    assert q_users / n <= sharp < q_users / n + 1e-4  # attained: sharp bound equals the truth
    assert entropy_exposure_bound_sharp(8.0, 2.0**-16) == pytest.approx(0.4697, abs=5e-5)  # notes: 46.97%


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 5), st.integers(0, 5)), min_size=1, max_size=60), st.floats(0, 1))
def test_bounds_hold_on_random_tables(rows: list[tuple[int, int]], t: float) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SdcWarning)
        curve = exposure_curve(table(rows, 2), ["c0", "c1"])
    q = curve.at(t)
    sharp = entropy_exposure_bound_sharp(curve.entropy, t)
    weak = entropy_exposure_bound(curve.entropy, t)
    assert q <= sharp + 1e-9
    assert sharp <= weak + 1e-12


def test_vectorised_and_errors() -> None:
    out = entropy_exposure_bound([4.0, 8.0], 2.0**-16)
    assert out.tolist() == pytest.approx([0.25, 0.5], rel=1e-11)
    assert entropy_exposure_bound(3.0, 1.0) == 1.0
    assert entropy_exposure_bound(3.0, 0.0) == 0.0
    assert entropy_exposure_bound_sharp(20.0, 2.0**-16) == 1.0
    with pytest.raises(ParameterError, match="entropy in bits"):
        entropy_exposure_bound(-1.0, 0.1)
