"""Per-criterion agreement: binary, ordinal and nominal criteria.

Point estimates call scikit-learn (``accuracy_score``, ``cohen_kappa_score``,
``precision_recall_fscore_support``, ``confusion_matrix``) and scipy (rank correlations).
The confusion-matrix functions at the top (``kappas_from_confusions`` and friends) compute the
same figures from (stacks of) weighted confusion matrices; the bootstrap and the threshold search
of :mod:`autorubric_local.calibration.rules` use them because they are vectorisable, and the tests
check them against :func:`cohen_kappa`, the package's one call of ``cohen_kappa_score``.
"""

from __future__ import annotations

import math
import warnings as _warnings

import numpy as np
from sklearn.metrics import (
    accuracy_score,
    cohen_kappa_score,
    confusion_matrix,
    precision_recall_fscore_support,
)

from autorubric_local.metrics._checks import finite_or_none
from autorubric_local.metrics.calibration import calibration
from autorubric_local.metrics.extract import CANNOT_ASSESS, MET, CriterionPairs
from autorubric_local.metrics.scores import correlation, rmse_mae
from autorubric_local.metrics.types import (
    CannotAssessMode,
    CriterionMetrics,
    NAMode,
    OptionMetrics,
)

__all__ = [
    "confusion_counts",
    "criterion_metrics",
    "cohen_kappa",
    "kappa_from_confusion",
    "kappas_from_confusions",
    "label_codes",
    "prf_from_confusion",
]


# ---- confusion-matrix formulas --------------------------------------------------------------


def confusion_counts(
    human: np.ndarray, judge: np.ndarray, n_labels: int, weights: np.ndarray | None = None
) -> np.ndarray:
    """Confusion matrix of integer codes in ``[0, n_labels)``.

    Parameters
    ----------
    human, judge : ndarray of int, shape (n_pairs,)
    n_labels : int
    weights : ndarray of float, shape (n_pairs,), optional
        Count of each pair (bootstrap multiplicities); 1 each by default.

    Returns
    -------
    ndarray of float, shape (n_labels, n_labels)
        Rows human, columns judge.
    """
    flat = np.bincount(human * n_labels + judge, weights=weights, minlength=n_labels * n_labels)
    return flat.reshape(n_labels, n_labels).astype(float)


def kappas_from_confusions(cms: np.ndarray, weights: str | None = None) -> np.ndarray:
    """Cohen's kappa (Cohen, 1960) or weighted kappa (Cohen, 1968) of a stack of confusion matrices.

    ``kappa = 1 - sum(w * O) / sum(w * E)`` with ``O`` the observed proportions, ``E`` the
    outer product of the marginals and ``w`` the disagreement weights: ``w_ij = [i != j]``
    (unweighted), ``|i - j|`` (linear) or ``(i - j)^2`` (quadratic); the same formula as
    ``sklearn.metrics.cohen_kappa_score`` (tested equal to :func:`cohen_kappa`, which calls it).
    The vectorised path: the bootstrap's weighted matrices and the threshold search of
    :func:`autorubric_local.calibration.rules.threshold_kappas` (one 2x2 matrix a threshold).

    Parameters
    ----------
    cms : ndarray of float, shape (..., k, k)
        Counts (or weights), rows one rater, columns the other.
    weights : {None, "linear", "quadratic"}

    Returns
    -------
    ndarray of float, shape (...)
        In [-1, 1]; NaN where kappa is undefined: ``sum(w * E) == 0`` (both raters constant on
        the same label) or an empty matrix, the 0/0 scikit-learn reports as NaN.
    """
    cms = np.asarray(cms, dtype=float)
    k = cms.shape[-1]
    n = cms.sum(axis=(-2, -1))
    safe_n = np.where(n > 0, n, 1.0)
    expected = cms.sum(axis=-1)[..., :, None] * cms.sum(axis=-2)[..., None, :] / safe_n[..., None, None]
    i, j = np.indices((k, k))
    if weights is None:
        w = (i != j).astype(float)
    elif weights == "linear":
        w = np.abs(i - j).astype(float)
    elif weights == "quadratic":
        w = ((i - j) ** 2).astype(float)
    else:  # pragma: no cover - internal
        raise ValueError(f"unknown weights {weights!r}")
    denominator = (w * expected).sum(axis=(-2, -1))
    defined = (n > 0) & (denominator > 1e-12 * n)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(defined, 1.0 - (w * cms).sum(axis=(-2, -1)) / np.where(defined, denominator, 1.0), np.nan)


