"""The input layer: paths and frames in, validated columns or arrays out, the same frame type back.

Every public entry point of sdckit that takes data calls one of these functions first and trusts
what it returns:

* :func:`read_data` turns a path (CSV, Parquet, JSON lines; ``.gz`` allowed) or a frame (pandas,
  polars, pyarrow, or a lazy frame narwhals understands: polars LazyFrame, DuckDB, Dask, PySpark)
  into a :class:`Data`: a narwhals frame restricted to the chosen columns, with the missing-value
  policy applied and what was dropped reported.
* :func:`check_numeric` returns a clean ``float64`` matrix for the numeric algorithms.
* :func:`like_input` puts new or replaced columns back into the caller's own frame type, other
  columns and row order untouched.

* :func:`check_outputs` checks every output path before any work is done (never an input, always
  writable); :func:`staged_outputs` and :func:`atomic_output` write to temporary files renamed into
  place when the whole run succeeded; :func:`writing` turns a failed write into
  :class:`~sdckit.errors.OutputError`.

Only :func:`read_path` and the two output helpers touch the file system.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from sdckit._io._formats import ReadOptions
    from sdckit._io._frames import (
        DataSource,
        as_narwhals,
        check_columns,
        is_lazy,
        like_input,
        native_kind,
        read_path,
    )
    from sdckit._io._outputs import Staging, atomic_output, check_outputs, set_aside, staged_outputs
    from sdckit._io._select import Data, MissingPolicy, check_numeric, read_data
    from sdckit._io._survey import SurveyLabels
    from sdckit._io._write import check_output_path, read_back_options, write_table, writing

_WHERE = {
    "ReadOptions": "_formats",
    "DataSource": "_frames",
    "as_narwhals": "_frames",
    "check_columns": "_frames",
    "is_lazy": "_frames",
    "like_input": "_frames",
    "native_kind": "_frames",
    "read_path": "_frames",
    "Data": "_select",
    "MissingPolicy": "_select",
    "check_numeric": "_select",
    "read_data": "_select",
    "Staging": "_outputs",
    "atomic_output": "_outputs",
    "check_outputs": "_outputs",
    "set_aside": "_outputs",
    "staged_outputs": "_outputs",
    "SurveyLabels": "_survey",
    "check_output_path": "_write",
    "read_back_options": "_write",
    "write_table": "_write",
    "writing": "_write",
}


def __getattr__(name: str) -> Any:
    """Import a submodule on first use: the output helpers need neither numpy nor polars."""
    if name not in _WHERE:
        raise AttributeError(f"module 'sdckit._io' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"sdckit._io.{_WHERE[name]}"), name)
    globals()[name] = value
    return value


__all__ = [
    "Data",
    "DataSource",
    "MissingPolicy",
    "ReadOptions",
    "Staging",
    "SurveyLabels",
    "as_narwhals",
    "atomic_output",
    "check_columns",
    "check_numeric",
    "check_output_path",
    "check_outputs",
    "is_lazy",
    "like_input",
    "native_kind",
    "read_back_options",
    "read_data",
    "read_path",
    "set_aside",
    "staged_outputs",
    "write_table",
    "writing",
]
