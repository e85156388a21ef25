"""Decision rules on P(MET) (issue 20, part 2): the kappa-maximising threshold against
hand-computed tables and scikit-learn's cohen_kappa_score, Platt scaling and isotonic regression
against direct scikit-learn calls, cross-validation against StratifiedKFold run by hand, held-out
agreement against scikit-learn's metrics."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.special import expit, logit
from sklearn.isotonic import IsotonicRegression
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import accuracy_score, cohen_kappa_score, roc_auc_score
from sklearn.model_selection import StratifiedKFold

from autorubric_local.calibration.evaluation import agreement, cross_validate
from autorubric_local.calibration.rules import (
    CannotFitError,
    Method,
    as_method,
    best_threshold,
    fit_rule,
    threshold_kappas,
)
from autorubric_local.calibration.samples import CriterionSample
from autorubric_local.core.errors import InputError
from autorubric_local.metrics.calibration import expected_calibration_error

# ------------------------------------------------------------------------------ threshold

Y = np.array([0, 0, 1, 0, 1, 1])
P = np.array([0.1, 0.3, 0.4, 0.5, 0.7, 0.9])


def test_kappa_of_every_candidate_by_hand() -> None:
    # Candidates: midpoints 0.2, 0.35, 0.45, 0.6, 0.8. Counts (TP, FP, FN, TN) and kappa
    # 2(TP TN - FP FN) / ((TP+FP)(FP+TN) + (TP+FN)(FN+TN)):
    # 0.2: (3,2,0,1) -> 6/18; 0.35: (3,1,0,2) -> 12/18; 0.45: (2,1,1,2) -> 6/18;
    # 0.6: (2,0,1,3) -> 12/18; 0.8: (1,0,2,3) -> 6/18.
    kappas = threshold_kappas(Y, P, np.array([0.2, 0.35, 0.45, 0.6, 0.8]))
    assert kappas == pytest.approx([1 / 3, 2 / 3, 1 / 3, 2 / 3, 1 / 3], abs=1e-15)


def test_tied_kappas_go_to_the_threshold_closest_to_one_half() -> None:
    assert best_threshold(Y, P) == pytest.approx(0.6, abs=1e-15)  # 0.35 and 0.6 tie at 2/3


def test_a_tie_at_equal_distance_goes_to_the_lower_threshold() -> None:
    y = np.array([0, 1, 0, 1])
    p = np.array([0.3, 0.5, 0.5, 0.7])  # distinct 0.3, 0.5, 0.7 -> candidates 0.4, 0.6
    # 0.4: (2,1,0,1) -> 2(2-0)/((3)(2)+(2)(1)) = 4/8; 0.6: (1,0,1,2) -> 2(2-0)/((1)(2)+(2)(3)) = 4/8
    assert threshold_kappas(y, p, np.array([0.4, 0.6])) == pytest.approx([0.5, 0.5])
    assert best_threshold(y, p) == pytest.approx(0.4)


def test_a_judge_that_says_met_for_everything_gets_a_high_threshold() -> None:
    y = np.array([0, 0, 0, 1, 1, 1])
    p = np.array([0.80, 0.82, 0.85, 0.90, 0.93, 0.95])
    rule = fit_rule("density", y, p, Method.THRESHOLD)
    assert rule.threshold == pytest.approx(0.875)
    assert rule.decide(p).tolist() == [False, False, False, True, True, True]
    assert rule.probability(p).tolist() == p.tolist()  # a threshold leaves P(MET) alone
    assert (rule.n_train, rule.n_met) == (6, 3)


def test_vectorised_kappa_equals_scikit_learn_on_random_tables() -> None:
    rng = np.random.default_rng(1)
    for _ in range(30):
        n = int(rng.integers(4, 40))
        y = rng.integers(0, 2, n)
        y[0], y[1] = 0, 1
        p = np.round(rng.random(n), 2)  # repeated values too
        values = np.unique(p)
        candidates = (values[:-1] + values[1:]) / 2
        mine = threshold_kappas(y, p, candidates)
        reference = [cohen_kappa_score(y, (p >= t).astype(int)) for t in candidates]
        assert mine == pytest.approx(reference, abs=1e-12)
        t = best_threshold(y, p)
        assert cohen_kappa_score(y, (p >= t).astype(int)) == pytest.approx(max(reference), abs=1e-12)


@pytest.mark.parametrize("method", list(Method))
def test_one_class_cannot_be_fitted(method: Method) -> None:
    with pytest.raises(CannotFitError, match=r"criterion 'c': all 3 training items are MET"):
        fit_rule("c", [1, 1, 1], [0.2, 0.5, 0.9], method)


def test_one_probability_cannot_be_thresholded() -> None:
    with pytest.raises(CannotFitError, match="every training P\\(MET\\) is 0.9; no threshold separates them"):
        fit_rule("c", [0, 1, 1], [0.9, 0.9, 0.9], Method.THRESHOLD)


@pytest.mark.parametrize(
    ("y", "p", "message"),
    [([0, 1], [0.2, 1.5], "probabilities in \\[0, 1\\]"), ([0, 2], [0.2, 0.5], "labels must be 0/1"),
     ([0, 1, 1], [0.2, 0.5], "as many as the probabilities")],
)
def test_bad_pairs_are_refused(y: list[int], p: list[float], message: str) -> None:
    with pytest.raises(InputError, match=message):
        fit_rule("c", y, p, Method.PLATT)


def test_unknown_method_names_the_allowed_ones() -> None:
    with pytest.raises(InputError, match="method must be one of threshold, platt, isotonic, got 'beta'"):
        as_method("beta")


# ------------------------------------------------------------------------------ Platt, isotonic

RNG = np.random.default_rng(7)
TRAIN_Y = RNG.integers(0, 2, 60)
TRAIN_P = np.clip(0.75 + 0.1 * TRAIN_Y + RNG.normal(0, 0.08, 60), 0, 1)  # a judge biased towards MET
TRAIN_P[:3] = [0.0, 1.0, 0.5]  # the ends are clipped before the logit
NEW_P = np.array([0.0, 0.05, 0.6, 0.78, 0.83, 0.9, 0.99, 1.0])


def test_platt_is_scikit_learns_logistic_regression_on_the_logit() -> None:
    rule = fit_rule("c", TRAIN_Y, TRAIN_P, Method.PLATT)
    x = logit(np.clip(TRAIN_P, 1e-12, 1 - 1e-12)).reshape(-1, 1)
    reference = LogisticRegression().fit(x, TRAIN_Y)
    assert rule.platt_coef == reference.coef_[0, 0] and rule.platt_intercept == reference.intercept_[0]
    new_x = logit(np.clip(NEW_P, 1e-12, 1 - 1e-12)).reshape(-1, 1)
    assert rule.probability(NEW_P) == pytest.approx(reference.predict_proba(new_x)[:, 1], abs=1e-12)
    assert rule.decide(NEW_P).tolist() == (reference.predict_proba(new_x)[:, 1] >= 0.5).tolist()
    assert rule.probability(NEW_P) == pytest.approx(expit(rule.platt_coef * new_x[:, 0] + rule.platt_intercept))


def test_isotonic_is_scikit_learns_isotonic_regression() -> None:
    rule = fit_rule("c", TRAIN_Y, TRAIN_P, Method.ISOTONIC)
    reference = IsotonicRegression(y_min=0.0, y_max=1.0, increasing=True, out_of_bounds="clip").fit(TRAIN_P, TRAIN_Y)
    grid = np.linspace(0.0, 1.0, 201)
    assert rule.probability(grid) == pytest.approx(reference.predict(grid), abs=1e-12)
    assert rule.decide(grid).tolist() == (reference.predict(grid) >= 0.5).tolist()


def test_isotonic_by_hand() -> None:
    # Pool adjacent violators on y ordered by p: [0, 1, 0, 1] -> [0, 0.5, 0.5, 1].
    rule = fit_rule("c", [0, 1, 0, 1], [0.1, 0.2, 0.3, 0.4], Method.ISOTONIC)
    assert rule.probability([0.1, 0.2, 0.25, 0.3, 0.4, 0.9]) == pytest.approx([0.0, 0.5, 0.5, 0.5, 1.0, 1.0])


# ------------------------------------------------------------------------------ CV, agreement


def sample(y: np.ndarray, p: np.ndarray) -> CriterionSample:
    return CriterionSample("c", tuple(f"i{k}" for k in range(y.size)), y, p, (p >= 0.5).astype(int))


@pytest.mark.parametrize("method", list(Method))
def test_cross_validation_is_stratified_k_fold_refitting_on_the_other_folds(method: Method) -> None:
    cv = cross_validate(sample(TRAIN_Y, TRAIN_P), method, 4, 3)
    kappas, accuracies = [], []
    for fit_at, held_at in StratifiedKFold(4, shuffle=True, random_state=3).split(TRAIN_P.reshape(-1, 1), TRAIN_Y):
        rule = fit_rule("c", TRAIN_Y[fit_at], TRAIN_P[fit_at], method)
        predicted = rule.decide(TRAIN_P[held_at]).astype(int)
        kappas.append(cohen_kappa_score(TRAIN_Y[held_at], predicted))
        accuracies.append(accuracy_score(TRAIN_Y[held_at], predicted))
    assert cv.fold_kappas == pytest.approx(kappas, abs=1e-12)
    assert cv.fold_accuracies == pytest.approx(accuracies, abs=1e-12)
    assert cv.mean_kappa == pytest.approx(np.mean(kappas)) and cv.std_kappa == pytest.approx(np.std(kappas))
    assert cv.mean_accuracy == pytest.approx(np.mean(accuracies))
    assert (cv.n_folds, cv.seed) == (4, 3)


def test_separable_pairs_cross_validate_to_kappa_one() -> None:
    y = np.array([0] * 5 + [1] * 5)
    p = np.array([0.80, 0.81, 0.82, 0.83, 0.84, 0.90, 0.91, 0.92, 0.93, 0.94])
    cv = cross_validate(sample(y, p), Method.THRESHOLD, 5, 0)
    assert cv.fold_kappas == [1.0] * 5 and cv.mean_kappa == 1.0 and cv.std_kappa == 0.0


def test_too_few_pairs_for_the_folds() -> None:
    y = np.array([0, 0, 1, 1, 1, 1])
    with pytest.raises(CannotFitError, match="2 training pairs in the smaller class, fewer than the 5 folds"):
        cross_validate(sample(y, np.linspace(0.1, 0.9, 6)), Method.THRESHOLD, 5, 0)


def test_agreement_is_scikit_learns_metrics() -> None:
    y = np.array([0, 0, 1, 1, 1, 0])
    met = np.array([True, False, True, True, False, False])
    p = np.array([0.55, 0.2, 0.9, 0.7, 0.45, 0.3])
    a = agreement(y, met, p)
    assert (a.n, a.n_met) == (6, 3)
    assert a.accuracy == accuracy_score(y, met.astype(int)) == pytest.approx(4 / 6)
    assert a.kappa == pytest.approx(cohen_kappa_score(y, met.astype(int))) and a.kappa == pytest.approx(1 / 3)
    assert a.auroc == roc_auc_score(y, p)
    assert a.ece == expected_calibration_error(y.tolist(), p.tolist())


def test_agreement_with_one_class_has_no_auroc_and_constant_raters_no_kappa() -> None:
    a = agreement(np.array([1, 1]), np.array([True, True]), np.array([0.9, 0.8]))
    assert (a.accuracy, a.kappa, a.auroc) == (1.0, None, None)
