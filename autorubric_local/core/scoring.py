"""The one weighted-scoring function, shared by the grader, ``Rubric.compute_score`` and
datasets, so that live scores and ground-truth scores cannot drift.

Formula (AutoRubric's API reference, "Core Grading", "Score Calculation"; AutoRubric's README
(github.com/delip/autorubric), "CANNOT_ASSESS Handling"). For each criterion ``i`` that is
scored, with weight ``w_i``, its contribution ``c_i`` is

- binary: ``w_i`` if MET, ``0`` if UNMET;
- multi-choice: ``value_i * w_i`` of the selected option;
- CANNOT_ASSESS / NA option, by :class:`~autorubric_local.core.types.CannotAssessStrategy`:

  - SKIP: the criterion is not scored (left out of numerator and denominator);
  - ZERO: ``0``;
  - PARTIAL: ``partial_credit * w_i`` when ``w_i > 0``, else ``0`` (no partial penalty);
  - FAIL: the worst case: ``0`` for ``w_i >= 0`` and ``w_i`` for ``w_i < 0`` (binary);
    ``worst_scored_option().value * w_i`` (multi-choice);

- a report whose judge call failed (``error`` set): the same worst case as FAIL, whatever
  verdict it carries and whatever the strategy (README 001 "Error Handling": UNMET for
  positive weight, MET for negative weight).

``raw = sum_i c_i``. With ``P = sum of w_i > 0`` and ``N = sum of |w_i|, w_i < 0`` over the
scored criteria, the normalised score is

- ``clamp(raw / P, 0, 1)`` when ``P > 0``;
- ``clamp(1 + raw / N, 0, 1)`` when ``P == 0`` and ``N > 0`` (a penalty-only rubric: 1.0
  when no penalty applies, 0.0 when all apply in full);
- ``0.0`` when nothing with non-zero weight is scored (empty input, everything skipped,
  or only zero-weight criteria). The raw score is then ``0.0`` too.
"""

from __future__ import annotations

from collections.abc import Sequence

from autorubric_local.core.reports import CriterionReport, EnsembleCriterionReport
from autorubric_local.core.types import (
    CannotAssessConfig,
    CannotAssessStrategy,
    Criterion,
)

__all__ = [
    "criterion_contribution",
    "raw_and_normalized",
    "score_reports",
    "worst_case_contribution",
]

ScoredReport = CriterionReport | EnsembleCriterionReport


def _criterion_of(report: ScoredReport) -> Criterion:
    return report.criterion if isinstance(report, EnsembleCriterionReport) else report


def worst_case_contribution(criterion: Criterion) -> float:
    """Score-minimising weighted contribution of ``criterion``.

    ``0`` for a binary criterion with weight >= 0 (UNMET), ``weight`` for negative weight
    (MET); for multi-choice, ``worst_scored_option().value * weight``.
    """
    weight = criterion.weight
    if criterion.is_multi_choice:
        _, option = criterion.worst_scored_option()
        return option.value * weight
    return weight if weight < 0 else 0.0


def criterion_contribution(report: ScoredReport, config: CannotAssessConfig) -> float | None:
    """Weighted contribution of one report to the raw score, or ``None`` if it is skipped.

    Parameters
    ----------
    report : CriterionReport or EnsembleCriterionReport
    config : CannotAssessConfig

    Returns
    -------
    float or None
        The contribution ``c_i`` of the module formula; ``None`` when the report is
        CANNOT_ASSESS / NA under ``SKIP`` (and did not come from a failed call).
    """
    criterion = _criterion_of(report)
    weight = criterion.weight
    if report.is_error:
        return worst_case_contribution(criterion)
    if not report.is_na:
        return report.score_value * weight
    strategy = config.strategy
    if strategy is CannotAssessStrategy.SKIP:
        return None
    if strategy is CannotAssessStrategy.ZERO:
        return 0.0
    if strategy is CannotAssessStrategy.PARTIAL:
        return config.partial_credit * weight if weight > 0 else 0.0
    return worst_case_contribution(criterion)


def raw_and_normalized(
    reports: Sequence[ScoredReport], config: CannotAssessConfig
) -> tuple[float, float]:
    """Raw weighted sum and normalised score of ``reports`` in one pass.

    Parameters
    ----------
    reports : sequence of CriterionReport or EnsembleCriterionReport, length n_criteria
    config : CannotAssessConfig

    Returns
    -------
    raw : float
        ``sum_i c_i`` (unbounded, may be negative).
    normalized : float
        In [0, 1]; see the module docstring for the denominator cases.
    """
    raw = 0.0
    positive = 0.0
    negative = 0.0
    for report in reports:
        contribution = criterion_contribution(report, config)
        if contribution is None:
            continue
        raw += contribution
        weight = _criterion_of(report).weight
        if weight > 0:
            positive += weight
        else:
            negative -= weight
    if positive > 0:
        normalized = raw / positive
    elif negative > 0:
        normalized = 1.0 + raw / negative
    else:
        normalized = 0.0
    return raw, min(1.0, max(0.0, normalized))


def score_reports(
    reports: Sequence[ScoredReport], config: CannotAssessConfig, normalize: bool = True
) -> float:
    """Weighted score of per-criterion reports (AutoRubric's API reference, "Core Grading", "Score Calculation").

    Parameters
    ----------
    reports : sequence of CriterionReport or EnsembleCriterionReport, length n_criteria
    config : CannotAssessConfig
        How CANNOT_ASSESS / NA verdicts count.
    normalize : bool, default True
        True: the normalised score in [0, 1]. False: the raw weighted sum.

    Returns
    -------
    float
        See the module docstring for the formula and the zero-denominator cases.
    """
    raw, normalized = raw_and_normalized(reports, config)
    return normalized if normalize else raw
