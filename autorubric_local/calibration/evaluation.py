"""How well a rule agrees with human labels: held-out agreement and K-fold cross-validation.

Agreement of MET/UNMET decisions and P(MET) with human labels: accuracy
(``sklearn.metrics.accuracy_score``), Cohen's kappa (``cohen_kappa_score`` through
:func:`autorubric_local.metrics.agreement.cohen_kappa`; None when both sides are constant on one
class), AUROC (``roc_auc_score``; None with one human class) and the
expected calibration error of P(MET) (:func:`autorubric_local.metrics.calibration.expected_calibration_error`,
10 equal-width bins).

Cross-validation (``sklearn.model_selection.StratifiedKFold``, shuffled with the given seed)
refits the rule on K-1 folds of the *training* pairs and measures kappa and accuracy of its
decisions on the remaining fold; the mean and standard deviation over folds estimate how the
rule fitted on all training pairs does on unseen items, without touching the test split.
"""

from __future__ import annotations

import numpy as np
from pydantic import BaseModel, ConfigDict
from sklearn.metrics import accuracy_score, roc_auc_score
from sklearn.model_selection import StratifiedKFold

from autorubric_local.calibration.rules import CannotFitError, Method, fit_rule, kappa
from autorubric_local.calibration.samples import CriterionSample
from autorubric_local.metrics.calibration import expected_calibration_error

__all__ = ["Agreement", "CrossValidation", "agreement", "cross_validate"]


class Agreement(BaseModel):
    """Agreement of decisions and P(MET) with human labels on ``n`` pairs.

    ``accuracy`` and ``ece`` in [0, 1], ``kappa`` in [-1, 1], ``auroc`` in [0, 1]; ``kappa`` is
    None when undefined (both sides constant on one class), ``auroc`` when humans used one class.
    """

    model_config = ConfigDict(frozen=True)

    n: int
    n_met: int
    accuracy: float
    kappa: float | None
    auroc: float | None
    ece: float


def agreement(y: np.ndarray, met: np.ndarray, p: np.ndarray) -> Agreement:
    """Agreement of decisions ``met`` (bool or 0/1) and probabilities ``p`` with labels ``y``.

    Parameters
    ----------
    y : ndarray of {0, 1}, shape (n,), n >= 1
    met : ndarray of bool or {0, 1}, shape (n,)
    p : ndarray of float in [0, 1], shape (n,)
    """
    predicted = np.asarray(met).astype(int)
    return Agreement(
        n=int(y.size),
        n_met=int(y.sum()),
        accuracy=float(accuracy_score(y, predicted)),
        kappa=kappa(y, predicted),
        auroc=float(roc_auc_score(y, p)) if 0 < y.sum() < y.size else None,
        ece=expected_calibration_error(y.tolist(), p.tolist()),
    )


class CrossValidation(BaseModel):
    """K-fold cross-validation of a rule on the training pairs (module docstring).

    ``fold_kappas[k]`` / ``fold_accuracies[k]`` are fold ``k``'s held-out values (a kappa is
    None when undefined on that fold, or when the rule could not be fitted on the other folds);
    means and standard deviation (population, ``ddof=0``) are over the defined values.
    """

    model_config = ConfigDict(frozen=True)

    n_folds: int
    seed: int | None
    fold_kappas: list[float | None]
    fold_accuracies: list[float | None]
    mean_kappa: float | None
    std_kappa: float | None
    mean_accuracy: float | None


def cross_validate(sample: CriterionSample, method: Method, n_folds: int, seed: int | None) -> CrossValidation:
    """Cross-validate ``method`` on ``sample`` (the training pairs of one criterion).

    Raises
    ------
    CannotFitError
        A class has fewer than ``n_folds`` pairs (each fold needs both classes).
    """
    smaller = int(min(sample.y.sum(), sample.y.size - sample.y.sum()))
    if smaller < n_folds:
        raise CannotFitError(f"criterion {sample.key!r}: {smaller} training pairs in the smaller class, "
                             f"fewer than the {n_folds} folds")
    folds = StratifiedKFold(n_splits=n_folds, shuffle=True, random_state=seed)
    kappas: list[float | None] = []
    accuracies: list[float | None] = []
    for fit_at, held_at in folds.split(np.zeros(sample.y.size), sample.y):
        try:
            rule = fit_rule(sample.key, sample.y[fit_at], sample.p[fit_at], method)
        except CannotFitError:
            kappas.append(None)
            accuracies.append(None)
            continue
        met = rule.decide(sample.p[held_at]).astype(int)
        kappas.append(kappa(sample.y[held_at], met))
        accuracies.append(float(accuracy_score(sample.y[held_at], met)))
    defined = [k for k in kappas if k is not None]
    scored = [a for a in accuracies if a is not None]
    return CrossValidation(
        n_folds=n_folds,
        seed=seed,
        fold_kappas=kappas,
        fold_accuracies=accuracies,
        mean_kappa=float(np.mean(defined)) if defined else None,
        std_kappa=float(np.std(defined)) if defined else None,
        mean_accuracy=float(np.mean(scored)) if scored else None,
    )
