"""A report's figures as PNG data URIs (``data:image/png;base64,...``), so the page is one file.

The plots are the package's own (:func:`autorubric_local.metrics.write_plots`,
:func:`autorubric_local.bias.plots.write_plots`), drawn with matplotlib's Agg backend into a
temporary folder and read back; only the score histogram is drawn here.
"""

from __future__ import annotations

import base64
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover
    from autorubric_local.bias.aggregate import SweepAggregate
    from autorubric_local.data.dataset import RubricDataset
    from autorubric_local.metrics.result import MetricsResult
    from autorubric_local.metrics.types import GradedRun

__all__ = ["data_uri", "metrics_figures", "score_histogram", "sweep_figures", "win_rate_heatmap"]

HISTOGRAM_BINS = 10
"""Bins of the score histogram over [0, 1] (a wider range when scores fall outside it)."""


def data_uri(png: bytes) -> str:
    """``png`` (the bytes of a PNG file) as a ``data:image/png;base64,`` URI."""
    return "data:image/png;base64," + base64.b64encode(png).decode("ascii")


def _pyplot() -> Any:
    import matplotlib

    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    return plt


def _figure_uri(plt: Any, fig: Any) -> str:
    """``fig`` laid out, drawn as a 100-dpi PNG and closed: its data URI."""
    fig.tight_layout()
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "figure.png"
        fig.savefig(path, dpi=100)
        plt.close(fig)
        return data_uri(path.read_bytes())


def score_histogram(scores: Sequence[float]) -> str:
    """Histogram of item scores (``HISTOGRAM_BINS`` bins over [0, 1], widened to cover every
    score, e.g. un-normalised or negative ones), as a data URI."""
    plt = _pyplot()
    low, high = min(0.0, *scores), max(1.0, *scores)
    fig, ax = plt.subplots(figsize=(6, 3.2))
    ax.hist(list(scores), bins=HISTOGRAM_BINS, range=(low, high), color="#4c72b0", edgecolor="white")
    ax.set_xlabel("item score")
    ax.set_ylabel("items")
    ax.yaxis.get_major_locator().set_params(integer=True)  # counts: no 0.5-item ticks
    ax.set_title(f"Score distribution (n={len(scores)})")
    return _figure_uri(plt, fig)


def win_rate_heatmap(systems: Sequence[str], win_rates: dict[tuple[str, str], float], title: str) -> str:
    """Heat map of a comparison's win rates (row system against column system, wins + ties / 2;
    blank where a pair was not compared), systems in ``systems`` order, as a data URI."""
    import numpy as np

    plt = _pyplot()
    grid = np.full((len(systems), len(systems)), np.nan)
    for i, row in enumerate(systems):
        for j, column in enumerate(systems):
            if (row, column) in win_rates:
                grid[i, j] = win_rates[(row, column)]
    size = max(3.5, 0.7 * len(systems) + 2.0)
    fig, ax = plt.subplots(figsize=(size + 1.0, size))
    image = ax.imshow(grid, vmin=0.0, vmax=1.0, cmap="RdBu")
    ax.set_xticks(range(len(systems)), labels=list(systems), rotation=45, ha="right")
    ax.set_yticks(range(len(systems)), labels=list(systems))
    for i in range(len(systems)):
        for j in range(len(systems)):
            if not np.isnan(grid[i, j]):
                ax.text(j, i, f"{grid[i, j]:.2f}", ha="center", va="center", fontsize=8)
    fig.colorbar(image, ax=ax, label="win rate of the row")
    ax.set_title(title, fontsize=9)
    return _figure_uri(plt, fig)


def _read_all(paths: Sequence[Path]) -> list[dict[str, str]]:
    return [{"name": path.stem, "src": data_uri(path.read_bytes())} for path in paths]


def metrics_figures(metrics: MetricsResult, result: GradedRun, dataset: RubricDataset) -> list[dict[str, str]]:
    """Confusion matrices, reliability diagram and judge-vs-human scores of a labelled run.

    Returns
    -------
    list of dict
        ``{"name": file stem, "src": data URI}``, in :func:`~autorubric_local.metrics.write_plots`
        order.
    """
    from autorubric_local.metrics import write_plots

    with tempfile.TemporaryDirectory() as folder:
        return _read_all(write_plots(metrics, folder, result, dataset))


def sweep_figures(aggregates: Sequence[SweepAggregate], name: str | None = None) -> list[dict[str, str]]:
    """A sweep's Grade Score bars and per-judge heat maps, titled with the sweep's ``name``
    (see :mod:`autorubric_local.bias.plots`)."""
    from autorubric_local.bias.plots import write_plots

    if not aggregates:
        return []
    with tempfile.TemporaryDirectory() as folder:
        return _read_all(write_plots(aggregates, folder, run=name))
