"""Style control: Bradley-Terry strengths with the responses' style as covariates.

A judge (or a crowd) may prefer longer or more formatted answers whatever their substance.
Style control (LMSYS, "Does style matter? Disentangling style and substance in Chatbot Arena",
blog, Aug 2024; Li et al. 2024, "From Crowdsourced Data to High-Quality Benchmarks: Arena-Hard
and BenchBuilder", arXiv 2406.11939, whose ``show_result.py`` applies it to Arena-Hard-Auto)
fits one logistic regression in which a comparison of ``i`` and ``j`` is won by ``i`` with
probability ``sigma(beta_i - beta_j + gamma . z_ij)``:

- ``z_ij`` the style features of the comparison, each the normalised difference of one count
  between ``i``'s and ``j``'s responses (:func:`style_features`): length in characters,
  ``(L_i - L_j) / (L_i + L_j)``; markdown headers, list items and bold spans,
  ``(c_i - c_j) / (c_i + c_j + 1)`` (LMSYS's form, ``+1`` so that two plain responses differ by
  0); each feature then scaled by its root mean square over the comparisons, so ``gamma`` is
  the log-odds per standard deviation (about 0) of the difference. LMSYS also subtracts the
  mean; here it is not subtracted, because a difference is antisymmetric (naming the pair the
  other way round flips its sign) and a centred feature would add a constant to every
  comparison that favours whichever system is named first (in Chatbot Arena the order of a
  battle is random, so its mean is near 0 and the two agree). A feature that is 0 in every
  comparison (no response has a header) is left out: it has no coefficient.
- ``beta`` the style-controlled strengths, centred and shown on Chatbot Arena's scale
  (``400 beta / ln 10 + 1000``) as the plain ranking is.

Counts (:func:`style_counts`): characters of the whole response; markdown elements outside
fenced code blocks: header lines (``#`` to ``######`` and a space), list items (``-``, ``*``,
``+`` or ``1.`` and a space, indented or not), bold spans (``**x**``, ``__x__``), the patterns
Arena-Hard-Auto's ``add_markdown_info.py`` counts. Length is in characters, not tokens: no
tokenizer is needed, and a judge's tokens differ by judge.

Outcomes with ties (the judge's probabilities, or a swap-rule tie) enter as half a win each
way, the logistic likelihood of :mod:`.bradley_terry`'s ``"half"`` model: each comparison is
two rows of the design, ``y = 1`` weighted ``wins + ties / 2`` and ``y = 0`` weighted
``losses + ties / 2``. The fit is scikit-learn's ``LogisticRegression`` with no penalty
(``C = inf``) and no intercept, Newton-Cholesky, on the design ``[e_i - e_j (first system's
column dropped), z]``; Ford's condition is checked on the systems' part first.

Intervals: percentile cluster bootstrap over prompts (a prompt's comparisons move together),
the scaling fixed at the full data's, as :func:`~.bradley_terry.bootstrap_bradley_terry`
does for the plain fit. Coverage of the 90% intervals of the strengths and of ``gamma`` by
simulation with a judge that favours longer answers: ``tests/test_compare_style.py`` and
``scripts/sim_style_control.py``.
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from autorubric_local.comparisons.bradley_terry import ARENA_SCALE, check_identified
from autorubric_local.core.errors import InputError
from autorubric_local.metrics.resampling import resample_counts

__all__ = ["COUNTS", "FEATURES", "StyleComparisons", "StyleControlledFit", "StyleControlledIntervals",
           "StyleCoefficient", "StyleRanking", "StyleSystemRank", "bootstrap_style_controlled",
           "fit_style_controlled", "style_comparisons", "style_counts", "style_features"]

COUNTS = ("characters", "headers", "list_items", "bold")
"""The counts of one response (:func:`style_counts`)."""

FEATURES = ("length", "headers", "list_items", "bold")
"""The style features of a comparison (:func:`style_features`), one per count."""

_CODE = re.compile(r"```.*?```", re.S)
_HEADER = re.compile(r"^#{1,6}\s", re.M)
_LIST = re.compile(r"^\s*(?:[-*+]|\d+\.)\s", re.M)
_BOLD = re.compile(r"\*\*[^*\n]+\*\*|__[^_\n]+__")


def style_counts(text: str) -> dict[str, int]:
    """A response's style counts (module docstring): ``characters`` of the whole text;
    ``headers``, ``list_items`` and ``bold`` outside fenced code blocks."""
    prose = _CODE.sub("", text)
    return {"characters": len(text), "headers": len(_HEADER.findall(prose)),
            "list_items": len(_LIST.findall(prose)), "bold": len(_BOLD.findall(prose))}


def style_features(first: Mapping[str, int], second: Mapping[str, int]) -> np.ndarray:
    """The normalised differences, ``first`` minus ``second``, of two responses' counts.

    Returns
    -------
    ndarray of shape (4,)
        :data:`FEATURES`: ``(L_1 - L_2) / (L_1 + L_2)`` (0 when both are empty), then
        ``(c_1 - c_2) / (c_1 + c_2 + 1)`` for headers, list items and bold; each in (-1, 1),
        and each changes sign when ``first`` and ``second`` swap.
    """
    l1, l2 = float(first["characters"]), float(second["characters"])
    length = (l1 - l2) / (l1 + l2) if l1 + l2 > 0 else 0.0
    rest = [(float(first[k]) - float(second[k])) / (float(first[k]) + float(second[k]) + 1.0) for k in COUNTS[1:]]
    return np.array([length, *rest])


@dataclass(frozen=True)
class StyleComparisons:
    """Comparisons with their style features, ready to fit.

    Attributes
    ----------
    systems : tuple of str, length S
    prompts : tuple of str, length P
    prompt_index, first, second : ndarray of int, shape (n,)
        Each comparison's prompt and systems (indices).
    counts : ndarray of float, shape (n, 3)
        Wins of ``first``, ties, wins of ``second`` (fractional counts allowed).
    features : tuple of str
        The features kept (those that vary), a subset of :data:`FEATURES` in its order.
    z : ndarray of float, shape (n, F)
        The kept features, each divided by ``sd``.
    sd : ndarray of float, shape (F,)
        The raw features' root mean square (their standard deviation about 0).
    """

    systems: tuple[str, ...]
    prompts: tuple[str, ...]
    prompt_index: np.ndarray
    first: np.ndarray
    second: np.ndarray
    counts: np.ndarray
    features: tuple[str, ...]
    z: np.ndarray
    sd: np.ndarray


def style_comparisons(prompts: Sequence[str], first: Sequence[str], second: Sequence[str], wins: ArrayLike,
                      ties: ArrayLike, losses: ArrayLike, raw_features: ArrayLike,
                      systems: Sequence[str] | None = None, names: Sequence[str] = FEATURES) -> StyleComparisons:
    """Gather comparisons and their raw style features, scaling each feature by its root mean
    square (module docstring: not centred).

    Parameters
    ----------
    prompts, first, second : sequences of str, length n
    wins, ties, losses : array-like of shape (n,)
        The outcome for ``first``, non-negative.
    raw_features : array-like of shape (n, F)
        :func:`style_features` of each comparison (``first`` minus ``second``).
    systems : sequence of str, optional
        Their order (default: sorted names seen).
    names : sequence of str, length F
        The features' names.

    Raises
    ------
    InputError
        Lengths differ, a system compared with itself or not in ``systems``, a negative or
        non-finite count or feature.
    """
    counts = np.stack([np.asarray(v, dtype=float) for v in (wins, ties, losses)], axis=1)
    raw = np.asarray(raw_features, dtype=float).reshape(len(prompts), -1)
    n = len(prompts)
    if not (len(first) == len(second) == counts.shape[0] == n) or raw.shape[1] != len(names):
        raise InputError("prompts, first, second, the outcomes and the features must agree in length")
    if not np.all(np.isfinite(counts)) or (counts < 0).any() or not np.all(np.isfinite(raw)):
        raise InputError("comparison outcomes must be finite and non-negative, and features finite")
    ordered = tuple(systems) if systems is not None else tuple(sorted(set(first) | set(second)))
    index = {s: k for k, s in enumerate(ordered)}
    for k, (a, b) in enumerate(zip(first, second, strict=True)):
        if a not in index or b not in index:
            raise InputError(f"comparison {k}: system {a if a not in index else b!r} is not among {list(ordered)}")
        if a == b:
            raise InputError(f"comparison {k}: system {a!r} is compared with itself")
    prompt_names = tuple(dict.fromkeys(prompts))
    prompt_index = {p: k for k, p in enumerate(prompt_names)}
    sd = np.sqrt(np.mean(raw ** 2, axis=0))
    keep = sd > 1e-12
    return StyleComparisons(ordered, prompt_names, np.array([prompt_index[p] for p in prompts], dtype=int),
                            np.array([index[a] for a in first], dtype=int),
                            np.array([index[b] for b in second], dtype=int), counts,
                            tuple(name for name, kept in zip(names, keep, strict=True) if kept),
                            raw[:, keep] / sd[keep], sd[keep])


@dataclass(frozen=True)
class StyleControlledFit:
    """A style-controlled Bradley-Terry fit.

    Attributes
    ----------
    systems : tuple of str, length S
    beta : ndarray of shape (S,)
        Style-controlled strengths, centred (log-odds units).
    features : tuple of str, length F
    gamma : ndarray of shape (F,)
        Log-odds of winning per standard deviation of each feature.
    converged : bool
    """

    systems: tuple[str, ...]
    beta: np.ndarray
    features: tuple[str, ...]
    gamma: np.ndarray
    converged: bool

    def arena_scores(self) -> dict[str, float]:
        """Strengths on Chatbot Arena's display scale, ``400 beta / ln 10 + 1000``."""
        return {s: float(ARENA_SCALE * b + 1000.0) for s, b in zip(self.systems, self.beta, strict=True)}


