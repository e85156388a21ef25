"""Result types: token usage, per-criterion reports, evaluation reports, ensemble votes.

Fields and defaults follow the AutoRubric API reference (pages "Core
Grading" and "Multi-Choice") and AutoRubric's README (github.com/delip/autorubric), "Score Fields" and
"Usage Tracking". Every result is immutable
(frozen); derive a variant with ``model_copy(update=...)``.

Extension: every per-criterion result and vote carries ``label_probabilities``, the judge's
probability for each outcome it was offered, read from the engine's logprobs:

- binary criteria: keys among ``"MET"``, ``"UNMET"``, ``"CANNOT_ASSESS"``;
- multi-choice criteria: keys are the original option labels, in original option order
  (never the shuffled order the judge saw); the canonical NA label may appear when the
  grader offered it.

Values lie in [0, 1] and sum to 1 within ``PROBABILITY_SUM_TOLERANCE``.

Extension: every vote also carries what the engine read before that renormalisation:

- ``label_logprobs``: the raw natural-log probability of each label given the prompt, keyed
  like ``label_probabilities`` (original option order for multi-choice). Not a distribution:
  the labels' probabilities may sum to less than 1 (the judge put mass elsewhere). Values are
  finite and ``<= 0``.
- ``off_label_mass``: in [0, 1], the probability the judge's first decision step put on
  tokens that start none of the allowed labels (``engine.base.LabelScores.off_label_mass``);
  ``None`` when the backend does not report it.

A vote over several option orders (cyclic permutations) holds the mean over its answered
orders: ``label_logprobs[k] = log(mean_r exp(l_rk))`` (the log of the mean raw probability of
option ``k``) and ``off_label_mass`` the mean over the orders that report it.

Extension, contextual calibration (``CriterionGrader(contextual_calibration=True)``,
:mod:`autorubric_local.graders.contextual`): ``label_probabilities`` is always the distribution
the vote's verdict was read from, so on a calibrated vote it is the *corrected* distribution,
and ``uncalibrated_label_probabilities`` (same keys) keeps the judge's own renormalised
distribution before the correction; ``None`` on a vote that was not corrected.
``label_logprobs`` stay the engine's raw values either way.

Extension: ``one_hot`` (bool) is True on a vote whose ``label_probabilities`` are not read from
a distribution but set to 1 on the label the judge answered and 0 elsewhere, because its
backend returned no label log-probabilities (a hosted or server judge without
``top_logprobs``; ``engine.base.LabelScores.one_hot``). Such probabilities say nothing about
the judge's confidence. A vote over several option orders is ``one_hot`` when any of its
answered orders was. False on votes of runs stored before the field existed.

AutoRubric 1.6.1's names for the same things (issue 53), read from the fields above rather than
stored twice:

- ``probabilities``: ``label_probabilities`` in AutoRubric's key scheme, the verdict values for
  a binary criterion and ``str(i)`` for option ``i`` of the original options on a multi-choice
  one (the canonical NA option the grader adds is index ``len(options)``, as AutoRubric's
  ``auto_na_option`` appends it). AutoRubric sets it only for decision models; every local
  judge reads a distribution, so here it is set wherever ``label_probabilities`` is, and
  ``None`` on a ``one_hot`` vote (no distribution was read). Accepted as a constructor argument
  too: it fills ``label_probabilities``.
- ``confidence``: :func:`selection_confidence` of the selected outcome's probability,
  ``clamp((K * p - 1) / (K - 1), 0, 1)`` with ``K`` the outcomes offered; ``None`` where
  ``probabilities`` is. As a constructor argument it must agree with the probabilities.
- ``superseded`` (votes) and ``escalated`` (``EnsembleCriterionReport``): AutoRubric's marks
  of a confidence cascade, set by :func:`autorubric_local.cascades.replay_escalation` (a
  grader never sets them: a live cascade is not built yet); left out of the JSON when False.

Data AutoRubric wrote (``model_validate``, ``model_validate_json``) is read the same way, as
pydantic validates through these constructors: its ``probabilities`` fill
``label_probabilities``, its ``confidence`` must agree with them, ``superseded``/``escalated``
True are refused (then raised as pydantic's ``ValidationError``).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

from autorubric_local.core.errors import InputError
from autorubric_local.core.types import (
    CANONICAL_NA_OPTION,
    AggregatedMultiChoiceVerdict,
    Criterion,
    CriterionVerdict,
    MultiChoiceVerdict,
)

__all__ = [
    "BINARY_PROBABILITY_KEYS",
    "OFF_LABEL_THRESHOLD",
    "PROBABILITY_SUM_TOLERANCE",
    "CriterionReport",
    "EnsembleCriterionReport",
    "EnsembleEvaluationReport",
    "EvaluationReport",
    "JudgeVote",
    "MultiChoiceJudgeVote",
    "TokenUsage",
    "selection_confidence",
]

BINARY_PROBABILITY_KEYS: tuple[str, ...] = tuple(v.value for v in CriterionVerdict)
"""Allowed ``label_probabilities`` keys for a binary criterion."""

PROBABILITY_SUM_TOLERANCE = 1e-4
"""Largest accepted ``|sum(label_probabilities) - 1|``."""

OFF_LABEL_THRESHOLD = 0.5
"""Off-label mass above which a judgment is flagged: the judge put more than half of its
first-step probability outside the allowed labels, so its renormalised label probabilities rest
on the smaller part of what it said (``grade --off-label-threshold`` and ``report``'s warning
default to it)."""


@dataclass(frozen=True)
class TokenUsage:
    """Token counts of one or more judge calls (AutoRubric's API reference, "Core Grading", ``TokenUsage``).

    Attributes
    ----------
    prompt_tokens, completion_tokens, total_tokens : int
        Input, output and total token counts.
    cache_creation_input_tokens, cache_read_input_tokens : int
        Prompt-cache writes and reads (0 when the engine has no prompt cache).

    ``a + b`` adds field by field; ``sum(usages)`` and :meth:`combine` total a sequence.
    """

    prompt_tokens: int = 0
    completion_tokens: int = 0
    total_tokens: int = 0
    cache_creation_input_tokens: int = 0
    cache_read_input_tokens: int = 0

    def __add__(self, other: TokenUsage) -> TokenUsage:
        if not isinstance(other, TokenUsage):
            return NotImplemented
        return TokenUsage(
            prompt_tokens=self.prompt_tokens + other.prompt_tokens,
            completion_tokens=self.completion_tokens + other.completion_tokens,
            total_tokens=self.total_tokens + other.total_tokens,
            cache_creation_input_tokens=(
                self.cache_creation_input_tokens + other.cache_creation_input_tokens
            ),
            cache_read_input_tokens=self.cache_read_input_tokens + other.cache_read_input_tokens,
        )

    def __radd__(self, other: object) -> TokenUsage:
        # Lets the builtin sum() start from its default 0.
        if isinstance(other, int) and not isinstance(other, bool) and other == 0:
            return self
        if isinstance(other, TokenUsage):
            return other.__add__(self)
        return NotImplemented

    @classmethod
    def of(cls, prompt_tokens: int = 0, completion_tokens: int = 0, cache_read_input_tokens: int = 0) -> TokenUsage:
        """Usage of one call: ``total_tokens`` is ``prompt_tokens + completion_tokens``."""
        return cls(
            prompt_tokens=prompt_tokens,
            completion_tokens=completion_tokens,
            total_tokens=prompt_tokens + completion_tokens,
            cache_read_input_tokens=cache_read_input_tokens,
        )

    @classmethod
    def combine(cls, usages: Iterable[TokenUsage | None]) -> TokenUsage:
        """Field-wise total of ``usages``, ignoring ``None``; all zeros when there is none."""
        total = cls()
        for usage in usages:
            if usage is not None:
                total = total + usage
        return total


CONFIDENCE_TOLERANCE = 1e-6
"""Largest accepted difference between a ``confidence`` passed to a constructor and the one the
probabilities give."""


def selection_confidence(p_selected: float, n_outcomes: int) -> float:
    """A judge's support for the outcome it selected, AutoRubric's ``confidence``, in [0, 1].

    ``clamp((K * p - 1) / (K - 1), 0, 1)`` for ``K = n_outcomes`` outcomes offered and the
    selected outcome's probability ``p``: 1.0 when ``p`` is 1, 0.0 at chance (``p = 1/K``) or
    below. Of a binary MET/UNMET verdict it is ``2 * |p - 0.5|`` for the larger ``p``.

    Parameters
    ----------
    p_selected : float in [0, 1]
    n_outcomes : int, >= 2

    Raises
    ------
    ValueError
        If ``n_outcomes < 2`` or ``p_selected`` is outside [0, 1].
    """
    if isinstance(n_outcomes, bool) or not isinstance(n_outcomes, int) or n_outcomes < 2:
        raise ValueError(f"n_outcomes must be an integer >= 2, got {n_outcomes!r}")
    if not (math.isfinite(p_selected) and 0.0 <= p_selected <= 1.0):
        raise ValueError(f"p_selected must be a probability in [0, 1], got {p_selected!r}")
    return min(1.0, max(0.0, (n_outcomes * p_selected - 1.0) / (n_outcomes - 1)))


def _confidence_of(probabilities: Mapping[str, float] | None, selected: str | None) -> float | None:
    """:func:`selection_confidence` of ``probabilities[selected]``; None without a distribution
    of at least two outcomes that holds ``selected``."""
    if probabilities is None or selected is None or selected not in probabilities or len(probabilities) < 2:
        return None
    return selection_confidence(probabilities[selected], len(probabilities))


def _is_false(value: object) -> bool:
    """A cascade mark at its default (``superseded``, ``escalated``): left out of the JSON."""
    return value is False


def _with_probabilities(owner: str, data: dict[str, Any], probabilities: Mapping[str, float] | None,
                        as_labels: Any = None) -> dict[str, Any]:
    """``data`` with AutoRubric's ``probabilities`` argument as ``label_probabilities``
    (``as_labels`` renames its keys); both given must agree."""
    if probabilities is None:
        return data
    labelled = dict(probabilities) if as_labels is None else as_labels(probabilities)
    given = data.get("label_probabilities")
    if given is not None and dict(given) != labelled:
        raise InputError(f"{owner}: probabilities {dict(probabilities)} and label_probabilities {dict(given)} "
                         "disagree; they are one distribution here, pass one of them")
    return {**data, "label_probabilities": labelled}


def _check_confidence(owner: str, given: float | None, derived: float | None) -> None:
    """A ``confidence`` passed to a constructor must be the one its probabilities give."""
    if given is None:
        return
    if derived is None:
        raise InputError(f"{owner}: confidence={given} was given without probabilities; here confidence is "
                         "read from label_probabilities (clamp((K*p - 1)/(K - 1), 0, 1)), pass those instead")
    if abs(given - derived) > CONFIDENCE_TOLERANCE:
        raise InputError(f"{owner}: confidence={given} disagrees with its probabilities, which give {derived}")


def _check_probabilities(
    probabilities: Mapping[str, float],
    owner: str,
    allowed_keys: Iterable[str] | None = None,
    ordered: bool = False,
    field: str = "label_probabilities",
) -> None:
    """Validate a ``label_probabilities`` map (or the map in ``field``): a distribution over
    ``allowed_keys`` (any keys when ``None``), listed in the order of ``allowed_keys`` when
    ``ordered``."""
    if not probabilities:
        raise ValueError(f"{owner}.{field} must not be empty (use None)")
    for key, p in probabilities.items():
        if not (math.isfinite(p) and 0.0 <= p <= 1.0):
            raise ValueError(
                f"{owner}.{field}[{key!r}] must be a probability in [0, 1], got {p}"
            )
    total = math.fsum(probabilities.values())
    if abs(total - 1.0) > PROBABILITY_SUM_TOLERANCE:
        raise ValueError(
            f"{owner}.{field} must sum to 1 "
            f"(tolerance {PROBABILITY_SUM_TOLERANCE}), got {total}"
        )
    if allowed_keys is None:
        return
    order = {key: i for i, key in enumerate(allowed_keys)}
    unknown = [key for key in probabilities if key not in order]
    if unknown:
        raise ValueError(
            f"{owner}.{field} has unknown keys {unknown}; allowed: {list(order)}"
        )
    positions = [order[key] for key in probabilities]
    if ordered and positions != sorted(positions):
        raise ValueError(
            f"{owner}.{field} keys must follow the original option order "
            f"{list(order)}, got {list(probabilities)}"
        )


def _check_uncalibrated(
    uncalibrated: Mapping[str, float] | None,
    probabilities: Mapping[str, float] | None,
    owner: str,
) -> None:
    """Validate ``uncalibrated_label_probabilities``: a distribution keyed like
    ``label_probabilities``, which must be set too (it holds the corrected distribution)."""
    if uncalibrated is None:
        return
    _check_probabilities(uncalibrated, owner, field="uncalibrated_label_probabilities")
    if probabilities is None or list(uncalibrated) != list(probabilities):
        raise ValueError(
            f"{owner}.uncalibrated_label_probabilities keys {list(uncalibrated)} differ from "
            f"label_probabilities keys {None if probabilities is None else list(probabilities)}"
        )


def _check_logprobs(
    logprobs: Mapping[str, float] | None,
    probabilities: Mapping[str, float] | None,
    owner: str,
    allowed_keys: Iterable[str] | None = None,
) -> None:
    """Validate a raw ``label_logprobs`` map: not empty, every value finite and ``<= 0`` (not a
    distribution: no sum is checked), keys among ``allowed_keys`` when given and the same keys
    as ``probabilities`` when both are set."""
    if logprobs is None:
        return
    if not logprobs:
        raise ValueError(f"{owner}.label_logprobs must not be empty (use None)")
    for key, lp in logprobs.items():
        if not (math.isfinite(lp) and lp <= 0.0):
            raise ValueError(
                f"{owner}.label_logprobs[{key!r}] must be a finite log-probability <= 0, got {lp}"
            )
    if allowed_keys is not None:
        allowed = list(allowed_keys)
        unknown = [key for key in logprobs if key not in allowed]
        if unknown:
            raise ValueError(f"{owner}.label_logprobs has unknown keys {unknown}; allowed: {allowed}")
    if probabilities is not None and list(logprobs) != list(probabilities):
        raise ValueError(
            f"{owner}.label_logprobs keys {list(logprobs)} differ from "
            f"label_probabilities keys {list(probabilities)}"
        )


def _check_mass(mass: float | None, owner: str) -> None:
    """Validate ``off_label_mass``: ``None`` or a probability in [0, 1]."""
    if mass is not None and not (math.isfinite(mass) and 0.0 <= mass <= 1.0):
        raise ValueError(f"{owner}.off_label_mass must be a probability in [0, 1] or None, got {mass}")


def _check_for_criterion(
    probabilities: Mapping[str, float] | None, criterion: Criterion, owner: str
) -> None:
    """Check ``probabilities`` against the outcomes of ``criterion``: verdict names for a
    binary criterion; option labels in option order (plus the canonical NA label, which the
    grader may add) for a multi-choice one."""
    if probabilities is None:
        return
    if criterion.options is None:
        _check_probabilities(probabilities, owner, BINARY_PROBABILITY_KEYS)
        return
    labels = [option.label for option in criterion.options]
    if CANONICAL_NA_OPTION.label not in labels:
        labels.append(CANONICAL_NA_OPTION.label)
    _check_probabilities(probabilities, owner, labels, ordered=True)


def _labels_of(probabilities: Mapping[str, float], options: Any) -> dict[str, float]:
    """AutoRubric's multi-choice ``probabilities`` (keys ``str(i)``, option ``i``; ``len(options)``
    the canonical NA option) keyed by option label, as ``label_probabilities`` holds them."""
    labels = [option["label"] if isinstance(option, Mapping) else option.label for option in options]
    labels = labels + ([CANONICAL_NA_OPTION.label] if CANONICAL_NA_OPTION.label not in labels else [])
    out: dict[str, float] = {}
    for key, p in sorted(probabilities.items(), key=lambda kv: int(kv[0]) if str(kv[0]).isdigit() else -1):
        if not (str(key).isdigit() and int(key) < len(labels)):
            raise InputError(f"CriterionReport: probabilities key {key!r} is not an option index 0..{len(labels) - 1} "
                             "(AutoRubric keys a multi-choice distribution by str(option index))")
        out[labels[int(key)]] = p
    return out


class CriterionReport(Criterion):
    """A criterion together with one judge's (or the grader's) result on it.

    Attributes
    ----------
    verdict : CriterionVerdict or None
        Binary verdict; ``None`` for multi-choice criteria.
    multi_choice_verdict : MultiChoiceVerdict or AggregatedMultiChoiceVerdict or None
        Selected option; ``None`` for binary criteria.
    reason : str
        The judge's brief justification ("" when the judge gives none).
    shuffle_order : list of int or None
        Presentation permutation: ``shuffle_order[shown_position] = original_index``.
    error : str or None
        Set, prefixed by ``"infrastructure: "``, ``"parse: "`` or ``"unknown: "``, when the
        result was synthesised after a failed judge call. Scoring then uses the
        conservative worst case (see :mod:`autorubric_local.core.scoring`).
    reasoning : str or None
        The thinking trace ``reason`` was distilled from, when thinking is enabled.
    label_probabilities : dict of str to float or None
        Extension: the judge's outcome distribution (see the module docstring).
    probabilities, confidence : AutoRubric's names, read from ``label_probabilities`` (see the
        module docstring); accepted as constructor arguments.
    """

    verdict: CriterionVerdict | None = None
    multi_choice_verdict: MultiChoiceVerdict | AggregatedMultiChoiceVerdict | None = None
    reason: str
    shuffle_order: list[int] | None = None
    error: str | None = None
    reasoning: str | None = None
    label_probabilities: dict[str, float] | None = None

    def __init__(self, /, *, probabilities: dict[str, float] | None = None, confidence: float | None = None,
                 **data: Any) -> None:
        options = data.get("options")
        super().__init__(**_with_probabilities("CriterionReport", data, probabilities,
                                               None if options is None else lambda p: _labels_of(p, options)))
        _check_confidence("CriterionReport", confidence, self.confidence)

    @model_validator(mode="after")
    def _check_label_probabilities(self) -> CriterionReport:
        _check_for_criterion(self.label_probabilities, self, "CriterionReport")
        return self

    @property
    def probabilities(self) -> dict[str, float] | None:
        """AutoRubric's ``probabilities``: ``label_probabilities`` keyed by verdict value (binary)
        or by ``str(i)``, option ``i`` in the original options (multi-choice; the canonical NA
        option the grader adds is ``len(options)``)."""
        if self.label_probabilities is None or self.options is None:
            return None if self.label_probabilities is None else dict(self.label_probabilities)
        index = {option.label: str(i) for i, option in enumerate(self.options)}
        return {index.get(label, str(len(self.options))): p for label, p in self.label_probabilities.items()}

    @property
    def confidence(self) -> float | None:
        """AutoRubric's ``confidence`` in [0, 1]: :func:`selection_confidence` of the selected
        outcome's probability; None without ``label_probabilities``."""
        if self.verdict is not None:
            return _confidence_of(self.label_probabilities, self.verdict.value)
        selected = None if self.multi_choice_verdict is None else self.multi_choice_verdict.selected_label
        return _confidence_of(self.label_probabilities, selected)

    @classmethod
    def from_criterion(cls, criterion: Criterion, **result: Any) -> CriterionReport:
        """Build a report that copies every field of ``criterion`` and adds ``result``.

        ``result`` holds the report-only fields (``verdict``, ``reason``, ...).
        """
        fields = {name: getattr(criterion, name) for name in Criterion.model_fields}
        return cls(**fields, **result)

    @property
    def score_value(self) -> float:
        """Per-criterion score in [0, 1]: 1.0 if MET else 0.0 (binary), or the selected
        option's value (multi-choice); 0.0 when there is no verdict."""
        if self.verdict is not None:
            return 1.0 if self.verdict == CriterionVerdict.MET else 0.0
        if self.multi_choice_verdict is not None:
            return self.multi_choice_verdict.value
        return 0.0

    @property
    def is_na(self) -> bool:
        """True for a CANNOT_ASSESS verdict or a selected NA option."""
        if self.verdict == CriterionVerdict.CANNOT_ASSESS:
            return True
        return self.multi_choice_verdict is not None and self.multi_choice_verdict.na

    @property
    def is_error(self) -> bool:
        """True when the result was synthesised after a failed judge call."""
        return self.error is not None


