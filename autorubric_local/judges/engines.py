"""Turn an ``LLMConfig`` into a ready engine: check, resolve, load through its backend, cache in-process.

Before anything is resolved, the config is checked against its backend
(:func:`~.backends.support.check_backend_support`: a field the backend cannot honour, set to a
non-default value, is an :class:`~autorubric_local.core.errors.InputError`). The backend is then
looked up in the registry (:mod:`.backends`), which says how to load it and which loaded engines
may be shared; model files (GGUF conversion once, no custom model code) are
:mod:`.model_files`'s.

Loaded engines are shared within a process (one copy of the weights for many graders) until
they are released (:func:`release_engine`, :func:`release_engines`): the engine is shut down
(vLLM: its engine-core process and workers), dropped from the cache, and its memory returned
(``gc.collect()``, then ``torch.cuda.empty_cache()`` when CUDA is in use).
"""

from __future__ import annotations

import contextlib
import gc
import logging
import sys
import weakref
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from autorubric_local.core.errors import EngineError, ModelNotFoundError
from autorubric_local.engine.base import Engine
from autorubric_local.engine.capabilities import checked_capabilities
from autorubric_local.judges.backends.record import Backend
from autorubric_local.judges.backends.registry import backend_named, first_claiming
from autorubric_local.judges.backends.support import check_backend_support, unsupported_settings
from autorubric_local.judges.config import LLMConfig
from autorubric_local.judges.model_files import (
    converted_folder,
    ensure_converted,
    gguf_tokenizer,
    prompt_format,
    refuse_custom_code,
)
from autorubric_local.judges.presets import ResolvedModel, resolve_model
from autorubric_local.judges.weights import cache_dir, file_sha256

__all__ = ["cache_dir", "cached_engine_ids", "check_backend_support", "choose_backend", "converted_folder",
           "ensure_converted", "file_sha256", "free_memory", "gguf_tokenizer", "load_engine", "loaded_after",
           "loaded_engines", "prompt_format", "refuse_custom_code", "release_engine", "release_engines",
           "release_held", "resolve_model", "unsupported_settings", "was_released"]
"""Also re-exported here, where callers have always found them: the model-file helpers
(:mod:`.model_files`) and the backend-support check (:mod:`.backends.support`)."""

logger = logging.getLogger(__name__)

_ENGINES: dict[tuple[Any, ...], Engine] = {}
_RELEASED: weakref.WeakSet[Any] = weakref.WeakSet()
"""Engines released from :data:`_ENGINES` (weakly held): a grader that kept one loads it again."""


def load_engine(config: LLMConfig) -> Engine:
    """The engine for ``config``: ``config.engine`` if given, else a (shared) loaded model.

    The backend is ``config.backend``, or for ``"auto"`` :func:`choose_backend`'s pick; its
    registered record (:mod:`.backends`) says how to load it and which loaded engines to share.

    Raises
    ------
    InputError
        If ``config`` sets a field its backend cannot honour (:func:`check_backend_support`),
        the model folder needs custom code (:func:`refuse_custom_code`), or the llamacpp
        backend is asked for a model that is not a GGUF file.
    ModelNotFoundError
        If the model cannot be located (the message lists where it looked).
    EngineError
        If the device is unavailable, or the backend is not installed.
    """
    if config.engine is not None:
        return config.engine
    check_backend_support(config)
    if config.backend != "auto" and not backend_named(config.backend).resolves_model:
        return _loaded(backend_named(config.backend), config, None)
    resolved = _resolve(config.model)
    backend = choose_backend(config, resolved)
    if backend != config.backend:
        check_backend_support(config, backend)
    return _loaded(backend_named(backend), config, resolved)


