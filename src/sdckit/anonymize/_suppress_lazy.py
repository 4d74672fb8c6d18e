"""Local suppression with decoys where the rows live: polars LazyFrame, Dask and Spark.

The decoy algorithm (:func:`sdckit.anonymize._decoys.decoy_plan`) works on the table of distinct
key rows and their counts, never on the rows themselves. On a lazy frame it therefore runs in
passes, each one a distributed group-by:

1. **count**: ``group_by(keys).len()`` on the engine; the group table (one row per group, O(groups))
   reaches the driver through :func:`sdckit._scale.collect_small`;
2. **choose** (on the driver): the decoy rounds on that table, exactly as in memory; the result is,
   per group, the released rows its members become: ``(mask, m)``, m members with the keys of
   ``mask`` set to missing. Only the groups that change are kept (the *plan*, O(changed groups));
3. **apply** (lazily, on the workers): the plan is joined to the rows on the key values (a broadcast
   join); a group going whole to one released row gets its mask in place; a group split between
   several (a donor of decoys, a group giving cells back) numbers its members at random
   (a uniformly random permutation within the group, seeded from the fit's generator: OS entropy
   by default) and member r takes the mask whose range ``[lo, hi)`` holds r;
4. **verify**: the groups of the lazy release that are smaller than k are counted (a group-by and a
   filter: nothing but those groups reach the driver). None for a frame that yields the same rows
   each time it is computed; otherwise the release is counted again and the passes repeat, up to
   :data:`MAX_PASSES`.

So the release has, group for group, the very counts the in-memory algorithm gives on the same
table (the same decoys with the same ``random_state``), and every released row is identical to at
least k - 1 others.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from functools import reduce
from typing import Any

import narwhals as nw
import numpy as np
import polars as pl
from numpy.typing import NDArray

from sdckit._scale import collect_small, engine_of
from sdckit.anonymize._decoys import decoy_plan
from sdckit.errors import ParameterError, SdcError
from sdckit.risk._counts._wildcard import column_codes

__all__ = ["MAX_PASSES", "LazyPlan", "apply_plan", "group_table", "is_lazy", "suppress_lazy"]

MAX_PASSES = 4
"""Count-choose-apply passes before giving up (a frame whose rows change between computations)."""

_N, _LO, _HI, _MASK, _RANK, _SPLIT, _GID = "__sdc_n", "__sdc_lo", "__sdc_hi", "__sdc_mask", "__sdc_rank", "__sdc_split", "__sdc_gid"

log = logging.getLogger("sdckit.anonymize")


def is_lazy(X: object) -> bool:
    """True for a polars LazyFrame, a Dask or a PySpark frame (native or narwhals)."""
    if isinstance(X, pl.LazyFrame) or engine_of(X) is not None:
        return True
    return isinstance(X, nw.LazyFrame) and isinstance(X.to_native(), pl.LazyFrame)


@dataclass(frozen=True)
class LazyPlan:
    """One pass's choice: which members of which group lose which keys.

    ``table`` has the key columns (the group's values, as the engine returned them), ``lo``/``hi``
    (member ranks, 0-based, within the group), ``mask`` (bit j set: key j suppressed) and ``split``
    (the group is shared between several released rows), one row per (changed group, released row).
    """

    keys: tuple[str, ...]
    table: nw.DataFrame[Any]
    seed: int
    cells: NDArray[np.int64]
    """Cells suppressed per key."""
    rounds: int
    decoy_cells: int


def _count_column(names: Sequence[str]) -> str:
    name = _N
    while name in names:
        name += "_"
    return name


def group_table(frame: nw.LazyFrame[Any], keys: Sequence[str], *, what: str = "group sizes") -> nw.DataFrame[Any]:
    """The distinct key rows and their counts (``__sdc_n``), counted by the engine (one pass)."""
    out = frame.group_by(list(keys), drop_null_keys=False).agg(nw.len().alias(_N))
    return collect_small(out, what=f"{what} of {', '.join(keys)}")


def small_groups(frame: nw.LazyFrame[Any], keys: Sequence[str], k: int) -> nw.DataFrame[Any]:
    """The groups with fewer than k rows and their counts (one pass; only those reach the driver)."""
    out = frame.group_by(list(keys), drop_null_keys=False).agg(nw.len().alias(_N)).filter(nw.col(_N) < k)
    return collect_small(out, what=f"groups smaller than {k} of {', '.join(keys)}")


def table_codes(table: nw.DataFrame[Any], keys: Sequence[str]) -> NDArray[np.int32]:
    """(groups, p) codes of the group table, as :func:`~sdckit.risk._counts._wildcard.column_codes` gives the
    full column (the order of the values' text), so the codes equal those of the table in memory."""
    codes = np.empty((len(table), len(keys)), dtype=np.int32)
    for j, name in enumerate(keys):
        codes[:, j] = column_codes(table[name])
    return codes


def table_fingerprint(table: nw.DataFrame[Any], keys: Sequence[str]) -> str:
    """SHA-256 of the group table (values as text, sorted), to recognise the fitted frame."""
    rows = zip(*(table[c].cast(nw.String).fill_null("\x00").to_list() for c in keys), table[_N].to_list(), strict=True)
    digest = hashlib.sha256()
    for row in sorted(rows, key=lambda r: tuple(str(v) for v in r)):
        digest.update("\x1f".join(map(str, row)).encode() + b"\x1e")
    return digest.hexdigest()


def choose(
    table: nw.DataFrame[Any], keys: Sequence[str], k: int, weight: NDArray[np.float64], rng: np.random.Generator
) -> LazyPlan:
    """The decoy rounds on a group table, as the plan of the groups that change (see the module)."""
    p = len(keys)
    codes = table_codes(table, keys)
    counts = np.asarray(table[_N].to_numpy(), dtype=np.int64)
    origins, inverse = np.unique(codes, axis=0, return_inverse=True)
    inverse = inverse.ravel()
    plan = decoy_plan(origins, np.bincount(inverse, weights=counts, minlength=origins.shape[0]).astype(np.int64), k, weight, rng)
    seed = int(rng.integers(0, 2**63 - 1))  # the members' permutation: from the same generator
    by_origin = plan.targets
    rows_of: dict[int, list[int]] = {}
    for i, o in enumerate(inverse.tolist()):
        rows_of.setdefault(o, []).append(i)
    idx: list[int] = []
    lo: list[int] = []
    hi: list[int] = []
    mask: list[int] = []
    split: list[bool] = []
    cells = np.zeros(p, dtype=np.int64)
    bits = 1 << np.arange(p, dtype=np.int64)
    for o, targets in by_origin.items():
        origin = origins[o]
        parts = [(int(((np.asarray(t) < 0) & (origin >= 0)) @ bits), m) for t, m in targets]
        if all(b == 0 for b, _ in parts):
            continue  # the group is released as it is
        for b, m in parts:
            cells += m * ((b >> np.arange(p)) & 1)
        # several table rows of one origin (a null and a NaN, both missing): filled in turn
        queue = [list(x) for x in sorted(parts)]
        for i in rows_of[o]:
            left, at = int(counts[i]), 0
            pieces: list[tuple[int, int, int]] = []
            while left:
                b, m = queue[0]
                take = min(m, left)
                pieces.append((b, at, at + take))
                at += take
                left -= take
                queue[0][1] -= take
                if queue[0][1] == 0:
                    queue.pop(0)
            if all(b == 0 for b, _, _ in pieces):
                continue
            for b, a, z in pieces:
                idx.append(i)
                lo.append(a)
                hi.append(z)
                mask.append(b)
                split.append(len(pieces) > 1)
    chosen = table.select(list(keys))[idx] if idx else table.select(list(keys)).head(0)
    ns = nw.get_native_namespace(chosen)
    chosen = chosen.with_columns(
        nw.new_series(_LO, np.asarray(lo, dtype=np.int64), nw.Int64, backend=ns),
        nw.new_series(_HI, np.asarray(hi, dtype=np.int64), nw.Int64, backend=ns),
        nw.new_series(_MASK, np.asarray(mask, dtype=np.int64), nw.Int64, backend=ns),
        nw.new_series(_SPLIT, np.asarray(split, dtype=bool), nw.Boolean, backend=ns),
        nw.new_series(_GID, np.asarray(idx, dtype=np.int64), nw.Int64, backend=ns),
    )
    return LazyPlan(tuple(keys), chosen, seed, cells, plan.rounds, plan.decoy_cells)


# --- apply: one implementation per engine, each lazy --------------------------------------------


def _apply_polars(lf: pl.LazyFrame, plan: LazyPlan) -> pl.LazyFrame:
    keys = list(plan.keys)
    names = lf.collect_schema().names()
    m = pl.from_arrow(plan.table.to_arrow())
    assert isinstance(m, pl.DataFrame)
    m = m.cast({c: lf.collect_schema()[c] for c in keys})
    # a random rank of each member within its group (a uniform permutation per group)
    ranked = lf.with_columns(pl.int_range(pl.len(), dtype=pl.Int64).shuffle(seed=plan.seed % 2**63).over(keys).alias(_RANK))
    joined = ranked.join(m.lazy(), on=keys, how="left", nulls_equal=True, maintain_order="left")
    kept = joined.filter(pl.col(_MASK).is_null() | ((pl.col(_RANK) >= pl.col(_LO)) & (pl.col(_RANK) < pl.col(_HI))))
    masked = kept.with_columns(
        pl.when((pl.col(_MASK).fill_null(0) // (1 << j)) % 2 == 1).then(None).otherwise(pl.col(c)).alias(c)
        for j, c in enumerate(keys)
    )
    return masked.select(names)


def _apply_dask(df: Any, plan: LazyPlan) -> Any:
    import pandas as pd  # lazy: an optional engine's library

    keys = list(plan.keys)
    names = list(df.columns)
    meta = df._meta.copy()
    widen = {c: _nullable(meta[c].dtype) for c in keys}
    meta = meta.astype(widen)
    m = plan.table.to_pandas()
    for c in keys:  # the plan's key values in the partitions' dtypes, so the join matches
        m[c] = m[c].astype(df._meta[c].dtype) if m[c].notna().all() else m[c]
    single = m[~m[_SPLIT]][[*keys, _MASK]]
    split = m[m[_SPLIT]]
    split_keys = split.drop_duplicates(_GID)[[*keys, _GID]]

    def null_out(pdf: Any, mask: Any) -> Any:
        pdf = pdf.astype(widen)
        for j, c in enumerate(keys):
            hit = ((mask // (1 << j)) % 2 == 1).to_numpy()
            if hit.any():
                pdf[c] = pdf[c].where(~hit, None)
        return pdf

    def tag(pdf: Any) -> Any:
        out = pdf.merge(single, on=keys, how="left").merge(split_keys, on=keys, how="left")
        out.index = pdf.index
        return out

    tag_meta = meta.assign(**{_MASK: pd.Series(dtype="float64"), _GID: pd.Series(dtype="float64")})
    tagged = df.map_partitions(tag, meta=tag_meta)

    def apply_single(pdf: Any) -> Any:
        return null_out(pdf[names], pdf[_MASK].fillna(0).astype("int64"))[names]

    def apply_split(pdf: Any) -> Any:
        if len(pdf) == 0:
            return pdf[names].astype(widen)
        pieces = []
        for gid, g in pdf.groupby(_GID, sort=False):
            ranges = split[split[_GID] == int(gid)]
            rank = np.random.default_rng([plan.seed, int(gid)]).permutation(len(g))
            mask = np.zeros(len(g), dtype=np.int64)
            for a, z, b in zip(ranges[_LO], ranges[_HI], ranges[_MASK], strict=True):
                mask[(rank >= a) & (rank < z)] = b
            pieces.append(null_out(g[names], pd.Series(mask, index=g.index)))
        return pd.concat(pieces)[names]

    plain = tagged[tagged[_GID].isna()].map_partitions(apply_single, meta=meta[names])
    if split.empty:
        return plain
    import dask.dataframe as dd  # lazy: an optional engine's library

    shared = tagged[~tagged[_GID].isna()].shuffle(on=_GID).map_partitions(apply_split, meta=meta[names])
    return dd.concat([plain, shared])


def _nullable(dtype: Any) -> Any:
    """A pandas dtype that can hold a missing cell (an integer or boolean key becomes nullable)."""
    import pandas as pd  # lazy: an optional engine's library

    if pd.api.types.is_bool_dtype(dtype):
        return "boolean"
    if pd.api.types.is_integer_dtype(dtype) and not isinstance(dtype, pd.api.extensions.ExtensionDtype):
        return "Int64"
    return dtype


def _apply_spark(df: Any, plan: LazyPlan) -> Any:
    from pyspark.sql import Window  # lazy: an optional engine's library
    from pyspark.sql import functions as F  # noqa: N812 - the usual name; lazy: an optional engine's library
    from pyspark.sql.types import (  # lazy: an optional engine's library
        BooleanType,
        LongType,
        StructField,
        StructType,
    )

    keys = list(plan.keys)
    names = list(df.columns)
    fields = {f.name: f for f in df.schema.fields}
    alias = {c: f"__sdc_k{j}" for j, c in enumerate(keys)}
    schema = StructType(
        [StructField(alias[c], fields[c].dataType, True) for c in keys]
        + [StructField(c, LongType(), False) for c in (_LO, _HI, _MASK)]
        + [StructField(_SPLIT, BooleanType(), False), StructField(_GID, LongType(), False)]
    )
    rows = plan.table.rows()
    spark = df.sparkSession
    m = spark.createDataFrame([tuple(r) for r in rows], schema=schema)

    def on(left: Any, right: Any) -> Any:
        return reduce(lambda a, b: a & b, [left[c].eqNullSafe(right[alias[c]]) for c in keys])

    heads = m.dropDuplicates([_GID]).select(*alias.values(), F.when(F.col(_SPLIT), None).otherwise(F.col(_MASK)).alias(_MASK), F.when(F.col(_SPLIT), F.col(_GID)).alias(_GID))
    tagged = df.join(F.broadcast(heads), on(df, heads), "left").select(*names, _MASK, _GID)
    plain = tagged.filter(F.col(_GID).isNull()).select(*names, F.coalesce(F.col(_MASK), F.lit(0)).alias(_MASK))
    window = Window.partitionBy(_GID).orderBy(_RANK)
    shared = (
        tagged.filter(F.col(_GID).isNotNull())
        .withColumn(_RANK, F.rand(plan.seed % 2**63))
        .withColumn(_RANK, F.row_number().over(window) - 1)
    )
    ranges = m.filter(F.col(_SPLIT)).select(F.col(_GID).alias("__sdc_g"), _LO, _HI, F.col(_MASK).alias("__sdc_m"))
    shared = shared.join(
        F.broadcast(ranges), (shared[_GID] == ranges["__sdc_g"]) & (shared[_RANK] >= ranges[_LO]) & (shared[_RANK] < ranges[_HI]), "inner"
    ).select(*names, F.col("__sdc_m").alias(_MASK))
    both = plain.unionByName(shared)
    return both.select(
        *[
            F.when(F.shiftright(F.col(_MASK), keys.index(c)).bitwiseAND(1) == 1, F.lit(None).cast(fields[c].dataType))
            .otherwise(F.col(c))
            .alias(c)
            if c in alias
            else F.col(c)
            for c in names
        ]
    )


def apply_plan(X: Any, plan: LazyPlan) -> Any:
    """The plan applied lazily to ``X`` (a frame of the same kind: nothing is computed)."""
    native = X.to_native() if isinstance(X, (nw.DataFrame, nw.LazyFrame)) else X
    if len(plan.table) == 0:
        return native
    engine = engine_of(native)
    if engine == "dask":
        return _apply_dask(native, plan)
    if engine == "spark":
        return _apply_spark(native, plan)
    return _apply_polars(native, plan)


@dataclass(frozen=True)
class LazyResult:
    """What the passes did."""

    release: Any
    """The release, lazy, of the kind of the input."""
    plans: tuple[LazyPlan, ...]
    n_passes: int
    """Distributed passes over the rows: each a group-by (the first counts, the last verifies)."""
    n_rows: int
    fingerprint: str
    """Of the input's group table."""


def suppress_lazy(
    X: Any, keys: Sequence[str], k: int, weight: NDArray[np.float64], rng: np.random.Generator,
    table: nw.DataFrame[Any] | None = None,
) -> LazyResult:
    """Count, choose, apply and verify in passes until no released group is smaller than k (see the module).

    ``table``: the input's group table when the caller counted it already (:func:`group_table`).
    """
    frame = nw.from_native(X)
    if isinstance(frame, nw.DataFrame):
        frame = frame.lazy()
    keys = list(keys)
    current = frame.to_native()
    plans: list[LazyPlan] = []
    fingerprint = ""
    n_rows = 0
    if table is None:
        table = group_table(frame, keys)
    for n_pass in range(1, MAX_PASSES + 1):
        if n_pass == 1:
            fingerprint = table_fingerprint(table, keys)
            n_rows = int(table[_N].sum())
            if n_rows < k:
                raise ParameterError(
                    f"k={k} is larger than the {n_rows} records (n_samples = {n_rows}); no release is k-anonymous. Lower k."
                )
        elif n_pass > 1:
            small = small_groups(nw.from_native(current), keys, k)
            log.info("local suppression, pass %d: %d released groups smaller than %d", n_pass, len(small), k)
            if len(small) == 0:
                break
            table = group_table(nw.from_native(current), keys)
        if n_pass == 1 and int(table[_N].min()) >= k:
            log.info("local suppression, pass 1: every group of %s has >= %d rows; nothing to suppress", keys, k)
            break
        plan = choose(table, keys, k, weight, rng)
        log.info(
            "local suppression, pass %d: %d groups counted, %d change (%d decoy rounds), %d cells suppressed",
            n_pass, len(table), len(set(plan.table[_GID].to_list())), plan.rounds, int(plan.cells.sum()),
        )
        plans.append(plan)
        current = apply_plan(current, plan)
    else:
        raise SdcError(
            f"local suppression on the lazy frame did not settle after {MAX_PASSES} passes: the frame gives other "
            "rows each time it is computed (a random step upstream without a fixed seed?). Persist or cache it first "
            "(Dask: .persist(); Spark: .cache(); polars: .collect().lazy()) or write it to Parquet and read that."
        )
    return LazyResult(current, tuple(plans), n_pass, n_rows, fingerprint)
