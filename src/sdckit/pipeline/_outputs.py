"""What a pipeline reads and writes, checked before it runs (nothing it reads is ever written over)."""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any, Protocol

import polars as pl

from sdckit._io import check_outputs, read_back_options, read_data, write_table
from sdckit._io._outputs import Staging, report_files, set_aside, staged_outputs
from sdckit._io._survey import SurveyLabels, declared_as_missing
from sdckit._io._write import check_writable_format
from sdckit.errors import ConfigError, OutputError
from sdckit.pipeline._config import PipelineConfig
from sdckit.pipeline._result import PipelineResult
from sdckit.risk._measures._release import ReleaseMeasure, measure_release

__all__ = [
    "RELEASE_MARKER",
    "check_pipeline_outputs",
    "check_release_directory",
    "is_release_directory",
    "pipeline_inputs",
    "pipeline_outputs",
    "write_outputs",
]


def pipeline_outputs(config: PipelineConfig) -> list[Path]:
    """Every file a run writes: the data file, the report page and its JSON sidecar."""
    outs = [Path(config.output_data)] if config.output_data else []
    if config.output_report:
        outs.extend(report_files(config.output_report))
    return outs


def pipeline_inputs(config: PipelineConfig, extra: Sequence[str | os.PathLike[str] | None] = ()) -> list[str]:
    """Every file a run reads: the input, ``extra`` (the pipeline file itself), files named by steps."""
    files = [str(p) for p in extra if p is not None]
    if config.input is not None and not config.uses_adult:
        files.append(config.input)
    for step in config.steps:
        files.extend(step.named_files())
    return files


RELEASE_MARKER = "_sdckit_release.json"
"""Written into every release directory of a distributed run (readers skip files starting with ``_``):
the figures of the written release, and the proof that sdckit wrote the directory, so a later run
may replace it."""


def is_release_directory(path: Path) -> bool:
    """Whether ``path`` is a release directory sdckit wrote (it holds :data:`RELEASE_MARKER`)."""
    return path.is_dir() and (path / RELEASE_MARKER).is_file()


def check_release_directory(
    config: PipelineConfig, inputs: Sequence[str | os.PathLike[str] | None] = ()
) -> Path:
    """The data output of a distributed run (a directory of part files), refused when it is an input
    or exists and is not a release sdckit wrote."""
    if not config.output_data:
        raise ConfigError(
            f"{config.source}: output_data: name the directory to write the release to, e.g. out/release.parquet."
        )
    target = Path(config.output_data)
    for given in (config.input, *inputs):
        if given and Path(given).resolve() == target.resolve():
            raise ConfigError(f"{config.source}: output_data: {target} is an input of the run; choose another path.")
    if target.exists() and not is_release_directory(target):
        raise ConfigError(
            f"{config.source}: output_data: {target} exists and is not a release sdckit wrote; choose another path, or "
            "remove it yourself."
        )
    return target


def check_pipeline_outputs(config: PipelineConfig, extra_inputs: Sequence[str | os.PathLike[str] | None] = ()) -> None:
    """Refuse, before any work, an output that is an input or cannot be written (see :func:`sdckit._io.check_outputs`).

    With ``engine: dask`` or ``spark`` the data output is a directory of part files
    (:func:`check_release_directory`: never an input, never a directory sdckit did not write).
    """
    outs = pipeline_outputs(config)
    inputs = pipeline_inputs(config, extra_inputs)
    if config.engine != "polars" and config.output_data:
        data = check_release_directory(config, inputs)
        outs = [o for o in outs if o != data]
    check_outputs(outs, inputs, make_folders=True)
    if config.output_data and config.engine == "polars":
        try:
            check_writable_format(config.output_data)
        except OutputError as err:
            raise ConfigError(f"{config.source}: output.data: {err}") from None


class Writable(Protocol):
    """What :func:`write_outputs` writes as the report: an object with ``write(path, stage=...)``
    (a :class:`sdckit.report.Report`)."""

    def write(self, path: str | Path, *, stage: Staging | None = None) -> tuple[Path, Path]: ...


