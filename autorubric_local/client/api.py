"""AutoRubric's client API: ``LLMClient``, ``generate``, ``GenerateResult``, ``ThinkingConfig``.

:class:`LLMClient` serves hosted and server models through LiteLLM
(:class:`autorubric_local.engine.hosted.client.HostedClient`, docs/backends.md, "Hosted and server judges")
and local models in this process (:class:`autorubric_local.client.local.LocalClient`):
which one is chosen from the config (:func:`is_local`). :func:`generate` is the one-shot form.
LiteLLM and the local model are loaded on the first call, not here.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Protocol, TypeVar

from pydantic import BaseModel

from autorubric_local.core import debug
from autorubric_local.core.errors import ModelNotFoundError
from autorubric_local.engine.hosted.client import HostedClient
from autorubric_local.engine.hosted.client import ResponseParseError
from autorubric_local.engine.hosted_types import (
    GenerateResult,
    ThinkingConfig,
    ThinkingLevel,
)
from autorubric_local.engine.response_cache import ResponseCache
from autorubric_local.judges.config import LLMConfig

__all__ = ["GenerateResult", "LLMClient", "ResponseParseError", "ThinkingConfig", "ThinkingLevel", "generate",
           "is_local"]

T = TypeVar("T", bound=BaseModel)


class Answerer(Protocol):
    """What answers an :class:`LLMClient`: the hosted backend's ``HostedClient`` or a local
    engine's ``LocalClient``."""

    async def answer(self, system_prompt: str, user_prompt: str, response_format: type[T] | None = None, *,
                     use_cache: bool | None = None, **kwargs: Any) -> GenerateResult: ...

    def clear_cache(self) -> int: ...

    def cache_stats(self) -> dict[str, Any]: ...


def shaped(result: GenerateResult, response_format: type[T] | None, *, whole: bool) -> str | T | GenerateResult:
    """What AutoRubric's ``generate`` returns for ``result``: all of it when ``whole``
    (``return_result`` or ``return_thinking``), else the validated ``response_format`` instance
    when one was asked for, else the text."""
    if whole:
        return result
    return result.parsed if response_format is not None else result.content


def is_local(config: LLMConfig) -> bool:
    """Whether ``config`` names a model run in this process rather than over HTTP.

    True for ``engine=`` (unless it is a hosted engine), for the local backends
    (``"transformers"``, ``"vllm"``, ``"llamacpp"``: a record with ``local``) and for
    ``"server"`` (a running llama.cpp or vLLM server, answered through this package's engine for
    it, not LiteLLM); False for ``"hosted"``. ``"auto"``: True
    when the model is found locally (a preset, a Hugging Face folder or a GGUF file:
    :func:`~autorubric_local.judges.presets.resolve_model`), else False, so AutoRubric's
    ``LLMConfig(model="openai/gpt-4.1-mini")`` stays a hosted call.
    """
    if config.engine is not None:
        return not config.engine.capabilities.hosted
    if config.backend != "auto":
        from autorubric_local.judges.backends.registry import backend_named

        record = backend_named(config.backend)
        return record.local or record.name == "server"  # a server judge answers through its own engine
    from autorubric_local.judges.presets import resolve_model

    try:
        resolve_model(config.model)
    except ModelNotFoundError:
        return False
    return True


class LLMClient:
    """AutoRubric's ``LLMClient`` for a hosted, server or local model.

    Methods, arguments and results are AutoRubric's (``generate``, ``clear_cache``,
    ``cache_stats``); a local model answers through
    :class:`~autorubric_local.client.local.LocalClient` (what it does not support is
    listed there). The model is loaded on the first ``generate``.

    Parameters
    ----------
    config : LLMConfig
    cache_namespace : str, optional
        Hosted calls only: part of every cache key (:class:`~autorubric_local.engine.hosted.client.HostedClient`).

    Raises
    ------
    ValueError
        If ``config.model`` is empty.
    """

    def __init__(self, config: LLMConfig, *, cache_namespace: str | None = None) -> None:
        if not config.model:
            raise ValueError("LLMConfig.model is required and cannot be empty")
        self.config = config
        self._namespace = cache_namespace
        self._client: Answerer | None = None

    @property
    def client(self) -> Answerer:
        """The client that answers: a ``HostedClient`` or a ``LocalClient`` (built once;
        a local one loads its model, shared with graders: ``judges.engines.load_engine``)."""
        if self._client is None:
            if is_local(self.config):
                from autorubric_local.client.local import LocalClient
                from autorubric_local.judges.engines import load_engine

                self._client = LocalClient(load_engine(self.config), self.config)
            else:
                self._client = HostedClient(self.config, cache_namespace=self._namespace)
        return self._client

    async def generate(
        self,
        system_prompt: str,
        user_prompt: str,
        response_format: type[T] | None = None,
        use_cache: bool | None = None,
        return_thinking: bool = False,
        return_result: bool = False,
        **kwargs: Any,
    ) -> str | T | GenerateResult:
        """One call: text, the validated ``response_format`` instance, or (``return_result`` or
        ``return_thinking``) the whole :class:`GenerateResult` (:func:`shaped`); arguments, overrides
        and errors as :meth:`~autorubric_local.engine.hosted.client.HostedClient.answer` and, for a
        local model, :meth:`~autorubric_local.client.local.LocalClient.answer`."""
        debug.show_prompts([f"[system]\n{system_prompt}\n[user]\n{user_prompt}"],
                           f"LLMClient.generate ({self.config.model})")
        result = await self.client.answer(system_prompt, user_prompt, response_format, use_cache=use_cache, **kwargs)
        return shaped(result, response_format, whole=return_result or return_thinking)

    def clear_cache(self) -> int:
        """Delete every cached response under ``config.cache_dir``; returns how many there were."""
        if not Path(self.config.cache_dir).is_dir():
            return 0
        return ResponseCache(self.config.cache_dir, self.config.cache_ttl).clear()

    def cache_stats(self) -> dict[str, Any]:
        """``{'size': bytes, 'count': entries, 'directory': str}`` of the response cache."""
        return ResponseCache(self.config.cache_dir, self.config.cache_ttl).stats()

    def close(self) -> None:
        """Forget the answering client (a local model stays loaded for other users)."""
        self._client = None

    def __enter__(self) -> LLMClient:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


async def generate(
    system_prompt: str,
    user_prompt: str,
    model: str,
    response_format: type[T] | None = None,
    **kwargs: Any,
) -> str | T:
    """One call to a hosted, server or local model, without keeping a client (:class:`LLMClient`).

    Parameters
    ----------
    system_prompt, user_prompt : str
    model : str
        LiteLLM model string, e.g. ``"openai/gpt-4.1-mini"``, or ``"openai/<name>"`` with
        ``api_base=`` for an OpenAI-compatible server; or a local model (preset name, folder,
        GGUF file; :func:`is_local`).
    response_format : pydantic model class, optional
        Ask for, and validate, a structured answer.
    **kwargs
        Further ``LLMConfig`` fields (``api_base``, ``temperature``, ``max_retries`` ...).

    Returns
    -------
    str or the ``response_format`` instance

    Raises
    ------
    pydantic.ValidationError
        On an invalid ``LLMConfig`` field.
    ResponseParseError, litellm.APIError, EngineError
        As :meth:`LLMClient.generate`.
    ModelNotFoundError, InputError
        For a local model that cannot be found or loaded with these settings.
    """
    client = LLMClient(LLMConfig(model=model, **kwargs))
    return await client.generate(system_prompt, user_prompt, response_format=response_format)  # type: ignore[return-value]
