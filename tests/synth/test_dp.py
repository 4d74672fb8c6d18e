"""DP synthesizers: epsilon is OpenDP's map, the noise has the discrete Laplace's spread, the tree keeps dependence."""

from __future__ import annotations

import builtins
import math

import numpy as np
import polars as pl
import pytest

from sdckit.errors import MissingExtraError, ParameterError
from sdckit.synth import Discretizer, DPMarginalSynthesizer, DPTreeSynthesizer
from sdckit.synth._dp import noisy_argmax, noisy_counts

pytest.importorskip("opendp")


def _frame(n: int = 2000, seed: int = 0) -> pl.DataFrame:
    rng = np.random.default_rng(seed)
    a = rng.integers(0, 4, n)
    b = (a + (rng.random(n) < 0.05)) % 4  # b follows a
    x = rng.normal(50, 10, n)
    return pl.DataFrame({"a": [f"v{v}" for v in a], "b": b, "x": x})


def test_noise_has_the_discrete_laplace_variance() -> None:
    # discrete Laplace of scale s: P(k) ~ exp(-|k| / s), variance 2 e^{-1/s} / (1 - e^{-1/s})^2 (closed form)
    counts = np.zeros(3_000, dtype=np.int64)  # OpenDP samples about 1 ms per count
    noisy, eps = noisy_counts(counts, sensitivity=2, epsilon=1.0)
    s = 2.0
    q = math.exp(-1 / s)
    var = 2 * q / (1 - q) ** 2
    assert abs(noisy.mean()) < 0.25
    assert noisy.var() == pytest.approx(var, rel=0.15)  # the sample variance's relative sd is about 0.04 here
    assert eps == pytest.approx(1.0, rel=1e-9)  # OpenDP's map of sensitivity 2 at scale 2


def test_noisy_argmax_picks_the_clear_winner_and_reports_its_epsilon() -> None:
    picks = [noisy_argmax([0.0, 1000.0, 0.0], sensitivity=1.0, epsilon=1.0)[0] for _ in range(20)]
    assert picks == [1] * 20
    assert noisy_argmax([0.0, 1.0], sensitivity=1.0, epsilon=0.5)[1] == pytest.approx(0.5, rel=1e-9)


@pytest.mark.parametrize("cls", [DPMarginalSynthesizer, DPTreeSynthesizer])
def test_epsilon_spent_is_at_most_the_budget(cls: type) -> None:
    model = cls(epsilon=0.7).fit(_frame())
    assert 0.69 <= model.epsilon_ <= 0.7 * (1 + 1e-9)
    out = model.sample(500)
    assert out.columns == ["a", "b", "x"]
    assert out.height == 500
    assert out.schema == _frame().schema


def test_tree_keeps_a_strong_dependence_the_marginals_lose() -> None:
    f = _frame(4000)
    agree = lambda g: float((g["a"].str.slice(1).cast(pl.Int64) == g["b"]).mean())  # noqa: E731
    tree = DPTreeSynthesizer(epsilon=50.0, random_state=1).fit(f).sample(4000)
    marg = DPMarginalSynthesizer(epsilon=50.0, random_state=1).fit(f).sample(4000)
    assert agree(f) > 0.9
    assert agree(tree) > 0.85  # the tree links a and b
    assert agree(marg) < 0.4  # independent columns: about 1/4


def test_numeric_values_fall_in_their_bins() -> None:
    f = _frame()
    d = Discretizer(bins=10).fit(f)
    codes = d.transform(f)
    back = d.inverse(codes, np.random.default_rng(0))
    edges = d.columns_[2].edges
    assert edges is not None
    assert np.all(np.searchsorted(edges, back["x"].to_numpy(), side="right") - 1 == np.minimum(codes[:, 2], 9))
    assert back["a"].to_list() == f["a"].to_list()  # categories decode exactly


def test_bad_epsilon_is_refused() -> None:
    with pytest.raises(ParameterError, match="epsilon"):
        DPMarginalSynthesizer(epsilon=0).fit(_frame())


def test_missing_opendp_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    real = builtins.__import__

    def fake(name: str, *args: object, **kwargs: object) -> object:
        if name.startswith("opendp"):
            raise ImportError("no opendp", name="opendp")
        return real(name, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(builtins, "__import__", fake)
    monkeypatch.delitem(__import__("sys").modules, "opendp.prelude", raising=False)
    monkeypatch.delitem(__import__("sys").modules, "opendp", raising=False)
    with pytest.raises(MissingExtraError, match=r"sdckit\[dp\]"):
        DPMarginalSynthesizer(epsilon=1.0).fit(_frame())
