"""wildcard_group_sizes: against plain-Python brute force, on both kernels."""

from __future__ import annotations

import numpy as np
import pandas as pd
import polars as pl
from hypothesis import given, settings
from hypothesis import strategies as st

from sdckit.risk import exposure, wildcard_group_sizes
from sdckit.risk._counts._wildcard import _pairwise_sizes, wildcard_sizes


def _brute(rows: list[tuple[object, ...]]) -> list[int]:
    return [
        sum(all(a is None or b is None or a == b for a, b in zip(r, s, strict=True)) for s in rows)
        for r in rows
    ]


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(st.sampled_from([None, "a", "b"]), st.sampled_from([None, 1, 2, 3])),
        min_size=1,
        max_size=40,
    )
)
def test_matches_brute_force(rows: list[tuple[object, object]]) -> None:
    df = pl.DataFrame(
        {"x": [r[0] for r in rows], "y": [r[1] for r in rows]}, schema={"x": pl.String, "y": pl.Int64}
    )
    got = wildcard_group_sizes(df, ["x", "y"])
    assert got.tolist() == _brute(rows)


def test_both_kernels_agree_on_many_patterns() -> None:
    rng = np.random.default_rng(3)
    codes = rng.integers(-1, 3, size=(400, 9)).astype(np.int32)  # up to 512 patterns
    assert (wildcard_sizes(codes) == _pairwise_sizes(codes)).all()


def test_without_missing_it_is_the_group_size() -> None:
    df = pd.DataFrame({"a": [1, 1, 2, 2, 2], "b": ["x", "x", "y", "y", "z"]})
    assert wildcard_group_sizes(df, ["a", "b"]).tolist() == [2, 2, 2, 2, 1]
    # the share below k is the exposure of the plain table
    assert np.mean(wildcard_group_sizes(df, ["a", "b"]) < 2) == exposure(df, ["a", "b"], k=2)


def test_nan_counts_as_missing() -> None:
    df = pl.DataFrame({"v": [1.0, float("nan"), 2.0]})
    assert wildcard_group_sizes(df).tolist() == [2, 3, 2]


def test_wide_keys_take_the_pairwise_kernel() -> None:
    rng = np.random.default_rng(5)
    codes = rng.integers(-1, 10, size=(60, 20)).astype(np.int32)  # 10^20 key values: no 62-bit packing
    codes[:30] = codes[30:]  # some groups
    rows = [tuple(None if v < 0 else int(v) for v in r) for r in codes]
    assert wildcard_sizes(codes).tolist() == _brute(rows)
