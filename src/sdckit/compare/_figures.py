"""The figures of one written release against its input: the same risk and utility figures for every method.

Each figure is a :class:`Figure` (a name, a label, which way is better, and a function of a
:class:`ReleaseContext`). :data:`RISK_FIGURES` and :data:`UTILITY_FIGURES` are the default lists;
a caller passes longer lists to :func:`measure_written` (the outsider attacks of issue 34,
singling-out, linkability and inference against a held-out control, plug in as more
:class:`Figure` entries of ``RISK_FIGURES``: their function reads ``ctx.release`` and
``ctx.input``, and ``ctx.control`` when the comparison holds rows out).

A figure that does not apply to a release returns None (e.g. information loss of a synthetic
release, whose rows stem from no one): the table prints a dash, the map leaves the point out of
that axis. Pure logic, no I/O.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from itertools import combinations
from typing import Any, Literal

import numpy as np
import polars as pl
from numpy.typing import NDArray
from scipy import special, stats
from sklearn.linear_model import LogisticRegression
from sklearn.neighbors import NearestNeighbors

from sdckit.risk._measures._attacks import ATTACKS, AttackSettings, held_out_attacks, release_attacks
from sdckit.risk._measures._household import household_risk
from sdckit.risk._measures._release import ReleaseMeasure, consistent_counts, measure_release

__all__ = [
    "RISK_FIGURES",
    "UTILITY_FIGURES",
    "Figure",
    "Regression",
    "ReleaseContext",
    "as_numeric",
    "attack_figures",
    "ci_overlap",
    "closest_share",
    "encode",
    "household_figure",
    "information_loss",
    "linkage_share",
    "marginal_distance",
    "measure_intervals",
    "measure_written",
    "pairwise_distance",
    "pmse",
]


@dataclass(frozen=True)
class Regression:
    """A user's linear regression: ``outcome ~ predictors`` by ordinary least squares (categorical
    predictors as indicators of the input's levels, the first level the baseline)."""

    outcome: str
    predictors: tuple[str, ...]


@dataclass
class ReleaseContext:
    """What a figure may read: the input, the release as read back from its file, and the roles."""

    input: pl.DataFrame
    release: pl.DataFrame
    quasi_identifiers: tuple[str, ...]
    numeric: tuple[str, ...]
    categorical: tuple[str, ...]
    k: int
    budget: float
    row_order: NDArray[np.int64] | None = None
    """Released row i is input row ``row_order[i]`` (None: no released row stems from one person)."""
    known: pl.DataFrame | None = None
    """The attacker's knowledge of each person's quasi-identifiers (default: the input's)."""
    regression: Regression | None = None
    control: pl.DataFrame | None = None
    """Input rows held out of a synthesizer's training input (the attacks' control for synthetic data;
    None for a masked release, whose control rows :func:`release_attacks` takes out of the attacked table)."""
    training: pl.DataFrame | None = None
    """The input rows a synthesizer was fitted on (the attacks' targets for synthetic data)."""
    household: str | None = None
    """The household column (its ids in the release are fresh random numbers): the household risk reads it,
    no other figure does."""
    sensitive: tuple[str, ...] = ()
    """The sensitive columns: the inference attack's secrets (every column when none)."""
    attacks: AttackSettings | None = None
    """How the three attacks run (None: not run, their figures are None)."""
    _measure: ReleaseMeasure | None = field(default=None, repr=False)
    _attacks: dict[str, Any] | None = field(default=None, repr=False)

    @property
    def measure(self) -> ReleaseMeasure:
        """The project's release measure of the written file (computed once)."""
        if self._measure is None:
            self._measure = measure_release(
                self.release, quasi_identifiers=[c for c in self.quasi_identifiers if c in self.release.columns],
                k=self.k, budget=self.budget, categorical=self.categorical,
            )
        return self._measure

    @property
    def aligned_input(self) -> pl.DataFrame | None:
        """The input rows in the release's order (None when the release is not row-for-row)."""
        return None if self.row_order is None else self.input[self.row_order]


@dataclass(frozen=True)
class Figure:
    """One figure of the comparison."""

    name: str
    label: str
    better: Literal["lower", "higher"]
    compute: Callable[[ReleaseContext], float | None]
    interval: Callable[[ReleaseContext], tuple[float, float] | None] | None = None
    """The figure's own uncertainty on one release (an attack's confidence interval), or None."""


