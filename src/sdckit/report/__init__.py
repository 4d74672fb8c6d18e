"""Self-contained HTML reports with a JSON sidecar.

Other subpackages contribute a :class:`Section` each (see ``sdckit.report._report`` for the
interface); :class:`Report` lays them out in one page with inline CSS and SVG plots.
:func:`build_report` renders a finished pipeline run (:func:`sdckit.pipeline.run_pipeline`).
"""

from sdckit.report._main import build_report
from sdckit.report._report import Block, Report, Section, figure, metrics, paragraph, table, to_jsonable

__all__ = ["Block", "Report", "Section", "build_report", "figure", "metrics", "paragraph", "table", "to_jsonable"]
