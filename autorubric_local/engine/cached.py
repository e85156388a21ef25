"""A local engine behind ``LLMConfig``'s request settings: the response cache and the limit of calls in flight.

AutoRubric's ``cache_enabled`` / ``cache_dir`` / ``cache_ttl`` and ``max_parallel_requests``
(AutoRubric's README, "Response Caching", "Rate Limiting") describe requests to an API. For a local judge
(transformers, llama.cpp, vLLM, or an engine passed as ``LLMConfig(engine=...)``) they mean:

- ``cache_enabled``: each answer the engine computes (the label log-probabilities of a
  :class:`~.base.ScoreRequest`, the text of a :class:`~.base.GenerateRequest`) is kept in the
  same SQLite response cache hosted calls use (:class:`~.response_cache.ResponseCache` under
  ``cache_dir``, entries served for ``cache_ttl`` seconds, None: until cleared), keyed by the
  engine's class and ``model_id``, the exact prompt (prefix and suffix), the labels or the
  decoding budget, sentence switch and regex, and the settings that can change an answer
  (``temperature``, ``top_p``, ``seed``, ``dtype``, ``device``). A request answered before is
  served from the cache and never reaches the model; only the others are sent, in one batched
  call. An answer with an error is not kept. A cached answer repeats the token ``usage``
  recorded when it was computed, with 0 seconds of engine time and no cost.
- ``max_parallel_requests``: at most that many batched calls in flight to the engine at once,
  process-wide (:func:`~.rate_limit.blocking_slot`, keyed by the engine object). One grading
  pass makes its engine calls one after the other; calls overlap when several passes run at
  once, e.g. ``asyncio.gather`` over ``Rubric.grade`` calls, each in a worker thread. 1
  serialises them; any value >= 1 is accepted.

The hosted engine does both itself (:mod:`~.hosted.client`), so :func:`with_request_settings`
leaves it alone.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict
from typing import Any

from autorubric_local.core.reports import TokenUsage
from autorubric_local.engine.base import (
    Engine,
    EngineContractError,
    GenerateRequest,
    Generation,
    LabelScores,
    ScoreRequest,
)
from autorubric_local.engine.capabilities import EngineCapabilities
from autorubric_local.engine.rate_limit import blocking_slot, engine_key
from autorubric_local.engine.response_cache import ResponseCache, cache_key

__all__ = ["ANSWER_SETTINGS", "CachedEngine", "with_request_settings"]

ANSWER_SETTINGS: tuple[str, ...] = ("temperature", "top_p", "seed", "dtype", "device")
"""``LLMConfig`` fields in every local cache key: settings that can change an engine's answer."""


