"""Build votes and reports from judgment results: each report type is built here and only here.

Mapping back from what the judge saw: a multi-choice answer at shown position ``k`` is the
original option ``option_order[k]``; label probabilities, and the raw label log-probabilities
beside them, are re-keyed by original option label in original option order (binary:
``MET``/``UNMET``/``CANNOT_ASSESS``).

A failed judgment (``error`` set) becomes a vote that says so: binary votes carry AutoRubric's
conservative default verdict (UNMET for positive weight, MET for negative; README 001, "Error
Handling") with ``error`` set and no probabilities; multi-choice votes abstain (the NA option
if the criterion has one, else no option selected, ``na=True``). The scorer treats every error
vote as the worst case, so a failure never raises a score.

A contextually calibrated judgment (:class:`.content_free.CalibratedResult`) votes with its
corrected distribution as ``label_probabilities`` (the verdict is its argmax) and keeps the
judge's own distribution as ``uncalibrated_label_probabilities``, keyed the same way.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from typing import TypeVar

from autorubric_local.core.penalty import (
    LengthPenalty,
    ThinkingOutputDict,
    compute_length_penalty,
)
from autorubric_local.core.reports import (
    EnsembleCriterionReport,
    EnsembleEvaluationReport,
    JudgeVote,
    MultiChoiceJudgeVote,
    TokenUsage,
)
from autorubric_local.core.scoring import raw_and_normalized
from autorubric_local.core.types import CannotAssessConfig, Criterion, CriterionVerdict
from autorubric_local.engine.base import add_costs
from autorubric_local.graders.aggregation import (
    aggregate_binary,
    aggregate_multi_choice,
)
from autorubric_local.graders.content_free import CalibratedResult
from autorubric_local.graders.execution import JudgmentResult
from autorubric_local.graders.prompts import BINARY_LABELS

JudgeVoteT = TypeVar("JudgeVoteT", JudgeVote, MultiChoiceJudgeVote)


def _uncalibrated(result: JudgmentResult) -> tuple[float, ...] | None:
    """The judge's own distribution (shown order) of a calibrated result, else None."""
    if isinstance(result, CalibratedResult) and result.uncalibrated:
        return result.uncalibrated
    return None


def binary_answer(
    result: JudgmentResult,
) -> tuple[CriterionVerdict, dict[str, float], dict[str, float] | None, dict[str, float] | None]:
    """What an answered binary judgment says, keyed by verdict name: ``(verdict, label
    probabilities, raw label logprobs or None without logprobs, the judge's own uncalibrated
    probabilities or None)``; :func:`binary_vote`'s fields, for callers that need no vote.
    ``result`` must be answered (no error, a chosen label)."""
    uncalibrated = _uncalibrated(result)
    return (
        CriterionVerdict(BINARY_LABELS[result.chosen]),  # type: ignore[index]
        dict(zip(BINARY_LABELS, result.probabilities, strict=True)),
        dict(zip(BINARY_LABELS, result.logprobs, strict=False)) or None,  # () without logprobs
        None if uncalibrated is None else dict(zip(BINARY_LABELS, uncalibrated, strict=True)),
    )


def binary_vote(result: JudgmentResult, judge_id: str, weight: float) -> JudgeVote:
    """The vote of one judge on a binary criterion."""
    criterion = result.task.criterion
    reason = result.explanation or ""
    if result.error is not None or result.chosen is None:
        verdict = CriterionVerdict.MET if criterion.weight < 0 else CriterionVerdict.UNMET
        return JudgeVote(judge_id=judge_id, verdict=verdict, reason=reason, weight=weight, error=result.error)
    verdict, probabilities, logprobs, uncalibrated = binary_answer(result)
    return JudgeVote(
        judge_id=judge_id,
        verdict=verdict,
        reason=reason,
        weight=weight,
        label_probabilities=probabilities,
        label_logprobs=logprobs,
        off_label_mass=result.off_label_mass,
        uncalibrated_label_probabilities=uncalibrated,
        one_hot=result.one_hot,
    )


