"""Distribution comparisons of judge and human scores (AutoRubric's README, \"Distribution metrics\").

Correlation can hide a judge that is systematically harsher or more lenient (He et al.,
2025); these functions compare the two score distributions and the paired differences.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from typing import Literal

import numpy as np
from scipy import stats

from autorubric_local.metrics._checks import (
    as_pair,
    check_confidence_level,
    finite_or_none,
)
from autorubric_local.metrics.types import (
    BiasResult,
    ConfidenceInterval,
    DistributionResult,
    EMDResult,
    KSTestResult,
    interpret_emd,
)

__all__ = [
    "earth_movers_distance",
    "ks_test",
    "score_distribution",
    "systematic_bias",
    "wasserstein_distance",
]


def _scores(theirs: Sequence[float] | None, theirs_name: str, ours: Sequence[float] | None, ours_name: str,
            func: str, *, required: bool = True) -> Sequence[float] | None:
    """One sample given under AutoRubric's name (positional) or ours (keyword): exactly one."""
    if theirs is not None and ours is not None:
        raise TypeError(f"{func}() got both {theirs_name} and {ours_name} (two names of one argument)")
    value = theirs if theirs is not None else ours
    if value is None and required:
        raise TypeError(f"{func}() missing {theirs_name} (or {ours_name})")
    return value


