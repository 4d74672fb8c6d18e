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
    (MDAV, {"k": 5, "columns": ["x"], "centre": "median", "strata": ["s"], "missing": "keep",
            "allow_linear_relations": True, "entity": "firm"}),
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
            "allow_linear_relations": True,
            "entity": "firm",
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
            "partition": "total",
            "split_groups": True,
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


# ---------------------------------------------------------------- scikit-learn integration

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from sklearn.base import clone  # noqa: E402
from sklearn.compose import ColumnTransformer  # noqa: E402
from sklearn.pipeline import Pipeline, make_pipeline  # noqa: E402
from sklearn.preprocessing import StandardScaler  # noqa: E402

from sdckit.microagg import RestoredMicroaggregation  # noqa: E402

RNG = np.random.default_rng(20261201)
X = RNG.normal(size=(60, 3)) * [1.0, 10.0, 100.0] + [0.0, 5.0, 50.0]
NAMED = pl.DataFrame({"a": X[:, 0], "b": X[:, 1], "c": X[:, 2]})


def _group_means(values: np.ndarray, groups: np.ndarray) -> np.ndarray:
    out = np.empty_like(values)
    for g in np.unique(groups):
        out[groups == g] = values[groups == g].mean(axis=0)
    return out


def test_mdav_after_standard_scaler_in_a_polars_pipeline() -> None:
    pipe = Pipeline([("scale", StandardScaler()), ("mdav", MDAV(k=3))]).set_output(transform="polars")
    out = pipe.fit_transform(NAMED)
    assert isinstance(out, pl.DataFrame)
    assert out.columns == ["a", "b", "c"]
    assert list(pipe.get_feature_names_out()) == ["a", "b", "c"]
    # independently: MDAV groups z-scores, so the groups are those of MDAV on the raw table, and
    # the released values are the group means of the scaler's output
    groups = MDAV(k=3).fit(NAMED).groups_
    assert np.bincount(groups).min() >= 3
    scaled = StandardScaler().fit_transform(X)
    np.testing.assert_allclose(out.to_numpy(), _group_means(scaled, groups), atol=1e-12)
    assert pipe.transform(NAMED).equals(out)  # the rows seen in fit
    with pytest.raises(ParameterError, match="Use fit_transform"):
        pipe.transform(NAMED.head(30))


def test_numpy_in_numpy_out_with_scikit_learn_names() -> None:
    m = MDAV(k=3)
    out = m.fit_transform(X)
    assert isinstance(out, np.ndarray)
    assert out.shape == X.shape
    assert m.n_features_in_ == 3
    assert not hasattr(m, "feature_names_in_")
    assert list(m.get_feature_names_out()) == ["x0", "x1", "x2"]
    np.testing.assert_allclose(out, _group_means(X, m.groups_))
    noisy = AdditiveNoise(t=0.5, random_state=1).fit_transform(X)
    assert isinstance(noisy, np.ndarray)
    assert noisy.shape == X.shape
    pca = NoisyPCA(t=0.1).fit(X)
    assert list(pca.get_feature_names_out()) == [f"noisypca{i}" for i in range(pca.transform(X).shape[1])]


def test_frames_set_feature_names_in() -> None:
    for est in (MDAV(k=3, columns=["a", "b"]), AdditiveNoise(columns=["c"], random_state=0)):
        est.fit(NAMED)
        assert list(est.feature_names_in_) == ["a", "b", "c"]
        assert est.n_features_in_ == 3
        assert list(est.get_feature_names_out()) == ["a", "b", "c"]  # other columns pass through
    with pytest.raises(ValueError, match="The feature names should match"):
        AdditiveNoise(random_state=0).fit(NAMED).transform(NAMED.select("c", "b", "a"))


def test_set_output_pandas_on_pipeline_and_column_transformer() -> None:
    pipe = make_pipeline(StandardScaler(), AdditiveNoise(t=0.1, random_state=0)).set_output(transform="pandas")
    out = pipe.fit_transform(NAMED.to_pandas())
    assert isinstance(out, pd.DataFrame)
    assert list(out.columns) == ["a", "b", "c"]
    ct = ColumnTransformer(
        [("mdav", MDAV(k=3), ["a", "b"]), ("keep", "passthrough", ["c"])]
    ).set_output(transform="polars")
    got = ct.fit_transform(NAMED)
    assert isinstance(got, pl.DataFrame)
    assert got.columns == ["mdav__a", "mdav__b", "keep__c"]
    want = MDAV(k=3).fit_transform(NAMED.select("a", "b"))
    np.testing.assert_allclose(got.select("mdav__a", "mdav__b").to_numpy(), want.to_numpy())


def test_restorers_are_not_a_pipeline_step_and_say_what_is() -> None:
    with pytest.raises(ParameterError, match="RestoredMicroaggregation"):
        make_pipeline(MDAV(k=3), MomentRestorer()).fit(NAMED)


def test_restored_microaggregation_keeps_the_moments() -> None:
    out = RestoredMicroaggregation(k=3).fit_transform(NAMED)
    assert isinstance(out, pl.DataFrame)
    y = out.to_numpy()
    np.testing.assert_allclose(y.mean(axis=0), X.mean(axis=0), rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(np.cov(y, rowvar=False), np.cov(X, rowvar=False), rtol=1e-9)
    masked = MDAV(k=3).fit_transform(NAMED)  # the same two steps by hand
    by_hand = MomentRestorer().fit(NAMED, masked).transform(masked)
    np.testing.assert_allclose(y, by_hand.to_numpy())
    positive = pl.DataFrame({"a": np.abs(X[:, 0]), "b": np.abs(X[:, 1])})
    pos = RestoredMicroaggregation(k=3, restorer=PositivityRestorer()).fit_transform(positive)
    assert (pos.to_numpy() >= 0).all()
    cloned = clone(RestoredMicroaggregation(k=4, restorer=MomentRestorer(method="procrustes")))
    assert cloned.get_params()["restorer__method"] == "procrustes"


def test_random_state_reproduces_and_old_seed_name_still_maps() -> None:
    a = AdditiveNoise(t=1.0, random_state=3).fit_transform(NAMED)
    assert a.equals(AdditiveNoise(t=1.0, random_state=3).fit_transform(NAMED))
    assert not a.equals(AdditiveNoise(t=1.0).fit_transform(NAMED))  # OS entropy
    with pytest.warns(DeprecationWarning, match="random_state"):
        old: Any = AdditiveNoise(t=1.0, seed=3)  # type: ignore[call-arg]
    assert old.get_params()["random_state"] == 3
    assert old.fit_transform(NAMED).equals(a)
