"""The validation steps of AutoRubric's rubric-improvement loop: grading with the rubric (issue 53).

Each step grades items with the rubric under improvement and measures how reliable its grades
are (AutoRubric 1.6.1: ``autorubric/meta/_improve.py``, docs/api/meta.md):

- :func:`validate_ground_truth`: rubric scores against the scores the ground truth earns
  (Spearman's rho; 1 - mean absolute error below 3 items);
- :func:`validate_agreement`: agreement between the judges of an ensemble, per criterion;
- :func:`validate_held_out`: per-criterion errors of the judge against ground-truth verdicts.

A grade that failed is never scored as if it had a verdict: :func:`validate_ground_truth`
raises on it (a correlation over a made-up score means nothing), :func:`validate_agreement`
leaves it out, and :func:`validate_held_out` drops the failed criteria's pairs (they lower the
coverage).

Differences from AutoRubric 1.6.1: a failed grade raises :class:`EngineError` (AutoRubric a
``RuntimeError``); ground truth of another length than the rubric, or a dataset of no items,
raises :class:`InputError`; an unnamed criterion of :func:`validate_held_out` is called
``criterion <n>`` (1-based, AutoRubric ``criterion_<index>``); up to
``max_exemplars_per_criterion`` agreement exemplars are kept (AutoRubric at most 2), in item
order.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from autorubric_local.core.errors import EngineError, InputError
from autorubric_local.core.reports import EnsembleEvaluationReport, EvaluationReport
from autorubric_local.core.rubric import Rubric
from autorubric_local.core.types import CriterionVerdict
from autorubric_local.data.dataset import RubricDataset
from autorubric_local.graders import CriterionGrader, JudgeSpec
from autorubric_local.meta.improvement import (
    CriterionErrorReport,
    CriterionExemplar,
    HeldOutValidationResult,
)
from autorubric_local.metrics.agreement import cohen_kappa
from autorubric_local.metrics.extract import extract_verdicts_from_report, filter_cannot_assess
from autorubric_local.metrics.typed import ConfusionMatrix
from autorubric_local.metrics.types import CannotAssessMode

__all__ = ["validate_agreement", "validate_ground_truth", "validate_held_out"]

SNIPPET_CHARS = 200
"""Characters of a submission kept in an exemplar or an artifact (AutoRubric's 200)."""


def _positive_cost(total: float) -> float | None:
    """AutoRubric reports a cost of 0 (local judges, or nothing priced) as None."""
    return total if total > 0 else None


def _check_items(validation_data: RubricDataset, step: str) -> None:
    if not validation_data.items:
        raise InputError(f"{step}: field 'validation_data': the dataset has no items")


async def _grade(rubric: Rubric, grader: Any, submission: str, query: str | None,
                 reference: str | None) -> EnsembleEvaluationReport | EvaluationReport:
    return await rubric.grade(to_grade=submission, grader=grader, query=query, reference_submission=reference)


async def validate_ground_truth(
    rubric: Rubric,
    validation_data: RubricDataset,
    expected_scores: list[float],
    grader: CriterionGrader,
    task_prompt: str | None = None,
    *,
    on_item_complete: Callable[[], None] | None = None,
    _capture: list | None = None,
    _item_reports: list | None = None,
) -> tuple[float | None, list[tuple[float, float]], float | None]:
    """Grade the validation items with ``rubric`` and compare the scores with the expected ones.

    The metric is Spearman's rank correlation of rubric and expected scores for 3 items or
    more, else 1 - mean absolute error (AutoRubric 1.6.1: ``autorubric.meta.validate_ground_truth``).

    Parameters
    ----------
    rubric : Rubric
        The rubric under improvement (every item is graded with it).
    validation_data : RubricDataset
        Items with ground truth; its ``prompt`` and ``reference_submission`` (an item's own
        reference first) reach the grader.
    expected_scores : list of float, length n_items
        :func:`~autorubric_local.meta.compute_expected_scores` of the dataset.
    grader : CriterionGrader
    task_prompt : str, optional
        The query given to the grader; the dataset's ``prompt`` when None.
    on_item_complete : callable, optional, keyword-only
        Called with no arguments after each item.
    _capture, _item_reports : list, optional, keyword-only
        Receive one dict per item (submission snippet, scores, gap) and each item's report.

    Returns
    -------
    (metric, per_item, total_cost)
        ``metric`` in [-1, 1] (Spearman) or (-inf, 1] (1 - MAE), None when Spearman's rho is
        undefined (a constant score array); ``per_item`` the (rubric_score, expected_score)
        pairs in item order; ``total_cost`` USD, None when 0 or unpriced.

    Raises
    ------
    InputError
        No items, or ``expected_scores`` of another length.
    EngineError
        An item's grade failed (no score); the message names the item (0-based) and the error.
    """
    from scipy.stats import spearmanr

    _check_items(validation_data, "validate_ground_truth")
    if len(expected_scores) != len(validation_data.items):
        raise InputError(f"validate_ground_truth: field 'expected_scores': {len(expected_scores)} scores for "
                         f"{len(validation_data.items)} items")
    scores: list[float] = []
    total = 0.0
    for index, item in enumerate(validation_data.items):
        report = await _grade(rubric, grader, item.submission, task_prompt or validation_data.prompt,
                              item.reference_submission or validation_data.reference_submission)
        if report.score is None:
            raise EngineError(f"validate_ground_truth: item {index}: the grade failed, so it has no score: "
                              f"{report.error}")
        scores.append(report.score)
        total += report.completion_cost or 0.0
        if _item_reports is not None:
            _item_reports.append(report)
        if _capture is not None:
            _capture.append({"submission": item.submission[:SNIPPET_CHARS], "description": item.description,
                             "rubric_score": report.score, "expected_score": expected_scores[index],
                             "gap": report.score - expected_scores[index]})
        if on_item_complete is not None:
            on_item_complete()
    per_item = list(zip(scores, expected_scores, strict=True))
    metric: float | None
    if len(scores) >= 3:
        constant = len(set(scores)) == 1 or len(set(expected_scores)) == 1  # rho is 0/0: undefined
        rho = math.nan if constant else float(spearmanr(scores, expected_scores).statistic)
        metric = None if math.isnan(rho) else rho
    else:
        metric = 1.0 - sum(abs(s - e) for s, e in per_item) / len(per_item)
    return metric, per_item, _positive_cost(total)


async def validate_agreement(
    rubric: Rubric,
    samples: list[str],
    judges: list[JudgeSpec],
    task_prompt: str | None = None,
    *,
    on_sample_complete: Callable[[], None] | None = None,
    _capture: list | None = None,
) -> tuple[float | None, dict[str, float], float | None]:
    """Grade ``samples`` with an ensemble of ``judges`` and measure how much they agree.

    AutoRubric 1.6.1: ``autorubric.meta.validate_agreement``. A sample whose grade failed (no
    criterion reports) is left out; a criterion's agreement is the ensemble report's
    ``agreement`` (the share of judges voting the final verdict).

    Parameters
    ----------
    rubric : Rubric
    samples : list of str
        Submissions to grade.
    judges : list of JudgeSpec, length >= 2
        The ensemble (majority aggregation).
    task_prompt : str, optional
    on_sample_complete : callable, optional, keyword-only
        Called after each sample.
    _capture : list, optional, keyword-only
        Receives one dict per graded sample (score, mean agreement, per-criterion verdicts).

    Returns
    -------
    (mean_agreement, per_criterion_agreement, total_cost)
        ``mean_agreement`` in [0, 1], the mean of the samples' ``mean_agreement``, None when
        none was measured (never 0.0); ``per_criterion_agreement`` maps a criterion's name
        (its first 30 requirement characters when unnamed) to its mean agreement, {} when
        nothing was measured; ``total_cost`` USD or None.

    Raises
    ------
    InputError
        Fewer than 2 judges.
    """
    if len(judges) < 2:
        raise InputError(f"validate_agreement: field 'judges': agreement needs >= 2 judges, got {len(judges)}")
    grader = CriterionGrader(judges=list(judges), aggregation="majority")
    means: list[float] = []
    per_criterion: dict[str, list[float]] = {}
    total = 0.0
    for sample in samples:
        report = await _grade(rubric, grader, sample, task_prompt, None)
        if isinstance(report, EnsembleEvaluationReport) and report.report:
            total += report.completion_cost or 0.0
            if report.mean_agreement is not None:
                means.append(report.mean_agreement)
            for row in report.report:
                if row.error is None:
                    per_criterion.setdefault(row.criterion.name or row.criterion.requirement[:30], []).append(
                        row.agreement)
            if _capture is not None:
                _capture.append({"submission": sample[:SNIPPET_CHARS], "score": report.score,
                                 "mean_agreement": report.mean_agreement,
                                 "completion_cost": report.completion_cost,
                                 "verdicts": [None if r.final_verdict is None else r.final_verdict.value
                                              for r in report.report]})
        if on_sample_complete is not None:
            on_sample_complete()
    if not means:
        return None, {}, _positive_cost(total)
    return (sum(means) / len(means), {name: sum(v) / len(v) for name, v in per_criterion.items()},
            _positive_cost(total))


def _ground_truth_verdicts(item_gt: Sequence[Any], index: int, n: int) -> list[CriterionVerdict]:
    if len(item_gt) != n:
        raise InputError(f"validate_held_out: item {index}: field 'ground_truth': {len(item_gt)} verdicts for a "
                         f"rubric of {n} criteria")
    try:
        return [v if isinstance(v, CriterionVerdict) else CriterionVerdict(str(v).upper()) for v in item_gt]
    except ValueError:
        raise InputError(f"validate_held_out: item {index}: field 'ground_truth': held-out validation takes "
                         f"binary verdicts (MET, UNMET, CANNOT_ASSESS), got {list(item_gt)}") from None


def _mean_or_none(values: Sequence[float | None]) -> float | None:
    known = [v for v in values if v is not None]
    return sum(known) / len(known) if known else None


async def validate_held_out(
    rubric: Rubric,
    validation_data: RubricDataset,
    grader: CriterionGrader,
    task_prompt: str | None = None,
    *,
    max_exemplars_per_criterion: int = 3,
    cannot_assess: CannotAssessMode = "exclude",  # type: ignore[assignment]
    on_item_complete: Callable[[], None] | None = None,
    _capture: list | None = None,
) -> HeldOutValidationResult:
    """Grade held-out items with ``rubric`` and compare each criterion's verdicts with ground truth.

    AutoRubric 1.6.1: ``autorubric.meta.validate_held_out``. Per criterion, MET the positive
    class: accuracy = (TP + TN) / n, false-positive rate FP / (FP + TN), false-negative rate
    FN / (FN + TP) (0.0 when a denominator is 0, accuracy 1.0 when n is 0, as AutoRubric),
    Cohen's kappa of the usable pairs (None when undefined), coverage = n / paired items and
    CANNOT_ASSESS rate = items with CANNOT_ASSESS on either side / paired items.

    Parameters
    ----------
    rubric : Rubric
        Binary criteria; every item is graded with it.
    validation_data : RubricDataset
        Every item has ground truth, one binary verdict per criterion of ``rubric``.
    grader : CriterionGrader
    task_prompt : str, optional
        The grader's query; the dataset's ``prompt`` when None.
    max_exemplars_per_criterion : int, >= 0, default 3, keyword-only
        Disagreement and agreement exemplars kept per criterion (each), in item order.
    cannot_assess : {"exclude", "as_unmet", "as_category"}, default "exclude", keyword-only
        How CANNOT_ASSESS is paired (:func:`~autorubric_local.metrics.filter_cannot_assess`).
        With "as_category" a CANNOT_ASSESS counts as not MET in the 2x2 tallies.
    on_item_complete : callable, optional, keyword-only
    _capture : list, optional, keyword-only
        Receives one dict per item (snippet, description, score).

    Returns
    -------
    HeldOutValidationResult
        ``mean_accuracy`` over the criteria with n > 0 (1.0 when none).

    Raises
    ------
    InputError
        No items, an item without ground truth or with ground truth of another length or
        non-binary, a negative ``max_exemplars_per_criterion``, or an unknown ``cannot_assess``.
    """
    _check_items(validation_data, "validate_held_out")
    if max_exemplars_per_criterion < 0:
        raise InputError(f"validate_held_out: field 'max_exemplars_per_criterion': must be >= 0, "
                         f"got {max_exemplars_per_criterion}")
    try:
        mode = CannotAssessMode(cannot_assess)
    except ValueError:
        raise InputError(f"validate_held_out: field 'cannot_assess': expected one of "
                         f"{[m.value for m in CannotAssessMode]}, got {cannot_assess!r}") from None
    n = len(rubric.rubric)
    counts = [{"tp": 0, "fp": 0, "tn": 0, "fn": 0} for _ in range(n)]
    paired, abstained = [0] * n, [0] * n
    labels: list[tuple[list[int], list[int]]] = [([], []) for _ in range(n)]
    exemplars: list[list[CriterionExemplar]] = [[] for _ in range(n)]
    reports: list[EnsembleEvaluationReport] = []
    total = 0.0
    for item_index, item in enumerate(validation_data.items):
        if item.ground_truth is None:
            raise InputError(f"validate_held_out: item {item_index}: field 'ground_truth': missing; held-out "
                             "validation needs ground truth on every item")
        truth = _ground_truth_verdicts(item.ground_truth, item_index, n)
        report = await _grade(rubric, grader, item.submission, task_prompt or validation_data.prompt,
                              item.reference_submission or validation_data.reference_submission)
        if not isinstance(report, EnsembleEvaluationReport):
            raise InputError(f"validate_held_out: field 'grader': expected an ensemble report from "
                             f"CriterionGrader, got {type(report).__name__}")
        reports.append(report)
        total += report.completion_cost or 0.0
        judged = extract_verdicts_from_report(report)
        judged = judged + [None] * (n - len(judged))  # a failed grade has no criterion rows
        rows = report.report or []
        for c in range(n):
            paired[c] += 1
            if CriterionVerdict.CANNOT_ASSESS in (judged[c], truth[c]):
                abstained[c] += 1
            kept_judge, kept_truth = filter_cannot_assess([judged[c]], [truth[c]], mode)  # (pred, true)
            if not kept_truth:
                continue
            truth_v, judge_v = CriterionVerdict(kept_truth[0]), CriterionVerdict(kept_judge[0])
            truth_met, judge_met = truth_v == CriterionVerdict.MET, judge_v == CriterionVerdict.MET
            key = ("t" if truth_met == judge_met else "f") + ("p" if judge_met else "n")
            counts[c][key] += 1
            labels[c][0].append(int(truth_met))
            labels[c][1].append(int(judge_met))
            reason = rows[c].final_reason if c < len(rows) else ""
            exemplars[c].append(CriterionExemplar(
                item_index=item_index, submission_snippet=item.submission[:SNIPPET_CHARS], llm_verdict=judge_v,
                ground_truth_verdict=truth_v, llm_reason=reason or "", is_disagreement=judge_v != truth_v))
        if _capture is not None:
            _capture.append({"submission": item.submission[:SNIPPET_CHARS], "description": item.description,
                             "rubric_score": report.score})
        if on_item_complete is not None:
            on_item_complete()
    per_criterion = [_criterion_errors(rubric, c, counts[c], paired[c], abstained[c], labels[c], exemplars[c],
                                       max_exemplars_per_criterion) for c in range(n)]
    measured = [cr.accuracy for cr in per_criterion if cr.n_samples > 0]
    return HeldOutValidationResult(
        mean_accuracy=sum(measured) / len(measured) if measured else 1.0, per_criterion=per_criterion,
        total_cost=_positive_cost(total), item_reports=reports, cannot_assess=mode,
        mean_coverage=_mean_or_none([cr.coverage for cr in per_criterion]),
        mean_ca_rate=_mean_or_none([cr.ca_rate for cr in per_criterion]))


def _criterion_errors(rubric: Rubric, c: int, counts: dict[str, int], paired: int, abstained: int,
                      labels: tuple[list[int], list[int]], exemplars: list[CriterionExemplar],
                      k: int) -> CriterionErrorReport:
    tp, fp, tn, fn = counts["tp"], counts["fp"], counts["tn"], counts["fn"]
    n = tp + fp + tn + fn
    criterion = rubric.rubric[c]
    kappa = cohen_kappa(np.array(labels[0]), np.array(labels[1]), labels=[0, 1]) if n else None
    return CriterionErrorReport(
        criterion_index=c, criterion_name=criterion.name or f"criterion {c + 1}", n_samples=n,
        accuracy=(tp + tn) / n if n else 1.0,
        false_positive_rate=fp / (fp + tn) if fp + tn else 0.0,
        false_negative_rate=fn / (fn + tp) if fn + tp else 0.0,
        disagreement_exemplars=[e for e in exemplars if e.is_disagreement][:k],
        agreement_exemplars=[e for e in exemplars if not e.is_disagreement][:k],
        kappa=kappa, coverage=n / paired if paired else None, ca_rate=abstained / paired if paired else None,
        confusion_matrix=ConfusionMatrix(matrix=[[tp, fn], [fp, tn]], labels=["MET", "UNMET"]) if n else None)
