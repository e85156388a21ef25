"""Per-criterion decision rules fitted on labelled P(MET): a threshold, Platt scaling, isotonic.

Each rule maps the judge's P(MET) (renormalised over MET and UNMET,
:func:`autorubric_local.metrics.extract.binary_p_met`) to a recalibrated probability and a
MET/UNMET decision:

- ``threshold``: MET iff ``p >= t``, with ``t`` chosen on the training pairs to maximise Cohen's
  kappa (Cohen, 1960) with the human labels. Candidates are the midpoints between consecutive
  distinct training probabilities (every distinct split of the training pairs, none at a data
  point); ties in kappa go to the candidate closest to 0.5 (the plain argmax rule), then to the
  lower one. The probability itself is left as it is.
- ``platt``: Platt scaling (Platt, 1999, "Probabilistic Outputs for Support Vector Machines"):
  ``p' = sigmoid(a * logit(p) + b)``, ``a`` and ``b`` fitted by
  ``sklearn.linear_model.LogisticRegression`` (L2, ``C = 1.0``, scikit-learn's defaults, which
  keep the coefficients finite on separable training data) on ``logit(p)``, ``p`` clipped to
  ``[1e-12, 1 - 1e-12]``; MET iff ``p' >= 0.5``.
- ``isotonic``: isotonic regression (Zadrozny & Elkan, 2002, "Transforming Classifier Scores
  into Accurate Multiclass Probability Estimates"), ``sklearn.isotonic.IsotonicRegression``
  (increasing, outputs in [0, 1], clipped outside the training range); MET iff ``p' >= 0.5``.

Rules are stored as plain numbers (no pickles): the threshold, Platt's ``a`` and ``b``, the
isotonic step function's knots (``X_thresholds_``, ``y_thresholds_``, applied with linear
interpolation as scikit-learn's ``predict`` does).
"""

from __future__ import annotations

from collections.abc import Sequence
from enum import Enum

import numpy as np
from pydantic import BaseModel, ConfigDict
from scipy.special import expit, logit
from sklearn.isotonic import IsotonicRegression
from sklearn.linear_model import LogisticRegression

from autorubric_local.core.errors import InputError
from autorubric_local.metrics.agreement import cohen_kappa, kappas_from_confusions

__all__ = [
    "PLATT_C",
    "PROBABILITY_CLIP",
    "CannotFitError",
    "CriterionRule",
    "Method",
    "as_method",
    "best_threshold",
    "fit_rule",
    "kappa",
    "threshold_kappas",
]

PLATT_C = 1.0
"""Inverse L2 strength of Platt scaling's logistic regression (scikit-learn's default)."""
PROBABILITY_CLIP = 1e-12
"""P(MET) is clipped to ``[PROBABILITY_CLIP, 1 - PROBABILITY_CLIP]`` before its logit."""
_TIE = 1e-12


class Method(str, Enum):
    """How a criterion's rule is fitted (module docstring)."""

    THRESHOLD = "threshold"
    PLATT = "platt"
    ISOTONIC = "isotonic"


def as_method(value: Method | str) -> Method:
    """``value`` as a :class:`Method`.

    Raises
    ------
    InputError
        Not one of the methods (the message lists them).
    """
    try:
        return Method(value)
    except ValueError:
        allowed = ", ".join(m.value for m in Method)
        raise InputError(f"method must be one of {allowed}, got {value!r}") from None


class CannotFitError(InputError):
    """The training pairs of a criterion cannot fit a rule (one class, or one P(MET) value)."""


class CriterionRule(BaseModel):
    """A fitted rule for one criterion (one of the three methods; the other fields are None).

    Attributes
    ----------
    key : str
        The criterion's alignment key (its name, else ``"criterion <i>"``).
    method : Method
    n_train, n_met : int
        Training pairs, and how many of them humans labelled MET.
    threshold : float in (0, 1), optional
        ``threshold``: MET iff P(MET) >= threshold.
    platt_coef, platt_intercept : float, optional
        ``platt``: ``p' = sigmoid(platt_coef * logit(p) + platt_intercept)``.
    isotonic_x, isotonic_y : list of float, optional
        ``isotonic``: knots of the fitted increasing function (same length >= 1).
    """

    model_config = ConfigDict(frozen=True)

    key: str
    method: Method
    n_train: int
    n_met: int
    threshold: float | None = None
    platt_coef: float | None = None
    platt_intercept: float | None = None
    isotonic_x: list[float] | None = None
    isotonic_y: list[float] | None = None

    def probability(self, p: Sequence[float] | np.ndarray) -> np.ndarray:
        """Recalibrated P(MET), shape (n,) (``threshold`` returns ``p`` unchanged)."""
        values = _checked_probabilities(p, self.key)
        if self.method is Method.PLATT:
            assert self.platt_coef is not None and self.platt_intercept is not None
            return np.asarray(expit(self.platt_coef * _logit(values) + self.platt_intercept), dtype=float)
        if self.method is Method.ISOTONIC:
            assert self.isotonic_x is not None and self.isotonic_y is not None
            return np.interp(values, self.isotonic_x, self.isotonic_y)
        return values

    def describe(self) -> str:
        """The rule in words, e.g. ``MET iff P(MET) >= 0.875``."""
        if self.method is Method.THRESHOLD:
            return f"MET iff P(MET) >= {self.threshold:.4g}"
        if self.method is Method.PLATT:
            return (f"P'(MET) = sigmoid({self.platt_coef:.4g} * logit P(MET) + {self.platt_intercept:.4g}); "
                    "MET iff P'(MET) >= 0.5")
        return f"P'(MET) isotonic in P(MET) ({len(self.isotonic_x or [])} knots); MET iff P'(MET) >= 0.5"

    def decide(self, p: Sequence[float] | np.ndarray) -> np.ndarray:
        """MET (True) or UNMET (False) for each P(MET), shape (n,)."""
        values = _checked_probabilities(p, self.key)
        if self.method is Method.THRESHOLD:
            assert self.threshold is not None
            return values >= self.threshold
        return self.probability(values) >= 0.5


