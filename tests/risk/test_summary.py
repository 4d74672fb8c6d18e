"""risk_summary at the edges of k: k = n is legal (everyone exposed), k > n is a clear error."""

from __future__ import annotations

import polars as pl
import pytest

from sdckit.errors import ParameterError
from sdckit.risk import risk_summary

FRAME = pl.DataFrame({"sex": ["F", "M", "M", "F", "F"], "race": ["a", "a", "b", "a", "a"]})


def test_k_equal_to_n_exposes_everyone() -> None:
    s = risk_summary(FRAME, ["sex", "race"], k=5)
    assert s.exposure == 1.0  # every group has < 5 of the 5 users; brute force: groups 3, 1, 1
    assert s.max_exposed_size == 4


def test_k_larger_than_n_names_k_and_the_fix() -> None:
    # Before: "t=1.2 is outside [0, 1]" although the caller gave k, not t.
    with pytest.raises(ParameterError, match=r"^k=7 is larger than the 5 users measured: .* Use k <= 5\.$"):
        risk_summary(FRAME, ["sex", "race"], k=7)


@pytest.mark.parametrize(
    ("column", "values"),
    [("tags", [["a"], ["b", "c"], ["a"], ["d"], ["a"]]), ("place", [{"x": 1}, {"x": 2}, {"x": 1}, {"x": 1}, {"x": 3}])],
)
def test_nested_column_is_refused_by_name(column: str, values: list[object]) -> None:
    from sdckit.errors import InputError
    from sdckit.risk import Marginals, exposure_curve

    frame = FRAME.with_columns(pl.Series(column, values))
    # Before: TypeError "unhashable type" from the marginal counts (a traceback in the CLI).
    for call in (lambda: risk_summary(frame, ["sex", column]), lambda: Marginals.from_data(frame, [column]),
                 lambda: exposure_curve(frame, [column])):
        with pytest.raises(InputError, match=rf"^column '{column}' holds .* not one plain value per row"):
            call()


def test_warnings_point_at_the_callers_line() -> None:
    from sdckit.errors import SdcWarning

    frame = FRAME.with_columns(pl.Series("fnlwgt", [10, 10, 11, 12, 13]))
    # Before: a fixed stacklevel named sdckit/risk/_summary.py when reached through risk_summary.
    with pytest.warns(SdcWarning, match="looks like a survey weight") as caught:
        risk_summary(frame, ["sex", "fnlwgt"], k=2)
    assert {w.filename for w in caught} == {__file__}