def _min_max(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Both samples min-max scaled over their pooled range (unchanged when it is 0)."""
    lo, hi = float(min(a.min(), b.min())), float(max(a.max(), b.max()))
    if hi > lo:
        return (a - lo) / (hi - lo), (b - lo) / (hi - lo)
    return a, b


def wasserstein_distance(
    dist1: Sequence[float] | None = None, dist2: Sequence[float] | None = None, *, normalize: bool = False,
    judge_scores: Sequence[float] | None = None, human_scores: Sequence[float] | None = None,
) -> float:
    """1-Wasserstein distance between two empirical score distributions.

    ``scipy.stats.wasserstein_distance``: ``integral |F_judge(t) - F_human(t)| dt`` of the
    empirical CDFs (Villani, 2009). Samples may differ in size. In score units, >= 0.

    Parameters
    ----------
    dist1, dist2 : array-like of float, shape (n1,) and (n2,)
        Judge and human scores (AutoRubric's names; ``judge_scores=``/``human_scores=``, the
        former names, are accepted as keywords).
    normalize : bool, default False
        AutoRubric's option: min-max scale both samples over their pooled range first, so
        the distance is in [0, 1]. AutoRubric's default is ``True``; here it is ``False`` so
        existing callers keep score units.

    Returns
    -------
    float
        ``EMDResult.emd`` of :func:`earth_movers_distance`: >= 0, in score units (in [0, 1]
        when ``normalize=True``); 0.0 for identical distributions.

    Raises
    ------
    InputError
        An empty or non-1-d sample, or NaN or infinite values.
    TypeError
        A sample given under both names, or missing.
    """
    return earth_movers_distance(dist1, dist2, normalize=normalize, judge_scores=judge_scores,
                                 human_scores=human_scores).emd  # type: ignore[return-value]


def earth_movers_distance(
    dist1: Sequence[float] | None = None, dist2: Sequence[float] | None = None, *, normalize: bool = False,
    judge_scores: Sequence[float] | None = None, human_scores: Sequence[float] | None = None,
) -> EMDResult:
    """Earth mover's distance (the 1-Wasserstein distance, :func:`wasserstein_distance`)
    with the sample sizes and AutoRubric's shift statistics (AutoRubric's README,
    "Distribution metrics"). 0 means identical distributions; for normalised scores in [0, 1]
    it is at most 1 and reads as "average score mass moved".

    ``EMD = integral |F_judge(t) - F_human(t)| dt`` of the two empirical CDFs, computed by
    ``scipy.stats.wasserstein_distance`` (each observation weighted equally; Villani, 2009;
    Rubner et al., 2000, for the earth mover's reading). Samples may differ in size.

    Parameters
    ----------
    dist1, dist2 : array-like of float, shape (n1,) and (n2,), n1, n2 >= 1
        Judge and human scores (AutoRubric's names; ``judge_scores=``/``human_scores=``, the
        former names, are accepted as keywords). Not paired: order does not matter.
    normalize : bool, default False
        Min-max scale both samples over their pooled range ``[min, max]`` before computing
        ``emd`` and the shift statistics (unchanged when all scores are equal). AutoRubric's
        default is ``True``; here it is ``False`` so existing callers keep score units.

    Returns
    -------
    EMDResult
        ``distance``: in score units, never normalised, >= 0. ``n_judge``, ``n_human``: n1
        and n2. Of the compared values (min-max normalised when ``normalize=True``): ``emd``
        (``== distance`` when not normalised; in [0, 1] when normalised), ``mean_diff =
        mean(judge) - mean(human)``, ``std_diff`` (population std, ddof=0),
        ``bias_direction`` (``"higher"`` when ``mean_diff > 0.01``, ``"lower"`` when ``<
        -0.01``, else ``"none"``), ``bias_magnitude = |mean_diff|`` and ``interpretation``
        (AutoRubric's bands of ``emd``: < 0.05 "very similar", < 0.10 "minor differences",
        < 0.20 "moderate differences", else "substantial differences";
        :func:`~autorubric_local.metrics.types.interpret_emd`). See :class:`EMDResult`.

    Raises
    ------
    InputError
        An empty or non-1-d sample, or NaN or infinite values.
    TypeError
        A sample given under both names (``dist1`` and ``judge_scores``), or missing.
    """
    x = _scores(dist1, "dist1", judge_scores, "judge_scores", "earth_movers_distance")
    y = _scores(dist2, "dist2", human_scores, "human_scores", "earth_movers_distance")
    a, b = as_pair(x, y, paired=False)  # type: ignore[arg-type]
    distance = float(stats.wasserstein_distance(a, b))
    ca, cb = _min_max(a, b) if normalize else (a, b)
    emd = float(stats.wasserstein_distance(ca, cb)) if normalize else distance
    mean_diff = float(ca.mean() - cb.mean())
    direction: Literal["higher", "lower", "none"] = (
        "higher" if mean_diff > 0.01 else "lower" if mean_diff < -0.01 else "none")
    return EMDResult(distance=distance, n_judge=a.size, n_human=b.size, emd=emd, mean_diff=mean_diff,
                     std_diff=float(ca.std() - cb.std()), bias_direction=direction,
                     bias_magnitude=abs(mean_diff), interpretation=interpret_emd(emd))


def ks_test(
    sample1: Sequence[float] | None = None, sample2: Sequence[float] | None = None, *,
    judge_scores: Sequence[float] | None = None, human_scores: Sequence[float] | None = None,
) -> KSTestResult:
    """Kolmogorov-Smirnov test (AutoRubric's README, "Distribution metrics"). Statistic =
    ``sup_t |F_1(t) - F_2(t)|``, in [0, 1].

    Two samples (``sample1`` judge, ``sample2`` human; ``judge_scores=``/``human_scores=``
    accepted as keywords): ``scipy.stats.ks_2samp``, two-sided, exact or asymptotic p-value
    as scipy chooses (``method="auto"``: exact for small samples). ``sample2`` omitted
    (AutoRubric's one-sample form): ``scipy.stats.kstest`` against the normal distribution with
    the sample's own mean and population std (ddof=0), as AutoRubric does; that p-value
    ignores that the parameters were estimated (so it is conservative, Lilliefors 1967).
    References: Kolmogorov (1933), Smirnov (1948); scipy's documentation of both functions.

    Parameters
    ----------
    sample1 : array-like of float, shape (n1,), n1 >= 1
        Judge scores.
    sample2 : array-like of float, shape (n2,), n2 >= 1, optional
        Human scores; sizes may differ (not paired). Omitted: the one-sample normality test
        of ``sample1``.

    Returns
    -------
    KSTestResult
        ``statistic`` in [0, 1] (0 = identical empirical CDFs), ``p_value`` in [0, 1],
        ``n_judge`` = n1, ``n_human`` = n2 (``None`` for the one-sample test) and
        ``is_significant = p_value < 0.05`` (AutoRubric's fixed level).

    Degenerate cases: a constant ``sample1`` in the one-sample form (std 0) gives NaN
    ``statistic`` and ``p_value`` (scipy's normal with scale 0; numpy warns) and
    ``is_significant=False``. Two identical samples give statistic 0, p-value 1.

    Raises
    ------
    InputError
        An empty or non-1-d sample, or NaN or infinite values.
    TypeError
        A sample given under both names (``sample1`` and ``judge_scores``), or ``sample1``
        missing.
    """
    x = _scores(sample1, "sample1", judge_scores, "judge_scores", "ks_test")
    y = _scores(sample2, "sample2", human_scores, "human_scores", "ks_test", required=False)
    if y is None:
        a, _ = as_pair(x, x, name_x="sample1", name_y="sample1")  # type: ignore[arg-type]
        res = stats.kstest(a, "norm", args=(float(a.mean()), float(a.std())))
        return KSTestResult(statistic=float(res.statistic), p_value=float(res.pvalue), n_judge=a.size)
    a, b = as_pair(x, y, paired=False)  # type: ignore[arg-type]
    res = stats.ks_2samp(a, b)
    return KSTestResult(statistic=float(res.statistic), p_value=float(res.pvalue),
                        n_judge=a.size, n_human=b.size)


def score_distribution(scores: Sequence[float], bins: int = 10,
                       score_range: tuple[float, float] = (0.0, 1.0), *,
                       include_histogram: bool = True) -> DistributionResult:
    """Mean, sample std and variance (ddof=1), quartiles (numpy linear interpolation), IQR,
    skewness, excess kurtosis and a histogram.

    Parameters
    ----------
    scores : array-like of float, shape (n,), n >= 1
    bins : int, default 10
        Equal-width bins over ``score_range`` (widened to include every score).
    score_range : (float, float), default (0, 1)
    include_histogram : bool, default True
        AutoRubric's option: ``False`` leaves ``histogram`` and ``bin_edges`` ``None``.

    Skewness (``scipy.stats.skew``, biased) needs n >= 3 and kurtosis
    (``scipy.stats.kurtosis``, Fisher, biased) n >= 4, AutoRubric's thresholds; each is
    ``None`` below them or for constant scores.
    """
    a, _ = as_pair(scores, scores, name_x="scores", name_y="scores")
    counts: list[int] | None = None
    edges: list[float] | None = None
    if include_histogram:
        lo, hi = min(score_range[0], float(a.min())), max(score_range[1], float(a.max()))
        hist, bin_edges = np.histogram(a, bins=bins, range=(lo, hi))
        counts, edges = hist.astype(int).tolist(), bin_edges.tolist()
    q25, median, q75 = np.percentile(a, [25, 50, 75])
    constant = bool(np.ptp(a) == 0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        skewness = None if a.size < 3 or constant else finite_or_none(stats.skew(a))
        kurtosis = None if a.size < 4 or constant else finite_or_none(stats.kurtosis(a))
    return DistributionResult(
        n=a.size, mean=float(a.mean()), std=float(a.std(ddof=1)) if a.size > 1 else None,
        min=float(a.min()), q25=float(q25), median=float(median), q75=float(q75),
        max=float(a.max()), histogram=counts, bin_edges=edges,
        variance=float(a.var(ddof=1)) if a.size > 1 else None, iqr=float(q75 - q25),
        skewness=skewness, kurtosis=kurtosis,
    )


def _direction(mean: float) -> Literal["positive", "negative", "none"]:
    """AutoRubric's bias direction: beyond +/-0.001 score units."""
    return "positive" if mean > 0.001 else "negative" if mean < -0.001 else "none"


def systematic_bias(
    y_pred: Sequence[float] | None = None, y_true: Sequence[float] | None = None,
    confidence_level: float | None = None, *, paired: bool = True, confidence: float = 0.95,
    judge_scores: Sequence[float] | None = None, human_scores: Sequence[float] | None = None,
) -> BiasResult:
    """Bias of judge over human scores.

    Parameters
    ----------
    y_pred, y_true : array-like of float, shape (n,) (and (m,) when not paired)
        Judge and human scores (AutoRubric's names; ``judge_scores=``/``human_scores=``, the
        former names, are accepted as keywords).
    confidence_level : float in (0, 1), optional
        Of the interval; when not given, ``confidence`` (AutoRubric's name, default 0.95).
    paired : bool, default True
        AutoRubric's option. ``False``: the samples are independent (sizes may differ).

    Paired, with ``d = judge - human`` (shape (n,)): ``mean_bias = mean(d)``; ``std_bias`` =
    sample std (ddof=1); CI = ``mean(d) +/- t_{(1+c)/2, n-1} * std / sqrt(n)`` (Student);
    paired t-test ``scipy.stats.ttest_rel(judge, human)``; effect size Cohen's
    ``d_z = mean(d) / std(d)`` (Cohen, 1988, for paired designs).

    Not paired: ``mean_bias = mean(judge) - mean(human)``; ``std_bias`` = the pooled sample
    std ``s_p = sqrt(((n-1) s_j^2 + (m-1) s_h^2) / (n + m - 2))``; CI = ``mean_bias +/-
    t_{(1+c)/2, n+m-2} * s_p * sqrt(1/n + 1/m)``; Student's t-test
    ``scipy.stats.ttest_ind`` (equal variances); effect size Cohen's ``d = mean_bias / s_p``.
    (AutoRubric pools as ``sqrt((s_j^2 + s_h^2) / 2)`` and uses ``n - 2`` degrees of
    freedom; these agree when n == m, except for the degrees of freedom.) ``n`` is n.

    Degenerate cases: paired n == 1 (or n + m < 3) -> only ``mean_bias`` (others ``None``);
    zero spread -> CI collapses to the mean, t/p/effect size ``None``.

    Raises
    ------
    InputError
        Empty or (paired) unequal-length input, non-finite values, or a confidence level
        outside (0, 1).
    TypeError
        ``confidence_level`` and ``confidence`` that differ, or a sample under both names.
    """
    if confidence_level is not None and confidence not in (0.95, confidence_level):
        raise TypeError(f"systematic_bias() got confidence_level={confidence_level!r} and confidence="
                        f"{confidence!r} (two names of one argument)")
    c = check_confidence_level(confidence if confidence_level is None else confidence_level)
    x = _scores(y_pred, "y_pred", judge_scores, "judge_scores", "systematic_bias")
    y = _scores(y_true, "y_true", human_scores, "human_scores", "systematic_bias")
    a, b = as_pair(x, y, paired=paired)  # type: ignore[arg-type]
    n = int(a.size)
    if paired:
        d = a - b
        mean = float(d.mean())
        df = n - 1
        sd = float(d.std(ddof=1)) if df > 0 else 0.0
        se = sd / math.sqrt(n)
    else:
        mean = float(a.mean() - b.mean())
        df = n + int(b.size) - 2
        squares = float(np.sum((a - a.mean()) ** 2) + np.sum((b - b.mean()) ** 2))
        sd = math.sqrt(squares / df) if df > 0 else 0.0
        se = sd * math.sqrt(1 / n + 1 / b.size)
    base = {"mean_bias": mean, "n": n, "direction": _direction(mean)}
    if df < 1:
        return BiasResult(**base, std_bias=None, is_significant=False)
    if sd <= 1e-15 * max(1.0, abs(mean)):
        ci = ConfidenceInterval(lower=mean, upper=mean, confidence_level=c, method="t")
        return BiasResult(**base, std_bias=0.0, ci=ci, is_significant=False)
    half = float(stats.t.ppf((1 + c) / 2, df)) * se
    res = stats.ttest_rel(a, b) if paired else stats.ttest_ind(a, b)
    p = finite_or_none(res.pvalue)
    return BiasResult(
        **base, std_bias=sd,
        ci=ConfidenceInterval(lower=mean - half, upper=mean + half, confidence_level=c, method="t"),
        t_statistic=finite_or_none(res.statistic), p_value=p, effect_size=mean / sd,
        significant=None if p is None else bool(p < 1 - c),
        is_significant=p is not None and bool(p < 0.05),
    )