def _design(data: StyleComparisons, prompt_weights: np.ndarray | None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    n, size = len(data.first), len(data.systems)
    systems = np.zeros((n, size))
    systems[np.arange(n), data.first] = 1.0
    systems[np.arange(n), data.second] = -1.0
    x = np.hstack([systems[:, 1:], data.z])
    w = data.counts
    weight = np.concatenate([w[:, 0] + w[:, 1] / 2.0, w[:, 2] + w[:, 1] / 2.0])
    if prompt_weights is not None:
        weight = weight * np.tile(prompt_weights[data.prompt_index], 2)
    y = np.concatenate([np.ones(n), np.zeros(n)])
    rows = np.vstack([x, x])
    keep = weight > 0
    return rows[keep], y[keep], weight[keep]


def fit_style_controlled(data: StyleComparisons, *, prompt_weights: np.ndarray | None = None) -> StyleControlledFit:
    """Maximum-likelihood style-controlled Bradley-Terry fit (module docstring).

    Parameters
    ----------
    data : StyleComparisons
    prompt_weights : ndarray of shape (P,), optional
        A weight per prompt (a bootstrap resample's multiplicities); default 1 each.

    Returns
    -------
    StyleControlledFit

    Raises
    ------
    InputError
        Fewer than 2 systems, or comparisons that fail Ford's condition (no finite strengths).

    References
    ----------
    LMSYS, "Does style matter? Disentangling style and substance in Chatbot Arena" (2024);
    T. Li et al., arXiv 2406.11939 (2024); R. A. Bradley and M. E. Terry, Biometrika 39 (1952).
    """
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.linear_model import LogisticRegression

    size = len(data.systems)
    if size < 2:
        raise InputError(f"a ranking needs at least 2 systems, got {size}")
    pw = np.ones(len(data.prompts)) if prompt_weights is None else prompt_weights
    weight = pw[data.prompt_index][:, None] * data.counts
    pairs = np.stack([np.minimum(data.first, data.second), np.maximum(data.first, data.second)], axis=1)
    flipped = data.first > data.second
    oriented = np.where(flipped[:, None], weight[:, ::-1], weight)
    keys, inverse = np.unique(pairs, axis=0, return_inverse=True)
    totals = np.zeros((len(keys), 3))
    np.add.at(totals, inverse.ravel(), oriented)
    check_identified(size, keys, totals, data.systems)
    x, y, w = _design(data, prompt_weights)
    model = LogisticRegression(C=np.inf, fit_intercept=False, solver="newton-cholesky", tol=1e-10, max_iter=200)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ConvergenceWarning)
        model.fit(x, y, sample_weight=w)
    converged = not any(issubclass(c.category, ConvergenceWarning) for c in caught) and bool(
        np.all(np.isfinite(model.coef_)))
    coef = model.coef_.ravel()
    beta = np.concatenate([[0.0], coef[: size - 1]])
    return StyleControlledFit(data.systems, beta - beta.mean(), data.features, coef[size - 1:].copy(), converged)


