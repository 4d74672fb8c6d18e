"""What the four steps of :mod:`sdckit.anonymize` share (``recode``, ``top_code``,
``local_suppression``, ``pram``): each option is a keyword of its estimator's constructor, declared
once as a field; the pipeline fills ``k``, ``columns`` and ``random_state`` from the run when the
step leaves them out. The estimators run in memory and, where they take a lazy frame, where the rows
live."""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any, ClassVar

import narwhals as nw
import numpy as np
import polars as pl

from sdckit._scale import engine_of
from sdckit.errors import ConfigError, SdcError
from sdckit.pipeline._steps._base import Step, StepContext, StepLog

__all__ = ["AnonymizeOptions", "change_text", "changes_of", "files_in"]


def changes_of(raw: Any) -> dict[str, dict[str, int]]:
    """An estimator's ``changes_`` as ``{column: {"cells_changed": n, ...}}`` (the agreed contract: a dict
    of counts per column); a bare count per column is read as its cells changed."""
    out: dict[str, dict[str, int]] = {}
    for column, value in dict(raw or {}).items():
        if isinstance(value, dict):
            counts = {str(key): int(n) for key, n in value.items()}
            counts.setdefault("cells_changed", 0)
        else:
            counts = {"cells_changed": int(value)}
        out[str(column)] = counts
    return out


def change_text(column: str, counts: dict[str, int]) -> str:
    """``age 32,561 (64 values merged)``: a column's cells changed, and what else its estimator counted."""
    extra = []
    for key in ("values_merged", "cells_redacted", "outside_breaks"):
        n = counts.get(key, 0)
        if n:
            what = key.replace("_", " ") if key != "outside_breaks" else "outside the breaks, now missing"
            extra.append(f"{n:,} {what if n != 1 else what.replace('values', 'value').replace('cells', 'cell')}")
    return f"{column} {counts['cells_changed']:,}" + (f" ({', '.join(extra)})" if extra else "")


def files_in(value: Any) -> Iterator[str]:
    """Strings in a step's options that name an existing file (a hierarchy, a transition matrix)."""
    if isinstance(value, str):
        if value and len(value) < 4096 and os.path.isfile(value):
            yield value
    elif isinstance(value, dict):
        for v in value.values():
            yield from files_in(v)
    elif isinstance(value, (list, tuple)):
        for v in value:
            yield from files_in(v)


def _plain(value: Any) -> Any:
    """Options as the pipeline file wrote them: tuples back to lists, mappings to dicts."""
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    return value


def _lazy_engine(data: Any) -> str | None:
    """``polars`` (a LazyFrame), ``dask`` or ``spark``; None for a frame in memory."""
    engine = engine_of(data)
    if engine is not None:
        return engine
    return "polars" if isinstance(data, pl.LazyFrame) else None


