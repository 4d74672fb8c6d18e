"""Names that moved out of sdckit.risk (issue 33) still import from it, with a DeprecationWarning."""

from __future__ import annotations

import importlib

import pytest

import sdckit.plan
import sdckit.risk

MOVED = ["BlockQuery", "QueryPlan", "ReleasePlan", "Setting", "choose_pair_queries", "plan_release", "received_marginals"]


@pytest.mark.parametrize("name", MOVED)
def test_a_moved_name_imports_from_risk_with_a_warning(name: str) -> None:
    with pytest.warns(DeprecationWarning, match=rf"sdckit\.risk\.{name} moved to sdckit\.plan\.{name}"):
        got = getattr(importlib.import_module("sdckit.risk"), name)
    assert got is getattr(sdckit.plan, name)


def test_from_import_of_a_moved_name_works() -> None:
    with pytest.warns(DeprecationWarning, match="moved to sdckit.plan.plan_release"):
        from sdckit.risk import plan_release
    assert plan_release is sdckit.plan.plan_release


def test_the_moved_names_are_sdckit_plan_public_api() -> None:
    assert set(MOVED) == set(sdckit.plan.__all__)
    assert not set(MOVED) & set(sdckit.risk.__all__)


def test_every_public_risk_name_imports_without_a_warning() -> None:
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for name in sdckit.risk.__all__:
            getattr(sdckit.risk, name)


def test_an_unknown_name_is_still_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="no attribute 'plan_relase'"):
        _ = sdckit.risk.plan_relase  # type: ignore[attr-defined]
