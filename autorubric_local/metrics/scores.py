"""Score-level agreement: errors and correlations of item scores (judge vs human).

Correlations call ``scipy.stats.pearsonr`` / ``spearmanr`` / ``kendalltau`` (tau-b).
"""

from __future__ import annotations

import warnings as _warnings
from typing import Literal

import numpy as np
from scipy import stats

from autorubric_local.metrics._checks import finite_or_none
from autorubric_local.metrics.types import CorrelationResult

__all__ = ["correlation", "rmse_mae"]

Method = Literal["pearson", "spearman", "kendall"]


def rmse_mae(judge: np.ndarray, human: np.ndarray) -> tuple[float | None, float | None]:
    """Root mean squared error and mean absolute error of ``judge - human``.

    Parameters
    ----------
    judge, human : ndarray of float, shape (n,)

    Returns
    -------
    (rmse, mae) : floats >= 0, lower is better; ``(None, None)`` when n == 0.
    """
    if judge.size == 0:
        return None, None
    diff = np.asarray(judge, dtype=float) - np.asarray(human, dtype=float)
    return float(np.sqrt(np.mean(diff**2))), float(np.mean(np.abs(diff)))


def correlation(
    judge: np.ndarray, human: np.ndarray, method: Method, warn: list[str] | None = None,
    what: str = "scores",
) -> CorrelationResult | None:
    """Correlation of paired samples.

    Parameters
    ----------
    judge, human : array-like of float, shape (n,)
    method : {"pearson", "spearman", "kendall"}
        scipy's ``pearsonr``, ``spearmanr`` or ``kendalltau`` (tau-b, ties corrected).
    warn : list of str, optional
        Receives the reason when the result is ``None``.
    what : str
        Names the data in that reason.

    Returns
    -------
    CorrelationResult or None
        Coefficient in [-1, 1] and two-sided p-value. ``None`` when n < 2 or either side
        is constant (the coefficient is 0/0).
    """
    x = np.asarray(judge, dtype=float)
    y = np.asarray(human, dtype=float)
    if x.size < 2:
        if warn is not None:
            warn.append(f"{what}: {method} correlation undefined (fewer than 2 pairs)")
        return None
    if np.ptp(x) == 0 or np.ptp(y) == 0:
        if warn is not None:
            warn.append(f"{what}: {method} correlation undefined (a constant side)")
        return None
    fn = {"pearson": stats.pearsonr, "spearman": stats.spearmanr, "kendall": stats.kendalltau}[method]
    with _warnings.catch_warnings():
        _warnings.simplefilter("ignore")
        res = fn(x, y)
    coefficient = finite_or_none(res[0])
    if coefficient is None:  # pragma: no cover - guarded above
        if warn is not None:
            warn.append(f"{what}: {method} correlation undefined")
        return None
    return CorrelationResult(coefficient=coefficient, p_value=finite_or_none(res[1]), n=int(x.size), method=method)
