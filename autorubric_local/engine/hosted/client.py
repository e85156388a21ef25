"""``HostedClient``: the hosted backend's client for hosted and server models, through LiteLLM;
AutoRubric's ``LLMClient`` (:mod:`autorubric_local.client.api`) and the hosted engine call it.

Every ``LLMConfig`` option means what AutoRubric says (AutoRubric's README, "LLMConfig Options"):

- ``model``: LiteLLM's model string, e.g. ``"openai/gpt-4.1-mini"`` or, for an
  OpenAI-compatible server (``vllm serve``, llama.cpp's server, Ollama), ``"openai/<name>"``
  with ``api_base="http://host:port/v1"``.
- ``temperature``, ``max_tokens``, ``top_p``, ``seed``: sent as given (``temperature``,
  ``top_p``/``seed`` only when set: ``temperature=None`` leaves the provider's default);
  ``timeout`` (seconds per request) too.
- ``max_retries``: further attempts after a transient failure (429, 5xx, timeout, connection
  error; :func:`~.litellm_loader.is_transient`) or a response that does not validate against
  ``response_format``, waiting ``retry_min_wait * 2**attempt`` s (at most ``retry_max_wait``;
  AutoRubric's defaults 1 s and 60 s) between attempts (:func:`backoff_seconds`). A client
  error (400, 401, 404, 422 ...) is raised at once. LiteLLM's and the OpenAI SDK's own retries
  are switched off, so every attempt is one request.
- ``max_parallel_requests``: at most this many requests in flight per provider and API base,
  process-wide (:mod:`~autorubric_local.engine.rate_limit`).
- ``cache_enabled``/``cache_dir``/``cache_ttl``: the SQLite response cache
  (:mod:`~autorubric_local.engine.response_cache`); a cached answer sends no request.
- ``thinking``: a level, a token budget or a :class:`~autorubric_local.engine.hosted_types.ThinkingConfig`, sent as
  ``reasoning_effort`` / ``thinking`` (:meth:`ThinkingConfig.request_params`); the trace comes
  back in ``GenerateResult.thinking`` and, with a ``response_format`` that has a ``reasoning``
  field, in that field.
- ``prompt_caching``: for Anthropic models (``anthropic/...``, ``claude...``) the system message
  carries ``cache_control: ephemeral``; other providers cache prefixes on their own.
- ``api_key``, ``api_base``, ``extra_headers``: sent with each request; keys may also come from
  the environment or a ``.env`` file (:func:`~.litellm_loader.load_litellm`).
- ``extra_params``: further LiteLLM/provider parameters, sent as given, except
  ``response_format_type`` (ours, never sent): how a ``response_format`` goes out.
  ``"json_schema"`` (default, OpenAI's form: ``{"type": "json_schema", "json_schema": {"name",
  "schema"}}``) or ``"json_object"`` (``{"type": "json_object", "schema": {...}}``, the form
  llama-cpp-python's server takes: 0.3.36 answers ``json_schema`` with HTTP 500), and
  ``top_logprobs`` (ours too): alternatives per token the hosted engine asks for (default 5;
  0 for a provider that refuses ``logprobs``).

The config is read by attribute (:class:`HostedSettings`), so both this package's
``LLMConfig`` and any object with those fields work.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any, Protocol, TypeVar

from pydantic import BaseModel, ValidationError

from autorubric_local.core.reports import TokenUsage
from autorubric_local.engine.base import add_costs
from autorubric_local.engine.hosted_types import GenerateResult, thinking_config
from autorubric_local.engine.hosted.litellm_loader import is_transient, load_litellm
from autorubric_local.engine.rate_limit import provider_key, request_slot
from autorubric_local.engine.response_cache import ResponseCache, cache_key

__all__ = ["HostedClient", "HostedSettings", "ResponseParseError", "backoff_seconds"]

T = TypeVar("T", bound=BaseModel)

SETTINGS: tuple[str, ...] = (
    "model", "temperature", "max_tokens", "top_p", "seed", "thinking", "timeout", "max_retries",
    "max_parallel_requests", "cache_enabled", "cache_dir", "cache_ttl", "prompt_caching", "api_key",
    "api_base", "extra_headers", "extra_params", "retry_min_wait", "retry_max_wait",
)
"""The ``LLMConfig`` fields a hosted call reads; ``answer(**kwargs)`` may override any of them."""
RESPONSE_FORMAT_TYPES = ("json_schema", "json_object")
RETRY_WAITS: dict[str, float] = {"retry_min_wait": 1.0, "retry_max_wait": 60.0}
"""AutoRubric's retry waits, for a config object that does not have those fields."""


