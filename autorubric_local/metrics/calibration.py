"""Extension: calibration of the judge's P(MET) against human MET/UNMET labels.

Brier score and log loss call scikit-learn (``brier_score_loss``, ``log_loss``), AUROC
``roc_auc_score``. Expected calibration error (ECE) has no scikit-learn function; it is
computed here from equal-width bins (Naeini, Cooper & Hauskrecht, 2015, "Obtaining Well
Calibrated Probabilities Using Bayesian Binning"; Guo et al., 2017, eq. 3):

    ECE = sum_b (n_b / n) * |fraction_positive_b - mean_confidence_b|

A prediction ``p`` falls in bin ``min(floor(p * n_bins), n_bins - 1)``, so bins are
``[k/n_bins, (k+1)/n_bins)`` and the last one also holds ``p == 1``.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from sklearn.metrics import brier_score_loss, log_loss, roc_auc_score

from autorubric_local.core.errors import InputError
from autorubric_local.metrics.types import CalibrationResult, ReliabilityBin

__all__ = ["calibration", "expected_calibration_error", "reliability_bins"]

_EPS = 1e-15


def _check(y: Sequence[int], p: Sequence[float]) -> tuple[np.ndarray, np.ndarray]:
    ya = np.asarray(y, dtype=int)
    pa = np.asarray(p, dtype=float)
    if ya.shape != pa.shape or ya.ndim != 1:
        raise InputError(f"labels and probabilities must be 1-d of equal length, got {ya.shape}, {pa.shape}")
    if ya.size == 0:
        raise InputError("no (label, probability) pairs")
    if not np.all((ya == 0) | (ya == 1)):
        raise InputError("labels must be 0 (UNMET) or 1 (MET)")
    if not np.all(np.isfinite(pa) & (pa >= 0) & (pa <= 1)):
        raise InputError("probabilities must lie in [0, 1]")
    return ya, pa


def reliability_bins(y: Sequence[int], p: Sequence[float], n_bins: int = 10) -> list[ReliabilityBin]:
    """Equal-width reliability bins over [0, 1].

    Parameters
    ----------
    y : array-like of {0, 1}, shape (n,)
        Human labels (1 = MET).
    p : array-like of float in [0, 1], shape (n,)
        Judge P(MET).
    n_bins : int, default 10

    Returns
    -------
    list of ReliabilityBin, length n_bins
    """
    ya, pa = _check(y, p)
    if n_bins < 1:
        raise InputError(f"n_bins must be >= 1, got {n_bins}")
    index = np.minimum((pa * n_bins).astype(int), n_bins - 1)
    bins = []
    for b in range(n_bins):
        mask = index == b
        count = int(mask.sum())
        bins.append(ReliabilityBin(
            lower=b / n_bins, upper=(b + 1) / n_bins, count=count,
            mean_confidence=float(pa[mask].mean()) if count else None,
            fraction_positive=float(ya[mask].mean()) if count else None,
        ))
    return bins


def expected_calibration_error(y: Sequence[int], p: Sequence[float], n_bins: int = 10) -> float:
    """ECE in [0, 1] (lower is better); see the module docstring for the formula."""
    ya, _ = _check(y, p)
    total = 0.0
    for b in reliability_bins(y, p, n_bins):
        if b.count:
            assert b.fraction_positive is not None and b.mean_confidence is not None
            total += b.count * abs(b.fraction_positive - b.mean_confidence)
    return total / ya.size


def calibration(
    y: Sequence[int], p: Sequence[float], n_bins: int = 10, warn: list[str] | None = None,
    what: str = "calibration",
) -> CalibrationResult:
    """Brier score, log loss, ECE, reliability bins and AUROC of P(MET).

    Parameters
    ----------
    y : array-like of {0, 1}, shape (n,)
    p : array-like of float in [0, 1], shape (n,)
    n_bins : int, default 10
    warn : list of str, optional
        Receives the reason when AUROC is undefined (one class only).

    Returns
    -------
    CalibrationResult

    Raises
    ------
    InputError
        Empty input, labels other than 0/1, or probabilities outside [0, 1].
    """
    ya, pa = _check(y, p)
    auroc: float | None = None
    if ya.min() != ya.max():
        auroc = float(roc_auc_score(ya, pa))
    elif warn is not None:
        warn.append(f"{what}: AUROC undefined (human labels have one class only)")
    return CalibrationResult(
        n=int(ya.size),
        base_rate=float(ya.mean()),
        mean_confidence=float(pa.mean()),
        brier_score=float(brier_score_loss(ya, pa, pos_label=1)),
        log_loss=float(log_loss(ya, np.clip(pa, _EPS, 1 - _EPS), labels=[0, 1])),
        ece=expected_calibration_error(ya, pa, n_bins),
        auroc=auroc,
        bins=reliability_bins(ya, pa, n_bins),
    )
