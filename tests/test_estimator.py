"""The shared estimator contract (sdckit._estimator): parameters, reconstruction, fitted checks."""

from __future__ import annotations

from typing import Any

import polars as pl
import pytest

from sdckit._estimator import Estimator
from sdckit.errors import NotFittedError, ParameterError
from sdckit.microagg import MDAV, Microaggregation, MomentRestorer, PositivityRestorer
from sdckit.spectral import AdditiveNoise, NoisyPCA

# One non-default value per parameter, so a parameter that get_params misses or reorders shows.
ESTIMATORS: list[tuple[type[Estimator], dict[str, Any]]] = [
    (MDAV, {"k": 5, "columns": ["x"], "centre": "median", "strata": ["s"], "missing": "keep"}),
    (
        Microaggregation,
        {
            "k": 4,
            "method": "vmdav",
            "columns": ["x", "y"],
            "centre": "median",
            "strata": None,
            "gamma": 0.5,
            "sort_by": "x",
            "block_size": 100,
            "blocks": None,
            "missing": "keep",
        },
    ),
    (MomentRestorer, {"method": "cholesky", "columns": ["x"]}),
    (
        PositivityRestorer,
        {
            "mode": "global",
            "buffer": 0.1,
            "fill": "zero",
            "sort_key": "deficit",
            "columns": ["x", "y"],
            "constrained": ["x"],
            "method": "procrustes",
        },
    ),
    (AdditiveNoise, {"t": 0.5, "distribution": "laplace", "columns": ["x"], "random_state": 7}),
    (NoisyPCA, {"t": 2.0, "n_components": 1, "columns": ["x", "y"], "center": False}),
]
IDS = [cls.__name__ for cls, _ in ESTIMATORS]

FRAME = pl.DataFrame({"x": [1.0, 2.0, 3.0, 10.0, 11.0, 12.0], "y": [6.0, 4.0, 5.0, 1.0, 3.0, 2.0]})


@pytest.mark.parametrize(("cls", "params"), ESTIMATORS, ids=IDS)
def test_get_params_returns_the_constructor_arguments(cls: type[Estimator], params: dict[str, Any]) -> None:
    assert cls(**params).get_params() == params


@pytest.mark.parametrize(("cls", "params"), ESTIMATORS, ids=IDS)
def test_set_params_round_trip(cls: type[Estimator], params: dict[str, Any]) -> None:
    e = cls()
    assert e.set_params(**params) is e
    assert e.get_params() == params
    assert cls().set_params(**cls(**params).get_params()).get_params() == params


@pytest.mark.parametrize(("cls", "params"), ESTIMATORS, ids=IDS)
def test_reconstruction_from_params_gives_equal_params(cls: type[Estimator], params: dict[str, Any]) -> None:
    # what sklearn.base.clone does: a new, unfitted estimator with the same parameters
    e = cls(**params)
    copy = type(e)(**e.get_params())
    assert copy is not e
    assert copy.get_params() == e.get_params()
    default = cls()
    assert type(default)(**default.get_params()).get_params() == default.get_params()


@pytest.mark.parametrize(("cls", "params"), ESTIMATORS, ids=IDS)
def test_set_params_rejects_an_unknown_name(cls: type[Estimator], params: dict[str, Any]) -> None:
    with pytest.raises(ParameterError, match=f"{cls.__name__} has no parameter 'nope'"):
        cls().set_params(nope=1)


@pytest.mark.parametrize(("cls", "params"), ESTIMATORS, ids=IDS)
def test_repr_shows_only_non_default_params(cls: type[Estimator], params: dict[str, Any]) -> None:
    assert repr(cls()) == f"{cls.__name__}()"
    name, value = next((n, v) for n, v in params.items() if v is not None)
    assert repr(cls(**{name: value})) == f"{cls.__name__}({name}={value!r})"


@pytest.mark.parametrize(
    ("cls", "message"),
    [
        (MDAV, "this MDAV is not fitted yet; call fit(...) first."),
        (Microaggregation, "this Microaggregation is not fitted yet; call fit(...) first."),
        (MomentRestorer, "this MomentRestorer is not fitted yet; call fit(...) first."),
        (PositivityRestorer, "this PositivityRestorer is not fitted yet; call fit(...) first."),
        (AdditiveNoise, "AdditiveNoise is not fitted yet; call fit(X) or fit_transform(X) first."),
        (NoisyPCA, "NoisyPCA is not fitted yet; call fit(X) first."),
    ],
    ids=IDS,
)
def test_transform_before_fit_raises_not_fitted(cls: type[Estimator], message: str) -> None:
    e: Any = cls()
    with pytest.raises(NotFittedError) as info:
        e.transform(FRAME)
    assert str(info.value) == message
    assert isinstance(info.value, AttributeError)  # as scikit-learn's NotFittedError


def test_check_is_fitted_without_names_looks_for_learned_attributes() -> None:
    e = MomentRestorer()
    with pytest.raises(NotFittedError, match="call fit"):
        e.check_is_fitted()
    e.fit(FRAME, FRAME)
    e.check_is_fitted()
    e.check_is_fitted("A_", "b_")
    with pytest.raises(NotFittedError, match="MomentRestorer"):
        e.check_is_fitted("A_", "not_learned_")
