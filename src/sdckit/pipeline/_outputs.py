"""What a pipeline reads and writes, checked before it runs (nothing it reads is ever written over)."""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from sdckit._io import check_outputs
from sdckit.errors import ConfigError
from sdckit.pipeline._config import AnonymizeStep, PipelineConfig

__all__ = [
    "RELEASE_MARKER",
    "check_pipeline_outputs",
    "check_release_directory",
    "is_release_directory",
    "pipeline_inputs",
    "pipeline_outputs",
]


def pipeline_outputs(config: PipelineConfig) -> list[Path]:
    """Every file a run writes: the data file, the report page and its JSON sidecar."""
    from sdckit.report import Report

    outs = [Path(config.output_data)] if config.output_data else []
    if config.output_report:
        outs.extend(Report.outputs(config.output_report))
    return outs


def _files_in(value: Any) -> Iterator[str]:
    """Strings in a step's options that name an existing file (a hierarchy, a transition matrix)."""
    if isinstance(value, str):
        if value and len(value) < 4096 and os.path.isfile(value):
            yield value
    elif isinstance(value, dict):
        for v in value.values():
            yield from _files_in(v)
    elif isinstance(value, (list, tuple)):
        for v in value:
            yield from _files_in(v)


def pipeline_inputs(config: PipelineConfig, extra: Sequence[str | os.PathLike[str] | None] = ()) -> list[str]:
    """Every file a run reads: the input, ``extra`` (the pipeline file itself), files named by steps."""
    files = [str(p) for p in extra if p is not None]
    if config.input is not None and not config.uses_adult:
        files.append(config.input)
    for step in config.steps:
        if isinstance(step, AnonymizeStep):
            files.extend(_files_in(step.params))
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
