"""The hosted engine: a judge served over HTTP (OpenAI-compatible servers, hosted APIs) via LiteLLM.

It implements :class:`~.base.Engine` for ``LLMConfig(backend="hosted")``, from each request's
structure (``ScoreRequest.judgment``, ``GenerateRequest.judgment``: a
:class:`~autorubric_local.engine.requests.JudgeRequest`, which the grader sets on every request;
a request without it is refused, :class:`~.base.EngineContractError`). Nothing is parsed back
out of our own prompt text:

- The messages are rendered from the judgment (:func:`~.chat.judgment_messages`): a system
  message, the item's system prompt; a user message, the item's user-turn head and the
  per-criterion block, span markers removed. A chat API answers a whole turn, so no assistant
  opener is sent. :meth:`HostedEngine.format_chat` (:func:`~.chat.format_chat`) still renders
  the prompt text that planning splits into prefix and suffix, hashes and keys caches by;
  ``tests/test_hosted_messages.py`` checks that it serialises exactly these messages.
- :meth:`HostedEngine.score` sends each request's messages with the answer's JSON schema as
  ``response_format`` (``judgment.answer``: ``CriterionJudgment`` or ``MultiChoiceJudgment``
  from :mod:`autorubric_local.core.types`), all requests concurrently (bounded by
  ``max_parallel_requests``), and reads the verdict from the validated answer; the label
  distribution comes from ``top_logprobs`` where the server returns them, else it is one-hot
  (``LabelScores.one_hot``; :mod:`~.labels`). An answer that does not validate is
  retried (``max_retries``) and then the judgment fails with a ``parse:`` error (never a
  guessed verdict); a failed call fails it with an ``infrastructure:`` error.
- One answer is a whole judgment (``EngineCapabilities.whole_judgment``): the explanation the
  judge wrote with its verdict comes back on the score (``LabelScores.explanation``), so the
  grader's explain mode and reasoning first cost one call per judgment, at any chunk size,
  with no ``generate`` call. The explanation is the server's own, written with its verdict; it
  is not conditioned on a verdict chosen by label probabilities (they agree unless
  ``top_logprobs`` put another label first).
- Every result carries its call's price, ``cost_usd`` (:attr:`GenerateResult.cost`); an
  answer served from the response cache costs 0.0.
- :meth:`HostedEngine.generate` serves direct callers: one call per request, the explanation
  of that call's own answer after the step's ``start``.

Not supported: tokenization (``prompt_tokens``), so ``on_overflow="truncate"`` cannot cut a
hosted prompt; a too-long prompt fails with the server's error.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, TypeVar

from pydantic import BaseModel

from autorubric_local.core.reports import TokenUsage
from autorubric_local.core.types import CriterionJudgment
from autorubric_local.engine.base import (
    EngineContractError,
    GenerateRequest,
    Generation,
    LabelScores,
    ScoreRequest,
)
from autorubric_local.engine.capabilities import EngineCapabilities
from autorubric_local.engine.hosted.chat import format_chat, judgment_messages
from autorubric_local.engine.hosted.client import HostedClient, ResponseParseError
from autorubric_local.engine.hosted.labels import one_hot, read_label_logprobs
from autorubric_local.engine.hosted_types import GenerateResult
from autorubric_local.engine.requests import JudgeRequest, continued_explanation

__all__ = ["HostedEngine", "error_category"]

TOP_LOGPROBS = 5
"""Alternatives asked for per output token (OpenAI allows up to 20)."""
R = TypeVar("R")


def error_category(exc: BaseException) -> str:
    """``"parse"`` for an answer that did not validate, ``"infrastructure"`` for an API or network
    failure (every LiteLLM/OpenAI ``APIError``), else ``"unknown"``."""
    if isinstance(exc, ResponseParseError):
        return "parse"
    import openai

    if isinstance(exc, openai.APIError):
        return "infrastructure"
    return "unknown"


class HostedEngine:
    """Engine for a model behind an HTTP API.

    Parameters
    ----------
    client : HostedClient
        Carries the model string, API base, sampling, retries, rate limit and response cache.
    model_id : str
        Recorded with every judgment (default: the client's model string).
    top_logprobs : int, 0..20
        Alternatives asked for per token; 0 asks for none (every result one-hot), for
        providers that refuse ``logprobs``.
    """

    capabilities = EngineCapabilities("hosted", describes=frozenset({"prompt_format"}), whole_judgment=True)
    prompt_format = "chat"

    def __init__(self, client: HostedClient, model_id: str | None = None, top_logprobs: int = TOP_LOGPROBS) -> None:
        self.client = client
        self.model_id = model_id or client.config.model
        self.top_logprobs = top_logprobs

    def format_chat(self, messages: list[dict[str, str]]) -> str:
        """Serialisation of ``messages``, assistant turn opened (:mod:`~.chat`): the prompt text
        planning splits and hashes; the messages sent are rendered from each request's structure."""
        return format_chat(messages)

    def score(self, requests: Sequence[ScoreRequest]) -> list[LabelScores]:
        """One structured call per request (concurrently); results in input order, each with
        the explanation the judge wrote with its verdict (``whole_judgment``).

        Raises
        ------
        EngineContractError
            A request has no ``judgment`` (:func:`structured`).
        """
        structured(requests, "HostedEngine.score")
        return _run_all([lambda r=r: self._score_one(r) for r in requests])

    def generate(self, requests: Sequence[GenerateRequest]) -> list[Generation]:
        """One structured call per request: the explanation of that call's own answer, after
        the step's ``start`` (:func:`~autorubric_local.engine.requests.continued_explanation`).
        For direct callers: the grader never asks a whole-judgment engine to generate, it takes
        the explanation from :meth:`score`.

        Raises
        ------
        EngineContractError
            A request has no ``judgment`` (:func:`structured`).
        """
        structured(requests, "HostedEngine.generate")
        return _run_all([lambda r=r: self._generate_one(r) for r in requests])

    async def _answer(self, judgment: JudgeRequest) -> GenerateResult:
        """The structured answer to ``judgment``: its messages, asked with its answer's schema."""
        return await self.client.complete(judgment_messages(judgment), judgment.answer.schema,
                                          top_logprobs=self.top_logprobs)

    async def _score_one(self, request: ScoreRequest) -> LabelScores:
        started = time.perf_counter()
        judgment = request.judgment
        assert judgment is not None  # structured() checked every request
        key, values = judgment.answer.key, judgment.answer.values
        try:
            result = await self._answer(judgment)
        except Exception as exc:  # recorded on this judgment, by category; the batch goes on
            return LabelScores((), seconds=time.perf_counter() - started, cost_usd=_failed_cost(exc),
                               error=f"{error_category(exc)}: {type(exc).__name__}: {exc}")
        usage, cost = result.usage or TokenUsage(), result.cost
        seconds = time.perf_counter() - started
        verdict = _verdict_value(result.parsed)
        explanation = result.parsed.explanation
        if verdict not in values:
            return LabelScores((), usage=usage, seconds=seconds, cost_usd=cost, explanation=explanation,
                               error=f"parse: the answer {verdict!r} is not one of the allowed labels {list(values)}")
        chosen = values.index(verdict)
        logprobs = read_label_logprobs(result.content, key, values, chosen, result.logprobs)
        if logprobs is None:
            return LabelScores(one_hot(len(values), chosen), usage=usage, seconds=seconds, one_hot=True,
                               cost_usd=cost, explanation=explanation)
        return LabelScores(logprobs, usage=usage, seconds=seconds, cost_usd=cost, explanation=explanation)

    async def _generate_one(self, request: GenerateRequest) -> Generation:
        started = time.perf_counter()
        judgment = request.judgment
        assert judgment is not None  # structured() checked every request
        try:
            result = await self._answer(judgment)
        except Exception as exc:  # recorded on this judgment, by category
            return Generation("", seconds=time.perf_counter() - started, cost_usd=_failed_cost(exc),
                              error=f"{error_category(exc)}: {type(exc).__name__}: {exc}")
        text = continued_explanation(judgment.step.start, result.parsed.explanation)
        return Generation(text, usage=result.usage or TokenUsage(), seconds=time.perf_counter() - started,
                          cost_usd=result.cost)


def structured(requests: Sequence[ScoreRequest | GenerateRequest], where: str) -> None:
    """Check that every request carries its structure (``judgment``), which the hosted engine
    renders into its messages and response format.

    Raises
    ------
    EngineContractError
        Naming the first request without ``judgment`` and what it needs.
    """
    for index, request in enumerate(requests):
        if request.judgment is None:
            raise EngineContractError(
                f"{where}: {type(request).__name__} {index} has no judgment: a hosted judge is sent messages and a "
                "response format rendered from the request's structure (a JudgeRequest: item, block, answer, step), "
                "never parsed from its text; build requests with judgment= (graders.execution.run_tasks does)")


def _failed_cost(exc: BaseException) -> float | None:
    """USD of a failed call: what its responses cost when none validated
    (:attr:`ResponseParseError.cost`); 0.0 when no response came back (LiteLLM prices
    responses; a request that failed gets no price)."""
    return exc.cost if isinstance(exc, ResponseParseError) else 0.0


def _verdict_value(parsed: BaseModel) -> str:
    if isinstance(parsed, CriterionJudgment):
        return parsed.criterion_status.value
    return str(parsed.selected_option)  # type: ignore[attr-defined]


def _run_all(calls: list[Callable[[], Awaitable[R]]]) -> list[R]:
    """Run the coroutines concurrently on a fresh event loop (in a worker thread when the caller
    is already inside one); results in input order."""

    async def gather() -> list[R]:
        return list(await asyncio.gather(*(call() for call in calls)))

    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(gather())
    box: list[list[R]] = []
    worker = threading.Thread(target=lambda: box.append(asyncio.run(gather())))
    worker.start()
    worker.join()
    return box[0]


def from_config(config: Any) -> HostedEngine:
    """A :class:`HostedEngine` for an ``LLMConfig`` with ``backend="hosted"`` (loads LiteLLM now,
    so a missing install fails at load time with the install command)."""
    from autorubric_local.engine.hosted.litellm_loader import load_litellm

    load_litellm()
    top = config.extra_params.get("top_logprobs") if config.extra_params else None
    return HostedEngine(HostedClient(config), model_id=config.model, top_logprobs=TOP_LOGPROBS if top is None else int(top))
