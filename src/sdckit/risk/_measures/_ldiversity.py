"""l-diversity (distinct, entropy, recursive (c, l)) and t-closeness of sensitive columns.

k-anonymity hides who a record is among the k records sharing its quasi-identifiers; if all of
them share the same sensitive value (a diagnosis, an income band), an intruder still learns it.
l-diversity asks each such group to hold enough different sensitive values (Machanavajjhala et al.
2007); t-closeness asks each group's distribution of the sensitive value to be close to the whole
table's (Li, Li & Venkatasubramanian 2007).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, TypeAlias

import narwhals as nw
import numpy as np
import polars as pl
from numpy.typing import NDArray

from sdckit._checks import check_groupable, warn_weight_columns
from sdckit._io import DataSource, MissingPolicy, read_data
from sdckit._scale import collect_all, collect_small
from sdckit.errors import InputError, ParameterError
from sdckit.risk._counts._counting import group_ids, sorted_codes
from sdckit.risk._counts._lazy_keys import ONE, PATTERN, joinable, key_name, with_keys

DiversityKind: TypeAlias = Literal["distinct", "entropy", "recursive"]
"""Which l-diversity a group is measured by (see :func:`l_diversity`)."""

_KINDS = ("distinct", "entropy", "recursive")


@dataclass(frozen=True, kw_only=True)
class SensitiveDiversity:
    """The diversity of one sensitive column within the groups of the quasi-identifiers.

    Per-group arrays are indexed by group (0..n_groups-1, in no particular order) and aligned
    with :attr:`LDiversity.group_sizes`.
    """

    column: str
    """The sensitive column."""
    ordered: bool
    """Whether t-closeness used the ordered distance (numeric column) or the equal distance."""
    distinct: NDArray[np.int64] = field(repr=False)
    """Distinct sensitive values in each group (distinct l)."""
    entropy_l: NDArray[np.float64] = field(repr=False)
    """exp(H) of each group, H the Shannon entropy (natural log) of its sensitive values: a group is
    entropy l-diverse when exp(H) >= l."""
    recursive_l: NDArray[np.int64] = field(repr=False)
    """Largest l with r_1 < c (r_l + ... + r_m) in each group (r_i the value counts, descending)."""
    closeness: NDArray[np.float64] | None = field(repr=False, default=None)
    """Each group's distance (EMD) from the whole table's distribution (None unless asked for)."""

    def values(self, kind: DiversityKind = "distinct") -> NDArray[Any]:
        """The per-group l of the given kind."""
        if kind not in _KINDS:
            raise ParameterError(f"kind={kind!r}: use 'distinct', 'entropy' or 'recursive'.")
        return {"distinct": self.distinct, "entropy": self.entropy_l, "recursive": self.recursive_l}[kind]

    @property
    def l(self) -> int:  # noqa: E743 - the letter of the literature
        """The table's distinct l: the fewest distinct sensitive values in any group."""
        return int(self.distinct.min())

    @property
    def t(self) -> float | None:
        """The table's t-closeness: the largest group distance (None unless asked for)."""
        return None if self.closeness is None else float(self.closeness.max())


