"""A sweep's results as the store's records (tables ``sweep_judgments``, ``sweep_scores``,
``sweep_aggregates`` of :mod:`autorubric_local.store.schema`), and rotation results read back
from stored rows (:func:`results_from_rows`), so a resumed sweep is scored from the same values
as an uninterrupted one; a stored sweep's aggregates are read back by :func:`aggregates_from_rows`."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from autorubric_local.bias.aggregate import SweepAggregate
from autorubric_local.bias.cells import SweepCell
from autorubric_local.bias.sweep import PlannedRotation, SweepResult
from autorubric_local.core.errors import InputError
from autorubric_local.core.reports import TokenUsage
from autorubric_local.graders.assembly import choice_vote
from autorubric_local.graders.execution import JudgmentResult

__all__ = [
    "aggregate_rows", "aggregates_from_rows", "judgment_rows", "results_from_rows", "rotation_key", "score_rows",
    "sweep_records",
]


def sweep_records(
    result: SweepResult,
) -> tuple[list[dict[str, Any]], list[dict[str, Any]], list[dict[str, Any]]]:
    """``(rotation rows, cell-score rows, aggregate rows)`` of ``result``, for ``Store.record_sweep``."""
    return judgment_rows(result.cells), score_rows(result.cells), aggregate_rows(result.aggregates)


def judgment_rows(cells: Sequence[SweepCell]) -> list[dict[str, Any]]:
    """``sweep_judgments`` rows (without ``sweep_id``) of ``cells``: one per rotation."""
    return [row for cell in cells for row in _judgment_rows(cell)]


def score_rows(cells: Sequence[SweepCell]) -> list[dict[str, Any]]:
    """``sweep_scores`` rows (without ``sweep_id``) of ``cells``: one per cell."""
    return [_score_row(cell) for cell in cells]


def aggregate_rows(aggregates: Sequence[SweepAggregate]) -> list[dict[str, Any]]:
    """``sweep_aggregates`` rows (without ``sweep_id``): one per (judge, criterion, variant)."""
    return [
        {
            "judge_id": a.judge_id, "criterion_index": a.criterion_index,
            "criterion_name": a.criterion_name, "variant": a.variant.value, "n_items": a.n_items,
            "n_dropped": a.n_dropped, "llm_score": a.llm_score.mean, "choice_score": a.choice_score.mean,
            "grade_score": a.grade_score.mean, "expected_grade_score": a.expected_grade_score.mean,
            "summary_json": json.dumps(a.to_dict()),
        }
        for a in aggregates
    ]


def aggregates_from_rows(rows: Sequence[Mapping[str, Any]]) -> list[SweepAggregate]:
    """The :class:`SweepAggregate` of each ``sweep_aggregates`` row (from its ``summary_json``,
    :meth:`SweepAggregate.from_dict`), in the rows' order; rows without one are skipped."""
    return [SweepAggregate.from_dict(json.loads(row["summary_json"])) for row in rows if row.get("summary_json")]


def rotation_key(item_id: str, criterion_index: int, variant: str, rotation: int) -> tuple[str, int, str, int]:
    """What identifies a rotation of one judge in ``sweep_judgments``."""
    return (item_id, criterion_index, variant, rotation)