@dataclass(frozen=True)
class StyleControlledIntervals:
    """A style-controlled fit with percentile cluster-bootstrap intervals.

    Attributes
    ----------
    fit : StyleControlledFit
    beta_low, beta_high : ndarray of shape (S,)
    gamma_low, gamma_high : ndarray of shape (F,)
    confidence : float
    n_bootstrap : int
        Resamples used (fitted and converged).
    """

    fit: StyleControlledFit
    beta_low: np.ndarray
    beta_high: np.ndarray
    gamma_low: np.ndarray
    gamma_high: np.ndarray
    confidence: float
    n_bootstrap: int


def bootstrap_style_controlled(data: StyleComparisons, *, n_bootstrap: int = 100, confidence: float = 0.9,
                               seed: int = 0) -> StyleControlledIntervals:
    """The style-controlled fit with percentile intervals from a cluster bootstrap over prompts
    (Efron & Tibshirani 1993, ch. 13): ``P`` prompts drawn with replacement, all comparisons of a
    drawn prompt together, the features' standardisation kept at the full data's. A resample
    that fails Ford's condition or does not converge is dropped.

    Raises
    ------
    InputError
        As :func:`fit_style_controlled`; ``n_bootstrap`` below 10, ``confidence`` outside
        (0, 1), or fewer than 10 usable resamples.
    """
    if n_bootstrap < 10:
        raise InputError(f"n_bootstrap must be at least 10, got {n_bootstrap}")
    if not 0 < confidence < 1:
        raise InputError(f"confidence must be in (0, 1), got {confidence}")
    fit = fit_style_controlled(data)
    rng = np.random.default_rng(seed)
    n_prompts = len(data.prompts)
    samples = []
    for weights in resample_counts(rng, n_prompts, n_bootstrap):  # a prompt's comparisons move together
        try:
            refit = fit_style_controlled(data, prompt_weights=weights)
        except InputError:
            continue
        if refit.converged:
            samples.append(np.concatenate([refit.beta, refit.gamma]))
    if len(samples) < 10:
        raise InputError(f"only {len(samples)} of {n_bootstrap} bootstrap resamples could be fitted: "
                         "too few prompts or comparisons for an interval")
    low, high = np.quantile(np.array(samples), [(1 - confidence) / 2, (1 + confidence) / 2], axis=0)
    size = len(data.systems)
    return StyleControlledIntervals(fit, low[:size], high[:size], low[size:], high[size:], confidence, len(samples))