class HostedSettings(Protocol):
    """What :class:`HostedClient` reads from its config (``LLMConfig`` has all of it)."""

    model: str
    temperature: float | None
    max_tokens: int
    top_p: float | None
    seed: int | None
    thinking: Any
    timeout: float | None
    max_retries: int
    max_parallel_requests: int | None
    cache_enabled: bool
    cache_dir: str
    cache_ttl: int | None
    prompt_caching: bool
    api_key: str | None
    api_base: str | None
    extra_headers: dict[str, str]
    extra_params: dict[str, Any]
    # retry_min_wait, retry_max_wait: float, read when present (else RETRY_WAITS)


class ResponseParseError(ValueError):
    """A response that did not validate against ``response_format`` after every retry.

    Attributes
    ----------
    content : str
        The last response text.
    cost : float or None
        USD of every response received for the call (they are billed though none validated);
        None when a price is unknown.
    """

    def __init__(self, message: str, content: str, cost: float | None = 0.0) -> None:
        super().__init__(message)
        self.content = content
        self.cost = cost


def backoff_seconds(attempt: int, min_wait: float = 1.0, max_wait: float = 60.0) -> float:
    """Wait before retry number ``attempt`` (0-based): ``min(max_wait, min_wait * 2**attempt)``
    seconds (``LLMConfig.retry_min_wait``/``retry_max_wait``)."""
    return min(max_wait, min_wait * 2**attempt)


