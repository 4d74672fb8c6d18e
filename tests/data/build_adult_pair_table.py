"""Build an integer table with Adult's single and pair tables on its 8 quasi-identifiers and small groups.

Run: ``python tests/data/build_adult_pair_table.py [target [path [start]]]`` (writes
tests/data/adult_pairs_table.csv.gz unless given a path; from Adult, or from the table at
``start``; on a busy 2-core machine about 20 minutes to a largest group of 13, then slower). Used by tests/risk/test_queries.py to prove that no sound
bound computed from the 28 pair tables beats 1 from k = (largest group + 1).

Local search by degree-4 moves that keep every pair table [derived]. Split the columns into three
disjoint non-empty groups A, B, C and the rest R; fix R's values, and two value tuples on each group
(a0/a1, b0/b1, c0/c1, differing in every column of the group). The row sets
{a0b0c0, a0b1c1, a1b0c1, a1b1c0} and {a0b0c1, a0b1c0, a1b0c0, a1b1c1} hold every pair of values of
any two columns equally often (two columns in one group, or one in R, see only the group's 0/1
label or a constant; two columns in different groups see each of the four label pairs once), so
replacing one copy of each row of the first set by one of each row of the second keeps n, the
singles and all 28 pair tables. The largest group g = a0b0c0 is moved while the three rows that
differ from it on A u B, A u C and B u C exist, taking the move that lowers
sum_r count_r^2 + W sum_r max(0, count_r - target)^2 most.
"""

from __future__ import annotations

import csv
import gzip
import sys
from pathlib import Path

import numpy as np

QIS = ["age", "workclass", "education", "marital-status", "occupation", "race", "sex", "native-country"]
OUT = Path(__file__).with_name("adult_pairs_table.csv.gz")


W = 1000.0


def _cost(c: int, target: int) -> float:
    return c * c + W * max(0, c - target) ** 2


class Table:
    """Distinct rows (int codes) with their counts; rows are appended, never removed (count 0 kept)."""

    def __init__(self, rows: np.ndarray, counts: np.ndarray, target: int) -> None:
        self.rows = [tuple(int(v) for v in r) for r in rows]
        self.index = {r: i for i, r in enumerate(self.rows)}
        self.arr = np.asarray(rows, dtype=np.int64)
        self.count = np.asarray(counts, dtype=np.int64).copy()
        self.p = self.arr.shape[1]
        self.target = target
        self.bits = 1 << np.arange(self.p)

    def get(self, row: tuple[int, ...]) -> int:
        i = self.index.get(row)
        return 0 if i is None else int(self.count[i])

    def add(self, row: tuple[int, ...], c: int) -> None:
        i = self.index.get(row)
        if i is None:
            i = len(self.rows)
            self.rows.append(row)
            self.index[row] = i
            self.arr = np.vstack([self.arr, np.asarray(row, dtype=np.int64)[None, :]])
            self.count = np.r_[self.count, 0]
        self.count[i] += c
        if self.count[i] < 0:
            raise ValueError("negative count")

    def best_move(self, g: tuple[int, ...]) -> tuple[float, list[tuple[int, ...]], list[tuple[int, ...]]] | None:
        """The move lowering the cost most, searching small column groups first; the first move whose
        new rows all stay within the target is taken at once."""
        live = np.flatnonzero(self.count > 0)
        masks = ((self.arr[live] != np.asarray(g)) * self.bits).sum(axis=1)
        by_mask: dict[int, list[tuple[int, ...]]] = {}
        for m, i in zip(masks.tolist(), live.tolist(), strict=True):
            if m:
                by_mask.setdefault(m, []).append(self.rows[i])
        present = sorted(by_mask, key=lambda m: (bin(m).count("1"), m))
        best: tuple[float, list[tuple[int, ...]], list[tuple[int, ...]]] | None = None
        t = self.target
        cols = [[j for j in range(self.p) if m >> j & 1] for m in range(1 << self.p)]
        seen: set[tuple[int, int, int]] = set()
        for m_ab in present:
            for m_ac in present:
                a = m_ab & m_ac
                if not a or a in (m_ab, m_ac):
                    continue
                b, c = m_ab & ~a, m_ac & ~a
                if (a, min(b, c), max(b, c)) in seen or (b | c) not in by_mask:
                    continue
                seen.add((a, min(b, c), max(b, c)))
                ca, cb, cc = cols[a], cols[b], cols[c]
                ab: dict[tuple[int, ...], list[tuple[int, ...]]] = {}
                for r in by_mask[m_ab]:
                    ab.setdefault(tuple(r[j] for j in ca), []).append(tuple(r[j] for j in cb))
                ac: dict[tuple[int, ...], list[tuple[int, ...]]] = {}
                for r in by_mask[m_ac]:
                    ac.setdefault(tuple(r[j] for j in ca), []).append(tuple(r[j] for j in cc))
                bc = {(tuple(r[j] for j in cb), tuple(r[j] for j in cc)) for r in by_mask[b | c]}
                for va, vbs in ab.items():
                    for vc in ac.get(va, ()):
                        for vb in vbs:
                            if (vb, vc) not in bc:
                                continue
                            parts = {"a": (ca, va), "b": (cb, vb), "c": (cc, vc)}

                            def put(*names: str, parts: dict[str, tuple[list[int], tuple[int, ...]]] = parts) -> tuple[int, ...]:
                                r = list(g)
                                for name in names:
                                    for j, v in zip(*parts[name], strict=True):
                                        r[j] = v
                                return tuple(r)

                            gone = [g, put("a", "b"), put("a", "c"), put("b", "c")]
                            come = [put("a"), put("b"), put("c"), put("a", "b", "c")]
                            now = [self.get(r) for r in come]
                            delta = sum(_cost(n + 1, t) - _cost(n, t) for n in now)
                            delta += sum(_cost(self.get(r) - 1, t) - _cost(self.get(r), t) for r in gone)
                            if best is None or delta < best[0]:
                                best = (delta, gone, come)
                            if max(now) < t and delta < 0:
                                return best
        return best


