"""Stored prompts and final per-criterion results: the rows that make a run auditable in SQL.

Two kinds of finished records for ``Store.record_items`` (columns in
:mod:`autorubric_local.store.schema`, migration 11):

- ``prompt_texts``: each distinct prompt part once, content-addressed (``id`` is
  :func:`prompt_text_id`). A judgment's prompt is its prefix (shared by every criterion of an
  item and judge) followed by its suffix (shared by every item judged on that criterion), so a
  run of N items and C criteria stores about N + C texts, not N x C prompts.
- ``item_criteria``: one row per item and criterion: the ensemble's final verdict, whether it
  passed (taking the weight's sign into account) and its contribution to the raw score
  (:func:`autorubric_local.core.scoring.criterion_contribution`, AutoRubric's README, "Scoring").
"""

from __future__ import annotations

import functools
import hashlib
import json
from collections.abc import Sequence
from typing import Any

from autorubric_local.core.reports import (
    EnsembleCriterionReport,
    EnsembleEvaluationReport,
)
from autorubric_local.core.scoring import criterion_contribution
from autorubric_local.core.text import storable
from autorubric_local.core.types import CannotAssessConfig, Criterion
from autorubric_local.graders.criterion_grader import GradedItem
from autorubric_local.graders.execution import JudgmentResult

__all__ = ["best_contribution", "criterion_result_records", "prompt_ids", "prompt_text_id", "prompt_text_records"]


@functools.lru_cache(maxsize=1024)
def prompt_text_id(text: str) -> str:
    """Content address of a prompt part: ``sha256:<hex of its UTF-8 bytes>`` (lone surrogates
    encoded as themselves, so two different texts never share an id). Memoised for the last
    texts: an item's prefix is addressed once per judgment and once more for its row."""
    return "sha256:" + hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def prompt_ids(result: JudgmentResult) -> dict[str, str]:
    """The ``judgments`` columns that point at ``result``'s prompt: ``prompt_prefix_id`` and
    ``prompt_suffix_id`` (prefix + suffix is :attr:`JudgmentResult.prompt`, the exact text)."""
    return {
        "prompt_prefix_id": prompt_text_id(result.task.prefix),
        "prompt_suffix_id": prompt_text_id(result.scored_suffix),
    }


def prompt_text_records(graded: Sequence[GradedItem]) -> list[dict[str, Any]]:
    """``prompt_texts`` rows (``id``, ``text``) of every prompt part of ``graded``'s judgments,
    each once, in first-use order. ``text`` keeps lone surrogates as ``\\uXXXX`` escapes (SQLite
    stores UTF-8); ``id`` is of the exact text the judge read."""
    rows: dict[str, dict[str, Any]] = {}
    for entry in graded:
        for result in entry.results:
            for text in (result.task.prefix, result.scored_suffix):
                text_id = prompt_text_id(text)
                if text_id not in rows:
                    rows[text_id] = {"id": text_id, "text": storable(text)}
    return list(rows.values())


def best_contribution(criterion: Criterion) -> float:
    """Largest contribution ``criterion`` can make to the raw score: ``max(weight, 0)`` for a
    binary criterion (MET on a positive weight, UNMET on a negative one), else the best
    scored (non-NA) option's ``value * weight``."""
    if criterion.options is None:
        return max(criterion.weight, 0.0)
    return max(option.value * criterion.weight for option in criterion.options if not option.na)


def criterion_result_records(
    reports: Sequence[EnsembleEvaluationReport], item_ids: Sequence[str], cannot_assess: CannotAssessConfig
) -> list[dict[str, Any]]:
    """``item_criteria`` rows of the items' ``reports`` (``item_ids[i]`` is item ``i``'s stored id;
    a graded item's report, or one read back from ``items.report_json``).

    ``passed`` is 1 when the criterion earned its best possible contribution
    (:func:`best_contribution`), 0 when it did not, NULL when its final verdict is
    CANNOT_ASSESS / NA or it failed. ``contribution`` is the weighted contribution to the raw
    score under ``cannot_assess`` (NULL when skipped); ``scale_type`` is ``binary`` for
    criteria without options (the criterion model's own default, ``ordinal``, is meaningless
    there). Items whose report has no per-criterion results (the whole item failed) have none.
    """
    rows: list[dict[str, Any]] = []
    for item_report, item_id in zip(reports, item_ids, strict=True):
        for index, report in enumerate(item_report.report or []):
            rows.append(_criterion_row(item_id, index, report, cannot_assess))
    return rows


def _criterion_row(
    item_id: str, index: int, report: EnsembleCriterionReport, cannot_assess: CannotAssessConfig
) -> dict[str, Any]:
    criterion = report.criterion
    contribution = criterion_contribution(report, cannot_assess)
    passed = None
    if not report.is_error and not report.is_na:
        passed = int(report.score_value * criterion.weight >= best_contribution(criterion))
    choice = report.final_multi_choice_verdict
    return {
        "item_id": item_id,
        "criterion_index": index,
        "criterion_name": criterion.name,
        "requirement": criterion.requirement,
        "weight": criterion.weight,
        "scale_type": "binary" if criterion.options is None else criterion.scale_type,
        "verdict": None if report.final_verdict is None else report.final_verdict.value,
        "selected_index": None if choice is None else choice.selected_index,
        "selected_label": None if choice is None else choice.selected_label,
        "score_value": None if report.is_error else report.score_value,
        "is_na": int(report.is_na),
        "passed": passed,
        "contribution": contribution,
        "agreement": report.agreement,
        "final_reason": report.final_reason or None,
        "label_probabilities_json": None if report.label_probabilities is None else json.dumps(
            report.label_probabilities),
        "error": report.error,
    }