class CachedEngine:
    """``engine`` with a response cache and/or a limit of calls in flight (module docstring).

    Parameters
    ----------
    engine : Engine
    cache : ResponseCache, optional
        Where answers are kept; None: no caching.
    limit : int >= 1, optional
        Batched calls in flight to ``engine`` at once, process-wide; None: no limit.
    settings : dict, optional
        JSON-serialisable values that can change an answer, part of every key.

    Raises
    ------
    ValueError
        If ``limit`` is below 1.
    """

    capabilities = EngineCapabilities()
    """A wrapper that only scores and generates: no backend of its own, no token counting."""

    def __init__(self, engine: Engine, *, cache: ResponseCache | None = None, limit: int | None = None,
                 settings: dict[str, Any] | None = None) -> None:
        if limit is not None and limit < 1:
            raise ValueError(f"max_parallel_requests must be >= 1, got {limit}")
        self.engine = engine
        self.cache = cache
        self.limit = limit
        self.model_id = engine.model_id
        self._slot = engine_key(engine)
        self._identity = {"engine": type(engine).__name__, "model_id": engine.model_id, **(settings or {})}

    def format_chat(self, messages: list[dict[str, str]]) -> str:
        """The wrapped engine's chat rendering."""
        return self.engine.format_chat(messages)

    def score(self, requests: Sequence[ScoreRequest]) -> list[LabelScores]:
        """Label scores of ``requests`` in input order: cached ones from the cache, the rest
        from one call to the engine (stored unless they failed)."""
        keys = [self._key("local-score", r.prefix, r.suffix, labels=list(r.labels)) for r in requests]
        found = self.cache.get_many(keys) if self.cache is not None else {}
        missing = [i for i, key in enumerate(keys) if key not in found]
        answered = self._call(self.engine.score, [requests[i] for i in missing])
        fresh = dict(zip(missing, answered, strict=True))
        self._store({keys[i]: _score_body(a) for i, a in fresh.items() if a.error is None})
        return [fresh[i] if i in fresh else _scores_from(found[key]) for i, key in enumerate(keys)]

    def generate(self, requests: Sequence[GenerateRequest]) -> list[Generation]:
        """Generations of ``requests`` in input order, cached like :meth:`score`."""
        return [generation for generation, _ in self.generate_with_hits(requests)]

    def generate_with_hits(self, requests: Sequence[GenerateRequest]) -> list[tuple[Generation, bool]]:
        """:meth:`generate`, each generation with whether it was read from the cache."""
        keys = [self._key("local-generate", r.prefix, r.suffix, max_new_tokens=r.max_new_tokens, sentence=r.sentence,
                          pattern=r.pattern)
                for r in requests]
        found = self.cache.get_many(keys) if self.cache is not None else {}
        missing = [i for i, key in enumerate(keys) if key not in found]
        answered = self._call(self.engine.generate, [requests[i] for i in missing])
        fresh = dict(zip(missing, answered, strict=True))
        self._store({keys[i]: _generation_body(g) for i, g in fresh.items() if g.error is None})
        return [(fresh[i], False) if i in fresh else (_generation_from(found[key]), True) for i, key in enumerate(keys)]

    def _key(self, kind: str, prefix: str, suffix: str, **request: Any) -> str:
        return cache_key(kind=kind, prefix=prefix, suffix=suffix, **request, **self._identity)

    def _call(self, method: Any, requests: list[Any]) -> list[Any]:
        if not requests:
            return []
        with blocking_slot(self._slot, self.limit):
            answered = list(method(requests))
        if len(answered) != len(requests):
            raise EngineContractError(f"engine returned {len(answered)} results for {len(requests)} requests")
        return answered

    def _store(self, entries: dict[str, dict[str, Any]]) -> None:
        if self.cache is not None:
            self.cache.put_many(entries)


def with_request_settings(engine: Engine, config: Any) -> Engine:
    """``engine`` behind ``config``'s ``cache_enabled``/``cache_dir``/``cache_ttl`` and
    ``max_parallel_requests`` (a :class:`CachedEngine`), or ``engine`` itself when neither is
    set or it is a hosted engine (which honours them itself).

    ``config`` is read by attribute (an ``LLMConfig``: those fields and :data:`ANSWER_SETTINGS`).
    """
    if engine.capabilities.hosted:
        return engine
    if not config.cache_enabled and config.max_parallel_requests is None:
        return engine
    cache = ResponseCache(config.cache_dir, config.cache_ttl) if config.cache_enabled else None
    settings = {name: getattr(config, name, None) for name in ANSWER_SETTINGS}
    return CachedEngine(engine, cache=cache, limit=config.max_parallel_requests, settings=settings)


def _score_body(scores: LabelScores) -> dict[str, Any]:
    return {"logprobs": list(scores.logprobs), "usage": asdict(scores.usage), "off_label_mass": scores.off_label_mass,
            "one_hot": scores.one_hot}


def _scores_from(body: dict[str, Any]) -> LabelScores:
    return LabelScores(tuple(body["logprobs"]), usage=TokenUsage(**body["usage"]), off_label_mass=body["off_label_mass"],
                       one_hot=body["one_hot"])


def _generation_body(generation: Generation) -> dict[str, Any]:
    return {"text": generation.text, "truncated": generation.truncated, "usage": asdict(generation.usage)}


def _generation_from(body: dict[str, Any]) -> Generation:
    return Generation(body["text"], truncated=body["truncated"], usage=TokenUsage(**body["usage"]))
