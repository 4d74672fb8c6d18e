"""The release pipeline where the rows live: a polars LazyFrame, a Dask or a Spark frame.

:func:`run_distributed` builds the release lazily: the masking steps that run distributed
(``recode``, ``top_code``, ``pram`` where their estimators take a lazy frame, ``local_suppression``
with decoys in counted passes, ``suppress``), only the columns with a releasing role, and the rows
in random order (a random key per row drawn from OS entropy, then a distributed sort on it).
Nothing is computed until :func:`write_distributed`: the workers write the release as a directory
of Parquet part files (to a temporary directory beside the target), the written files are read
back and measured (k-anonymity of identical rows, a missing cell a value of its own,
as the in-memory headline ``missing_semantics: value``) by the engine itself (the workers read the
files back; only rows of figures reach the driver), and the directory is moved into place only
when that measure is within budget; over budget, it is deleted and nothing is written.

Steps that need every row in one place refuse with the step named and the alternative.
"""

from __future__ import annotations

import json
import math
import secrets
import shutil
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import narwhals as nw
import numpy as np
import polars as pl

from sdckit._io._optional import require
from sdckit._scale import engine_of, local_spark
from sdckit._scale._collect import collect_small
from sdckit.errors import ConfigError
from sdckit.pipeline._config import PipelineConfig
from sdckit.pipeline._linked import LinkedPlan, link_by
from sdckit.pipeline._outputs import RELEASE_MARKER, check_release_directory, is_release_directory
from sdckit.pipeline._resolve import declared_roles
from sdckit.pipeline._roles import Roles
from sdckit.pipeline._steps import STEPS, StepContext, StepLog
from sdckit.risk import measure_lazy_release
from sdckit.risk._measures._linked import uncertainty_from_entropies

__all__ = ["DistributedResult", "WrittenRelease", "measure_parquet", "run_distributed", "write_distributed"]

_KEY = "__sdc_order"

_REFUSED = {kind: cls.in_memory_only for kind, cls in STEPS.items() if cls.in_memory_only is not None}
"""Why each step that needs every row in one place does not run on a distributed frame, and what to do
(each step class declares it as ``in_memory_only``)."""


@dataclass(frozen=True)
class DistributedResult:
    """A pipeline run on a lazy or distributed frame, not yet computed."""

    config: PipelineConfig
    engine: str
    """``polars`` (a LazyFrame), ``dask`` or ``spark``."""
    release: Any
    """The release as a lazy frame of the input's kind: the released columns, masked, rows shuffled."""
    steps: tuple[StepLog, ...]
    """A :class:`~sdckit.pipeline.StepLog` per step (local suppression's ``n_passes`` among its details)."""
    roles: Roles
    not_released: dict[str, str] = field(default_factory=dict)
    shuffled: bool = True
    linked: LinkedPlan | None = None
    """The ``keep`` columns that reveal a key (declared, or found from grouped aggregates of the
    frame), counted as quasi-identifiers by the steps and the measure, as in memory."""

    @property
    def not_measured(self) -> tuple[str, ...]:
        """What the in-memory run measures on this release and a distributed run does not: with
        columns released beside the keys, the posterior on a person's row given them, and the
        attacks an outsider runs (both need every row in one place). Said in the console and the
        sidecar, so no figure claims them."""
        beside = [c for c in self.roles.released(_columns(self.release)) if c not in self.roles.quasi_identifiers]
        if not beside:
            return ()
        return (
            f"the posterior on a person's row given the columns beside the keys ({', '.join(beside)})",
            "the attacks an outsider runs (singling out, linkability, inference)",
        )


@dataclass(frozen=True)
class WrittenRelease:
    """What :func:`write_distributed` wrote and measured."""

    path: Path | None
    """The release directory (None when refused: nothing written)."""
    files: tuple[Path, ...]
    """Its Parquet part files."""
    measure: dict[str, Any]
    """The written release measured (:func:`measure_parquet`)."""
    refused: bool
    set_aside: Path | None = None
    """An earlier run's release at the same path, renamed ``<name>.stale`` (it is not this release)."""

    @property
    def within_budget(self) -> bool:
        return bool(self.measure["within_budget"])


