"""Speed of the spectral subpackage: U(t) on a grid and for one t, support for 10 spikes, simulation.

Run from this folder: ``../.venv/bin/python spectral_separation.py``. The peer for U is the seed's
discriminant method (exact coefficients, mpmath roots: ``method="discriminant"``), timed per t.
"""

from __future__ import annotations

import numpy as np

from _harness import bench, emit
from sdckit.spectral import SpikedModel, simulate_spectrum, support
from sdckit.spectral._support import _support

m = SpikedModel(0.5, 0.3, 10.0)
m.separation(1.0)  # compile the numba kernel (cached on disk after the first run)

grid = np.linspace(0.0, 1.2 * m.critical_noise(), 100_000)
disc = bench(lambda: m.separation(1.5, method="discriminant"), repeat=5)
emit("spectral U(t) grid 1e5 t", bench(lambda: m.separation(grid), repeat=7), target=0.100,
     peer=("discriminant method x 1e5 (extrapolated)", disc.median * 1e5))
one = bench(lambda: m.separation(1.5), repeat=2000, warmup=50)
emit("spectral U(t) one scalar t", one, target=50e-6, peer=("discriminant method", disc.median))
prec = bench(lambda: m.separation(1.5, method="precise"), repeat=5)
emit("spectral U(t) one t, mpmath 50 digits", prec)

rng = np.random.default_rng(1)
taus = np.sort(rng.uniform(1, 100, 10))
w = rng.dirichlet(np.ones(10))


def _fresh() -> object:
    _support.cache_clear()  # support() caches by value; time the computation itself
    return support(0.05, taus, w)


sup = _fresh()
emit("spectral support, 10 spikes (uncached)", bench(_fresh, repeat=20), n_components=sup.n_components)

for p in (250, 500, 1000):
    t = bench(lambda p=p: simulate_spectrum(m, 1.5, p, seed=1), repeat=3)
    emit(f"spectral simulate one survey p={p}, n={2 * p}", t)
