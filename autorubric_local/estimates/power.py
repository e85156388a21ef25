"""How many human labels a target interval width needs, classical and with a judge (PPI++).

An estimator with variance ``V/n + U`` (``V`` the per-label variance, ``U`` the contribution of
the unlabelled predictions, already divided by their number) has a normal interval of width
``2 z_{1-alpha/2} sqrt(V/n + U)``; solving for ``n`` gives ``n = V / ((width / 2z)² - U)``.
For PPI++ (Angelopoulos, Duchi, Zrnic, arXiv 2311.01453) ``V = Var(Y - lam f)`` and
``U = lam² Var(f) / N``; for the classical estimate ``V = Var(Y)``, ``U = 0``.

When ``U`` alone already reaches the width (``(width / 2z)² <= U``), no number of labels is
enough: :func:`labels_for_width` raises :class:`InputError` saying so, rather than returning an
infinite count from a function typed ``int``.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import ArrayLike
from scipy.stats import norm

from autorubric_local.core.errors import InputError
from autorubric_local.estimates.checks import as_vector, check_alpha, check_same_length
from autorubric_local.estimates.methods import ppi_tuned_lam

__all__ = ["judge_only_labels_for_width", "labels_for_width", "ppi_labels_for_width"]

_MIN_LABELS = 2  # the estimators need two labels for a variance


def labels_for_width(
    width: float, alpha: float, var_labelled: float, var_unlabelled_term: float = 0.0,
) -> int:
    """Smallest number of labels ``n`` whose normal interval is at most ``width`` wide.

    Solves ``2 z_{1-alpha/2} sqrt(var_labelled / n + var_unlabelled_term) <= width``:
    ``n = ceil(var_labelled / ((width / 2z)² - var_unlabelled_term))``, at least 2.

    Parameters
    ----------
    width : float > 0
        Target full width of the interval (high - low), in the units of the mean.
    alpha : float in (0, 1)
        Error level; the interval targets coverage 1 - alpha.
    var_labelled : float >= 0
        Per-label variance V (``Var(Y)`` classical, ``Var(Y - lam f)`` for PPI++).
    var_unlabelled_term : float >= 0, default 0
        Variance contribution U of the unlabelled predictions, already divided by their number
        (``lam² Var(f) / N`` for PPI++).

    Returns
    -------
    int
        At least 2 (the estimators need two labels).

    Raises
    ------
    InputError
        ``width`` not positive and finite, ``alpha`` outside (0, 1), a variance negative or not
        finite, or ``var_unlabelled_term`` alone giving an interval at least ``width`` wide (no
        number of labels suffices).

    References
    ----------
    Angelopoulos, Duchi, Zrnic, "PPI++: Efficient prediction-powered inference", arXiv
    2311.01453 (the variance ``Var(Y - lam f)/n + lam² Var(f)/N``).
    """
    for name, value, positive in (
        ("width", width, True), ("var_labelled", var_labelled, False),
        ("var_unlabelled_term", var_unlabelled_term, False),
    ):
        if isinstance(value, bool) or not isinstance(value, (int, float, np.floating)) or not (
            math.isfinite(value) and (value > 0 if positive else value >= 0)
        ):
            rule = "> 0" if positive else ">= 0"
            raise InputError(f"{name} must be finite and {rule}, got {value!r}")
    alpha = check_alpha(alpha)
    z = float(norm.ppf(1.0 - alpha / 2.0))
    budget = (width / (2.0 * z)) ** 2 - var_unlabelled_term
    if budget <= 0.0:
        floor = 2.0 * z * math.sqrt(var_unlabelled_term)
        raise InputError(
            f"width {width} is unreachable: the unlabelled predictions' variance alone gives an "
            f"interval {floor:.4g} wide at alpha={alpha}, whatever the number of labels"
        )
    # a hair of tolerance so that an exact solution (e.g. 100.00000000001) is not rounded up
    return max(_MIN_LABELS, math.ceil(var_labelled / budget * (1.0 - 1e-12)))


def ppi_labels_for_width(
    width: float, alpha: float, y_pilot: ArrayLike, f_pilot: ArrayLike, f_all: ArrayLike,
) -> dict[str, int | float]:
    """Labels needed for ``width`` by the classical and the PPI++ estimate, from a labelled pilot.

    Classical: ``V = Var(y_pilot)``. PPI++: the fewest labels over ``lam`` in [0, 1] (a grid of
    0.01 plus the weight :func:`ppi_mean` would tune on the pilot) with ``V = Var(y_pilot - lam
    f_pilot)`` and ``U = lam² Var(f_all) / N``; ``lam = 0`` is the classical figure, so PPI++ never
    needs more. Variances use ``ddof=1`` (unbiased pilot
    estimates). ``N = len(f_all)`` stands for the unlabelled items; when the labels are a large
    share of the items the real unlabelled term is slightly larger.

    Parameters
    ----------
    width : float > 0
        Target full interval width.
    alpha : float in (0, 1)
    y_pilot : array-like of shape (m,)
        Human values of a pilot sample, m >= 2.
    f_pilot : array-like of shape (m,)
        The judge's predictions for the pilot items.
    f_all : array-like of shape (N,)
        The judge's predictions for every item.

    Returns
    -------
    dict
        ``{"classical": int, "ppi": int, "lam": float}``.

    Raises
    ------
    InputError
        Bad arrays or lengths, and every case of :func:`labels_for_width` (for PPI++ when
        ``lam² Var(f)/N`` alone exceeds the width).

    References
    ----------
    Angelopoulos, Duchi, Zrnic, "PPI++: Efficient prediction-powered inference", arXiv
    2311.01453; Angelopoulos et al., Science 2023, arXiv 2301.09633.
    """
    y = as_vector("y_pilot", y_pilot, min_size=2)
    fp = as_vector("f_pilot", f_pilot, min_size=2)
    fa = as_vector("f_all", f_all, min_size=2)
    check_same_length(y_pilot=y, f_pilot=fp)
    alpha = check_alpha(alpha)
    classical = labels_for_width(width, alpha, float(np.var(y, ddof=1)))
    var_f = float(np.var(fa, ddof=1)) / fa.size
    best_n, best_lam = classical, 0.0
    # lam = 0 is the classical estimate, so the PPI++ figure is never above it; the weight
    # PPI++ would tune on the pilot is among the candidates, with a grid over [0, 1] for the
    # label count actually planned (the tuned weight depends on n / N).
    for lam in sorted({ppi_tuned_lam(y, fp, fa), *np.linspace(0.0, 1.0, 101).tolist()}):
        try:
            n = labels_for_width(width, alpha, float(np.var(y - lam * fp, ddof=1)), lam * lam * var_f)
        except InputError:
            continue
        if n < best_n:
            best_n, best_lam = n, float(lam)
    return {"classical": classical, "ppi": best_n, "lam": best_lam}


def judge_only_labels_for_width(width: float, alpha: float, f_all: ArrayLike) -> dict[str, int | float]:
    """Labels needed for ``width`` before any label exists, assuming a calibrated judge.

    For a binary criterion and a calibrated judge (``P(Y=1 | f) = f``): ``Var(Y - f) = mean
    f(1-f)``, ``Var(Y) = m(1-m)`` with ``m = mean(f)``, and the PPI++ weight is 1 (``Cov(Y, f)
    = Var(f)``). Real judges are rarely calibrated, so treat the PPI figure as optimistic and
    re-plan with :func:`ppi_labels_for_width` once a pilot is labelled.

    Parameters
    ----------
    width : float > 0
        Target full interval width.
    alpha : float in (0, 1)
    f_all : array-like of shape (N,)
        The judge's P(MET) for every item, in [0, 1].

    Returns
    -------
    dict
        ``{"classical": int, "ppi": int, "lam": 1.0}``.

    Raises
    ------
    InputError
        ``f_all`` not 1-d, fewer than 2 values, non-finite or outside [0, 1]; every case of
        :func:`labels_for_width`.

    References
    ----------
    Angelopoulos, Duchi, Zrnic, "PPI++: Efficient prediction-powered inference", arXiv
    2311.01453; Angelopoulos et al., Science 2023, arXiv 2301.09633.
    """
    f = as_vector("f_all", f_all, min_size=2)
    if ((f < 0.0) | (f > 1.0)).any():
        i = int(np.flatnonzero((f < 0.0) | (f > 1.0))[0])
        raise InputError(f"f_all must be probabilities in [0, 1], got {f[i]} at index {i}")
    alpha = check_alpha(alpha)
    m = float(f.mean())
    classical = labels_for_width(width, alpha, m * (1.0 - m))
    ppi = labels_for_width(width, alpha, float(np.mean(f * (1.0 - f))), float(np.var(f, ddof=1)) / f.size)
    return {"classical": classical, "ppi": ppi, "lam": 1.0}
