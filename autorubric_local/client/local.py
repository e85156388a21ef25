"""AutoRubric's ``LLMClient.generate`` on an in-process engine (transformers, llama.cpp, vLLM).

``LocalClient(engine, config).answer(system_prompt, user_prompt, response_format=None)`` has
the signature and result of the hosted client's
(:meth:`~autorubric_local.engine.hosted.client.HostedClient.answer`):

- the system and user messages are rendered with the engine's chat format
  (``engine.format_chat``, assistant turn opened); their text is marked untrusted
  (:mod:`~autorubric_local.engine.user_text`), so a ``"<|im_end|>"`` inside a prompt is read as characters, never as a
  control token;
- with a pydantic ``response_format``, decoding is constrained to the regex of its JSON schema
  (:func:`schema_regex`, Outlines' ``build_regex_from_schema``): the answer is valid JSON of that
  shape unless ``max_tokens`` cuts it, and is returned validated;
- without one, any text (:data:`~autorubric_local.engine.constrained.FREE_TEXT_REGEX`) until the model's
  end-of-sequence token or ``max_tokens``; special tokens never appear in it.

What does not carry over from the hosted client: ``max_retries`` (a failed local generation is
not retried: greedy decoding would repeat it), ``thinking`` (no separate reasoning trace), and
per-call overrides other than ``max_tokens`` (temperature and seed are fixed when the engine
is loaded). ``cache_enabled`` / ``cache_dir`` / ``cache_ttl`` use the response cache of local
judges (:mod:`~autorubric_local.engine.cached`); ``max_parallel_requests`` bounds the engine calls in flight.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from autorubric_local.core.errors import EngineError
from autorubric_local.core.reports import TokenUsage
from autorubric_local.engine.base import Engine, GenerateRequest, Generation
from autorubric_local.engine.cached import CachedEngine, with_request_settings
from autorubric_local.engine.constrained import FREE_TEXT_REGEX
from autorubric_local.engine.hosted.client import ResponseParseError
from autorubric_local.engine.hosted_types import GenerateResult
from autorubric_local.engine.response_cache import ResponseCache
from autorubric_local.engine.user_text import mark

__all__ = ["LocalClient", "schema_regex"]

T = TypeVar("T", bound=BaseModel)
_OVERRIDES = ("max_tokens",)


def schema_regex(response_format: type[BaseModel]) -> str:
    """The regex of ``response_format``'s JSON schema (Outlines' ``build_regex_from_schema``,
    compact whitespace): a generation that matches it is one JSON object of that shape."""
    from outlines_core import json_schema

    return json_schema.build_regex_from_schema(json.dumps(response_format.model_json_schema()))


class LocalClient:
    """``LLMClient`` for a local engine.

    Parameters
    ----------
    engine : Engine
        A loaded local engine (``judges.engines.load_engine``, ``from_transformers`` ...).
    config : LLMConfig
        Read by attribute: ``max_tokens``, ``cache_enabled``, ``cache_dir``, ``cache_ttl``,
        ``max_parallel_requests`` and the settings of :data:`~autorubric_local.engine.cached.ANSWER_SETTINGS`.
    """

    def __init__(self, engine: Engine, config: Any) -> None:
        self.engine = engine
        self.config = config

    async def answer(
        self,
        system_prompt: str,
        user_prompt: str,
        response_format: type[T] | None = None,
        *,
        use_cache: bool | None = None,
        **kwargs: Any,
    ) -> GenerateResult:
        """One generation (in a worker thread), arguments as
        :meth:`~autorubric_local.engine.hosted.client.HostedClient.answer`; AutoRubric's
        ``LLMClient.generate`` (:mod:`.api`) shapes what it returns.

        Raises
        ------
        ResponseParseError
            If the answer does not validate against ``response_format`` (cut by ``max_tokens``).
        EngineError
            If the engine failed (the prompt does not fit the context, ...).
        TypeError
            For an override other than ``max_tokens``.
        """
        (result,) = await asyncio.to_thread(
            self.complete_batch, [(system_prompt, user_prompt)], response_format, use_cache=use_cache, **kwargs)
        return result

    def complete_batch(
        self,
        prompts: Sequence[tuple[str, str]],
        response_format: type[BaseModel] | None = None,
        *,
        use_cache: bool | None = None,
        **kwargs: Any,
    ) -> list[GenerateResult]:
        """Generate for many ``(system_prompt, user_prompt)`` pairs in one engine call (extension).

        Returns one :class:`GenerateResult` per pair, in order (``cost`` 0.0, ``cached`` True
        for answers read from the response cache). Raises as :meth:`answer` on the first
        failed or non-validating answer.
        """
        unknown = sorted(set(kwargs) - set(_OVERRIDES))
        if unknown:
            raise TypeError(f"a local engine takes no per-call {unknown}; allowed: {', '.join(_OVERRIDES)} "
                            "(set the others in LLMConfig before the engine is loaded)")
        max_tokens = int(kwargs.get("max_tokens", self.config.max_tokens))
        pattern = FREE_TEXT_REGEX if response_format is None else schema_regex(response_format)
        requests = [GenerateRequest(self._prompt(system, user), "", max_tokens, pattern=pattern)
                    for system, user in prompts]
        engine = self._engine(use_cache)
        if isinstance(engine, CachedEngine):
            answered = engine.generate_with_hits(requests)
        else:
            answered = [(g, False) for g in engine.generate(requests)]
        return [_result(generation, cached, response_format) for generation, cached in answered]

    def _prompt(self, system_prompt: str, user_prompt: str) -> str:
        messages = [{"role": "system", "content": mark(system_prompt)}] if system_prompt else []
        return self.engine.format_chat([*messages, {"role": "user", "content": mark(user_prompt)}])

    def _engine(self, use_cache: bool | None) -> Engine:
        cache_enabled = self.config.cache_enabled if use_cache is None else use_cache
        return with_request_settings(self.engine, _Settings(self.config, cache_enabled))

    def clear_cache(self) -> int:
        """Delete every cached response under ``config.cache_dir``; returns how many there were."""
        return ResponseCache(self.config.cache_dir, self.config.cache_ttl).clear()

    def cache_stats(self) -> dict[str, Any]:
        """``{'size': bytes, 'count': entries, 'directory': str}`` of the response cache."""
        return ResponseCache(self.config.cache_dir, self.config.cache_ttl).stats()

    def close(self) -> None:
        """Nothing to release (the engine belongs to whoever loaded it)."""

    def __enter__(self) -> LocalClient:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


class _Settings:
    """``config`` with ``cache_enabled`` replaced (``use_cache``)."""

    def __init__(self, config: Any, cache_enabled: bool) -> None:
        self._config = config
        self.cache_enabled = cache_enabled

    def __getattr__(self, name: str) -> Any:
        return getattr(self._config, name)


def _result(generation: Generation, cached: bool, response_format: type[BaseModel] | None) -> GenerateResult:
    if generation.error is not None:
        raise EngineError(generation.error)
    parsed = None
    if response_format is not None:
        try:
            parsed = response_format.model_validate_json(generation.text)
        except ValidationError as exc:
            cut = " (cut at max_tokens)" if generation.truncated else ""
            raise ResponseParseError(
                f"response does not validate against {response_format.__name__}{cut}: {exc.errors()[0]['msg']}",
                generation.text, cost=0.0) from exc
    return GenerateResult(content=generation.text, usage=generation.usage or TokenUsage(), cost=0.0, parsed=parsed,
                          cached=cached)
