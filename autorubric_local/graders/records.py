"""Graded items as the store's records: one item row and one row per judgment.

The store (:mod:`autorubric_local.store`) knows no grading logic; this module turns what the
grader produced (:class:`GradedItem`) into finished rows whose keys are the columns of the
``items`` and ``judgments`` tables (:mod:`autorubric_local.store.schema`).
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from typing import Any

from autorubric_local.core.errors import InputError
from autorubric_local.core.reports import EnsembleCriterionReport
from autorubric_local.core.text import storable
from autorubric_local.graders.assembly import binary_answer, choice_vote
from autorubric_local.graders.content_free import CalibratedResult, ContextualPrior
from autorubric_local.graders.contextual import log_normalise
from autorubric_local.graders.criterion_grader import GradedItem
from autorubric_local.graders.execution import JudgmentResult
from autorubric_local.graders.prompts import BINARY_LABELS
from autorubric_local.graders.result_records import prompt_ids

__all__ = ["contextual_prior_records", "graded_item_records"]


def graded_item_records(
    graded: Sequence[GradedItem],
    model_ids: Mapping[str, str],
    *,
    first_index: int | None = None,
    judge_ids: Sequence[str] | None = None,
    item_extras: Sequence[Mapping[str, Any]] | None = None,
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """``(item rows, judgment rows)`` of ``graded``, for ``Store.record_items``.

    ``first_index`` is the run-wide index of ``graded[0]`` (items of a run are recorded in
    batches); an item without an id is stored as ``item-<run-wide index>``. ``judge_ids``
    maps ``task.judge_index`` to a judge id (default: the keys of ``model_ids`` in order).
    ``item_extras[i]`` adds columns to item ``i``'s row (the runner's ``report_json``,
    ``engine_seconds`` ...).

    Raises
    ------
    InputError
        If an item has no id and ``first_index`` is not given (its row could overwrite
        another batch's item).
    """
    if first_index is None:
        if any(not entry.item.item_id for entry in graded):
            raise InputError("items without an id need first_index, their index in the run")
        first_index = 0
    judges = list(judge_ids) if judge_ids is not None else list(model_ids)
    item_rows: list[dict[str, Any]] = []
    judgment_rows: list[dict[str, Any]] = []
    for offset, entry in enumerate(graded):
        row = _item_row(entry, first_index + offset)
        if item_extras is not None:
            row.update(item_extras[offset])
        item_rows.append(row)
        for result in entry.results:
            criterion_report = (entry.report.report or [])[result.task.criterion_index]
            judge_id = _judge_id(result, criterion_report, judges)
            judgment_rows.append(_judgment_row(row["item_id"], result, judge_id, model_ids.get(judge_id)))
    return item_rows, judgment_rows


def _item_row(entry: GradedItem, index: int) -> dict[str, Any]:
    report = entry.report
    usage = report.token_usage
    return {
        "item_id": entry.item.item_id or f"item-{index}",
        "item_index": index,
        "submission": storable(entry.item.submission),
        "query": storable(entry.item.query),
        "reference_submission": storable(entry.item.reference_submission),
        "score": report.score,
        "raw_score": report.raw_score,
        "cannot_assess_count": report.cannot_assess_count,
        "error": report.error,
        "prompt_tokens": usage.prompt_tokens if usage else None,
        "completion_tokens": usage.completion_tokens if usage else None,
        "cached_tokens": usage.cache_read_input_tokens if usage else None,
    }


def _judge_id(result: JudgmentResult, report: EnsembleCriterionReport, judges: Sequence[str]) -> str:
    index = result.task.judge_index
    if index < len(judges):
        return judges[index]
    votes = report.votes or report.multi_choice_votes
    return votes[min(index, len(votes) - 1)].judge_id


def _judgment_row(item_id: str, result: JudgmentResult, judge_id: str, model_id: str | None) -> dict[str, Any]:
    """One judgment as a row: this judge's vote in this option order (not the aggregate).

    ``label_probabilities_json`` and ``label_logprobs_json`` (raw) are keyed by verdict name
    or original option label; ``off_label_mass`` is the engine's, NULL when unknown; ``one_hot``
    is 1 when those probabilities are one-hot (no log-probabilities from the backend), NULL on
    an error row. A contextually calibrated judgment has the corrected distribution (its verdict's) in
    ``label_probabilities_json``, the judge's own in ``uncalibrated_label_probabilities_json``
    and its prior's id in ``contextual_prior_id``; when that prior could not be estimated, the
    judgment is an error row that still keeps the judge's own distribution and raw logprobs."""
    task = result.task
    prior = result.prior if isinstance(result, CalibratedResult) else None
    row: dict[str, Any] = {
        "item_id": item_id,
        "criterion_index": task.criterion_index,
        "criterion_name": task.criterion.name,
        "judge_id": judge_id,
        "model_id": model_id,
        "permutation_index": task.permutation_index,
        "shuffle_order_json": json.dumps(list(task.option_order)) if task.option_order else None,
        "verdict": None,
        "selected_index": None,
        "selected_label": None,
        "label_probabilities_json": None,
        "label_logprobs_json": None,
        "off_label_mass": result.off_label_mass,
        "one_hot": None if result.error is not None or result.chosen is None else int(result.one_hot),
        "uncalibrated_label_probabilities_json": None,
        "contextual_prior_id": None if prior is None else prior.prior_id,
        "explanation": result.explanation,
        "explanation_truncated": int(result.explanation_truncated),
        "prompt_tokens": result.usage.prompt_tokens,
        "completion_tokens": result.usage.completion_tokens,
        "cached_tokens": result.usage.cache_read_input_tokens,
        "duration_ms": round(result.seconds * 1000.0, 3),
        "error": result.error,
        "explanation_error": result.explanation_error,
        **prompt_ids(result),
    }
    if result.error is not None or result.chosen is None:
        if prior is not None and isinstance(result, CalibratedResult) and result.uncalibrated:
            # The prior failed, not the judge: keep what the judge said (no verdict is read from it).
            row["uncalibrated_label_probabilities_json"] = json.dumps(_keyed(result.uncalibrated, prior))
            row["label_logprobs_json"] = json.dumps(_keyed(result.logprobs, prior))
        return row
    probabilities: dict[str, float] | None
    logprobs: dict[str, float] | None
    uncalibrated: dict[str, float] | None
    if task.criterion.options is None:  # the fields binary_vote validates in assembly, without a second vote
        verdict, probabilities, logprobs, uncalibrated = binary_answer(result)
        row["verdict"] = verdict.value
    else:
        vote = choice_vote(result, judge_id, 1.0)
        row["selected_index"] = vote.selected_index
        row["selected_label"] = vote.selected_label
        probabilities, logprobs = vote.label_probabilities, vote.label_logprobs
        uncalibrated = vote.uncalibrated_label_probabilities
    if probabilities:
        row["label_probabilities_json"] = json.dumps(probabilities)
    if logprobs:
        row["label_logprobs_json"] = json.dumps(logprobs)
    if uncalibrated:
        row["uncalibrated_label_probabilities_json"] = json.dumps(uncalibrated)
    return row


def contextual_prior_records(graded: Sequence[GradedItem]) -> list[dict[str, Any]]:
    """The ``contextual_priors`` rows of the priors ``graded``'s judgments were corrected with
    (each once, in first-use order), for ``Store.record_items(priors=...)``; none when
    contextual calibration was off."""
    rows: dict[str, dict[str, Any]] = {}
    for entry in graded:
        for result in entry.results:
            prior = result.prior if isinstance(result, CalibratedResult) else None
            if prior is not None and prior.prior_id not in rows:
                rows[prior.prior_id] = _prior_row(prior)
    return list(rows.values())


def _keyed(values: Sequence[float], prior: ContextualPrior) -> dict[str, float]:
    """Shown-order values (in the prior's option order, which is its judgments' order) keyed
    like ``label_probabilities_json``: verdict names, or original option labels in original
    option order."""
    options = prior.criterion.options
    if options is None:
        return dict(zip(BINARY_LABELS, values, strict=True))
    by_original = dict(zip(prior.option_order or range(len(options)), values, strict=True))
    return {option.label: by_original[index] for index, option in enumerate(options)}


def _prior_row(prior: ContextualPrior) -> dict[str, Any]:
    per_input = [
        _keyed([math.exp(v) for v in log_normalise(logprobs)], prior) if logprobs else None
        for logprobs in prior.logprobs
    ]
    return {
        "prior_id": prior.prior_id,
        "judge_id": prior.judge_id,
        "criterion_name": prior.criterion.name,
        "criterion_json": prior.criterion.model_dump_json(),
        "option_order_json": None if prior.option_order is None else json.dumps(list(prior.option_order)),
        "content_free_inputs_json": json.dumps(list(prior.inputs)),
        "content_free_label_probabilities_json": json.dumps(per_input),
        "prior_json": json.dumps(_keyed(prior.probabilities, prior)) if prior.error is None else None,
        "error": prior.error,
    }
