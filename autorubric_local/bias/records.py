"""A sweep's results as the store's records (tables ``sweep_judgments``, ``sweep_scores``,
``sweep_aggregates`` of :mod:`autorubric_local.store.schema`)."""

from __future__ import annotations

import json
from typing import Any

from autorubric_local.bias.cells import SweepCell
from autorubric_local.bias.sweep import SweepResult
from autorubric_local.graders.assembly import choice_vote

__all__ = ["sweep_records"]


def sweep_records(
    result: SweepResult,
) -> tuple[list[dict[str, Any]], list[dict[str, Any]], list[dict[str, Any]]]:
    """``(rotation rows, cell-score rows, aggregate rows)`` of ``result``, for ``Store.record_sweep``."""
    judgments = [row for cell in result.cells for row in _judgment_rows(cell)]
    scores = [_score_row(cell) for cell in result.cells]
    aggregates = [
        {
            "judge_id": a.judge_id, "criterion_index": a.criterion_index,
            "criterion_name": a.criterion_name, "variant": a.variant.value, "n_items": a.n_items,
            "n_dropped": a.n_dropped, "llm_score": a.llm_score.mean, "choice_score": a.choice_score.mean,
            "grade_score": a.grade_score.mean, "expected_grade_score": a.expected_grade_score.mean,
            "summary_json": json.dumps(a.to_dict()),
        }
        for a in result.aggregates
    ]
    return judgments, scores, aggregates


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
