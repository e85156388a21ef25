"""Estimators of a mean (a pass rate, a mean score) from human labels and a judge's predictions.

Notation of the PPI papers: ``N`` items, a labelled sample of ``n`` with human values
``Y_i``, and the judge's prediction ``f_i`` (for a binary criterion its P(MET), not its argmax
verdict). Every estimator returns an :class:`Interval`; they are pure functions of arrays and
import nothing from the rest of the package but its ``InputError``.

Methods and their sources:

- :func:`classical_mean`: the human labels alone (CLT interval; Wilson score interval for 0/1
  data, Wilson, JASA 1927).
- :func:`judge_mean`: the judge alone; biased whenever the judge is, so it has no interval.
- :func:`ppi_mean`: prediction-powered inference, PPI (Angelopoulos, Bates, Fannjiang, Jordan,
  Zrnic, "Prediction-powered inference", Science 2023, arXiv 2301.09633) with PPI++ power tuning
  (Angelopoulos, Duchi, Zrnic, "PPI++: Efficient prediction-powered inference", arXiv 2311.01453).
  The estimate and interval come from ``ppi_py`` (the PPI authors' package, PyPI
  ``ppi-python``); the tuned weight is computed here, equal to ``ppi_py``'s (tests, 1e-9).
- :func:`active_mean`: active statistical inference (Zrnic & Candès, "Active Statistical
  Inference", ICML 2024, arXiv 2403.03208); with a tuned lambda its standard error is the
  delete-one jackknife (Efron & Stein, Ann Stat 1981), which holds coverage with tens of labels.
- :func:`rogan_gladen`: the misclassification correction of Rogan & Gladen ("Estimating
  prevalence from the results of a screening test", Am J Epidemiol 1978) with the calibration
  uncertainty of Lee, Zeng, Jeong, Sohn, Lee ("How to Correctly Report LLM-as-a-Judge
  Evaluations", arXiv 2511.21140).
- :func:`unpaired_difference`: the difference of two independent estimates.

Inputs are checked by :mod:`.checks` (also used by ``sampling`` and ``power``); bad input
raises :class:`~autorubric_local.core.errors.InputError`.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, replace

import numpy as np
from numpy.typing import ArrayLike
from scipy.stats import norm
from scipy.stats import t as student_t

from autorubric_local.core.errors import InputError
from autorubric_local.estimates.checks import (
    as_vector,
    check_alpha,
    check_binary,
    check_lam,
    check_same_length,
)

__all__ = [
    "Interval",
    "MIN_LABELS_FOR_COVERAGE",
    "active_mean",
    "bounded_mean_interval",
    "classical_mean",
    "kish_effective_size",
    "judge_mean",
    "ppi_mean",
    "rogan_gladen",
    "unpaired_difference",
    "within_range",
]

MIN_LABELS_FOR_COVERAGE = 50
"""Labels below which the normal-theory intervals (PPI++, active inference, the CLT) are not
shown to keep their coverage: in ``scripts/sim_estimates.py`` PPI++ covers 0.83-0.86 of nominal
0.90 at n = 20 and 0.87-0.89 from n = 50 (``tests/test_estimate_coverage.py``). Estimates from
fewer labels carry a note saying so."""


@functools.lru_cache(maxsize=64)
def _z(alpha: float) -> float:
    """Two-sided normal quantile z_{1 - alpha/2} (cached: ``norm.ppf`` costs ~0.2 ms a call)."""
    return float(norm.ppf(1.0 - alpha / 2.0))


def _n_effective(var_labelled: float, std_error: float) -> float | None:
    """Labels a classical estimate needs for the same variance; None when ``std_error`` is 0."""
    return float(var_labelled / std_error**2) if std_error > 0 else None


# --------------------------------------------------------------------------- result


@dataclass(frozen=True)
class Interval:
    """A point estimate with its two-sided interval.

    Attributes
    ----------
    estimate : float
        Point estimate; NaN when undefined (see ``note``).
    ci_low, ci_high : float or None
        Interval bounds at the requested ``alpha``; None where the method has no valid interval.
    std_error : float or None
        Estimated standard error of ``estimate``; None where there is none.
    lam : float or None
        PPI++ power-tuning weight (in [0, 1] when tuned); only for :func:`ppi_mean` and
        :func:`active_mean`.
    n_effective : float or None
        Human labels a classical estimate would need for the same variance:
        ``var(labelled Y) / std_error**2`` (ppi, active, rogan_gladen), ``n`` for classical,
        None for judge or when ``std_error`` is 0.
    note : str or None
        Why an estimate or interval is undefined or was adjusted.
    """

    estimate: float
    ci_low: float | None
    ci_high: float | None
    std_error: float | None
    lam: float | None = None
    n_effective: float | None = None
    note: str | None = None


def with_notes(interval: Interval, *notes: str) -> Interval:
    """``interval`` with ``notes`` appended to its note (joined by ``"; "``)."""
    joined = "; ".join([*([interval.note] if interval.note else []), *notes])
    return replace(interval, note=joined or None)


def _undefined(note: str) -> Interval:
    return Interval(estimate=math.nan, ci_low=None, ci_high=None, std_error=None, note=note)


# --------------------------------------------------------------------------- estimators


def _is_binary(y: np.ndarray) -> bool:
    return bool(np.all((y == 0.0) | (y == 1.0)))


def classical_mean(y: ArrayLike, alpha: float, binary: bool | None = None) -> Interval:
    """Mean of the human labels alone, with a CLT interval (Wilson for 0/1 data).

    ``binary``: None tells 0/1 data by its values; False forces the CLT interval (values that
    only happen to be 0 or 1, e.g. paired differences of two runs' labels).

    For non-binary ``y``: Student's t interval ``mean(y) ± t_{n-1, 1-alpha/2} * s / sqrt(n)``
    with the sample standard deviation ``s`` (``ddof=1``), as ``scipy.stats.ttest_1samp``'s
    ``confidence_interval``; for large n it is the CLT interval of
    ``ppi_py.baselines.classical_mean_ci``.
    For 0/1 ``y`` the interval is Wilson's score interval (Wilson, JASA 1927)
    ``(p + z²/2n ± z sqrt(p(1-p)/n + z²/4n²)) / (1 + z²/n)``: the CLT (Wald) interval's exact
    coverage of a nominal 90% at n = 50 is 0.864 for a true rate of 0.1 or 0.9 and 0.866 at 0.2,
    Wilson's 0.908 and 0.891 (exact binomial sums, checked in ``tests/test_estimate_coverage.py``),
    and Wilson gives a non-degenerate interval when every label is 0 or every label is 1.

    Parameters
    ----------
    y : array-like of shape (n,)
        Human values of the labelled items, finite; n >= 2.
    alpha : float in (0, 1)
        Error level; the interval targets coverage 1 - alpha.

    Returns
    -------
    Interval
        ``estimate`` the sample mean; ``std_error`` the plug-in ``sd(y) / sqrt(n)`` (0 when every
        label is equal, even where the Wilson interval is not degenerate); ``n_effective = n``.

    Raises
    ------
    InputError
        ``y`` not 1-d, non-finite or with fewer than 2 values; ``alpha`` outside (0, 1).

    References
    ----------
    Angelopoulos et al., "Prediction-powered inference", Science 2023, arXiv 2301.09633 (the
    classical baseline); E. B. Wilson, "Probable inference, the law of succession, and statistical
    inference", JASA 1927.
    """
    values = as_vector("y", y, min_size=2)
    alpha = check_alpha(alpha)
    n = values.size
    mean = float(values.mean())
    se = float(values.std() / math.sqrt(n))
    if (binary if binary is not None else _is_binary(values)):
        low, high = bounded_mean_interval(mean, n, 0.0, 1.0, alpha)
        note = "0/1 labels: Wilson score interval"
    else:
        # Student's t with the sample standard deviation: the CLT interval's coverage falls to
        # 0.69 at n = 3 (nominal 0.90); t's is exact for normal data and tends to the CLT's.
        se = float(values.std(ddof=1) / math.sqrt(n))
        half = float(student_t.ppf(1 - alpha / 2, n - 1)) * se
        low, high = mean - half, mean + half
        note = None
    return Interval(mean, low, high, se, n_effective=float(n), note=note)


def judge_mean(f_all: ArrayLike) -> Interval:
    """Mean of the judge's predictions over all N items, with no interval.

    ``theta = mean_i f_i``. Its error is the judge's bias ``E[f] - E[Y]``, which no amount of
    unlabelled data reduces and which cannot be estimated without human labels, so no interval
    is given (``ci_low``, ``ci_high``, ``std_error`` and ``n_effective`` are None).

    Parameters
    ----------
    f_all : array-like of shape (N,)
        The judge's prediction for every item (P(MET) or a predicted score), finite; N >= 1.

    Returns
    -------
    Interval

    Raises
    ------
    InputError
        ``f_all`` not 1-d, empty or non-finite.

    References
    ----------
    Angelopoulos et al., "Prediction-powered inference", Science 2023, arXiv 2301.09633 (the
    "imputation" baseline, invalid whenever the predictions are biased).
    """
    f = as_vector("f_all", f_all)
    return Interval(
        float(f.mean()), None, None, None,
        note="judge only: biased whenever the judge is, and no valid interval without human labels",
    )


def ppi_tuned_lam(y: np.ndarray, f_labelled: np.ndarray, f_unlabelled: np.ndarray) -> float:
    """PPI++'s variance-minimising lambda for a mean, clipped to [0, 1], as ``ppi_py`` computes it.

    ``lam = Cov_n(Y, f) / ((1 + n/N) Var(f))``, the covariance over the labelled items
    (``ddof=0``) and the variance over labelled and unlabelled predictions together (``ddof=1``);
    0 when the predictions are all equal (then every lambda gives the same estimate).
    Angelopoulos, Duchi, Zrnic, arXiv 2311.01453, Example 6.1.
    """
    n, big_n = y.size, f_unlabelled.size
    pooled = np.concatenate([f_labelled, f_unlabelled])
    if np.ptp(pooled) == 0.0:
        return 0.0
    cov = float(np.mean((y - y.mean()) * (f_labelled - f_labelled.mean())))
    var_f = float(np.var(pooled, ddof=1))
    return float(np.clip(cov / ((1.0 + n / big_n) * var_f), 0.0, 1.0))


def ppi_mean(
    y: ArrayLike,
    f_labelled: ArrayLike,
    f_unlabelled: ArrayLike,
    alpha: float,
    lam: float | None = None,
) -> Interval:
    """Prediction-powered (PPI++) estimate of a mean, with a normal interval.

    ``theta = lam * mean_N(f_unlabelled) + mean_n(Y - lam * f_labelled)`` with variance
    ``lam² Var(f_unlabelled) / N + Var(Y - lam f_labelled) / n`` (population variances, as
    ``ppi_py``); interval ``theta ± z_{1-alpha/2} * std_error``. ``lam = 1`` is plain PPI,
    ``lam = 0`` the classical CLT estimate; ``lam = None`` tunes it to minimise the variance,
    ``Cov(Y, f) / ((1 + n/N) Var(f))`` clipped to [0, 1], so the estimate is asymptotically never
    worse than classical. The estimate and interval are ``ppi_py.ppi_mean_pointestimate`` and
    ``ppi_py.ppi_mean_ci`` (the PPI authors' package) at that weight; the tuned weight equals
    theirs (default ``lam_optim_mode="overall"``; checked in the tests to 1e-9). The labelled items must be a uniformly random
    sample, independent of the unlabelled ones.

    Parameters
    ----------
    y : array-like of shape (n,)
        Human values of the labelled items, finite; n >= 2.
    f_labelled : array-like of shape (n,)
        The judge's predictions for the same items, in the same order.
    f_unlabelled : array-like of shape (N,)
        The judge's predictions for the items without labels; N >= 1.
    alpha : float in (0, 1)
        Error level; the interval targets coverage 1 - alpha.
    lam : float or None, default None
        Power-tuning weight; None tunes it (0 when every prediction is equal).

    Returns
    -------
    Interval
        With ``lam`` the weight used and ``n_effective = Var(Y) / std_error²``.

    Raises
    ------
    InputError
        Arrays not 1-d or non-finite, ``y`` and ``f_labelled`` of different lengths, fewer than 2
        labels, no unlabelled prediction, ``alpha`` outside (0, 1), ``lam`` not finite.

    References
    ----------
    Angelopoulos, Bates, Fannjiang, Jordan, Zrnic, "Prediction-powered inference", Science 2023,
    arXiv 2301.09633; Angelopoulos, Duchi, Zrnic, "PPI++: Efficient prediction-powered
    inference", arXiv 2311.01453.
    """
    y_arr = as_vector("y", y, min_size=2)
    fl = as_vector("f_labelled", f_labelled, min_size=2)
    fu = as_vector("f_unlabelled", f_unlabelled)
    check_same_length(y=y_arr, f_labelled=fl)
    alpha = check_alpha(alpha)
    lam_used = check_lam(lam)
    note = None
    if lam_used is None:
        lam_used = ppi_tuned_lam(y_arr, fl, fu)
        if np.ptp(np.concatenate([fl, fu])) == 0.0:
            note = "judge predictions are all equal: lam set to 0 (classical)"
    import ppi_py  # the PPI authors' package computes the estimate and its interval

    estimate = float(np.ravel(ppi_py.ppi_mean_pointestimate(y_arr, fl, fu, lam=lam_used))[0])
    low, high = (float(np.ravel(v)[0]) for v in ppi_py.ppi_mean_ci(y_arr, fl, fu, alpha=alpha, lam=lam_used))
    se = (high - low) / (2 * _z(alpha))
    return Interval(estimate, low, high, se, lam=lam_used, n_effective=_n_effective(float(np.var(y_arr)), se),
                    note=note)


def _active_tuned_lam(a: np.ndarray, b: np.ndarray) -> float:
    """``-Cov(A, B) / Var(B)`` clipped to [0, 1] (``ddof=0``); 0 when ``B`` is constant."""
    if np.ptp(b) == 0.0:
        return 0.0
    cov = float(np.mean((a - a.mean()) * (b - b.mean())))
    return float(np.clip(-cov / float(np.var(b)), 0.0, 1.0))


def _active_jackknife_se(a: np.ndarray, b: np.ndarray) -> float:
    """Delete-one jackknife standard error of ``mean(A) + lam(A, B) mean(B)`` with lam re-tuned.

    Leaving item ``i`` out (``m = N - 1`` items left, ``a_c``/``b_c`` centred on the full means):
    ``mean_A = mean(A) - a_c_i / m``, ``Cov = (sum a_c b_c - a_c_i b_c_i) / m - a_c_i b_c_i / m²``,
    ``Var_B = (sum b_c² - b_c_i²) / m - b_c_i² / m²``; then
    ``se² = (m / N) sum_i (theta_(-i) - mean theta_(-))²`` (Efron & Stein 1981). O(N).
    """
    big_n = a.size
    m = big_n - 1
    a_c, b_c = a - a.mean(), b - b.mean()
    ab, bb = a_c * b_c, b_c * b_c
    cov = (ab.sum() - ab) / m - ab / m**2
    var = (bb.sum() - bb) / m - bb / m**2
    usable = var > 1e-12 * max(float(bb.mean()), np.finfo(float).tiny)
    lam = np.clip(np.where(usable, -cov / np.where(usable, var, 1.0), 0.0), 0.0, 1.0)
    theta = (a.mean() - a_c / m) + lam * (b.mean() - b_c / m)
    return float(math.sqrt(m / big_n * float(np.sum((theta - theta.mean()) ** 2))))


def active_mean(
    f: ArrayLike,
    y: ArrayLike,
    drawn: ArrayLike,
    pi: ArrayLike,
    alpha: float,
    lam: float | None = None,
) -> Interval:
    """Active-inference estimate of a mean: items labelled with probabilities pi_i chosen in advance.

    Each item ``i`` was drawn for labelling with ``xi_i ~ Bernoulli(pi_i)`` before any label was
    seen. The estimator (Zrnic & Candès 2024, the mean with power tuning) is
    ``theta = mean_i( lam f_i + (Y_i - lam f_i) xi_i / pi_i )``, unbiased for every fixed ``lam``;
    the interval is normal, ``theta ± z_{1-alpha/2} std_error``. Writing a term as
    ``A_i + lam B_i`` with ``A_i = Y_i xi_i / pi_i`` and ``B_i = f_i (1 - xi_i / pi_i)``, the tuned
    ``lam = -Cov(A, B) / Var(B)`` minimises the terms' variance; it is clipped to [0, 1] (0 when
    ``B`` is constant, e.g. every pi_i = 1).

    Standard error: for a given ``lam``, the standard deviation (``ddof=0``) of the N terms over
    ``sqrt(N)``, as in the paper. For the tuned ``lam`` (``lam=None``) it is the delete-one
    jackknife over items of the whole procedure, ``lam`` re-tuned on each leave-one-out sample
    (closed form, O(N); Efron & Stein, Ann Stat 1981): with tens of labels the plug-in ignores
    that ``lam`` was fitted to the same few labelled terms: at 50 expected labels its nominal 90%
    intervals covered 0.861-0.880 for the three miscalibrated judges of
    ``scripts/sim_estimates.py`` (0.901 for the calibrated one), the jackknife's 0.896-0.920. The
    two agree to first order when labels are many.

    Parameters
    ----------
    f : array-like of shape (N,)
        The judge's prediction for every item, finite.
    y : array-like of shape (N,)
        Human values: finite where ``drawn``; ignored (NaN allowed) elsewhere.
    drawn : array-like of bool, shape (N,)
        The draws xi_i (bool or 0/1); at least 2 items drawn.
    pi : array-like of shape (N,)
        Inclusion probabilities in (0, 1] used for the draws (see
        :func:`autorubric_local.estimates.sampling.inclusion_probabilities`).
    alpha : float in (0, 1)
        Error level; the interval targets coverage 1 - alpha.
    lam : float or None, default None
        Weight of the judge; 1 is the plain estimator ``mean(f + (Y - f) xi / pi)``, 0 the
        Horvitz-Thompson mean of the labels; None tunes it.

    Returns
    -------
    Interval
        With ``lam`` the weight used and ``n_effective = Var(Y over drawn items) / std_error²``.

    Raises
    ------
    InputError
        Lengths differ; ``f`` or ``pi`` non-finite; ``drawn`` not 0/1; ``pi`` outside (0, 1];
        an item with ``pi == 1`` not drawn; ``y`` missing or infinite on a drawn item; fewer than 2
        drawn items; ``alpha`` outside (0, 1); ``lam`` not finite.

    References
    ----------
    T. Zrnic and E. J. Candès, "Active Statistical Inference", ICML 2024, arXiv 2403.03208;
    power tuning from Angelopoulos, Duchi, Zrnic, arXiv 2311.01453; B. Efron and C. Stein, "The
    jackknife estimate of variance", Ann Stat 9(3), 1981.
    """
    f_arr = as_vector("f", f)
    y_arr = as_vector("y", y, allow_nan=True)
    pi_arr = as_vector("pi", pi)
    xi = check_binary("drawn", as_vector("drawn", np.asarray(drawn, dtype=float))).astype(bool)
    big_n = check_same_length(f=f_arr, y=y_arr, drawn=xi, pi=pi_arr)
    alpha = check_alpha(alpha)
    lam_used = check_lam(lam)
    out = (pi_arr <= 0.0) | (pi_arr > 1.0)
    if out.any():
        i = int(np.flatnonzero(out)[0])
        raise InputError(f"pi must be in (0, 1], got {pi_arr[i]} at index {i}")
    certain_undrawn = (pi_arr == 1.0) & ~xi
    if certain_undrawn.any():
        i = int(np.flatnonzero(certain_undrawn)[0])
        raise InputError(f"drawn is False at index {i} where pi is 1 (an impossible draw)")
    missing = xi & np.isnan(y_arr)
    if missing.any():
        i = int(np.flatnonzero(missing)[0])
        raise InputError(f"y must be finite where drawn, got nan at index {i}")
    if xi.sum() < 2:
        raise InputError(f"drawn needs at least 2 drawn (labelled) items, got {int(xi.sum())}")

    weight = xi / pi_arr
    a = np.where(xi, y_arr, 0.0) * weight
    b = f_arr * (1.0 - weight)
    if lam_used is None:
        lam_used = _active_tuned_lam(a, b)
        se = _active_jackknife_se(a, b)
        terms = a + lam_used * b
    else:
        terms = a + lam_used * b
        se = float(terms.std() / math.sqrt(big_n))
    estimate = float(terms.mean())
    z = _z(alpha)
    return Interval(
        estimate, estimate - z * se, estimate + z * se, se,
        lam=lam_used, n_effective=_n_effective(float(np.var(y_arr[xi])), se),
    )


def rogan_gladen(
    y: ArrayLike,
    verdict_labelled: ArrayLike,
    verdict_unlabelled: ArrayLike,
    alpha: float,
) -> Interval:
    """Rogan-Gladen corrected rate of a binary criterion, with a delta-method interval.

    On the labelled items the judge's 0/1 verdicts give sensitivity ``se = P(verdict=1 | Y=1)``
    and specificity ``sp = P(verdict=0 | Y=0)``; with ``q`` the judge's MET rate on the ``N_u``
    unlabelled items, ``p = (q + sp - 1) / J``, ``J = se + sp - 1``, clipped to [0, 1]
    (Rogan & Gladen 1978). Its variance carries the uncertainty of q, se and sp (delta method,
    Lee et al. 2025): ``[q(1-q)/N_u + p² Var(se) + (1-p)² Var(sp)] / J²``, with ``Var(se)`` and
    ``Var(sp)`` from Agresti-Coull adjusted proportions over the ``n1`` labelled positives and
    ``n0`` negatives (never 0, even where se or sp is estimated as exactly 0 or 1). The normal
    interval ``p ± z std_error`` is clipped to [0, 1]. When ``J``'s own lower bound
    ``J - z sqrt(Var(se) + Var(sp))`` is <= 0 the correction divides by a quantity that may be 0,
    and no estimate is given.

    Parameters
    ----------
    y : array-like of 0/1, shape (n,)
        Human labels of the labelled items; n >= 2.
    verdict_labelled : array-like of 0/1, shape (n,)
        The judge's verdicts (1 = MET) on the same items.
    verdict_unlabelled : array-like of 0/1, shape (N_u,)
        The judge's verdicts on the unlabelled items; N_u >= 1.
    alpha : float in (0, 1)
        Error level; the interval targets coverage 1 - alpha.

    Returns
    -------
    Interval
        ``estimate`` NaN and no interval, with a ``note``, when ``J <= 0`` (the judge is no better
        than chance) or its lower bound is, or the labels hold no positive (``n1 == 0``) or no negative (``n0 == 0``);
        a ``note`` also says when ``p`` was clipped. ``n_effective = Var(Y) / std_error²``.

    Raises
    ------
    InputError
        Inputs not 1-d, not 0/1, of different lengths, fewer than 2 labels, empty unlabelled
        verdicts, ``alpha`` outside (0, 1).

    References
    ----------
    W. J. Rogan and B. Gladen, "Estimating prevalence from the results of a screening test",
    Am J Epidemiol 107(1), 1978; C. Lee, T. Zeng, J. Jeong, J. Sohn, K. Lee, "How to Correctly
    Report LLM-as-a-Judge Evaluations", arXiv 2511.21140.
    """
    y_arr = check_binary("y", as_vector("y", y, min_size=2))
    vl = check_binary("verdict_labelled", as_vector("verdict_labelled", verdict_labelled, min_size=2))
    vu = check_binary("verdict_unlabelled", as_vector("verdict_unlabelled", verdict_unlabelled))
    check_same_length(y=y_arr, verdict_labelled=vl)
    alpha = check_alpha(alpha)
    positive = y_arr == 1.0
    n1, n0 = int(positive.sum()), int((~positive).sum())
    if n1 == 0 or n0 == 0:
        which = "positive (Y=1)" if n1 == 0 else "negative (Y=0)"
        return _undefined(f"no {which} labelled item: sensitivity or specificity is undefined")
    sens = float(vl[positive].mean())
    spec = float(1.0 - vl[~positive].mean())
    j = sens + spec - 1.0
    if j <= 0.0:
        return _undefined(
            f"judge no better than chance on the labels (sensitivity {sens:.3f} + specificity "
            f"{spec:.3f} - 1 = {j:.3f} <= 0): the correction is undefined"
        )
    z = _z(alpha)
    # The variances of se and sp use Agresti-Coull's adjusted proportions, never 0 where a small
    # calibration set estimates se or sp as exactly 0 or 1 (which made the intervals confidently
    # wrong on a real judge: scripts/results/eval_estimates_*).
    var_sens, var_spec = _adjusted_variance(sens * n1, n1, z), _adjusted_variance(spec * n0, n0, z)
    j_low = j - z * math.sqrt(var_sens + var_spec)
    if j_low <= 0.0:
        return _undefined(
            f"judge barely better than chance on the labels (sensitivity {sens:.3f} + specificity {spec:.3f} "
            f"- 1 = {j:.3f}, whose lower {1 - alpha:.0%} bound {j_low:.3f} <= 0): the correction is unstable"
        )
    q = float(vu.mean())
    raw = (q + spec - 1.0) / j
    p = min(1.0, max(0.0, raw))
    var = (q * (1.0 - q) / vu.size + p * p * var_sens + (1.0 - p) ** 2 * var_spec) / (j * j)
    se = math.sqrt(var)
    note = f"corrected rate {raw:.4f} clipped to [0, 1]" if raw != p else None
    return Interval(
        p, max(0.0, p - z * se), min(1.0, p + z * se), se,
        n_effective=_n_effective(float(np.var(y_arr)), se), note=note,
    )


def _adjusted_variance(successes: float, n: int, z: float) -> float:
    """Variance of a proportion from Agresti-Coull's adjusted estimate ``(x + z²/2) / (n + z²)``
    (Agresti & Coull, "Approximate is better than 'exact'", Am Stat 1998)."""
    adjusted = (successes + z * z / 2) / (n + z * z)
    return adjusted * (1.0 - adjusted) / (n + z * z)


def kish_effective_size(weights: ArrayLike) -> float:
    """Kish's effective sample size ``(sum w)² / sum w²`` of weighted observations.

    Equal weights give their count; unequal ones less. Used for the labels of an active
    selection (weights ``1 / pi_i`` of the drawn items) where a count of labels is needed.

    Parameters
    ----------
    weights : array-like of shape (n,)
        Positive weights, finite; n >= 1.

    Returns
    -------
    float in (0, n]

    References
    ----------
    L. Kish, *Survey Sampling*, Wiley 1965, section 11.7.
    """
    w = as_vector("weights", weights)
    return float(w.sum() ** 2 / np.sum(w * w))


def bounded_mean_interval(estimate: float, n: float, low: float, high: float, alpha: float) -> tuple[float, float]:
    """Score interval for the mean of values in ``[low, high]``, valid where the sample variance is 0.

    Rescaled to ``p = (estimate - low) / (high - low)`` (clipped to [0, 1]), it is Wilson's
    score interval ``{mu : |p - mu| <= z sqrt(mu (1 - mu) / n)}``,
    ``(p + z²/2n ± z sqrt(p(1-p)/n + z²/4n²)) / (1 + z²/n)``, mapped back. The variance of a
    value in [0, 1] with mean ``mu`` is at most ``mu (1 - mu)`` (Bhatia & Davis 2000), attained by
    0/1 values, so the interval is Wilson's for 0/1 labels and conservative for other bounded
    values. Unlike a normal interval from the sample variance it is never of zero width: with
    every one of ``n`` labels at 0 it is ``[0, z² / (n + z²)]`` (0.474 for n = 3 at 90%).

    Parameters
    ----------
    estimate : float
        The point estimate (a mean of values in ``[low, high]``).
    n : float > 0
        The number of labels (an effective number under unequal weights).
    low, high : float, low < high
        The range of the values.
    alpha : float in (0, 1)
        Error level; the interval targets coverage 1 - alpha.

    Returns
    -------
    (ci_low, ci_high) : tuple of float within ``[low, high]``

    Raises
    ------
    InputError
        ``n`` not positive, ``low >= high``, ``alpha`` outside (0, 1).

    References
    ----------
    E. B. Wilson, "Probable inference, the law of succession, and statistical inference", JASA
    1927; R. Bhatia and C. Davis, "A better bound on the variance", Amer. Math. Monthly 107(4),
    2000.
    """
    alpha = check_alpha(alpha)
    if not (n > 0 and math.isfinite(n)):
        raise InputError(f"n must be a positive number, got {n!r}")
    if not low < high:
        raise InputError(f"the range needs low < high, got [{low}, {high}]")
    span = high - low
    p = min(1.0, max(0.0, (estimate - low) / span))
    z = _z(alpha)
    shrink = 1.0 + z * z / n
    centre = (p + z * z / (2 * n)) / shrink
    half = z / shrink * math.sqrt(p * (1.0 - p) / n + z * z / (4 * n * n))
    # at p = 0 (or 1) the bound is exactly 0 (or 1); rounding left ~1e-17 above the estimate
    lower = 0.0 if p == 0.0 else max(0.0, centre - half)
    upper = 1.0 if p == 1.0 else min(1.0, centre + half)
    return low + span * lower, low + span * upper


def within_range(interval: Interval, low: float, high: float, n: float, alpha: float) -> Interval:
    """An interval kept within its target's range ``[low, high]`` and never of zero width.

    - A degenerate interval (zero width: every label equal, so the sample variance and any
      normal interval built on it vanish) is replaced by :func:`bounded_mean_interval` around the
      estimate with ``n`` labels, and the note says so. A zero-width interval from a handful of
      labels excludes the truth whenever the truth is not exactly that value.
    - Bounds, and the estimate, are clipped to ``[low, high]``: the truth lies in it, so clipping
      never lowers coverage (the note says when the estimate was clipped).

    ``interval`` is returned as it is when it has no estimate or no interval.

    Parameters
    ----------
    interval : Interval
    low, high : float, low < high
        The range the target's values (and so its mean) can take.
    n : float
        Labels behind the interval (Kish's effective number under an active selection).
    alpha : float in (0, 1)

    Returns
    -------
    Interval

    References
    ----------
    See :func:`bounded_mean_interval`.
    """
    if math.isnan(interval.estimate) or interval.ci_low is None or interval.ci_high is None:
        return interval
    notes = [interval.note] if interval.note else []
    ci_low, ci_high, estimate = interval.ci_low, interval.ci_high, interval.estimate
    if ci_high - ci_low <= 1e-12 * (high - low) and n > 0:
        ci_low, ci_high = bounded_mean_interval(estimate, n, low, high, alpha)
        notes.append(f"every label has the same value: a normal interval would have zero width, so this is "
                     f"the bounded-range (Wilson) interval of {n:.3g} labels")
    clipped = min(high, max(low, estimate))
    if clipped != estimate:
        notes.append(f"estimate {estimate:.4f} clipped to the target's range [{low:g}, {high:g}]")
    return replace(interval, estimate=clipped, ci_low=min(high, max(low, ci_low)),
                   ci_high=min(high, max(low, ci_high)), note="; ".join(notes) or None)


def unpaired_difference(a: Interval, b: Interval, alpha: float) -> Interval:
    """Difference ``a - b`` of two estimates from independent samples, with a normal interval.

    ``std_error = sqrt(se_a² + se_b²)`` (the variances of independent estimates add; DESIGN.md
    "Estimates"); interval ``(a - b) ± z_{1-alpha/2} std_error``. For two runs graded on the same
    items, use per-item differences instead: this interval ignores their correlation.

    Parameters
    ----------
    a, b : Interval
        Estimates from independent samples (e.g. two runs on different items).
    alpha : float in (0, 1)
        Error level; the interval targets coverage 1 - alpha.

    Returns
    -------
    Interval
        NaN estimate when either is NaN; no interval (with a ``note``) when either lacks a
        standard error (e.g. a :func:`judge_mean`).

    Raises
    ------
    InputError
        ``alpha`` outside (0, 1).

    References
    ----------
    Angelopoulos et al., "Prediction-powered inference", Science 2023, arXiv 2301.09633 (normal
    intervals from asymptotically normal estimates).
    """
    alpha = check_alpha(alpha)
    estimate = a.estimate - b.estimate
    if math.isnan(estimate):
        return _undefined("one of the estimates is undefined")
    if a.std_error is None or b.std_error is None:
        return Interval(estimate, None, None, None, note="an estimate without a standard error: no interval")
    se = math.sqrt(a.std_error**2 + b.std_error**2)
    z = _z(alpha)
    return Interval(estimate, estimate - z * se, estimate + z * se, se)
