"""The shuffle protocol end to end on loopback: the full Adult data (32,561 users) with 4 and with
8 features through both rounds, three real service processes, users driven over HTTP.

Prints, per run, the wall-clock seconds and users per second of each stage, and (the floor) the
cost of one HPKE seal and one open measured in the same process. Target: 4 features end to end in
under 90 s on a 2-core machine. Run from this folder: ``../.venv/bin/python protocol_shuffle.py``.
"""

from __future__ import annotations

import os
import sys

from _harness import bench, emit
from sdckit.datasets import load_adult
from sdckit.protocol import PrivateKey, info_label, open_sealed, pack_feature, seal, simulate

FEATURES_4 = ["age", "sex", "race", "marital-status"]
FEATURES_8 = [*FEATURES_4, "workclass", "education", "relationship", "occupation"]


def hpke_floor() -> tuple[float, float]:
    key = PrivateKey.generate()
    pub = key.public_key()
    info = info_label("bench", 1, "curator")
    plain = pack_feature("sex", "Male", os.urandom(16), 256)
    ct = seal(pub, plain, info)
    n = 2000
    t_seal = bench(lambda: [seal(pub, plain, info) for _ in range(n)], repeat=3).median / n
    t_open = bench(lambda: [open_sealed(key, ct, info) for _ in range(n)], repeat=3).median / n
    return t_seal, t_open


def main() -> None:
    runs = [("4", FEATURES_4, 90.0), ("8", FEATURES_8, None)]
    if "--quick" in sys.argv:
        runs = runs[:1]
    df = load_adult()
    t_seal, t_open = hpke_floor()
    emit("protocol HPKE seal (x25519, 256 B)", t_seal)
    emit("protocol HPKE open (x25519, 256 B)", t_open)
    for label, cols, target in runs:
        res = simulate(df, cols, k=5, budget=0.05, batch_threshold=2000, users_per_request=32, seed=0)
        n = res.n_round1
        m = len(cols)
        # the floor: per user, round 1 costs 2m seals (user) + 2m opens (shuffler, curator),
        # round 2 costs 2 seals + 2 opens; on 2 cores at best half of that in wall time
        floor = n * ((2 * m + 2) * t_seal + (2 * m + 2) * t_open) / 2
        emit(
            f"protocol simulate adult {n} users x {label} features",
            res.seconds["total"],
            target=target,
            verified=res.verified,
            columns=",".join(res.plan.columns),
            round1_s=round(res.seconds["round1"], 1),
            round2_s=round(res.seconds["round2"], 1),
            startup_s=round(res.seconds["startup"], 1),
            plan_s=round(res.seconds["plan"], 1),
            round1_users_per_s=round(res.users_per_second["round1"]),
            round2_users_per_s=round(res.users_per_second["round2"]),
            hpke_floor_2core_s=round(floor, 1),
        )


if __name__ == "__main__":
    main()
