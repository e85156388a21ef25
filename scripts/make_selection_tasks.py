"""Build selection tasks (``autorubric-local sweep-select`` input) from an AutoRubric dataset with
human ground truth, e.g. RiceChem ``q1.json`` in the shared benchmark data.

Each task is the dataset's prompt and ``--candidates`` (default 4) student answers whose human
weighted scores (``RubricDataset.compute_weighted_score`` of their ground-truth verdicts) are
all different; ``preferred`` is the 0-based index of the highest-scored answer. Tasks are drawn
with a seeded generator: pick distinct score levels at random, one answer per level, shuffle the
candidates. The same dataset and seed always give the same file. Nothing is copied into the
repository: the output path is given on the command line.

Run::

    python scripts/make_selection_tasks.py /work/shared/data/autorubric-examples/q1.json \\
        /tmp/q1_selection.jsonl --tasks 50 --seed 0
"""

from __future__ import annotations

import argparse
import json
import random
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path

from autorubric_local.data.dataset import RubricDataset


def scored_answers(dataset: RubricDataset) -> dict[float, list[tuple[str, str]]]:
    """Human weighted score (rounded to 6 places) -> [(item id, answer)], answers deduplicated."""
    levels: dict[float, list[tuple[str, str]]] = defaultdict(list)
    seen: set[str] = set()
    for index, item in enumerate(dataset.items):
        key = item.submission.strip().lower()
        if item.ground_truth is None or not item.submission.strip() or key in seen:
            continue
        seen.add(key)
        score = dataset.compute_weighted_score(item.ground_truth, rubric=dataset.get_item_rubric(index))
        levels[round(score, 6)].append((item.id or f"item-{index}", item.submission))
    return levels


def build_tasks(dataset: RubricDataset, n_tasks: int, n_candidates: int, seed: int) -> list[dict[str, object]]:
    """``n_tasks`` selection rows ``{"id", "prompt", "candidates", "preferred"}`` (module docstring)."""
    levels = scored_answers(dataset)
    if len(levels) < n_candidates:
        raise SystemExit(f"only {len(levels)} distinct human scores; cannot pick {n_candidates} candidates")
    prompt = dataset.prompt or ""
    if not prompt.strip():
        raise SystemExit("the dataset has no prompt")
    rng = random.Random(seed)
    scores = sorted(levels)
    name = dataset.name or "task"
    rows: list[dict[str, object]] = []
    for t in range(n_tasks):
        chosen = [(score, rng.choice(levels[score])) for score in rng.sample(scores, n_candidates)]
        rng.shuffle(chosen)
        best = max(range(n_candidates), key=lambda k: chosen[k][0])
        rows.append(
            {
                "id": f"{name}-{t:03d}",
                "prompt": prompt,
                "candidates": [answer for _, (_, answer) in chosen],
                "preferred": best,
            }
        )
    return rows


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("dataset", type=Path, help="AutoRubric dataset JSON with ground truth")
    parser.add_argument("output", type=Path, help="JSONL file to write")
    parser.add_argument("--tasks", type=int, default=50, help="number of tasks (default 50)")
    parser.add_argument("--candidates", type=int, default=4, help="candidates per task (default 4)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    dataset = RubricDataset.from_file(args.dataset)
    rows = build_tasks(dataset, args.tasks, args.candidates, args.seed)
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    print(f"{len(rows)} selection tasks of {args.candidates} candidates -> {args.output}")


if __name__ == "__main__":
    main()