class AnonymizeOptions(Step):
    """A step whose options are the constructor keywords of an :mod:`sdckit.anonymize` estimator.

    Options left out are not passed (the estimator's defaults apply), except those the run fills:
    ``k`` (the pipeline's), ``random_state`` (the step's seed) and, per step, ``columns``.
    """

    estimator: ClassVar[type]
    """The estimator class (its constructor's keywords are the step's options)."""
    filled: ClassVar[tuple[str, ...]] = ()
    """Constructor keywords the run fills when the step leaves them out."""
    pipeline_only: ClassVar[tuple[str, ...]] = ()
    """Options that are not constructor keywords (none for these steps)."""

    @property
    def params(self) -> dict[str, Any]:
        """The options given (as in the pipeline file; those left out are not listed)."""
        return {name: _plain(getattr(self, name)) for name in type(self).model_fields if name in self.model_fields_set
                and name not in self.internal}

    def options(self) -> dict[str, Any]:
        return self.params

    def named_files(self) -> tuple[str, ...]:
        return tuple(files_in(self.params))

    def named_columns(self) -> tuple[str, ...]:
        cols = self.params.get("columns")
        if isinstance(cols, str):
            return (cols,)
        if isinstance(cols, (list, tuple)):
            return tuple(str(c) for c in cols)
        if isinstance(cols, dict):
            return tuple(str(c) for c in cols)
        return ()

    def fill(self, ctx: StepContext, columns: list[str]) -> dict[str, Any]:
        """The keywords the run fills (``columns`` are the frame's), before those the step gives."""
        return {"k": ctx.k, "random_state": ctx.seed}

    def estimator_params(self, ctx: StepContext, columns: list[str]) -> dict[str, Any]:
        """The estimator's keywords: the options given, then those the run fills for what is left out."""
        params = self.params
        for name, value in self.fill(ctx, columns).items():
            if name in self.filled and name not in params:
                params[name] = value
        return params

    def describe(self, total: int, parts: str, params: dict[str, Any], ctx: StepContext) -> str:
        """The log's sentence in memory."""
        name = self.estimator.__name__
        return f"{name} changed {total:,} cell(s): {parts}." if total else f"{name} changed no cell."

    def apply(self, frame: Any, ctx: StepContext) -> tuple[Any, StepLog]:
        if ctx.engine is not None:
            return self._apply_lazy(frame, ctx)
        where = f"{ctx.source}: steps[{ctx.index}].{self.kind}"
        params = self.estimator_params(ctx, list(frame.columns))
        try:
            estimator = self.estimator(**params)
            out = estimator.fit_transform(frame)
        except SdcError as err:
            raise ConfigError(f"{where}: {err}") from None
        changes = changes_of(getattr(estimator, "changes_", None))
        total = sum(c["cells_changed"] for c in changes.values())
        changed = tuple(c for c, n in changes.items() if n["cells_changed"]) or self.named_columns()
        parts = "; ".join(change_text(c, n) for c, n in changes.items() if n["cells_changed"])
        what = self.describe(total, parts, params, ctx)
        if not isinstance(out, pl.DataFrame):  # pragma: no cover - the estimators return the input's frame type
            out = pl.DataFrame(out)
        details: dict[str, Any] = {"params": dict(params), "changes": changes, "cells_changed": total}
        details.update(self.fitted_details(estimator))
        transition = getattr(estimator, "transition_", None)
        if isinstance(transition, dict):  # PRAM: the matrices are published with the release
            details["transition_matrices"] = {
                str(c): {"values": [str(v) for v in values], "matrix": np.asarray(p, dtype=float).tolist()}
                for c, (values, p) in transition.items()
            }
        return out, StepLog(self.kind, changed, details, what)

    def fitted_details(self, estimator: Any) -> dict[str, Any]:
        """What the fitted estimator adds to the log's details (in memory); nothing by default."""
        return {}

    def describe_lazy(self, total: int, parts: str, params: dict[str, Any], estimator: Any, ctx: StepContext) -> str:
        """The log's sentence where the rows live."""
        return f"{self.estimator.__name__} changed {total:,} cell(s)" + (f": {parts}." if parts else ".")

    def lazy_details(self, estimator: Any) -> dict[str, Any]:
        """Figures of a distributed run beside the changes (local suppression's passes)."""
        return {}

    def _apply_lazy(self, data: Any, ctx: StepContext) -> tuple[Any, StepLog]:
        where = f"{ctx.source}: steps[{ctx.index}].{self.kind}"
        engine = ctx.engine
        params = self.estimator_params(ctx, list(nw.from_native(data).collect_schema().names()))
        try:
            estimator = self.estimator(**params)
            out = estimator.fit_transform(data)
        except SdcError as err:
            raise ConfigError(
                f"{where}: on a {engine} frame: {err} Run this pipeline in memory (leave engine out) if the step cannot "
                "run where the rows live."
            ) from None
        if _lazy_engine(out) != engine:
            raise ConfigError(
                f"{where}: {self.estimator.__name__} gave back {type(out).__name__}, not a lazy {engine} frame: it cannot "
                "run where the rows live in this build. Leave the step out, or run the pipeline in memory (leave engine out)."
            )
        changes = changes_of(getattr(estimator, "changes_", None))
        total = sum(c["cells_changed"] for c in changes.values())
        parts = "; ".join(change_text(c, n) for c, n in changes.items() if n["cells_changed"])
        details: dict[str, Any] = {"params": {k: v for k, v in params.items() if k != "random_state"},
                                   "changes": changes, "cells_changed": total, **self.lazy_details(estimator)}
        what = self.describe_lazy(total, parts, params, estimator, ctx)
        changed = tuple(c for c, n in changes.items() if n["cells_changed"])
        return out, StepLog(self.kind, changed, details, what)
