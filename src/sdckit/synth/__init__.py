"""Differentially private synthetic data: marginal-based synthesizers whose noise comes from OpenDP.

Two synthesizers, both epsilon-differentially private (pure DP, add/remove-one neighbours) on the
counts they measure, with the column domains (categories, numeric ranges) treated as public:

* :class:`DPMarginalSynthesizer` measures every column's one-way histogram (discrete Laplace) and
  samples the columns independently;
* :class:`DPTreeSynthesizer` (MST-like) measures the one-way histograms, picks a spanning tree of
  column pairs with OpenDP's report-noisy-max (exponential mechanism), measures the tree's two-way
  histograms and samples along the tree.

Every random draw that carries privacy is OpenDP's (``opendp`` is the ``dp`` extra); the sampling of
synthetic rows from the released (noisy) histograms is post-processing.
"""

from sdckit.synth._dp import Discretizer, DPMarginalSynthesizer, DPTreeSynthesizer

__all__ = ["DPMarginalSynthesizer", "DPTreeSynthesizer", "Discretizer"]
