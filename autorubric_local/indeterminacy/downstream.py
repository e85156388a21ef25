"""Downstream metrics, rankings of judges and the regret of choosing by an agreement metric.

Source: the blog post on "Validating LLM-as-a-Judge Systems under Rating Indeterminacy"
(NeurIPS 2025; "Content Filtering", "Prevalence Estimation", Findings 2-3). With the threshold function
``s_k^tau(Y) = 1[Y_k >= tau]`` on a multi-label vector ``Y`` (option ``k`` the *positive*
option, e.g. "toxic" or MET):

- decision consistency ``C^tau(Y^J, Y^H) = E_i[ 1[s_k^tau(Y_i^J) = s_k^tau(Y_i^H)] ]``, in
  [0, 1], higher is better;
- estimation (prevalence) bias ``B^tau(Y^J, Y^H) = E_i[s_k^tau(Y_i^J)] - E_i[s_k^tau(Y_i^H)]``,
  in [-1, 1]; its absolute value, lower is better, ranks judges.

Regret of an agreement metric: choose the judge it ranks best; regret is how much worse that
judge is on a downstream metric than the best judge on that metric (``>= 0``; 0 when the
metric chose a judge that is best downstream).
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from autorubric_local.core.errors import InputError

__all__ = ["decision_consistency", "estimation_bias", "filter_decisions", "rank_judges", "regret"]


def filter_decisions(omega: np.ndarray, positive: int, tau: float) -> np.ndarray:
    """``s_k^tau``: 1 where ``omega[:, positive] >= tau``, else 0; shape ``(n,)`` of int.

    Raises
    ------
    InputError
        ``omega`` not of shape (n, K), ``positive`` out of range, or ``tau`` outside [0, 1].
    """
    y = np.asarray(omega, dtype=float)
    if y.ndim != 2 or y.shape[0] == 0:
        raise InputError(f"multi-label vectors must have shape (n, K), got {y.shape}")
    if not isinstance(positive, (int, np.integer)) or not 0 <= positive < y.shape[1]:
        raise InputError(f"positive must be an option index in 0..{y.shape[1] - 1}, got {positive!r}")
    if not (isinstance(tau, (int, float, np.floating)) and 0.0 <= float(tau) <= 1.0):
        raise InputError(f"tau must be in [0, 1], got {tau!r}")
    # A small tolerance so that a vector built as 0.1 + 0.2 still reaches tau = 0.3.
    return (y[:, positive] >= float(tau) - 1e-12).astype(int)


def _pair(judge: np.ndarray, human: np.ndarray) -> None:
    if np.shape(judge) != np.shape(human):
        raise InputError(f"judge and human multi-label vectors differ in shape: {np.shape(judge)} and {np.shape(human)}")


def decision_consistency(judge: np.ndarray, human: np.ndarray, positive: int, tau: float) -> float:
    """``C^tau``: share of items where judge and humans make the same filter decision, in [0, 1].

    Parameters
    ----------
    judge, human : array of shape (n, K)
        Multi-label vectors ``Omega^J`` and ``Omega^H``.
    positive : int
        Option index ``k`` thresholded.
    tau : float in [0, 1]
        Risk tolerance: filter when ``Omega_k >= tau``.

    Raises
    ------
    InputError
        As :func:`filter_decisions`, or shapes that differ.
    """
    _pair(judge, human)
    return float(np.mean(filter_decisions(judge, positive, tau) == filter_decisions(human, positive, tau)))


def estimation_bias(judge: np.ndarray, human: np.ndarray, positive: int, tau: float) -> float:
    """``B^tau``: the judge's estimated prevalence minus the humans', in [-1, 1] (negative: the
    judge under-estimates). Arguments as :func:`decision_consistency`."""
    _pair(judge, human)
    return float(filter_decisions(judge, positive, tau).mean() - filter_decisions(human, positive, tau).mean())


def rank_judges(values: Mapping[str, float | None], *, higher_is_better: bool) -> list[str]:
    """Judge ids from best to worst by ``values``; ties keep the mapping's order, ``None`` last.

    Raises
    ------
    InputError
        An empty mapping.
    """
    if not values:
        raise InputError("no judges to rank")
    defined = [(name, v) for name, v in values.items() if v is not None and np.isfinite(v)]
    order = sorted(defined, key=lambda nv: -nv[1] if higher_is_better else nv[1])
    return [name for name, _ in order] + [name for name, v in values.items() if v is None or not np.isfinite(v)]


def regret(chosen: str, downstream: Mapping[str, float | None], *, higher_is_better: bool) -> float | None:
    """How much worse the ``chosen`` judge is than the best judge on ``downstream`` (>= 0).

    ``higher_is_better`` for consistency; pass absolute biases with ``higher_is_better=False``.
    ``None`` when the chosen judge's downstream value is undefined.

    Raises
    ------
    InputError
        ``chosen`` not among the judges.
    """
    if chosen not in downstream:
        raise InputError(f"judge {chosen!r} not among {list(downstream)}")
    mine = downstream[chosen]
    defined = [v for v in downstream.values() if v is not None]
    if mine is None or not defined:
        return None
    best = max(defined) if higher_is_better else min(defined)
    return float(best - mine) if higher_is_better else float(mine - best)
