"""The workload both engine-equivalence suites (vLLM, llama.cpp) score: the bundled example's
items, then two long ones (all its answers joined, in both orders)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from autorubric_local.core.rubric import Rubric
from autorubric_local.data.submissions import load_grading_data
from autorubric_local.engine import LabelScores, ScoreRequest
from autorubric_local.graders.planning import GradeItem, JudgmentTask, plan_tasks

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
LONG_ITEM_IDS = ("long", "long-reversed")


def example_items() -> list[GradeItem]:
    """The bundled example's items, then two long ones: all its answers joined, in both orders."""
    rubric = Rubric.from_file(EXAMPLES / "battery_rubric.yaml")
    dataset = load_grading_data(EXAMPLES / "battery_submissions.jsonl", rubric)
    items = [
        GradeItem(
            submission=dataset[i].submission,
            rubric=tuple(dataset.get_item_rubric(i).rubric),
            query=dataset.get_item_query(i),
            reference_submission=dataset.get_item_reference_submission(i),
            item_id=dataset[i].id,
        )
        for i in range(len(dataset))
    ]
    answers = [item.submission for item in items]
    long = [
        GradeItem(submission="\n\n".join(order), rubric=items[0].rubric, query=items[0].query, item_id=item_id)
        for item_id, order in zip(LONG_ITEM_IDS, (answers, answers[::-1]))
    ]
    return items + long


@dataclass(frozen=True)
class Reference:
    """The example workload planned for one judge, and the transformers backend's scores of it."""

    engine: Any  # the transformers engine that planned and scored it
    tasks: tuple[JudgmentTask, ...]
    requests: tuple[ScoreRequest, ...]
    scores: tuple[LabelScores, ...]


_REFERENCES: dict[str, Reference] = {}


def example_reference(name: str, engine: Any) -> Reference:
    """Plan :func:`example_items` for judge ``name`` (seed 0) and score it with ``engine``, once
    per test session: the vLLM and llama.cpp suites compare with the same transformers scores,
    which cost a minute or more each on 2 cores. Scoring is deterministic, so sharing changes
    nothing the suites check."""
    cached = _REFERENCES.get(name)
    if cached is None or cached.engine is not engine:
        tasks = plan_tasks(example_items(), [(name, engine.format_chat)], seed=0)
        requests = [ScoreRequest(t.prefix, t.suffix, t.labels()) for t in tasks]
        cached = Reference(engine, tuple(tasks), tuple(requests), tuple(engine.score(requests)))
        _REFERENCES[name] = cached
    return cached