class EvaluationReport(BaseModel):
    """The result of grading one submission against a rubric (single-judge shape).

    Attributes
    ----------
    score : float or None
        Final score: in [0, 1] when normalised, else the raw weighted sum; length penalty
        already subtracted. ``None`` only when grading failed (``error`` set).
    raw_score : float or None
        Weighted sum before normalisation and length penalty.
    llm_raw_score : float or None
        Same as ``raw_score`` (kept for API compatibility).
    report : list of CriterionReport or None
        Per-criterion results, in rubric order.
    cannot_assess_count : int
        Number of criteria with a CANNOT_ASSESS verdict or NA option.
    error : str or None
        Why grading failed; filter these out of training data.
    token_usage : TokenUsage or None
        Tokens over all judge calls.
    completion_cost : float or None
        Cost in USD, when known (``None`` for local engines that do not price calls).
    """

    model_config = ConfigDict(frozen=True)

    score: float | None
    raw_score: float | None = None
    llm_raw_score: float | None = None
    report: list[CriterionReport] | None = None
    cannot_assess_count: int = 0
    error: str | None = None
    token_usage: TokenUsage | None = None
    completion_cost: float | None = None


class JudgeVote(BaseModel):
    """One judge's vote on a binary criterion in an ensemble.

    ``weight`` is the judge's voting weight; ``error`` (category-prefixed) marks a vote
    synthesised after a failed call; ``label_probabilities`` (extension) is keyed by
    ``"MET"``, ``"UNMET"``, ``"CANNOT_ASSESS"``; ``label_logprobs`` (raw, same keys),
    ``off_label_mass``, ``uncalibrated_label_probabilities`` and ``one_hot`` as in the module
    docstring.

    Raises
    ------
    pydantic.ValidationError
        Probabilities that are not a distribution over those keys, a raw log-probability
        that is not finite and ``<= 0``, an ``off_label_mass`` outside [0, 1], or
        uncalibrated probabilities that are not a distribution keyed like the probabilities.
    """

    model_config = ConfigDict(frozen=True)

    judge_id: str
    verdict: CriterionVerdict
    reason: str
    weight: float = 1.0
    error: str | None = None
    reasoning: str | None = None
    label_probabilities: dict[str, float] | None = None
    label_logprobs: dict[str, float] | None = None
    off_label_mass: float | None = None
    uncalibrated_label_probabilities: dict[str, float] | None = None
    one_hot: bool = False

    superseded: bool = Field(default=False, exclude_if=_is_false)
    """AutoRubric's mark of a confidence cascade's first-stage vote that the escalation judges'
    votes replaced (:func:`autorubric_local.cascades.replay_escalation`); it decided nothing.
    Left out of the JSON when False, so reports stored before it read and write the same."""

    def __init__(self, /, *, probabilities: dict[str, float] | None = None, confidence: float | None = None,
                 **data: Any) -> None:
        super().__init__(**_with_probabilities("JudgeVote", data, probabilities))
        _check_confidence("JudgeVote", confidence, self.confidence)

    @property
    def probabilities(self) -> dict[str, float] | None:
        """AutoRubric's ``probabilities``: ``label_probabilities`` (the same keys); None on a
        ``one_hot`` vote, which read no distribution."""
        return None if self.label_probabilities is None or self.one_hot else dict(self.label_probabilities)

    @property
    def confidence(self) -> float | None:
        """AutoRubric's ``confidence``: :func:`selection_confidence` of the verdict's probability."""
        return _confidence_of(self.probabilities, self.verdict.value)


    @model_validator(mode="after")
    def _check_label_probabilities(self) -> JudgeVote:
        if self.label_probabilities is not None:
            _check_probabilities(self.label_probabilities, "JudgeVote", BINARY_PROBABILITY_KEYS)
        _check_logprobs(self.label_logprobs, self.label_probabilities, "JudgeVote", BINARY_PROBABILITY_KEYS)
        _check_mass(self.off_label_mass, "JudgeVote")
        _check_uncalibrated(self.uncalibrated_label_probabilities, self.label_probabilities, "JudgeVote")
        return self

    @property
    def is_error(self) -> bool:
        """True when the vote was synthesised after a failed judge call."""
        return self.error is not None


