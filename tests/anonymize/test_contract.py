"""The estimator contract the pipeline relies on: JSON-able params, clone, not fitted, changes_."""

from __future__ import annotations

import json
from typing import Any

import polars as pl
import pytest
from sklearn.base import clone

from sdckit.anonymize import PRAM, GlobalRecoder, LocalSuppressor, TopBottomCoder
from sdckit.errors import NotFittedError

CASES: list[tuple[type[Any], dict[str, Any]]] = [
    (GlobalRecoder, {"rules": {"age": {"breaks": [30, 40]}, "sex": {"mapping": {"f": "x"}}}}),
    (TopBottomCoder, {"columns": ["age"], "top": 40, "bottom_quantile": 0.1}),
    (LocalSuppressor, {"k": 2, "columns": ["age", "sex"], "importance": ["sex"], "method": "sdcmicro",
                       "random_redaction": 0.1, "random_state": 3}),
    (LocalSuppressor, {"k": 2, "columns": ["age", "sex"], "importance": ["sex"], "random_state": 3}),
    (PRAM, {"columns": ["sex"], "pd": 0.7, "random_state": 1}),
]
DF = pl.DataFrame({"age": [25, 31, 31, 44, 52, 52], "sex": ["f", "m", "m", "f", "f", "m"], "id": range(6)})


@pytest.mark.parametrize(("cls", "params"), CASES, ids=[c.__name__ for c, _ in CASES])
def test_contract(cls: type[Any], params: dict[str, Any]) -> None:
    est = cls(**json.loads(json.dumps(params)))  # a pipeline step's YAML/JSON mapping, as is
    assert {k: v for k, v in est.get_params().items() if k in params} == params
    with pytest.raises(NotFittedError):
        est.transform(DF)
    copy = clone(est)
    assert copy.get_params() == est.get_params()
    out = est.fit(DF).transform(DF)
    assert isinstance(out, pl.DataFrame)
    assert out["id"].to_list() == list(range(6))  # other columns untouched
    assert out.equals(copy.fit_transform(DF))  # same parameters, same release
    assert set(est.changes_) <= {"age", "sex"}
    for counts in est.changes_.values():
        assert {"cells_changed", "values_merged"} <= set(counts)
    json.dumps(est.changes_)