# --- encoding shared by the distance-based figures -------------------------------------------------


def as_numeric(series: pl.Series) -> pl.Series:
    """A numeric column as floats; a recoded one (text such as ``[25, 35)`` or ``65+``) as the
    midpoint of the numbers in its label, so a band stands for the values it covers; missing or
    label-less cells are missing."""
    if series.dtype.is_numeric():
        return series.cast(pl.Float64)
    nums = series.cast(pl.String).str.extract_all(r"-?\d+(?:\.\d+)?").list.eval(pl.element().cast(pl.Float64))
    return nums.list.mean().alias(series.name)



def encode(frame: pl.DataFrame, reference: pl.DataFrame, numeric: Sequence[str], categorical: Sequence[str]) -> NDArray[np.float64]:
    """Rows as vectors: numeric columns standardised by the reference's mean and sd (a missing value
    at the mean), categorical columns as indicators of the reference's levels scaled by 1/sqrt(2),
    so two rows differing in one category are at distance 1 (a level unseen in the reference, or
    missing, is all zeros)."""
    parts: list[NDArray[np.float64]] = []
    for c in numeric:
        ref = as_numeric(reference[c])
        mu = float(ref.mean() or 0.0)  # type: ignore[arg-type]
        raw_sd = ref.std()
        sd = float(raw_sd) if isinstance(raw_sd, (int, float)) and np.isfinite(raw_sd) and raw_sd > 0 else 1.0
        x = as_numeric(frame[c]).fill_nan(None).fill_null(mu).to_numpy()
        parts.append(((x - mu) / sd)[:, None])
    for c in categorical:
        levels = reference[c].drop_nulls().unique().sort().to_list()
        values = frame[c].cast(reference.schema[c], strict=False).to_list()
        index = {v: i for i, v in enumerate(levels)}
        block = np.zeros((frame.height, len(levels)))
        for r, v in enumerate(values):
            j = index.get(v)
            if j is not None:
                block[r, j] = 1.0 / np.sqrt(2.0)
        parts.append(block)
    return np.hstack(parts) if parts else np.zeros((frame.height, 0))


def _columns(ctx: ReleaseContext) -> tuple[list[str], list[str]]:
    num = [c for c in ctx.numeric if c in ctx.release.columns and c != ctx.household]
    cat = [c for c in ctx.release.columns if c not in set(num) and c in ctx.input.columns and c != ctx.household]
    return num, cat


# --- risk ------------------------------------------------------------------------------------------


def exposure_at_k(ctx: ReleaseContext) -> float | None:
    """Share of released rows in groups of fewer than k identical rows on the quasi-identifiers."""
    return ctx.measure.exposure_at_k if ctx.measure.quasi_identifiers else None


def consistent_below_k(ctx: ReleaseContext) -> float | None:
    """Share of persons whose quasi-identifiers are consistent with fewer than k released rows."""
    qis = [c for c in ctx.quasi_identifiers if c in ctx.release.columns]
    if not qis:
        return None
    known = ctx.known if ctx.known is not None else ctx.input
    return float(np.mean(consistent_counts(ctx.release, known.select(qis), qis) < ctx.k))


def global_risk(ctx: ReleaseContext) -> float | None:
    """Expected re-identifications on the quasi-identifiers as released, as a share of the rows."""
    ir = ctx.measure.individual_risk
    return None if ir is None else float(ir["global_risk"])


LINKAGE_TIES = 32
"""Nearest rows looked at for ties in :func:`linkage_share` (more tied rows count as this many:
the share is then an upper bound)."""


