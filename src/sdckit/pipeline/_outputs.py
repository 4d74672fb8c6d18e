"""What a pipeline reads and writes, checked before it runs (nothing it reads is ever written over)."""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from sdckit._io import check_outputs
from sdckit.pipeline._config import AnonymizeStep, PipelineConfig

__all__ = ["check_pipeline_outputs", "pipeline_inputs", "pipeline_outputs"]


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


def check_pipeline_outputs(config: PipelineConfig, extra_inputs: Sequence[str | os.PathLike[str] | None] = ()) -> None:
    """Refuse, before any work, an output that is an input or cannot be written (see :func:`sdckit._io.check_outputs`).

    With ``engine: dask`` or ``spark`` the data output is a directory of part files, checked by
    :func:`~sdckit.pipeline.write_distributed` (never an input, never a directory sdckit did not write).
    """
    outs = pipeline_outputs(config)
    inputs = pipeline_inputs(config, extra_inputs)
    if config.engine != "polars" and config.output_data:
        data = Path(config.output_data)
        outs = [o for o in outs if o != data]
        for given in inputs:
            if Path(given).resolve() == data.resolve():
                from sdckit.errors import ConfigError

                raise ConfigError(f"{config.source}: output_data: {data} is an input of the run; choose another path.")
    check_outputs(outs, inputs, make_folders=True)
