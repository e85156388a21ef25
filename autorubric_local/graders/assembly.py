"""Build votes and reports from judgment results: each report type is built here and only here.

Mapping back from what the judge saw: a multi-choice answer at shown position ``k`` is the
original option ``option_order[k]``; label probabilities are re-keyed by original option label
in original option order (binary: ``MET``/``UNMET``/``CANNOT_ASSESS``).

A failed judgment (``error`` set) becomes a vote that says so: binary votes carry the spec's
conservative default verdict (UNMET for positive weight, MET for negative; README 001, "Error
Handling") with ``error`` set and no probabilities; multi-choice votes abstain (the NA option
if the criterion has one, else no option selected, ``na=True``). The scorer treats every error
vote as the worst case, so a failure never raises a score.
"""

from __future__ import annotations

from collections.abc import Sequence

from autorubric_local.graders.execution import JudgmentResult
from autorubric_local.penalty import LengthPenalty, ThinkingOutputDict, compute_length_penalty
from autorubric_local.prompts import BINARY_LABELS
from autorubric_local.reports import (
    EnsembleCriterionReport,
    EnsembleEvaluationReport,
    JudgeVote,
    MultiChoiceJudgeVote,
    TokenUsage,
)
from autorubric_local.scoring import raw_and_normalized
from autorubric_local.types import AggregatedMultiChoiceVerdict, CannotAssessConfig, CriterionVerdict


def binary_vote(result: JudgmentResult, judge_id: str, weight: float) -> JudgeVote:
    """The vote of one judge on a binary criterion."""
    criterion = result.task.criterion
    reason = result.explanation or ""
    if result.error is not None or result.chosen is None:
        verdict = CriterionVerdict.MET if criterion.weight < 0 else CriterionVerdict.UNMET
        return JudgeVote(judge_id=judge_id, verdict=verdict, reason=reason, weight=weight, error=result.error)
    probabilities = dict(zip(BINARY_LABELS, result.probabilities))
    return JudgeVote(
        judge_id=judge_id,
        verdict=CriterionVerdict(BINARY_LABELS[result.chosen]),
        reason=reason,
        weight=weight,
        label_probabilities=probabilities,
    )


def choice_vote(result: JudgmentResult, judge_id: str, weight: float) -> MultiChoiceJudgeVote:
    """The vote of one judge on a multi-choice criterion, in original option indices."""
    criterion = result.task.criterion
    options = criterion.options or []
    order = list(result.task.option_order or range(len(options)))
    reason = result.explanation or ""
    if result.error is not None or result.chosen is None:
        na_index = criterion.na_option_index
        return MultiChoiceJudgeVote(
            judge_id=judge_id,
            selected_index=na_index,
            selected_label=options[na_index].label if na_index is not None else None,
            value=0.0,
            reason=reason,
            weight=weight,
            na=True,
            shuffle_order=order,
            error=result.error,
        )
    by_original = [0.0] * len(options)
    for shown, original in enumerate(order):
        by_original[original] = result.probabilities[shown]
    selected = order[result.chosen]
    option = options[selected]
    return MultiChoiceJudgeVote(
        judge_id=judge_id,
        selected_index=selected,
        selected_label=option.label,
        value=option.value,
        reason=reason,
        weight=weight,
        na=option.na,
        shuffle_order=order,
        label_probabilities={opt.label: p for opt, p in zip(options, by_original)},
    )


def single_judge_criterion_report(result: JudgmentResult, judge_id: str, weight: float) -> EnsembleCriterionReport:
    """Criterion report of an ensemble of one: the final verdict is the judge's vote."""
    criterion = result.task.criterion
    if criterion.options is None:
        vote = binary_vote(result, judge_id, weight)
        return EnsembleCriterionReport(
            criterion=criterion,
            final_verdict=vote.verdict,
            final_reason=vote.reason,
            votes=[vote],
            error=vote.error,
            label_probabilities=vote.label_probabilities,
        )
    choice = choice_vote(result, judge_id, weight)
    final = AggregatedMultiChoiceVerdict(
        selected_index=choice.selected_index,
        selected_label=choice.selected_label,
        value=choice.value,
        na=choice.na,
        aggregated_value=choice.value,
    )
    return EnsembleCriterionReport(
        criterion=criterion,
        final_verdict=None,
        final_reason=choice.reason,
        final_multi_choice_verdict=final,
        multi_choice_votes=[choice],
        error=choice.error,
        label_probabilities=choice.label_probabilities,
    )


def token_usage(results: Sequence[JudgmentResult]) -> TokenUsage:
    """Token usage of results; prefix-cache hits are reported as cache-read tokens."""
    prompt = sum(r.usage.prompt_tokens for r in results)
    completion = sum(r.usage.completion_tokens for r in results)
    return TokenUsage(
        prompt_tokens=prompt,
        completion_tokens=completion,
        total_tokens=prompt + completion,
        cache_read_input_tokens=sum(r.usage.cached_tokens for r in results),
    )


def evaluation_report(
    criteria: Sequence[EnsembleCriterionReport],
    results: Sequence[JudgmentResult],
    judge_ids: Sequence[str],
    *,
    cannot_assess: CannotAssessConfig,
    normalize: bool,
    length_penalty: LengthPenalty | None,
    graded_input: ThinkingOutputDict,
) -> EnsembleEvaluationReport:
    """The item's report: score through the one scorer, then the length penalty.

    A grade in which every judgment failed has ``score=None`` and ``error`` set (spec 003,
    ``EvaluationReport.score``).
    """
    usage = token_usage(results)
    failures = [r.error for r in results if r.error is not None]
    if results and len(failures) == len(results):
        return EnsembleEvaluationReport(
            score=None,
            report=list(criteria),
            error=f"all {len(results)} judgments failed; first: {failures[0]}",
            token_usage=usage,
        )
    raw, normalized = raw_and_normalized(criteria, cannot_assess)
    penalty = compute_length_penalty(graded_input, length_penalty) if length_penalty else 0.0
    score = max(0.0, normalized - penalty) if normalize else raw - penalty
    agreements = [c.agreement for c in criteria]
    return EnsembleEvaluationReport(
        score=score,
        raw_score=raw,
        llm_raw_score=raw,
        report=list(criteria),
        judge_scores={judge_id: score for judge_id in judge_ids},
        mean_agreement=sum(agreements) / len(agreements) if agreements else None,
        cannot_assess_count=sum(1 for c in criteria if c.is_na),
        token_usage=usage,
    )
