"""PNG plots of a sweep (matplotlib, Agg backend; imported only when plotting).

Every title names the sweep (its run name, when given) and the judge(s).

- ``heatmap-<judge>.png``: per criterion (and variant), the shown position of the item's modal
  option (rows) against the position the judge chose (columns): a content-following judge
  fills the diagonal, a position-biased one a column (:attr:`SweepAggregate.shown_vs_chosen`).
- ``grade-scores.png``: Grade Score per judge and criterion, with bootstrap intervals; with
  unrelated options, the two variants side by side.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

from autorubric_local.bias.aggregate import SweepAggregate

__all__ = ["grade_scores_title", "heatmap_title", "plot_grade_scores", "plot_heatmaps", "write_plots"]


def _pyplot():  # type: ignore[no-untyped-def]
    import matplotlib

    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    return plt


def _safe(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", name).strip("_") or "judge"


def _title(a: SweepAggregate) -> str:
    suffix = " + unrelated" if a.variant.value == "unrelated" else ""
    return f"{a.criterion_name}{suffix}"


def heatmap_title(judge_id: str, run: str | None = None) -> str:
    """``Position bias of judge <judge>`` and, with ``run``, `` - sweep <run>``."""
    return f"Position bias of judge {judge_id}" + (f" - sweep {run}" if run else "")


def grade_scores_title(judges: Sequence[str], run: str | None = None) -> str:
    """``Grade Score per judge (bootstrap intervals)``, the sweep's name and the judges."""
    where = f"sweep {run}, " if run else ""
    return f"Grade Score per judge (bootstrap intervals)\n{where}judge{'s' if len(judges) != 1 else ''} {', '.join(judges)}"


def plot_heatmaps(aggregates: Sequence[SweepAggregate], judge_id: str, path: Path, run: str | None = None) -> Path:
    """Shown-position x chosen-position heat maps of one judge, one panel per criterion, titled
    with the judge and the sweep's name ``run`` (:func:`heatmap_title`)."""
    plt = _pyplot()
    own = [a for a in aggregates if a.judge_id == judge_id]
    columns = min(3, len(own)) or 1
    rows = (len(own) + columns - 1) // columns or 1
    fig, axes = plt.subplots(rows, columns, figsize=(4.2 * columns, 3.8 * rows), squeeze=False)
    for ax in axes.flat[len(own):]:
        ax.axis("off")
    for ax, aggregate in zip(axes.flat, own, strict=False):
        matrix = aggregate.shown_vs_chosen
        n = len(matrix)
        image = ax.imshow(matrix, cmap="viridis", origin="upper")
        ax.set_xticks(range(n), [str(k + 1) for k in range(n)])
        ax.set_yticks(range(n), [str(k + 1) for k in range(n)])
        ax.set_xlabel("chosen position")
        ax.set_ylabel("position of the modal option")
        grade = aggregate.grade_score.mean
        ax.set_title(f"{_title(aggregate)}\nGrade Score {grade:.3f}" if grade is not None else _title(aggregate),
                     fontsize=9)
        for i in range(n):
            for j in range(n):
                ax.text(j, i, str(matrix[i][j]), ha="center", va="center", color="w", fontsize=8)
        fig.colorbar(image, ax=ax, fraction=0.046, pad=0.04)
    fig.suptitle(heatmap_title(judge_id, run))
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def plot_grade_scores(aggregates: Sequence[SweepAggregate], path: Path, run: str | None = None) -> Path:
    """Grade Score (mean, bootstrap interval) per judge, grouped by criterion and variant, titled
    with the sweep's name ``run`` and the judges (:func:`grade_scores_title`)."""
    plt = _pyplot()
    judges = list(dict.fromkeys(a.judge_id for a in aggregates))
    groups = list(dict.fromkeys((a.criterion_index, a.variant.value) for a in aggregates))
    titles = {(a.criterion_index, a.variant.value): _title(a) for a in aggregates}
    width = 0.8 / max(1, len(judges))
    fig, ax = plt.subplots(figsize=(max(5.0, 1.6 * len(groups) * max(1, len(judges)) ** 0.5), 4.0))
    for j, judge in enumerate(judges):
        xs, means, errors = [], [], [[], []]
        for g, key in enumerate(groups):
            found = [a for a in aggregates if a.judge_id == judge and (a.criterion_index, a.variant.value) == key]
            if not found or found[0].grade_score.mean is None:
                continue
            estimate = found[0].grade_score
            xs.append(g + (j - (len(judges) - 1) / 2) * width)
            means.append(estimate.mean)
            low = estimate.ci_low if estimate.ci_low is not None else estimate.mean
            high = estimate.ci_high if estimate.ci_high is not None else estimate.mean
            errors[0].append(max(0.0, estimate.mean - low))
            errors[1].append(max(0.0, high - estimate.mean))
        ax.bar(xs, means, width=width, yerr=errors, capsize=3, label=judge)
    ax.set_xticks(range(len(groups)), [titles[k] for k in groups], rotation=20, ha="right", fontsize=8)
    ax.set_ylim(0, 1.05)
    ax.set_ylabel("Grade Score")
    ax.set_title(grade_scores_title(judges, run), fontsize=9)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def write_plots(aggregates: Sequence[SweepAggregate], folder: str | Path, run: str | None = None) -> list[Path]:
    """Write ``grade-scores.png`` and one ``heatmap-<judge>.png`` per judge into ``folder``,
    titled with the sweep's name ``run`` (when given) and the judge(s)."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    paths = [plot_grade_scores(aggregates, folder / "grade-scores.png", run)]
    for judge in dict.fromkeys(a.judge_id for a in aggregates):
        paths.append(plot_heatmaps(aggregates, judge, folder / f"heatmap-{_safe(judge)}.png", run))
    return paths
