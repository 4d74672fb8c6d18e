"""The pipeline's input: the file read with the pipeline's reading options (or the bundled Adult data),
and its survey labels; a reading option the input's format ignores is refused."""

from __future__ import annotations

import re
from pathlib import Path

import polars as pl

from sdckit._io import ReadOptions, read_data
from sdckit._io._frames import _format_of
from sdckit._io._survey import SurveyLabels, read_labels
from sdckit.datasets import load_adult
from sdckit.errors import ConfigError, UnreadableInputError
from sdckit.pipeline._config import PipelineConfig, ReadSection

__all__ = ["load_input", "survey_labels"]


def load_input(config: PipelineConfig) -> tuple[pl.DataFrame, str, int]:
    """The input as a polars frame, its name, and how many rows ``missing: drop`` removed."""
    if config.uses_adult:
        return load_adult(), "UCI Adult (bundled, 32,561 rows; Becker & Kohavi 1996, CC BY 4.0)", 0
    assert config.input is not None
    _check_read_applies(config)
    try:
        data = read_data(config.input, missing=config.missing, **config.read.read_kwargs())
    except UnreadableInputError as err:  # its fix in the words of a pipeline file, not of the command line
        if config.source == "the command line":
            raise
        raise UnreadableInputError(f"{config.source}: input: {_pipeline_words(str(err))}") from None
    frame = data.frame
    native = frame.to_native() if not data.is_lazy else frame.collect().to_native()  # type: ignore[union-attr]
    if not isinstance(native, pl.DataFrame):  # pragma: no cover - paths are read with polars
        native = pl.DataFrame(native)
    return native, Path(config.input).name, int(data.n_dropped or 0)


_load = load_input  # the name the app used


def survey_labels(config: PipelineConfig) -> SurveyLabels | None:
    """The input's labels and declared missing values (an SPSS, Stata or SAS file), else None."""
    if config.uses_adult or config.input is None:
        return None
    enc = config.read.encoding
    return read_labels(config.input, labels=config.read.labels, encoding=None if ReadOptions(encoding=enc).is_utf8 else enc)


_READ_APPLIES = {"csv": ("separator", "encoding", "decimal", "na_values"), "tsv": ("separator", "encoding", "decimal",
                 "na_values"), "excel": ("na_values",), "stat": ("encoding", "labels")}
"""The ``read`` options each input format uses (text files all; spreadsheets the missing markers; SPSS,
Stata and SAS files the encoding); Parquet, JSON lines and R files none."""


def _check_read_applies(config: PipelineConfig) -> None:
    """Refuse a reading option the input's format ignores: a ``na_values: ['-9']`` that does not apply
    would leave -9 counted as a value, and the figures would be of other data than the user meant."""

    assert config.input is not None
    default = ReadSection()
    given = [key for key in ReadSection.allowed_keys() if getattr(config.read, key) != getattr(default, key)]
    if not given:
        return
    fmt = _format_of(Path(config.input))
    ignored = [key for key in given if key not in _READ_APPLIES.get(fmt, ())]
    if "labels" in ignored:
        raise ConfigError(
            f"{config.source}: read.labels: {Path(config.input).name!r} has no value labels (read.labels applies to "
            "SPSS, Stata and SAS files); leave read.labels out, or list coded columns under categorical."
        )
    if ignored:
        uses = _READ_APPLIES.get(fmt, ())
        what = f"only {', '.join(f'read.{u}' for u in uses)} applies to it" if uses else "no reading option applies to it"
        raise ConfigError(
            f"{config.source}: read.{ignored[0]}: {Path(config.input).name!r} is not a text file ({what}); leave "
            f"read.{ignored[0]} out, or give a CSV file as input."
        )


def _pipeline_words(message: str) -> str:
    """A reading error's fix in the words of a pipeline file: ``--separator ';' (separator=';' in
    Python)`` -> ``read: {separator: ';'}``."""
    message = re.sub(r" \((?:separator|encoding|decimal)=[^)]* in Python\)", "", message)
    message = message.replace("--na-values", "--na_values")
    return re.sub(r"--(separator|encoding|decimal|na_values) ('[^']*'|[\w-]+)", r"read: {\1: \2}", message)


