"""``fill_ground_truth``: label a dataset with a (strong) grader's verdicts (AutoRubric's README,
"Generating Synthetic Ground Truth").

The items to label run through :class:`~autorubric_local.runner.EvalRunner` on an in-memory
database (chunked engine workloads, progress, run-time failures isolated per item). A label is
taken from each criterion's final verdict: a :class:`CriterionVerdict` for a binary criterion,
the option label for a multi-choice one. An item is left out of the result when its grading
failed, any of its criteria has an error, or a multi-choice criterion selected no option, so a
failure never becomes a label.
"""

from __future__ import annotations

import asyncio
from dataclasses import replace

from autorubric_local.core.reports import EnsembleEvaluationReport
from autorubric_local.core.rubric import Rubric
from autorubric_local.core.types import CriterionVerdict
from autorubric_local.data.dataset import DataItem, RubricDataset
from autorubric_local.graders.criterion_grader import CriterionGrader
from autorubric_local.runner.config import MEMORY_DB, EvalConfig
from autorubric_local.runner.runner import EvalRunner


async def fill_ground_truth(
    dataset: RubricDataset,
    grader: CriterionGrader,
    force: bool = False,
    show_progress: bool = True,
    max_concurrent_items: int | None = None,
) -> RubricDataset:
    """A new dataset whose items carry ground truth from ``grader``; ``dataset`` is unchanged.

    Parameters
    ----------
    dataset : RubricDataset
    grader : CriterionGrader
    force : bool, default False
        Re-label every item; otherwise items that have ground truth keep it.
    show_progress : bool, default True
    max_concurrent_items : int or None
        Most items per engine chunk.

    Returns
    -------
    RubricDataset
        Same name, prompt, rubric and reference; items in their original order with their own
        prompts, rubrics, references and ids; items that failed to grade are left out.
    """
    return await asyncio.to_thread(
        fill_ground_truth_sync, dataset, grader, force=force, show_progress=show_progress,
        max_concurrent_items=max_concurrent_items,
    )


def fill_ground_truth_sync(
    dataset: RubricDataset,
    grader: CriterionGrader,
    *,
    force: bool = False,
    show_progress: bool = True,
    max_concurrent_items: int | None = None,
) -> RubricDataset:
    """:func:`fill_ground_truth` in the calling thread."""
    to_label = [i for i, item in enumerate(dataset.items) if force or item.ground_truth is None]
    # Keyed by original index: item ids need not be unique across a subset with generated keys.
    subset = RubricDataset(
        prompt=dataset.prompt,
        rubric=dataset.rubric,
        items=[_for_grading(dataset, i) for i in to_label],
        name=dataset.name,
        reference_submission=dataset.reference_submission,
    )
    config = EvalConfig(db_path=MEMORY_DB, show_progress=show_progress, resume=False,
                        max_concurrent_items=max_concurrent_items, experiment_name="fill-ground-truth")
    result = EvalRunner(subset, grader, config).run_sync()
    labels = {
        to_label[r.item_idx]: labels_from_report(r.report, dataset.get_item_rubric(to_label[r.item_idx]))
        for r in result.item_results
    }
    items: list[DataItem] = []
    for index, item in enumerate(dataset.items):
        if index not in labels:
            items.append(item)
        elif labels[index] is not None:
            items.append(replace(item, ground_truth=labels[index]))
    return dataset.with_items(items)


def _for_grading(dataset: RubricDataset, index: int) -> DataItem:
    return replace(dataset.items[index], ground_truth=None, id=f"{index}")


def labels_from_report(report: EnsembleEvaluationReport, rubric: Rubric) -> list[CriterionVerdict | str] | None:
    """Ground truth from a report's final verdicts, or None if any criterion has no clean label
    (an error, no option selected, or an option the rubric does not have, e.g. an added NA)."""
    if report.error is not None or not report.report or len(report.report) != len(rubric.rubric):
        return None
    labels: list[CriterionVerdict | str] = []
    for criterion, original in zip(report.report, rubric.rubric, strict=True):
        if criterion.error is not None:
            return None
        if criterion.criterion.options is None:
            if criterion.final_verdict is None:
                return None
            labels.append(criterion.final_verdict)
        else:
            choice = criterion.final_multi_choice_verdict
            if choice is None or choice.selected_label is None:
                return None
            try:
                original.find_option_by_label(choice.selected_label)
            except ValueError:
                return None
            labels.append(choice.selected_label)
    return labels
