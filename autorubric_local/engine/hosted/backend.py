"""The hosted engine: a judge served over HTTP (OpenAI-compatible servers, hosted APIs) via LiteLLM.

It implements :class:`~.base.Engine` for ``LLMConfig(backend="hosted")``:

- :meth:`HostedEngine.format_chat` is :func:`~.chat.format_chat`, a reversible
  serialisation: each request's ``prefix + suffix`` is turned back into the exact messages the
  grader formatted (:func:`~.chat.parse_chat`); the assistant opener is dropped, since
  a chat API answers a whole turn.
- :meth:`HostedEngine.score` sends each request's messages with the judgment's JSON schema as
  ``response_format`` (``CriterionJudgment`` or ``MultiChoiceJudgment`` from
  :mod:`autorubric_local.core.types`, as the request's ``answer`` says: the grader sets it on
  every request, :class:`~autorubric_local.engine.requests.AnswerSpec`; a request without it
  is read from its labels, or for an explanation from the prompt text, :func:`_answer_key`),
  all requests concurrently (bounded by
  ``max_parallel_requests``), and reads the verdict from the validated answer; the label
  distribution comes from ``top_logprobs`` where the server returns them, else it is one-hot
  (``LabelScores.one_hot``; :mod:`~.labels`). An answer that does not validate is
  retried (``max_retries``) and then the judgment fails with a ``parse:`` error (never a
  guessed verdict); a failed call fails it with an ``infrastructure:`` error.
- Every result carries the call's price, ``cost_usd`` (:attr:`GenerateResult.cost`); an
  answer used a second time (explain mode) or served from the response cache costs 0.0.
- :meth:`HostedEngine.generate` returns the explanation of the same answer: the engine keeps
  each answer (by messages) so explain mode costs one call per judgment. The explanation is
  the server's own, written with its verdict; it is not conditioned on a verdict chosen by
  label probabilities (they agree unless ``top_logprobs`` put another label first).

Not supported: tokenization (``prompt_tokens``), so ``on_overflow="truncate"`` cannot cut a
hosted prompt; a too-long prompt fails with the server's error.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import threading
import time
from collections import OrderedDict
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
_MEMO_SIZE = 4096
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
        self._answers: OrderedDict[str, GenerateResult] = OrderedDict()
        self._capacity = _MEMO_SIZE  # answers kept: at least the largest score() call's requests
        self._lock = threading.Lock()

    def format_chat(self, messages: list[dict[str, str]]) -> str:
        """Reversible serialisation of ``messages``, assistant turn opened (:mod:`~.chat`)."""
        return format_chat(messages)

    def score(self, requests: Sequence[ScoreRequest]) -> list[LabelScores]:
        """One structured call per request (concurrently); results in input order.

        Every answer is kept for the call that follows (explain mode asks for the explanations
        of a chunk's judgments right after scoring them; reasoning first, the verdicts right
        after the reasoning): the memo holds at least as many answers as the largest call, so
        no judgment costs a second call, whatever the chunk size (:meth:`_reserve`).

        Raises
        ------
        EngineContractError
            A request has no ``judgment`` (:func:`structured`).
        """
        structured(requests, "HostedEngine.score")
        self._reserve(len(requests))
        return _run_all([lambda r=r: self._score_one(r) for r in requests])

    def generate(self, requests: Sequence[GenerateRequest]) -> list[Generation]:
        """The explanation of each request's answer (from the kept answer, else a new call).

        Raises
        ------
        EngineContractError
            A request has no ``judgment`` (:func:`structured`).
        """
        structured(requests, "HostedEngine.generate")
        self._reserve(len(requests))
        return _run_all([lambda r=r: self._generate_one(r) for r in requests])

    def _reserve(self, n: int) -> None:
        """Room for ``n`` more kept answers (the memo's size never falls below the largest call).
        Kept answers drop LiteLLM's response object, so each costs its text and label data only."""
        with self._lock:
            self._capacity = max(self._capacity, n)

    async def _answer(self, judgment: JudgeRequest) -> tuple[GenerateResult, bool]:
        """The answer to ``judgment``'s messages and whether it was kept from an earlier call."""
        messages = judgment_messages(judgment)
        key = judgment.answer.key
        memo = json.dumps([key, messages], ensure_ascii=False)
        with self._lock:
            kept = self._answers.get(memo)
        if kept is not None:
            return kept, True
        result = await self.client.complete(messages, judgment.answer.schema, top_logprobs=self.top_logprobs)
        with self._lock:
            self._answers[memo] = dataclasses.replace(result, raw_response=None)
            while len(self._answers) > self._capacity:
                self._answers.popitem(last=False)
        return result, False

    async def _score_one(self, request: ScoreRequest) -> LabelScores:
        started = time.perf_counter()
        judgment = request.judgment
        assert judgment is not None  # structured() checked every request
        key, values = judgment.answer.key, judgment.answer.values
        try:
            result, kept = await self._answer(judgment)
        except Exception as exc:  # recorded on this judgment, by category; the batch goes on
            return LabelScores((), seconds=time.perf_counter() - started, cost_usd=_failed_cost(exc),
                               error=f"{error_category(exc)}: {type(exc).__name__}: {exc}")
        usage = TokenUsage() if kept else (result.usage or TokenUsage())
        cost = 0.0 if kept else result.cost
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
            result, kept = await self._answer(judgment)
        except Exception as exc:  # recorded on this judgment, by category
            return Generation("", seconds=time.perf_counter() - started, cost_usd=_failed_cost(exc),
                              error=f"{error_category(exc)}: {type(exc).__name__}: {exc}")
        text = continued_explanation(judgment.step.start, result.parsed.explanation)
        return Generation(text, usage=TokenUsage() if kept else (result.usage or TokenUsage()),
                          seconds=time.perf_counter() - started, cost_usd=0.0 if kept else result.cost)


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


def _answer_key(messages: list[dict[str, str]], opener: str) -> str:
    """The verdict key of a generate request built without ``answer`` (a third party's; the
    grader always sets it): from the opener after a verdict, else (reasoning first, the opener
    holds no key yet) from the criterion block, which lists ``Options:`` for a multi-choice
    criterion (``graders/prompts.criterion_text``). A guess from our own prompt layout: a
    requirement holding that layout, or a selection task's block, is guessed wrong."""
    if '"selected_option"' in opener:
        return "selected_option"
    if '"criterion_status"' in opener:
        return "criterion_status"
    block = messages[-1]["content"].rsplit("<criterion>", 1)[-1] if messages else ""
    return "selected_option" if "\nOptions:\n1. " in block else "criterion_status"


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