def _by_original(shown_values: Sequence[float], order: Sequence[int]) -> list[float]:
    """Values in shown order re-indexed by original option: ``out[order[k]] = shown_values[k]``."""
    out = [0.0] * len(order)
    for shown, original in enumerate(order):
        out[original] = shown_values[shown]
    return out


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
            shuffle_order=order if result.task.shuffled else None,
            error=result.error,
        )
    by_original = _by_original(result.probabilities, order)
    logprobs = _by_original(result.logprobs, order) if result.logprobs else None
    uncalibrated = _uncalibrated(result)
    own = None if uncalibrated is None else _by_original(uncalibrated, order)
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
        shuffle_order=order if result.task.shuffled else None,
        label_probabilities={opt.label: p for opt, p in zip(options, by_original, strict=True)},
        label_logprobs=None if logprobs is None else {opt.label: lp for opt, lp in zip(options, logprobs, strict=True)},
        off_label_mass=result.off_label_mass,
        uncalibrated_label_probabilities=(None if own is None
                                          else {opt.label: p for opt, p in zip(options, own, strict=True)}),
        one_hot=result.one_hot,
    )


_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")


def with_reasoning(vote: JudgeVoteT) -> JudgeVoteT:
    """``vote`` of a judge with ``thinking`` on, shaped as AutoRubric's API reference has it: the judge's whole
    deliberation (what it wrote before its verdict) in ``reasoning``, and in ``reason`` the
    conclusion it reached: the last sentence of that deliberation, in its own words (the text
    right before the verdict). A vote without text is returned unchanged."""
    trace = vote.reason.strip()
    if not trace:
        return vote
    sentences = [part.strip() for part in _SENTENCE_END.split(trace) if part.strip()]
    return vote.model_copy(update={"reasoning": trace, "reason": sentences[-1]})


def combined_choice_vote(results: Sequence[JudgmentResult], judge_id: str, weight: float) -> MultiChoiceJudgeVote:
    """One judge's vote on a multi-choice criterion judged in one or more option orders.

    With several orders (cyclic permutations), the label distributions of the orders that
    did not fail are averaged in original option order and the vote is their argmax (ties,
    within 1e-9: :meth:`Criterion.worst_option_among`): a position-debiased verdict. ``shuffle_order`` is
    the order of permutation 0 (None when options were not shuffled). If every order failed, the vote is an error vote.
    """
    if len(results) == 1:
        return choice_vote(results[0], judge_id, weight)
    ordered = sorted(results, key=lambda r: r.task.permutation_index)
    answered = [r for r in ordered if r.error is None and r.chosen is not None]
    if not answered:
        return choice_vote(ordered[0], judge_id, weight)
    criterion = ordered[0].task.criterion
    options = criterion.options or []
    mean = _mean_distribution([r.probabilities for r in answered], answered, len(options))
    owns = [_uncalibrated(r) for r in answered]
    own = None if any(o is None for o in owns) else _mean_distribution(owns, answered, len(options))  # type: ignore[arg-type]
    logprobs = _mean_logprobs(answered, len(options))
    masses = [r.off_label_mass for r in answered if r.off_label_mass is not None]
    top = max(mean)
    # Ties within rounding of the averaging (e.g. pure position bias: all equal).
    selected = criterion.worst_option_among([i for i, p in enumerate(mean) if top - p <= 1e-9])
    option = options[selected]
    return MultiChoiceJudgeVote(
        judge_id=judge_id,
        selected_index=selected,
        selected_label=option.label,
        value=option.value,
        reason=" | ".join(r.explanation for r in answered if r.explanation),
        weight=weight,
        na=option.na,
        shuffle_order=list(ordered[0].task.option_order or range(len(options))) if ordered[0].task.shuffled else None,
        label_probabilities={opt.label: p for opt, p in zip(options, mean, strict=True)},
        label_logprobs=None if logprobs is None else {opt.label: lp for opt, lp in zip(options, logprobs, strict=True)},
        off_label_mass=math.fsum(masses) / len(masses) if masses else None,
        uncalibrated_label_probabilities=(None if own is None
                                          else {opt.label: p for opt, p in zip(options, own, strict=True)}),
        one_hot=any(r.one_hot for r in answered),
    )


