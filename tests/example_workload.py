"""The workload both engine-equivalence suites (vLLM, llama.cpp) score: the bundled example's
items, then two long ones (all its answers joined, in both orders)."""

from __future__ import annotations

from pathlib import Path

from autorubric_local.core.rubric import Rubric
from autorubric_local.data.submissions import load_grading_data
from autorubric_local.graders.planning import GradeItem

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