class MultiChoiceJudgeVote(BaseModel):
    """One judge's vote on a multi-choice criterion in an ensemble (AutoRubric's API reference, "Multi-Choice").

    ``selected_index`` is the zero-based original option index (``None`` for an abstain
    with no option selected). ``label_probabilities`` (extension) is keyed by original
    option label in original order; the vote does not hold the criterion, so only the
    distribution is checked here, not the keys. ``label_logprobs`` (raw, the same keys),
    ``off_label_mass``, ``uncalibrated_label_probabilities`` and ``one_hot`` as in the module
    docstring.

    Raises
    ------
    pydantic.ValidationError
        Probabilities that are not a distribution, raw log-probabilities not finite and
        ``<= 0`` or keyed unlike the probabilities, an ``off_label_mass`` outside [0, 1], or
        uncalibrated probabilities that are not a distribution keyed like the probabilities.
    """

    model_config = ConfigDict(frozen=True)

    judge_id: str
    selected_index: int | None
    selected_label: str | None
    value: float
    reason: str
    weight: float = 1.0
    na: bool = False
    shuffle_order: list[int] | None = None
    error: str | None = None
    reasoning: str | None = None
    label_probabilities: dict[str, float] | None = None
    label_logprobs: dict[str, float] | None = None
    off_label_mass: float | None = None
    uncalibrated_label_probabilities: dict[str, float] | None = None
    one_hot: bool = False

    superseded: bool = Field(default=False, exclude_if=_is_false)
    """As :attr:`JudgeVote.superseded`."""

    def __init__(self, /, *, probabilities: dict[str, float] | None = None, confidence: float | None = None,
                 **data: Any) -> None:
        if probabilities is not None:
            raise InputError("MultiChoiceJudgeVote(probabilities=...) is not supported: AutoRubric keys them by "
                             "option index and a vote does not hold its criterion's option labels, which "
                             "label_probabilities is keyed by; pass label_probabilities (original option order)")
        super().__init__(**data)
        _check_confidence("MultiChoiceJudgeVote", confidence, self.confidence)

    @property
    def probabilities(self) -> dict[str, float] | None:
        """AutoRubric's ``probabilities``: ``label_probabilities`` keyed by ``str(i)``, the position
        of each label in the original option order (the canonical NA option last, as AutoRubric
        appends it); None on a ``one_hot`` vote, and when the selected label's position is not
        ``selected_index`` (the labels are then not every option, and positions not indices)."""
        if self.label_probabilities is None or self.one_hot:
            return None
        labels = list(self.label_probabilities)
        if self.selected_label in labels and labels.index(self.selected_label) != self.selected_index:
            return None
        return {str(i): p for i, p in enumerate(self.label_probabilities.values())}

    @property
    def confidence(self) -> float | None:
        """AutoRubric's ``confidence``: :func:`selection_confidence` of the selected option's
        probability."""
        return None if self.one_hot else _confidence_of(self.label_probabilities, self.selected_label)


    @model_validator(mode="after")
    def _check_label_probabilities(self) -> MultiChoiceJudgeVote:
        if self.label_probabilities is not None:
            _check_probabilities(self.label_probabilities, "MultiChoiceJudgeVote")
        _check_logprobs(self.label_logprobs, self.label_probabilities, "MultiChoiceJudgeVote")
        _check_mass(self.off_label_mass, "MultiChoiceJudgeVote")
        _check_uncalibrated(self.uncalibrated_label_probabilities, self.label_probabilities, "MultiChoiceJudgeVote")
        return self

    @property
    def is_error(self) -> bool:
        """True when the vote was synthesised after a failed judge call."""
        return self.error is not None


