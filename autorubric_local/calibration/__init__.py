"""Calibration from labelled data: per-criterion rules fitted on a training split of a graded run.

Not to be confused with :mod:`autorubric_local.metrics.calibration`, which *measures* how well
P(MET) is calibrated; this room *fits* corrections: a kappa-maximising threshold on P(MET),
Platt scaling or isotonic regression (:mod:`.rules`), on the training items only
(:mod:`.samples`, :mod:`.fit`), with K-fold cross-validation and held-out before/after
agreement (:mod:`.evaluation`), stored with the run (:mod:`.stored`) and applied to a run only
when asked (:mod:`.apply`). (Contextual calibration, which needs no labels, is a grading option:
:mod:`autorubric_local.graders.contextual`.)

Example
-------
>>> result, dataset = load_result("q1.sqlite", "q1-smol")              # doctest: +SKIP
>>> fitted = calibrate_run(result, dataset, "threshold", test_size=0.3, seed=0)  # doctest: +SKIP
>>> print(fitted.held_out.summary())                                    # doctest: +SKIP
>>> calibrated = apply_calibration(fitted.calibration, result)          # doctest: +SKIP
"""

from autorubric_local.calibration.apply import apply_calibration
from autorubric_local.calibration.evaluation import Agreement, CrossValidation
from autorubric_local.calibration.fit import (
    CalibrationRun,
    CriterionHeldOut,
    HeldOutReport,
    ThresholdCalibration,
    calibrate_run,
    evaluate_held_out,
    fit_thresholds,
    split_run,
)
from autorubric_local.calibration.rules import CannotFitError, CriterionRule, Method
from autorubric_local.calibration.stored import load_calibration, save_calibration

__all__ = [
    "Agreement",
    "CalibrationRun",
    "CannotFitError",
    "CriterionHeldOut",
    "CriterionRule",
    "CrossValidation",
    "HeldOutReport",
    "Method",
    "ThresholdCalibration",
    "apply_calibration",
    "calibrate_run",
    "evaluate_held_out",
    "fit_thresholds",
    "load_calibration",
    "save_calibration",
    "split_run",
]
