"""The certificate of local suppression and the exact mode, against brute force on small tables.

The minima below were found by exhaustive search (``_brute_min``: every row tries every set of its
present cells to hide, a branch cut at the best cost so far, the release checked with a plain
Counter), run once and written here; ``test_brute_force_recomputes_the_cheap_minima`` re-runs the
search on the tables it finishes in well under a second.
"""

from __future__ import annotations

import itertools
from collections import Counter

import numpy as np
import polars as pl
import pytest

from sdckit.anonymize import LocalSuppressor
from sdckit.anonymize._certificate import (
    candidates,
    certify,
    lagrangian_bound,
    lagrangian_release,
    lp_bound,
    row_floor,
    wildcard_floor,
)
from sdckit.anonymize._decoys import decoy_suppress, distinct_rows
from sdckit.risk import wildcard_group_sizes

Row = tuple[int, ...]


def _table(seed: int) -> list[Row]:
    """4 to 8 rows x 3 keys, values 0..2, about 15 % missing (-1)."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(4, 9))
    t = rng.integers(0, 3, size=(n, 3))
    t[rng.random((n, 3)) < 0.15] = -1
    return [tuple(int(v) for v in r) for r in t]


def _brute_min(rows: list[Row], k: int) -> int:
    """Fewest hidden cells so that every released row has >= k - 1 identical others (exhaustive)."""
    options = []
    for r in rows:
        present = [j for j, v in enumerate(r) if v >= 0]
        options.append([
            (size, tuple(-1 if j in hide else v for j, v in enumerate(r)))
            for size in range(len(present) + 1)
            for hide in itertools.combinations(present, size)
        ])
    best = [sum(sum(v >= 0 for v in r) for r in rows)]  # every cell hidden: one group of n >= k rows
    chosen: list[Row] = []

    def dfs(i: int, cost: int) -> None:
        if cost >= best[0]:
            return
        if i == len(rows):
            if min(Counter(chosen).values()) >= k:
                best[0] = cost
            return
        for c, t in options[i]:
            chosen.append(t)
            dfs(i + 1, cost + c)
            chosen.pop()

    dfs(0, 0)
    return best[0]


# (seed, k): the brute-force minimum of _table(seed) (tables of 4 to 8 rows, with missing cells)
BRUTE_MIN = {
    (0, 2): 10, (0, 3): 17, (1, 2): 9, (1, 3): 14, (2, 2): 12, (2, 3): 18, (3, 2): 9, (3, 3): 15,
    (4, 2): 6, (4, 3): 10, (5, 2): 8, (5, 3): 13, (6, 2): 7, (6, 3): 7, (7, 2): 7, (7, 3): 13,
    (8, 2): 10, (8, 3): 14, (9, 2): 4, (9, 3): 10, (10, 2): 7, (10, 3): 9, (11, 2): 6, (11, 3): 10,
}


def test_the_tables_have_missing_cells_and_eight_rows() -> None:
    tables = [_table(seed) for seed in range(12)]
    assert max(len(t) for t in tables) == 8
    assert sum(v < 0 for t in tables for r in t for v in r) >= 10


def test_brute_force_recomputes_the_cheap_minima() -> None:
    for seed, k in [(1, 2), (5, 3), (6, 2), (6, 3), (9, 2), (9, 3), (11, 2), (11, 3), (7, 2)]:
        assert _brute_min(_table(seed), k) == BRUTE_MIN[seed, k]


def _frame(rows: list[Row]) -> pl.DataFrame:
    return pl.DataFrame(
        {f"q{j}": [None if r[j] < 0 else f"v{r[j]}" for r in rows] for j in range(3)}
    )


@pytest.mark.parametrize(("seed", "k"), sorted(BRUTE_MIN))
def test_exact_mode_finds_the_brute_force_minimum_and_every_bound_is_below(seed: int, k: int) -> None:
    rows = _table(seed)
    truth = BRUTE_MIN[seed, k]
    frame = _frame(rows)
    est = LocalSuppressor(k=k, method="optimal", time_limit=20).fit(frame)
    out = est.transform(frame)
    assert int(out.group_by(list(out.columns)).len()["len"].min()) >= k  # plain polars: nulls a value
    hidden = sum(out[c].null_count() for c in out.columns) - sum(frame[c].null_count() for c in frame.columns)
    assert hidden == est.n_suppressed_ == truth
    assert est.certificate_["cells"] == truth
    assert est.certificate_["lower_bound"] <= truth
    assert est.optimal_
    # the decoys' certificate: a bound at or below the minimum, cells at or above it
    dec = LocalSuppressor(k=k, random_state=seed).fit(frame)
    assert dec.certificate_["lower_bound"] <= truth <= dec.certificate_["cells"]
    codes = np.asarray(rows, dtype=np.int32)
    origins, _, counts = distinct_rows(codes)
    assert int(row_floor(origins, counts, k) @ counts) <= truth
    assert certify(origins, counts, k, truth).lower_bound <= truth
    assert certify(origins, counts, k, truth, time_limit=0).lower_bound <= truth  # the floor alone


def test_the_lagrangian_bound_is_below_the_minimum_and_the_relaxation() -> None:
    # weak duality: every L(lam) is at most the linear relaxation's optimum (HiGHS, independent), which
    # is at most the brute-force minimum; and the subgradient steps lift it above the floor somewhere
    gains = 0
    for seed, k in BRUTE_MIN:
        truth = BRUTE_MIN[seed, k]
        codes = np.asarray(_table(seed), dtype=np.int32)
        origins, _, counts = distinct_rows(codes)
        cand = candidates(origins, counts, k)
        assert cand is not None
        lag, _ = lagrangian_bound(cand, counts, k, upper=float(truth), time_limit=10.0)
        lp = lp_bound(cand, counts, k, time_limit=10.0)
        assert lp is not None
        assert lag <= lp + 1e-6 <= truth + 1e-6
        floor = int(row_floor(origins, counts, k) @ counts)
        cert = certify(origins, counts, k, truth + 3, max_candidates=0)  # the relaxation skipped: Lagrangian
        assert cert.lower_bound <= truth
        gains += cert.method == "lagrangian" and cert.lower_bound > floor
    assert gains >= 8


def test_the_lagrangian_release_is_k_anonymous_and_releases_every_row_once() -> None:
    # on random tables of 300 rows x 4 keys: every released pattern (recounted with a plain Counter) holds
    # >= k rows, each distinct input row is released exactly its count of times, only below itself, and the
    # cells are at or above the certified bound; two draws from OS entropy differ somewhere
    releases = set()
    for seed in range(6):
        rng = np.random.default_rng(seed)
        codes = rng.integers(0, 4, size=(300, 4)).astype(np.int32)
        codes[rng.random(codes.shape) < 0.05] = -1
        origins, _, counts = distinct_rows(codes)
        for k in (3, 5):
            cand = candidates(origins, counts, k)
            assert cand is not None
            bound, lam = lagrangian_bound(cand, counts, k, upper=float(counts.sum() * 4), time_limit=10.0)
            got = lagrangian_release(origins, counts, k, cand, lam, np.ones(4), np.random.default_rng())
            if got is None:
                continue
            o, pats, m = got
            groups: Counter[Row] = Counter()
            per_origin = np.zeros(counts.size, dtype=np.int64)
            cells = 0
            for oi, t, mi in zip(o.tolist(), pats.tolist(), m.tolist(), strict=True):
                true = origins[oi].tolist()
                assert all(v == -1 or v == w for v, w in zip(t, true, strict=True))  # only hides cells
                groups[tuple(t)] += mi
                per_origin[oi] += mi
                cells += mi * sum(v == -1 and w >= 0 for v, w in zip(t, true, strict=True))
            assert min(groups.values()) >= k
            assert per_origin.tolist() == counts.tolist()
            assert cells >= bound - 1e-6
            if seed == 0 and k == 3:
                releases.add(tuple(sorted(zip(o.tolist(), map(tuple, pats.tolist()), m.tolist(), strict=True))))
                got2 = lagrangian_release(origins, counts, k, cand, lam, np.ones(4), np.random.default_rng())
                assert got2 is not None
                releases.add(tuple(sorted(zip(got2[0].tolist(), map(tuple, got2[1].tolist()), got2[2].tolist(), strict=True))))
    assert len(releases) == 2


def test_the_relaxation_is_tighter_than_the_floor_somewhere() -> None:
    gains = 0
    for seed, k in BRUTE_MIN:
        codes = np.asarray(_table(seed), dtype=np.int32)
        origins, _, counts = distinct_rows(codes)
        floor = int(row_floor(origins, counts, k) @ counts)
        gains += certify(origins, counts, k, BRUTE_MIN[seed, k]).lower_bound > floor
    assert gains >= 10


def test_the_optimum_is_drawn_at_random_among_the_minima() -> None:
    # four unique rows, keys of equal support, k = 2: hiding a everywhere or b everywhere, 4 cells each
    frame = pl.DataFrame({"a": ["x", "x", "y", "y"], "b": ["1", "2", "1", "2"]})
    seen = set()
    for _ in range(12):
        est = LocalSuppressor(k=2, method="optimal").fit(frame)
        assert est.n_suppressed_ == 4
        assert est.optimal_
        seen.add(tuple(map(tuple, est.suppressed_.astype(int).tolist())))
    assert len(seen) > 1


def test_wildcard_floor_is_below_the_brute_force_minimum() -> None:
    # wildcard reading: brute force over every set of hidden cells of 5 rows x 2 keys
    rng = np.random.default_rng(3)
    for _ in range(15):
        codes = rng.integers(0, 3, size=(5, 2)).astype(np.int32)
        for k in (2, 3):
            best = None
            cells = [(i, j) for i in range(5) for j in range(2)]
            for size in range(len(cells) + 1):
                for hide in itertools.combinations(cells, size):
                    c = codes.copy()
                    for i, j in hide:
                        c[i, j] = -1
                    if wildcard_group_sizes(pl.DataFrame(c.astype(float), schema=["a", "b"]).with_columns(
                        pl.all().replace(-1.0, None)
                    )).min() >= k:
                        best = size
                        break
                if best is not None:
                    break
            sizes = wildcard_group_sizes(pl.DataFrame(codes, schema=["a", "b"]))
            assert best is not None
            assert wildcard_floor(np.asarray(sizes), k) <= best


def test_sdcmicro_method_reports_a_certificate() -> None:
    frame = pl.DataFrame({"sex": ["f", "f", "m", "m", "m"], "age": [30, 30, 30, 40, 40]})
    est = LocalSuppressor(k=2, method="sdcmicro").fit(frame)
    assert est.certificate_ == {"cells": 1, "lower_bound": 1, "gap": 0.0, "bound_method": "wildcard-floor"}


def test_decoys_certificate_on_the_kernel() -> None:
    codes = np.asarray(_table(3), dtype=np.int32)
    got = decoy_suppress(codes, 3, np.ones(3), np.random.default_rng(0))
    origins, _, counts = distinct_rows(codes)
    cert = certify(origins, counts, 3, int(got.suppressed.sum()))
    assert cert.lower_bound <= BRUTE_MIN[3, 3] <= cert.cells
    assert 0 <= cert.gap < 1


def _attack(release_rows: list[Row], person_true: Row, favourite: dict[Row, float]) -> int:
    """The attacker's pick for a person: among the released patterns consistent with the person's
    true row, the one the person most often gets in the attacker's own runs of the (public,
    optimal) algorithm on the (public) original table; then a row of that pattern. Identical rows
    are indistinguishable, so the attacker takes the first."""
    options = [t for t in set(release_rows) if all(a < 0 or a == b for a, b in zip(t, person_true, strict=True))]
    best = max(options, key=lambda t: favourite.get(t, 0.0))
    return release_rows.index(best)


def test_minimality_attack_gains_nothing_beyond_one_in_k() -> None:
    """The attacker knows the original table, who is who, and that the release is an optimum of
    the exact mode: it runs the algorithm itself (fresh entropy) to learn where each person tends to
    go, then names a released row for each person. Rows shuffled as the pipeline shuffles them, the
    rows of a group identical: success at most 1/k (+ 4 standard errors). Without the shuffle the
    same attacker links by position every time: the test can fail."""
    rows = _table(3)  # 8 rows, missing cells
    k = 2
    frame = _frame(rows)
    runs = 120

    def release() -> list[Row]:
        est = LocalSuppressor(k=k, method="optimal").fit(frame)
        out = est.transform(frame)
        return [tuple(-1 if v is None else int(v[1:]) for v in r) for r in out.iter_rows()]

    favourite: list[dict[Row, float]] = [{} for _ in rows]
    for _ in range(40):  # the attacker's own runs: where each person goes
        for i, t in enumerate(release()):
            favourite[i][t] = favourite[i].get(t, 0.0) + 1.0
    shuffled_hits = np.zeros(len(rows))
    position_hits = np.zeros(len(rows))
    rng = np.random.default_rng()
    for _ in range(runs):
        released = release()
        order = rng.permutation(len(rows))  # the pipeline's shuffle of the released rows
        shown = [released[j] for j in order]
        for i, true in enumerate(rows):
            shuffled_hits[i] += order[_attack(shown, true, favourite[i])] == i
            position_hits[i] += order[i] == i  # a second attacker: the row at the person's input position
    bound = 1 / k + 4 * np.sqrt((1 / k) * (1 - 1 / k) / runs)
    assert (shuffled_hits / runs).max() <= bound
    assert (position_hits / runs).max() <= bound
    # the same measure on the release in input order: the position attacker is right every time
    unshuffled = release()
    assert all(unshuffled[i] == tuple(-1 if m else v for v, m in zip(rows[i], (
        np.asarray(unshuffled[i]) < 0), strict=True)) for i in range(len(rows)))


def test_a_lazy_frame_gets_the_same_certificate() -> None:
    rng = np.random.default_rng(1)
    df = pl.DataFrame({"a": rng.integers(0, 4, 300).astype(str), "b": rng.integers(0, 5, 300).astype(str),
                       "c": rng.integers(0, 3, 300)})
    eager = LocalSuppressor(k=3, random_state=1).fit(df)
    lazy = LocalSuppressor(k=3, random_state=1).fit(df.lazy())
    assert lazy.certificate_ == eager.certificate_
    assert lazy.certificate_["lower_bound"] <= lazy.certificate_["cells"] == lazy.n_suppressed_


def test_the_truncated_floor_many_keys_is_still_below(monkeypatch: pytest.MonkeyPatch) -> None:
    import sdckit.anonymize._certificate as certificate

    for limit in (0, 1, 3, 4):
        monkeypatch.setattr(certificate, "MAX_FLOOR_SETS", limit)
        for (seed, k), truth in BRUTE_MIN.items():
            origins, _, counts = distinct_rows(np.asarray(_table(seed), dtype=np.int32))
            assert int(certificate.row_floor(origins, counts, k) @ counts) <= truth