def kappa_from_confusion(cm: np.ndarray, weights: str | None = None) -> float | None:
    """Cohen's kappa or weighted kappa of one confusion matrix of shape (k, k), in [-1, 1]:
    :func:`kappas_from_confusions` with ``None`` where it is undefined (both raters constant on
    the same label, or an empty matrix)."""
    value = float(kappas_from_confusions(cm, weights))
    return None if np.isnan(value) else value


def prf_from_confusion(
    cm: np.ndarray, positive: int
) -> tuple[float | None, float | None, float | None]:
    """One-vs-rest precision, recall, F1 of class ``positive``; ``None`` on a zero
    denominator (F1 is ``None`` when precision or recall is, or both are 0)."""
    tp = cm[positive, positive]
    predicted = cm[:, positive].sum()
    actual = cm[positive, :].sum()
    precision = tp / predicted if predicted > 0 else None
    recall = tp / actual if actual > 0 else None
    if precision is None or recall is None or precision + recall == 0:
        f1 = None if precision is None or recall is None else 0.0
    else:
        f1 = 2 * precision * recall / (precision + recall)
    return (None if precision is None else float(precision),
            None if recall is None else float(recall),
            None if f1 is None else float(f1))


def label_codes(pairs: CriterionPairs, ca: CannotAssessMode, na: NAMode) -> list[int]:
    """Codes that form the criterion's classes (rows/columns of its confusion matrix)."""
    if pairs.scale == "binary":
        return [0, 1, CANNOT_ASSESS] if ca is CannotAssessMode.AS_CATEGORY else [0, 1]
    opts = pairs.criterion.options or []
    return [i for i, o in enumerate(opts) if not o.na or
            (na is NAMode.AS_CATEGORY and i == pairs.criterion.na_option_index)]


# ---- per-criterion metrics -------------------------------------------------------------------


def cohen_kappa(human: np.ndarray, judge: np.ndarray, labels: list[int], weights: str | None = None) -> float | None:
    """Cohen's kappa (Cohen, 1960), or weighted kappa (Cohen, 1968) with ``weights="linear"`` or
    ``"quadratic"``, of two label arrays of shape (n,): ``sklearn.metrics.cohen_kappa_score`` with
    ``labels``, in [-1, 1]. The one place the package calls it: ``None`` where it is undefined (both
    raters constant on the same label, or no items: the 0/0 scikit-learn warns about and reports as
    NaN), with that warning silenced."""
    with _warnings.catch_warnings():
        _warnings.simplefilter("ignore")
        return finite_or_none(cohen_kappa_score(human, judge, labels=labels, weights=weights))


