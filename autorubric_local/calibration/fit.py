"""Fit per-criterion rules on a training split of a graded, labelled run; report held-out agreement.

``fit_thresholds(result, train_ids, method)`` reads only the training items' pairs
(:func:`.samples.criterion_samples`) and fits one rule per binary criterion (:mod:`.rules`),
with K-fold cross-validation on those same pairs (:mod:`.evaluation`). ``evaluate_held_out``
then compares, on the test items, the run's own verdicts and P(MET) ("before") with the rule's
("after"). ``split_run`` draws the split with :meth:`RubricDataset.train_test_indices` (the split
of ``split_train_test``) over the run's labelled, graded items.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass

from pydantic import BaseModel, ConfigDict

from autorubric_local.calibration.evaluation import Agreement, CrossValidation, agreement, cross_validate
from autorubric_local.calibration.rules import CannotFitError, CriterionRule, Method, as_method, fit_rule
from autorubric_local.calibration.samples import criterion_samples
from autorubric_local.core.errors import InputError
from autorubric_local.data.dataset import RubricDataset
from autorubric_local.metrics.types import GradedRun

__all__ = [
    "CalibrationRun",
    "CriterionHeldOut",
    "HeldOutReport",
    "ThresholdCalibration",
    "calibrate_run",
    "evaluate_held_out",
    "fit_thresholds",
    "split_run",
]


class ThresholdCalibration(BaseModel):
    """Rules fitted on a run's training items, one per binary criterion key.

    Attributes
    ----------
    method : Method
    objective : "cohen_kappa"
        What the ``threshold`` method maximises on the training pairs.
    n_folds : int
        Folds of the cross-validation.
    seed : int or None
        Seed of the cross-validation's fold assignment.
    train_item_ids : list of str
        The items the rules were fitted on (and no other).
    rules : dict of str to CriterionRule
    cross_validation : dict of str to CrossValidation
        Per criterion with a rule, when its smaller class has at least ``n_folds`` pairs.
    skipped : dict of str to str
        Criteria with training pairs but no rule, and why.
    notes : dict of str to str
        Why a criterion's rule has no cross-validation.
    """

    model_config = ConfigDict(frozen=True)

    method: Method
    objective: str = "cohen_kappa"
    n_folds: int
    seed: int | None
    train_item_ids: list[str]
    rules: dict[str, CriterionRule]
    cross_validation: dict[str, CrossValidation]
    skipped: dict[str, str]
    notes: dict[str, str]

    def summary(self) -> str:
        """One line per criterion: its rule, training pairs and cross-validated kappa."""
        lines = [f"{self.method.value} rules fitted on {len(self.train_item_ids)} training items"]
        for key, rule in self.rules.items():
            cv = self.cross_validation.get(key)
            if cv is not None and cv.mean_kappa is not None:
                checked = f"{cv.n_folds}-fold CV kappa {cv.mean_kappa:.3f} +/- {cv.std_kappa or 0.0:.3f}"
            else:
                checked = self.notes.get(key, "no cross-validation")
            lines.append(f"{key}: {rule.describe()} ({rule.n_train} pairs, {rule.n_met} MET; {checked})")
        lines.extend(f"{key}: no rule: {why}" for key, why in self.skipped.items())
        return "\n".join(lines)


def fit_thresholds(
    result: GradedRun,
    train_ids: Iterable[str],
    method: Method | str = Method.THRESHOLD,
    *,
    n_folds: int = 5,
    seed: int | None = 0,
) -> ThresholdCalibration:
    """Fit ``method`` per binary criterion on the items ``train_ids`` of ``result``.

    Parameters
    ----------
    result : GradedRun
        A graded run with ground truth on its items (``load_result``).
    train_ids : iterable of str
        The training items (``ItemResult.item_id``); nothing else of the run is read.
    method : "threshold", "platt" or "isotonic"
    n_folds : int >= 2, default 5
    seed : int or None, default 0
        Seed of the cross-validation folds.

    Raises
    ------
    InputError
        Unknown method, ``n_folds`` < 2, unknown or repeated ids, or no labelled binary pair
        among the training items.
    """
    chosen = as_method(method)
    if isinstance(n_folds, bool) or not isinstance(n_folds, int) or n_folds < 2:
        raise InputError(f"n_folds must be an integer >= 2, got {n_folds!r}")
    ids = list(train_ids)
    samples = criterion_samples(result, ids)
    if not samples:
        raise InputError("no training pairs: none of the training items has a binary criterion with a human "
                         "MET/UNMET label and a MET/UNMET verdict with probabilities")
    rules: dict[str, CriterionRule] = {}
    validation: dict[str, CrossValidation] = {}
    skipped: dict[str, str] = {}
    notes: dict[str, str] = {}
    for key, sample in samples.items():
        try:
            rules[key] = fit_rule(key, sample.y, sample.p, chosen)
        except CannotFitError as exc:
            skipped[key] = str(exc)
            continue
        try:
            validation[key] = cross_validate(sample, chosen, n_folds, seed)
        except CannotFitError as exc:
            notes[key] = f"no cross-validation: {exc}"
    return ThresholdCalibration(method=chosen, n_folds=n_folds, seed=seed, train_item_ids=ids, rules=rules,
                                cross_validation=validation, skipped=skipped, notes=notes)


class CriterionHeldOut(BaseModel):
    """One criterion on the test items: the run's own verdicts and P(MET) ("before") and the
    rule's decisions and recalibrated P(MET) ("after"), on the same pairs."""

    model_config = ConfigDict(frozen=True)

    key: str
    before: Agreement
    after: Agreement


