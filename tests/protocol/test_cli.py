"""``sdckit protocol``: keygen, simulate end to end (real services on loopback), errors."""

from __future__ import annotations

import json
import os
import re
import stat
from collections import Counter
from pathlib import Path

import polars as pl
import pytest
from typer.testing import CliRunner

from sdckit.cli import app
from sdckit.protocol import encode_value

runner = CliRunner()


def test_keygen_writes_a_private_file(tmp_path: Path) -> None:
    path = tmp_path / "shuffler.key"
    r = runner.invoke(app, ["protocol", "keygen", str(path), "--json"])
    assert r.exit_code == 0, r.output
    out = json.loads(r.stdout)
    assert out["public_key"].startswith("x25519:")
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert (tmp_path / "shuffler.key.pub").read_text().strip() == out["public_key"]
    r = runner.invoke(app, ["protocol", "keygen", str(path)])
    assert r.exit_code == 1
    assert "--force" in r.stderr
    assert "Traceback" not in r.output
    r = runner.invoke(
        app, ["protocol", "keygen", str(tmp_path / "pq.key"), "--suite", "mlkem768-x25519", "--json"]
    )
    assert r.exit_code == 0
    assert json.loads(r.stdout)["public_key"].startswith("mlkem768-x25519:")
    r = runner.invoke(app, ["protocol", "keygen", str(tmp_path / "x.key"), "--suite", "rsa"])
    assert r.exit_code == 2


@pytest.fixture(scope="module")
def adult_csv(tmp_path_factory: pytest.TempPathFactory, adult: pl.DataFrame) -> Path:
    path = tmp_path_factory.mktemp("data") / "adult_1500.csv"
    adult.head(1500).write_csv(path)
    return path


def test_simulate_user_errors_are_one_line(adult_csv: Path) -> None:
    r = runner.invoke(app, ["protocol", "simulate", str(adult_csv), "--columns", "sexx,race"])
    assert r.exit_code == 1
    assert "Did you mean 'sex'" in r.stderr
    assert "Traceback" not in r.output
    r = runner.invoke(app, ["protocol", "simulate", str(adult_csv), "--columns", "sex", "--setting", "bogus"])
    assert r.exit_code == 2
    r = runner.invoke(app, ["protocol", "serve", "nobody", "--config", "x.yaml"])
    assert r.exit_code == 2


@pytest.mark.services
def test_simulate_fixed_setting_end_to_end(adult_csv: Path, tmp_path: Path) -> None:
    cols = ["age", "sex", "race", "marital-status"]
    r = runner.invoke(
        app,
        [
            "protocol",
            "simulate",
            str(adult_csv),
            "--columns",
            ",".join(cols),
            "--k",
            "5",
            "--budget",
            "0.05",
            "--batch-threshold",
            "500",
            "--workdir",
            str(tmp_path),
            "--json",
        ],
    )
    assert r.exit_code == 0, r.output
    out = json.loads(r.stdout)
    assert out["verified"] is True
    plan = out["plan"]
    assert plan["columns"]
    assert set(plan["columns"]) <= set(cols)
    assert plan["bound"] <= 0.05
    assert out["n_round1"] == out["n_round2"] == out["n_released"] == 1500
    assert out["tallies"]["curator"] == {"accepted": 6000, "duplicates": 0, "rejected": 0}
    assert out["tallies"]["analyst"]["accepted"] == 1500
    # marginals against an independent count of the same file
    df = pl.read_csv(adult_csv)
    for c in cols:
        assert out["marginals"][c] == {str(v): n for v, n in Counter(df[c].to_list()).items()}
    # the true exposure at k of the release, by polars group_by on the input
    sizes = df.group_by(plan["columns"]).len()
    assert out["exposure_at_k"] == pytest.approx(
        sizes.filter(pl.col("len") < 5)["len"].sum() / 1500, abs=1e-15
    )
    assert out["exposure_at_k"] <= plan["bound"]
    # the shuffler's store and logs hold no plaintext value and no sender address
    files = [p for p in (tmp_path / "shuffler").rglob("*") if p.is_file() and p.name != "key.json"]
    blob = b"".join(p.read_bytes() for p in files)
    values = {v for c in cols if df[c].dtype == pl.String for v in df[c].unique().to_list() if len(v) >= 5}
    assert values
    assert not any(v.encode() in blob for v in values)
    logs = b"".join(p.read_bytes() for p in files if p.suffix == ".log" or p.name == "process.out")
    assert b"forwarded" in logs
    assert not re.search(rb"127\.0\.0\.1:\d+", logs)
    assert encode_value("Male").encode() not in blob


@pytest.mark.services
def test_simulate_statistical_setting_with_local_suppression(adult: pl.DataFrame) -> None:
    from sdckit.protocol import simulate

    res = simulate(
        adult.head(800),
        ["sex", "race", "relationship"],
        k=3,
        budget=0.45,  # pays D = sqrt(ln(2 * 7 / 0.05) / (2 * 600)) = 0.069 (DKW, union over 7 feature sets)
        setting="statistical",
        round1_users=600,
        local_suppression=True,
        batch_threshold=200,
        seed=7,
    )
    assert res.n_round1 == 600
    assert res.n_round2 == 200
    assert res.n_released == 200
    assert res.plan.columns
    assert res.plan.setting == "statistical"
    assert "statistical" in res.plan.method
    assert res.verified
    assert res.to_dict()["plan"]["columns"] == list(res.plan.columns)


def test_serve_with_a_bad_config_is_one_line(tmp_path: Path) -> None:
    cfg = tmp_path / "curator.yaml"
    cfg.write_text("key_file: key.json\ndata_dir: data\nadmin_token: short\nrelay_token: short\n")
    r = runner.invoke(app, ["protocol", "serve", "curator", "--config", str(cfg)])
    assert r.exit_code == 1
    assert "admin_token" in r.stderr
    assert "Traceback" not in r.output
    r = runner.invoke(app, ["protocol", "serve", "curator", "--config", str(tmp_path / "missing.yaml")])
    assert r.exit_code == 1
    assert "no file" in r.stderr


def test_the_services_start_without_scikit_learn_or_scipy() -> None:
    """Each of the three service processes imports ``sdckit.protocol.services``; scikit-learn and
    scipy (about 2 s of CPU per process) are only needed for planning with hierarchies, so they are
    imported then, not at start-up."""
    import subprocess
    import sys

    code = (
        "import sys, sdckit.protocol.services._serve\n"
        "heavy = [m for m in ('sklearn', 'scipy') if m in sys.modules]\n"
        "assert not heavy, heavy\n"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
