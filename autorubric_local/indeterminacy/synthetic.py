"""Synthetic ratings drawn from known response-set distributions and translation matrices.

Used by the tests (recovery of ``F``, the blog post's qualitative finding) and for trying the
analysis without a model. Everything is seeded; nothing here reads a run.

The world of :func:`simulate_binary_world` (binary criterion, option 0 positive, option 1
negative) follows the blog post's sensitivity model (blog post on "Validating LLM-as-a-Judge Systems under Rating
Indeterminacy", NeurIPS 2025, "Empirical Validation"): item ``i`` has a human forced-choice
probability ``p_i ~ Beta(a, b)``
of the positive option and true response-set distribution
``theta_i = [p_i, (1 - p_i)(1 - beta), (1 - p_i) beta]`` over ``({pos}, {neg}, {pos, neg})``;
humans resolve ``{pos, neg}`` to the negative option (so ``O_i^H = [p_i, 1 - p_i]`` and
``beta`` is exactly the human sensitivity ``beta^H``). A simulated judge sees the item through
logit noise (``p_i^J = expit(logit(p_i) + noise * z_i)``, the same ``beta``), resolves
``{pos, neg}`` to the positive option with probability ``resolve_positive`` (its own ``F``),
and either reports its response sets or, when ``collapse``, only its forced choice (a judge
that hides indeterminacy). Each judge gives ``n_samples`` paired forced-choice/response-set
ratings per item.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
from scipy.special import expit, logit

from autorubric_local.core.errors import InputError
from autorubric_local.indeterminacy.elicitation import JudgeRatings
from autorubric_local.indeterminacy.model import membership_matrix, response_sets

__all__ = ["BinaryWorld", "SimulatedJudge", "draw_paired_ratings", "simulate_binary_world"]


def draw_paired_ratings(theta: np.ndarray, translation: np.ndarray, n_ratings: int,
                        rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Draw ``n_ratings`` paired ratings per item: a response set ``S ~ theta_i``, then a forced
    choice ``k ~ F[:, S]``.

    Parameters
    ----------
    theta : array of shape (n, 2**K - 1)
    translation : array of shape (K, 2**K - 1) or (n, K, 2**K - 1)
    n_ratings : int >= 1
    rng : numpy Generator

    Returns
    -------
    (sets, forced) : two int arrays of shape (n, n_ratings)
        Response-set positions in ``Q`` and forced-choice option indices.

    Raises
    ------
    InputError
        Shapes that do not fit or ``n_ratings < 1``.
    """
    t = np.asarray(theta, dtype=float)
    f = np.asarray(translation, dtype=float)
    k = f.shape[-2]
    q = len(response_sets(k))
    if t.ndim != 2 or t.shape[1] != q or f.shape[-1] != q or (f.ndim == 3 and f.shape[0] != t.shape[0]):
        raise InputError(f"theta {t.shape} and F {f.shape} do not fit")
    if n_ratings < 1:
        raise InputError(f"n_ratings must be >= 1, got {n_ratings}")
    n = t.shape[0]
    sets = _categorical(np.repeat((t / t.sum(axis=1, keepdims=True))[:, None, :], n_ratings, axis=1), rng)
    per_item = np.broadcast_to(f, (n, k, q)) if f.ndim == 2 else f
    # column S of F_i for every drawn set: shape (n, n_ratings, K)
    columns = np.take_along_axis(per_item.transpose(0, 2, 1), sets[:, :, None], axis=1)
    forced = _categorical(columns, rng)
    return sets, forced


