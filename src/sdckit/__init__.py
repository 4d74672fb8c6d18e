"""sdckit: statistical disclosure control with measured privacy and measured utility.

Subpackages
-----------
risk        exposure, bounds from marginals, statistical exposure, entropy, the release planner
protocol    the shuffle protocol (users, shuffler, curator, analyst) as pure parties and services
spectral    noise-information separation for private PCA (random-matrix theory)
microagg    MDAV and its family, moment restoration, utility measures
report      the self-contained HTML report
datasets    bundled data (UCI Adult)
"""

from importlib import metadata as _metadata

from sdckit import datasets, errors
from sdckit._io import Data, check_numeric, read_data

try:
    __version__ = _metadata.version("sdckit")
except _metadata.PackageNotFoundError:  # running from a source tree without installing
    __version__ = "0.0.0+unknown"

__all__ = ["Data", "__version__", "check_numeric", "datasets", "errors", "read_data"]
