"""Human-judge agreement metrics under rating indeterminacy, one criterion at a time.

Source: the blog post on "Validating LLM-as-a-Judge Systems under Rating Indeterminacy"
(NeurIPS 2025; "Measuring Agreement", Finding 2, recommendation 4). Forced-choice metrics
compare the raters' forced-choice ratings:
hit rate and Cohen's kappa on hard labels, KL divergence (human -> judge) and Jensen-Shannon
divergence on forced-choice distributions ``O``. The multi-label metric compares the
multi-label vectors ``Omega``: ``MSE = E_i[ ||Omega_i^H - Omega_i^J||_2^2 ]``.

Conventions (as :mod:`autorubric_local.metrics`): hit rate and kappa, higher is better; KL,
JSD and MSE, lower is better. A figure undefined for the data (kappa of two constant raters)
is ``None``. Shapes: ``n`` items, ``K`` options; labels are option indices.
"""

from __future__ import annotations

import numpy as np
from scipy.spatial.distance import jensenshannon
from scipy.stats import entropy

from autorubric_local.core.errors import InputError
from autorubric_local.metrics.agreement import cohen_kappa as metrics_kappa

__all__ = [
    "DEFAULT_EPSILON",
    "cohen_kappa",
    "hit_rate",
    "js_divergence",
    "kl_divergence",
    "modal_labels",
    "multilabel_mse",
]

DEFAULT_EPSILON = 1e-6
"""Floor put under the judge's probabilities before KL (then renormalised), so that a judge
that gives 0 to a human's option costs ``-log(1e-6)`` = 13.8 nats, not infinity."""


def _labels(human: np.ndarray | list[int], judge: np.ndarray | list[int]) -> tuple[np.ndarray, np.ndarray]:
    h, j = np.asarray(human), np.asarray(judge)
    if h.ndim != 1 or h.shape != j.shape or h.size == 0:
        raise InputError(f"human and judge labels must be 1-d, non-empty and of equal length, got {h.shape} and {j.shape}")
    if not (np.issubdtype(h.dtype, np.integer) and np.issubdtype(j.dtype, np.integer)):
        raise InputError("labels must be integer option indices")
    return h, j


def _distributions(human: np.ndarray, judge: np.ndarray, name: str, *, rows_sum_to_one: bool) -> tuple[np.ndarray, np.ndarray]:
    h, j = np.asarray(human, dtype=float), np.asarray(judge, dtype=float)
    if h.ndim != 2 or h.shape != j.shape or h.shape[0] == 0:
        raise InputError(f"{name}: human and judge must both have shape (n, K), got {h.shape} and {j.shape}")
    for arr, who in ((h, "human"), (j, "judge")):
        if not np.all(np.isfinite(arr)) or np.any(arr < -1e-9) or np.any(arr > 1 + 1e-9):
            raise InputError(f"{name}: {who} values must be probabilities in [0, 1]")
        if rows_sum_to_one and not np.allclose(arr.sum(axis=1), 1.0, atol=1e-6):
            row = int(np.flatnonzero(~np.isclose(arr.sum(axis=1), 1.0, atol=1e-6))[0])
            raise InputError(f"{name}: {who} row {row} does not sum to 1 ({arr[row].sum():.6g})")
    return np.clip(h, 0, 1), np.clip(j, 0, 1)


def modal_labels(distributions: np.ndarray) -> np.ndarray:
    """The most likely option of each row (the lowest index among ties), shape ``(n,)``."""
    d = np.asarray(distributions, dtype=float)
    if d.ndim != 2:
        raise InputError(f"distributions must have shape (n, K), got {d.shape}")
    return d.argmax(axis=1)


def hit_rate(human: np.ndarray | list[int], judge: np.ndarray | list[int]) -> float:
    """Share of items whose judge label equals the human label, in [0, 1].

    ``hit = (1/n) sum_i 1[y_i^J = y_i^H]`` (the blog post's "Hit-Rate", a categorical agreement metric).

    Raises
    ------
    InputError
        Labels not 1-d integer arrays of equal, non-zero length.
    """
    h, j = _labels(human, judge)
    return float(np.mean(h == j))


def cohen_kappa(human: np.ndarray | list[int], judge: np.ndarray | list[int], n_options: int) -> float | None:
    """Cohen's kappa of hard labels, in [-1, 1]; ``sklearn.metrics.cohen_kappa_score`` with
    ``labels=range(n_options)``. ``None`` when undefined (expected agreement 1: both raters
    constant on the same option).

    Raises
    ------
    InputError
        As :func:`hit_rate`.
    """
    h, j = _labels(human, judge)
    return metrics_kappa(h, j, list(range(n_options)))


def kl_divergence(human: np.ndarray, judge: np.ndarray, *, epsilon: float = DEFAULT_EPSILON) -> float:
    """Mean over items of ``KL(O_i^H || O_i^J) = sum_k O^H_ik log(O^H_ik / O^J_ik)`` in nats, >= 0.

    The human -> judge direction, the one the blog post recommends among forced-choice metrics
    (recommendation 4). Computed by ``scipy.stats.entropy(pk=human, qk=judge)`` after the
    judge's rows are floored at ``epsilon`` and renormalised (:data:`DEFAULT_EPSILON`).

    Parameters
    ----------
    human, judge : array of shape (n, K)
        Forced-choice distributions (rows sum to 1).
    epsilon : float in [0, 1/K)

    Raises
    ------
    InputError
        Shapes differ, a row is not a distribution, or ``epsilon`` is out of range.
    """
    h, j = _distributions(human, judge, "kl_divergence", rows_sum_to_one=True)
    if not 0.0 <= epsilon < 1.0 / h.shape[1]:
        raise InputError(f"epsilon must be in [0, 1/K), got {epsilon!r}")
    j = np.maximum(j, epsilon)
    j = j / j.sum(axis=1, keepdims=True)
    return float(np.mean(entropy(h, j, axis=1)))


def js_divergence(human: np.ndarray, judge: np.ndarray) -> float:
    """Mean over items of the Jensen-Shannon divergence (base 2, so in [0, 1]) of forced-choice
    distributions: ``JSD = (KL(H || M) + KL(J || M)) / 2`` with ``M = (H + J) / 2``; computed
    as ``scipy.spatial.distance.jensenshannon(H, J, base=2) ** 2`` (scipy returns the distance,
    the square root of the divergence).

    Raises
    ------
    InputError
        Shapes differ or a row is not a distribution.
    """
    h, j = _distributions(human, judge, "js_divergence", rows_sum_to_one=True)
    return float(np.mean(jensenshannon(h, j, base=2, axis=1) ** 2))


def multilabel_mse(human: np.ndarray, judge: np.ndarray) -> float:
    """``MSE = (1/n) sum_i ||Omega_i^H - Omega_i^J||_2^2``: squared distance of multi-label
    vectors summed over options, averaged over items; in [0, K] (spec, "Measuring Agreement").

    Parameters
    ----------
    human, judge : array of shape (n, K)
        Multi-label vectors, entries in [0, 1] (rows need not sum to 1).

    Raises
    ------
    InputError
        Shapes differ or an entry is outside [0, 1].
    """
    h, j = _distributions(human, judge, "multilabel_mse", rows_sum_to_one=False)
    return float(np.mean(np.sum((h - j) ** 2, axis=1)))