def _loaded(backend: Backend, config: LLMConfig, resolved: ResolvedModel | None) -> Engine:
    """``backend``'s engine for ``config``: the cached one under its cache key, else loaded now
    (and cached, unless the backend has no cache key)."""
    if backend.cache_key is None:
        return _built(backend, config, resolved)
    key = (backend.name, *backend.cache_key(config, resolved))
    engine = _ENGINES.get(key)
    if engine is None:
        engine = _built(backend, config, resolved)
        _ENGINES[key] = engine
    return engine


def _built(backend: Backend, config: LLMConfig, resolved: ResolvedModel | None) -> Engine:
    """``backend.load(config, resolved)``, refused (TypeError) unless the engine declares its
    capabilities (:func:`~autorubric_local.engine.capabilities.checked_capabilities`)."""
    engine = backend.load(config, resolved)
    checked_capabilities(engine)
    return engine


def release_engine(engine: Engine) -> bool:
    """Release one engine :func:`load_engine` loaded: shut it down and drop it from the cache.

    The engine is shared by every config that loads it (same model and settings), so every
    holder loses it: :func:`was_released` is then True for it, and
    ``CriterionGrader.engine_for`` loads the model again instead of using it. A vLLM engine's
    memory is returned at once (its engine-core process is shut down); a transformers model's
    when the last reference to it is gone: drop yours, then call :func:`free_memory` (as
    :func:`release_engines` and ``CriterionGrader.release_engines`` do).

    Parameters
    ----------
    engine : Engine
        An engine returned by :func:`load_engine`. An engine the caller built
        (``LLMConfig.engine``) or a hosted engine (not cached) is not touched.

    Returns
    -------
    bool
        True if ``engine`` was in the cache and is now released, else False.
    """
    cached = _uncache(engine)
    if cached:
        _close(engine)
    return cached


def _uncache(engine: Engine) -> bool:
    """Drop ``engine`` from :func:`load_engine`'s cache (every key it is under); whether it was there."""
    keys = [key for key, cached in _ENGINES.items() if cached is engine]
    for key in keys:
        del _ENGINES[key]
    return bool(keys)


def release_engines() -> int:
    """Release every engine :func:`load_engine` loaded in this process (:func:`release_engine`),
    then :func:`free_memory`.

    An engine whose ``close()`` raises is still released (it has left the cache); the error is
    logged as a warning and the other engines are released all the same.

    Returns
    -------
    int
        How many engines were released (0 when none was loaded).
    """
    count = len(_ENGINES)
    try:
        while _ENGINES:  # no local reference outlives its engine's release
            _close_logged(_ENGINES.popitem()[1], None)
    finally:
        if count:
            free_memory()
    return count


def release_held(held: dict[str, Engine], names: Iterable[str] | None = None) -> int:
    """Pop the engines named ``names`` (default: all) from a holder's ``held`` mapping, release
    them (:func:`release_engine`), then :func:`free_memory` once the holder's references are gone.
    Engines not from :func:`load_engine` (``LLMConfig.engine``, hosted) are only popped.

    Never raises for a failed release, so that it cannot hide the result or the error of the run
    it ends: an engine whose ``close()`` (vLLM: shutdown) raises has still left the cache, the
    error is logged as a warning naming the judge and the model, the other engines are released
    all the same, and :func:`free_memory` always runs.

    Returns
    -------
    int
        How many engines left the cache (an engine held under two names counts once).
    """
    chosen = list(held) if names is None else [name for name in dict.fromkeys(names) if name in held]
    if not chosen:
        return 0
    dropped = {name: held.pop(name) for name in chosen}
    released = 0
    try:
        for name in chosen:
            if _uncache(dropped[name]):
                released += 1
                _close_logged(dropped[name], name)
    finally:
        del dropped  # the holder's last references: the models can be collected now
        free_memory()
    return released


def loaded_engines() -> list[Engine]:
    """The engines now held by :func:`load_engine`'s cache, in load order."""
    return list(_ENGINES.values())


def cached_engine_ids() -> frozenset[int]:
    """Ids of the engines :func:`load_engine`'s cache holds now: taken when a run or a sweep
    starts, so that at its end it releases only what it loaded itself (:func:`loaded_after`)."""
    return frozenset(map(id, _ENGINES.values()))


