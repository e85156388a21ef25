"""PNG plots of an indeterminacy report against beta (matplotlib, Agg backend; imported only
when plotting). Every value is a mean over the report's criteria.

- ``metrics-vs-beta.png``: one panel per metric, one line per judge, beta on the x axis:
  the forced-choice metrics (hit rate, Cohen's kappa, KL human -> judge, JSD; flat, as they
  do not depend on beta), the multi-label MSE, and per tau the decision consistency ``C^tau``
  and the estimation bias ``B^tau``.
- ``regret-vs-beta.png``: per tau, the mean regret in ``C^tau`` (top) and in ``|B^tau|``
  (bottom) of choosing the judge each agreement metric ranks best, one line per metric.
"""

from __future__ import annotations

from pathlib import Path

from autorubric_local.indeterminacy.analysis import AGREEMENT_METRICS
from autorubric_local.indeterminacy.report import METRIC_TITLES, IndeterminacyReport

__all__ = ["plot_metrics", "plot_regret", "write_plots"]

STYLES = [("o", "-"), ("s", "--"), ("^", ":"), ("v", "-."), ("D", "-"), ("x", "--")]
"""(marker, line style) per line, so lines with equal values stay visible."""
MIN_SPAN = 0.1
"""Smallest y range of a metric panel."""


def _pyplot():  # type: ignore[no-untyped-def]
    import matplotlib

    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    return plt


def plot_metrics(report: IndeterminacyReport, path: Path) -> Path:
    """Every metric against beta, one line per judge (module docstring)."""
    plt = _pyplot()
    betas, taus, judges = report.betas, report.taus, report.judges
    panels: list[tuple[str, str, float | None]] = [(m, METRIC_TITLES[m], None) for m in ("hit_rate", "kappa", "kl", "jsd")]
    panels.append(("mse", "MSE (multi-label, lower better)", None))
    for tau in taus:
        panels += [("consistency", f"decision consistency C^tau, tau={tau}", tau),
                   ("bias", f"estimation bias B^tau, tau={tau}", tau)]
    columns = 3
    rows = (len(panels) + columns - 1) // columns
    fig, axes = plt.subplots(rows, columns, figsize=(4.0 * columns, 2.8 * rows), squeeze=False)
    for ax in axes.flat[len(panels):]:
        ax.axis("off")
    for ax, (metric, title, tau) in zip(axes.flat, panels, strict=False):
        for index, judge in enumerate(judges):
            marker, line = STYLES[index % len(STYLES)]
            if metric in ("hit_rate", "kappa", "kl", "jsd"):
                value = report.mean_agreement(judge, metric)
                ys = [value for _ in betas]
            else:
                ys = [report.mean_downstream(judge, metric, b, tau if tau is not None else taus[0]) for b in betas]
            ax.plot(betas, [float("nan") if y is None else y for y in ys], marker=marker, markersize=4, linestyle=line,
                    alpha=0.8, label=judge)  # distinct styles: judges with equal values stay visible
        if metric == "bias":
            ax.axhline(0.0, color="grey", linewidth=0.8)
        low, high = ax.get_ylim()
        if high - low < MIN_SPAN:  # do not blow a difference of 0.001 up to the panel's height
            middle = (low + high) / 2
            ax.set_ylim(middle - MIN_SPAN / 2, middle + MIN_SPAN / 2)
        ax.set_title(title, fontsize=9)
        ax.set_xlabel("human beta", fontsize=8)
        ax.tick_params(labelsize=7)
    axes.flat[0].legend(fontsize=7)
    fig.suptitle(f"Metrics against human sensitivity beta (mean over {len(report.criteria)} criteria)", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=80)
    plt.close(fig)
    return path


def plot_regret(report: IndeterminacyReport, path: Path) -> Path:
    """Mean regret of each agreement metric's choice against beta, per tau (module docstring)."""
    plt = _pyplot()
    betas, taus = report.betas, report.taus
    fig, axes = plt.subplots(2, len(taus), figsize=(4.4 * len(taus), 5.6), squeeze=False)
    for column, tau in enumerate(taus):
        for row, kind in enumerate(("consistency", "bias")):
            ax = axes[row][column]
            for index, metric in enumerate(AGREEMENT_METRICS):
                ys = [report.mean_regret(metric, b, tau, kind) for b in betas]
                marker, line = STYLES[index % len(STYLES)]
                # forced-choice metrics that choose the same judge coincide: distinct markers and
                # sizes keep each visible
                ax.plot(betas, [float("nan") if y is None else y for y in ys], marker=marker,
                        markersize=9 - 1.5 * index, linestyle="-" if metric == "mse" else line, alpha=0.75,
                        linewidth=2.2 if metric == "mse" else 1.2, label=METRIC_TITLES[metric])
            what = "C^tau" if kind == "consistency" else "|B^tau|"
            ax.set_title(f"regret in {what}, tau={tau}", fontsize=9)
            ax.set_xlabel("human beta", fontsize=8)
            ax.tick_params(labelsize=7)
    axes[0][0].legend(fontsize=7)
    fig.suptitle("Regret of choosing the judge each metric ranks best (0 = best downstream)", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=80)
    plt.close(fig)
    return path


def write_plots(report: IndeterminacyReport, folder: str | Path) -> list[Path]:
    """Both plots into ``folder`` (created); their paths."""
    out = Path(folder)
    out.mkdir(parents=True, exist_ok=True)
    return [plot_metrics(report, out / "metrics-vs-beta.png"), plot_regret(report, out / "regret-vs-beta.png")]
