"""The attacks an outsider runs on a release: singling out, linkability, attribute inference.

Each attack reads *every* released column and is measured against a held-out control, as in
anonymeter (Giomi et al. 2023, "A Unified Framework for Quantifying Privacy Risk in Synthetic
Data", PoPETs 2023(2)), whose risk and interval are the reference design:

* the *targets* are original records whose released rows the attacker holds; the *control* is
  original records whose released rows are taken out of the attacked table (a held-out split of
  the original, :func:`release_attacks`): what the attack achieves on them it achieves from the
  population alone, not from these persons being in the file;
* with ``n`` attacks, ``s`` successes on the targets and ``c`` on the control, each rate is the
  Wilson score estimate ``p = (s + z^2/2) / (n + z^2)`` with error
  ``z / (n + z^2) sqrt(s (n - s) / n + z^2 / 4)`` [Wilson 1927], and the risk is

      risk = (p_attack - p_control) / (1 - p_control),

  its error propagated to first order, the interval clipped to [0, 1].

What differs from anonymeter, on purpose (an SDC release is one masked row per person, not a
synthetic sample):

* **Singling out counts duplicate released rows.** A query built from a released row singles
  out a person only if it matches exactly one target record *and* exactly one released row
  (a released row whose cell in a query column is missing is consistent with the query and
  counts). anonymeter deduplicates the released rows first, so a query matching a group of k
  identical released rows (MDAV, k-anonymity) counts as isolating; that figure is given beside
  the duplicate-aware one (``dedup_only``: queries isolating one *distinct* row but matching
  several rows), never instead of it.
* **Ties are split at random.** Nearest released rows are found on every column standardised by
  the targets' sd (numeric: squared difference; category: 1 when different; a missing released
  cell: 0, consistent with anything); when several rows tie at the smallest distance (identical
  released rows), the attacker picks one at random and the expected success is counted
  (a fraction), so a group of k identical rows gives 1/k, not 1.
* Numeric columns masked by microaggregation or noise are attacked by this distance linkage:
  the nearest released row in standardised space.

Pure logic, no I/O; the random choices (control split, targets, queries, column sets) come from a
numpy ``Generator`` (OS entropy unless seeded).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
import polars as pl
from numpy.typing import NDArray

from sdckit.errors import InputError

__all__ = [
    "ATTACKS",
    "ATTACK_WARN_RISK",
    "AttackResult",
    "AttackSettings",
    "attack_risk",
    "held_out_attacks",
    "inference_attack",
    "judge_attacks",
    "linkability_attack",
    "release_attacks",
    "singling_out_attack",
    "wilson_rate",
]

ATTACKS: tuple[str, ...] = ("singling_out", "linkability", "inference")
"""The three attacks, by the names a budget uses."""

ATTACK_WARN_RISK = 0.05
"""Without a budget, an attack whose risk is above this, with an interval that excludes 0 (the attack does
better than the control beyond chance), makes the verdict a warning."""

NUMERIC_TOLERANCE = 0.05
"""An inferred number is right when within 5 % of the guess (anonymeter's tolerance)."""

_TIE = 1e-9
_BLOCK = 8  # targets per block of the distance computation: p x 8 x m floats at a time


def _z(confidence: float) -> float:
    from scipy.stats import norm  # lazy: start-up time

    return float(norm.ppf(0.5 * (1.0 + confidence)))


def wilson_rate(n: int, successes: float, confidence: float = 0.95) -> tuple[float, float]:
    """Wilson score estimate of a success rate and its error: ``(s + z^2/2)/(n + z^2)``,
    ``z/(n + z^2) sqrt(s(n - s)/n + z^2/4)`` [Wilson 1927; anonymeter's ``success_rate``]."""
    if n <= 0:
        return 0.0, 1.0
    z = _z(confidence)
    z2 = z * z
    s = float(successes)
    rate = (s + 0.5 * z2) / (n + z2)
    error = z / (n + z2) * math.sqrt(max(s * (n - s) / n, 0.0) + 0.25 * z2)
    return rate, error


def attack_risk(
    n_attacks: int, n_success: float, n_control: int, n_control_success: float, confidence: float = 0.95
) -> tuple[float, float, float]:
    """``(risk, low, high)``: ``(p_a - p_c)/(1 - p_c)`` of the two Wilson rates, with the first-order
    propagated error ``sqrt((e_a/(1 - p_c))^2 + (e_c (p_a - 1)/(1 - p_c)^2)^2)``, clipped to [0, 1]."""
    pa, ea = wilson_rate(n_attacks, n_success, confidence)
    pc, ec = wilson_rate(n_control, n_control_success, confidence)
    risk = (pa - pc) / (1.0 - pc)
    error = math.sqrt((ea / (1.0 - pc)) ** 2 + (ec * (pa - 1.0) / (1.0 - pc) ** 2) ** 2)

    def clip(v: float) -> float:
        return min(max(v, 0.0), 1.0)

    return clip(risk), clip(risk - error), clip(risk + error)


@dataclass(frozen=True)
class AttackResult:
    """One attack on a release: successes on the targets and on the control, and the risk."""

    attack: str
    """``singling_out``, ``linkability`` or ``inference``."""
    n_attacks: int
    """Attacks on the targets (singling out: queries asked for; one that could not be built fails)."""
    n_success: float
    """Successful attacks on the targets (expected successes under random tie-breaks)."""
    n_control_attacks: int
    """Attacks on the control records."""
    n_control_success: float
    """Successful attacks on the control."""
    attack_rate: float
    control_rate: float
    risk: float
    """``(attack_rate - control_rate) / (1 - control_rate)``, clipped to [0, 1]."""
    risk_low: float
    risk_high: float
    confidence: float
    detail: dict[str, Any] = field(default_factory=dict)
    """What the attack used (columns, queries found, per-column figures)."""

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-ready dict."""
        return asdict(self)


def _result(attack: str, n: int, s: float, nc: int, c: float, confidence: float, **detail: Any) -> AttackResult:
    risk, low, high = attack_risk(n, s, nc, c, confidence)
    return AttackResult(
        attack=attack, n_attacks=n, n_success=float(s), n_control_attacks=nc, n_control_success=float(c),
        attack_rate=float(s) / n if n else 0.0, control_rate=float(c) / nc if nc else 0.0,
        risk=risk, risk_low=low, risk_high=high, confidence=confidence, detail=detail,
    )


# --- encoding: the three tables on one coding ----------------------------------------------------


@dataclass(frozen=True)
class _Encoded:
    """Targets, release and control column by column: numeric as float (NaN missing), else integer
    codes shared by the three tables (-1 missing)."""

    columns: tuple[str, ...]
    numeric: tuple[bool, ...]
    targets: list[NDArray[Any]]
    release: list[NDArray[Any]]
    control: list[NDArray[Any]]
    scale: NDArray[np.float64]
    """Per numeric column the targets' sd (1 when 0); 1 for a category."""


def _encode(targets: pl.DataFrame, release: pl.DataFrame, control: pl.DataFrame, columns: Sequence[str]) -> _Encoded:
    t_cols: list[NDArray[Any]] = []
    r_cols: list[NDArray[Any]] = []
    c_cols: list[NDArray[Any]] = []
    numeric: list[bool] = []
    scale: list[float] = []
    for c in columns:
        dtypes = (targets.schema[c], release.schema[c], control.schema[c])
        if all(d.is_numeric() and d != pl.Boolean for d in dtypes):
            parts = [f[c].cast(pl.Float64).fill_nan(None).to_numpy().astype(np.float64) for f in (targets, release, control)]
            sd = float(np.nanstd(parts[0], ddof=1)) if np.isfinite(parts[0]).sum() > 1 else 0.0
            numeric.append(True)
            scale.append(sd if sd > 0 and math.isfinite(sd) else 1.0)
        else:
            text = pl.concat([f[c].cast(pl.String) for f in (targets, release, control)])
            codes = text.cast(pl.Categorical).to_physical().cast(pl.Int64).fill_null(-1).to_numpy()
            a, b = targets.height, targets.height + release.height
            parts = [codes[:a], codes[a:b], codes[b:]]
            numeric.append(False)
            scale.append(1.0)
        t_cols.append(parts[0])
        r_cols.append(parts[1])
        c_cols.append(parts[2])
    return _Encoded(tuple(columns), tuple(numeric), t_cols, r_cols, c_cols, np.asarray(scale))


def _distances(enc: _Encoded, side: list[NDArray[Any]], rows: NDArray[np.int64]) -> NDArray[np.float64]:
    """Per column, the distance of each of ``rows`` (of ``side``) to every released row: (p, len(rows), m)."""
    m = enc.release[0].shape[0]
    out = np.empty((len(enc.columns), rows.size, m))
    for j, (num, s) in enumerate(zip(enc.numeric, enc.scale, strict=True)):
        a = side[j][rows][:, None]
        b = enc.release[j][None, :]
        if num:
            d = ((a - b) / s) ** 2
            out[j] = np.where(np.isnan(d), 0.0, d)  # a missing cell on either side: consistent with anything
        else:
            out[j] = ((a != b) & (b >= 0) & (a >= 0)).astype(np.float64)
    return out


def _nearest(d: NDArray[np.float64]) -> NDArray[np.bool_]:
    """Per row of ``d`` the released rows at the smallest distance (ties within a relative 1e-9)."""
    low = d.min(axis=1, keepdims=True)
    return d <= low + _TIE * (1.0 + np.abs(low))


# --- singling out ---------------------------------------------------------------------------------


def _predicate(col: NDArray[Any], numeric: bool, value: Any, ge: bool, *, released: bool) -> NDArray[np.bool_]:
    if numeric:
        hit = col >= value if ge else col <= value
        return hit | np.isnan(col) if released else hit
    hit = col == value
    return hit | (col < 0) if released else hit


def _query_counts(
    enc: _Encoded, side: list[NDArray[Any]], query: list[tuple[int, Any, bool]], *, released: bool
) -> int:
    hit = np.ones(side[0].shape[0], dtype=bool)
    for j, value, ge in query:
        hit &= _predicate(side[j], enc.numeric[j], value, ge, released=released)
    return int(hit.sum())


SUBSAMPLE_MIN_ROWS = 4000
"""From this many released rows on, a candidate query is first matched on an eighth of them."""

DEDUP_CHECK_MAX = 200
"""A candidate query matching 2..200 released rows is checked for being one distinct row repeated."""


def _one_distinct(enc: _Encoded, rows: NDArray[np.int64]) -> bool:
    """Whether the released ``rows`` are all the same row (missing cells equal to missing cells)."""
    return _one_distinct_in(enc.release, enc.numeric, rows)


def _one_distinct_in(columns: list[NDArray[Any]], numeric: Sequence[bool], rows: NDArray[np.int64]) -> bool:
    for col, num in zip(columns, numeric, strict=True):
        v = col[rows]
        if num:
            if not (np.all(v == v[0]) or np.all(np.isnan(v))):
                return False
        elif not np.all(v == v[0]):
            return False
    return True


def singling_out_attack(
    targets: pl.DataFrame,
    release: pl.DataFrame,
    control: pl.DataFrame,
    *,
    columns: Sequence[str] | None = None,
    n_attacks: int = 300,
    n_cols: int = 3,
    max_attempts: int = 20_000,
    rng: np.random.Generator | None = None,
    confidence: float = 0.95,
    deduplicate: bool = False,
) -> AttackResult:
    """Multivariate singling out: queries built from released rows, checked against the targets.

    A query takes a random released row and ``n_cols`` of its present cells at random: a category
    ``== value``, a number ``>= value`` above the released column's median and ``<= value`` at or
    below it (anonymeter's multivariate queries). It is kept when it matches exactly one released
    row, a missing released cell counting as a match (``deduplicate=True``: exactly one *distinct*
    released row, anonymeter's reading); at most ``max_attempts`` candidates are tried for
    ``n_attacks`` queries. A kept query succeeds when it matches exactly one target record.

    Control: the same queries on the control records. When the control has as many records as the
    targets, a query succeeds on it when it matches exactly one control record; otherwise each
    query's chance of singling out one of ``N`` records drawn like the control, ``N w (1 - w)^(N-1)``
    with ``w`` the share of control records it matches (Cohen & Nissim 2020), is summed; for rare
    queries this plug-in is low, so the control is low and the risk errs high.
    """
    rng = rng if rng is not None else np.random.default_rng()
    cols = list(columns if columns is not None else release.columns)
    enc = _encode(targets, release, control, cols)
    m = release.height
    medians = [float(np.nanmedian(c)) if num and np.isfinite(c).any() else 0.0
               for c, num in zip(enc.release, enc.numeric, strict=True)]
    queries: list[list[tuple[int, Any, bool]]] = []
    seen: set[tuple[Any, ...]] = set()
    dedup_only = 0
    tried = 0
    p = len(cols)
    present = np.column_stack([~np.isnan(c) if num else c >= 0 for c, num in zip(enc.release, enc.numeric, strict=True)])
    # a sample of the released rows: a candidate matching two different rows there matches them in the
    # whole table too, so it is dropped after a pass over an eighth of the rows (exact, only quicker)
    sub_rng = np.random.default_rng(int(rng.integers(2**62)))  # drawn always: the queries do not depend on it
    sub = np.sort(sub_rng.choice(m, size=m // 8, replace=False)) if m >= SUBSAMPLE_MIN_ROWS else None
    sub_cols = [c[sub] for c in enc.release] if sub is not None else []

    def matching(side: list[NDArray[Any]], query: list[tuple[int, Any, bool]]) -> NDArray[np.int64]:
        j0, v0, ge0 = query[0]
        rows = np.flatnonzero(_predicate(side[j0], enc.numeric[j0], v0, ge0, released=True))
        for j, v, ge in query[1:]:  # only the rows still matching: each further predicate costs less
            rows = rows[_predicate(side[j][rows], enc.numeric[j], v, ge, released=True)]
        return rows

    while len(queries) < n_attacks and tried < max_attempts and m:
        batch = min(1024, max_attempts - tried)
        starts = rng.integers(m, size=batch)
        keys = np.where(present[starts], rng.random((batch, p)), 2.0)
        picks = np.sort(np.argsort(keys, axis=1)[:, :n_cols], axis=1)
        counts = np.minimum(present[starts].sum(axis=1), n_cols)
        for r, chosen_all, n_chosen in zip(starts.tolist(), picks, counts.tolist(), strict=True):
            if len(queries) >= n_attacks:
                break
            tried += 1
            if n_chosen == 0:
                continue
            chosen = sorted(int(j) for j in chosen_all if present[r, j])[:n_chosen]
            query = [(j, enc.release[j][r], bool(enc.numeric[j] and enc.release[j][r] > medians[j])) for j in chosen]
            key = tuple((j, float(v), ge) for j, v, ge in query)
            if key in seen:
                continue
            if sub is not None:
                in_sub = matching(sub_cols, query)
                if in_sub.size > 1 and not _one_distinct_in(sub_cols, enc.numeric, in_sub):
                    continue
            rows = matching(enc.release, query)
            hits = int(rows.size)
            if hits == 1:
                seen.add(key)
                queries.append(query)
            elif 1 < hits <= DEDUP_CHECK_MAX and _one_distinct(enc, rows):
                dedup_only += 1  # anonymeter, deduplicating, would count this query as singling out
                if deduplicate:
                    seen.add(key)
                    queries.append(query)
    n_t, n_c = targets.height, control.height
    success = sum(_query_counts(enc, enc.targets, q, released=False) == 1 for q in queries)
    control_hits = np.array([_query_counts(enc, enc.control, q, released=False) for q in queries], dtype=np.float64)
    if n_c == n_t:
        control_success = float(np.sum(control_hits == 1))
    else:
        w = control_hits / max(n_c, 1)
        control_success = float(np.sum(n_t * w * (1.0 - w) ** (n_t - 1)))
    return _result(
        "singling_out", n_attacks, float(success), n_attacks, control_success, confidence,
        queries_found=len(queries), candidates_tried=tried, n_cols=n_cols, deduplicated=deduplicate,
        dedup_only=dedup_only, columns=cols,
    )


# --- linkability and inference (nearest released rows) --------------------------------------------


def _sample(n: int, size: int, rng: np.random.Generator) -> NDArray[np.int64]:
    return np.sort(rng.choice(n, size=min(size, n), replace=False)).astype(np.int64)


def _link_success(enc: _Encoded, side: list[NDArray[Any]], rows: NDArray[np.int64],
                  a: Sequence[int], b: Sequence[int]) -> float:
    total = 0.0
    for start in range(0, rows.size, _BLOCK):
        d = _distances(enc, side, rows[start:start + _BLOCK])
        na = _nearest(d[list(a)].sum(axis=0))
        nb = _nearest(d[list(b)].sum(axis=0))
        both = (na & nb).sum(axis=1)
        total += float(np.sum(both / (na.sum(axis=1) * nb.sum(axis=1))))
    return total


def linkability_attack(
    targets: pl.DataFrame,
    release: pl.DataFrame,
    control: pl.DataFrame,
    *,
    aux_cols: tuple[Sequence[str], Sequence[str]],
    n_attacks: int = 300,
    rng: np.random.Generator | None = None,
    confidence: float = 0.95,
) -> AttackResult:
    """Linkability: two files of the same persons, one with ``aux_cols[0]``, one with ``aux_cols[1]``;
    the attacker links a record of one to a record of the other when both have the same nearest
    released row. Success per target: ``|S_a & S_b| / (|S_a| |S_b|)``, the chance that random picks
    among the tied nearest rows on each side (``S_a``, ``S_b``) are the same row (anonymeter with
    ``n_neighbors=1``, ties split at random). The control: the same on control records."""
    rng = rng if rng is not None else np.random.default_rng()
    a_cols, b_cols = list(aux_cols[0]), list(aux_cols[1])
    if not a_cols or not b_cols:
        raise InputError("linkability_attack: aux_cols needs two non-empty lists of columns.")
    cols = [*a_cols, *[c for c in b_cols if c not in a_cols]]
    enc = _encode(targets, release, control, cols)
    a = [cols.index(c) for c in a_cols]
    b = [cols.index(c) for c in b_cols]
    rows_t = _sample(targets.height, n_attacks, rng)
    rows_c = _sample(control.height, n_attacks, rng)
    s = _link_success(enc, enc.targets, rows_t, a, b)
    c = _link_success(enc, enc.control, rows_c, a, b)
    return _result("linkability", int(rows_t.size), s, int(rows_c.size), c, confidence,
                   aux_cols=[a_cols, b_cols])


def _right(guess: NDArray[Any], truth: Any, numeric: bool) -> NDArray[np.float64]:
    if numeric:
        return (np.abs(guess - truth) <= NUMERIC_TOLERANCE * np.abs(guess) + 1e-12).astype(np.float64)
    return (guess == truth).astype(np.float64)


def _infer_success(enc: _Encoded, side: list[NDArray[Any]], rows: NDArray[np.int64],
                   secrets: Sequence[int]) -> dict[int, tuple[float, int]]:
    got = {j: [0.0, 0] for j in secrets}
    for start in range(0, rows.size, _BLOCK):
        block = rows[start:start + _BLOCK]
        d = _distances(enc, side, block)
        total = d.sum(axis=0)
        for j in secrets:
            near = _nearest(total - d[j])
            released = enc.release[j]
            for i, row in enumerate(block):
                truth = side[j][row]
                if (np.isnan(truth) if enc.numeric[j] else truth < 0):
                    continue  # nothing to infer: the secret is missing
                picks = released[near[i]]
                got[j][0] += float(_right(picks, truth, enc.numeric[j]).mean())
                got[j][1] += 1
    return {j: (v[0], int(v[1])) for j, v in got.items()}


def inference_attack(
    targets: pl.DataFrame,
    release: pl.DataFrame,
    control: pl.DataFrame,
    *,
    secrets: Sequence[str] | None = None,
    columns: Sequence[str] | None = None,
    n_attacks: int = 300,
    rng: np.random.Generator | None = None,
    confidence: float = 0.95,
) -> tuple[AttackResult, dict[str, AttackResult]]:
    """Attribute inference: knowing every other column of a person, the attacker reads the secret off
    the nearest released row (ties: a random one of them, counted in expectation). Right: a category
    equal, a number within 5 % of the guess. Per secret column against the control; the first result
    is the riskiest column (the largest risk), the second every column's."""
    rng = rng if rng is not None else np.random.default_rng()
    cols = list(columns if columns is not None else release.columns)
    secret_cols = [c for c in (secrets if secrets is not None else cols) if c in cols]
    if len(cols) < 2 or not secret_cols:
        raise InputError("inference_attack: needs a secret column and at least one other column.")
    enc = _encode(targets, release, control, cols)
    idx = [cols.index(c) for c in secret_cols]
    rows_t = _sample(targets.height, n_attacks, rng)
    rows_c = _sample(control.height, n_attacks, rng)
    st = _infer_success(enc, enc.targets, rows_t, idx)
    sc = _infer_success(enc, enc.control, rows_c, idx)
    per: dict[str, AttackResult] = {}
    for c, j in zip(secret_cols, idx, strict=True):
        per[c] = _result("inference", st[j][1], st[j][0], sc[j][1], sc[j][0], confidence, secret=c)
    worst = max(per.values(), key=lambda r: (r.risk, r.risk_high))
    return worst, per


# --- the three on a release, against a held-out control split --------------------------------------


def release_attacks(
    original: pl.DataFrame,
    release: pl.DataFrame,
    *,
    quasi_identifiers: Sequence[str] = (),
    secrets: Sequence[str] | None = None,
    n_attacks: int = 300,
    n_control: int = 1000,
    confidence: float = 0.95,
    seed: int | None = None,
) -> dict[str, Any]:
    """Singling out, linkability and inference on ``release`` (row i is the masked record of
    ``original`` row i), every released column available to the attacker.

    A random ``n_control`` records (at most a fifth of the rows) are the control: their released
    rows are taken out of the attacked table, so the attack on them measures what the population
    alone gives away. The targets are the other records. Linkability splits the columns into the
    quasi-identifiers and the rest (without quasi-identifiers: two random halves); inference tries
    every column as the secret (``secrets``: only those) and reports the riskiest. Random choices
    from OS entropy unless ``seed``. Returns a JSON-ready dict: per attack its
    :meth:`AttackResult.to_dict`, and the split.
    """
    if original.height != release.height:
        raise InputError(
            f"release_attacks: the original ({original.height:,} rows) and the release ({release.height:,}) must be "
            "row for row the same records."
        )
    cols = [c for c in release.columns if c in original.columns]
    n = release.height
    if n < 20 or not cols:
        raise InputError(f"release_attacks: needs at least 20 records and a released column; got {n} rows.")
    rng = np.random.default_rng(seed)
    size = max(1, min(int(n_control), n // 5))
    held = np.zeros(n, dtype=bool)
    held[rng.choice(n, size=size, replace=False)] = True
    keep = np.flatnonzero(~held)
    out = held_out_attacks(
        original.select(cols)[keep], release.select(cols)[keep], original.select(cols)[np.flatnonzero(held)],
        quasi_identifiers=quasi_identifiers, secrets=secrets, n_attacks=n_attacks, confidence=confidence, rng=rng,
    )
    return {"n_records": n, **out, "seeded": seed is not None}


def held_out_attacks(
    targets: pl.DataFrame,
    release: pl.DataFrame,
    control: pl.DataFrame,
    *,
    quasi_identifiers: Sequence[str] = (),
    secrets: Sequence[str] | None = None,
    n_attacks: int = 300,
    confidence: float = 0.95,
    rng: np.random.Generator | None = None,
) -> dict[str, Any]:
    """Singling out, linkability and inference on ``release`` with ``targets`` (records the release
    stems from) and ``control`` (records of the same population the release does *not* stem from:
    held out of the masked table, or of a synthesizer's training input). The release need not be
    row for row the targets (synthetic data). Same figures and dict as :func:`release_attacks`,
    which splits a masked release and calls this."""
    rng = rng if rng is not None else np.random.default_rng()
    cols = [c for c in release.columns if c in targets.columns and c in control.columns]
    if not cols or targets.height < 1 or control.height < 1 or release.height < 1:
        raise InputError(
            f"held_out_attacks: needs a shared column and rows on every side; got {len(cols)} columns, "
            f"{targets.height} targets, {release.height} released rows, {control.height} control records."
        )
    targets, attacked, control = targets.select(cols), release.select(cols), control.select(cols)
    out: dict[str, Any] = {
        "n_control": control.height, "n_targets": targets.height, "n_released": attacked.height, "columns": cols,
        "confidence": confidence, "n_attacks": n_attacks,
    }
    out["singling_out"] = singling_out_attack(
        targets, attacked, control, columns=cols, n_attacks=n_attacks, rng=rng, confidence=confidence
    ).to_dict()
    if len(cols) >= 2:
        qis = [c for c in quasi_identifiers if c in cols]
        rest = [c for c in cols if c not in qis]
        if not qis or not rest:
            shuffled = list(rng.permutation(cols))
            qis, rest = shuffled[: len(cols) // 2], shuffled[len(cols) // 2:]
        out["linkability"] = linkability_attack(
            targets, attacked, control, aux_cols=(qis, rest), n_attacks=n_attacks, rng=rng, confidence=confidence
        ).to_dict()
        worst, per = inference_attack(targets, attacked, control, secrets=secrets, columns=cols,
                                      n_attacks=n_attacks, rng=rng, confidence=confidence)
        out["inference"] = worst.to_dict()
        out["inference"]["detail"]["per_column"] = {
            c: {"risk": r.risk, "risk_low": r.risk_low, "risk_high": r.risk_high} for c, r in per.items()
        }
    return out


@dataclass(frozen=True)
class AttackSettings:
    """How the release measure runs the attacks, and their budget."""

    n_attacks: int = 300
    """Attacks of each kind (singling-out queries; targets for linkability and inference)."""
    n_control: int = 1000
    """Records held out as the control (at most a fifth of the rows)."""
    confidence: float = 0.95
    """Confidence of the intervals."""
    seed: int | None = None
    """Seed of the random choices; None: OS entropy."""
    budget: dict[str, float] = field(default_factory=dict)
    """Largest risk allowed per attack (``singling_out``, ``linkability``, ``inference``); an attack
    without a budget only warns (:data:`ATTACK_WARN_RISK`)."""


def judge_attacks(figures: dict[str, Any], budget: dict[str, float]) -> dict[str, Any]:
    """``figures`` with each attack's budget and verdict: ``over_budget`` (its risk above its budget;
    the refusal rule applies) and ``shows_risk`` (over budget, or without a budget its risk above
    :data:`ATTACK_WARN_RISK` with the interval's low end above 0)."""
    over: list[str] = []
    shows: list[str] = []
    for name in ATTACKS:
        got = figures.get(name)
        if got is None:
            continue
        limit = budget.get(name)
        got["budget"] = limit
        if limit is not None and got["risk"] > limit + 1e-12:
            over.append(name)
        if (limit is not None and got["risk"] > limit + 1e-12) or (limit is None and got["risk"] > ATTACK_WARN_RISK and got["risk_low"] > 0.0):
            shows.append(name)
    return {**figures, "over_budget": over, "shows_risk": shows, "warn_risk": ATTACK_WARN_RISK}
