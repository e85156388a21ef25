"""PNG plots of a :class:`MetricsResult` with matplotlib (Agg backend, no display needed).

Every title names the run and its judge(s) when they are known. The judge-vs-human score
scatter jitters its points (uniform, :data:`JITTER_FRACTION` of the axis span, seed
:data:`JITTER_SEED`) and draws them half transparent, so items with equal scores stay visible;
its legend says so.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from autorubric_local.metrics.result import MetricsResult
from autorubric_local.metrics.types import GradedRun

if TYPE_CHECKING:  # pragma: no cover
    from autorubric_local.data.dataset import RubricDataset

__all__ = ["JITTER_FRACTION", "JITTER_SEED", "jitter", "plot_context", "write_plots"]

JITTER_FRACTION = 0.02
"""Half-width of the scatter's jitter, as a share of the axis span."""
JITTER_SEED = 0
"""Seed of the scatter's jitter: the same run always gives the same picture."""


def _slug(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", name).strip("_") or "criterion"


def plot_context(run: str | None, judges: Sequence[str]) -> str:
    """The title line naming the run and judge(s): ``run r1, judge j`` (empty when neither is known)."""
    parts = [f"run {run}"] if run else []
    if judges:
        parts.append(f"judge{'s' if len(judges) > 1 else ''} {', '.join(judges)}")
    return ", ".join(parts)


def _judges_of(eval_result: GradedRun | None) -> list[str]:
    """Judge ids of a run's reports (``judge_scores`` keys), in first-seen order."""
    if eval_result is None:
        return []
    return list(dict.fromkeys(j for r in eval_result.item_results for j in r.report.judge_scores))


def jitter(values: Sequence[float], span: float, rng: object) -> list[float]:
    """``values`` each moved by a uniform draw in ``[-JITTER_FRACTION * span, +JITTER_FRACTION * span]``.

    Parameters
    ----------
    values : sequence of float, shape (n,)
    span : float, > 0
        The axis range the jitter is a share of.
    rng : numpy.random.Generator
    """
    width = JITTER_FRACTION * span
    jitter = rng.uniform(-width, width, size=len(values))  # type: ignore[attr-defined]
    return [v + float(d) for v, d in zip(values, jitter, strict=True)]


def write_plots(
    metrics: MetricsResult,
    out_dir: str | Path,
    eval_result: GradedRun | None = None,
    dataset: RubricDataset | None = None,
    *,
    run: str | None = None,
    judges: Sequence[str] | None = None,
) -> list[Path]:
    """Write confusion matrices (one per criterion with pairs, ``confusion_<name>.png``), the
    reliability diagram (``reliability.png``, when there is a calibration) and a
    judge-vs-human score scatter (``scores.png``, when the run and dataset are given, points
    jittered: module docstring) to ``out_dir``.

    Titles name the run (``run``, else ``eval_result.experiment_name``) and the judges
    (``judges``, else the judge ids of ``eval_result``'s reports) when known.

    Returns
    -------
    list of Path
        The files written, in that order.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    context = plot_context(run or getattr(eval_result, "experiment_name", None),
                           list(judges) if judges is not None else _judges_of(eval_result))
    suffix = f"\n{context}" if context else ""
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
        ax.set_title(f"{c.name} (n={c.support}){suffix}", fontsize=9)
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
            xs, ys, _ = zip(*pts, strict=True)
            ax.plot(xs, ys, "o-", label="judge")
            for x, y, n in pts:
                ax.annotate(str(n), (x, y), textcoords="offset points", xytext=(4, -10), fontsize=7)
        ax.set_xlim(0, 1)
        ax.set_ylim(0, 1)
        ax.set_xlabel("P(MET)")
        ax.set_ylabel("fraction MET (human)")
        ax.set_title(f"Reliability (ECE={cal.ece:.3f}, Brier={cal.brier_score:.3f}){suffix}", fontsize=9)
        ax.legend(loc="upper left")
        fig.tight_layout()
        path = out / "reliability.png"
        fig.savefig(path, dpi=100)
        plt.close(fig)
        written.append(path)
    if judge_scores:
        fig, ax = plt.subplots(figsize=(5, 5))
        lo = min(0.0, min(human_scores), min(judge_scores))
        hi = max(1.0, max(human_scores), max(judge_scores))
        rng = np.random.default_rng(JITTER_SEED)
        ax.scatter(jitter(human_scores, hi - lo, rng), jitter(judge_scores, hi - lo, rng), alpha=0.5, s=18,
                   label=f"items (n={len(judge_scores)}), jittered by up to "
                         f"\u00b1{JITTER_FRACTION * (hi - lo):.2g} on both axes")
        ax.plot([lo, hi], [lo, hi], "--", color="grey", label="judge = human")
        ax.legend(loc="upper left", fontsize=7)
        ax.set_xlabel("human score")
        ax.set_ylabel("judge score")
        rho = metrics.score_spearman.coefficient if metrics.score_spearman else None
        ax.set_title("Scores" + (f" (Spearman {rho:.3f})" if rho is not None else "") + suffix, fontsize=9)
        fig.tight_layout()
        path = out / "scores.png"
        fig.savefig(path, dpi=100)
        plt.close(fig)
        written.append(path)
    return written
