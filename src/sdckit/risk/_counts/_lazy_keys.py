"""Group counts and wildcard group sizes of a lazy frame, computed where its rows live.

The building blocks of the per-record risk columns on polars LazyFrames, DuckDB relations, Dask
and Spark frames: every step is a narwhals ``group_by``, ``join``, ``filter`` or ``concat``, so the
engine runs it and the result is a lazy frame of the same kind with the new columns. Only the
distinct patterns of missing keys (at most 2^p rows, one per pattern) reach the driver, through
:func:`sdckit._scale.collect_small`.

Keys are made join-safe first: missing (null, or NaN in a float column) is bit j of an integer
pattern column, and the key's cell is replaced by a fixed value of its type there, so two keys are
equal exactly when their patterns and their present values are (joins never see a null).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import narwhals as nw

from sdckit._io import DataSource, as_narwhals, check_columns
from sdckit._scale import collect_small, engine_of
from sdckit.errors import ParameterError
from sdckit.risk._counts._weights import check_weight_column

PATTERN = "__sdc_pattern"
_COUNT = "__sdc_n"
_WEIGHT = "__sdc_w"
ONE = "__sdc_one"  # rows are counted as a sum of ones: a plain aggregation every engine's group_by takes
WEIGHT_VALUE = "__sdc_wv"  # the weights as float64, made before any group_by (Dask aggregates plain columns)
_PATTERN_LIMIT = 4096  # more missingness patterns than this: P^2 joins, warned


def lazy_frame(data: DataSource, what: str) -> nw.LazyFrame[Any]:
    """``data`` as a narwhals LazyFrame; an eager frame is refused (its measures are in memory)."""
    frame = as_narwhals(data)
    if not isinstance(frame, nw.LazyFrame):
        raise ParameterError(
            f"{what} takes a lazy frame (polars LazyFrame, DuckDB, Dask, Spark) and adds the column to it; "
            "for a frame in memory use the measure itself (it returns one value per record)."
        )
    return frame


def _identity(pdf: Any) -> Any:
    return pdf


def joinable(grouped: nw.LazyFrame[Any]) -> nw.LazyFrame[Any]:
    """A group-by result ready to be joined or grouped again: on Dask, behind an identity ``map_partitions``.

    dask 2026.8 fails to lower a merge on several keys with a groupby whose ``split_out`` > 1 (which
    it picks itself for many keys): ``KeyError: [...] not in index``. The identity map hides the
    groupby's partitioning from the merge; other engines are untouched.
    """
    native = grouped.to_native()
    if engine_of(native) != "dask":
        return grouped
    return nw.from_native(native.map_partitions(_identity))


def key_name(j: int, prefix: str = "__sdc_k") -> str:
    return f"{prefix}{j}"


def missing_expr(name: str, dtype: Any) -> nw.Expr:
    """True where the cell is missing: null, or NaN in a float column."""
    col = nw.col(name)
    if dtype.is_float():
        return col.is_null() | col.is_nan().fill_null(True)
    return col.is_null()


def with_keys(
    frame: nw.LazyFrame[Any],
    columns: Sequence[str],
    weights: str | None = None,
    *,
    prefix: str = "__sdc_k",
    pattern_name: str = PATTERN,
) -> nw.LazyFrame[Any]:
    """``frame`` with the join-safe keys ``__sdc_k<j>`` and the missingness pattern (bit j = key j missing).

    A missing cell becomes 0 (numeric) or "" (anything else, as text): the pattern tells it apart from
    a real 0 or "".
    """
    if len(columns) > 62:
        raise ParameterError(
            f"{len(columns)} key columns: the missingness pattern is a 62-bit integer; measure at most 62 keys."
        )
    schema = frame.collect_schema()
    pattern: nw.Expr = nw.lit(0, dtype=nw.Int64)
    keys = []
    for j, c in enumerate(columns):
        dtype = schema[c]
        miss = missing_expr(c, dtype)
        pattern = pattern + nw.when(miss).then(nw.lit(1 << j, dtype=nw.Int64)).otherwise(nw.lit(0, dtype=nw.Int64))
        if dtype == nw.Boolean:
            value = nw.col(c).cast(nw.Int8)
            keys.append(nw.when(miss).then(nw.lit(0, dtype=nw.Int8)).otherwise(value).alias(key_name(j, prefix)))
        elif dtype.is_numeric():
            keys.append(nw.when(miss).then(nw.lit(0, dtype=dtype)).otherwise(nw.col(c)).alias(key_name(j, prefix)))
        else:
            keys.append(nw.col(c).cast(nw.String).fill_null("").alias(key_name(j, prefix)))
    if weights is not None:
        keys.append(nw.col(weights).cast(nw.Float64).alias(WEIGHT_VALUE))
    return frame.with_columns(*keys, pattern.alias(pattern_name), nw.lit(1, dtype=nw.Int64).alias(ONE))


def drop_keys(frame: nw.LazyFrame[Any], original: Sequence[str], added: Sequence[str]) -> nw.LazyFrame[Any]:
    return frame.select(*original, *added)


def _aggs(weights: str | None) -> list[nw.Expr]:
    out = [nw.col(ONE).sum().alias(_COUNT)]
    if weights is not None:
        out.append(nw.col(WEIGHT_VALUE).sum().alias(_WEIGHT))
    return out


def attach_group_counts(
    keyed: nw.LazyFrame[Any], p: int, *, size: str, weights: str | None = None, weight_sum: str | None = None
) -> nw.LazyFrame[Any]:
    """Each row's group size (missing is a value of its own) as ``size``, and the sum of ``weights``
    over its group as ``weight_sum``: one ``group_by`` and one join on the keys and the pattern."""
    on = [*[key_name(j) for j in range(p)], PATTERN]
    counts = joinable(keyed.group_by(*on).agg(*_aggs(weights)))
    out = keyed.join(counts, on=on, how="left").rename({_COUNT: size}).with_columns(nw.col(size).cast(nw.Int64))
    if weights is not None and weight_sum is not None:
        out = out.rename({_WEIGHT: weight_sum})
    return out


def missing_patterns(
    keyed: nw.LazyFrame[Any], columns: Sequence[str], weights: str | None = None
) -> list[tuple[int, int, float]]:
    """The distinct missingness patterns: (bits, records, weight sum), one row each to the driver."""
    got = collect_small(
        keyed.group_by(PATTERN).agg(*_aggs(weights)),
        what=f"missingness patterns of {', '.join(columns)}",
        limit=_PATTERN_LIMIT,
    )
    bits = [int(b) for b in got[PATTERN].to_list()]
    counts = [int(c) for c in got[_COUNT].to_list()]
    sums = [float(w) for w in got[_WEIGHT].to_list()] if weights is not None else [float(c) for c in counts]
    return sorted(zip(bits, counts, sums, strict=True))


def attach_wildcard_sizes(
    keyed: nw.LazyFrame[Any],
    columns: Sequence[str],
    *,
    size: str,
    weights: str | None = None,
    weight_sum: str | None = None,
) -> nw.LazyFrame[Any]:
    """Each row's wildcard group size (a missing cell matches any value; see
    :func:`sdckit.risk.wildcard_group_sizes`) as ``size``, and the sum of ``weights`` over the
    compatible rows as ``weight_sum``.

    Each pattern A's rows are counted once on the keys present in A (one ``group_by`` over the
    rows). For the rows of pattern B and each distinct union U = A | B: those cell counts of the
    patterns A with A | B = U, summed on the keys present in neither (a ``group_by`` of O(groups)
    rows), left-joined to B's rows on those keys, and the counts added up; a U with no key present adds the patterns' row
    counts as literals. The pieces of the patterns are concatenated: the same rows, in another order.
    """
    p = len(columns)
    full = (1 << p) - 1
    patterns = missing_patterns(keyed, columns, weights)
    # one pass over the rows per pattern A: its cells on the keys present in A; every pair (A, B)
    # then coarsens these (O(groups) rows) instead of scanning the rows again
    cells: dict[int, nw.LazyFrame[Any]] = {}
    for a, _, _ in patterns:
        present_a = [key_name(j) for j in range(p) if not (a >> j) & 1]
        if present_a:
            cells[a] = joinable(keyed.filter(nw.col(PATTERN) == a).group_by(*present_a).agg(*_aggs(weights)))
    pieces = []
    for b, _, _ in patterns:
        rows = keyed.filter(nw.col(PATTERN) == b)
        by_union: dict[int, list[int]] = {}
        for a, _, _ in patterns:
            by_union.setdefault(a | b, []).append(a)
        size_terms: list[nw.Expr] = []
        weight_terms: list[nw.Expr] = []
        literal_n, literal_w = 0, 0.0
        for t, (union, members) in enumerate(sorted(by_union.items())):
            present = [key_name(j) for j in range(p) if not (union >> j) & 1]
            if union == full or not present:
                literal_n += sum(n for a, n, _ in patterns if a in members)
                literal_w += sum(w for a, _, w in patterns if a in members)
                continue
            cn, cw = f"__sdc_c{t}", f"__sdc_cw{t}"
            aggs = [nw.col(_COUNT).sum().alias(cn)]
            if weights is not None:
                aggs.append(nw.col(_WEIGHT).sum().alias(cw))
            kept = [_WEIGHT] if weights is not None else []
            parts = [cells[a].select(*present, _COUNT, *kept) for a in members]
            stacked = parts[0] if len(parts) == 1 else nw.concat(parts, how="vertical")
            counts = joinable(stacked.group_by(*present).agg(*aggs))
            rows = rows.join(counts, on=present, how="left")
            size_terms.append(nw.col(cn).fill_null(0))
            if weights is not None:
                weight_terms.append(nw.col(cw).fill_null(0.0))
        total_n: nw.Expr = nw.lit(literal_n, dtype=nw.Int64)
        for e in size_terms:
            total_n = total_n + e
        new = [total_n.cast(nw.Int64).alias(size)]
        if weights is not None and weight_sum is not None:
            total_w: nw.Expr = nw.lit(literal_w, dtype=nw.Float64)
            for e in weight_terms:
                total_w = total_w + e
            new.append(total_w.cast(nw.Float64).alias(weight_sum))
        pieces.append(rows.with_columns(*new))
    names = [*keyed.collect_schema().names(), size, *([weight_sum] if weights is not None and weight_sum else [])]
    if not pieces:  # no rows: the columns, typed
        empty = [nw.lit(0, dtype=nw.Int64).alias(size)]
        if weights is not None and weight_sum is not None:
            empty.append(nw.lit(0.0, dtype=nw.Float64).alias(weight_sum))
        return keyed.with_columns(*empty)
    pieces = [piece.select(*names) for piece in pieces]
    return pieces[0] if len(pieces) == 1 else nw.concat(pieces, how="vertical")


def with_group_sizes(data: DataSource, columns: Sequence[str] | str, *, name: str = "group_size") -> Any:
    """The lazy frame ``data`` with each record's group size on ``columns`` as the column ``name``.

    f_k, the records sharing the record's values on ``columns`` (itself included; a missing cell is a
    value of its own, as :func:`sdckit.risk.exposure` counts it). One ``group_by`` and one join run
    where the rows live; the result is a lazy frame of the same kind (polars LazyFrame, DuckDB, Dask,
    Spark) with the rows in the engine's order. For a frame in memory, use
    :func:`sdckit.risk.record_risk` or :func:`sdckit.risk.individual_risk`.

    Examples
    --------
    >>> import polars as pl
    >>> lf = pl.LazyFrame({"sex": ["m", "m", "f", None], "age": [30, 30, 30, 30]})
    >>> with_group_sizes(lf, ["sex", "age"]).collect().sort("sex", nulls_last=True)["group_size"].to_list()
    [1, 2, 2, 1]
    """
    frame = lazy_frame(data, "with_group_sizes")
    cols = check_columns(frame, columns)
    original = frame.collect_schema().names()
    check_new_columns(original, [name])
    keyed = attach_group_counts(with_keys(frame, cols), len(cols), size=name)
    return drop_keys(keyed, original, [name]).to_native()


def with_wildcard_sizes(
    data: DataSource,
    columns: Sequence[str] | str | None = None,
    *,
    name: str = "wildcard_size",
    weights: str | None = None,
    weight_name: str = "wildcard_weight",
) -> Any:
    """The lazy frame ``data`` with each record's wildcard group size as the column ``name``.

    The number of records compatible with the record, a missing cell (null, or NaN in a float
    column) matching any value, exactly as :func:`sdckit.risk.wildcard_group_sizes` counts in memory;
    with ``weights``, also the sum of the weights over the compatible records (F_k of sdcMicro's
    ``freqCalc``) as ``weight_name``. The engine runs it: one ``group_by`` of the missingness
    patterns (one row per pattern reaches the driver), then for each pattern B one ``group_by`` and
    one left join per distinct union with another pattern, the pieces concatenated. Cost: P pieces
    and at most P^2 joins for P patterns (1 without missing cells). The result is a lazy frame of the
    same kind with the rows in the engine's order.

    Examples
    --------
    >>> import polars as pl
    >>> lf = pl.LazyFrame({"id": [0, 1, 2, 3], "sex": ["m", "m", "f", None], "age": [30, 40, 30, 30]})
    >>> with_wildcard_sizes(lf, ["sex", "age"]).collect().sort("id")["wildcard_size"].to_list()
    [2, 1, 2, 3]
    """
    frame = lazy_frame(data, "with_wildcard_sizes")
    cols = check_columns(frame, columns)
    original = frame.collect_schema().names()
    if weights is not None:
        check_weight_column(frame, weights, cols)
    added = [name, *([weight_name] if weights is not None else [])]
    check_new_columns(original, added)
    out = attach_wildcard_sizes(with_keys(frame, cols, weights), cols, size=name, weights=weights, weight_sum=weight_name)
    return drop_keys(out, original, added).to_native()


def check_new_columns(existing: Sequence[str], added: Sequence[str]) -> None:
    taken = [a for a in added if a in existing]
    if taken:
        raise ParameterError(
            f"the frame already has a column {taken[0]!r}; choose another name for the new column (name=...)."
        )
