"""Plots say which run and which judge they show, and the score scatter hides no point: its
points are jittered (seeded, so the same run gives the same picture) and the legend says so."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import sweep_crash_worker as worker
from matplotlib.figure import Figure
from test_metrics_support import BIN, ORD, make_run

from autorubric_local.bias import run_sweep
from autorubric_local.bias.plots import write_plots as write_sweep_plots
from autorubric_local.metrics import compute_metrics
from autorubric_local.metrics.plots import JITTER_FRACTION, jitter, plot_context
from autorubric_local.metrics.plots import write_plots as write_metrics_plots


@pytest.fixture
def figures(monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, dict[str, Any]]]:
    """What each saved figure shows, by file name: its titles and its scatter points and legend."""
    saved: dict[str, dict[str, Any]] = {}
    original = Figure.savefig

    def record(fig: Figure, path: Any, *args: Any, **kwargs: Any) -> Any:
        titles = [ax.get_title() for ax in fig.axes if ax.get_title()]
        if fig._suptitle is not None:  # type: ignore[attr-defined]
            titles.insert(0, fig._suptitle.get_text())  # type: ignore[attr-defined]
        points = [c.get_offsets() for ax in fig.axes for c in ax.collections if len(c.get_offsets())]
        legends = [t.get_text() for ax in fig.axes if ax.get_legend() for t in ax.get_legend().get_texts()]
        saved[Path(path).name] = {"titles": titles, "points": points, "legend": legends,
                                  "alpha": [c.get_alpha() for ax in fig.axes for c in ax.collections]}
        return original(fig, path, *args, **kwargs)

    monkeypatch.setattr(Figure, "savefig", record)
    yield saved


def test_sweep_plots_name_the_sweep_and_the_judge(tmp_path: Path, figures: dict[str, dict[str, Any]]) -> None:
    result = run_sweep(worker.ITEMS[:2], worker.judges(), dataclasses.replace(worker.SETTINGS, unrelated_option=False))
    paths = write_sweep_plots(result.aggregates, tmp_path, run="bias-v1")
    assert sorted(p.name for p in paths) == ["grade-scores.png", "heatmap-a.png", "heatmap-b.png"]
    assert figures["heatmap-a.png"]["titles"][0] == "Position bias of judge a - sweep bias-v1"
    assert figures["grade-scores.png"]["titles"] == [
        "Grade Score per judge (bootstrap intervals)\nsweep bias-v1, judges a, b"]


def test_metrics_plots_name_the_run_and_judge_and_jitter_the_scatter(
    tmp_path: Path, figures: dict[str, dict[str, Any]]
) -> None:
    # Six items, three pairs with the same (human, judge) scores: unjittered, only 3 dots show.
    truth = [["MET", "L1"], ["MET", "L1"], ["UNMET", "L0"], ["UNMET", "L0"], ["MET", "L2"], ["MET", "L2"]]
    p_met = [[0.9 if t[0] == "MET" else 0.2, None] for t in truth]
    res, ds = make_run([BIN, ORD], truth, truth, votes={"smollm2": truth}, p_met=p_met)
    res.experiment_name = "essays-v1"
    metrics = compute_metrics(res, ds)
    write_metrics_plots(metrics, tmp_path, res, ds)
    assert figures["confusion_b.png"]["titles"] == ["b (n=6)\nrun essays-v1, judge smollm2"]
    assert figures["scores.png"]["titles"][0].endswith("\nrun essays-v1, judge smollm2")
    (offsets,) = figures["scores.png"]["points"]
    assert len(offsets) == 6 and len({tuple(p) for p in np.asarray(offsets)}) == 6  # no point hidden
    assert figures["scores.png"]["alpha"][0] == 0.5
    assert figures["scores.png"]["legend"][0] == "items (n=6), jittered by up to \u00b10.02 on both axes"
    first = dict(figures)
    write_metrics_plots(metrics, tmp_path / "again", res, ds, run="other", judges=["x", "y"])
    assert np.array_equal(figures["scores.png"]["points"][0], first["scores.png"]["points"][0])  # seeded
    assert figures["reliability.png"]["titles"][0].endswith("\nrun other, judges x, y")


def test_jitter_stays_within_its_band_and_plot_context_reads_well() -> None:
    rng = np.random.default_rng(0)
    moved = jitter([0.0] * 1000, 2.0, rng)
    assert max(abs(v) for v in moved) <= JITTER_FRACTION * 2.0 and len(set(moved)) == 1000
    assert plot_context(None, []) == ""
    assert plot_context("r", ["j"]) == "run r, judge j"
    assert plot_context(None, ["a", "b"]) == "judges a, b"
