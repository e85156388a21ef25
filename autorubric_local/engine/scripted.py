"""A scripted engine for tests and examples: answers come from a queue or a policy function.

Like ``llm``'s ``MockModel``: ``enqueue_scores`` / ``enqueue_generations`` queue answers,
``history`` records every request in order. When a queue is empty the optional ``policy``
answers; without one the request fails with an ``unknown:`` error (so tests see the error path,
never an invented verdict).
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
from autorubric_local.engine.user_text import plain

ScorePolicy = Callable[[ScoreRequest], Sequence[float]]


class ScriptedEngine:
    """Engine whose label log-probabilities and generations are scripted.

    Parameters
    ----------
    model_id : str
    policy : callable, optional
        ``policy(request) -> logprobs`` (one per label) used when the score queue is empty.
    explanation : str
        Text returned by ``generate`` when the generation queue is empty.
    """

    def __init__(
        self,
        model_id: str = "scripted",
        policy: ScorePolicy | None = None,
        explanation: str = "scripted explanation",
    ) -> None:
        self.model_id = model_id
        self.policy = policy
        self.explanation = explanation
        self._scores: deque[Sequence[float] | str] = deque()
        self._generations: deque[str] = deque()
        self.history: list[ScoreRequest | GenerateRequest] = []

    def enqueue_scores(self, *answers: Sequence[float] | str) -> None:
        """Queue label log-probabilities (one sequence per request), or an error string."""
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
            answer: Sequence[float] | str | None
            if self._scores:
                answer = self._scores.popleft()
            elif self.policy is not None:
                answer = self.policy(request)
            else:
                answer = "unknown: no scripted answer left"
            if isinstance(answer, str):
                results.append(LabelScores((), error=answer))
                continue
            if len(answer) != len(request.labels):
                raise ValueError(f"scripted answer has {len(answer)} logprobs for {len(request.labels)} labels")
            tokens = len((request.prefix + request.suffix).split())
            results.append(LabelScores(tuple(float(x) for x in answer), usage=TokenUsage.of(prompt_tokens=tokens)))
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