def linkage_share(ctx: ReleaseContext) -> float | None:
    """Share of released rows whose nearest input row (distance of :func:`encode` on every released
    column) is the person it stems from (a tie counts as 1 / the tied rows, at most
    :data:`LINKAGE_TIES` counted). 0 for a release whose
    rows stem from no one (synthetic data)."""
    if ctx.row_order is None:
        return 0.0
    num, cat = _columns(ctx)
    x = encode(ctx.input, ctx.input, num, cat)
    r = encode(ctx.release, ctx.input, num, cat)
    if x.shape[1] == 0:
        return None
    depth = min(LINKAGE_TIES, x.shape[0])
    dist = NearestNeighbors(n_neighbors=depth).fit(x).kneighbors(r)[0]
    own = np.linalg.norm(r - x[ctx.row_order], axis=1)
    tol = 1e-9 * (1.0 + dist[:, :1])
    linked = own <= dist[:, 0] + tol[:, 0]
    ties = np.maximum((dist <= own[:, None] + tol).sum(axis=1), 1)  # at most LINKAGE_TIES counted
    hits = float(np.sum(linked / ties))
    return hits / ctx.release.height


def closest_share(ctx: ReleaseContext) -> float | None:
    """Share of persons with a released row strictly closer to their record than any other person's
    record is (distance of :func:`encode`): the release singles them out more sharply than the
    population does. Needs no link between rows, so it reads masked and synthetic releases alike."""
    num, cat = _columns(ctx)
    x = encode(ctx.input, ctx.input, num, cat)
    r = encode(ctx.release, ctx.input, num, cat)
    if x.shape[1] == 0 or ctx.input.height < 2:
        return None
    d_other = NearestNeighbors(n_neighbors=2).fit(x).kneighbors(x)[0][:, 1]
    d_release = NearestNeighbors(n_neighbors=1).fit(r).kneighbors(x)[0][:, 0]
    return float(np.mean(d_release < d_other))


def _attack_targets(ctx: ReleaseContext, cols: Sequence[str]) -> pl.DataFrame:
    """The input rows in the release's order as the attacker knows them: a quasi-identifier after the
    public recodings (``known``), except a column numeric on both sides (masked by noise or
    microaggregation: the attacker knows the true value, as in the release measure's attacks)."""
    assert ctx.row_order is not None
    targets = ctx.input.select(cols)
    known = ctx.known
    if known is not None and known.height == targets.height:
        moved = [
            known[c] for c in ctx.quasi_identifiers
            if c in known.columns and c in targets.columns
            and not (ctx.input.schema[c].is_numeric() and ctx.release.schema[c].is_numeric())
        ]
        targets = targets.with_columns(moved) if moved else targets
    return targets[ctx.row_order]


def attack_figures(ctx: ReleaseContext) -> dict[str, Any] | None:
    """Singling out, linkability and inference (:mod:`sdckit.risk._measures._attacks`) on the written
    release, every released column but the household id known to the attacker; computed once per
    context. A masked release (row for row the input): :func:`release_attacks` holds a random
    ``attacks.n_control`` records (at most a fifth) out of the attacked table as the control, as the
    release measure does. A synthetic release: the targets are as many rows drawn from those the
    synthesizer was fitted on (``ctx.training``) as the control holds, the control the rows held out of
    its input (``ctx.control``), genuinely unseen.
    None when the attacks are off or do not apply (fewer than 20 rows, no control)."""
    settings = ctx.attacks
    if settings is None:
        return None
    if ctx._attacks is None:
        cols = [c for c in ctx.release.columns if c in ctx.input.columns and c != ctx.household]
        if not cols:
            return None
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            if ctx.row_order is not None:
                if ctx.release.height < 20:
                    return None
                ctx._attacks = release_attacks(
                    _attack_targets(ctx, cols), ctx.release.select(cols), quasi_identifiers=ctx.quasi_identifiers,
                    secrets=[c for c in ctx.sensitive if c in cols] or None, n_attacks=settings.n_attacks,
                    n_control=settings.n_control, confidence=settings.confidence, seed=settings.seed,
                )
            elif ctx.training is not None and ctx.control is not None and ctx.control.height and ctx.release.height:
                rng = np.random.default_rng(settings.seed)
                # as many targets as control records, both drawn alike from the input: a query singles out
                # "exactly one of m" on either side, so the control is the same test on unseen persons
                pick = np.sort(rng.choice(ctx.training.height, size=min(ctx.control.height, ctx.training.height),
                                          replace=False))
                ctx._attacks = held_out_attacks(
                    ctx.training.select(cols)[pick], ctx.release.select(cols), ctx.control.select(cols),
                    quasi_identifiers=ctx.quasi_identifiers, secrets=[c for c in ctx.sensitive if c in cols] or None,
                    n_attacks=settings.n_attacks, confidence=settings.confidence, rng=rng,
                )
            else:
                return None
    return ctx._attacks


