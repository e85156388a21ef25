"""Apply a fitted calibration to a graded run: new verdicts, P(MET) and item scores, in a copy.

Only when asked: the stored run is never changed. For each binary criterion whose key has a
rule and whose final verdict is MET or UNMET (failed criteria and CANNOT_ASSESS verdicts stay as
they are; a rule separates MET from UNMET), the criterion report's final verdict becomes the
rule's decision on its P(MET) (``binary_p_met`` of ``label_probabilities``), and for ``platt``
and ``isotonic`` its ``MET``/``UNMET`` probabilities are rescaled to the recalibrated P(MET),
keeping their sum and the CANNOT_ASSESS probability (``threshold`` leaves the probabilities as
they are). The judges' votes are kept unchanged. Item scores are recomputed with the run's
scoring settings (``normalize``, ``cannot_assess_config``) by the one scorer
(:func:`autorubric_local.core.scoring.raw_and_normalized`).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from autorubric_local.calibration.fit import ThresholdCalibration
from autorubric_local.calibration.rules import Method
from autorubric_local.core.errors import InputError
from autorubric_local.core.reports import EnsembleCriterionReport, EnsembleEvaluationReport
from autorubric_local.core.scoring import raw_and_normalized
from autorubric_local.core.types import CannotAssessConfig, CriterionVerdict
from autorubric_local.metrics.extract import binary_p_met, criterion_key
from autorubric_local.runner.results import EvalResult, ItemResult

__all__ = ["apply_calibration"]


def apply_calibration(calibration: ThresholdCalibration, result: EvalResult) -> EvalResult:
    """``result`` with ``calibration``'s rules applied (module docstring).

    For each criterion a rule applies to, P(MET) is ``p_MET / (p_MET + p_UNMET)`` of its
    ``label_probabilities`` (:func:`~autorubric_local.metrics.extract.binary_p_met`, a
    probability in [0, 1]); the verdict becomes the rule's decision on it (``threshold``: MET
    iff P(MET) >= the fitted threshold; ``platt`` / ``isotonic``: MET iff the recalibrated
    probability >= 0.5, see :mod:`autorubric_local.calibration.rules`). An item whose
    criteria all stay as they were, or whose grading failed (``report.score is None``), is
    kept as the same object; a changed item gets a new report whose ``score``, ``raw_score``,
    ``llm_raw_score`` and ``mean_agreement`` are recomputed. Criteria are matched to rules by
    :func:`~autorubric_local.metrics.extract.criterion_key` (the name, else
    ``"criterion <index>"``). Apply the calibration to items it was not fitted on
    (``calibration.train_item_ids``) to measure it; nothing here checks that.

    Parameters
    ----------
    calibration : ThresholdCalibration
        From :func:`~autorubric_local.calibration.fit.fit_thresholds` /
        :func:`~autorubric_local.calibration.fit.calibrate_run`, or
        :func:`~autorubric_local.calibration.stored.load_calibration`.
    result : EvalResult
        A whole graded run (e.g. ``load_result(path)[0]``); not modified.

    Returns
    -------
    EvalResult
        A copy (:func:`dataclasses.replace`) with ``item_results`` replaced, in the same order
        and of the same length. Its ``grader_settings`` gain ``"threshold_calibration"``:
        ``{"method": ..., "n_train_items": int}``, so metrics computed from it say what they
        describe. Run-level totals (tokens, cost in USD, timing) are unchanged.

    Raises
    ------
    InputError
        The run was graded with a length penalty (its per-item penalty is not stored, so the
        scores could not be recomputed).
    pydantic.ValidationError
        The run's stored ``cannot_assess_config`` setting no longer validates as a
        :class:`~autorubric_local.core.types.CannotAssessConfig`.
    """
    settings: dict[str, Any] = dict(result.grader_settings or {})
    if settings.get("length_penalty"):
        raise InputError("apply_calibration: the run was graded with a length penalty, whose per-item value is not "
                         "stored; its scores cannot be recomputed")
    config = CannotAssessConfig.model_validate(settings.get("cannot_assess_config") or {})
    normalize = bool(settings.get("normalize", True))
    items = [_apply_item(calibration, item, config, normalize) for item in result.item_results]
    settings["threshold_calibration"] = {"method": calibration.method.value,
                                         "n_train_items": len(calibration.train_item_ids)}
    return replace(result, item_results=items, grader_settings=settings)


def _apply_item(calibration: ThresholdCalibration, item: ItemResult, config: CannotAssessConfig,
                normalize: bool) -> ItemResult:
    report = item.report
    if report.score is None or not report.report:
        return item
    criteria = [_apply_criterion(calibration, cr, index) for index, cr in enumerate(report.report)]
    if all(new is old for new, old in zip(criteria, report.report, strict=True)):
        return item
    raw, normalized = raw_and_normalized(criteria, config)
    agreements = [c.agreement for c in criteria]
    updated: EnsembleEvaluationReport = report.model_copy(update={
        "report": criteria,
        "score": normalized if normalize else raw,
        "raw_score": raw,
        "llm_raw_score": raw,
        "mean_agreement": sum(agreements) / len(agreements),
    })
    return replace(item, report=updated)


def _apply_criterion(calibration: ThresholdCalibration, cr: EnsembleCriterionReport, index: int) -> EnsembleCriterionReport:
    rule = calibration.rules.get(criterion_key(cr.criterion, index))
    p = binary_p_met(cr.label_probabilities)
    if (rule is None or cr.criterion.options is not None or cr.error is not None or p is None
            or cr.final_verdict not in (CriterionVerdict.MET, CriterionVerdict.UNMET)):
        return cr
    verdict = CriterionVerdict.MET if bool(rule.decide([p])[0]) else CriterionVerdict.UNMET
    probabilities = dict(cr.label_probabilities or {})
    if rule.method is not Method.THRESHOLD:
        recalibrated = float(rule.probability([p])[0])
        both = probabilities.get("MET", 0.0) + probabilities.get("UNMET", 0.0)
        probabilities.update(MET=recalibrated * both, UNMET=(1.0 - recalibrated) * both)
    # Validated again, so that the criterion's agreement with its votes is recomputed.
    return EnsembleCriterionReport.model_validate(
        {**cr.model_dump(exclude={"agreement"}), "final_verdict": verdict, "label_probabilities": probabilities}
    )
