"""Elicitation: a judge's forced-choice and response-set ratings, read off its label probabilities.

The engine stores, for every judgment, the judge's distribution over the criterion's labels
(``label_probabilities``; binary MET/UNMET/CANNOT_ASSESS, or one entry per option). From one
distribution ``p`` over a criterion's ``K`` options (CANNOT_ASSESS and NA options left out,
the rest renormalised) this module reads both of the blog post's elicitation formats
(the blog post on "Validating LLM-as-a-Judge Systems under Rating Indeterminacy",
NeurIPS 2025, "A Framework for Meta-Evaluation ..."):

- **forced choice** (exactly one option): the distribution ``O = softmax(log p / T)`` (``T`` the
  temperature; ``T = 1`` gives ``p``). With ``n_samples``, ``O`` is the share of ``n_samples``
  seeded draws from it instead, as repeated sampling of the judge would give.
- **response set** (every option the judge finds reasonable), *read off the probabilities with
  a threshold*: ``S = {k : O_k >= threshold}``, plus the most likely option so that ``S`` is
  never empty. This is a stated approximation, cheap because it needs no extra generation; it
  is not a grammar-constrained multi-select answer (not implemented).
- **a Maybe option** (the blog post's recommendation 1): a binary criterion asked as three options,
  positive / negative / MAYBE (:func:`maybe_criterion`). Then forced choices and response sets
  are one-to-one (``{pos}``, ``{neg}``, ``{pos, neg}``) and the judge's distribution over the
  three options *is* its response-set distribution ``theta``; no threshold is needed. Its
  forced choice between the two real options is ``p`` without MAYBE, renormalised.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from autorubric_local.core.errors import InputError
from autorubric_local.core.rubric import Rubric
from autorubric_local.core.types import Criterion, CriterionOption
from autorubric_local.indeterminacy.model import (
    membership_matrix,
    response_set_index,
    response_sets,
)

__all__ = [
    "MAYBE_KEY",
    "ElicitationSettings",
    "JudgeRatings",
    "elicit",
    "elicit_maybe",
    "maybe_criterion",
    "maybe_rubric",
    "maybe_spec",
]

MAYBE_KEY = "indeterminacy_maybe"
"""Key in ``Criterion.metadata`` marking a criterion made by :func:`maybe_criterion`; its value
names the positive, negative and maybe option labels."""


class ElicitationSettings(BaseModel):
    """How judge ratings are read off label probabilities (module docstring).

    Attributes
    ----------
    threshold : float in (0, 1]
        Response sets hold every option with forced-choice probability >= threshold.
    temperature : float > 0
        ``O = softmax(log p / temperature)``.
    n_samples : int >= 1 or None
        Draw this many forced choices (and, for a Maybe criterion, response sets) per item
        instead of using the distribution itself.
    seed : int
        Seed of those draws.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    threshold: float = Field(0.25, gt=0.0, le=1.0)
    temperature: float = Field(1.0, gt=0.0, le=100.0)
    n_samples: int | None = Field(None, ge=1, le=100_000)
    seed: int = 0


@dataclass(frozen=True)
class JudgeRatings:
    """One judge's ratings of one criterion's items.

    Attributes
    ----------
    forced : ndarray of shape (n, K)
        Forced-choice distribution ``O^J`` per item.
    theta : ndarray of shape (n, 2**K - 1)
        Response-set distribution ``theta^J`` per item (``Q`` order, :func:`.model.response_sets`).
    """

    forced: np.ndarray
    theta: np.ndarray

    @property
    def omega(self) -> np.ndarray:
        """``Omega^J = theta Lambda^T``, shape (n, K)."""
        return self.theta @ membership_matrix(self.forced.shape[1]).T

    @property
    def forced_labels(self) -> np.ndarray:
        """The modal forced choice per item (lowest index among ties), shape (n,)."""
        return self.forced.argmax(axis=1)

    @property
    def set_positions(self) -> np.ndarray:
        """The modal response set per item (position in ``Q``), shape (n,)."""
        return self.theta.argmax(axis=1)


def _check_probabilities(p: np.ndarray, width: int) -> np.ndarray:
    a = np.asarray(p, dtype=float)
    if a.ndim != 2 or a.shape[1] != width or a.shape[0] == 0:
        raise InputError(f"label probabilities must have shape (n, {width}), got {a.shape}")
    if not np.all(np.isfinite(a)) or np.any(a < 0):
        raise InputError("label probabilities must be finite and >= 0")
    totals = a.sum(axis=1, keepdims=True)
    if np.any(totals <= 0):
        raise InputError(f"item {int(np.flatnonzero(totals[:, 0] <= 0)[0])}: no probability on any option")
    return a / totals


def _tempered(p: np.ndarray, temperature: float) -> np.ndarray:
    if temperature == 1.0:
        return p
    with np.errstate(divide="ignore"):
        logits = np.log(p) / temperature
    logits -= logits.max(axis=1, keepdims=True)
    out = np.exp(logits)
    return out / out.sum(axis=1, keepdims=True)


def _sampled(dist: np.ndarray, n_samples: int, rng: np.random.Generator) -> np.ndarray:
    """Shares of ``n_samples`` categorical draws per row, shape as ``dist``."""
    return np.stack([rng.multinomial(n_samples, row / row.sum()) for row in dist]) / n_samples