def criterion_metrics(
    pairs: CriterionPairs, ca: CannotAssessMode, na: NAMode, warn: list[str]
) -> CriterionMetrics:
    """Agreement on one criterion.

    Parameters
    ----------
    pairs : CriterionPairs
        From :func:`autorubric_local.metrics.extract.align`.
    ca, na : CannotAssessMode, NAMode
        The modes the pairs were built with (they decide the class list).
    warn : list of str
        Reasons for undefined figures are appended here.

    Returns
    -------
    CriterionMetrics
        Degenerate cases: no pairs -> every figure ``None``; a constant pair of raters ->
        kappa ``None``; precision with no MET predictions -> ``None``; fewer than two
        ordinal pairs or a constant side -> rank correlations ``None``; no vote with a known
        off-label mass -> ``mean_off_label_mass`` ``None`` (it does not need pairs: votes of
        excluded pairs count).
    """
    _, h, j = pairs.arrays()
    codes = label_codes(pairs, ca, na)
    labels = [pairs.labels[c] for c in codes]
    name = pairs.key
    base = {"name": name, "index": pairs.index, "scale": pairs.scale, "support": int(h.size),
            "n_excluded": pairs.n_excluded, "labels": labels,
            "mean_off_label_mass": math.fsum(pairs.off_label) / len(pairs.off_label) if pairs.off_label else None,
            "n_off_label": len(pairs.off_label)}
    cal = None
    if pairs.cal_p:
        cal = calibration(pairs.cal_y, pairs.cal_p, warn=None)
    if h.size == 0:
        warn.append(f"criterion {name!r}: no pairs left to compare")
        return CriterionMetrics(**base, confusion_matrix=[[0] * len(codes) for _ in codes],
                                calibration=cal)
    cm = confusion_matrix(h, j, labels=codes)
    accuracy = float(accuracy_score(h, j))
    kappa = cohen_kappa(h, j, codes, None)
    if kappa is None:
        warn.append(f"criterion {name!r}: kappa undefined (both sides use a single label)")
    extra: dict[str, object] = {}
    if pairs.scale == "binary":
        p, r, f1 = prf_from_confusion(cm.astype(float), codes.index(MET))
        extra.update(precision=p, recall=r, f1=f1)
    elif pairs.scale == "nominal":
        prec, rec, f1s, sup = precision_recall_fscore_support(
            h, j, labels=codes, zero_division=np.nan, average=None)
        extra["per_option"] = {
            pairs.labels[c]: OptionMetrics(precision=finite_or_none(prec[k]),
                                           recall=finite_or_none(rec[k]),
                                           f1=finite_or_none(f1s[k]), support=int(sup[k]),
                                           label=pairs.labels[c], index=k, support_true=int(sup[k]),
                                           support_pred=int(cm[:, k].sum()))
            for k, c in enumerate(codes)
        }
    else:
        extra.update(_ordinal(pairs, h, j, warn))
    return CriterionMetrics(**base, confusion_matrix=cm.astype(int).tolist(), accuracy=accuracy,
                            kappa=kappa, calibration=cal, **extra)


def _ordinal(pairs: CriterionPairs, h: np.ndarray, j: np.ndarray,
             warn: list[str]) -> dict[str, object]:
    position = np.asarray(pairs.position, dtype=int)
    ph, pj = position[h], position[j]
    ok = (ph >= 0) & (pj >= 0)
    out: dict[str, object] = {}
    if not ok.any():
        warn.append(f"criterion {pairs.key!r}: no scored (non-NA) ordinal pairs")
        return out
    n_positions = int(position.max()) + 1
    out["adjacent_accuracy"] = float(np.mean(np.abs(ph[ok] - pj[ok]) <= 1))
    out["weighted_kappa"] = cohen_kappa(ph[ok], pj[ok], list(range(n_positions)), "quadratic")
    if out["weighted_kappa"] is None:
        warn.append(f"criterion {pairs.key!r}: weighted kappa undefined (single label)")
    hv = np.asarray(pairs.human_value, dtype=float)
    jv = np.asarray(pairs.judge_value, dtype=float)
    fin = np.isfinite(hv) & np.isfinite(jv)
    out["rmse"], out["mae"] = rmse_mae(jv[fin], hv[fin])
    out["spearman"] = correlation(jv[fin], hv[fin], "spearman", warn, f"criterion {pairs.key!r}")
    out["kendall"] = correlation(jv[fin], hv[fin], "kendall", warn, f"criterion {pairs.key!r}")
    return out
