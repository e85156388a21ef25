"""The judge-engine contract: what every backend implements.

An engine answers two kinds of request, always for a whole workload at once, and returns
results in input order (one result per request, never raising for a single bad request):

- :meth:`Engine.score`: prefill only. For each :class:`ScoreRequest`, the log-probability of
  every allowed label continuation given ``prefix + suffix`` (multi-token labels summed over
  all of their tokens, teacher-forced).
- :meth:`Engine.generate`: constrained generation of a JSON string body (an explanation),
  continuing ``prefix + suffix`` until the closing quote or ``max_new_tokens``; or of any text
  matching a request's own regex (``GenerateRequest.pattern``).

Requests are split into a ``prefix`` (everything an item shares across criteria: system prompt,
query, reference, submission) and a ``suffix`` (criterion, options, assistant opener). The
prompt of a request is the token sequence ``tokens(prefix) + tokens(suffix)``; an engine may
compute a shared prefix once and reuse its key/value cache for every suffix, which is what makes
batched judging cheap (docs/how-it-works.md).

A user can plug in another backend by implementing this protocol (see ``ScriptedEngine`` in
``autorubric_local.engine.scripted`` for a minimal one) and passing it as
``LLMConfig(engine=...)``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol, TypeVar, runtime_checkable

from autorubric_local.core.reports import TokenUsage
from autorubric_local.engine.capabilities import EngineCapabilities
from autorubric_local.engine.requests import GENERATE_STEPS, AnswerSpec, JudgeRequest

T = TypeVar("T")


@dataclass(frozen=True)
class ScoreRequest:
    """One judgment to score by prefill.

    Attributes
    ----------
    prefix : str
        Shared text (chat-formatted), identical for every criterion of an item and judge.
    suffix : str
        Per-criterion text; the verdict label follows it immediately.
    labels : tuple of str, length n_labels >= 2
        Allowed continuations, e.g. ``('MET"', 'UNMET"', 'CANNOT_ASSESS"')``. Including the
        closing delimiter keeps the set prefix-free, so each label is a complete answer.
    answer : AnswerSpec or None
        The verdict asked for, as data (key and values in label order), set by the grader; None
        for a request built without it. Not compared: two requests of the same text are equal
        with or without it.
    judgment : JudgeRequest or None
        The request as data (:class:`~.requests.JudgeRequest`: item, criterion block, answer,
        a ``verdict`` or ``verdict_after_reason`` step), set by the grader. Local engines read
        the text; a hosted engine renders its messages and response format from this alone and
        refuses a request without it (:class:`EngineContractError`). Not compared, and not
        part of any cache key: the text is the request.

    Raises
    ------
    ValueError
        If ``answer`` does not give exactly ``labels`` (:meth:`AnswerSpec.labels`, verdict or
        reasoning first): the verdict a hosted judge is asked for would not be the one scored.
        If ``judgment`` is set with another answer than ``answer``, or a step that generates.
    """

    prefix: str
    suffix: str
    labels: tuple[str, ...]
    answer: AnswerSpec | None = field(default=None, compare=False)
    judgment: JudgeRequest | None = field(default=None, compare=False)

    def __post_init__(self) -> None:
        answer = self.answer
        if answer is not None and self.labels != answer.labels(False) and self.labels != answer.labels(True):
            raise ValueError(f"ScoreRequest.answer {answer.key} {answer.values} does not give "
                             f"the labels {self.labels}")
        if self.judgment is not None:
            _check_judgment("ScoreRequest", self.judgment, answer, generates=False)


def _check_judgment(where: str, judgment: JudgeRequest, answer: AnswerSpec | None, *, generates: bool) -> None:
    """Refuse a request whose structure disagrees with its answer or its kind (ValueError)."""
    if judgment.answer is not answer and judgment.answer != answer:
        raise ValueError(f"{where}.judgment asks for {judgment.answer}, but the request's answer is {answer}")
    if (judgment.step.kind in GENERATE_STEPS) != generates:
        raise ValueError(f"{where}.judgment has a {judgment.step.kind!r} step, which "
                         f"{'is scored' if generates else 'generates'}")


@dataclass(frozen=True)
class GenerateRequest:
    """One constrained generation of a JSON string body.

    Attributes
    ----------
    prefix, suffix : str
        As in :class:`ScoreRequest`; the suffix ends inside an open JSON string (after ``"``).
    max_new_tokens : int
        Decoding budget in tokens. A body cut off at the budget is returned with
        ``truncated=True``; the caller closes the string, so the JSON still parses.
    sentence : bool
        Constrain the body to one sentence (:data:`~.constrained.JSON_SENTENCE_BODY_REGEX`):
        it ends at its first sentence end. False allows any length
        (:data:`~.constrained.JSON_STRING_BODY_REGEX`).
    pattern : str, optional
        Generate any text matching this regex instead of a JSON string body (``LLMClient`` on
        a local engine: a JSON schema's regex, or :data:`~.constrained.FREE_TEXT_REGEX`). The
        text ends where the regex can only end, or at the model's end-of-sequence token where
        the regex may end, or at ``max_new_tokens`` (``truncated=True``); it is returned as
        generated (nothing unescaped, the end-of-sequence token left out). ``sentence`` is
        then ignored.
    answer : AnswerSpec or None
        The verdict of the judgment this explanation belongs to (:class:`ScoreRequest`), set by
        the grader; None for a request built without it. Not compared.
    judgment : JudgeRequest or None
        The request as data (:class:`~.requests.JudgeRequest`, an ``explain`` or ``reason``
        step, its ``start`` the explanation's stem), set by the grader; a hosted engine
        refuses a request without it, as for :class:`ScoreRequest`. Not compared, and not part
        of any cache key.

    Raises
    ------
    ValueError
        If ``judgment`` is set with another answer than ``answer``, or a step that is scored.
    """

    prefix: str
    suffix: str
    max_new_tokens: int = 96
    sentence: bool = False
    pattern: str | None = None
    answer: AnswerSpec | None = field(default=None, compare=False)
    judgment: JudgeRequest | None = field(default=None, compare=False)

    def __post_init__(self) -> None:
        if self.judgment is not None:
            _check_judgment("GenerateRequest", self.judgment, self.answer, generates=True)

    @property
    def regex(self) -> str:
        """The regex the text must match: ``pattern``, else a JSON string body, closing quote included."""
        from autorubric_local.engine.constrained import (
            JSON_SENTENCE_BODY_REGEX,
            JSON_STRING_BODY_REGEX,
        )

        if self.pattern is not None:
            return self.pattern
        return JSON_SENTENCE_BODY_REGEX if self.sentence else JSON_STRING_BODY_REGEX


ONE_HOT_FLOOR = -1e4
"""Log-probability of a label not chosen in a one-hot result: finite (as a stored log-probability
must be) and so low that its probability is exactly 0.0 in float64."""


@dataclass(frozen=True)
class LabelScores:
    """Result of a :class:`ScoreRequest`.

    Attributes
    ----------
    logprobs : tuple of float, length n_labels
        Natural-log probability of each label's token sequence given the prompt, raw (not
        renormalised over the labels: their probabilities may sum to less than 1); empty on
        error.
    usage : TokenUsage
        Token counts of the request: ``prompt_tokens`` every prompt token it needs,
        ``cache_read_input_tokens`` those of them served from a prefix computed for another
        request (a prefix-cache hit).
    seconds : float
        The request's share of engine wall time.
    error : str or None
        Set, with a category prefix (``"infrastructure: "``, ``"unknown: "``), when the engine
        could not score this request (e.g. the prompt exceeds the context length).
    off_label_mass : float in [0, 1] or None
        Probability the judge's next-token distribution right after the prompt (the first
        decision step) puts on tokens that start none of the allowed labels:
        ``1 - sum_t p(t | prompt)`` over the distinct first tokens ``t`` of the labels. High
        values mean the judge did not follow the answer format. None when the backend cannot
        tell (or on error).
    one_hot : bool
        True when the backend could not read label probabilities and reports only the label
        it chose: log-probability 0 for that label and :data:`ONE_HOT_FLOOR` for the others (a
        hosted model that returns no ``top_logprobs``; ``engine/hosted/backend.py``).
    cost_usd : float >= 0 or None
        Price of the request's calls in USD: 0.0 for a local engine (not priced; its cost is
        ``seconds`` of device time) and for an answer served from a cache; a hosted call's
        price from LiteLLM; None when a call was made whose price is unknown (LiteLLM has no
        price for the model, as for a self-hosted server).
    explanation : str or None
        An engine that declares ``whole_judgment`` (:class:`~.capabilities.EngineCapabilities`):
        the explanation the judge wrote with its verdict, whole (any start the grader asks an
        explanation to take is not stripped); set too on a ``parse:`` error when the answer
        held an explanation but no allowed verdict. None from every other engine, and when no
        answer came back.
    """

    logprobs: tuple[float, ...]
    usage: TokenUsage = field(default_factory=TokenUsage)
    seconds: float = 0.0
    error: str | None = None
    off_label_mass: float | None = None
    one_hot: bool = False
    cost_usd: float | None = 0.0
    explanation: str | None = None

    @property
    def probabilities(self) -> tuple[float, ...]:
        """Distribution over the labels, shape (n_labels,), summing to 1 (softmax of logprobs)."""
        return label_distribution(self.logprobs)


@dataclass(frozen=True)
class Generation:
    """Result of a :class:`GenerateRequest`: the body of a JSON string, unescaped form kept.

    ``usage``, ``seconds`` and ``cost_usd`` as in :class:`LabelScores`.
    """

    text: str
    truncated: bool = False
    usage: TokenUsage = field(default_factory=TokenUsage)
    seconds: float = 0.0
    error: str | None = None
    cost_usd: float | None = 0.0


def label_distribution(logprobs: Sequence[float]) -> tuple[float, ...]:
    """Renormalise label log-probabilities into a distribution over the allowed labels.

    ``p_i = exp(l_i) / sum_j exp(l_j)``, computed stably (max subtracted). Returns an empty
    tuple for empty input.
    """
    if not logprobs:
        return ()
    top = max(logprobs)
    weights = [math.exp(lp - top) for lp in logprobs]
    total = sum(weights)
    return tuple(w / total for w in weights)


def add_costs(*costs: float | None) -> float | None:
    """Total USD of several calls: the sum, or None when any of them is unknown (None)."""
    if any(cost is None for cost in costs):
        return None
    return math.fsum(costs)  # type: ignore[arg-type]


def mass_outside(first_token_logprobs: Sequence[float]) -> float:
    """Off-label mass from the log-probabilities of the labels' distinct first tokens.

    ``max(0, 1 - sum_t exp(l_t))``, clipped at 0 against float round-off; see
    :attr:`LabelScores.off_label_mass`. Each first token must appear once.
    """
    return max(0.0, 1.0 - math.fsum(math.exp(lp) for lp in first_token_logprobs))


class EngineContractError(AssertionError):
    """An engine broke :class:`Engine`'s contract (one result per request, in input order): a bug
    in that engine, never a judge's failure. It is not an
    :data:`~autorubric_local.graders.execution.ENGINE_FAILURES` type, so it is never stored as
    an ``infrastructure:`` error on the judgments, and a run stops on it with its committed
    chunks kept."""


def filled(results: Sequence[T | None], what: str) -> list[T]:
    """``results`` with every slot filled, as a list.

    Raises
    ------
    EngineContractError
        If a slot is still None (a request the engine's own code left without a result).
    """
    missing = [i for i, result in enumerate(results) if result is None]
    if missing:
        raise EngineContractError(f"{what}: no result for request(s) {missing[:10]} of {len(results)}")
    return list(results)  # type: ignore[arg-type]


def checked_count(results: list[T], expected: int, what: str) -> list[T]:
    """``results`` when it holds ``expected`` results.

    Raises
    ------
    EngineContractError
        Another number of results came back.
    """
    if len(results) != expected:
        raise EngineContractError(f"{what} returned {len(results)} results for {expected} requests")
    return results


@runtime_checkable
class Engine(Protocol):
    """A judge backend. Both methods take the whole workload and return results in input order.

    Attributes
    ----------
    model_id : str
        Identifier of the loaded model, recorded with every judgment.
    capabilities : EngineCapabilities
        What it declares it supports (backend, token counting, run-record fields); callers read
        this, never probe the engine, and an engine without it is refused where it enters
        (:func:`~autorubric_local.engine.capabilities.checked_capabilities`).
    """

    model_id: str
    capabilities: EngineCapabilities

    def format_chat(self, messages: list[dict[str, str]]) -> str:
        """Render chat ``messages`` with the model's template, assistant turn opened."""
        ...

    def score(self, requests: Sequence[ScoreRequest]) -> list[LabelScores]:
        """Label log-probabilities for each request (prefill only); one result per request."""
        ...

    def generate(self, requests: Sequence[GenerateRequest]) -> list[Generation]:
        """Constrained JSON-string generation for each request; one result per request."""
        ...