def _attack(name: str) -> tuple[Callable[[ReleaseContext], float | None],
                                 Callable[[ReleaseContext], tuple[float, float] | None]]:
    def risk(ctx: ReleaseContext) -> float | None:
        got = (attack_figures(ctx) or {}).get(name)
        return None if got is None else float(got["risk"])

    def interval(ctx: ReleaseContext) -> tuple[float, float] | None:
        got = (attack_figures(ctx) or {}).get(name)
        return None if got is None else (float(got["risk_low"]), float(got["risk_high"]))

    risk.__name__ = f"{name}_risk"
    return risk, interval


def household_figure(ctx: ReleaseContext) -> float | None:
    """Household risk (sdcMicro's ``hier_risk``, :func:`sdckit.risk.household_risk`): a household is
    re-identified when any member is, r_h = 1 - prod(1 - r_i); the expected re-identifications
    sum_i r_h(i) over n, on the released quasi-identifiers grouped by the release's household ids.
    None without a ``household:`` column, or for a release without households (synthetic data)."""
    hh = ctx.household
    qis = [c for c in ctx.quasi_identifiers if c in ctx.release.columns]
    if hh is None or not qis or not ctx.release.height:
        return None
    if hh in ctx.release.columns:
        ids = ctx.release[hh]
    elif ctx.aligned_input is not None and hh in ctx.input.columns:
        ids = ctx.aligned_input[hh]  # household_id: drop: the input's households, in the release's order
    else:
        return None
    frame = ctx.release.select(qis).with_columns(ids.alias("__household"))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = household_risk(frame, qis, household="__household", weights=None)
    return float(got.global_risk)


# --- utility ---------------------------------------------------------------------------------------


def _with_products(z: NDArray[np.float64], n_numeric: int) -> NDArray[np.float64]:
    """Numeric columns as normal scores of their ranks in the stacked rows (the same monotone map
    for input and release: skewed amounts do not swamp the fit), plus their squares and pairwise
    products; then the categorical indicators."""
    num = z[:, :n_numeric]
    if n_numeric:
        ranks = stats.rankdata(num, axis=0)
        num = special.ndtri((ranks - 0.5) / len(z))
    iu = np.triu_indices(n_numeric)
    return np.hstack([num, num[:, iu[0]] * num[:, iu[1]], z[:, n_numeric:]])


def pmse(ctx: ReleaseContext) -> float | None:
    """Propensity-score mean squared error (Woo et al. 2009; Snoke et al. 2018): a logistic
    regression (ridge, C = 1) on the numeric columns' normal scores, their squares and pairwise
    products (main effects alone cannot see a release that keeps every mean) and the categorical
    indicators tells input rows from released ones; pMSE = mean over the stacked rows of
    (p_i - c)^2 with c the released share. 0: the model cannot tell them apart; at most c (1 - c)."""
    num, cat = _columns(ctx)
    x = encode(ctx.input, ctx.input, num, cat)
    r = encode(ctx.release, ctx.input, num, cat)
    if x.shape[1] == 0:
        return None
    z = _with_products(np.vstack([x, r]), len(num))
    y = np.r_[np.zeros(len(x)), np.ones(len(r))]
    c = len(r) / len(z)
    model = LogisticRegression(C=1.0, solver="newton-cholesky", max_iter=200).fit(z, y)  # many rows, ~100 features
    p = model.predict_proba(z)[:, 1]
    return float(np.mean((p - c) ** 2))


def _design(frame: pl.DataFrame, reference: pl.DataFrame, reg: Regression, numeric: set[str]) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    cols = [np.ones(frame.height)]
    for c in reg.predictors:
        if c in numeric:
            cols.append(as_numeric(frame[c]).to_numpy())
        else:
            levels = reference[c].drop_nulls().unique().sort().to_list()[1:]
            values = frame[c].cast(reference.schema[c], strict=False).to_list()
            cols.extend(np.array([v == lv for v in values], dtype=float) for lv in levels)
    x = np.column_stack(cols)
    y = as_numeric(frame[reg.outcome]).to_numpy()
    keep = np.isfinite(y) & np.isfinite(x).all(axis=1)
    return x[keep], y[keep]