def loaded_after(held: Mapping[str, Engine], before: frozenset[int]) -> list[str]:
    """The names in ``held`` whose engine was not in the cache when ``before``
    (:func:`cached_engine_ids`) was taken. Releasing an engine releases it for every holder, so
    an engine another grader or judge already had is kept."""
    return [name for name, engine in held.items() if id(engine) not in before]


def was_released(engine: Engine) -> bool:
    """Whether ``engine`` was released by :func:`release_engine` or :func:`release_engines`
    (it must not be used again: a vLLM engine is shut down)."""
    try:
        return engine in _RELEASED
    except TypeError:  # an object that cannot be weakly referenced was never released
        return False


def _close_logged(engine: Engine, judge_id: str | None) -> None:
    """:func:`_close`, an error of which is logged as a warning (naming ``judge_id`` when given
    and the engine's model) instead of raised: a release that fails must not stop the others,
    nor replace the result or the error of the run it ends."""
    try:
        _close(engine)
    except Exception as exc:  # any error of a backend's shutdown: logged, never raised (see above)
        judge = "" if judge_id is None else f"judge {judge_id!r}, "
        logger.warning("releasing the engine of %smodel %s failed (%s: %s); it is dropped all the same",
                       judge, engine.model_id, type(exc).__name__, exc)


def _close(engine: Engine) -> None:
    """Mark ``engine`` released and call its ``close()`` when it declares one
    (:attr:`~autorubric_local.engine.capabilities.EngineCapabilities.releases`; vLLM: shutdown)."""
    with contextlib.suppress(TypeError):
        _RELEASED.add(engine)
    if engine.capabilities.releases:
        engine.close()


def free_memory() -> None:
    """Collect garbage, then give cached CUDA blocks back to the device when torch has
    initialised CUDA (torch is not imported here when it is not loaded already)."""
    gc.collect()
    torch = sys.modules.get("torch")
    if torch is not None and torch.cuda.is_available() and torch.cuda.is_initialized():
        torch.cuda.empty_cache()


def _resolve(model: str) -> ResolvedModel:
    """:func:`resolve_model`, whose error for a ``provider/name`` string also says how to reach a
    hosted or server model: ``backend="auto"`` never picks ``"hosted"`` (a Hugging Face id in
    the local cache looks the same), so it must be asked for."""
    try:
        return resolve_model(model)
    except ModelNotFoundError as exc:
        if "/" in model and not Path(model).expanduser().exists():
            raise ModelNotFoundError(f"{exc}\nFor a hosted or server model (LiteLLM model string such as "
                                     f"'openai/<name>' with api_base=...) set backend='hosted'.") from exc
        raise


def choose_backend(config: LLMConfig, resolved: ResolvedModel) -> str:
    """The backend that runs ``config``'s model: ``config.backend`` unless it is ``"auto"``.

    ``"auto"``: the preset's ``backend`` when it names one (the bundled SmolLM2 and Gemma
    presets name ``"transformers"``; docs/judges.md, "GGUF judges on llama.cpp"); else the registered
    auto candidate of lowest rank that claims the model (:mod:`.backends.registry`): built in,
    ``"llamacpp"`` for a GGUF file when llama-cpp-python is installed
    (``scripts/setup_llamacpp.sh``), which runs the file as stored, without the float32 copy (a
    7B Q4 GGUF needs ~5 GB there instead of ~28 GB); else ``"transformers"``.

    Raises
    ------
    EngineError
        No registered backend claims the model.
    """
    if config.backend != "auto":
        return config.backend
    if resolved.preset is not None and resolved.preset.backend:
        return resolved.preset.backend
    chosen = first_claiming(resolved)
    if chosen is None:
        raise EngineError(f"no registered backend runs {resolved.path} with backend='auto'")
    return chosen.name
