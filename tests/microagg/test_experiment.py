"""The eight data types and the experiment's table (small n to stay fast)."""

from __future__ import annotations

import numpy as np

from sdckit.microagg import EIGHT_TYPES, eight_types_data, eight_types_experiment


def test_eight_types_design() -> None:
    data = eight_types_data(n=4000, p=4, seed=0)
    assert tuple(data) == EIGHT_TYPES
    assert len(EIGHT_TYPES) == 8
    for name, x in data.items():
        assert x.shape == (4000, 4)
        assert (x >= 0).all()
        r = np.corrcoef(x, rowvar=False)
        # positive: every correlation > 0; negative: columns {0, 1} vs {2, 3} negatively related
        assert r[0, 1] > 0, name
        assert (r[0, 3] > 0) if name.endswith("positive") else (r[0, 3] < 0), name
        skew = ((x - x.mean(0)) ** 3).mean(0) / x.std(0) ** 3
        # uniform margins have skewness 0 (sd of the estimate ~ sqrt(6 / n) = 0.04); lognormal ~ 6
        assert (np.abs(skew) < 0.2).all() if name.startswith("symmetric") else (skew > 1).all()
    low = np.corrcoef(data["symmetric low positive"], rowvar=False)[0, 1]
    high = np.corrcoef(data["symmetric high positive"], rowvar=False)[0, 1]
    assert 0.2 < low < 0.4
    assert 0.85 < high < 0.95
    assert np.array_equal(
        eight_types_data(n=10, seed=3)["symmetric low positive"],
        eight_types_data(n=10, seed=3)["symmetric low positive"],
    )


def test_experiment_rows() -> None:
    rows = eight_types_experiment(n=150, p=3, k=10, seed=0)
    assert len(rows) == 24
    assert {r["variant"] for r in rows} == {"masked", "restored", "positive"}
    for r in rows:
        assert 0 <= r["ecdf_max"] <= 1
        assert r["cluster"] >= 0
        assert 0 <= r["propensity"] <= 0.25


def test_generalised_experiment_rows() -> None:
    from sdckit.microagg import VARIANTS, experiment
    from sdckit.risk import record_linkage

    rows = experiment(n=120, p=3, k=10, methods=("mdav", "rank_swap"), seed=1)
    assert len(rows) == 8 * 2 * 3
    assert {r["variant"] for r in rows} == set(VARIANTS)
    for r in rows:
        assert 0 <= r["linkage_nearest"] <= r["linkage_within_k"] <= 1
        assert r["il1s"] > 0
        assert 0 <= r["propensity"] <= 0.25
        if r["variant"] == "restored":
            assert r["covariance_change"] < 1e-8  # T restores the covariance exactly
    x = eight_types_data(n=120, p=3, seed=1)["symmetric low positive"]
    first = rows[0]
    assert (first["method"], first["variant"]) == ("mdav", "masked")
    from sdckit.microagg._groups import group_centres, mdav_groups, standardize

    masked = group_centres(x, mdav_groups(standardize(x), 10))
    assert first["linkage_nearest"] == record_linkage(x, masked).share_nearest
    assert rows[:3] == experiment(n=120, p=3, k=10, methods=("mdav",), seed=1)[:3]  # seeded: reproducible