@dataclass(frozen=True, kw_only=True)
class LDiversity:
    """l-diversity of sensitive columns within the groups a table forms on its quasi-identifiers."""

    quasi_identifiers: tuple[str, ...]
    """The quasi-identifiers."""
    sensitive: tuple[str, ...]
    """The sensitive columns."""
    n: int
    """Users (rows) measured."""
    n_dropped: int | None
    """Rows dropped for missing values (policy ``"drop"``)."""
    c: float
    """The constant of recursive (c, l)-diversity."""
    group_sizes: NDArray[np.int64] = field(repr=False)
    """Users in each group of the quasi-identifiers."""
    per_column: tuple[SensitiveDiversity, ...] = field(repr=False)
    """One entry per sensitive column, in the order given."""

    def __getitem__(self, column: str) -> SensitiveDiversity:
        for s in self.per_column:
            if s.column == column:
                return s
        raise KeyError(f"{column!r} is not a sensitive column here; they are {list(self.sensitive)}")

    @property
    def n_groups(self) -> int:
        """Groups (distinct combinations) of the quasi-identifiers."""
        return int(self.group_sizes.size)

    @property
    def l(self) -> int:  # noqa: E743
        """Distinct l of the table: the fewest distinct values of any sensitive column in any group."""
        return min(s.l for s in self.per_column)

    def not_diverse(self, l: float, *, kind: DiversityKind = "distinct", column: str | None = None) -> float:  # noqa: E741
        """Share of users (0..1) in groups that are not l-diverse (like exposure for k-anonymity).

        A group fails when its l of the given kind is below ``l`` for ``column``, or for any sensitive
        column when ``column`` is None.
        """
        if not np.isfinite(l) or l < 1:
            raise ParameterError(
                f"l={l!r} must be at least 1 (l=2: at least two sensitive values per group)."
            )
        cols = self.per_column if column is None else (self[column],)
        bad = np.zeros(self.n_groups, dtype=bool)
        for s in cols:
            bad |= s.values(kind) < l
        return float(self.group_sizes[bad].sum() / self.n) if self.n else 0.0

    def to_frame(self) -> pl.DataFrame:
        """One row per (sensitive column): the table's l of each kind, t, and the shares not 2-diverse."""
        return pl.DataFrame([self._column_dict(s) for s in self.per_column])

    def _column_dict(self, s: SensitiveDiversity) -> dict[str, Any]:
        return {
            "column": s.column,
            "distinct_l": s.l,
            "entropy_l": float(s.entropy_l.min()),
            "recursive_l": int(s.recursive_l.min()),
            "not_2_diverse": self.not_diverse(2, column=s.column),
            "not_2_diverse_entropy": self.not_diverse(2, kind="entropy", column=s.column),
            "not_2_diverse_recursive": self.not_diverse(2, kind="recursive", column=s.column),
            "t_closeness": s.t,
        }

    def to_dict(self) -> dict[str, Any]:
        """JSON form: the table figures per sensitive column (no per-group values)."""
        return {
            "quasi_identifiers": list(self.quasi_identifiers),
            "sensitive": list(self.sensitive),
            "n": self.n,
            "n_dropped": self.n_dropped,
            "n_groups": self.n_groups,
            "c": self.c,
            "l": self.l,
            "not_2_diverse": self.not_diverse(2),
            "per_column": [self._column_dict(s) for s in self.per_column],
        }


def _names(columns: Sequence[str] | str) -> list[str]:
    if isinstance(columns, str):
        return [c.strip() for c in columns.split(",") if c.strip()]
    return list(columns)