class EnsembleCriterionReport(BaseModel):
    """An ensemble's result on one criterion, with every judge's vote.

    Binary criteria use ``final_verdict`` and ``votes``; multi-choice criteria use
    ``final_multi_choice_verdict`` and ``multi_choice_votes``. ``final_reason`` joins the
    votes' reasons as ``"judge_id: reason"`` with ``" | "``. ``agreement`` is the fraction
    in [0, 1] of votes agreeing with the final verdict (same selected index for
    multi-choice), computed from the votes unless given. ``error`` is set when every vote
    came from a failed judge call. ``label_probabilities`` (extension) is the ensemble's
    combined distribution, with the same keys as :class:`CriterionReport`.
    """

    model_config = ConfigDict(frozen=True)

    criterion: Criterion
    final_verdict: CriterionVerdict | None
    final_reason: str
    votes: list[JudgeVote] = Field(default_factory=list)
    agreement: float = 0.0
    final_multi_choice_verdict: AggregatedMultiChoiceVerdict | None = None
    multi_choice_votes: list[MultiChoiceJudgeVote] = Field(default_factory=list)
    error: str | None = None
    label_probabilities: dict[str, float] | None = None
    escalated: bool = Field(default=False, exclude_if=_is_false)
    """AutoRubric's mark of a criterion a confidence cascade escalated: the escalation judges'
    votes alone decided it, and the first stage's vote is kept with ``superseded=True``
    (:func:`autorubric_local.cascades.replay_escalation`). Left out of the JSON when False."""

    @model_validator(mode="after")
    def _fill_agreement_and_check(self) -> EnsembleCriterionReport:
        _check_for_criterion(self.label_probabilities, self.criterion, "EnsembleCriterionReport")
        if "agreement" not in self.model_fields_set:
            # Frozen model: the one assignment made while the object is being built.
            object.__setattr__(self, "agreement", self._agreement_from_votes())
        return self

    def _agreement_from_votes(self) -> float:
        """The share of the deciding votes (a cascade's superseded vote decided nothing) that
        chose the final verdict."""
        votes = [v for v in self.votes if not v.superseded]
        if votes:
            agreeing = sum(1 for v in votes if v.verdict == self.final_verdict)
            return agreeing / len(votes)
        choices = [v for v in self.multi_choice_votes if not v.superseded]
        if choices and self.final_multi_choice_verdict is not None:
            final_index = self.final_multi_choice_verdict.selected_index
            agreeing = sum(1 for v in choices if v.selected_index == final_index)
            return agreeing / len(choices)
        return 0.0

    @property
    def shuffle_order(self) -> list[int] | None:
        """The option order the judges were shown (``shuffle_order[shown] = original index``,
        as in :class:`CriterionReport`): the votes' order when they all saw the same one; None
        for a binary criterion, or when votes saw different orders (cyclic permutations: each
        vote's ``shuffle_order`` is its first)."""
        orders = {tuple(v.shuffle_order) for v in self.multi_choice_votes if v.shuffle_order is not None}
        return list(orders.pop()) if len(orders) == 1 else None

    @property
    def score_value(self) -> float:
        """Per-criterion score in [0, 1] of the final verdict; 0.0 when there is none."""
        if self.final_verdict is not None:
            return 1.0 if self.final_verdict == CriterionVerdict.MET else 0.0
        if self.final_multi_choice_verdict is not None:
            return self.final_multi_choice_verdict.value
        return 0.0

    @property
    def is_na(self) -> bool:
        """True for a CANNOT_ASSESS final verdict or an NA final option."""
        if self.final_verdict == CriterionVerdict.CANNOT_ASSESS:
            return True
        verdict = self.final_multi_choice_verdict
        return verdict is not None and verdict.na

    @property
    def is_error(self) -> bool:
        """True when the final verdict rests entirely on failed judge calls."""
        return self.error is not None


