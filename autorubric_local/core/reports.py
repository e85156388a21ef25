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
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

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
    """

    verdict: CriterionVerdict | None = None
    multi_choice_verdict: MultiChoiceVerdict | AggregatedMultiChoiceVerdict | None = None
    reason: str
    shuffle_order: list[int] | None = None
    error: str | None = None
    reasoning: str | None = None
    label_probabilities: dict[str, float] | None = None

    @model_validator(mode="after")
    def _check_label_probabilities(self) -> CriterionReport:
        _check_for_criterion(self.label_probabilities, self, "CriterionReport")
        return self

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

    @model_validator(mode="after")
    def _fill_agreement_and_check(self) -> EnsembleCriterionReport:
        _check_for_criterion(self.label_probabilities, self.criterion, "EnsembleCriterionReport")
        if "agreement" not in self.model_fields_set:
            # Frozen model: the one assignment made while the object is being built.
            object.__setattr__(self, "agreement", self._agreement_from_votes())
        return self

    def _agreement_from_votes(self) -> float:
        if self.votes:
            agreeing = sum(1 for v in self.votes if v.verdict == self.final_verdict)
            return agreeing / len(self.votes)
        if self.multi_choice_votes and self.final_multi_choice_verdict is not None:
            final_index = self.final_multi_choice_verdict.selected_index
            agreeing = sum(1 for v in self.multi_choice_votes if v.selected_index == final_index)
            return agreeing / len(self.multi_choice_votes)
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
