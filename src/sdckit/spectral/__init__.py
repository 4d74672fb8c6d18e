"""Private PCA: noise–information separation, leakage and the privacy–utility curve.

The mathematics is in the spectral notes (``docs/theory/spectral.md``; source: Diaz et al.,
arXiv:1801.03553). The catalogue:

* limit spectrum of a sample covariance for any discrete population law: :func:`support`,
  :func:`density`, :func:`cdf`, :func:`cauchy_transform` (Silverstein–Choi, bracketed critical points);
* the seed's spiked model :class:`SpikedModel` (U(t), N(t), t*, P_IT, P_ET, g_IT, g_ET and inverses),
  with the seed's discriminant method (:func:`separation_discriminant`) and an mpmath path;
* the mechanism :class:`AdditiveNoise` and the aggregator's :class:`NoisyPCA`;
* design: :func:`design_noise`, :func:`fit_spiked`; simulation: :func:`simulate_gap`,
  :func:`simulate_spectrum`;
* leakage beyond the Gaussian model: :func:`leakage_bound` (which bound applies),
  :func:`gaussian_leakage`, :func:`non_gaussianity`, :func:`estimate_leakage` (k-NN, with its
  standard error).
"""

from sdckit.spectral._design import (
    NoiseDesign,
    SpikedFit,
    design_noise,
    design_noise_from_data,
    fit_spiked,
    noise_for_covariance,
)
from sdckit.spectral._discriminant import (
    critical_noise_precise,
    discriminant_polynomial,
    separation_discriminant,
    separation_precise,
    support_discriminant,
)
from sdckit.spectral._laws import (
    DISTRIBUTIONS,
    NON_GAUSSIANITY,
    DataLaw,
    NoiseDistribution,
    discrete_noise_entropy,
    draw_noise,
    noise_entropy,
    non_gaussianity,
)
from sdckit.spectral._leakage import information_leakage, spike_count
from sdckit.spectral._mechanism import AdditiveNoise, NoisyPCA
from sdckit.spectral._model import SeparationMethod, SpikedModel, SpikedSupport, SupMethod
from sdckit.spectral._nongaussian import (
    LeakageBound,
    LeakageEstimate,
    estimate_leakage,
    gaussian_leakage,
    integer_leakage_bound,
    knn_entropy,
    leakage_bound,
)
from sdckit.spectral._simulate import GapSimulation, simulate_gap, simulate_spectrum
from sdckit.spectral._support import (
    Gap,
    Interval,
    Support,
    cauchy_transform,
    cdf,
    companion_transform,
    density,
    support,
)

__all__ = [
    "DISTRIBUTIONS",
    "NON_GAUSSIANITY",
    "AdditiveNoise",
    "DataLaw",
    "Gap",
    "GapSimulation",
    "Interval",
    "LeakageBound",
    "LeakageEstimate",
    "NoiseDesign",
    "NoiseDistribution",
    "NoisyPCA",
    "SeparationMethod",
    "SpikedFit",
    "SpikedModel",
    "SpikedSupport",
    "SupMethod",
    "Support",
    "cauchy_transform",
    "cdf",
    "companion_transform",
    "critical_noise_precise",
    "density",
    "design_noise",
    "design_noise_from_data",
    "discrete_noise_entropy",
    "discriminant_polynomial",
    "draw_noise",
    "estimate_leakage",
    "fit_spiked",
    "gaussian_leakage",
    "information_leakage",
    "integer_leakage_bound",
    "knn_entropy",
    "leakage_bound",
    "noise_entropy",
    "noise_for_covariance",
    "non_gaussianity",
    "separation_discriminant",
    "separation_precise",
    "simulate_gap",
    "simulate_spectrum",
    "spike_count",
    "support",
    "support_discriminant",
]