class HostedClient:
    """A client for one hosted or server model, with retries, rate limit and response cache.

    Parameters
    ----------
    config : LLMConfig (or any :class:`HostedSettings`)
    cache_namespace : str, optional
        Part of every cache key, to keep the cached answers of clients that send identical
        requests apart (e.g. several judges sampling one model).

    Raises
    ------
    ValueError
        If ``config.model`` is empty.
    """

    def __init__(self, config: HostedSettings, *, cache_namespace: str | None = None) -> None:
        if not config.model:
            raise ValueError("LLMConfig.model is required and cannot be empty")
        self.config = config
        self._namespace = cache_namespace
        self._cache: ResponseCache | None = None

    def _settings(self, overrides: dict[str, Any]) -> dict[str, Any]:
        unknown = sorted(set(overrides) - set(SETTINGS))
        if unknown:
            raise TypeError(f"unknown LLMConfig override(s) {unknown}; allowed: {', '.join(SETTINGS)}")
        settings = {name: getattr(self.config, name, RETRY_WAITS.get(name)) for name in SETTINGS}
        settings.update(overrides)
        return settings

    def _response_cache(self, settings: dict[str, Any]) -> ResponseCache:
        directory = Path(settings["cache_dir"])
        if self._cache is None or self._cache.directory != directory or self._cache.ttl != settings["cache_ttl"]:
            self._cache = ResponseCache(directory, settings["cache_ttl"])
        return self._cache

    async def answer(
        self,
        system_prompt: str,
        user_prompt: str,
        response_format: type[T] | None = None,
        *,
        use_cache: bool | None = None,
        **kwargs: Any,
    ) -> GenerateResult:
        """One call of a system and a user message, optionally with a structured answer: what
        AutoRubric's ``LLMClient.generate`` (:mod:`autorubric_local.client.api`) sends, which
        shapes the result it returns.

        Parameters
        ----------
        system_prompt, user_prompt : str
        response_format : pydantic model class, optional
            The answer must validate against it; its JSON schema is sent (see the module
            docstring for the two forms).
        use_cache : bool, optional
            None: ``config.cache_enabled``; True/False forces the response cache on or off.
        **kwargs
            Overrides of any ``LLMConfig`` field in :data:`SETTINGS` for this call
            (``temperature=None`` leaves the provider's default).

        Raises
        ------
        ResponseParseError
            If no attempt gave a response that validates against ``response_format``.
        litellm.APIError subclasses
            The last transient failure once ``max_retries`` are spent, or a client error at once.
        EngineError
            When LiteLLM is not installed.
        """
        messages = [{"role": "system", "content": system_prompt}, {"role": "user", "content": user_prompt}]
        return await self.complete(messages, response_format, use_cache=use_cache, **kwargs)

    async def complete(
        self,
        messages: list[dict[str, Any]],
        response_format: type[T] | None = None,
        *,
        use_cache: bool | None = None,
        top_logprobs: int = 0,
        **kwargs: Any,
    ) -> GenerateResult:
        """One call with a whole messages list; what :meth:`answer` and the hosted engine use.

        ``top_logprobs`` > 0 asks for that many alternatives per output token
        (``GenerateResult.logprobs``). Other parameters, return value and errors as in
        :meth:`answer`.
        """
        settings = self._settings(kwargs)
        params = _request_params(settings, messages, response_format, top_logprobs)
        should_cache = settings["cache_enabled"] if use_cache is None else use_cache
        key = None
        if should_cache:
            # everything that decides the answer (api_base included); not the key, headers or timeout
            key = cache_key(namespace=self._namespace,
                            **{k: v for k, v in params.items() if k not in ("timeout", "api_key", "extra_headers")})
            body = self._response_cache(settings).get(key)
            if body is not None:
                return _result(body, response_format, raw=None, cost=0.0, cached=True)
        limit_key = provider_key(settings["model"], settings["api_base"])
        attempts = settings["max_retries"] + 1
        spent: float | None = 0.0  # USD of the responses received so far (None once one is unpriced)
        for attempt in range(attempts):
            try:
                async with request_slot(limit_key, settings["max_parallel_requests"]):
                    response = await load_litellm().acompletion(**params)
            except Exception as exc:  # LiteLLM raises many types; only transient ones are retried
                if attempt + 1 < attempts and is_transient(exc):
                    await asyncio.sleep(backoff_seconds(attempt, settings["retry_min_wait"], settings["retry_max_wait"]))
                    continue
                raise
            body = _body(response)
            spent = add_costs(spent, _cost(response))
            try:
                result = _result(body, response_format, raw=response, cost=spent, cached=False)
            except ResponseParseError as exc:
                exc.cost = spent
                if attempt + 1 < attempts:
                    await asyncio.sleep(backoff_seconds(attempt, settings["retry_min_wait"], settings["retry_max_wait"]))
                    continue
                raise
            if key is not None:
                self._response_cache(settings).put(key, body)
            return result
        raise AssertionError("unreachable: the last attempt returns or raises")

    def clear_cache(self) -> int:
        """Delete every cached response under ``config.cache_dir``; returns how many there were."""
        if not Path(self.config.cache_dir).is_dir():
            return 0
        return self._response_cache(self._settings({})).clear()

    def cache_stats(self) -> dict[str, Any]:
        """``{'size': bytes, 'count': entries, 'directory': str}`` of the response cache."""
        return self._response_cache(self._settings({})).stats()

    def close(self) -> None:
        """Forget the cache handle (each cache operation opens and closes its own connection)."""
        self._cache = None

    def __enter__(self) -> HostedClient:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


def _request_params(settings: dict[str, Any], messages: list[dict[str, Any]],
                    response_format: type[BaseModel] | None, top_logprobs: int) -> dict[str, Any]:
    """The keyword arguments of ``litellm.acompletion`` for one request."""
    extra = dict(settings["extra_params"] or {})
    format_type = extra.pop("response_format_type", "json_schema")
    extra.pop("top_logprobs", None)  # the hosted engine's setting, passed as ``top_logprobs``
    if format_type not in RESPONSE_FORMAT_TYPES:
        raise ValueError(f"LLMConfig.extra_params['response_format_type'] must be one of {RESPONSE_FORMAT_TYPES}, "
                         f"got {format_type!r}")
    model = settings["model"]
    params: dict[str, Any] = {"model": model, "messages": _with_prompt_caching(messages, settings),
                              "max_tokens": settings["max_tokens"], "max_retries": 0, "num_retries": 0}
    if settings["temperature"] is not None:
        params["temperature"] = settings["temperature"]
    for name in ("top_p", "seed", "timeout", "api_key", "api_base"):
        if settings[name] is not None:
            params[name] = settings[name]
    if settings["extra_headers"]:
        params["extra_headers"] = dict(settings["extra_headers"])
    thinking = thinking_config(settings["thinking"])
    if thinking is not None:
        params.update(thinking.request_params())
    if response_format is not None:
        schema = response_format.model_json_schema()
        params["response_format"] = (
            {"type": "json_object", "schema": schema} if format_type == "json_object"
            else {"type": "json_schema", "json_schema": {"name": response_format.__name__, "schema": schema}}
        )
    if top_logprobs > 0:
        params["logprobs"] = True
        params["top_logprobs"] = top_logprobs
    params.update(extra)
    return params