def _mean_distribution(
    distributions: Sequence[Sequence[float]], answered: Sequence[JudgmentResult], n_options: int
) -> list[float]:
    """The mean, in original option order, of ``distributions[r]`` (shown order of ``answered[r]``)."""
    mean = [0.0] * n_options
    for values, result in zip(distributions, answered, strict=True):
        for shown, original in enumerate(result.task.option_order or range(n_options)):
            mean[original] += values[shown] / len(answered)
    return mean


def _mean_logprobs(answered: Sequence[JudgmentResult], n_options: int) -> list[float] | None:
    """``log(mean_r exp(l_rk))`` per original option ``k`` over the orders ``r`` of ``answered``
    (computed stably, max subtracted); None unless every order has raw log-probabilities."""
    if not all(r.logprobs for r in answered):
        return None
    columns = [_by_original(r.logprobs, r.task.option_order or range(n_options)) for r in answered]
    out = []
    for k in range(n_options):
        values = [column[k] for column in columns]
        top = max(values)
        out.append(top + math.log(math.fsum(math.exp(v - top) for v in values) / len(values)))
    return out


def _joined_reason(votes: Sequence[JudgeVote] | Sequence[MultiChoiceJudgeVote]) -> str:
    if len(votes) == 1:
        return votes[0].reason
    return " | ".join(f"{v.judge_id}: {v.reason}" for v in votes if v.reason)


def _ensemble_probabilities(
    votes: Sequence[JudgeVote] | Sequence[MultiChoiceJudgeVote], labels: Sequence[str],
) -> dict[str, float] | None:
    """Judge-weighted mean of the answered votes' label distributions (None if none has one),
    over every label some vote has, in the order of ``labels`` (the criterion's: votes of
    decision models hold only the outcomes their question offered, a subset)."""
    weighted = [(v.weight, v.label_probabilities) for v in votes if v.label_probabilities and not v.is_error]
    total = sum(w for w, _ in weighted)
    if not weighted or total <= 0:
        return None
    keys = [label for label in labels if any(label in probs for _, probs in weighted)]
    return {k: sum(w * probs.get(k, 0.0) for w, probs in weighted) / total for k in keys}


def _all_failed(votes: Sequence[JudgeVote] | Sequence[MultiChoiceJudgeVote]) -> str | None:
    errors = [v.error for v in votes if v.error is not None]
    return errors[0] if votes and len(errors) == len(votes) else None


def binary_criterion_report(criterion: Criterion, votes: Sequence[JudgeVote], strategy: str) -> EnsembleCriterionReport:
    """An ensemble's report on a binary criterion (:func:`.aggregation.aggregate_binary`)."""
    return EnsembleCriterionReport(
        criterion=criterion,
        final_verdict=aggregate_binary(criterion, votes, strategy),
        final_reason=_joined_reason(votes),
        votes=list(votes),
        error=_all_failed(votes),
        label_probabilities=_ensemble_probabilities(votes, BINARY_LABELS),
    )


def choice_criterion_report(
    criterion: Criterion, votes: Sequence[MultiChoiceJudgeVote], strategy: str
) -> EnsembleCriterionReport:
    """An ensemble's report on a multi-choice criterion (:func:`.aggregation.aggregate_multi_choice`)."""
    return EnsembleCriterionReport(
        criterion=criterion,
        final_verdict=None,
        final_reason=_joined_reason(votes),
        final_multi_choice_verdict=aggregate_multi_choice(criterion, votes, strategy),
        multi_choice_votes=list(votes),
        error=_all_failed(votes),
        label_probabilities=_ensemble_probabilities(votes, [o.label for o in criterion.options or []]),
    )