def _ols(x: NDArray[np.float64], y: NDArray[np.float64]) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Coefficients and their classical 95 % intervals' half-widths."""
    scale = np.linalg.norm(x, axis=0)
    scale[scale == 0] = 1.0
    xs = x / scale  # columns of unit length: X'X of income in the tens of millions beside an intercept is ill-conditioned
    beta_s, *_ = np.linalg.lstsq(xs, y, rcond=None)
    beta = beta_s / scale
    resid = y - xs @ beta_s
    dof = max(len(y) - x.shape[1], 1)
    sigma2 = float(resid @ resid) / dof
    cov = sigma2 * np.linalg.pinv(xs.T @ xs) / np.outer(scale, scale)
    half = stats.t.ppf(0.975, dof) * np.sqrt(np.clip(np.diag(cov), 0, None))
    return beta, half


def ci_overlap(ctx: ReleaseContext) -> float | None:
    """Mean over the coefficients of the user's regression of the confidence-interval overlap
    (Karr et al. 2006): J = (overlap / width_input + overlap / width_release) / 2, 1 when the
    intervals coincide, 0 (or below, a gap) when disjoint; clipped at 0."""
    reg = ctx.regression
    if reg is None or not all(c in ctx.release.columns for c in (reg.outcome, *reg.predictors)):
        return None
    numeric = set(ctx.numeric)
    b0, h0 = _ols(*_design(ctx.input, ctx.input, reg, numeric))
    b1, h1 = _ols(*_design(ctx.release, ctx.input, reg, numeric))
    lo = np.maximum(b0 - h0, b1 - h1)
    hi = np.minimum(b0 + h0, b1 + h1)
    overlap = hi - lo
    with np.errstate(divide="ignore", invalid="ignore"):
        j = 0.5 * (overlap / (2 * h0) + overlap / (2 * h1))
    j = np.where(np.isfinite(j), j, 0.0)
    return float(np.mean(np.clip(j, 0.0, 1.0)))


def _tvd(a: pl.Series, b: pl.Series) -> float:
    pa = a.cast(pl.String).fill_null("\x00missing").value_counts(normalize=True, name="p")
    pb = b.cast(pl.String).fill_null("\x00missing").value_counts(normalize=True, name="q")
    name = pa.columns[0]
    j = pa.join(pb.rename({pb.columns[0]: name}), on=name, how="full", coalesce=True).fill_null(0.0)
    return 0.5 * float((j["p"] - j["q"]).abs().sum())


def marginal_distance(ctx: ReleaseContext) -> float | None:
    """Mean over the released columns of the distance between the input's and the release's
    one-column distributions: total variation for a categorical column, the Kolmogorov-Smirnov
    statistic for a numeric one (both 0..1)."""
    num, cat = _columns(ctx)
    out = []
    for c in num:
        a = as_numeric(ctx.input[c]).drop_nulls().drop_nans().to_numpy()
        b = as_numeric(ctx.release[c]).drop_nulls().drop_nans().to_numpy()
        out.append(1.0 if len(a) == 0 or len(b) == 0 else float(stats.ks_2samp(a, b).statistic))
    out.extend(_tvd(ctx.input[c], ctx.release[c]) for c in cat)
    return float(np.mean(out)) if out else None


def pairwise_distance(ctx: ReleaseContext) -> float | None:
    """Mean over the column pairs of how much their relation moved: |Pearson r input - r release|
    for two numeric columns (0..2), the total variation distance of the two-way table for two
    categorical ones (0..1); mixed pairs are not counted."""
    num, cat = _columns(ctx)
    out = []
    if len(num) >= 2:
        a = pl.DataFrame([as_numeric(ctx.input[c]) for c in num]).fill_nan(None).fill_null(strategy="mean").to_numpy()
        b = pl.DataFrame([as_numeric(ctx.release[c]) for c in num]).fill_nan(None).fill_null(strategy="mean").to_numpy()
        with np.errstate(invalid="ignore", divide="ignore"):
            ca, cb = np.corrcoef(a, rowvar=False), np.corrcoef(b, rowvar=False)
        iu = np.triu_indices(len(num), 1)
        out.extend(np.nan_to_num(np.abs(ca[iu] - cb[iu]), nan=0.0).tolist())
    for c1, c2 in combinations(cat, 2):
        key_a = ctx.input[c1].cast(pl.String).fill_null("") + "\x01" + ctx.input[c2].cast(pl.String).fill_null("")
        key_b = ctx.release[c1].cast(pl.String).fill_null("") + "\x01" + ctx.release[c2].cast(pl.String).fill_null("")
        out.append(_tvd(key_a, key_b))
    return float(np.mean(out)) if out else None


