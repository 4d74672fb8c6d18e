"""Figures of the spectral notes (the seed's Figures 2-5), as matplotlib figures (no file I/O)."""

from __future__ import annotations

from typing import Any

import numpy as np

from sdckit.spectral._discriminant import discriminant_polynomial
from sdckit.spectral._model import SpikedModel
from sdckit.spectral._simulate import simulate_spectrum
from sdckit.spectral._support import density

_BLUE, _ORANGE, _GREY = "#1f5fa8", "#d9731a", "#777777"


def _axes(figsize: tuple[float, float] = (6.0, 3.6)) -> tuple[Any, Any]:
    import matplotlib  # lazy: plotting (start-up time)

    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt  # lazy: plotting (start-up time)

    fig, ax = plt.subplots(figsize=figsize, layout="constrained")
    ax.grid(alpha=0.3)
    return fig, ax


def plot_histogram(model: SpikedModel, t: float, p: int, *, seed: int = 20261130, bins: int = 80) -> Any:
    """Seed Fig. 2: eigenvalue histogram of one simulated noisy survey against the limit density."""
    lam = simulate_spectrum(model, t, p, seed=seed)
    lam = lam[lam > 1e-9 * model.s]
    fig, ax = _axes()
    ax.hist(lam, bins=bins, density=True, color=_GREY, alpha=0.6, label=f"eigenvalues, p = {p}")
    x = np.linspace(0, lam.max() * 1.05, 1200)
    f = density(x, model.c, [t, t + model.s], [1 - model.r, model.r])
    mass = min(1.0, 1.0 / model.c)  # the histogram leaves out the atom at 0
    ax.plot(x, f / mass, color=_BLUE, lw=1.5, label="limit density")
    ax.set_xlabel("eigenvalue of the noisy sample covariance")
    ax.set_ylabel("density")
    ax.set_title(f"c = {model.c:g}, r = {model.r:g}, s = {model.s:g}, t = {t:g}")
    ax.legend()
    return fig


def plot_separation(model: SpikedModel, *, t_max: float | None = None, points: int = 400,
                    mark: float | None = None) -> Any:
    """Seed Fig. 3: U(t), with t* marked (and an optional recommended t)."""
    tstar = model.critical_noise()
    top = t_max if t_max is not None else 1.2 * max(tstar, 1e-9 * model.s) or model.s
    t = np.linspace(0, top, points)
    fig, ax = _axes()
    ax.plot(t, model.separation(t), color=_BLUE, lw=1.8, label="U(t)")
    ax.axvline(tstar, color=_ORANGE, ls="--", lw=1, label=f"t* = {tstar:.4g}")
    if mark is not None:
        ax.plot([mark], [model.separation(mark)], "o", color="black", label=f"t = {mark:.4g}")
    ax.set_xlabel("noise variance t")
    ax.set_ylabel("separation U(t)")
    ax.set_title(f"c = {model.c:g}, r = {model.r:g}, s = {model.s:g}")
    ax.legend()
    return fig


def plot_privacy_utility(model: SpikedModel, p: int, *, eps_max: float | None = None, points: int = 400,
                         mark: float | None = None) -> Any:
    """Seed Fig. 4: g_IT(L), the separation left under a leakage budget L (nats), with P_IT(t*) marked."""
    e_star = float(model.information_leakage(model.critical_noise(), p)) if model.critical_noise() > 0 else 0.0
    top = eps_max if eps_max is not None else max(3.0 * e_star, 1.0)
    eps = np.linspace(0, top, points)
    fig, ax = _axes()
    ax.plot(eps, model.utility_at_information(eps, p), color=_BLUE, lw=1.8, label="g_IT(L)")
    ax.axvline(e_star, color=_ORANGE, ls="--", lw=1, label=f"P_IT(t*) = {e_star:.4g} nats")
    if mark is not None:
        ax.plot([mark], [model.utility_at_information(mark, p)], "o", color="black", label=f"budget {mark:g} nats")
    ax.set_xlabel("leakage budget L (nats per respondent)")
    ax.set_ylabel("separation left")
    ax.set_title(f"c = {model.c:g}, r = {model.r:g}, s = {model.s:g}, p = {p}")
    ax.legend()
    return fig


def plot_discriminant(model: SpikedModel, t: float, *, points: int = 2000) -> Any:
    """Seed Fig. 5: sign of Delta_t(x) (as sign(R_t) |R_t|^(1/4)) with the support marked."""
    poly, _ = discriminant_polynomial(model.c, model.r, model.s, t)
    coeffs = np.array([float(v) for v in poly])
    sup = model.support(t)
    x = np.linspace(1e-9, 1.1 * sup.right, points)
    rt = np.polynomial.polynomial.polyval(x, coeffs)
    y = np.sign(rt) * np.abs(rt) ** 0.25
    fig, ax = _axes()
    ax.plot(x, y, color=_GREY, lw=1.2, label="sign(R_t) |R_t|^(1/4)")
    ax.axhline(0, color="black", lw=0.6)
    comps = [(sup.left, sup.gap_low), (sup.gap_high, sup.right)] if sup.n_components == 2 else [(sup.left, sup.right)]
    for i, (lo, hi) in enumerate(comps):
        ax.plot([lo, hi], [0, 0], color=_BLUE, lw=5, solid_capstyle="butt", label="support" if i == 0 else None)
    if sup.n_components == 2:
        ax.annotate(f"U = {sup.separation:.3g}", xy=(0.5 * (sup.gap_low + sup.gap_high), 0),
                    xytext=(0, 18), textcoords="offset points", ha="center")
    ax.set_xlabel("x")
    ax.set_title(f"R_t(x) = Delta_t(x) / (c^2 x^4); c = {model.c:g}, r = {model.r:g}, s = {model.s:g}, t = {t:g}")
    ax.legend()
    return fig