def _read(config: PipelineConfig, engine: str) -> Any:
    """The input file as a lazy frame of ``engine`` (Parquet or CSV), in ``partitions`` partitions."""
    if config.input is None or config.uses_adult:
        raise ConfigError(
            f"{config.source}: engine: {engine}: give the input as a Parquet or CSV file (or a directory of Parquet "
            "files); the bundled Adult data is small: leave engine out to run it in memory."
        )
    path = Path(config.input)
    suffix = path.suffix.lower()
    fmt = "parquet" if path.is_dir() or suffix in (".parquet", ".pq") else "csv" if suffix in (".csv", ".txt") else None
    if fmt is None:
        raise ConfigError(
            f"{config.source}: input: {path.name!r}: engine: {engine} reads Parquet (a file or a directory of part "
            "files) or CSV; convert the file, or leave engine out to read it in memory."
        )
    parts = config.partitions

    if engine == "dask":
        dd = require("dask.dataframe", extra="scale", what="engine: dask")
        df = dd.read_parquet(str(path)) if fmt == "parquet" else dd.read_csv(str(path))
        return df.repartition(npartitions=parts) if parts else df
    if engine == "spark":
        SparkSession = require("pyspark.sql", extra="scale", what="engine: spark").SparkSession

        spark = SparkSession.getActiveSession() or local_spark("sdckit-pipeline")
        reader = spark.read
        sdf = reader.parquet(str(path)) if fmt == "parquet" else reader.csv(str(path), header=True, inferSchema=True)
        return sdf.repartition(parts) if parts else sdf
    return pl.scan_parquet(str(path / "*.parquet") if path.is_dir() else str(path)) if fmt == "parquet" else pl.scan_csv(str(path))


def _engine(data: Any) -> str:
    engine = engine_of(data)
    if engine is not None:
        return engine
    native = data.to_native() if isinstance(data, (nw.DataFrame, nw.LazyFrame)) else data
    if isinstance(native, pl.LazyFrame):
        return "polars"
    raise ConfigError(
        f"run_distributed takes a polars LazyFrame, a Dask or a Spark DataFrame, got {type(native).__name__}; "
        "for a table in memory use run_pipeline."
    )


def _columns(data: Any) -> list[str]:
    return list(nw.from_native(data).collect_schema().names())


def _roles(config: PipelineConfig, columns: Sequence[str]) -> Roles:
    if not config.quasi_identifiers:
        raise ConfigError(
            f"{config.source}: quasi_identifiers: name the columns an attacker may know (on a distributed frame they "
            "are not guessed: guessing reads every column's values), e.g. quasi_identifiers: [age, sex, region]."
        )
    roles = declared_roles(config)
    for key in ("quasi_identifiers", "numeric", "sensitive", "weight", "identifiers", "keep", "categorical"):
        for c in getattr(config, key) or ():
            if c not in columns:
                raise ConfigError(f"{config.source}: {key}: column {c!r} is not in the data. The data has: {', '.join(columns[:15])}.")
    return roles


def _shuffle(data: Any, engine: str, seed: int) -> Any:
    """The rows in random order: a random 63-bit key per row (from ``seed``), then a sort on it."""
    if engine == "polars":
        names = data.collect_schema().names()
        return data.with_columns(pl.int_range(pl.len(), dtype=pl.Int64).shuffle(seed=seed).alias(_KEY)).sort(_KEY).select(names)
    if engine == "spark":
        from pyspark.sql import functions as F  # noqa: N812 - the usual name

        return data.withColumn(_KEY, F.rand(seed)).orderBy(_KEY).drop(_KEY)
    # lazy: the frames extra
    import pandas as pd

    names = list(data.columns)

    def keyed(pdf: Any, partition_info: dict[str, Any] | None = None) -> Any:
        number = int(partition_info["number"]) if partition_info else 0
        rng = np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(number,)))
        return pdf.assign(**{_KEY: rng.integers(0, 2**63 - 1, size=len(pdf), dtype=np.int64)})

    meta = data._meta.assign(**{_KEY: pd.Series(dtype="int64")})
    return data.map_partitions(keyed, meta=meta).sort_values(_KEY)[names]


