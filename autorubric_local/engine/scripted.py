"""A scripted engine for tests and examples: answers come from a queue or a policy function.

Like ``llm``'s ``MockModel``: ``enqueue_scores`` / ``enqueue_generations`` queue answers,
``history`` records every request in order. When a queue is empty the optional ``policy``
answers; without one the request fails with an ``unknown:`` error (so tests see the error path,
never an invented verdict).

An answer is a sequence of label log-probabilities (returned as given, raw; ``off_label_mass``
None, as from a backend that does not report it), an error string, or a whole
:class:`LabelScores` (to script ``off_label_mass`` too), returned with its ``usage`` filled in
like a plain answer's when it has none.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import TypeVar

from autorubric_local.core.reports import TokenUsage
from autorubric_local.engine.base import (
    GenerateRequest,
    Generation,
    LabelScores,
    ScoreRequest,
)
from autorubric_local.engine.capabilities import EngineCapabilities
from autorubric_local.engine.user_text import plain

ScoreAnswer = Sequence[float] | str | LabelScores
"""Label log-probabilities, an error string, or a whole :class:`LabelScores`."""

ScorePolicy = Callable[[ScoreRequest], Sequence[float] | LabelScores]


class ScriptedEngine:
    """Engine whose label log-probabilities and generations are scripted.

    Parameters
    ----------
    model_id : str
    policy : callable, optional
        ``policy(request) -> logprobs`` (one per label, or a :class:`LabelScores`) used when
        the score queue is empty.
    explanation : str
        Text returned by ``generate`` when the generation queue is empty.
    capabilities : EngineCapabilities
        What it declares (default: no backend, no token counting, nothing described); a test
        declares more to stand in for a backend's engine.
    """

    def __init__(
        self,
        model_id: str = "scripted",
        policy: ScorePolicy | None = None,
        explanation: str = "scripted explanation",
        capabilities: EngineCapabilities = EngineCapabilities(),
    ) -> None:
        self.model_id = model_id
        self.capabilities = capabilities
        self.policy = policy
        self.explanation = explanation
        self._scores: deque[ScoreAnswer] = deque()
        self._generations: deque[str] = deque()
        self.history: list[ScoreRequest | GenerateRequest] = []

    def enqueue_scores(self, *answers: ScoreAnswer) -> None:
        """Queue answers, one per request: label log-probabilities, an error string, or a
        :class:`LabelScores` (e.g. with ``off_label_mass``)."""
        self._scores.extend(answers)

    def enqueue_generations(self, *texts: str) -> None:
        """Queue explanation texts."""
        self._generations.extend(texts)

    def format_chat(self, messages: list[dict[str, str]]) -> str:
        """ChatML-like rendering, assistant turn opened."""
        rendered = "".join(f"<|{m['role']}|>\n{m['content']}\n" for m in messages)
        return rendered + "<|assistant|>\n"

    def score(self, requests: Sequence[ScoreRequest]) -> list[LabelScores]:
        """Answer each request from the queue, else the policy, else with an error."""
        results: list[LabelScores] = []
        for request in map(_as_read, requests):
            self.history.append(request)
            answer: ScoreAnswer
            if self._scores:
                answer = self._scores.popleft()
            elif self.policy is not None:
                answer = self.policy(request)
            else:
                answer = "unknown: no scripted answer left"
            if isinstance(answer, str):
                results.append(LabelScores((), error=answer))
                continue
            scripted = answer if isinstance(answer, LabelScores) else LabelScores(tuple(float(x) for x in answer))
            if scripted.error is None and len(scripted.logprobs) != len(request.labels):
                raise ValueError(
                    f"scripted answer has {len(scripted.logprobs)} logprobs for {len(request.labels)} labels"
                )
            if scripted.usage == TokenUsage():
                tokens = len((request.prefix + request.suffix).split())
                scripted = replace(scripted, usage=TokenUsage.of(prompt_tokens=tokens))
            results.append(scripted)
        return results

    def generate(self, requests: Sequence[GenerateRequest]) -> list[Generation]:
        """Return queued texts (or the default explanation), one per request."""
        results: list[Generation] = []
        for request in map(_as_read, requests):
            self.history.append(request)
            text = self._generations.popleft() if self._generations else self.explanation
            results.append(Generation(text, usage=TokenUsage.of(completion_tokens=len(text.split()))))
        return results


_Request = TypeVar("_Request", ScoreRequest, GenerateRequest)


def _as_read(request: _Request) -> _Request:
    """The request as a model reads it: untrusted-text markers removed (``history`` and
    policies see plain text)."""
    return replace(request, prefix=plain(request.prefix), suffix=plain(request.suffix))
