"""The role guesser on sdcMicro's testdata2 (93 rows): a household id, a constant and coarser copies
of keys are never made keys, and each is flagged with why and how to change it (the household id's
own flag, ``household: ori_hid``, comes with the households issue, 35).

The expected roles are read off the data by hand (``relat2`` holds 10/20/30 for relat's six codes,
``water2``/``water3`` group water's eight; ``represent`` is 1 in every row; ``ori_hid`` is the
household id of the original survey), and the dependence is re-checked below by brute force.
"""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

from sdckit.pipeline._roles import guess_roles

DATA = Path(__file__).parents[1] / "data" / "sdcmicro_testdata2.csv"


@pytest.fixture(scope="module")
def testdata2() -> pl.DataFrame:
    return pl.read_csv(DATA)


def test_no_identifier_constant_or_coarser_copy_becomes_a_key(testdata2: pl.DataFrame) -> None:
    roles = guess_roles(testdata2)
    assert set(roles.quasi_identifiers) == {"urbrur", "roof", "walls", "water", "electcon", "relat", "sex", "age",
                                            "hhcivil", "category_count"}
    assert "ori_hid" not in roles.quasi_identifiers  # a household id is never a key
    assert roles.keep == ("represent",)
    for copy in ("relat2", "water2", "water3"):
        assert copy not in roles.released(testdata2.columns)
    kinds = {f.column: f.kind for f in roles.flags}
    assert kinds["represent"] == "constant"
    assert {kinds[c] for c in ("relat2", "water2", "water3")} == {"coarser-copy"}
    if hasattr(roles, "household"):  # with the households issue: withheld, and the flag says to declare it
        assert "ori_hid" in roles.identifiers
        assert "household: ori_hid" in next(f for f in roles.flags if f.column == "ori_hid").message


@pytest.mark.parametrize(("coarse", "fine"), [("relat2", "relat"), ("water2", "water"), ("water3", "water")])
def test_coarser_copy_is_a_function_of_its_finer_key(testdata2: pl.DataFrame, coarse: str, fine: str) -> None:
    mapping: dict[int, set[int]] = {}
    for a, b in zip(testdata2[fine].to_list(), testdata2[coarse].to_list(), strict=True):
        mapping.setdefault(a, set()).add(b)
    assert all(len(v) == 1 for v in mapping.values())  # brute force: one coarse value per fine value
    flag = next(f for f in guess_roles(testdata2).flags if f.column == coarse)
    assert repr(fine) in flag.message


def test_a_high_cardinality_column_does_not_make_a_copy_of_everything() -> None:
    # 20 rows, 10 towns of 2 rows: sex is a function of town here, by chance of small data
    town = [t for t in range(10) for _ in range(2)]
    frame = pl.DataFrame({"town": town, "sex": [t % 2 + 1 for t in town]})
    roles = guess_roles(frame)
    assert set(roles.quasi_identifiers) == {"town", "sex"}
    assert not [f for f in roles.flags if f.kind == "coarser-copy"]
    # with 5 rows per town, the same dependence is a coarser copy
    town5 = [t for t in range(4) for _ in range(5)]
    roles5 = guess_roles(pl.DataFrame({"town": town5, "sex": [t % 2 + 1 for t in town5]}))
    assert roles5.quasi_identifiers == ("town",)