def judge_criterion_report(
    criterion: Criterion, vote: JudgeVote | MultiChoiceJudgeVote, strategy: str
) -> EnsembleCriterionReport:
    """The report of one judge alone on ``criterion`` (for ``judge_scores``)."""
    if isinstance(vote, JudgeVote):
        return binary_criterion_report(criterion, [vote], strategy)
    return choice_criterion_report(criterion, [vote], strategy)


def token_usage(results: Sequence[JudgmentResult]) -> TokenUsage:
    """Token usage of results; prefix-cache hits are reported as cache-read tokens."""
    return TokenUsage.combine(r.usage for r in results)


def completion_cost(results: Sequence[JudgmentResult]) -> float | None:
    """USD of ``results``' engine calls: the sum of their ``cost_usd``, or None when any is
    unknown (a hosted call LiteLLM cannot price, e.g. a self-hosted server's model without
    ``input_cost_per_token``/``output_cost_per_token`` in ``extra_params``): a partial sum would
    understate it. Local engines are not priced and count 0.0 (their cost is the device time,
    ``device_seconds``), so a grade by local judges only costs 0.0, a float that formats."""
    return add_costs(*(r.cost_usd for r in results))


def _score(
    criteria: Sequence[EnsembleCriterionReport],
    cannot_assess: CannotAssessConfig,
    normalize: bool,
    penalty: float,
) -> tuple[float, float]:
    raw, normalized = raw_and_normalized(criteria, cannot_assess)
    return raw, (max(0.0, normalized - penalty) if normalize else raw - penalty)


def evaluation_report(
    criteria: Sequence[EnsembleCriterionReport],
    results: Sequence[JudgmentResult],
    judge_criteria: Mapping[str, Sequence[EnsembleCriterionReport]],
    *,
    cannot_assess: CannotAssessConfig,
    normalize: bool,
    length_penalty: LengthPenalty | None,
    graded_input: ThinkingOutputDict,
) -> EnsembleEvaluationReport:
    """The item's report: score through the one scorer, then the length penalty.

    ``completion_cost`` (USD) is the sum of the judgments' ``cost_usd`` (:func:`completion_cost`).

    ``judge_criteria`` maps each judge id to that judge's own single-vote criterion reports;
    they give ``judge_scores`` (each judge's score over the rubric, same scoring rules; None
    when all of that judge's calls failed). ``device_seconds`` is the engine time of the
    item's judgments. A grade in which every judgment failed has ``score=None`` and ``error``
    set (AutoRubric's API reference, "Core Grading", ``EvaluationReport.score``).
    """
    usage = token_usage(results)
    cost = completion_cost(results)
    seconds = sum(r.seconds for r in results)
    failures = [r.error for r in results if r.error is not None]
    if results and len(failures) == len(results):
        return EnsembleEvaluationReport(
            score=None,
            report=list(criteria),
            judge_scores={judge_id: None for judge_id in judge_criteria},
            error=f"all {len(results)} judgments failed; first: {failures[0]}",
            token_usage=usage,
            completion_cost=cost,
            device_seconds=seconds,
        )
    penalty = compute_length_penalty(graded_input, length_penalty) if length_penalty else 0.0
    raw, score = _score(criteria, cannot_assess, normalize, penalty)
    judge_scores: dict[str, float | None] = {}
    for judge_id, own in judge_criteria.items():
        failed = bool(own) and all(c.is_error for c in own)
        judge_scores[judge_id] = None if failed else _score(own, cannot_assess, normalize, penalty)[1]
    agreements = [c.agreement for c in criteria]
    return EnsembleEvaluationReport(
        score=score,
        raw_score=raw,
        llm_raw_score=raw,
        report=list(criteria),
        judge_scores=judge_scores,
        mean_agreement=sum(agreements) / len(agreements) if agreements else None,
        cannot_assess_count=sum(1 for c in criteria if c.is_na),
        token_usage=usage,
        completion_cost=cost,
        device_seconds=seconds,
    )
