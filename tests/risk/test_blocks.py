"""Bounds from blocks (pair and triple tables): never below the truth, never above the single-column
bound, exact over partitions against an enumeration, sound with redacted cells."""

from __future__ import annotations

import itertools
import math
import warnings
from collections import Counter

import numpy as np
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sdckit.errors import ColumnNotFoundError, InputError, SdcWarning
from sdckit.risk import REDACTED, Marginals, exposure_curve, joint_exposure_bound

from .conftest import brute_exposure, table


def set_partitions(items: list[int]) -> list[list[tuple[int, ...]]]:
    """Every partition of ``items`` into parts (plain recursion)."""
    if not items:
        return [[]]
    first, rest = items[0], items[1:]
    out = []
    for part in set_partitions(rest):
        out.append([(first,), *part])
        for i, p in enumerate(part):
            out.append([*part[:i], tuple(sorted((first, *p))), *part[i + 1 :]])
    return out


def block_choices(
    rows: list[tuple[int, ...]], cols: tuple[int, ...], redact: dict[int, set[int]], supports: dict[int, int]
) -> list[tuple[int, int]]:
    """(users sacrificed, kept-cell bound) pairs of one part, by enumerating every sacrificed set
    of its cells (independently of sdckit: a redacted cell is sacrificed whole, or kept as at most
    min(users, product of supports) cells)."""
    cells = Counter(tuple(r[c] for c in cols) for r in rows)
    if len(cols) == 1:
        known, red = dict(cells), {}
    else:
        agg: Counter[tuple[object, ...]] = Counter()
        for cell, x in cells.items():
            agg[tuple("R" if v in redact.get(c, set()) else v for c, v in zip(cols, cell, strict=True))] += x
        known = {c: x for c, x in agg.items() if "R" not in c}
        red = {c: x for c, x in agg.items() if "R" in c}
    red_users = sum(red.values())
    red_cells = sum(
        min(x, math.prod(supports[c] for c, v in zip(cols, cell, strict=True) if v == "R"))
        for cell, x in red.items()
    )
    out = []
    items = list(known.values())
    for size in range(len(items) + 1):
        for sac in itertools.combinations(range(len(items)), size):
            s = sum(items[i] for i in sac)
            out.append((s + red_users, len(items) - size))
            if red:
                out.append((s, len(items) - size + red_cells))
    return [o for o in out if o[1] >= 1 or o[0] == len(rows)]


def brute_block_bound(
    rows: list[tuple[int, ...]],
    width: int,
    blocks: list[tuple[int, ...]],
    thr: int,
    redact: dict[int, set[int]],
) -> float:
    """min over partitions of J into singles and known blocks, over sacrificed cells, by enumeration."""
    n = len(rows)
    supports = {c: len({r[c] for r in rows}) for c in range(width)}
    allowed = {(c,) for c in range(width)} | {tuple(sorted(b)) for b in blocks}
    best = 1.0
    whole = tuple(range(width))
    if whole in allowed and width > 1:  # the block is J itself: its cells are J's groups
        choices_red = Counter(
            tuple("R" if v in redact.get(c, set()) else v for c, v in enumerate(r)) for r in rows
        )
        exposed = 0
        for cell, x in choices_red.items():
            if "R" in cell:
                most = min(x, math.prod(supports[c] for c, v in enumerate(cell) if v == "R"))
                exposed += min(x, thr * most)
            elif x <= thr:
                exposed += x
        best = exposed / n
    best = min(best, brute_star(rows, width, allowed, thr, redact, supports))
    for part in set_partitions(list(range(width))):
        if not all(p in allowed for p in part):
            continue
        choices = [block_choices(rows, p, redact, supports) for p in part]
        for combo in itertools.product(*choices):
            s = sum(c[0] for c in combo)
            w = math.prod(c[1] for c in combo)
            best = min(best, s / n + thr / n * w)
    return best


