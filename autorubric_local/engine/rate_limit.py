"""``LLMConfig.max_parallel_requests``: at most N requests in flight per provider or engine.

A provider is the LiteLLM provider prefix of the model string (``openai`` in
``openai/qwen2.5``) together with the API base, so two servers reached through the same
OpenAI-compatible protocol are limited separately. A local engine is its own provider
(:func:`engine_key`): the limit counts its batched calls in flight. The limit is process-wide:
one ``threading.BoundedSemaphore`` per (key, limit), shared by every client, thread and event
loop of the process; an async caller waits for a slot without blocking its event loop
(:func:`request_slot`), a thread blocks (:func:`blocking_slot`).
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import AsyncIterator, Iterator
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from autorubric_local.engine.base import Engine

__all__ = ["blocking_slot", "engine_key", "provider_key", "request_slot"]

_LOCK = threading.Lock()
_SLOTS: dict[tuple[str, int], threading.BoundedSemaphore] = {}
_POLL_SECONDS = 0.005


def provider_key(model: str, api_base: str | None) -> str:
    """``"<provider>@<api_base>"``: the model's LiteLLM provider prefix (``"openai"`` for
    ``"openai/x"``, the whole string when it has no ``/``) and the API base (``"default"``)."""
    provider = model.split("/", 1)[0] if "/" in model else model
    return f"{provider}@{(api_base or 'default').rstrip('/')}"


def engine_key(engine: Engine) -> str:
    """``"engine:<model_id>@<object id>"``: the key of one loaded local engine (every grader and
    judge using that engine object shares its slots)."""
    return f"engine:{engine.model_id}@{id(engine):x}"


def _semaphore(key: str, limit: int | None) -> threading.BoundedSemaphore | None:
    """The shared slots of ``key`` at ``limit`` (None when there is no limit).

    Raises
    ------
    ValueError
        If ``limit`` is below 1.
    """
    if limit is None:
        return None
    if limit < 1:
        raise ValueError(f"max_parallel_requests must be >= 1, got {limit}")
    with _LOCK:
        return _SLOTS.setdefault((key, limit), threading.BoundedSemaphore(limit))


@contextlib.asynccontextmanager
async def request_slot(key: str, limit: int | None) -> AsyncIterator[None]:
    """Hold one of ``limit`` slots of provider ``key`` for the block; no limit when None.

    Raises
    ------
    ValueError
        If ``limit`` is below 1.
    """
    semaphore = _semaphore(key, limit)
    if semaphore is None:
        yield
        return
    while not semaphore.acquire(blocking=False):
        await asyncio.sleep(_POLL_SECONDS)
    try:
        yield
    finally:
        semaphore.release()


@contextlib.contextmanager
def blocking_slot(key: str, limit: int | None) -> Iterator[None]:
    """Hold one of ``limit`` slots of ``key`` for the block, waiting in this thread; no limit
    when None. The slots are those of :func:`request_slot` (same key, same limit).

    Raises
    ------
    ValueError
        If ``limit`` is below 1.
    """
    semaphore = _semaphore(key, limit)
    if semaphore is None:
        yield
        return
    with semaphore:
        yield