class HeldOutReport(BaseModel):
    """Held-out agreement of a calibration on the test items (:func:`evaluate_held_out`).

    Attributes
    ----------
    method : Method
        The calibration's method (``threshold``, ``platt`` or ``isotonic``).
    test_item_ids : list of str
        The items evaluated, as given (none of them a training item).
    criteria : list of CriterionHeldOut
        One per binary criterion with test pairs and a rule, in the order criteria are first
        met: ``before`` (the run's own verdicts and P(MET)) and ``after`` (the rule's), each an
        :class:`~autorubric_local.calibration.evaluation.Agreement` on the same ``n`` pairs:
        accuracy and ECE in [0, 1] (ECE with 10 equal-width bins, Naeini et al. 2015; Guo et
        al. 2017, eq. 3, :mod:`autorubric_local.metrics.calibration`), Cohen's kappa in
        [-1, 1] and AUROC in [0, 1] (scikit-learn's ``cohen_kappa_score`` and
        ``roc_auc_score``), ``None`` where undefined.
    not_evaluated : dict of str to str
        A criterion with test pairs but no rule, and the reason.

    :meth:`summary` renders it as a plain-text table.
    """

    model_config = ConfigDict(frozen=True)

    method: Method
    test_item_ids: list[str]
    criteria: list[CriterionHeldOut]
    not_evaluated: dict[str, str]

    def summary(self) -> str:
        """A plain-text table: per criterion, n and before -> after accuracy, kappa, AUROC, ECE."""
        def show(value: float | None) -> str:
            return "  n/a" if value is None else f"{value:5.3f}"

        lines = [f"held-out agreement ({self.method.value}; {len(self.test_item_ids)} test items; before -> after)",
                 f"{'criterion':<24} {'n':>5}  {'accuracy':>14}  {'kappa':>14}  {'AUROC':>14}  {'ECE':>14}"]
        for c in self.criteria:
            cells = [f"{show(getattr(c.before, name))} -> {show(getattr(c.after, name))}"
                     for name in ("accuracy", "kappa", "auroc", "ece")]
            lines.append(f"{c.key[:24]:<24} {c.before.n:>5}  " + "  ".join(f"{cell:>14}" for cell in cells))
        lines.extend(f"{key}: not evaluated: {why}" for key, why in self.not_evaluated.items())
        return "\n".join(lines)


def evaluate_held_out(calibration: ThresholdCalibration, result: GradedRun, test_ids: Iterable[str]) -> HeldOutReport:
    """Before/after agreement of ``calibration`` on the items ``test_ids`` of ``result``.

    The pairs are read by :func:`~autorubric_local.calibration.samples.criterion_samples`: per
    binary criterion, items with a MET/UNMET human label and a MET/UNMET final verdict with a
    P(MET) (failed items, failed criteria and CANNOT_ASSESS on either side are left out).
    "Before" scores the run's verdicts and P(MET); "after" the rule's decisions and
    recalibrated P(MET) (:meth:`~autorubric_local.calibration.rules.CriterionRule.decide` and
    :meth:`~autorubric_local.calibration.rules.CriterionRule.probability`).

    Parameters
    ----------
    calibration : ThresholdCalibration
        From :func:`fit_thresholds` (or :func:`~autorubric_local.calibration.stored.load_calibration`).
    result : GradedRun
        An ``EvalResult`` or a ``StoredGradedRun`` (:func:`~autorubric_local.runner.results.open_graded_run`).
    test_ids : iterable of str
        ``ItemResult.item_id`` of the items to evaluate on; consumed once.

    Returns
    -------
    HeldOutReport
        Per criterion with a rule, ``before`` and ``after`` agreement; criteria with test pairs
        but no rule in ``not_evaluated`` (with the reason the fit skipped them). A criterion
        with no test pair appears in neither.

    Raises
    ------
    InputError
        Unknown or repeated ids, a test id the calibration was fitted on
        (``calibration.train_item_ids``), or a test item whose ground truth and report differ
        in length.
    """
    ids = list(test_ids)
    overlap = sorted(set(ids) & set(calibration.train_item_ids))
    if overlap:
        raise InputError(f"{len(overlap)} test item(s) were training items of this calibration: {overlap[:5]}")
    criteria = []
    not_evaluated: dict[str, str] = {}
    for key, sample in criterion_samples(result, ids).items():
        rule = calibration.rules.get(key)
        if rule is None:
            not_evaluated[key] = calibration.skipped.get(key, "no training pairs, so no rule")
            continue
        criteria.append(CriterionHeldOut(
            key=key,
            before=agreement(sample.y, sample.verdict, sample.p),
            after=agreement(sample.y, rule.decide(sample.p), rule.probability(sample.p)),
        ))
    return HeldOutReport(method=calibration.method, test_item_ids=ids, criteria=criteria, not_evaluated=not_evaluated)


