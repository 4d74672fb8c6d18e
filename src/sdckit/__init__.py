"""sdckit: statistical disclosure control with measured privacy and measured utility.

Subpackages
-----------
risk        exposure, bounds from marginals, statistical exposure, entropy, the release measure
plan        the release planner: which columns to release, recoded how far, with which suppression
protocol    the shuffle protocol (users, shuffler, curator, analyst) as pure parties and services
spectral    noise-information separation for private PCA (random-matrix theory)
microagg    MDAV and its family, moment restoration, utility measures
report      the self-contained HTML report
datasets    bundled data (UCI Adult)
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from sdckit import errors

if TYPE_CHECKING:
    from sdckit import datasets
    from sdckit._io import Data, check_numeric, read_data

_LAZY = {"datasets": "sdckit.datasets", "Data": "sdckit._io", "check_numeric": "sdckit._io", "read_data": "sdckit._io"}


def __getattr__(name: str) -> Any:
    """``__version__`` and the data layer (numpy, polars) on first use: ``sdckit --help`` needs neither."""
    if name == "__version__":
        # lazy: start-up time (`import sdckit` stays light)
        from importlib import metadata

        try:
            version = metadata.version("sdckit")
        except metadata.PackageNotFoundError:  # running from a source tree without installing
            version = "0.0.0+unknown"
        globals()[name] = version
        return version
    if name not in _LAZY:
        raise AttributeError(f"module 'sdckit' has no attribute {name!r}")
    module = importlib.import_module(_LAZY[name])
    value = module if name == "datasets" else getattr(module, name)
    globals()[name] = value
    return value

__all__ = ["Data", "__version__", "check_numeric", "datasets", "errors", "read_data"]