def build(target: int, checkpoint: Path | None = None, start: Path | None = None) -> dict[tuple[str, ...], int]:
    """The table from Adult (or from the table at ``start``) by moves until no group exceeds
    ``target`` or no move helps; with ``checkpoint``, the table so far is written there every 100 moves."""
    import polars as pl

    from sdckit.datasets import load_adult

    adult = load_adult().select(QIS).with_columns(pl.all().cast(pl.String))
    values = {c: sorted(adult[c].unique().to_list()) for c in QIS}

    def decode(t: Table) -> dict[tuple[str, ...], int]:
        return {tuple(values[QIS[j]][v] for j, v in enumerate(row)): int(n)
                for row, n in zip(t.rows, t.count.tolist(), strict=True) if n > 0}

    def encode(frame: pl.DataFrame) -> pl.DataFrame:
        return frame.with_columns(
            [pl.col(c).replace_strict(values[c], list(range(len(values[c])))).alias(c) for c in QIS]
        )

    if start is None:
        grouped = encode(adult).group_by(QIS).len()
    else:  # the moves keep every single table, so the values are Adult's
        grouped = encode(pl.read_csv(start, schema_overrides={c: pl.String for c in QIS})).rename({"count": "len"})
    table = Table(grouped.select(QIS).to_numpy(), grouped["len"].to_numpy(), target)
    moves = 0
    skip: set[int] = set()
    while True:
        order = np.argsort(-table.count, kind="stable")
        big = [int(i) for i in order if table.count[i] > target and int(i) not in skip]
        if not big:
            break
        i = big[0]
        g = table.rows[i]
        move = table.best_move(g)
        if move is None or move[0] >= 0:
            skip.add(i)
            continue
        _, gone, come = move
        for r in gone:
            table.add(r, -1)
        for r in come:
            table.add(r, +1)
        skip.clear()
        moves += 1
        if moves % 100 == 0:
            print(f"{moves} moves, largest group {int(table.count.max())}", file=sys.stderr, flush=True)
            if checkpoint is not None:
                write(decode(table), checkpoint)
    print(f"done: {moves} moves, largest group {int(table.count.max())}", file=sys.stderr)
    return decode(table)


def write(table: dict[tuple[str, ...], int], path: Path = OUT) -> None:
    with gzip.open(path, "wt", newline="", compresslevel=9) as fh:
        w = csv.writer(fh)
        w.writerow([*QIS, "count"])
        for row in sorted(table):
            w.writerow([*row, table[row]])


if __name__ == "__main__":
    out = Path(sys.argv[2]) if len(sys.argv) > 2 else OUT
    start = Path(sys.argv[3]) if len(sys.argv) > 3 else None
    write(build(int(sys.argv[1]) if len(sys.argv) > 1 else 12, checkpoint=out, start=start), out)
