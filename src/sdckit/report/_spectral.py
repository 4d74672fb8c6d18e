"""Report section 'Private PCA': the fitted spectrum, U(t), the privacy–utility curve, the noise to use."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from sdckit.errors import InputError, SdcError
from sdckit.report._report import Section, figure, metrics, paragraph, table

TW1_99 = 2.02
"""99 % quantile of the Tracy–Widom law TW1 (Johnstone 2001, Table 1): the margin above the
Marchenko–Pastur edge beyond which the largest eigenvalue is not what noise alone gives."""


@dataclass(frozen=True)
class EigenStructure:
    """Is there an eigenvalue structure (spikes above a noise floor) for noise to keep?"""

    present: bool
    """True when the top eigenvalues stand out of a noise floor the spiked model describes."""
    null_edge: float
    """Largest eigenvalue uncorrelated columns would give: (1 + sqrt c)^2 plus 2.02 Tracy–Widom units."""
    bulk_edges: tuple[float, float]
    """Where the p - k small eigenvalues should lie if they were noise at the fitted floor b."""
    reason: str
    """One sentence: the test and its outcome."""

    def to_dict(self) -> dict[str, Any]:
        return {"present": self.present, "null_edge": self.null_edge, "bulk_edges": list(self.bulk_edges),
                "reason": self.reason}


def _tw_scale(n: int, p: int) -> tuple[float, float]:
    """Johnstone's centring and scale of the largest eigenvalue of a white Wishart X'X / n."""
    a, b = math.sqrt(n - 1), math.sqrt(p)
    return (a + b) ** 2 / n, (a + b) * (1 / a + 1 / b) ** (1 / 3) / n


def eigen_structure(lam: NDArray[np.float64], n: int, *, k: int, floor: float) -> EigenStructure:
    """Test the correlation eigenvalues ``lam`` (descending) of n rows for a spiked structure.

    1. Against no correlation at all: the largest eigenvalue must exceed the Marchenko–Pastur edge
       (1 + sqrt c)^2, c = p/n, by more than the 99 % Tracy–Widom fluctuation (Johnstone 2001).
    2. Against a spectrum with no noise floor: the p - k eigenvalues below the k fitted spikes must lie
       inside the Marchenko–Pastur support of their floor b, b (1 -+ sqrt c)^2, widened by the same
       margin; otherwise they are not noise around one level, there is no gap between information
       and noise for added noise to keep, and the spiked model's U(t) does not describe the data.
    """
    p = lam.size
    c = p / n
    mu, sigma = _tw_scale(n, p)
    null_edge = mu + TW1_99 * sigma
    margin = TW1_99 * sigma * max(floor, 1e-12)
    lo, hi = floor * (1 - math.sqrt(c)) ** 2 - margin, floor * (1 + math.sqrt(c)) ** 2 + margin
    if lam[0] <= null_edge:
        return EigenStructure(False, null_edge, (lo, hi), (
            f"the largest eigenvalue, {lam[0]:.3g}, is below {null_edge:.3g}, the largest that {p} uncorrelated "
            f"columns give with n = {n:,} rows (Marchenko–Pastur edge (1 + sqrt(p/n))^2 plus the 99 % Tracy–Widom "
            "margin): the columns are, as far as PCA can tell, uncorrelated"))
    bulk = lam[k:]
    if bulk.size and (bulk.max() > hi or bulk.min() < lo):
        return EigenStructure(False, null_edge, (lo, hi), (
            f"the {bulk.size} eigenvalues below the top {k} spread from {bulk.min():.3g} to {bulk.max():.3g}, while "
            f"noise around one level b = {floor:.3g} would keep them within {max(lo, 0):.3g}–{hi:.3g} "
            "(Marchenko–Pastur support at this c, plus the 99 % Tracy–Widom margin): the eigenvalues decline "
            "gradually, with no noise floor and no gap between information and noise for added noise to keep"))
    return EigenStructure(True, null_edge, (lo, hi), (
        f"the top {k} eigenvalue(s) ({', '.join(f'{v:.3g}' for v in lam[:k])}) stand out of a noise floor: "
        f"the other {bulk.size} ({bulk.min():.3g}–{bulk.max():.3g}) lie within {max(lo, 0):.3g}–{hi:.3g}, the "
        f"Marchenko–Pastur support of b = "
        f"{floor:.3g} at c = p/n, and the largest is above {null_edge:.3g}, what uncorrelated columns give"))


def _round_c(c: float) -> str:
    return f"{c:.2g}"


def spectral_section(
    X: NDArray[np.float64],
    names: Sequence[str],
    *,
    seed: int = 20261130,
    budget_nats: float = 1.0,
    k: int | None = None,
) -> Section:
    """Private-PCA design for the numeric columns ``X`` (n x p), z-scored (t in units of variance).

    First tests whether the correlation eigenvalues have a structure to keep (:func:`eigen_structure`:
    Marchenko–Pastur edge and Tracy–Widom margin); without one it says so and recommends nothing.
    Otherwise fits the spiked model (:func:`fit_spiked`), recommends the noise variance t meeting
    ``budget_nats`` (information leakage per respondent, nats), and shows the share of the gap kept
    against t and against the leakage (both from :func:`design_noise` with the fitted floor, so the
    two plots show the same point).
    """
    # lazy: start-up time
    import matplotlib

    matplotlib.use("Agg")
    # lazy: start-up time (loads scipy, sklearn, numba)
    import matplotlib.pyplot as plt

    from sdckit.spectral import SpikedFit, design_noise, draw_noise, fit_spiked

    x = np.asarray(X, dtype=float)
    n = x.shape[0]
    sd = x.std(axis=0)
    keep = sd > 0
    x, names = x[:, keep], [nm for nm, ok in zip(names, keep, strict=True) if ok]
    p = len(names)
    z = (x - x.mean(axis=0)) / x.std(axis=0)
    lam = np.sort(np.linalg.eigvalsh(z.T @ z / n))[::-1]
    c = p / n
    section = Section("spectral", "Private PCA: noise that keeps the principal components")
    section.add(
        paragraph(
            f"Each respondent adds independent noise of variance t to each of the {p} numeric answers "
            f"({', '.join(names)}; z-scored, so t is in units of each column's variance) before sending them. "
            "The question is how much noise the principal components survive. Random-matrix theory predicts the "
            "gap U(t) between the information eigenvalues and the noise eigenvalues (Diaz et al., "
            "arXiv:1801.03553); leakage is the mutual information between a respondent's answers and what "
            "they send (nats, Gaussian model; 0 = nothing learnt)."
        )
    )
    fit: SpikedFit | None
    try:
        fit = fit_spiked(lam, n=n, k=k)
    except SdcError as exc:
        fit = None
        structure = EigenStructure(False, _tw_scale(n, p)[0], (0.0, 0.0), f"no spike can be fitted ({exc})")
    else:
        structure = eigen_structure(lam, n, k=fit.k, floor=fit.floor)
    section.data = {
        "columns": list(names), "n_rows": n, "c": c, "eigenvalues": lam, "structure": structure.to_dict(),
        "seed": seed, "budget_nats": budget_nats,
    }
    eig_table = table(
        [(i + 1, lam[i]) for i in range(p)], ["eigenvalue #", "correlation matrix"],
        caption=f"Eigenvalues of the correlation matrix (p = {p} columns, n = {n:,} rows, c = p/n = {_round_c(c)})",
    )
    if fit is None or not structure.present:
        section.add(
            metrics([("eigenvalue structure", "none", ""), ("noise recommended", "none", "")]),
            paragraph(f"No structure to keep: {structure.reason}. Private PCA has nothing here to protect "
                      "while keeping it, so this report recommends no noise level; any noise would only "
                      "blur the columns. Add columns that are correlated, or release them by other means."),
            eig_table,
        )
        section.summary = f"Private PCA: no eigenvalue structure in {', '.join(names)}; no noise recommended."
        return section
    m = fit.model
    d = design_noise(m, p, max_leakage=budget_nats, floor=fit.floor)
    noisy = z + draw_noise(z.shape, d.t, "gaussian", np.random.default_rng(seed))  # what the aggregator sees
    zn = noisy - noisy.mean(axis=0)
    lam_noisy = np.sort(np.linalg.eigvalsh(zn.T @ zn / n))[::-1]
    u0 = d.separation_without_noise
    tstar = d.critical_noise
    eps_star = _leakage_at(m.s, fit.floor, fit.k, p, tstar)
    keeps = d.utility_share
    section.add(
        paragraph(f"Structure test: {structure.reason}."),
        metrics(
            [
                ("recommended noise variance t", d.t if keeps > 0 else "none", " (z units)" if keeps > 0 else ""),
                ("information leakage", d.information_leakage_nats, " nats"),
                ("gap kept", 100 * keeps, "%"),
                ("gap closes at t*", tstar, ""),
            ]
        ),
        paragraph(
            "Gap kept: U(b + t) / U(b), the share of the gap between the information and the noise eigenvalues "
            "left after the noise (100 % = PCA sees the components as clearly as without noise; 0 % = it "
            "cannot tell them from the noise). t*: the added noise at which the gap closes.",
            note=True,
        ),
    )
    if keeps <= 0.005:
        section.add(paragraph(
            f"Nothing recommended: a budget of {budget_nats:g} nat(s) needs noise t = {d.t:.3g} or more, beyond "
            f"t* = {tstar:.3g}, where the gap has closed ({100 * keeps:.2g} % kept): PCA of the noisy answers "
            f"could not tell the {fit.k} component(s) from the noise. Keeping any of the gap leaks more than "
            f"{eps_star:.3g} nats per respondent: raise the budget above that, or collect more rows (a smaller "
            "c = p/n moves t* up)."
        ))
    section.add(
        table(
            [(i + 1, lam[i], lam_noisy[i]) for i in range(p)],
            ["eigenvalue #", "clean data", f"after noise t = {d.t:.3g} (seed {seed})"],
            caption="Eigenvalues of the correlation matrix",
        ),
        paragraph(_bound_line(lam, d.t, z, noisy), note=True),
        paragraph(
            f"Fitted spiked model: c = p/n = {_round_c(m.c)}, k = {fit.k} spike(s) of height s = {m.s:.3g} above a "
            f"floor b = {fit.floor:.3g} ({fit.how}). {d.note}",
            note=True,
        ),
    )
    title = f"c = p/n = {_round_c(m.c)}, k = {fit.k}, s = {m.s:.3g}, b = {fit.floor:.3g}"
    ts = np.linspace(0, 1.25 * max(tstar, d.t), 200)
    share_t = [100 * float(m.separation(t + fit.floor)) / u0 for t in ts]
    fig = _gap_share_plot(
        ts, share_t, "gap kept, U(b + t) / U(b)", (tstar, f"gap closes at t* = {tstar:.3g}"),
        (d.t, 100 * keeps, f"budget {budget_nats:g} nats: t = {d.t:.3g}, keeps {100 * keeps:.0f} %"),
        "added noise variance t (z units)", title,
    )
    section.add(figure(fig, caption="Share of the eigenvalue gap kept against the added noise t (spiked model "
                                    "with the fitted floor b)."))
    eps_grid = np.linspace(0.02, max(2.0 * budget_nats, 1.5 * eps_star, 0.5), 60)
    share_eps = [100 * design_noise(m, p, max_leakage=float(e), floor=fit.floor).utility_share for e in eps_grid]
    fig = _gap_share_plot(
        eps_grid, share_eps, "gap kept at the least noise meeting the budget",
        (eps_star, f"leakage at t*: {eps_star:.3g} nats"),
        (d.information_leakage_nats, 100 * keeps, f"budget {budget_nats:g} nats: keeps {100 * keeps:.0f} %"),
        "leakage budget (nats per respondent)", title,
    )
    section.add(figure(fig, caption="Privacy against utility: the share of the gap kept under each leakage "
                                    "budget (same model and floor as the plot above; the dot is the same design)."))
    plt.close("all")
    section.data.update({
        "eigenvalues_noisy": lam_noisy, "fit": fit.to_dict(), "design": d.to_dict(),
        "leakage_at_critical_noise": eps_star, "recommended": keeps > 0.005,
    })
    section.summary = (
        f"Private PCA: noise variance t = {d.t:.3g} (z units) meets {budget_nats:g} nat(s) of leakage per "
        f"respondent and keeps {keeps:.0%} of the principal-component gap."
        if keeps > 0.005 else
        f"Private PCA: no noise within {budget_nats:g} nat(s) keeps any of the gap (it needs more than "
        f"{eps_star:.3g} nats); nothing recommended."
    )
    return section


def _leakage_at(s: float, floor: float, k: int, p: int, t: float) -> float:
    """Gaussian leakage (1/2) sum log(1 + lambda_i / t) of the spiked population s P_k + b I at noise t (nats)."""
    if t <= 0:
        return math.inf
    return 0.5 * (k * math.log1p((s + floor) / t) + (p - k) * math.log1p(floor / t))


def _bound_line(lam: NDArray[np.float64], t: float, z: NDArray[np.float64], noisy: NDArray[np.float64]) -> str:
    """Which leakage bound applies to these (not necessarily Gaussian) columns, with the k-NN estimate."""
    # lazy: start-up time (loads scipy, sklearn, numba)
    from sdckit.spectral import estimate_leakage, leakage_bound

    b = leakage_bound(lam, t, noise="gaussian", data_law="any")
    line = (
        f"Which bound applies: Gaussian noise on data of any law, so P_IT <= 1/2 log det(I + R/t) = {b.upper:.4g} "
        f"nats on these columns' correlation matrix R (equality only if the data were Gaussian; the design "
        f"above uses the fitted spiked model); at high privacy P_IT ~ Tr(R)/(2t) = {b.asymptotic:.4g}."
    )
    try:
        est = estimate_leakage(z, t=t, noisy=noisy)
    except InputError:
        return line
    return line + (
        f" A k-nearest-neighbour estimate from the seeded draw in the table above: {est.estimate:.4g} nats "
        f"(standard error {est.std_error:.2g}), an estimate, not a bound."
    )


def _gap_share_plot(
    x: Any, share: Any, label: str, line: tuple[float, str], dot: tuple[float, float, str], xlabel: str, title: str
) -> Any:
    """One of the two 'share of the gap kept' plots: the curve, the dashed t* line, the design's dot."""
    # lazy: start-up time
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.0, 3.6), layout="constrained")
    ax.plot(x, share, color="#1f5fa8", lw=1.8, label=label)
    ax.axvline(line[0], color="#d9731a", ls="--", lw=1, label=line[1])
    ax.plot([dot[0]], [dot[1]], "o", color="black", label=dot[2])
    ax.set_xlabel(xlabel)
    ax.set_ylabel("share of the gap kept")
    ax.yaxis.set_major_formatter(lambda v, _pos: f"{v:.0f} %")
    ax.set_ylim(0, 105)
    ax.set_title(title, fontsize=10)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    return fig
