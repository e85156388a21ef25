"""Distribution comparisons of judge and human scores (AutoRubric's README, \"Distribution metrics\").

Correlation can hide a judge that is systematically harsher or more lenient (He et al.,
2025); these functions compare the two score distributions and the paired differences.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

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
)

__all__ = [
    "earth_movers_distance",
    "ks_test",
    "score_distribution",
    "systematic_bias",
    "wasserstein_distance",
]


def wasserstein_distance(judge_scores: Sequence[float], human_scores: Sequence[float]) -> float:
    """1-Wasserstein distance between two empirical score distributions.

    ``scipy.stats.wasserstein_distance``: ``integral |F_judge(t) - F_human(t)| dt`` of the
    empirical CDFs (Villani, 2009). Samples may differ in size. In score units, >= 0.

    Raises
    ------
    InputError
        An empty sample or non-finite values.
    """
    a, b = as_pair(judge_scores, human_scores, paired=False)
    return float(stats.wasserstein_distance(a, b))


def earth_movers_distance(
    judge_scores: Sequence[float], human_scores: Sequence[float]
) -> EMDResult:
    """Earth mover's distance (the 1-Wasserstein distance, :func:`wasserstein_distance`)
    with the sample sizes. 0 means identical distributions; for normalised scores in
    [0, 1] it is at most 1 and reads as "average score mass moved"."""
    a, b = as_pair(judge_scores, human_scores, paired=False)
    return EMDResult(distance=float(stats.wasserstein_distance(a, b)), n_judge=a.size, n_human=b.size)


def ks_test(judge_scores: Sequence[float], human_scores: Sequence[float]) -> KSTestResult:
    """Two-sample Kolmogorov-Smirnov test (``scipy.stats.ks_2samp``, two-sided, exact or
    asymptotic p-value as scipy chooses). Statistic = sup |F_judge - F_human|, in [0, 1]."""
    a, b = as_pair(judge_scores, human_scores, paired=False)
    res = stats.ks_2samp(a, b)
    return KSTestResult(statistic=float(res.statistic), p_value=float(res.pvalue),
                        n_judge=a.size, n_human=b.size)


def score_distribution(scores: Sequence[float], bins: int = 10,
                       score_range: tuple[float, float] = (0.0, 1.0)) -> DistributionResult:
    """Mean, sample std (ddof=1), quartiles (numpy linear interpolation) and a histogram.

    Parameters
    ----------
    scores : array-like of float, shape (n,), n >= 1
    bins : int, default 10
        Equal-width bins over ``score_range`` (widened to include every score).
    score_range : (float, float), default (0, 1)
    """
    a, _ = as_pair(scores, scores, name_x="scores", name_y="scores")
    lo, hi = min(score_range[0], float(a.min())), max(score_range[1], float(a.max()))
    counts, edges = np.histogram(a, bins=bins, range=(lo, hi))
    q25, median, q75 = np.percentile(a, [25, 50, 75])
    return DistributionResult(
        n=a.size, mean=float(a.mean()), std=float(a.std(ddof=1)) if a.size > 1 else None,
        min=float(a.min()), q25=float(q25), median=float(median), q75=float(q75),
        max=float(a.max()), histogram=counts.astype(int).tolist(), bin_edges=edges.tolist(),
    )


def systematic_bias(
    judge_scores: Sequence[float], human_scores: Sequence[float], confidence_level: float = 0.95
) -> BiasResult:
    """Paired bias of judge over human scores.

    With ``d = judge - human`` (shape (n,)): ``mean_bias = mean(d)``; ``std_bias`` =
    sample std (ddof=1); CI = ``mean(d) +/- t_{(1+c)/2, n-1} * std / sqrt(n)`` (Student);
    paired t-test ``scipy.stats.ttest_rel(judge, human)``; effect size Cohen's
    ``d_z = mean(d) / std(d)`` (Cohen, 1988, for paired designs).

    Degenerate cases: n == 1 -> only ``mean_bias`` (others ``None``); all differences equal
    (std 0) -> CI collapses to the mean, t/p/effect size ``None``.

    Raises
    ------
    InputError
        Empty or unequal-length input, non-finite values, or confidence_level outside (0, 1).
    """
    c = check_confidence_level(confidence_level)
    a, b = as_pair(judge_scores, human_scores)
    d = a - b
    n = int(d.size)
    mean = float(d.mean())
    if n < 2:
        return BiasResult(mean_bias=mean, std_bias=None, ci=None, t_statistic=None, p_value=None,
                          effect_size=None, significant=None, n=n)
    sd = float(d.std(ddof=1))
    if sd <= 1e-15 * max(1.0, abs(mean)):
        ci = ConfidenceInterval(lower=mean, upper=mean, confidence_level=c)
        return BiasResult(mean_bias=mean, std_bias=0.0, ci=ci, t_statistic=None, p_value=None,
                          effect_size=None, significant=None, n=n)
    half = float(stats.t.ppf((1 + c) / 2, n - 1)) * sd / math.sqrt(n)
    res = stats.ttest_rel(a, b)
    p = finite_or_none(res.pvalue)
    return BiasResult(
        mean_bias=mean, std_bias=sd,
        ci=ConfidenceInterval(lower=mean - half, upper=mean + half, confidence_level=c),
        t_statistic=finite_or_none(res.statistic), p_value=p, effect_size=mean / sd,
        significant=None if p is None else bool(p < 1 - c), n=n,
    )