def _checked_probabilities(p: Sequence[float] | np.ndarray, what: str) -> np.ndarray:
    values = np.asarray(p, dtype=float)
    if values.ndim != 1 or not np.all(np.isfinite(values) & (values >= 0) & (values <= 1)):
        raise InputError(f"criterion {what!r}: P(MET) must be a 1-d array of probabilities in [0, 1]")
    return values


def _logit(p: np.ndarray) -> np.ndarray:
    return np.asarray(logit(np.clip(p, PROBABILITY_CLIP, 1 - PROBABILITY_CLIP)), dtype=float)


def kappa(y: np.ndarray, predicted: np.ndarray) -> float | None:
    """Cohen's kappa of two 0/1 arrays (``sklearn.metrics.cohen_kappa_score``); None when it is
    undefined (both raters constant on the same class: 0/0)."""
    return cohen_kappa(y, predicted, [0, 1])


def threshold_kappas(y: np.ndarray, p: np.ndarray, thresholds: np.ndarray) -> np.ndarray:
    """Cohen's kappa of the rule ``MET iff p >= t`` for every ``t`` in ``thresholds``.

    All thresholds at once: the 2x2 counts (TN, FP; FN, TP) of every threshold by binary search
    in the sorted scores, then the package's vectorised kappa of confusion matrices
    (:func:`autorubric_local.metrics.agreement.kappas_from_confusions`, Cohen's 1960 formula),
    equal to :func:`kappa` (scikit-learn's ``cohen_kappa_score``; tested). NaN where kappa is
    undefined (one class on both sides).

    Parameters
    ----------
    y : ndarray of {0, 1}, shape (n,)
    p : ndarray of float, shape (n,)
    thresholds : ndarray of float, shape (m,)

    Returns
    -------
    ndarray of float, shape (m,)
    """
    positives = np.sort(p[y == 1])
    negatives = np.sort(p[y == 0])
    tp = positives.size - np.searchsorted(positives, thresholds, side="left")
    fp = negatives.size - np.searchsorted(negatives, thresholds, side="left")
    fn = positives.size - tp
    tn = negatives.size - fp
    counts = np.stack([np.stack([tn, fp], axis=-1), np.stack([fn, tp], axis=-1)], axis=-2)
    return kappas_from_confusions(counts)


def best_threshold(y: np.ndarray, p: np.ndarray, key: str = "") -> float:
    """The kappa-maximising threshold on ``(y, p)`` (module docstring for candidates and ties).

    Raises
    ------
    CannotFitError
        Fewer than two distinct P(MET) values, or one class only.
    """
    _check_classes(y, key)
    values = np.unique(p)
    if values.size < 2:
        raise CannotFitError(f"criterion {key!r}: every training P(MET) is {values[0]:g}; no threshold separates them")
    candidates = (values[:-1] + values[1:]) / 2.0
    kappas = threshold_kappas(y, p, candidates)
    top = np.nanmax(kappas)
    tied = candidates[kappas >= top - _TIE]
    distance = np.abs(tied - 0.5)
    return float(tied[distance <= distance.min() + _TIE].min())


def _check_classes(y: np.ndarray, key: str) -> None:
    met = int(y.sum())
    if met == 0 or met == y.size:
        only = "MET" if met else "UNMET"
        raise CannotFitError(f"criterion {key!r}: all {y.size} training items are {only}; a rule needs both classes")


def fit_rule(key: str, y: Sequence[int] | np.ndarray, p: Sequence[float] | np.ndarray, method: Method) -> CriterionRule:
    """Fit ``method`` on one criterion's training pairs.

    Parameters
    ----------
    key : str
        The criterion's key (named in errors).
    y : array-like of {0, 1}, shape (n,)
        Human labels (1 = MET).
    p : array-like of float in [0, 1], shape (n,)
        The judge's P(MET).
    method : Method

    Returns
    -------
    CriterionRule

    Raises
    ------
    CannotFitError
        One class only (every method), or one P(MET) value (``threshold``).
    InputError
        Shapes differ, labels other than 0/1, or probabilities outside [0, 1].
    """
    labels = np.asarray(y)
    values = _checked_probabilities(p, key)
    if labels.shape != values.shape or not np.all((labels == 0) | (labels == 1)):
        raise InputError(f"criterion {key!r}: labels must be 0/1 and as many as the probabilities")
    labels = labels.astype(int)
    _check_classes(labels, key)
    common = {"key": key, "method": method, "n_train": int(labels.size), "n_met": int(labels.sum())}
    if method is Method.THRESHOLD:
        return CriterionRule(**common, threshold=best_threshold(labels, values, key))
    if method is Method.PLATT:
        model = LogisticRegression(C=PLATT_C).fit(_logit(values).reshape(-1, 1), labels)
        return CriterionRule(**common, platt_coef=float(model.coef_[0, 0]), platt_intercept=float(model.intercept_[0]))
    iso = IsotonicRegression(y_min=0.0, y_max=1.0, increasing=True, out_of_bounds="clip").fit(values, labels)
    return CriterionRule(**common, isotonic_x=[float(v) for v in iso.X_thresholds_],
                         isotonic_y=[float(v) for v in iso.y_thresholds_])