def brute_star(
    rows: list[tuple[int, ...]],
    width: int,
    allowed: set[tuple[int, ...]],
    thr: int,
    redact: dict[int, set[int]],
    supports: dict[int, int],
) -> float:
    """Theorem 2 inside each value u of a root column r with every pair (r, j) known: per u, the
    rarest-first sacrifices of row u of each redacted pair table (hidden users: sacrificed, or kept
    as at most min(hidden, m_j) cells), capped at u's users; summed over u, min over roots."""
    n = len(rows)
    best = math.inf
    for r in range(width):
        others = [j for j in range(width) if j != r]
        if len(others) == 0 or any(tuple(sorted((r, j))) not in allowed for j in others):
            continue
        total = 0
        for u, n_u in Counter(row[r] for row in rows).items():
            if n_u <= thr:
                total += n_u
                continue
            per_j = []
            for j in others:
                sub = [row for row in rows if row[r] == u]
                if u in redact.get(r, set()):
                    known = []  # u itself is redacted in every pair with r
                else:
                    known = sorted(
                        Counter(row[j] for row in sub if row[j] not in redact.get(j, set())).values()
                    )
                hidden = n_u - sum(known)
                ch = [(hidden + sum(known[:q]), len(known) - q) for q in range(len(known) + 1)]
                if hidden:
                    ch += [
                        (sum(known[:q]), len(known) - q + min(hidden, supports[j]))
                        for q in range(len(known) + 1)
                    ]
                per_j.append(ch)
            u_best = n_u
            for combo in itertools.product(*per_j):
                u_best = min(u_best, sum(c[0] for c in combo) + thr * math.prod(c[1] for c in combo))
            total += u_best
        best = min(best, total / n)
    return best


rows_strategy = st.integers(2, 4).flatmap(
    lambda w: st.tuples(st.just(w), st.lists(st.tuples(*[st.integers(0, 3)] * w), min_size=1, max_size=30))
)


def _marginals(
    df: pl.DataFrame, blocks: list[tuple[str, ...]], redact: dict[str, set[int]] | None = None
) -> Marginals:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SdcWarning)
        return Marginals.from_data(df, list(df.columns), blocks=blocks, redact=redact)


@settings(max_examples=60, deadline=None)
@given(rows_strategy, st.integers(1, 12), st.data())
def test_block_bound_sound_and_exact_over_partitions(
    wr: tuple[int, list[tuple[int, ...]]], k: int, data: st.DataObject
) -> None:
    width, rows = wr
    pairs = list(itertools.combinations(range(width), 2))
    chosen = data.draw(st.lists(st.sampled_from(pairs), unique=True, max_size=len(pairs)))
    if width >= 3 and data.draw(st.booleans()):
        chosen.append(tuple(sorted(data.draw(st.sets(st.integers(0, width - 1), min_size=3, max_size=3)))))
    rare_at = data.draw(st.integers(1, 4))  # redact values held by fewer than rare_at users
    redact: dict[int, set[int]] = {}
    for c in range(width):
        cnt = Counter(r[c] for r in rows)
        redact[c] = {v for v, x in cnt.items() if x < rare_at}
    df = table(rows, width)
    names = list(df.columns)
    blocks = [tuple(names[i] for i in b) for b in chosen]
    m = _marginals(df, blocks, {names[c]: v for c, v in redact.items() if v})
    truth = brute_exposure(rows, k - 1)
    single = joint_exposure_bound(m.singles(), k=k)
    got = joint_exposure_bound(m, k=k)
    assert got >= truth - 1e-15  # never below the true exposure
    assert got <= single + 1e-15  # never above the single-column bound on the same columns
    want = brute_block_bound(rows, width, chosen, k - 1, redact)
    assert got == pytest.approx(min(want, single), rel=1e-9, abs=1e-12)
    assert joint_exposure_bound(m, k=k, method="lower") <= truth + 1e-15


def test_adversarial_table_pair_is_exact() -> None:
    # anonymity notes §1, the (n+1) x 2 example: n/2 rows (0, 1), one (0, 0), n/2 rows (1, 0).
    # Singles say 4/(n+1) at k = 2; the pair table knows the lone (0, 0) row: the bound is 1/(n+1).
    half = 50
    rows = [(0, 1)] * half + [(0, 0)] + [(1, 0)] * half
    df = table(rows, 2)
    m = _marginals(df, [("c0", "c1")])
    n = 2 * half + 1
    assert joint_exposure_bound(m.singles(), k=2) == pytest.approx(4 / n, rel=1e-9)
    assert joint_exposure_bound(m, k=2) == pytest.approx(1 / n, rel=1e-9)
    assert joint_exposure_bound(m, k=2) >= brute_exposure(rows, 1)
    # the lone row's value is rare at k = 2 in neither column (51 and 50 users): nothing redacted.
    # Redact the pair cell's value 0 of c1 anyway: its 51 users are an aggregate (REDACTED, ...)
    red = _marginals(df, [("c0", "c1")], {"c1": {0}})
    b = joint_exposure_bound(red, k=2)
    assert brute_exposure(rows, 1) <= b <= joint_exposure_bound(m.singles(), k=2) + 1e-15