def _with_prompt_caching(messages: list[dict[str, Any]], settings: dict[str, Any]) -> list[dict[str, Any]]:
    model = settings["model"].lower()
    if not settings["prompt_caching"] or not (model.startswith("anthropic/") or model.startswith("claude")):
        return messages
    marked = []
    for message in messages:
        if message["role"] == "system" and isinstance(message["content"], str):
            message = {"role": "system", "content": [
                {"type": "text", "text": message["content"], "cache_control": {"type": "ephemeral"}}]}
        marked.append(message)
    return marked


def _body(response: Any) -> dict[str, Any]:
    """What is kept of a response (and cached): content, thinking, usage, token log-probabilities."""
    choice = response.choices[0]
    message = choice.message
    usage = getattr(response, "usage", None)
    details = getattr(usage, "prompt_tokens_details", None)
    body: dict[str, Any] = {
        "content": message.content or "",
        "thinking": getattr(message, "reasoning_content", None),
        "usage": {
            "prompt_tokens": int(getattr(usage, "prompt_tokens", 0) or 0),
            "completion_tokens": int(getattr(usage, "completion_tokens", 0) or 0),
            "cache_read_input_tokens": int(getattr(details, "cached_tokens", 0) or 0),
        },
        "logprobs": None,
    }
    logprobs = getattr(choice, "logprobs", None)
    content = getattr(logprobs, "content", None) if logprobs is not None else None
    if content is None and isinstance(logprobs, dict):
        content = logprobs.get("content")
    if content:
        body["logprobs"] = [_token_entry(entry) for entry in content]
    return body


def _token_entry(entry: Any) -> dict[str, Any]:
    get = entry.get if isinstance(entry, dict) else lambda name, default=None: getattr(entry, name, default)
    top = get("top_logprobs") or []
    pairs = []
    for alt in top:
        alt_get = alt.get if isinstance(alt, dict) else lambda name, default=None, a=alt: getattr(a, name, default)
        pairs.append([alt_get("token"), float(alt_get("logprob"))])
    return {"token": get("token"), "logprob": float(get("logprob")), "top": pairs}


def _result(body: dict[str, Any], response_format: type[BaseModel] | None, *, raw: Any, cost: float | None,
            cached: bool) -> GenerateResult:
    """A :class:`GenerateResult` from a stored body.

    Raises
    ------
    ResponseParseError
        If ``response_format`` is given and the content does not validate.
    """
    parsed = None
    if response_format is not None:
        try:
            parsed = response_format.model_validate_json(body["content"])
        except ValidationError as exc:
            raise ResponseParseError(
                f"response does not validate against {response_format.__name__}: {exc.errors()[0]['msg']}",
                body["content"]) from exc
        if body.get("thinking") and "reasoning" in type(parsed).model_fields:
            parsed = parsed.model_copy(update={"reasoning": body["thinking"]})
    return GenerateResult(
        content=body["content"], thinking=body.get("thinking"), raw_response=raw,
        usage=TokenUsage.of(**body["usage"]), cost=cost, parsed=parsed, cached=cached, logprobs=body.get("logprobs"),
    )


def _cost(response: Any) -> float | None:
    """USD of one response: the ``response_cost`` LiteLLM computed for it (which honours
    per-call prices such as ``extra_params={"input_cost_per_token": ...,
    "output_cost_per_token": ...}``), else ``litellm.completion_cost``; None when LiteLLM has no
    price for the model (a self-hosted server's model, unless its price is given that way)."""
    hidden = getattr(response, "_hidden_params", None) or {}
    known = hidden.get("response_cost") if isinstance(hidden, dict) else None
    if known is not None:
        return float(known)
    litellm = load_litellm()
    try:
        return float(litellm.completion_cost(completion_response=response))
    except Exception:  # LiteLLM raises a plain Exception for a model missing from its price map
        return None