def information_loss(ctx: ReleaseContext) -> float | None:
    """Mean over the released columns of the record-level loss: for a numeric column
    mean |x - x'| / (sqrt(2) sd(x)) (sdcMicro's IL1s per column), for a categorical one the share
    of cells changed (a suppressed cell counts as changed). None for a synthetic release (no row
    stems from one person)."""
    orig = ctx.aligned_input
    if orig is None:
        return None
    num, cat = _columns(ctx)
    out = []
    for c in num:
        a = as_numeric(orig[c]).to_numpy()
        b = as_numeric(ctx.release[c]).to_numpy()
        sd = float(np.nanstd(a, ddof=1)) or 1.0
        diff = np.abs(a - b)
        diff = np.where(np.isnan(b) & ~np.isnan(a), np.sqrt(2.0) * sd, diff)  # a suppressed value: a full sd
        out.append(float(np.nanmean(diff)) / (np.sqrt(2.0) * sd))
    for c in cat:
        a_s = orig[c].cast(pl.String).to_list()
        b_s = ctx.release[c].cast(pl.String).to_list()
        out.append(float(np.mean([x != y for x, y in zip(a_s, b_s, strict=True)])))
    return float(np.mean(out)) if out else None


RISK_FIGURES: tuple[Figure, ...] = (
    Figure("exposure_at_k", "exposure at k (identical rows)", "lower", exposure_at_k),
    Figure("consistent_below_k", "consistent count below k", "lower", consistent_below_k),
    Figure("global_risk", "individual risk: expected re-identifications / n", "lower", global_risk),
    Figure("linkage", "record linkage: nearest input row is the person's own", "lower", linkage_share),
    Figure("closest_share", "persons singled out closer than by any other person", "lower", closest_share),
    Figure("household_risk", "household risk: expected re-identifications (a household by any member) / n",
           "lower", household_figure),
    *(Figure(name, f"{name.replace('_', ' ')} attack risk vs the held-out control", "lower", *_attack(name))
      for name in ATTACKS),
)
"""The risk figures of every release (each attack with its interval as the point's own uncertainty)."""

UTILITY_FIGURES: tuple[Figure, ...] = (
    Figure("pmse", "propensity-score pMSE", "lower", pmse),
    Figure("ci_overlap", "confidence-interval overlap of the regression", "higher", ci_overlap),
    Figure("marginal_distance", "marginal distance (TVD / KS)", "lower", marginal_distance),
    Figure("pairwise_distance", "pairwise distance (|delta r| / TVD)", "lower", pairwise_distance),
    Figure("information_loss", "information loss (IL1s / cells changed)", "lower", information_loss),
)


def measure_written(
    ctx: ReleaseContext, *, risk: Sequence[Figure] = RISK_FIGURES, utility: Sequence[Figure] = UTILITY_FIGURES
) -> tuple[dict[str, float | None], bool]:
    """Every figure of one release (by name) and whether it is within budget: exposure at k at most the
    budget, and every attack with a budget (``attacks: {budget: ...}``) at most its budget."""
    values = {f.name: f.compute(ctx) for f in (*risk, *utility)}
    within = bool(ctx.measure.within_budget)
    budget = ctx.attacks.budget if ctx.attacks is not None else {}
    over = [a for a, limit in budget.items() if (got := values.get(a)) is not None and got > limit + 1e-12]
    return values, within and not over


def measure_intervals(ctx: ReleaseContext, figures: Sequence[Figure]) -> dict[str, tuple[float, float]]:
    """The figures' own intervals on this release (the attacks' confidence intervals), by name."""
    out = {}
    for f in figures:
        got = f.interval(ctx) if f.interval is not None else None
        if got is not None:
            out[f.name] = got
    return out