def test_redacted_table_from_counts() -> None:
    # 3 users hold a = 'x' (rare at k = 5); their cells are withheld as (REDACTED, b)
    singles = {"a": {"x": 3, "y": 40, "z": 57}, "b": {"u": 50, "v": 50}}
    pair = {
        ("y", "u"): 20,
        ("y", "v"): 20,
        ("z", "u"): 28,
        ("z", "v"): 29,
        (REDACTED, "u"): 2,
        (REDACTED, "v"): 1,
    }
    m = Marginals.from_counts(singles, blocks={("a", "b"): pair})
    blk = m.blocks[("a", "b")]
    assert blk.redacted == 3
    assert blk.support == 4
    assert blk.redacted_cells == 3  # min(2, 3 values of a) + min(1, 3)
    # every table consistent with these counts: the 3 'x' users split over (x, u) and (x, v)
    for xu in range(0, 3):
        rows = [("y", "u")] * 20 + [("y", "v")] * 20 + [("z", "u")] * 28 + [("z", "v")] * 29
        rows += [("x", "u")] * xu + [("x", "v")] * (3 - xu)
        if Counter(r[1] for r in rows) != Counter({"u": 50, "v": 50}):
            continue
        for k in (2, 3, 5, 21, 30):
            assert joint_exposure_bound(m, k=k) >= brute_exposure(rows, k - 1) - 1e-15
    assert joint_exposure_bound(m, k=5) <= joint_exposure_bound(m.singles(), k=5)


def test_curve_equals_scalars_and_select_keeps_blocks() -> None:
    rng = np.random.default_rng(3)
    df = pl.DataFrame({c: rng.integers(0, 6, 400) for c in ("a", "b", "c", "d")})
    m = _marginals(df, [("a", "b"), ("b", "c"), ("c", "d")])
    ks = np.array([2, 3, 5, 9, 20])
    vec = joint_exposure_bound(m, k=ks)
    assert vec.tolist() == pytest.approx([joint_exposure_bound(m, k=int(k)) for k in ks], rel=1e-12)
    sub = m.select(["a", "b", "d"])
    assert set(sub.blocks) == {("a", "b")}
    assert joint_exposure_bound(m, k=5, columns=["a", "b", "d"]) == joint_exposure_bound(sub, k=5)
    truth = exposure_curve(df, ["a", "b", "d"]).not_k_anonymous(5)
    assert truth <= joint_exposure_bound(sub, k=5) <= joint_exposure_bound(sub.singles(), k=5)


def test_greedy_cover_beyond_exact_limit_is_sound() -> None:
    # 18 columns (> 16): the greedy cover is used; it must still bound the truth, and not exceed singles
    rng = np.random.default_rng(7)
    base = rng.integers(0, 3, 600)
    df = pl.DataFrame(
        {f"c{j}": (base + (rng.random(600) < 0.1) * rng.integers(0, 3, 600)) % 3 for j in range(18)}
    )
    pairs = [(f"c{2 * i}", f"c{2 * i + 1}") for i in range(9)]
    m = _marginals(df, pairs)
    for k in (2, 5, 30):
        truth = exposure_curve(df, list(df.columns)).not_k_anonymous(k)
        got = joint_exposure_bound(m, k=k)
        assert truth <= got <= joint_exposure_bound(m.singles(), k=k) + 1e-15


def test_block_errors() -> None:
    singles = {"a": {"x": 3, "y": 2}, "b": {"u": 4, "v": 1}}
    with pytest.raises(InputError, match=r"block \(a, b\) counts 4 users but the single columns count 5"):
        Marginals.from_counts(singles, blocks={("a", "b"): {("x", "u"): 4}})
    with pytest.raises(InputError, match="value 'x' of column 'a' has 4 users in the block but 3"):
        Marginals.from_counts(singles, blocks={("a", "b"): {("x", "u"): 4, ("y", "v"): 1}})
    with pytest.raises(InputError, match="has 1 values"):
        Marginals.from_counts(singles, blocks={("a", "b"): {("x",): 5}})
    with pytest.raises(ColumnNotFoundError):
        Marginals.from_counts(singles, blocks={("a", "c"): {("x", "u"): 5}})
    with pytest.raises(InputError, match="2 or more distinct columns"):
        Marginals.from_counts(singles, blocks={("a", "a"): {("x", "x"): 5}})
