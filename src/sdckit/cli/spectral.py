"""``sdckit spectral ...`` (private PCA design) and ``sdckit noise`` (the local additive-noise mechanism)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import typer
from rich.table import Table

from sdckit._io import check_output_path, write_table
from sdckit.cli._common import (
    JSON_HELP,
    KEEP_ORDER_HELP,
    check_plot_path,
    check_suffix,
    data_source,
    handles_errors,
    order_note,
    parse_columns,
    print_json,
    progress,
    read_table,
    reads_data,
    save_figure,
    shuffle_rows,
    stdout,
)
from sdckit.errors import MissingValuesError

spectral_app = typer.Typer(
    name="spectral",
    help="Private PCA: noise–information separation U(t), leakage, the privacy–utility curve, noise design.",
    no_args_is_help=True,
)

_C = typer.Option(..., "--c", help="Aspect ratio p/n (questions per respondent), > 0.")
_R = typer.Option(..., "--r", help="Share of eigenvalues carrying information, in (0, 1).")
_S = typer.Option(..., "--s", help="Information eigenvalue (variance units), > 0.")
_DISTRIBUTIONS = ("gaussian", "laplace", "uniform", "rademacher", "discrete")


def register(app: typer.Typer) -> None:
    """Add the ``spectral`` group and the top-level ``noise`` command."""
    app.add_typer(spectral_app, name="spectral")
    app.command("noise")(noise)


def _model(c: float, r: float, s: float) -> Any:
    # lazy: sdckit --help stays fast
    from sdckit.spectral import SpikedModel

    return SpikedModel(c, r, s)


def _check_distribution(value: str) -> str:
    if value not in _DISTRIBUTIONS:
        raise typer.BadParameter(f"{value!r} is not a noise law; use one of {', '.join(_DISTRIBUTIONS)}.")
    return value


def _check_missing(value: str) -> str:
    if value not in ("error", "drop"):
        raise typer.BadParameter("use 'error' (stop at a missing value, the default) or 'drop' (leave those rows out)")
    return value


@spectral_app.command("separation")
@handles_errors
def separation(
    c: float = _C,
    r: float = _R,
    s: float = _S,
    t: float = typer.Option(..., "--t", help="Noise variance per entry, >= 0."),
    method: str = typer.Option("critical", "--method", help="critical | discriminant | precise."),
    as_json: bool = typer.Option(False, "--json", help=JSON_HELP),
) -> None:
    """U(t), N(t), the support of the limit spectrum and t* for the spiked model."""
    if method not in ("critical", "discriminant", "precise"):
        raise typer.BadParameter(f"{method!r}: use critical, discriminant or precise.", param_hint="--method")
    m = _model(c, r, s)
    sup = m.support(t)
    out = {
        "c": c, "r": r, "s": s, "t": t, "method": method,
        "separation": m.separation(t, method=method),
        "n_components": sup.n_components,
        "critical_noise": m.critical_noise(),
        "support": sup.to_dict(),
    }
    if as_json:
        print_json(out)
        return
    table = Table("quantity", "value")
    table.add_row("U(t) separation", f"{out['separation']:.6g}")
    table.add_row("N(t) components in (0, inf)", str(sup.n_components))
    table.add_row("support", _support_text(sup))
    table.add_row("t* (gap closes)", f"{out['critical_noise']:.6g}")
    stdout.print(table)


def _support_text(sup: Any) -> str:
    if sup.n_components == 2:
        return f"[{sup.left:.4g}, {sup.gap_low:.4g}] u [{sup.gap_high:.4g}, {sup.right:.4g}]"
    return f"[{sup.left:.4g}, {sup.right:.4g}]"


@spectral_app.command("curve")
@handles_errors
def curve(
    c: float = _C,
    r: float = _R,
    s: float = _S,
    p: int = typer.Option(50, "--p", help="Number of questions (for the leakage), >= 1."),
    points: int = typer.Option(21, "--points", help="Rows of the table (the plot uses 400)."),
    plot: Path | None = typer.Option(None, "--plot", help="Write U(t) and g_IT(L) (L: leakage in nats) to this .svg, .png or .pdf file."),
    as_json: bool = typer.Option(False, "--json", help=JSON_HELP),
) -> None:
    """The privacy–utility curve: t, U(t), P_IT(t) (nats) and P_ET(t) from 0 to 1.2 t*."""
    if points < 2:
        raise typer.BadParameter("give at least 2 points", param_hint="--points")
    if plot is not None:  # checked before the work, not after
        check_plot_path(plot)
    m = _model(c, r, s)
    tstar = m.critical_noise()
    t = np.linspace(0.0, 1.2 * tstar if tstar > 0 else s, points)
    rows = {
        "t": t, "separation": m.separation(t), "information_leakage_nats": m.information_leakage(t, p),
        "estimation_mmse": m.estimation_leakage(t, p),
    }
    if plot is not None:
        _write_curve_plot(m, p, plot)
    if as_json:
        print_json({"c": c, "r": r, "s": s, "p": p, "critical_noise": tstar,
                    "leakage_at_critical_noise_nats": m.information_leakage(tstar, p) if tstar > 0 else None,
                    "curve": [dict(zip(rows, vals, strict=True)) for vals in zip(*rows.values(), strict=True)]})
        return
    table = Table("t", "U(t)", "P_IT (nats)", "P_ET (MMSE)", title=f"t* = {tstar:.4g}")
    for vals in zip(*rows.values(), strict=True):
        table.add_row(*(f"{v:.4g}" for v in vals))
    stdout.print(table)
    if plot is not None:
        stdout.print(f"plot written to {plot}")


def _write_curve_plot(m: Any, p: int, path: Path) -> None:
    # lazy: sdckit --help stays fast
    import matplotlib

    matplotlib.use("Agg")
    # lazy: sdckit --help stays fast
    import matplotlib.pyplot as plt

    from sdckit.spectral._plots import plot_privacy_utility, plot_separation

    fig1 = plot_separation(m)
    fig2 = plot_privacy_utility(m, p)
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(11, 3.8), layout="constrained")
    for src, dst in ((fig1, a1), (fig2, a2)):
        ax = src.axes[0]
        for line in ax.get_lines():
            dst.plot(line.get_xdata(), line.get_ydata(), ls=line.get_linestyle(), color=line.get_color(),
                     marker=line.get_marker(), label=line.get_label())
        dst.set_xlabel(ax.get_xlabel())
        dst.set_ylabel(ax.get_ylabel())
        dst.set_title(ax.get_title())
        dst.grid(alpha=0.3)
        dst.legend()
        plt.close(src)
    save_figure(fig, path)
    plt.close(fig)


@spectral_app.command("design")
@handles_errors
@reads_data
def design(
    c: float | None = typer.Option(None, "--c", help="Aspect ratio p/n (or give --data)."),
    r: float | None = typer.Option(None, "--r", help="Share of informative eigenvalues (or --data)."),
    s: float | None = typer.Option(None, "--s", help="Information eigenvalue (or --data)."),
    p: int | None = typer.Option(None, "--p", help="Number of questions (or --data: its columns)."),
    max_leakage_nats: float | None = typer.Option(
        None, "--max-leakage-nats", help="Largest information leakage P_IT allowed, in nats per respondent."
    ),
    old_epsilon: str | None = typer.Option(None, "--epsilon", hidden=True, help="Renamed --max-leakage-nats."),
    mmse: float | None = typer.Option(None, "--mmse", help="MMSE floor P_ET (variance units)."),
    min_separation: float | None = typer.Option(None, "--min-separation", help="Keep U(t) >= this."),
    data: Path | None = typer.Option(None, "--data", help="Fit the spiked model to this file instead."),
    columns: str | None = typer.Option(None, "--columns", "-c", help="Numeric columns of --data (default: all)."),
    standardize: bool = typer.Option(False, "--standardize", help="z-score the columns of --data first."),
    missing: str = typer.Option("error", "--missing", callback=_check_missing,
                                help="Rows of --data with missing values: 'error' (default) or 'drop'."),
    as_json: bool = typer.Option(False, "--json", help=JSON_HELP),
    read: Any = None,  # filled by @reads_data
) -> None:
    """Recommend the noise variance t for a leakage budget, an MMSE floor, or a separation target."""
    # lazy: sdckit --help stays fast
    from sdckit.spectral import design_noise, design_noise_from_data

    if old_epsilon is not None:
        raise typer.BadParameter(
            f"--epsilon is now --max-leakage-nats (e.g. --max-leakage-nats {old_epsilon}): the figure is the "
            "information leakage P_IT in nats per respondent, not differential privacy's epsilon",
            param_hint="--epsilon",
        )
    if sum(v is not None for v in (max_leakage_nats, mmse, min_separation)) != 1:
        raise typer.BadParameter("give exactly one of --max-leakage-nats, --mmse or --min-separation")
    fit = None
    if data is not None and any(v is not None for v in (c, r, s, p)):
        raise typer.BadParameter("--data fits c, r, s and p from the file; leave out --c, --r, --s and --p")
    if data is not None:
        fit, d = design_noise_from_data(data_source(data, read), parse_columns(columns), standardize=standardize,
                                        max_leakage=max_leakage_nats, min_mmse=mmse, min_separation=min_separation,
                                        missing="drop" if missing == "drop" else "error")
    else:
        if c is None or r is None or s is None or p is None:
            raise typer.BadParameter("give --c, --r, --s and --p (or --data)")
        d = design_noise(_model(c, r, s), p, max_leakage=max_leakage_nats, min_mmse=mmse, min_separation=min_separation)
    if as_json:
        print_json({"design": d.to_dict(), "fit": fit.to_dict() if fit is not None else None})
        return
    table = Table("quantity", "value", title=d.constraint)
    table.add_row("recommended noise variance t", f"{d.t:.6g}")
    table.add_row("information leakage P_IT (nats)", f"{d.information_leakage_nats:.6g}")
    table.add_row("estimation MMSE P_ET (variance units)", f"{d.estimation_mmse:.6g}")
    table.add_row("separation U left", f"{d.separation:.6g} ({d.utility_share:.0%} of no-noise)")
    table.add_row("t* (gap closes)", f"{d.critical_noise:.6g}")
    table.add_row("separable components", f"{d.n_separable} of k = {d.k}")
    if fit is not None:
        table.add_row("fitted model", f"c = {d.c:.4g}, r = {d.r:.4g}, s = {d.s:.4g}, floor = {d.floor:.4g}")
    stdout.print(table)
    stdout.print(d.note, highlight=False)


@spectral_app.command("support")
@handles_errors
def support_cmd(
    c: float = _C,
    taus: str = typer.Option(..., "--taus", help="Population eigenvalues, comma-separated, e.g. 1,4,12."),
    weights: str | None = typer.Option(None, "--weights", help="Their shares (sum 1); default equal."),
    as_json: bool = typer.Option(False, "--json", help=JSON_HELP),
) -> None:
    """Support of the limit spectrum for any discrete population law: components, gaps, atom at 0."""
    # lazy: sdckit --help stays fast
    from sdckit.spectral import support

    sup = support(c, _floats(taus, "--taus"), _floats(weights, "--weights") if weights else None)
    if as_json:
        print_json(sup.to_dict())
        return
    table = Table("component", "lower", "upper", "share of eigenvalues", title=f"atom at 0: {sup.atom:.4g}")
    for i, iv in enumerate(sup.intervals, 1):
        table.add_row(str(i), f"{iv.lower:.6g}", f"{iv.upper:.6g}", f"{iv.mass:.4g}")
    stdout.print(table)
    for g in sup.gaps:
        stdout.print(f"gap [{g.lower:.6g}, {g.upper:.6g}], width {g.width:.6g}: above it {g.mass_above:.4g} "
                     "of the eigenvalues")


def _floats(text: str, hint: str) -> list[float]:
    try:
        return [float(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise typer.BadParameter(f"{text!r}: give numbers separated by commas", param_hint=hint) from None


@spectral_app.command("simulate")
@handles_errors
def simulate(
    c: float = _C,
    r: float = _R,
    s: float = _S,
    t: float = typer.Option(..., "--t", help="Noise variance per entry."),
    p: int = typer.Option(500, "--p", help="Questions per simulated survey."),
    reps: int = typer.Option(3, "--reps", help="Independent surveys."),
    distribution: str = typer.Option("gaussian", "--distribution", callback=_check_distribution,
                                     help="Law of data and noise entries."),
    seed: int = typer.Option(20261130, "--seed", help="Seed of the simulation."),
    as_json: bool = typer.Option(False, "--json", help=JSON_HELP),
) -> None:
    """Monte Carlo of the empirical gap lambda_k - lambda_{k+1} against the limit U(t)."""
    # lazy: sdckit --help stays fast
    from sdckit.spectral import simulate_gap

    sim = simulate_gap(_model(c, r, s), t, p, reps=reps, distribution=distribution, seed=seed)  # type: ignore[arg-type]
    if as_json:
        print_json(sim.to_dict())
        return
    stdout.print(f"p = {sim.p}, n = {sim.n}, k = {sim.k}: empirical gap {sim.mean:.5g} "
                 f"(+- {sim.std_error:.2g}) vs limit U(t) = {sim.predicted:.5g}")


@handles_errors
@reads_data
def noise(
    data: Path = typer.Argument(..., help="A CSV, TSV, Parquet or JSON-lines file (.gz allowed)."),
    columns: str | None = typer.Option(None, "--columns", "-c",
                                       help="Numeric columns to perturb (default: all, then all must be numeric)."),
    t: float = typer.Option(..., "--t", help="Noise variance per entry (squared units of the columns)."),
    distribution: str = typer.Option("gaussian", "--distribution", callback=_check_distribution,
                                     help="gaussian | laplace | uniform | rademacher | discrete."),
    seed: int | None = typer.Option(None, "--seed", help="Seed, for tests only: whoever knows it can remove the noise. Omit for OS entropy."),
    out: Path = typer.Option(..., "--out", "-o", help="Output file: .parquet, .csv or .jsonl."),
    missing: str = typer.Option("error", "--missing", callback=_check_missing,
                                help="Rows with missing values: 'error' (default) or 'drop' (left out, counted)."),
    keep_order: bool = typer.Option(False, "--keep-order", help=KEEP_ORDER_HELP),
    as_json: bool = typer.Option(False, "--json", help=JSON_HELP),
    read: Any = None,  # filled by @reads_data
) -> None:
    """Add local noise of variance t to each answer (the private-PCA mechanism) and write the result."""
    # lazy: sdckit --help stays fast
    from sdckit.spectral import AdditiveNoise

    check_suffix(out, (".parquet", ".csv", ".csv.gz", ".tsv", ".jsonl"), "--out")
    check_output_path(out, inputs=[data])  # before the work; never over the input file
    cols = parse_columns(columns)
    with progress("adding noise", quiet=as_json):
        frame, n_dropped = read_table(data, read, drop_missing_in=(cols or []) if missing == "drop" else None)
        try:
            noisy = AdditiveNoise(t=t, distribution=distribution, columns=cols,  # type: ignore[arg-type]
                                  random_state=seed).fit_transform(frame)
        except MissingValuesError as err:  # the library's hint is for Python; this command has --missing
            raise MissingValuesError(err.column, err.count, err.first_row,
                                     fix="Add --missing drop to leave those rows out (counted), or impute them first.") from None
        written, order = shuffle_rows(noisy, keep_order=keep_order, seed=seed)
        write_table(written, out)
    if as_json:
        print_json({"source": data.name, "out": str(out), "n_rows": len(noisy), "n_dropped": n_dropped,
                    "t": t, "distribution": distribution, "seeded": seed is not None,
                    "rows_shuffled": order is not None})
        return
    dropped = f"; {n_dropped:,} rows with missing values left out" if n_dropped else ""
    stdout.print(f"{len(noisy):,} rows written to {out} (noise variance t = {t:g}, {distribution}){dropped}; "
                 f"{order_note(keep_order)}")
