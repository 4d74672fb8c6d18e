"""``sdckit spectral ...`` and ``sdckit noise`` as a user meets them."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from typer.testing import CliRunner

from sdckit.cli import app
from sdckit.spectral import SpikedModel, separation_discriminant


def _run(*args: str) -> object:
    return CliRunner().invoke(app, list(args))


def test_separation_json_matches_the_discriminant_method() -> None:
    r = _run("spectral", "separation", "--c", "0.5", "--r", "0.3", "--s", "10", "--t", "1.5", "--json")
    assert r.exit_code == 0, r.output  # type: ignore[attr-defined]
    out = json.loads(r.stdout)  # type: ignore[attr-defined]
    assert out["separation"] == pytest.approx(separation_discriminant(0.5, 0.3, 10.0, 1.5), rel=1e-12)
    assert out["n_components"] == 2
    assert out["support"]["gap_high"] - out["support"]["gap_low"] == pytest.approx(out["separation"], rel=1e-12)


def test_separation_table_and_user_error() -> None:
    r = _run("spectral", "separation", "--c", "0.5", "--r", "0.3", "--s", "10", "--t", "1.5")
    assert r.exit_code == 0
    assert "1.65191" in r.stdout
    bad = _run("spectral", "separation", "--c", "0.5", "--r", "1.3", "--s", "10", "--t", "1.5")
    assert bad.exit_code == 1  # type: ignore[attr-defined]
    assert "r=1.3" in bad.stderr
    assert "Traceback" not in bad.stderr
    usage = _run("spectral", "separation", "--c", "0.5", "--r", "0.3", "--s", "10", "--t", "1", "--method", "x")
    assert usage.exit_code == 2  # type: ignore[attr-defined]


def test_curve_with_plot(tmp_path: Path) -> None:
    svg = tmp_path / "curve.svg"
    r = _run("spectral", "curve", "--c", "0.5", "--r", "0.3", "--s", "10", "--p", "50", "--points", "5",
             "--plot", str(svg), "--json")
    assert r.exit_code == 0, r.output  # type: ignore[attr-defined]
    out = json.loads(r.stdout)  # type: ignore[attr-defined]
    assert len(out["curve"]) == 5
    assert out["curve"][0]["information_leakage_nats"] is None  # t = 0 leaks everything: inf -> null
    assert out["critical_noise"] == pytest.approx(SpikedModel(0.5, 0.3, 10.0).critical_noise())
    assert svg.read_text().lstrip().startswith("<?xml")


def test_design_from_parameters_and_from_data(tmp_path: Path) -> None:
    r = _run("spectral", "design", "--c", "0.5", "--r", "0.3", "--s", "10", "--p", "50", "--max-leakage-nats", "12", "--json")
    assert r.exit_code == 0, r.output  # type: ignore[attr-defined]
    d = json.loads(r.stdout)["design"]  # type: ignore[attr-defined]
    assert d["t"] == pytest.approx(10 / math.expm1(2 * 12 / 15), rel=1e-14)  # [seed] P_IT^-1 with k = 15
    assert d["information_leakage_nats"] <= 12
    rng = np.random.default_rng(0)
    x = rng.normal(size=(500, 6)) * np.array([3.0, 0.3, 0.3, 0.3, 0.3, 0.3])
    path = tmp_path / "pilot.csv"
    pl.DataFrame({f"q{j}": x[:, j] for j in range(6)}).write_csv(path)
    r = _run("spectral", "design", "--data", str(path), "--max-leakage-nats", "3", "--json")
    assert r.exit_code == 0, r.output  # type: ignore[attr-defined]
    out = json.loads(r.stdout)  # type: ignore[attr-defined]
    assert out["fit"]["k"] == 1
    assert out["design"]["p"] == 6
    assert _run("spectral", "design", "--c", "0.5", "--r", "0.3", "--s", "10", "--p", "50").exit_code == 2  # type: ignore[attr-defined]


def test_support_and_simulate() -> None:
    r = _run("spectral", "support", "--c", "0.1", "--taus", "1,4,12", "--weights", "0.5,0.3,0.2", "--json")
    assert r.exit_code == 0, r.output  # type: ignore[attr-defined]
    out = json.loads(r.stdout)  # type: ignore[attr-defined]
    assert [g["mass_above"] for g in out["gaps"]] == pytest.approx([0.5, 0.2])
    r = _run("spectral", "simulate", "--c", "0.5", "--r", "0.3", "--s", "10", "--t", "1.5", "--p", "100",
             "--reps", "2", "--json")
    assert r.exit_code == 0, r.output  # type: ignore[attr-defined]
    assert len(json.loads(r.stdout)["gaps"]) == 2  # type: ignore[attr-defined]


def test_noise_command(tmp_path: Path) -> None:
    src = tmp_path / "survey.csv"
    pl.DataFrame({"q1": [1, 2, 3, 4] * 25, "q2": [2.5] * 100, "id": ["a"] * 100}).write_csv(src)
    out = tmp_path / "noisy.parquet"
    r = _run("noise", str(src), "--columns", "q1,q2", "--t", "1", "--distribution", "discrete", "--seed", "1",
             "--out", str(out))
    assert r.exit_code == 0, r.output  # type: ignore[attr-defined]
    df = pl.read_parquet(out)
    assert df.columns == ["q1", "q2", "id"]
    assert df.schema["q1"] == pl.Int64  # integer answers stay integers
    assert df["id"].to_list() == ["a"] * 100
    bad = _run("noise", str(src), "--columns", "q3", "--t", "1", "--out", str(out))
    assert bad.exit_code == 1
    assert "q3" in bad.stderr
    bad = _run("noise", str(src), "--t", "1", "--out", str(tmp_path / "x.xlsx"))
    assert bad.exit_code == 2  # type: ignore[attr-defined]


def test_design_refuses_model_options_beside_data(tmp_path: Path) -> None:
    path = tmp_path / "x.csv"
    rng = np.random.default_rng(20261130)
    pl.DataFrame({"a": rng.normal(size=40), "b": rng.normal(size=40)}).write_csv(path)
    # Before: --c was silently ignored when --data was given.
    r = _run("spectral", "design", "--data", str(path), "--c", "0.5", "--max-leakage-nats", "1")
    assert r.exit_code == 2  # type: ignore[attr-defined]
    r = _run("spectral", "design", "--data", str(path), "--max-leakage-nats", "1", "--json")
    assert r.exit_code == 0, r.output  # type: ignore[attr-defined]
    assert json.loads(r.stdout)["fit"] is not None  # type: ignore[attr-defined]


def test_old_epsilon_flag_names_its_new_name() -> None:
    # --epsilon read as differential privacy's epsilon; the figure is leakage in nats
    r = _run("spectral", "design", "--c", "0.5", "--r", "0.3", "--s", "10", "--p", "50", "--epsilon", "12")
    assert r.exit_code == 2  # type: ignore[attr-defined]
    assert "--max-leakage-nats 12" in r.output  # type: ignore[attr-defined]
    assert "Traceback" not in r.output  # type: ignore[attr-defined]
    new = _run("spectral", "design", "--c", "0.5", "--r", "0.3", "--s", "10", "--p", "50", "--max-leakage-nats", "12", "--json")
    assert new.exit_code == 0, new.output  # type: ignore[attr-defined]
    assert json.loads(new.stdout)["design"]["information_leakage_nats"] <= 12  # type: ignore[attr-defined]
