"""Anonymisation methods for microdata: recoding, top/bottom coding, local suppression, PRAM.

Each method is an estimator (constructor stores JSON-able keyword parameters, ``fit`` learns,
``transform`` returns the same frame type with the other columns untouched) that records what it
changed in ``changes_``: per column, cells changed and values merged.

* :class:`GlobalRecoder` / :func:`recode`: intervals for numbers, mappings or hierarchy levels
  for categories (:class:`Hierarchy`, :func:`adult_hierarchies`);
* :class:`TopBottomCoder`: values beyond a threshold or quantile become the threshold or a label;
* :class:`LocalSuppressor` / :func:`local_suppression`: key cells set to missing, with decoys, so
  that every released row is identical to at least k - 1 others (default), or sdcMicro's algorithm
  (``method="sdcmicro"``, a missing cell matching any value, :func:`wildcard_group_sizes`);
* :class:`PRAM`: post-randomisation of categorical columns (invariant, sdcMicro's matrix, or a user matrix);
* :class:`RecordSwapper`: targeted record swapping of whole households between areas (sdcMicro's ``recordSwap``).
"""

from sdckit.anonymize._hierarchy import Hierarchy, adult_hierarchies
from sdckit.anonymize._pram import PRAM, invariant_matrix, sdcmicro_matrix
from sdckit.anonymize._recode import GlobalRecoder, recode
from sdckit.anonymize._suppress import LocalSuppressor, local_suppression, redaction_allowance
from sdckit.anonymize._swap import RecordSwapper
from sdckit.anonymize._topcode import TopBottomCoder
from sdckit.risk._counts._wildcard import wildcard_group_sizes

__all__ = [
    "PRAM",
    "GlobalRecoder",
    "Hierarchy",
    "LocalSuppressor",
    "RecordSwapper",
    "TopBottomCoder",
    "adult_hierarchies",
    "invariant_matrix",
    "local_suppression",
    "recode",
    "redaction_allowance",
    "sdcmicro_matrix",
    "wildcard_group_sizes",
]
