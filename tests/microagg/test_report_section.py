"""The report section: numbers agree with the library, the JSON data and the plot are there."""

from __future__ import annotations

import json

import numpy as np
from numpy.testing import assert_allclose

from sdckit.microagg import eight_types_data, information_loss, mdav_groups, standardize
from sdckit.microagg._groups import group_centres
from sdckit.report import to_jsonable
from sdckit.report._microagg import microagg_section


def test_section_contents() -> None:
    x = eight_types_data(n=600, p=4, seed=0)["non-symmetric high positive"]
    section = microagg_section(x, ["a", "b", "c", "d"], k=10, seed=1, max_rows=400)
    assert section.id == "microaggregation"
    kinds = [b.kind for b in section.blocks]
    assert {"paragraph", "metrics", "table", "figure"} <= set(kinds)
    il = information_loss(x, group_centres(x, mdav_groups(standardize(x), 10)))
    assert_allclose(section.data["information_loss_pct"]["microaggregated"], il, rtol=1e-12)
    utility = section.data["utility"]
    assert set(utility) == {"microaggregated", "moment-restored", "positivity-preserving"}
    assert utility["positivity-preserving"]["negative_share"] == 0.0
    assert section.data["sample_rows"] == 400
    assert section.data["positivity"]["constrained"] == ("a", "b", "c", "d")
    json.dumps(to_jsonable(section.data))  # JSON sidecar must serialise
    assert "<svg" in section.blocks[kinds.index("figure")].html
    assert np.isfinite(utility["moment-restored"]["propensity"])