def results_from_rows(
    items_ids: Sequence[str], planned: Sequence[PlannedRotation], rows: Sequence[Mapping[str, Any]]
) -> list[JudgmentResult]:
    """The :class:`JudgmentResult` of each planned rotation, read back from its stored row.

    Choice, probabilities (``probabilities_json``, shown-position order), raw log-probabilities
    (``label_logprobs_json`` put back in shown order), off-label mass, token counts, time and
    error are the row's; JSON keeps every float exactly, so cells scored from these results
    equal cells scored from the live ones.

    Parameters
    ----------
    items_ids : sequence of str
        Row key of each item, by item index.
    planned : sequence of (JudgmentTask, Variant)
        One judge's rotations (:func:`.sweep.plan_sweep`).
    rows : sequence of mapping
        That judge's ``sweep_judgments`` rows.

    Raises
    ------
    InputError
        A planned rotation has no stored row.
    """
    by_key = {rotation_key(r["item_id"], r["criterion_index"], r["variant"], r["rotation"]): r for r in rows}
    results = []
    for task, variant in planned:
        key = rotation_key(items_ids[task.item_index], task.criterion_index, variant.value, task.permutation_index)
        row = by_key.get(key)
        if row is None:
            raise InputError(f"sweep: no stored rotation for item {key[0]!r}, criterion {key[1]}, variant {key[2]}, "
                             f"rotation {key[3]}")
        probabilities = tuple(json.loads(row["probabilities_json"])) if row["probabilities_json"] else ()
        logprobs: tuple[float, ...] = ()
        if row.get("label_logprobs_json") and task.option_order is not None:
            by_label = json.loads(row["label_logprobs_json"])
            labels = [o.label for o in task.criterion.options or []]
            logprobs = tuple(by_label[labels[index]] for index in task.option_order)
        usage = TokenUsage(prompt_tokens=row["prompt_tokens"] or 0, cache_read_input_tokens=row["cached_tokens"] or 0)
        results.append(JudgmentResult(
            task, probabilities, row["chosen_position"], None, False, usage, (row["duration_ms"] or 0.0) / 1000.0,
            row["error"], logprobs=logprobs, off_label_mass=row.get("off_label_mass"),
        ))
    return results


def _judgment_rows(cell: SweepCell) -> list[dict[str, Any]]:
    """One row per rotation. ``probabilities_json`` lists the distribution in shown-position
    order (kept for readers of databases before migration 7); ``label_probabilities_json`` and
    ``label_logprobs_json`` key it (and the raw log-probabilities) by original option label, as
    the ``judgments`` table does (the same re-keying: :func:`.graders.assembly.choice_vote`)."""
    rows = []
    for result in cell.results:
        order = result.task.option_order or ()
        vote = choice_vote(result, cell.judge_id, 1.0)
        rows.append(
            {
                "item_id": cell.item_id, "item_index": cell.item_index,
                "criterion_index": cell.criterion_index, "criterion_name": cell.criterion_name,
                "judge_id": cell.judge_id, "variant": cell.variant.value,
                "rotation": result.task.permutation_index, "option_order_json": json.dumps(list(order)),
                "chosen_position": result.chosen,
                "chosen_option": None if result.chosen is None else order[result.chosen],
                "probabilities_json": json.dumps(list(result.probabilities)) if result.probabilities else None,
                "label_probabilities_json": _json_or_none(vote.label_probabilities),
                "label_logprobs_json": _json_or_none(vote.label_logprobs),
                "off_label_mass": result.off_label_mass,
                "prompt_tokens": result.usage.prompt_tokens,
                "cached_tokens": result.usage.cache_read_input_tokens,
                "duration_ms": round(result.seconds * 1000.0, 3), "error": result.error,
            }
        )
    return rows


def _json_or_none(mapping: dict[str, float] | None) -> str | None:
    return json.dumps(mapping) if mapping else None


def _score_row(cell: SweepCell) -> dict[str, Any]:
    s = cell.scores
    return {
        "item_id": cell.item_id, "item_index": cell.item_index,
        "criterion_index": cell.criterion_index, "criterion_name": cell.criterion_name,
        "judge_id": cell.judge_id, "variant": cell.variant.value, "n_options": s.n_options,
        "n_rotations": s.n_rotations, "n_dropped": s.n_dropped, "llm_score": s.llm_score,
        "choice_score": s.choice_score, "grade_score": s.grade_score,
        "expected_llm_score": s.expected_llm_score, "expected_choice_score": s.expected_choice_score,
        "expected_grade_score": s.expected_grade_score, "mode_option": s.mode_option,
        "position_counts_json": json.dumps(list(s.position_counts)),
        "option_counts_json": json.dumps(list(s.option_counts)),
        "position_profile_json": json.dumps(list(s.position_profile)),
        "option_profile_json": json.dumps(list(s.option_profile)),
        "unrelated_index": cell.unrelated_index,
        "unrelated_label": None if cell.unrelated is None else cell.unrelated.label,
        "unrelated_chosen": cell.unrelated_chosen, "preferred": cell.preferred,
        "agreement": cell.agreement, "expected_agreement": cell.expected_agreement,
    }