def _categorical(probabilities: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """One draw per row of the last axis (inverse CDF of one uniform each; the same draws as
    ``Generator.choice(K, p=row)`` one row at a time)."""
    cdf = np.cumsum(probabilities, axis=-1)
    u = rng.random(cdf.shape[:-1] + (1,)) * cdf[..., -1:]
    return np.minimum((cdf <= u).sum(axis=-1), probabilities.shape[-1] - 1)


@dataclass(frozen=True)
class SimulatedJudge:
    """A simulated judge of :func:`simulate_binary_world` (module docstring).

    Attributes
    ----------
    noise : float >= 0
        Standard deviation of the logit noise on the item's positive probability.
    resolve_positive : float in [0, 1]
        ``F[pos, {pos, neg}]``: how often it resolves an indeterminate item to the positive option.
    collapse : bool
        Report only the forced choice as the response set.
    """

    noise: float
    resolve_positive: float
    collapse: bool = False


@dataclass(frozen=True)
class BinaryWorld:
    """Ratings drawn by :func:`simulate_binary_world`.

    Attributes
    ----------
    p : ndarray of shape (n,)
        Each item's human forced-choice probability of the positive option.
    theta : ndarray of shape (n, 3)
        True human response-set distributions.
    human_labels : ndarray of int, shape (n, n_raters)
        Human forced-choice labels (0 positive, 1 negative).
    judges : dict of str to JudgeRatings
        Each judge's empirical ``O^J`` and ``theta^J`` over its samples.
    judge_pairs : dict of str to (sets, forced)
        Each judge's paired ratings, int arrays of shape (n, n_samples).
    """

    p: np.ndarray
    theta: np.ndarray
    human_labels: np.ndarray
    judges: dict[str, JudgeRatings]
    judge_pairs: dict[str, tuple[np.ndarray, np.ndarray]]

    @property
    def human_forced(self) -> np.ndarray:
        """The humans' forced-choice distribution per item (label shares), shape (n, 2)."""
        return np.stack([(self.human_labels == k).mean(axis=1) for k in (0, 1)], axis=1)

    @property
    def true_omega(self) -> np.ndarray:
        """``Omega* = theta Lambda^T``, shape (n, 2)."""
        return self.theta @ membership_matrix(2).T


def _binary_theta(p: np.ndarray, beta: float) -> np.ndarray:
    return np.stack([p, (1 - p) * (1 - beta), (1 - p) * beta], axis=1)


def simulate_binary_world(n_items: int, judges: Mapping[str, SimulatedJudge], *, beta: float,
                          n_human_raters: int = 5, n_samples: int = 20, a: float = 1.0, b: float = 1.0,
                          seed: int = 0) -> BinaryWorld:
    """Draw humans' and judges' ratings of ``n_items`` binary items (module docstring).

    Raises
    ------
    InputError
        ``beta`` outside [0, 1], or a count below 1.
    """
    if not 0.0 <= beta <= 1.0:
        raise InputError(f"beta must be in [0, 1], got {beta!r}")
    if min(n_items, n_human_raters, n_samples) < 1:
        raise InputError("n_items, n_human_raters and n_samples must be >= 1")
    rng = np.random.default_rng(seed)
    p = np.clip(rng.beta(a, b, size=n_items), 1e-4, 1 - 1e-4)
    theta = _binary_theta(p, beta)
    human_f = np.array([[1.0, 0.0, 0.0], [0.0, 1.0, 1.0]])  # humans resolve {pos, neg} to neg
    _, human_labels = draw_paired_ratings(theta, human_f, n_human_raters, rng)
    out: dict[str, JudgeRatings] = {}
    pairs: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    for name, judge in judges.items():
        seen = expit(logit(p) + judge.noise * rng.standard_normal(n_items))
        f = np.array([[1.0, 0.0, judge.resolve_positive], [0.0, 1.0, 1.0 - judge.resolve_positive]])
        sets, forced = draw_paired_ratings(_binary_theta(seen, beta), f, n_samples, rng)
        if judge.collapse:
            sets = forced.copy()  # positions 0 and 1 in Q are the singletons {0} and {1}
        pairs[name] = (sets, forced)
        out[name] = JudgeRatings(
            np.stack([(forced == k).mean(axis=1) for k in (0, 1)], axis=1),
            np.stack([(sets == s).mean(axis=1) for s in range(3)], axis=1),
        )
    return BinaryWorld(p, theta, human_labels, out, pairs)