def _measure_written(
    path: Path, config: PipelineConfig, known: pl.DataFrame | None = None, original: pl.DataFrame | None = None,
    labels: SurveyLabels | None = None,
) -> ReleaseMeasure:
    """Measure the data file as written: read back in the format :func:`~sdckit._io.write_table`
    wrote it (:func:`~sdckit._io.read_back_options`), never with the input's reading options, so a
    written ``NA`` or ``-9`` is the value it was and only an empty field is missing."""
    reread = read_data(str(path), **read_back_options(path), labels=config.read.labels).frame.to_native()
    if not isinstance(reread, pl.DataFrame):  # pragma: no cover - paths are read with polars
        reread = pl.DataFrame(reread)
    if labels is not None and labels.declared:  # "don't know" of a recoded age: missing, as in memory
        reread = declared_as_missing(reread, labels)
    return measure_release(
        reread, quasi_identifiers=config.quasi_identifiers or (), k=config.k, budget=config.budget,
        sensitive=config.sensitive or (), missing_semantics=config.missing_semantics, known=known,
        weights=config.weight[0] if config.weight else None, original=original,
        categorical=config.categorical or (), entity=config.household,
    )


def _stated_figures(measure: ReleaseMeasure) -> dict[str, Any]:
    """The figures of a release the report states, to compare the file as written with the release in
    memory: everything but interval disclosure, numeric risk and the fixes (they need the input beside the release)."""
    skipped = ("interval_disclosure", "fixes", "information_loss", "warnings", "numeric_risk", "attacks")
    return {key: value for key, value in measure.to_dict().items() if key not in skipped}


def _same(value: Any) -> str:
    """A figure as comparable text (NaN equals NaN; floats to 12 significant digits, since a sum over
    shuffled rows may differ from the same sum in the input's order in its last bits)."""

    def rounded(v: Any) -> Any:
        if isinstance(v, float):
            return float(f"{v:.12g}")
        if isinstance(v, dict):
            return {key: rounded(x) for key, x in v.items()}
        if isinstance(v, (list, tuple)):
            return [rounded(x) for x in v]
        return v

    return json.dumps(rounded(value), sort_keys=True, default=str)


def write_outputs(
    result: PipelineResult, *, report: Writable | None = None, inputs: Sequence[str | Path] = ()
) -> dict[str, Path]:
    """Write the protected data (unless refused over budget) and ``report``; return what was written.

    ``report`` is any object with ``write(path, stage=...)``, usually
    ``sdckit.report.build_report(result, verified_on=result.data_output)``; None writes no report.
    Every output is checked first (never an input: the data, the pipeline file, a file a step
    reads, or ``inputs``; always writable), then written to temporary files renamed into place
    only when everything succeeded (:func:`sdckit._io.staged_outputs`). The data file is re-read
    and measured again before the report is written: when it measures differently from the
    release in memory nothing is written, so the figures of a written report are those of the
    file as written. An over-budget release (without ``allow_over_budget``) writes no data file,
    only the report, marked not safe, with what would fix it; a data file of an earlier run at the
    output path is renamed ``<name>.stale`` (returned as ``"set_aside"``) so it cannot pass for
    this release.
    """
    written: dict[str, Path] = {}
    cfg = result.config
    check_pipeline_outputs(cfg, [cfg.config_file, *inputs])
    with staged_outputs() as stage:
        path = result.data_output
        if path is not None:
            temp = stage.path(path)
            write_table(result.protected, temp, atomic=False, labels=result.labels, shown=Path(path).name)
            written["data"] = path
            original = result.input_frame
            if original is not None and result.row_order is not None:
                original = original[result.row_order]  # row i of the written file is input row row_order[i]
            again = _measure_written(temp, cfg, result.known, original, result.labels)
            measured = result.release_measure
            if measured is not None and measured.attacks is not None:
                # the attacks ran on these rows in memory (random: not run twice); every other figure checks the file
                again = replace(again, attacks=measured.attacks)
            if measured is not None:
                before, after = _stated_figures(measured), _stated_figures(again)
                differ = next((key for key in before if _same(before[key]) != _same(after[key])), None)
                if differ is not None:
                    raise ConfigError(
                        f"{cfg.source}: the written file {path.name} measures differently from the release in memory "
                        f"({differ} {after[differ]!r} against {before[differ]!r}); it was not written. "
                        "Write Parquet, which keeps every value exactly."
                    )
        if cfg.output_report and report is not None:
            html, sidecar = report.write(cfg.output_report, stage=stage)
            written["report"], written["sidecar"] = html, sidecar
    if cfg.output_data and result.refused:
        moved = set_aside(cfg.output_data)
        if moved is not None:
            written["set_aside"] = moved
    return written
