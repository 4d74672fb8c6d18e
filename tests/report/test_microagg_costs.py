"""The microaggregation section states its costs, with figures that match the library's."""

from __future__ import annotations

import pytest

from sdckit.microagg import eight_types_data
from sdckit.report import Report
from sdckit.report._microagg import microagg_section


def test_costs_are_stated() -> None:
    x = eight_types_data(n=600, p=4, seed=0)["non-symmetric high positive"]
    section = microagg_section(x, ["a", "b", "c", "d"], k=10, seed=1, max_rows=400)
    pos, um = section.data["positivity"], section.data["ecdf_max"]
    plain = pos["n_kept"] / x.shape[0]
    assert section.data["plain_share_positivity"] == pytest.approx(plain)
    assert um["microaggregated"] == section.data["utility"]["microaggregated"]["ecdf_max"]
    text = section.summary or ""
    assert f"{100 * plain:.3g} % of the records" in text
    ratio = um["moment-restored"] / um["microaggregated"]
    assert (f"{ratio:.2g}×" in text) or ("unchanged" in text)
    rep = Report("m")
    rep.add(section)
    page = rep.render()
    assert "brought back exactly" not in page
    for line in ("SDID risk", "interval disclosure: records whose every original value", "U_m", "largest gap"):
        assert line in page