def split_run(
    result: GradedRun, dataset: RubricDataset, test_size: float = 0.3, seed: int | None = 0, stratify: bool = True
) -> tuple[list[str], list[str]]:
    """Split a run's labelled, graded items into training and test ids.

    The items with ground truth whose grading did not fail are split with
    :meth:`RubricDataset.train_test_indices` (stratified by ground truth by default), with
    ``ceil(test_size * n)`` test items (scikit-learn's ``train_test_split`` rounding).

    Parameters
    ----------
    result : GradedRun
    dataset : RubricDataset
        The run's dataset (``load_result`` returns both); ``ItemResult.item_idx`` indexes it.
    test_size : float in (0, 1), default 0.3
    seed : int or None, default 0
    stratify : bool, default True

    Returns
    -------
    (train_ids, test_ids) : two lists of item ids, in item order

    Raises
    ------
    InputError
        ``test_size`` outside (0, 1), or too few labelled items for both parts.
    """
    if isinstance(test_size, bool) or not (isinstance(test_size, (int, float)) and 0.0 < test_size < 1.0):
        raise InputError(f"test_size must be a number in (0, 1), got {test_size!r}")
    labelled = sorted((r for r in result.item_results if r.item.ground_truth is not None and r.report.score is not None),
                      key=lambda r: r.item_idx)
    n_test = math.ceil(test_size * len(labelled))
    if len(labelled) - n_test < 1:
        raise InputError(f"test_size {test_size:g} leaves no training item among the run's {len(labelled)} labelled, "
                         "graded items")
    subset = dataset.with_items([dataset.items[r.item_idx] for r in labelled])
    train, test = subset.train_test_indices(len(labelled) - n_test, stratify=stratify, seed=seed)
    return [labelled[i].item_id for i in train], [labelled[i].item_id for i in test]


@dataclass(frozen=True)
class CalibrationRun:
    """A calibration fitted on a run's training split and its held-out report."""

    calibration: ThresholdCalibration
    held_out: HeldOutReport
    train_ids: list[str]
    test_ids: list[str]
    settings: dict[str, object]


def calibrate_run(
    result: GradedRun,
    dataset: RubricDataset,
    method: Method | str = Method.THRESHOLD,
    *,
    test_size: float = 0.3,
    seed: int | None = 0,
    n_folds: int = 5,
    stratify: bool = True,
) -> CalibrationRun:
    """Fit decision rules on a training split of a graded, labelled run and report their
    agreement with the humans on the held-out items, before and after.

    Split (:func:`split_run`), fit on the training items (:func:`fit_thresholds`), evaluate on
    the test items (:func:`evaluate_held_out`). Stored verdicts are not changed.

    Parameters
    ----------
    result : EvalResult or StoredGradedRun
        The graded run (a result in memory, or a stored run read a page at a time).
    dataset : RubricDataset
        Its dataset, whose items' ``ground_truth`` are the human labels.
    method : {"threshold", "platt", "isotonic"}, default "threshold"
        ``threshold``: MET iff P(MET) >= t, t maximising Cohen's kappa in cross-validation;
        ``platt``: logistic regression on logit P(MET) (Platt, 1999); ``isotonic``: isotonic
        regression of P(MET) (Zadrozny & Elkan, 2002).
    test_size : float in (0, 1), default 0.3
        Share of the labelled items held out.
    seed : int or None, default 0
        Seeds both the split and the folds.
    n_folds : int >= 2, default 5
        Folds of the cross-validation on the training items.
    stratify : bool, default True
        Split stratified by ground truth (else at random).

    Returns
    -------
    CalibrationRun
        The fitted rules, the held-out report, the training and test item ids and the settings.

    Raises
    ------
    InputError
        ``test_size`` outside (0, 1) or too few labelled items for both parts
        (:func:`split_run`); an unknown method, ``n_folds`` < 2 or no labelled binary pair among
        the training items (:func:`fit_thresholds`).
    """
    train_ids, test_ids = split_run(result, dataset, test_size, seed, stratify)
    calibration = fit_thresholds(result, train_ids, method, n_folds=n_folds, seed=seed)
    held_out = evaluate_held_out(calibration, result, test_ids)
    settings: dict[str, object] = {"method": calibration.method.value, "test_size": test_size, "seed": seed,
                                   "n_folds": n_folds, "stratify": stratify}
    return CalibrationRun(calibration, held_out, train_ids, test_ids, settings)