class EnsembleEvaluationReport(BaseModel):
    """The result of grading one submission with an ensemble (or a single judge).

    Fields as in :class:`EvaluationReport`, plus ``judge_scores`` (each judge's own score
    over the whole rubric, keyed by ``judge_id``) and ``mean_agreement`` (mean of the
    criteria's ``agreement``, 1.0 for a single judge; ``None`` when there was nothing to
    agree on).

    Extension: ``device_seconds``, the local cost of the grade: the engine time (seconds) of
    its judgments, summed. ``completion_cost`` (USD) is the sum of the prices of its judge calls
    (``graders.assembly.completion_cost``): local engines are not priced and add 0.0 (so a grade by
    local judges is 0.0, a float, and ``f"${report.completion_cost:.4f}"`` works), a hosted call
    adds LiteLLM's price; None when a call's price is unknown (a model LiteLLM has no price for,
    such as a self-hosted server's) and on a report built without a grader.
    ``input_truncated_tokens`` and ``judged_submission`` are set when the submission was cut to
    fit a judge's context (``LLMConfig.on_overflow="truncate"``): how many of its tokens were
    cut, and the text the judges read (head, marker, tail).
    """

    model_config = ConfigDict(frozen=True)

    score: float | None
    raw_score: float | None = None
    llm_raw_score: float | None = None
    report: list[EnsembleCriterionReport] | None = None
    judge_scores: dict[str, float | None] = Field(default_factory=dict)
    mean_agreement: float | None = None
    cannot_assess_count: int = 0
    token_usage: TokenUsage | None = None
    completion_cost: float | None = None
    error: str | None = None
    device_seconds: float | None = None
    input_truncated_tokens: int | None = None
    judged_submission: str | None = None
