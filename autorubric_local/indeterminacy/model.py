"""The rating model of rating indeterminacy: response sets, O = F theta, Omega = Lambda theta.

Source: the blog post on Guerdan et al.,
"Validating LLM-as-a-Judge Systems under Rating Indeterminacy", NeurIPS 2025), section "A
Framework for Meta-Evaluation under Rating Indeterminacy" and "Empirical Validation".

Notation (one criterion with ``K`` options, indices ``0..K-1``):

- ``Q``: every non-empty subset of the options (a *response set*), ordered singletons first
  (in option order), then pairs, and so on, each as a sorted tuple. ``|Q| = 2**K - 1``. For
  a binary criterion ``Q = ({0}, {1}, {0, 1})``, the blog post's ``{Yes, No, {Yes, No}}``.
- ``theta_i``: the response-set distribution of item ``i``, shape ``(|Q|,)``.
- ``F``: the forced-choice translation matrix, shape ``(K, |Q|)``, ``F[k, s] = P(forced
  choice = k | response set = Q[s])``; every column sums to 1 and is 0 outside its set.
- ``O_i = F theta_i``: the forced-choice distribution, shape ``(K,)``.
- ``Lambda``: the fixed membership table, shape ``(K, |Q|)``, ``Lambda[k, s] = 1`` iff option
  ``k`` is in ``Q[s]``; ``Omega_i = Lambda theta_i``, the multi-label vector: the probability
  that each option is in a rater's response set (entries in [0, 1], not summing to 1).
- ``R``: a reverse translation, shape ``(|Q|, K)``, ``R[s, k] = P(response set = Q[s] |
  forced choice = k)``; human response sets are built from forced-choice labels as
  ``theta_i = R O_i``. The blog post's sensitivity ``beta`` (the share of raters choosing a
  negative option who also find the positive option reasonable) defines one
  (:func:`beta_translation`); paired ratings estimate another (:func:`estimate_reverse_translation`).

Arrays of many items put the item first: ``theta`` of shape ``(n, |Q|)``, ``O`` and ``Omega``
of shape ``(n, K)``.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from autorubric_local.core.errors import InputError

__all__ = [
    "MAX_OPTIONS",
    "Translation",
    "beta_translation",
    "estimate_beta",
    "estimate_reverse_translation",
    "estimate_translation",
    "estimate_translation_per_item",
    "forced_choice_distribution",
    "membership_matrix",
    "multi_label_vector",
    "response_set_index",
    "response_sets",
    "set_distribution",
]

MAX_OPTIONS = 8
"""Largest number of options handled (``|Q| = 255``); more is refused, not slowly enumerated."""


def _check_k(n_options: int) -> int:
    if not isinstance(n_options, (int, np.integer)) or isinstance(n_options, bool) or not 2 <= n_options <= MAX_OPTIONS:
        raise InputError(f"n_options must be an integer in [2, {MAX_OPTIONS}], got {n_options!r}")
    return int(n_options)


@lru_cache(maxsize=None)
def response_sets(n_options: int) -> tuple[tuple[int, ...], ...]:
    """``Q``: every non-empty subset of ``range(n_options)``, by size, then lexicographically.

    Raises
    ------
    InputError
        ``n_options`` not an integer in [2, 8].
    """
    k = _check_k(n_options)
    return tuple(s for size in range(1, k + 1) for s in itertools.combinations(range(k), size))


def response_set_index(options: frozenset[int] | set[int] | tuple[int, ...], n_options: int) -> int:
    """Position of a response set in ``Q`` (:func:`response_sets`).

    Raises
    ------
    InputError
        An empty set or an option outside ``range(n_options)``.
    """
    key = tuple(sorted(set(options)))
    try:
        return _set_positions(_check_k(n_options))[key]
    except KeyError:
        raise InputError(f"not a response set of {n_options} options: {set(options) or '{}'} "
                         f"(a non-empty subset of 0..{n_options - 1})") from None


@lru_cache(maxsize=None)
def _set_positions(n_options: int) -> dict[tuple[int, ...], int]:
    return {s: i for i, s in enumerate(response_sets(n_options))}


def membership_matrix(n_options: int) -> np.ndarray:
    """``Lambda`` of shape ``(K, |Q|)``: 1 where the option is in the set, else 0 (float)."""
    sets = response_sets(n_options)
    table = np.zeros((n_options, len(sets)))
    for s, members in enumerate(sets):
        table[list(members), s] = 1.0
    return table


def _as_rows(values: np.ndarray | list[float], width: int, name: str) -> np.ndarray:
    """A 2-d float array ``(n, width)`` of non-negative rows summing to 1 (a 1-d row allowed)."""
    a = np.asarray(values, dtype=float)
    if a.ndim == 1:
        a = a[None, :]
    if a.ndim != 2 or a.shape[1] != width:
        raise InputError(f"{name} must have shape (n, {width}), got {np.shape(values)}")
    if not np.all(np.isfinite(a)) or np.any(a < -1e-9) or not np.allclose(a.sum(axis=1), 1.0, atol=1e-6):
        bad = int(np.flatnonzero(~np.isfinite(a).all(axis=1) | (a < -1e-9).any(axis=1)
                                 | ~np.isclose(np.nan_to_num(a).sum(axis=1), 1.0, atol=1e-6))[0])
        raise InputError(f"{name} row {bad} is not a probability distribution: {a[bad].tolist()}")
    return np.clip(a, 0.0, None)


def multi_label_vector(theta: np.ndarray | list[float], n_options: int) -> np.ndarray:
    """``Omega = theta Lambda^T``: per item, the probability each option is in the response set.

    Parameters
    ----------
    theta : array of shape (n, 2**K - 1) or (2**K - 1,)
        Response-set distributions in ``Q`` order.
    n_options : int

    Returns
    -------
    ndarray of shape (n, K), entries in [0, 1]

    Raises
    ------
    InputError
        Wrong shape, or a row that is not a distribution.
    """
    q = len(response_sets(n_options))
    return _as_rows(theta, q, "theta") @ membership_matrix(n_options).T


def forced_choice_distribution(theta: np.ndarray | list[float], translation: np.ndarray) -> np.ndarray:
    """``O = F theta`` for every item: the forced-choice distribution, shape ``(n, K)``.

    ``translation`` is one pooled ``F`` of shape ``(K, |Q|)`` or one per item, ``(n, K, |Q|)``.

    Raises
    ------
    InputError
        Shapes that do not fit, or a column of ``F`` that is not a distribution over its set.
    """
    f = np.asarray(translation, dtype=float)
    k = f.shape[-2] if f.ndim >= 2 else 0
    q = len(response_sets(k)) if 2 <= k <= MAX_OPTIONS else -1
    if f.ndim not in (2, 3) or f.shape[-1] != q:
        raise InputError(f"F must have shape (K, 2**K - 1) or (n, K, 2**K - 1), got {f.shape}")
    _check_translation(f)
    t = _as_rows(theta, q, "theta")
    if f.ndim == 2:
        return t @ f.T
    if f.shape[0] != t.shape[0]:
        raise InputError(f"per-item F has {f.shape[0]} items, theta {t.shape[0]}")
    return np.einsum("iks,is->ik", f, t)


def _check_translation(f: np.ndarray) -> None:
    k = f.shape[-2]
    outside = 1.0 - membership_matrix(k)
    if np.any(f < -1e-9) or not np.allclose(f.sum(axis=-2), 1.0, atol=1e-6) or np.any(np.abs(f * outside) > 1e-9):
        raise InputError("F: every column must be a distribution over the options of its response set")


@dataclass(frozen=True)
class Translation:
    """An estimated forced-choice translation matrix.

    Attributes
    ----------
    matrix : ndarray of shape (K, 2**K - 1)
        ``F[k, s] = P(forced choice = k | response set = Q[s])``.
    counts : ndarray of int, shape (K, 2**K - 1)
        The paired ratings behind each entry.
    observed : ndarray of bool, shape (2**K - 1,)
        Columns with at least one pair; the others are uniform over their set (a stated prior,
        not an estimate).
    n_pairs : int
        Pairs used.
    n_inconsistent : int
        Pairs left out because the forced choice was not in the response set.
    """

    matrix: np.ndarray
    counts: np.ndarray
    observed: np.ndarray
    n_pairs: int
    n_inconsistent: int


def _check_pairs(forced: np.ndarray | list[int], sets: np.ndarray | list[int], n_options: int) -> tuple[np.ndarray, np.ndarray]:
    f = np.asarray(forced)
    s = np.asarray(sets)
    q = len(response_sets(n_options))
    if f.ndim != 1 or s.ndim != 1 or f.size != s.size or f.size == 0:
        raise InputError(f"forced and sets must be 1-d, non-empty and of equal length, got {f.shape} and {s.shape}")
    if not (np.issubdtype(f.dtype, np.integer) and np.issubdtype(s.dtype, np.integer)):
        raise InputError("forced (option indices) and sets (positions in Q) must be integers")
    if f.min() < 0 or f.max() >= n_options:
        raise InputError(f"forced: option index outside 0..{n_options - 1}")
    if s.min() < 0 or s.max() >= q:
        raise InputError(f"sets: response-set position outside 0..{q - 1}")
    return f.astype(int), s.astype(int)


def estimate_translation(forced: np.ndarray | list[int], sets: np.ndarray | list[int], n_options: int,
                         *, smoothing: float = 0.0) -> Translation:
    """Pooled ``F`` from paired ratings: the same rater gave forced choice ``forced[j]`` and
    response set ``Q[sets[j]]`` on the same item (spec: "estimate the translation matrix F-hat
    using just 100 paired forced-choice and response set ratings").

    ``F[k, s] = (count(k, s) + smoothing) / (count(s) + smoothing * |Q[s]|)`` for ``k`` in
    ``Q[s]``, else 0. A column without pairs is uniform over its set (``observed`` False).

    Parameters
    ----------
    forced : array of int, shape (m,)
        Forced-choice option indices.
    sets : array of int, shape (m,)
        Response-set positions in ``Q`` (:func:`response_set_index`).
    n_options : int
    smoothing : float, default 0
        Additive (Laplace) pseudo-count per option of a set, >= 0.

    Raises
    ------
    InputError
        Mismatched or out-of-range input, negative smoothing, or no consistent pair at all.
    """
    f, s = _check_pairs(forced, sets, n_options)
    if not smoothing >= 0:
        raise InputError(f"smoothing must be >= 0, got {smoothing!r}")
    lam = membership_matrix(n_options)
    consistent = lam[f, s] > 0
    if not consistent.any():
        raise InputError("no pair has its forced choice inside its response set")
    counts = np.zeros_like(lam, dtype=int)
    np.add.at(counts, (f[consistent], s[consistent]), 1)
    totals = counts.sum(axis=0)
    smoothed = (counts + smoothing) * lam
    denominators = smoothed.sum(axis=0)
    uniform = lam / lam.sum(axis=0)
    matrix = np.where(denominators > 0, smoothed / np.where(denominators > 0, denominators, 1.0), uniform)
    return Translation(matrix, counts, totals > 0, int(consistent.sum()), int((~consistent).sum()))


def estimate_translation_per_item(forced: np.ndarray | list[int], sets: np.ndarray | list[int],
                                  items: np.ndarray | list[int], n_items: int, n_options: int) -> np.ndarray:
    """One ``F_i`` per item from that item's paired ratings, shape ``(n_items, K, |Q|)``.

    A column with no pair on item ``i`` takes the pooled estimate's column
    (:func:`estimate_translation` over all pairs), so items with few ratings borrow strength.

    Raises
    ------
    InputError
        As :func:`estimate_translation`, or an item index outside ``0..n_items-1``.
    """
    f, s = _check_pairs(forced, sets, n_options)
    it = np.asarray(items)
    if it.shape != f.shape or not np.issubdtype(it.dtype, np.integer) or it.min() < 0 or it.max() >= n_items:
        raise InputError(f"items must be integer indices in 0..{n_items - 1}, one per pair")
    pooled = estimate_translation(f, s, n_options).matrix
    out = np.repeat(pooled[None], n_items, axis=0)
    lam = membership_matrix(n_options)
    for i in np.unique(it):
        mine = (it == i) & (lam[f, s] > 0)
        counts = np.zeros_like(lam)
        np.add.at(counts, (f[mine], s[mine]), 1.0)
        seen = counts.sum(axis=0) > 0
        out[i][:, seen] = counts[:, seen] / counts[:, seen].sum(axis=0)
    return out


def set_distribution(sets: np.ndarray | list[int], n_options: int) -> np.ndarray:
    """Empirical ``theta`` of response-set positions, shape ``(|Q|,)``.

    Raises
    ------
    InputError
        Empty input or a position outside ``Q``.
    """
    s = np.asarray(sets)
    q = len(response_sets(n_options))
    if s.ndim != 1 or s.size == 0 or not np.issubdtype(s.dtype, np.integer) or s.min() < 0 or s.max() >= q:
        raise InputError(f"sets must be a non-empty 1-d array of positions in 0..{q - 1}")
    return np.bincount(s, minlength=q) / s.size


def beta_translation(n_options: int, positive: int, beta: float) -> np.ndarray:
    """``R_beta`` of shape ``(|Q|, K)``: the blog post's sensitivity model of human response sets.

    A rater whose forced choice is the positive option has response set ``{positive}``; one
    whose forced choice is another option ``k`` has ``{k, positive}`` with probability
    ``beta`` and ``{k}`` otherwise (spec, "Empirical Validation": "beta^H = 0.3 indicates that
    30% of raters who chose 'not toxic' actually considered 'toxic' to also be reasonable";
    ``beta = 0`` is no indeterminacy). For ``K > 2`` this extends the binary model option-wise.
    ``Omega = Lambda R O`` then has ``Omega[positive] = O[positive] + beta * (1 - O[positive])``
    and ``Omega[k] = O[k]`` for every other option.

    Raises
    ------
    InputError
        ``beta`` outside [0, 1] or ``positive`` outside ``0..K-1``.
    """
    k = _check_k(n_options)
    if not isinstance(positive, (int, np.integer)) or not 0 <= positive < k:
        raise InputError(f"positive must be an option index in 0..{k - 1}, got {positive!r}")
    if not (isinstance(beta, (int, float, np.floating)) and 0.0 <= float(beta) <= 1.0):
        raise InputError(f"beta must be in [0, 1], got {beta!r}")
    r = np.zeros((len(response_sets(k)), k))
    for option in range(k):
        if option == positive:
            r[response_set_index({option}, k), option] = 1.0
        else:
            r[response_set_index({option}, k), option] = 1.0 - beta
            r[response_set_index({option, positive}, k), option] += beta
    return r


def estimate_reverse_translation(forced: np.ndarray | list[int], sets: np.ndarray | list[int],
                                 n_options: int) -> np.ndarray:
    """``R-hat`` of shape ``(|Q|, K)`` from paired ratings: ``P(response set | forced choice)``.

    Equivalent to ``F-hat`` by Bayes' rule with the pairs' pooled ``theta-hat``; this is the form
    that turns forced-choice labels into response sets (``theta_i = R O_i``). A forced choice
    never seen in the pairs maps to its singleton set. Inconsistent pairs are left out.

    Raises
    ------
    InputError
        As :func:`estimate_translation`.
    """
    f, s = _check_pairs(forced, sets, n_options)
    lam = membership_matrix(n_options)
    keep = lam[f, s] > 0
    counts = np.zeros((lam.shape[1], n_options))
    np.add.at(counts, (s[keep], f[keep]), 1.0)
    r = np.zeros_like(counts)
    for option in range(n_options):
        total = counts[:, option].sum()
        if total > 0:
            r[:, option] = counts[:, option] / total
        else:
            r[response_set_index({option}, n_options), option] = 1.0
    return r


def estimate_beta(forced: np.ndarray | list[int], sets: np.ndarray | list[int], n_options: int,
                  positive: int) -> float | None:
    """``beta-hat``: the share of pairs whose forced choice is not ``positive`` but whose response
    set contains it (spec, Finding 1: each judge's sensitivity from its forced-choice and
    response-set ratings). ``None`` when no pair has a non-positive forced choice.

    Raises
    ------
    InputError
        As :func:`estimate_translation`, or ``positive`` out of range.
    """
    f, s = _check_pairs(forced, sets, n_options)
    if not 0 <= positive < n_options:
        raise InputError(f"positive must be an option index in 0..{n_options - 1}, got {positive!r}")
    negative = f != positive
    if not negative.any():
        return None
    return float(membership_matrix(n_options)[positive, s[negative]].mean())
