"""PNG plots of a :class:`MetricsResult` with matplotlib (Agg backend, no display needed)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING

from autorubric_local.metrics.result import MetricsResult
from autorubric_local.metrics.types import GradedRun

if TYPE_CHECKING:  # pragma: no cover
    from autorubric_local.data.dataset import RubricDataset

__all__ = ["write_plots"]


def _slug(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", name).strip("_") or "criterion"


def write_plots(
    metrics: MetricsResult,
    out_dir: str | Path,
    eval_result: GradedRun | None = None,
    dataset: RubricDataset | None = None,
) -> list[Path]:
    """Write confusion matrices (one per criterion with pairs, ``confusion_<name>.png``), the
    reliability diagram (``reliability.png``, when there is a calibration) and a
    judge-vs-human score scatter (``scores.png``, when the run and dataset are given) to
    ``out_dir``.

    Returns
    -------
    list of Path
        The files written, in that order.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    judge_scores: list[float] = []
    human_scores: list[float] = []
    if eval_result is not None and dataset is not None:
        from autorubric_local.metrics.extract import align

        data = align(eval_result, dataset, None, metrics.cannot_assess_mode, metrics.na_mode)
        judge_scores, human_scores = data.judge_score, data.human_score
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    for c in metrics.per_criterion:
        if not c.support:
            continue
        cm = np.asarray(c.confusion_matrix)
        size = max(3.0, 0.8 * len(c.labels) + 2)
        fig, ax = plt.subplots(figsize=(size, size))
        ax.imshow(cm, cmap="Blues")
        ax.set_xticks(range(len(c.labels)), c.labels, rotation=45, ha="right")
        ax.set_yticks(range(len(c.labels)), c.labels)
        for (i, j), v in np.ndenumerate(cm):
            ax.text(j, i, str(v), ha="center", va="center",
                    color="white" if v > cm.max() / 2 else "black")
        ax.set_xlabel("judge")
        ax.set_ylabel("human")
        ax.set_title(f"{c.name} (n={c.support})")
        fig.tight_layout()
        path = out / f"confusion_{_slug(c.name)}.png"
        fig.savefig(path, dpi=100)
        plt.close(fig)
        written.append(path)
    if metrics.calibration is not None:
        cal = metrics.calibration
        fig, ax = plt.subplots(figsize=(5, 5))
        ax.plot([0, 1], [0, 1], "--", color="grey", label="perfect")
        pts = [(b.mean_confidence, b.fraction_positive, b.count) for b in cal.bins if b.count]
        if pts:
            xs, ys, _ = zip(*pts)
            ax.plot(xs, ys, "o-", label="judge")
            for x, y, n in pts:
                ax.annotate(str(n), (x, y), textcoords="offset points", xytext=(4, -10), fontsize=7)
        ax.set_xlim(0, 1)
        ax.set_ylim(0, 1)
        ax.set_xlabel("P(MET)")
        ax.set_ylabel("fraction MET (human)")
        ax.set_title(f"Reliability (ECE={cal.ece:.3f}, Brier={cal.brier_score:.3f})")
        ax.legend(loc="upper left")
        fig.tight_layout()
        path = out / "reliability.png"
        fig.savefig(path, dpi=100)
        plt.close(fig)
        written.append(path)
    if judge_scores:
        fig, ax = plt.subplots(figsize=(5, 5))
        ax.scatter(human_scores, judge_scores, alpha=0.6)
        lo = min(0.0, min(human_scores), min(judge_scores))
        hi = max(1.0, max(human_scores), max(judge_scores))
        ax.plot([lo, hi], [lo, hi], "--", color="grey")
        ax.set_xlabel("human score")
        ax.set_ylabel("judge score")
        rho = metrics.score_spearman.coefficient if metrics.score_spearman else None
        ax.set_title("Scores" + (f" (Spearman {rho:.3f})" if rho is not None else ""))
        fig.tight_layout()
        path = out / "scores.png"
        fig.savefig(path, dpi=100)
        plt.close(fig)
        written.append(path)
    return written