def run_distributed(config: PipelineConfig, data: Any = None) -> DistributedResult:
    """Run ``config`` on a lazy or distributed frame; nothing is computed yet (see :func:`write_distributed`).

    ``data`` is a polars LazyFrame, a Dask or a PySpark DataFrame; None reads ``config.input`` with
    ``config.engine`` (Parquet or CSV, in ``config.partitions`` partitions). Runs, lazily: the steps
    in order (``suppress``, ``recode``/``top_code``/``pram`` where their estimators run lazily,
    ``local_suppression`` with decoys, which counts groups in distributed passes), keeps the columns
    with a releasing role, and shuffles the rows (unless ``shuffle_rows: false``). Steps that need
    every row in one place (``microaggregate``, ``noise``, ``rank_swap``, ``correlated_noise``, and
    ``local_suppression`` with ``method: sdcmicro``) raise a :class:`~sdckit.errors.ConfigError`
    naming the step and the alternative.
    """
    if data is None:
        if config.engine == "polars":
            raise ConfigError(
                f"{config.source}: run_distributed reads the input with engine: dask or spark; give the frame, "
                "or set engine."
            )
        data = _read(config, config.engine)
    data = data.to_native() if isinstance(data, (nw.DataFrame, nw.LazyFrame)) else data
    engine = _engine(data)
    columns = _columns(data)
    _roles(config, columns)  # every named column is in the data
    # keep columns that reveal a key count as keys (U from grouped aggregates, one row each at the driver)
    entropies: dict[tuple[str, ...], tuple[float, int, int]] = {}  # a key's and a column's: one pass each
    config, linked = link_by(config, lambda q, c: _uncertainty(data, q, c, entropies))
    if linked.columns and config.linked_as == "ghost":
        raise ConfigError(
            f"{config.source}: linked_as: ghost compares every row before and after the steps, in memory; on "
            f"engine: {engine} use linked_as: key (the default: {', '.join(linked.names)} counted as "
            "quasi-identifiers), or engine: polars."
        )
    roles = _roles(config, columns)
    qis = list(roles.quasi_identifiers)
    logs: list[StepLog] = []
    base = config.step_seed
    for i, step in enumerate(config.steps):
        refusal = step.refusal(engine)
        if refusal is not None:
            raise ConfigError(f"{config.source}: steps[{i}].{step.kind}{refusal}")
    for i, step in enumerate(config.steps):
        ctx = StepContext(
            source=config.source, index=i, k=config.k, budget=config.budget, bound_method=config.bound_method,
            quasi_identifiers=tuple(qis), numeric=tuple(config.numeric or ()), categorical=roles.categorical,
            seed=None if base is None else base + i, engine=engine,
        )
        data, log = step.run(data, ctx)
        columns = [c for c in columns if c in _columns(data)]
        logs.append(log)
    released = list(roles.released(columns))
    not_released = roles.not_released(_columns(data))
    data = nw.from_native(data).select(released).to_native()
    if config.shuffle_rows:
        order_seed = secrets.randbits(63) if base is None else base + len(config.steps)
        data = _shuffle(data, engine, order_seed)
    return DistributedResult(
        config, engine, data, tuple(logs), roles, not_released, bool(config.shuffle_rows), linked
    )


def _uncertainty(data: Any, key: str, column: str, h: dict[tuple[str, ...], tuple[float, int, int]]) -> float:
    """U(key | column) from grouped aggregates computed where the rows live: per grouping (the key,
    the column, the pair) one row reaches the driver (the entropy's sum of n log n, the distinct
    values, the rows), however many distinct pairs there are; ``h`` keeps each grouping's figures
    (a key's and a column's are computed once for the run)."""
    for cols in ((key,), (column,), (key, column)):
        if cols in h:
            continue
        sizes = nw.from_native(data).group_by(*cols).agg(nw.len().alias("n"))
        row = collect_small(
            sizes.select(
                (nw.col("n") * nw.col("n").log()).sum().alias("nlogn"), nw.len().alias("d"), nw.col("n").sum().alias("n")
            ),
            what=f"the entropy of {', '.join(cols)}",
        ).rows()[0]
        nlogn, d, n = float(row[0] or 0.0), int(row[1]), int(row[2] or 0)
        # H = log2 n - sum(n_i log2 n_i) / n
        h[cols] = ((math.log(n) - nlogn / n) / math.log(2) if n else 0.0, d, n)
    (h_q, d_q, n), (h_c, d_c, _), (h_qc, _, _) = h[(key,)], h[(column,)], h[(key, column)]
    return uncertainty_from_entropies(h_q, h_c, h_qc, n_key_values=d_q, n_column_values=d_c, n=n)


def _scan(path: Path, engine: str) -> Any:
    """The written release read back lazily by ``engine`` (its workers read the part files)."""
    if engine == "dask":
        # lazy: the scale extra
        import dask.dataframe as dd

        return dd.read_parquet(str(path))
    if engine == "spark":
        # lazy: the scale extra
        from pyspark.sql import SparkSession

        spark = SparkSession.getActiveSession()
        if spark is None:  # pragma: no cover - the run that wrote the files has a session
            raise ConfigError("measuring the written release on Spark needs the active SparkSession.")
        return spark.read.parquet(str(path))
    return pl.scan_parquet(str(path / "*.parquet") if path.is_dir() else str(path))


def measure_parquet(
    path: str | Path, quasi_identifiers: Sequence[str], *, k: int, budget: float,
    weight: str | None = None, sensitive: Sequence[str] = (), missing_semantics: str = "value",
    engine: str = "polars",
) -> dict[str, Any]:
    """The written release measured where it lies: read back lazily by ``engine`` (``polars``, a
    streaming scan; ``dask``; ``spark``) and measured there by :func:`sdckit.risk.measure_lazy_release`.

    Returns its figures as a dict: ``n_rows``, ``n_groups`` (distinct released rows),
    ``k_anonymity`` (the smallest group), ``exposure_at_k`` (share of rows in groups smaller than
    k), ``n_below_k``, ``n_unique``, ``n_missing_cells``, ``within_budget`` (exposure <= budget);
    with ``wildcard``, ``exposure_missing_as_value``; with a weight, the weighted share
    ``population_exposure_at_k`` and ``expected_reidentifications``; with sensitive columns,
    ``l_diversity`` (per column the fewest distinct values in a group of identical rows).
    """
    m = measure_lazy_release(
        _scan(Path(path), engine), quasi_identifiers, k=k, budget=budget, weights=weight,
        sensitive=sensitive, missing_semantics=missing_semantics,
    )
    return _measure_dict(m)


