"""Paired tests between two systems compared on the same prompts: is the judge's preference for
one of them real?

For systems ``s`` and ``t`` and each prompt ``i`` on which they were compared, the paired
difference is ``d_i = wins_i - losses_i`` of ``s`` (:func:`~.ranking.outcomes`: with the ``soft``
method ``P(s better) - P(t better)``, the judge's probabilities balanced over both slot orders;
with ``swap``, +1, 0 or -1 by the MT-Bench rule), in [-1, 1]; a prompt with several comparisons
of the pair contributes their mean, so each prompt is one paired observation. The reported
difference is ``mean_i d_i`` and the win rate ``(1 + mean_i d_i) / 2`` (``wins + ties / 2``).

Test. H0 "no preference": each ``d_i`` is symmetric about 0 (swapping which system is called
``s`` on a prompt does not change the distribution of its judgment), independently over prompts.
Under H0 the signs of the ``d_i`` are exchangeable with random signs, so the sign-flip
permutation test of ``mean d`` (Fisher, *The Design of Experiments*, 1935, sec. 21; the paired
"randomization test" of Good, *Permutation, Parametric and Bootstrap Tests of Hypotheses*, 3rd
ed. 2005, sec. 3.1) is exact: two-sided p = the share of the ``2^n`` sign patterns whose
``|mean|`` is at least the observed one. It is computed by ``scipy.stats.permutation_test``
(``permutation_type="samples"`` on one sample flips signs): every pattern when
``2^n <= n_resamples``, else ``n_resamples`` random ones with ``p = (1 + hits) / (1 + B)``
(valid, Phipson & Smyth, Stat. Appl. Genet. Mol. Biol. 2010).

Why this test: it tests the mean preference, the number reported, unlike Wilcoxon's
signed-rank test (a location shift of a continuous, untied distribution; ``d`` here is bounded,
often discrete and full of zeros under the swap rule) and needs no normality, unlike the paired
t-test with few prompts; it keeps the pairing by prompt, the unit that was sampled.

Several systems: the p-values of all compared pairs are adjusted by Holm's step-down method
(Holm, Scand. J. Statist. 1979), which controls the family-wise error rate under any dependence
between the pairs. Type-I error and power are simulated in ``tests/test_compare_paired.py``.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike
from scipy.stats import permutation_test

from autorubric_local.comparisons.judging import StoredComparison
from autorubric_local.comparisons.ranking import outcomes
from autorubric_local.core.errors import InputError

__all__ = ["DEFAULT_RESAMPLES", "PairedTest", "SignFlipResult", "holm", "paired_tests", "sign_flip_test"]

DEFAULT_RESAMPLES = 9999
"""Random sign patterns when there are more than this many (over 13 prompts)."""


@dataclass(frozen=True)
class SignFlipResult:
    """A sign-flip test of ``mean d = 0``: the mean, the two-sided p-value in (0, 1], and whether
    every sign pattern was enumerated (``exact``) or ``n_resamples`` were drawn."""

    mean: float
    p_value: float
    exact: bool


def sign_flip_test(differences: ArrayLike, *, n_resamples: int = DEFAULT_RESAMPLES,
                   seed: int | Sequence[int] = 0) -> SignFlipResult:
    """Two-sided sign-flip permutation test of H0: the ``differences`` are symmetric about 0
    (module docstring).

    Parameters
    ----------
    differences : array-like of shape (n,)
        Paired differences, one per independent unit (prompt), finite.
    n_resamples : int, >= 1
        Random sign patterns when ``2^n > n_resamples``; else all ``2^n`` are used.
    seed : int or sequence of int
        Seeds the random patterns.

    Returns
    -------
    SignFlipResult

    Raises
    ------
    InputError
        No difference, a non-finite one, a shape other than (n,), or ``n_resamples < 1``.
    """
    d = np.asarray(differences, dtype=float)
    if d.ndim != 1 or len(d) == 0:
        raise InputError(f"differences must be a non-empty 1-d array, got shape {d.shape}")
    if not np.isfinite(d).all():
        raise InputError("differences must be finite")
    if n_resamples < 1:
        raise InputError(f"n_resamples must be at least 1, got {n_resamples}")
    exact = 2 ** len(d) <= n_resamples
    found = permutation_test((d,), lambda x, axis: np.mean(x, axis=axis), permutation_type="samples",
                             vectorized=True, n_resamples=n_resamples, alternative="two-sided",
                             rng=np.random.default_rng(seed))
    return SignFlipResult(float(d.mean()), float(min(1.0, found.pvalue)), exact)


def holm(p_values: ArrayLike) -> np.ndarray:
    """Holm's step-down adjusted p-values (Holm 1979).

    With ``p_(1) <= ... <= p_(m)``, ``adjusted_(k) = max_{j <= k} min(1, (m - j + 1) p_(j))``;
    rejecting where the adjusted p-value is at most ``alpha`` controls the family-wise error rate
    at ``alpha``.

    Parameters
    ----------
    p_values : array-like of shape (m,), values in [0, 1]

    Returns
    -------
    ndarray of shape (m,)
        In the input order.

    Raises
    ------
    InputError
        A p-value outside [0, 1] or not finite.
    """
    p = np.asarray(p_values, dtype=float).reshape(-1)
    if not (np.isfinite(p).all() and ((p >= 0) & (p <= 1)).all()):
        raise InputError("p-values must be in [0, 1]")
    m = len(p)
    order = np.argsort(p, kind="stable")
    stepped = np.minimum(1.0, np.maximum.accumulate((m - np.arange(m)) * p[order]))
    out = np.empty(m)
    out[order] = stepped
    return out


@dataclass(frozen=True)
class PairedTest:
    """The paired test of ``system`` against ``other`` (``system`` first in the comparison's order).

    Attributes
    ----------
    system, other : str
    n_prompts : int
        Prompts on which the pair was compared (the paired observations).
    difference : float in [-1, 1]
        Mean over prompts of ``wins - losses`` of ``system``.
    win_rate : float in [0, 1]
        ``(1 + difference) / 2``: ``system``'s mean ``wins + ties / 2``.
    p_value : float in (0, 1]
        Two-sided sign-flip p-value of H0 "no preference".
    p_holm : float in (0, 1]
        Holm-adjusted over the pairs of one call (equal to ``p_value`` for one pair).
    exact : bool
        Whether every sign pattern was enumerated.
    """

    system: str
    other: str
    n_prompts: int
    difference: float
    win_rate: float
    p_value: float
    p_holm: float
    exact: bool


def paired_tests(comparison: StoredComparison, *, judge_id: str, question: str, method: str = "soft",
                 n_resamples: int = DEFAULT_RESAMPLES, seed: int = 0) -> list[PairedTest]:
    """Paired sign-flip tests for every compared pair of systems, Holm-adjusted (module docstring).

    Parameters
    ----------
    comparison : StoredComparison
    judge_id : str
    question : str
        A question's name or :data:`~.ranking.RUBRIC`.
    method : {"soft", "swap"}
    n_resamples : int
        As :func:`sign_flip_test`.
    seed : int
        Pair ``k`` (in the output order) is tested with the seed ``(seed, k)``.

    Returns
    -------
    list of PairedTest
        One per pair, in the order of the comparison's systems.

    Raises
    ------
    InputError
        As :func:`~.ranking.outcomes`, or no complete comparison.
    """
    found = outcomes(comparison, judge_id=judge_id, question=question, method=method)
    if not found:
        raise InputError(f"judge {judge_id!r}, question {question!r}: no complete comparison to test")
    order = {s: k for k, s in enumerate(comparison.systems)}
    per_prompt: dict[tuple[str, str], dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for o in found:
        d = o.wins - o.losses
        first, second, d = (o.a, o.b, d) if order[o.a] < order[o.b] else (o.b, o.a, -d)
        per_prompt[(first, second)][o.prompt_id].append(d)
    pairs = sorted(per_prompt, key=lambda p: (order[p[0]], order[p[1]]))
    results = []
    for k, pair in enumerate(pairs):
        d = np.array([np.mean(v) for v in per_prompt[pair].values()])
        results.append((pair, len(d), sign_flip_test(d, n_resamples=n_resamples, seed=(seed, k))))
    adjusted = holm([r.p_value for _, _, r in results])
    return [PairedTest(a, b, n, r.mean, (1.0 + r.mean) / 2.0, r.p_value, float(p), r.exact)
            for ((a, b), n, r), p in zip(results, adjusted, strict=True)]