def elicit(probabilities: np.ndarray, settings: ElicitationSettings | None = None) -> JudgeRatings:
    """Forced-choice distribution and threshold response sets from label probabilities.

    Parameters
    ----------
    probabilities : array of shape (n, K)
        Per item, the judge's probability of each option (renormalised here).
    settings : ElicitationSettings, optional

    Returns
    -------
    JudgeRatings
        ``theta`` is one-hot on the response set read with ``settings.threshold`` from the
        (tempered, possibly sampled) forced-choice distribution.

    Raises
    ------
    InputError
        Wrong shape, negative or non-finite values, or a row with no probability.
    """
    settings = settings or ElicitationSettings()
    p = _check_probabilities(probabilities, np.shape(probabilities)[-1] if np.ndim(probabilities) == 2 else -1)
    k = p.shape[1]
    forced = _tempered(p, settings.temperature)
    if settings.n_samples is not None:
        forced = _sampled(forced, settings.n_samples, np.random.default_rng(settings.seed))
    theta = np.zeros((p.shape[0], len(response_sets(k))))
    for i, row in enumerate(forced):
        members = set(np.flatnonzero(row >= settings.threshold - 1e-12).tolist()) | {int(row.argmax())}
        theta[i, response_set_index(members, k)] = 1.0
    return JudgeRatings(forced, theta)


def elicit_maybe(probabilities: np.ndarray, settings: ElicitationSettings | None = None) -> JudgeRatings:
    """Ratings of a binary criterion asked with a Maybe option (recommendation 1).

    Parameters
    ----------
    probabilities : array of shape (n, 3)
        Per item, P(positive), P(negative), P(MAYBE), in that order.

    Returns
    -------
    JudgeRatings
        Over the two real options (positive = 0, negative = 1): ``theta`` is the (tempered,
        possibly sampled) distribution itself in ``Q = ({pos}, {neg}, {pos, neg})`` order;
        ``forced`` is its first two entries renormalised (the judge's choice with MAYBE
        removed; uniform when all mass is on MAYBE).

    Raises
    ------
    InputError
        As :func:`elicit`.
    """
    settings = settings or ElicitationSettings()
    p = _tempered(_check_probabilities(probabilities, 3), settings.temperature)
    theta = p if settings.n_samples is None else _sampled(p, settings.n_samples, np.random.default_rng(settings.seed))
    two = p[:, :2]
    totals = two.sum(axis=1, keepdims=True)
    forced = np.where(totals > 0, two / np.where(totals > 0, totals, 1.0), 0.5)
    if settings.n_samples is not None:
        forced = _sampled(forced, settings.n_samples, np.random.default_rng(settings.seed + 1))
    return JudgeRatings(forced, theta)


def maybe_criterion(criterion: Criterion, *, positive: str = "MET", negative: str = "UNMET",
                    maybe: str = "MAYBE (both MET and UNMET are reasonable)") -> Criterion:
    """A binary criterion as a three-option nominal criterion: ``positive`` (value 1),
    ``negative`` (value 0) and ``maybe`` (value 0.5), marked in ``metadata[MAYBE_KEY]``.

    With the default labels a dataset's MET/UNMET ground truth stays valid for it.

    Raises
    ------
    InputError
        The criterion is not binary, or the labels are not distinct.
    """
    if criterion.options is not None:
        raise InputError(f"criterion {criterion.name or criterion.requirement!r}: a Maybe option is only for binary criteria")
    if len({positive.strip().lower(), negative.strip().lower(), maybe.strip().lower()}) != 3:
        raise InputError("maybe_criterion: the three option labels must be distinct")
    metadata = dict(criterion.metadata or {})
    metadata[MAYBE_KEY] = {"positive": positive, "negative": negative, "maybe": maybe}
    return criterion.model_copy(update={
        "options": [CriterionOption(label=positive, value=1.0), CriterionOption(label=negative, value=0.0),
                    CriterionOption(label=maybe, value=0.5)],
        "scale_type": "nominal",
        "metadata": metadata,
    })


def maybe_rubric(rubric: Rubric, **labels: str) -> Rubric:
    """``rubric`` with every binary criterion made a Maybe criterion (:func:`maybe_criterion`);
    multi-choice criteria are kept as they are."""
    return Rubric([maybe_criterion(c, **labels) if c.options is None else c for c in rubric.rubric])


def maybe_spec(criterion: Criterion) -> dict[str, Any] | None:
    """The positive/negative/maybe labels of a Maybe criterion, or ``None`` for any other one.

    Raises
    ------
    InputError
        The criterion is marked but its options are not exactly the three marked labels.
    """
    spec = (criterion.metadata or {}).get(MAYBE_KEY)
    if spec is None:
        return None
    labels = [o.label for o in criterion.options or []]
    wanted = [spec.get("positive"), spec.get("negative"), spec.get("maybe")]
    if labels != wanted:
        raise InputError(f"criterion {criterion.name or criterion.requirement!r}: metadata.{MAYBE_KEY} names "
                         f"options {wanted}, the criterion has {labels}")
    return dict(spec)