def _measure_dict(m: Any) -> dict[str, Any]:
    """A :class:`~sdckit.risk.ReleaseMeasure` of the written files as the dict of the release summary."""
    out: dict[str, Any] = {
        "n_rows": m.n, "n_groups": m.n_groups, "k": m.k, "budget": m.budget, "missing_semantics": m.missing_semantics,
        "n_missing_cells": m.n_missing_cells,
    }
    if m.missing_semantics == "wildcard":
        out["exposure_missing_as_value"] = m.exposure_missing_as_value
    out.update(
        k_anonymity=m.k_anonymity, n_below_k=m.n_below_k, n_unique=m.n_unique, exposure_at_k=m.exposure_at_k,
        within_budget=m.within_budget,
    )
    if m.individual_risk is not None:
        out["population_exposure_at_k"] = m.population_exposure_at_k
        out["expected_reidentifications"] = m.individual_risk["expected_reidentifications"]
    if m.l_diversity is not None:
        out["l_diversity"] = {s: v["l"] for s, v in m.l_diversity.items()}
    return out


def _write(release: Any, engine: str, folder: Path) -> None:
    if engine == "dask":
        release.to_parquet(str(folder), write_index=False)
    elif engine == "spark":
        release.write.parquet(str(folder))
    else:
        folder.mkdir(parents=True)
        release.sink_parquet(str(folder / "part-0.parquet"))


def write_distributed(result: DistributedResult) -> WrittenRelease:
    """Write the release as Parquet part files (by the workers), measure the files, keep them only within budget.

    The release is written to a temporary directory beside ``output_data``, scanned and measured
    (:func:`measure_parquet`); within budget (or with ``allow_over_budget``) it replaces
    ``output_data`` (an earlier release directory of sdckit's, never anything else), otherwise it is
    deleted, and an earlier release at that path is renamed ``<name>.stale``. The figures are also
    written to ``_sdckit_release.json`` in the directory and, with ``output_report``, to its JSON
    sidecar (no HTML report is built from a distributed run).
    """
    cfg = result.config
    target = check_release_directory(cfg)
    target.parent.mkdir(parents=True, exist_ok=True)
    temp = target.parent / f".{target.name}.sdckit-{secrets.token_hex(4)}"
    weight = result.roles.weight[0] if result.roles.weight else None
    try:
        _write(result.release, result.engine, temp)
        measure = measure_parquet(
            temp, result.roles.quasi_identifiers, k=cfg.k, budget=cfg.budget, weight=weight,
            sensitive=list(result.roles.sensitive), missing_semantics=cfg.missing_semantics, engine=result.engine,
        )
        summary = {"measure": measure, "engine": result.engine, "rows_shuffled": result.shuffled,
                   "steps": [s.to_dict() for s in result.steps],
                   "linked": result.linked.to_dict() if result.linked is not None else None,
                   "not_measured": list(result.not_measured)}
        refused = not measure["within_budget"] and not cfg.allow_over_budget
        set_aside = None
        if refused:
            shutil.rmtree(temp)
            if is_release_directory(target):
                set_aside = target.with_name(target.name + ".stale")
                if set_aside.exists() and not is_release_directory(set_aside):  # not ours: never removed
                    set_aside = target.with_name(f"{target.name}.stale-{secrets.token_hex(4)}")
                elif set_aside.exists():
                    shutil.rmtree(set_aside)
                target.rename(set_aside)
            path = None
            files: tuple[Path, ...] = ()
        else:
            (temp / RELEASE_MARKER).write_text(json.dumps(summary, indent=2, default=str))
            if is_release_directory(target):
                shutil.rmtree(target)
            temp.rename(target)
            path = target
            files = tuple(sorted(target.glob("*.parquet")))
    except BaseException:
        if temp.exists():
            shutil.rmtree(temp, ignore_errors=True)
        raise
    if cfg.output_report:
        sidecar = Path(cfg.output_report).with_suffix(".json")
        sidecar.parent.mkdir(parents=True, exist_ok=True)
        sidecar.write_text(json.dumps({**summary, "refused": refused, "written": str(path) if path else None},
                                      indent=2, default=str))
    return WrittenRelease(path, files, measure, refused, set_aside)
