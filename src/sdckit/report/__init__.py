"""Self-contained HTML reports with a JSON sidecar.

Other subpackages contribute a :class:`Section` each (see ``sdckit.report._report`` for the
interface); :class:`Report` lays them out in one page with inline CSS and SVG plots.
"""

from sdckit.report._report import Block, Report, Section, figure, metrics, paragraph, table, to_jsonable

__all__ = ["Block", "Report", "Section", "figure", "metrics", "paragraph", "table", "to_jsonable"]