def _closeness(
    gid: NDArray[np.int64], code: NDArray[np.int64], n_groups: int, m: int, ordered: bool
) -> NDArray[np.float64]:
    """EMD of each group's distribution from the table's: ordered (1/(m-1)) sum_i |cum diff_i| or
    equal distance (1/2) sum_v |p_v - q_v|. Groups in blocks so memory stays O(block * m)."""
    n = gid.size
    q = np.bincount(code, minlength=m) / n
    out = np.empty(n_groups, dtype=np.float64)
    sizes = np.bincount(gid, minlength=n_groups)
    block = max(1, (1 << 22) // max(m, 1))
    order = np.argsort(gid, kind="stable")
    starts = np.concatenate([[0], np.cumsum(sizes)])
    for g0 in range(0, n_groups, block):
        g1 = min(n_groups, g0 + block)
        rows = order[starts[g0] : starts[g1]]
        counts = np.zeros((g1 - g0, m))
        np.add.at(counts, (gid[rows] - g0, code[rows]), 1.0)
        p = counts / sizes[g0:g1, None]
        if ordered and m > 1:
            out[g0:g1] = np.abs(np.cumsum(p - q, axis=1)[:, :-1]).sum(axis=1) / (m - 1)
        elif ordered:
            out[g0:g1] = 0.0
        else:
            out[g0:g1] = 0.5 * np.abs(p - q).sum(axis=1)
    return out


def _value_codes(s: pl.Series) -> tuple[NDArray[np.int64], int]:
    """Dense codes 0..m-1 of a column's values (nulls one more value, any order) and m.

    Text by the physical ids of a polars categorical, made dense with numpy, and integers by their
    offset from the minimum (both a few milliseconds on Adult, where polars' ranking costs tens of
    milliseconds on a busy machine); other types by :func:`sorted_codes`.
    """
    dtype = s.dtype
    if dtype in (pl.String, pl.Categorical) or isinstance(dtype, pl.Enum):
        ids = s.cast(pl.String).cast(pl.Categorical).to_physical()  # core install: polars, no pyarrow
        v = ids.fill_null(int(ids.max() or 0) + 1).to_numpy().astype(np.int64)  # type: ignore[arg-type]
        seen = np.zeros(int(v.max(initial=0)) + 1, dtype=bool)
        seen[v] = True
        return (np.cumsum(seen) - 1)[v], int(seen.sum())
    if (dtype.is_integer() or dtype == pl.Boolean) and s.null_count() == 0 and s.len() > 0:
        v = s.to_numpy().astype(np.int64)
        lo, hi = int(v.min()), int(v.max())
        if hi - lo < 4 * max(s.len(), 1 << 16):
            return v - lo, hi - lo + 1
    return sorted_codes(s)


def _qi_group_ids(df: pl.DataFrame, columns: list[str]) -> tuple[NDArray[np.int64], int]:
    """Dense group ids (any order) of the rows on ``columns``: mixed-radix keys of value codes."""
    key = np.zeros(df.height, dtype=np.int64)
    total = 1
    for c in columns:
        codes, m = _value_codes(df[c])
        total *= max(m, 1)
        if total > 1 << 62:
            return group_ids(df, columns)
        key = key * m + codes
    if total <= max(1 << 22, 2 * df.height):
        present = np.bincount(key, minlength=0) > 0
        return np.asarray((np.cumsum(present) - 1)[key], dtype=np.int64), int(present.sum())
    uniq, inverse = np.unique(key, return_inverse=True)
    return np.asarray(inverse.reshape(-1), dtype=np.int64), int(uniq.size)


def l_diversity(
    data: DataSource,
    quasi_identifiers: Sequence[str] | str,
    sensitive: Sequence[str] | str,
    *,
    c: float = 2.0,
    t_closeness: bool = False,
    missing: MissingPolicy = "value",
) -> LDiversity:
    """l-diversity of each sensitive column within the groups of ``quasi_identifiers``.

    For a group g of users sharing their quasi-identifiers, with sensitive value counts
    r_1 >= r_2 >= ... >= r_m (n_g = sum r_i):

    * distinct l: m, the number of different sensitive values;
    * entropy l: exp(H_g), H_g = -sum_i (r_i / n_g) log(r_i / n_g); g is entropy l-diverse when
      H_g >= log l;
    * recursive (c, l): the largest l with r_1 < c (r_l + r_{l+1} + ... + r_m);

    and, with ``t_closeness``, the distance of g's distribution p from the table's q: for a numeric
    (ordered) column the earth mover's distance (1/(m-1)) sum_i |sum_{j<=i} (p_j - q_j)| over the m
    sorted values, otherwise the equal-distance EMD (1/2) sum_v |p_v - q_v|.

    :meth:`LDiversity.not_diverse` gives the share of users in groups that are not l-diverse, the
    figure that reads like exposure: 0.03 at l = 2 means 3 % of users are in a group where every
    member has the same sensitive value, so an intruder who places them in the group learns it.

    Parameters
    ----------
    data : a path or any frame the input layer accepts (collected into memory).
    quasi_identifiers : the columns an intruder knows.
    sensitive : one or more sensitive columns (not among the quasi-identifiers).
    c : the constant of recursive (c, l)-diversity (> 0; 2 as in sdcMicro's ``ldiversity``).
    t_closeness : also compute each group's distance from the table's distribution.
    missing : ``"value"`` (default: missing is one more value, in the quasi-identifiers and the
        sensitive columns), ``"drop"`` or ``"error"``.

    References
    ----------
    .. [1] Machanavajjhala, A., Kifer, D., Gehrke, J. & Venkitasubramaniam, M. (2007).
       l-Diversity: privacy beyond k-anonymity. ACM Trans. Knowl. Discov. Data 1(1), 3.
    .. [2] Li, N., Li, T. & Venkatasubramanian, S. (2007). t-Closeness: privacy beyond k-anonymity
       and l-diversity. Proc. ICDE, 106-115.

    Examples
    --------
    >>> import polars as pl
    >>> df = pl.DataFrame({"zip": [1, 1, 1, 2, 2], "disease": ["flu", "flu", "flu", "flu", "hiv"]})
    >>> ld = l_diversity(df, ["zip"], ["disease"])
    >>> ld.l, ld.not_diverse(2)   # zip 1: three users, all with flu
    (1, 0.6)
    """
    qi_list = _names(quasi_identifiers)
    sens_list = _names(sensitive)
    if not sens_list:
        raise ParameterError("give at least one sensitive column, e.g. sensitive=['income'].")
    both = [s for s in sens_list if s in qi_list]
    if both:
        raise InputError(
            f"column {both[0]!r} is both a quasi-identifier and sensitive; a sensitive column is what the "
            "intruder does not know. Name it once."
        )
    cf = float(c)
    if not np.isfinite(cf) or cf <= 0:
        raise ParameterError(f"c={c!r} must be a positive number (recursive (c, l)-diversity), e.g. c=2.")
    d = read_data(data, [*qi_list, *sens_list], missing=missing)
    check_groupable(d.frame, list(d.columns))
    warn_weight_columns(qi_list)
    if isinstance(d.frame, nw.LazyFrame) and not t_closeness:
        n_lazy, lazy_sizes, lazy_per = _lazy_l_diversity(d.frame, qi_list, sens_list, cf)
        return LDiversity(
            quasi_identifiers=tuple(qi_list), sensitive=tuple(sens_list), n=n_lazy, n_dropped=d.n_dropped, c=cf,
            group_sizes=lazy_sizes, per_column=tuple(lazy_per),
        )
    # the ordered distance of t-closeness needs every value of every group: collected, and said so
    df = collect_all(
        d.frame, what="l_diversity with t_closeness", instead="t_closeness=False measures l-diversity where they live."
    ).to_polars()
    n = df.height
    gid, n_groups = _qi_group_ids(df, qi_list)
    sizes = np.bincount(gid, minlength=n_groups).astype(np.int64)
    per: list[SensitiveDiversity] = []
    for s in sens_list:
        ordered = df[s].dtype.is_numeric()
        # the ordered distance of t-closeness needs the values' order; the rest any codes
        code, m = sorted_codes(df[s]) if t_closeness and ordered else _value_codes(df[s])
        pair_key = gid * m + code
        if n_groups * m <= max(1 << 22, 2 * n):  # dense: one bincount, no sort
            dense = np.bincount(pair_key, minlength=n_groups * m)
            pair = np.flatnonzero(dense)
            cnt = dense[pair]
        else:
            pair, cnt = np.unique(pair_key, return_counts=True)
        pg = pair // m
        distinct = np.bincount(pg, minlength=n_groups).astype(np.int64)
        share = cnt / sizes[pg]
        ent = np.bincount(pg, weights=-share * np.log(share), minlength=n_groups)
        # recursive: counts descending within each group, tail sums r_l + ... + r_m
        o = np.lexsort((-cnt, pg))
        pg_o, cnt_o = pg[o], cnt[o]
        tail = sizes[pg_o] - (np.cumsum(cnt_o) - cnt_o - np.concatenate([[0], np.cumsum(sizes)])[pg_o])
        first = np.concatenate([[0], np.cumsum(distinct)[:-1]])
        r1 = cnt_o[first][pg_o]
        ok = r1 < cf * tail
        rec = np.bincount(pg_o, weights=ok, minlength=n_groups).astype(np.int64)
        close = _closeness(gid, code, n_groups, m, ordered) if t_closeness else None
        per.append(
            SensitiveDiversity(
                column=s,
                ordered=ordered,
                distinct=distinct,
                entropy_l=np.exp(ent),
                recursive_l=rec,
                closeness=close,
            )
        )
    return LDiversity(
        quasi_identifiers=tuple(qi_list),
        sensitive=tuple(sens_list),
        n=n,
        n_dropped=d.n_dropped,
        c=cf,
        group_sizes=sizes,
        per_column=tuple(per),
    )


def _lazy_l_diversity(
    frame: nw.LazyFrame[Any], qi: list[str], sensitive: list[str], c: float
) -> tuple[int, NDArray[np.int64], list[SensitiveDiversity]]:
    """(n, group sizes, per-column diversity) of a lazy frame, by group-bys and joins on the engine.

    Per sensitive column: (group, value) counts r by one ``group_by``; per group m = their number,
    n_g = sum r, H_g = log n_g - sum r log r / n_g; recursive l from the distinct count levels v (t_v
    values with count v): the positions of level v are a_v .. a_v + t_v - 1 (descending order) with
    tails T = S_v - d v, S_v the sum of the counts <= v, so exactly clip(ceil((c S_v - r_1) / (c v)),
    0, t_v) of them satisfy r_1 < c T (one self-join of the levels within each group). Only one row
    per group reaches the driver.
    """
    q = len(qi)
    schema = frame.collect_schema()
    keyed = with_keys(frame, qi)
    g_keys = [*[key_name(j) for j in range(q)], PATTERN]
    groups = joinable(keyed.group_by(*g_keys).agg(nw.col(ONE).sum().alias("__sdc_size")))
    for i, s in enumerate(sensitive):
        prefix, pat = f"__sdc_s{i}_", f"__sdc_sp{i}"
        keyed = with_keys(keyed, [s], prefix=prefix, pattern_name=pat)
        pairs = joinable(
            keyed.group_by(*g_keys, key_name(0, prefix), pat)
            .agg(nw.col(ONE).sum().alias("__sdc_r"))
            .select(*g_keys, nw.col("__sdc_r").cast(nw.Float64))
        )
        per_group = pairs.with_columns(
            (nw.col("__sdc_r") * nw.col("__sdc_r").log()).alias("__sdc_rlogr"), nw.lit(1).alias(ONE)
        ).group_by(*g_keys).agg(
            nw.col(ONE).sum().alias(f"__sdc_distinct{i}"),
            nw.col("__sdc_r").sum().alias("__sdc_n"),
            nw.col("__sdc_rlogr").sum().alias("__sdc_rlogr"),
            nw.col("__sdc_r").max().alias("__sdc_r1"),
        )
        per_group = joinable(per_group).with_columns(
            (nw.col("__sdc_n").log() - nw.col("__sdc_rlogr") / nw.col("__sdc_n")).exp().alias(f"__sdc_entropy{i}")
        )
        levels = joinable(
            pairs.with_columns(nw.lit(1).alias(ONE)).group_by(*g_keys, "__sdc_r").agg(nw.col(ONE).sum().alias("__sdc_t"))
        )
        below = (
            levels.join(levels.rename({"__sdc_r": "__sdc_r_b", "__sdc_t": "__sdc_t_b"}), on=g_keys, how="inner")
            .filter(nw.col("__sdc_r_b") <= nw.col("__sdc_r"))
            .with_columns((nw.col("__sdc_r_b") * nw.col("__sdc_t_b")).alias("__sdc_mass"))
            .group_by(*g_keys, "__sdc_r", "__sdc_t")
            .agg(nw.col("__sdc_mass").sum().alias("__sdc_S"))
            .pipe(joinable)
            .join(per_group.select(*g_keys, "__sdc_r1"), on=g_keys, how="inner")
        )
        ok = (
            ((c * nw.col("__sdc_S") - nw.col("__sdc_r1")) / (c * nw.col("__sdc_r")))
            .ceil()
            .clip(0, None)
        )
        ok = nw.when(ok > nw.col("__sdc_t")).then(nw.col("__sdc_t").cast(nw.Float64)).otherwise(ok)
        rec = joinable(
            below.with_columns(ok.alias("__sdc_ok"))
            .group_by(*g_keys)
            .agg(nw.col("__sdc_ok").sum().alias(f"__sdc_recursive{i}"))
        )
        groups = groups.join(
            per_group.select(*g_keys, f"__sdc_distinct{i}", f"__sdc_entropy{i}"), on=g_keys, how="left"
        ).join(rec, on=g_keys, how="left")
    got = collect_small(groups.drop(*g_keys), what=f"per-group l-diversity of {', '.join(qi)}")
    sizes = np.asarray(got["__sdc_size"].to_numpy(), dtype=np.int64)
    per = [
        SensitiveDiversity(
            column=s,
            ordered=bool(schema[s].is_numeric()),
            distinct=np.asarray(got[f"__sdc_distinct{i}"].to_numpy(), dtype=np.int64),
            entropy_l=np.asarray(got[f"__sdc_entropy{i}"].to_numpy(), dtype=np.float64),
            recursive_l=np.asarray(got[f"__sdc_recursive{i}"].to_numpy(), dtype=np.float64).round().astype(np.int64),
            closeness=None,
        )
        for i, s in enumerate(sensitive)
    ]
    return int(sizes.sum()), sizes, per
