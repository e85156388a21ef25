"""Bradley-Terry rankings of systems from pairwise comparisons, with tie models and a cluster
bootstrap over prompts.

Model: system ``s`` has strength ``beta_s``; in a comparison of ``i`` and ``j``
``P(i beats j) = sigma(beta_i - beta_j)`` (Bradley & Terry, Biometrika 1952). Strengths are
identified up to a constant and reported centred (``sum_s beta_s = 0``); on Chatbot Arena's
display scale a strength is ``400 beta / ln 10 + 1000`` (:meth:`BradleyTerryFit.arena_scores`).

Ties (``tie_model``):

- ``"half"``: a tie counts as half a win for each side (Chatbot Arena; FastChat's
  ``elo_analysis.py``): the likelihood is the logistic one with the outcome
  ``y = wins + ties / 2`` out of ``n`` comparisons.
- ``"davidson"``: ties are their own outcome, ``P(i) = pi_i / D``, ``P(tie) = nu sqrt(pi_i pi_j) /
  D``, ``D = pi_i + pi_j + nu sqrt(pi_i pi_j)``, ``pi = exp(beta)`` (Davidson, JASA 1970).
- ``"rao_kupper"``: ``P(i) = pi_i / (pi_i + theta pi_j)``, ``P(tie) = (theta² - 1) pi_i pi_j /
  ((pi_i + theta pi_j)(theta pi_i + pi_j))``, ``theta > 1`` (Rao & Kupper, JASA 1967).

Counts may be fractional: the judge's probabilities (``P(a wins)``, ``P(tie)``, ``P(b wins)``
of a comparison) count as expected outcomes, which gives the "soft" Bradley-Terry fit.

The maximum-likelihood fit is ``scipy.optimize.minimize`` on the negative log-likelihood with
its analytic gradient (trust-region Newton with the exact Hessian for ``"half"``, BFGS for the
tie models), one system's strength held at 0 while fitting;
``tests/test_comparisons.py`` checks it against scikit-learn's logistic regression on the
``e_i - e_j`` design and against Hunter's MM algorithm (Ann Stat 2004) to 1e-6.

Intervals (:func:`bootstrap_bradley_terry`): percentile intervals of the strengths over
bootstrap resamples of prompts, every comparison of a resampled prompt kept together (a
cluster bootstrap; Arena-Hard-Auto reports the 5/95% quantiles of 100 resamples). Coverage by
simulation against known strengths: ``scripts/sim_bradley_terry.py``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike
from scipy.optimize import minimize
from scipy.special import expit, log_expit, logsumexp

from autorubric_local.core.errors import InputError
from autorubric_local.metrics.resampling import resample_counts

TIE_MODELS = ("half", "davidson", "rao_kupper")
ARENA_SCALE = 400.0 / math.log(10.0)


@dataclass(frozen=True)
class PairCounts:
    """Outcomes of comparisons per prompt and pair of systems.

    Attributes
    ----------
    systems : tuple of str, length S
    pairs : ndarray of int, shape (K, 2)
        The compared pairs ``(i, j)``, ``i < j``, as indices into ``systems``.
    counts : ndarray of float, shape (P, K, 3)
        Per prompt and pair: (expected) wins of ``i``, ties, wins of ``j``.
    prompts : tuple of str, length P
    """

    systems: tuple[str, ...]
    pairs: np.ndarray
    counts: np.ndarray
    prompts: tuple[str, ...]

    def total(self, prompt_weights: np.ndarray | None = None) -> np.ndarray:
        """Counts summed over prompts (weighted by ``prompt_weights``, shape (P,)): shape (K, 3)."""
        if prompt_weights is None:
            return self.counts.sum(axis=0)
        return np.tensordot(prompt_weights, self.counts, axes=1)


def pair_counts(prompts: Sequence[str], first: Sequence[str], second: Sequence[str], wins: ArrayLike,
                ties: ArrayLike, losses: ArrayLike, systems: Sequence[str] | None = None) -> PairCounts:
    """Gather comparisons into :class:`PairCounts`.

    Parameters
    ----------
    prompts : sequence of str, length n
        The prompt of each comparison (the bootstrap's cluster).
    first, second : sequences of str, length n
        The two systems of each comparison.
    wins, ties, losses : array-like of shape (n,)
        Each comparison's outcome for ``first``: hard (one of them 1, the others 0) or the judge's
        probabilities (non-negative, each comparison's three summing to its weight, usually 1).
    systems : sequence of str, optional
        The systems' order (default: sorted names seen).

    Raises
    ------
    InputError
        Lengths differ, a system compared with itself, a negative or non-finite count, or a
        system in ``first``/``second`` not in ``systems``.
    """
    outcome = np.stack([np.asarray(v, dtype=float) for v in (wins, ties, losses)], axis=1)
    n = len(prompts)
    if not (len(first) == len(second) == outcome.shape[0] == n):
        raise InputError("prompts, first, second and the outcomes must have the same length")
    if not np.all(np.isfinite(outcome)) or (outcome < 0).any():
        raise InputError("comparison outcomes must be finite and non-negative")
    names = tuple(systems) if systems is not None else tuple(sorted(set(first) | set(second)))
    index = {s: k for k, s in enumerate(names)}
    prompt_names = tuple(dict.fromkeys(prompts))
    prompt_index = {p: k for k, p in enumerate(prompt_names)}
    pair_index: dict[tuple[int, int], int] = {}
    rows = []
    for k, (a, b) in enumerate(zip(first, second, strict=True)):
        if a not in index or b not in index:
            raise InputError(f"comparison {k}: system {a if a not in index else b!r} is not among {list(names)}")
        i, j = index[a], index[b]
        if i == j:
            raise InputError(f"comparison {k}: system {a!r} is compared with itself")
        w, t, l = outcome[k]
        if i > j:
            i, j, w, l = j, i, l, w
        rows.append((prompt_index[prompts[k]], pair_index.setdefault((i, j), len(pair_index)), (w, t, l)))
    counts = np.zeros((len(prompt_names), len(pair_index), 3))
    for p, q, value in rows:
        counts[p, q] += value
    pairs = np.array(sorted(pair_index, key=pair_index.__getitem__), dtype=int).reshape(-1, 2)
    return PairCounts(names, pairs, counts, prompt_names)


@dataclass(frozen=True)
class BradleyTerryFit:
    """A Bradley-Terry fit.

    Attributes
    ----------
    systems : tuple of str, length S
    beta : ndarray of shape (S,)
        Strengths, centred to sum 0 (log-odds units: ``beta_i - beta_j`` is the log-odds of ``i``
        beating ``j``, ties aside).
    tie_model : str
    tie_parameter : float or None
        Davidson's ``nu`` or Rao-Kupper's ``theta``; None for ``"half"``.
    log_likelihood : float
    converged : bool
        Whether the gradient of the log-likelihood is at most 1e-6 times the number of
        comparisons at the returned strengths.
    """

    systems: tuple[str, ...]
    beta: np.ndarray
    tie_model: str
    tie_parameter: float | None
    log_likelihood: float
    converged: bool

    def arena_scores(self) -> dict[str, float]:
        """Strengths on Chatbot Arena's display scale, ``400 beta / ln 10 + 1000``."""
        return {s: float(ARENA_SCALE * b + 1000.0) for s, b in zip(self.systems, self.beta, strict=True)}

    def win_probability(self, i: str, j: str) -> float:
        """``sigma(beta_i - beta_j)``: the model's probability that ``i`` beats ``j`` (ties aside)."""
        k = {s: n for n, s in enumerate(self.systems)}
        return float(expit(self.beta[k[i]] - self.beta[k[j]]))


def log_likelihood(beta: np.ndarray, tie: float | None, pairs: np.ndarray, counts: np.ndarray,
                   tie_model: str) -> float:
    """The log-likelihood of strengths ``beta`` (S,) and a tie parameter (Davidson's ``nu``,
    Rao-Kupper's ``theta``; None for ``"half"``) given summed ``counts`` (K, 3) of ``pairs`` (K, 2),
    without the multinomial constant."""
    value, _ = _objective(beta, tie, pairs, counts, tie_model, gradient=False)
    return -value


def _objective(beta: np.ndarray, tie: float | None, pairs: np.ndarray, counts: np.ndarray, tie_model: str,
               gradient: bool = True) -> tuple[float, tuple[np.ndarray, float]]:
    """Negative log-likelihood and its gradient in (beta, the tie parameter's natural scale)."""
    i, j = pairs[:, 0], pairs[:, 1]
    w, t, l = counts[:, 0], counts[:, 1], counts[:, 2]
    bi, bj = beta[i], beta[j]
    size = beta.size
    if tie_model == "half":
        y, n = w + t / 2.0, w + t + l
        d = bi - bj
        ll = float(np.sum(y * log_expit(d) + (n - y) * log_expit(-d)))
        g_pair = y - n * expit(d)
        g = np.bincount(i, g_pair, size) - np.bincount(j, g_pair, size)
        return -ll, (-g, 0.0)
    if tie_model == "davidson":
        theta = math.log(tie)  # type: ignore[arg-type]
        u = np.stack([bi, bj, theta + (bi + bj) / 2.0], axis=1)
        log_d = logsumexp(u, axis=1)
        ll = float(np.sum(w * (bi - log_d) + l * (bj - log_d) + t * (u[:, 2] - log_d)))
        if not gradient:
            return -ll, (np.zeros(size), 0.0)
        s = np.exp(u - log_d[:, None])
        n = w + t + l
        gi = w + t / 2.0 - n * (s[:, 0] + s[:, 2] / 2.0)
        gj = l + t / 2.0 - n * (s[:, 1] + s[:, 2] / 2.0)
        g = np.bincount(i, gi, size) + np.bincount(j, gj, size)
        g_theta = float(np.sum(t - n * s[:, 2]))  # d/d log(nu)
        return -ll, (-g, -g_theta)
    lam = math.log(tie)  # type: ignore[arg-type]  # log theta > 0
    a1 = np.logaddexp(bi, lam + bj)
    a2 = np.logaddexp(lam + bi, bj)
    log_tie = math.log(math.expm1(2.0 * lam))
    ll = float(np.sum(w * (bi - a1) + l * (bj - a2) + t * (log_tie + bi + bj - a1 - a2)))
    if not gradient:
        return -ll, (np.zeros(size), 0.0)
    r1a, r1b = np.exp(bi - a1), np.exp(lam + bj - a1)
    r2a, r2b = np.exp(lam + bi - a2), np.exp(bj - a2)
    gi = w * (1 - r1a) - l * r2a + t * (1 - r1a - r2a)
    gj = -w * r1b + l * (1 - r2b) + t * (1 - r1b - r2b)
    g = np.bincount(i, gi, size) + np.bincount(j, gj, size)
    g_lam = float(np.sum(-w * r1b - l * r2a + t * (2.0 / -math.expm1(-2.0 * lam) - r1b - r2a)))
    return -ll, (-g, -g_lam)


def _reached(size: int, edges: np.ndarray) -> set[int]:
    reached, frontier = {0}, [0]
    while frontier:
        node = frontier.pop()
        for target in edges[edges[:, 0] == node, 1]:
            if int(target) not in reached:
                reached.add(int(target))
                frontier.append(int(target))
    return reached


def check_identified(size: int, pairs: np.ndarray, counts: np.ndarray, systems: Sequence[str]) -> None:
    """Ford's condition (Ford, Amer. Math. Monthly 1957): the maximum-likelihood strengths exist
    (are finite and unique) iff, in the graph with an edge ``i -> j`` wherever ``i`` beat or tied
    ``j`` at least once, every system reaches every other. Checked as: system 0 reaches all, and
    all reach system 0."""
    beats = counts[:, 0] + counts[:, 1] > 0
    loses = counts[:, 2] + counts[:, 1] > 0
    edges = np.concatenate([pairs[beats], pairs[loses][:, ::-1]]).reshape(-1, 2)
    for reached, beaten_side in ((_reached(size, edges), False), (_reached(size, edges[:, ::-1]), True)):
        if len(reached) < size:  # the unreached never beat (forward) or never lost to (backward) the reached
            inside = [systems[k] for k in sorted(reached)]
            outside = [systems[k] for k in range(size) if k not in reached]
            unbeaten, rest = (inside, outside) if beaten_side else (outside, inside)
            raise InputError(f"the comparisons do not link every system both ways: {unbeaten} never lost to "
                             f"{rest}, directly or through a chain, so their strengths have no finite "
                             "maximum-likelihood value")


def fit_bradley_terry(data: PairCounts, *, tie_model: str = "half", prompt_weights: np.ndarray | None = None,
                      start: BradleyTerryFit | None = None) -> BradleyTerryFit:
    """Maximum-likelihood Bradley-Terry strengths (module docstring for the models).

    Parameters
    ----------
    data : PairCounts
    tie_model : {"half", "davidson", "rao_kupper"}, default "half"
    prompt_weights : ndarray of shape (P,), optional
        A weight per prompt (a bootstrap resample's multiplicities); default 1 each.
    start : BradleyTerryFit, optional
        A fit of the same systems and tie model to start from (the bootstrap starts each resample
        at the full fit); it changes the iterations, not the maximum.

    Returns
    -------
    BradleyTerryFit

    Raises
    ------
    InputError
        An unknown tie model, fewer than 2 systems, comparisons that fail Ford's condition (a
        system, or a group of systems, that never beat or never lost to the rest: no finite
        strengths), or
        a tie model with ties as their own outcome when no comparison is a tie (its parameter
        would be 0).

    References
    ----------
    R. A. Bradley and M. E. Terry, Biometrika 39, 1952; L. R. Ford, "Solution of a ranking
    problem from binary comparisons", Amer. Math. Monthly 64, 1957; R. R. Davidson, JASA 65, 1970;
    P. V. Rao and L. L. Kupper, JASA 62, 1967; D. R. Hunter, "MM algorithms for generalized
    Bradley-Terry models", Ann Stat 32, 2004.
    """
    if tie_model not in TIE_MODELS:
        raise InputError(f"tie_model must be one of {list(TIE_MODELS)}, got {tie_model!r}")
    size = len(data.systems)
    if size < 2:
        raise InputError(f"a ranking needs at least 2 systems, got {size}")
    counts = data.total(prompt_weights)
    check_identified(size, data.pairs, counts, data.systems)
    has_tie = tie_model != "half"
    if has_tie and counts[:, 1].sum() <= 0:
        raise InputError(f"tie model {tie_model!r} needs at least one tie; use 'half'")

    def unpack(x: np.ndarray) -> tuple[np.ndarray, float | None]:
        beta = np.concatenate([[0.0], x[: size - 1]])
        if tie_model == "davidson":
            return beta, math.exp(x[-1])
        if tie_model == "rao_kupper":
            return beta, math.exp(math.exp(x[-1]))  # theta = exp(lambda), lambda = exp(eta) > 0
        return beta, None

    def fun(x: np.ndarray) -> tuple[float, np.ndarray]:
        beta, tie = unpack(x)
        value, (g_beta, g_tie) = _objective(beta, tie, data.pairs, counts, tie_model)
        grad = g_beta[1:]
        if tie_model == "rao_kupper":
            g_tie *= math.exp(x[-1])  # d/d eta = d/d lambda * lambda
        return value, (np.concatenate([grad, [g_tie]]) if has_tie else grad)

    x0 = np.zeros(size - 1 + (1 if has_tie else 0))
    if start is not None:
        x0[: size - 1] = start.beta[1:] - start.beta[0]
        if start.tie_parameter is not None and has_tie:
            x0[-1] = math.log(start.tie_parameter if tie_model == "davidson" else math.log(start.tie_parameter))
    elif tie_model == "rao_kupper":
        x0[-1] = math.log(math.log(1.5))
    if tie_model == "half":  # Newton steps in a trust region: the logistic Hessian is cheap and exact
        def hess(x: np.ndarray) -> np.ndarray:
            beta = np.concatenate([[0.0], x])
            i, j = data.pairs[:, 0], data.pairs[:, 1]
            d = beta[i] - beta[j]
            curvature = counts.sum(axis=1) * expit(d) * expit(-d)
            h = np.zeros((size, size))
            np.add.at(h, (i, i), curvature)
            np.add.at(h, (j, j), curvature)
            np.add.at(h, (i, j), -curvature)
            np.add.at(h, (j, i), -curvature)
            return h[1:, 1:]

        result = minimize(fun, x0, jac=True, hess=hess, method="trust-exact", options={"gtol": 1e-9})
    else:
        result = minimize(fun, x0, jac=True, method="BFGS", options={"gtol": 1e-9, "maxiter": 2000})
    beta, tie = unpack(result.x)
    # BFGS reports a loss of precision once the gradient is at rounding level; judge by the gradient
    converged = bool(np.max(np.abs(fun(result.x)[1]), initial=0.0) <= 1e-6 * max(1.0, float(counts.sum())))
    return BradleyTerryFit(data.systems, beta - beta.mean(), tie_model, tie, -float(result.fun), converged)


@dataclass(frozen=True)
class BradleyTerryIntervals:
    """Strengths with percentile cluster-bootstrap intervals.

    Attributes
    ----------
    fit : BradleyTerryFit
        The fit on every prompt.
    ci_low, ci_high : ndarray of shape (S,)
        Interval bounds of the centred strengths at ``confidence``.
    confidence : float
    n_bootstrap : int
        Resamples used (those whose fit converged and linked every system).
    samples : ndarray of shape (n_bootstrap, S)
        The resampled strengths.
    """

    fit: BradleyTerryFit
    ci_low: np.ndarray
    ci_high: np.ndarray
    confidence: float
    n_bootstrap: int
    samples: np.ndarray


def bootstrap_bradley_terry(data: PairCounts, *, n_bootstrap: int = 100, confidence: float = 0.9,
                            seed: int = 0, tie_model: str = "half") -> BradleyTerryIntervals:
    """Bradley-Terry strengths with percentile intervals from a cluster bootstrap over prompts.

    Each resample draws ``P`` prompts with replacement (all comparisons of a drawn prompt move
    together, so a prompt's correlated comparisons never count as independent evidence) and
    refits; the interval is the ``(1 - confidence)/2`` and ``(1 + confidence)/2`` quantiles of the
    resampled centred strengths (Efron & Tibshirani, *An Introduction to the Bootstrap*, 1993,
    ch. 13; the cluster form, e.g. Field & Welsh, JRSS B 2007). A resample that fails Ford's
    condition (no finite strengths) or whose fit does not converge is dropped and not replaced.

    Parameters
    ----------
    data : PairCounts
    n_bootstrap : int >= 10, default 100
    confidence : float in (0, 1), default 0.9
    seed : int
    tie_model : as :func:`fit_bradley_terry`

    Returns
    -------
    BradleyTerryIntervals

    Raises
    ------
    InputError
        As :func:`fit_bradley_terry`; ``n_bootstrap`` below 10, ``confidence`` outside (0, 1), or
        fewer than 10 usable resamples.
    """
    if n_bootstrap < 10:
        raise InputError(f"n_bootstrap must be at least 10, got {n_bootstrap}")
    if not 0 < confidence < 1:
        raise InputError(f"confidence must be in (0, 1), got {confidence}")
    fit = fit_bradley_terry(data, tie_model=tie_model)
    rng = np.random.default_rng(seed)
    n_prompts = len(data.prompts)
    samples = []
    for weights in resample_counts(rng, n_prompts, n_bootstrap):  # a prompt's comparisons move together
        try:
            refit = fit_bradley_terry(data, tie_model=tie_model, prompt_weights=weights, start=fit)
        except InputError:
            continue
        if refit.converged:
            samples.append(refit.beta)
    if len(samples) < 10:
        raise InputError(f"only {len(samples)} of {n_bootstrap} bootstrap resamples could be fitted: "
                         "too few prompts or comparisons for an interval")
    stacked = np.array(samples)
    low, high = np.quantile(stacked, [(1 - confidence) / 2, (1 + confidence) / 2], axis=0)
    return BradleyTerryIntervals(fit, low, high, confidence, len(samples), stacked)


__all__ = ["ARENA_SCALE", "TIE_MODELS", "BradleyTerryFit", "BradleyTerryIntervals", "PairCounts", "check_identified",
           "bootstrap_bradley_terry", "fit_bradley_terry", "log_likelihood", "pair_counts"]
