"""Choosing which items to label for active inference: uncertainty, inclusion probabilities, draws.

The draws and their probabilities must be recorded when the items are chosen, before any label
is seen (Zrnic & Candès, "Active Statistical Inference", ICML 2024, arXiv 2403.03208); the
estimator is :func:`autorubric_local.estimates.methods.active_mean`.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from autorubric_local.core.errors import InputError
from autorubric_local.estimates.checks import as_vector

__all__ = ["draw", "inclusion_probabilities", "item_uncertainty"]


def inclusion_probabilities(uncertainty: ArrayLike, budget: float, mix: float = 0.2) -> np.ndarray:
    """Labelling probabilities proportional to uncertainty, mixed with uniform, summing to ``budget``.

    ``pi_i ∝ (1 - mix) u_i / mean(u) + mix``, scaled so that ``sum(pi) == budget`` (the expected
    number of labels) with every ``pi_i <= 1``: items whose share exceeds 1 are set to 1 and the
    rest of the budget is spread over the others in proportion, repeated until none exceeds 1.
    Mixing with the uniform rule keeps every ``pi_i >= mix * budget / N`` (before capping) away from
    0, which bounds the inverse-probability weights, as Zrnic & Candès recommend. For a binary
    criterion with a calibrated judge, the variance-optimal rule is ``pi ∝ sqrt(p(1-p))``, i.e.
    ``u = item_uncertainty(p)``.

    Parameters
    ----------
    uncertainty : array-like of shape (N,)
        Non-negative, finite uncertainty of each item (e.g. :func:`item_uncertainty`).
    budget : float in (0, N]
        Expected number of labelled items.
    mix : float in (0, 1], default 0.2
        Weight of the uniform rule; 1 gives uniform ``budget / N``.

    Returns
    -------
    ndarray of shape (N,)
        Probabilities in (0, 1] summing to ``budget`` (to rounding). All-zero uncertainty gives
        the uniform ``budget / N``.

    Raises
    ------
    InputError
        ``uncertainty`` not 1-d, empty, non-finite or negative; ``budget`` outside (0, N];
        ``mix`` outside (0, 1].

    References
    ----------
    T. Zrnic and E. J. Candès, "Active Statistical Inference", ICML 2024, arXiv 2403.03208
    (Sections 3 and 6: sampling proportional to the model's uncertainty, mixed with uniform).
    """
    u = as_vector("uncertainty", uncertainty)
    if (u < 0).any():
        i = int(np.flatnonzero(u < 0)[0])
        raise InputError(f"uncertainty must be >= 0, got {u[i]} at index {i}")
    n_items = u.size
    if isinstance(budget, bool) or not isinstance(budget, (int, float, np.integer, np.floating)) or not (
        0.0 < float(budget) <= n_items
    ):
        raise InputError(f"budget must be in (0, {n_items}] (the number of items), got {budget!r}")
    if isinstance(mix, bool) or not isinstance(mix, (int, float, np.floating)) or not 0.0 < float(mix) <= 1.0:
        raise InputError(f"mix must be in (0, 1], got {mix!r}")
    budget = float(budget)
    mean_u = float(u.mean())
    if mean_u == 0.0:
        return np.full(n_items, budget / n_items)
    share = (1.0 - mix) * u / mean_u + mix
    pi = np.empty(n_items)
    capped = np.zeros(n_items, dtype=bool)
    for _ in range(n_items):
        free = ~capped
        pi[capped] = 1.0
        pi[free] = (budget - capped.sum()) * share[free] / share[free].sum()
        over = free & (pi > 1.0)
        if not over.any():
            break
        capped |= over
    return np.minimum(pi, 1.0)


def draw(pi: ArrayLike, seed: int | None) -> np.ndarray:
    """Independent draws ``xi_i ~ Bernoulli(pi_i)``: which items to send for labelling.

    Parameters
    ----------
    pi : array-like of shape (N,)
        Inclusion probabilities in [0, 1].
    seed : int or None
        Seed of ``numpy.random.default_rng``; the same seed gives the same draws. Record it (and
        ``pi``) with the draws.

    Returns
    -------
    ndarray of bool, shape (N,)

    Raises
    ------
    InputError
        ``pi`` not 1-d, empty, non-finite or outside [0, 1].

    References
    ----------
    T. Zrnic and E. J. Candès, "Active Statistical Inference", ICML 2024, arXiv 2403.03208
    (Bernoulli sampling, xi_i ~ Bernoulli(pi(X_i))).
    """
    p = as_vector("pi", pi)
    out = (p < 0.0) | (p > 1.0)
    if out.any():
        i = int(np.flatnonzero(out)[0])
        raise InputError(f"pi must be in [0, 1], got {p[i]} at index {i}")
    rng = np.random.default_rng(seed)
    return rng.random(p.size) < p


def item_uncertainty(p: ArrayLike, weights: ArrayLike | None = None) -> np.ndarray:
    """Standard deviation of each item's weighted score under independent Bernoulli verdicts.

    ``u_i = sqrt(sum_c w_c² p_ic (1 - p_ic)) / sum_{c: w_c > 0} w_c``: the score
    ``sum_c w_c MET_ic / sum_{w_c > 0} w_c`` with ``MET_ic ~ Bernoulli(p_ic)`` independent across
    criteria. NaN probabilities (no judgment) count as 0.5, the maximal variance 0.25. For one
    criterion this is ``sqrt(p(1-p))``, the rule of Zrnic & Candès for a calibrated classifier.

    Parameters
    ----------
    p : array-like of shape (N, C) or (N,)
        The judge's P(MET) per item and criterion, in [0, 1] or NaN.
    weights : array-like of shape (C,), optional
        Criterion weights (negative for negative criteria); default all 1. At least one must be
        positive.

    Returns
    -------
    ndarray of shape (N,)
        Values in [0, 0.5 * sqrt(sum w²) / sum of positive w].

    Raises
    ------
    InputError
        ``p`` not 1-d/2-d, infinite or outside [0, 1]; ``weights`` of the wrong length,
        non-finite, or with no positive weight.

    References
    ----------
    T. Zrnic and E. J. Candès, "Active Statistical Inference", ICML 2024, arXiv 2403.03208
    (Section 3: for binary outcomes, sample proportional to sqrt(f(1-f))).
    """
    try:
        probs = np.asarray(p, dtype=float)
    except (TypeError, ValueError) as exc:
        raise InputError(f"p must be numeric, got {p!r:.80}") from exc
    if probs.ndim == 1:
        probs = probs[:, None]
    if probs.ndim != 2 or probs.shape[0] == 0 or probs.shape[1] == 0:
        raise InputError(f"p must have shape (N, C) or (N,) with N, C >= 1, got {np.shape(p)}")
    bad = np.isinf(probs) | (probs < 0.0) | (probs > 1.0)
    if bad.any():
        i, c = (int(k) for k in np.argwhere(bad)[0])
        raise InputError(f"p must be in [0, 1] or NaN, got {probs[i, c]} at item {i}, criterion {c}")
    n_criteria = probs.shape[1]
    w = np.ones(n_criteria) if weights is None else as_vector("weights", weights)
    if w.size != n_criteria:
        raise InputError(f"weights has {w.size} values for {n_criteria} criteria in p")
    positive = float(w[w > 0].sum())
    if positive == 0.0:
        raise InputError(f"weights needs at least one positive weight, got {w.tolist()}")
    probs = np.where(np.isnan(probs), 0.5, probs)
    return np.sqrt((w * w * probs * (1.0 - probs)).sum(axis=1)) / positive