@dataclass(frozen=True)
class StyleSystemRank:
    """One system's style-controlled strength (centred ``beta``, Arena-scale ``score``) and interval."""

    system: str
    beta: float
    score: float
    score_low: float
    score_high: float


@dataclass(frozen=True)
class StyleCoefficient:
    """One style feature's coefficient (log-odds per standard deviation) with its interval, and
    the standard deviation of the raw normalised difference it is per."""

    feature: str
    estimate: float
    low: float
    high: float
    sd: float


@dataclass(frozen=True)
class StyleRanking:
    """Systems ranked by style-controlled Bradley-Terry strength, best first, with the style
    coefficients; ``left_out`` names the features that did not vary
    (:func:`~.ranking.rank_style_controlled` makes it)."""

    judge_id: str
    question: str
    method: str
    systems: tuple[StyleSystemRank, ...]
    coefficients: tuple[StyleCoefficient, ...]
    left_out: tuple[str, ...]
    n_prompts: int
    n_comparisons: int
    confidence: float
    n_bootstrap: int

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready."""
        return {"ranking": [vars(s) for s in self.systems], "coefficients": [vars(c) for c in self.coefficients],
                "left_out": list(self.left_out), "n_prompts": self.n_prompts, "n_comparisons": self.n_comparisons,
                "confidence": self.confidence, "n_bootstrap": self.n_bootstrap}
