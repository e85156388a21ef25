"""Turn an ``LLMConfig`` into a ready engine: check, resolve, convert GGUF once, load, cache in-process.

Before anything is resolved, the config is checked against its backend: an ``LLMConfig`` field
that the backend cannot honour (AutoRubric's hosted-API settings such as ``api_key`` or
``timeout``, or a setting of the other local backend) with a non-default value is an
:class:`~autorubric_local.core.errors.InputError` (:data:`UNSUPPORTED_FIELDS`). The check is
made here, not when the config is built, so one config file stays usable with other backends;
a config with ``engine=`` (an engine built by the caller) is not checked.

No model code is ever run: every ``from_pretrained`` call and ``vllm.LLM`` pass
``trust_remote_code=False``, and a model folder whose ``config.json`` or
``tokenizer_config.json`` has an ``auto_map`` (classes shipped as Python files with the model)
is refused before transformers or vLLM is asked to load it.

GGUF files are de-quantised by transformers into float32 and written once as a safetensors
folder under the cache directory (``$AUTORUBRIC_LOCAL_CACHE`` or ``~/.cache/autorubric-local``),
keyed by the GGUF's content hash, so later loads take about a second instead of ~26 s.
Loaded engines are shared within a process (one copy of the weights for many graders) until
they are released (:func:`release_engine`, :func:`release_engines`): the engine is shut down
(vLLM: its engine-core process and workers), dropped from the cache, and its memory returned
(``gc.collect()``, then ``torch.cuda.empty_cache()`` when CUDA is in use).
"""

from __future__ import annotations

import contextlib
import gc
import json
import logging
import shutil
import sys
import tempfile
import weakref
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from autorubric_local.core.errors import EngineError, InputError, ModelNotFoundError
from autorubric_local.engine.base import Engine
from autorubric_local.judges.config import LLMConfig
from autorubric_local.judges.presets import ResolvedModel, resolve_model
from autorubric_local.judges.weights import cache_dir, file_sha256

logger = logging.getLogger(__name__)

_ENGINES: dict[tuple[Any, ...], Engine] = {}
_RELEASED: weakref.WeakSet[Any] = weakref.WeakSet()
"""Engines released from :data:`_ENGINES` (weakly held): a grader that kept one loads it again."""

LOCAL_BACKENDS: tuple[str, ...] = ("transformers", "vllm", "llamacpp")
AUTO_CANDIDATES: tuple[str, ...] = ("transformers", "llamacpp")
"""Backends ``backend="auto"`` may pick (:func:`choose_backend`)."""
DEFAULT_LLAMACPP_CONTEXT = 8192
"""KV cache size (tokens) of a llama.cpp judge unless ``LLMConfig.context_length`` says otherwise:
llama.cpp allocates its cache up front, so a preset's 32k context would hold ~0.6 GB for a
270M model; longer prompts need ``context_length`` set."""
_HOSTED = "hosted and server judges need backend='hosted' (LiteLLM; README, \"Hosted and server judges\")"


@dataclass(frozen=True)
class Unsupported:
    """Why a backend ignores an ``LLMConfig`` field, which backends, and whether its value may be shown."""

    reason: str
    backends: tuple[str, ...] = LOCAL_BACKENDS
    shown: Literal["value", "keys", "hidden"] = "value"  # keys: of a mapping; hidden: a secret


UNSUPPORTED_FIELDS: dict[str, Unsupported] = {
    "timeout": Unsupported(f"a local judge runs in this process, there is no request to time out; {_HOSTED}"),
    "max_retries": Unsupported(
        f"a local engine call is not retried (a failed judgment is stored as an error row); {_HOSTED}"),
    "prompt_caching": Unsupported(
        "a local engine always shares the prompt prefix of a chunk's judgments (trie packing, vLLM prefix "
        "caching); it cannot be turned off"),
    "api_key": Unsupported(_HOSTED, shown="hidden"),
    "api_base": Unsupported(_HOSTED),
    "extra_headers": Unsupported(_HOSTED, shown="keys"),
    "extra_params": Unsupported(_HOSTED, shown="keys"),
    "top_p": Unsupported(
        "it samples explanations with temperature only; use backend='vllm' or leave top_p unset",
        backends=("transformers", "llamacpp")),
    "gpu_memory_utilization": Unsupported("only the vllm backend reserves GPU memory",
                                          backends=("transformers", "llamacpp", "hosted")),
    "engine_args": Unsupported("engine_args are vLLM engine arguments; use backend='vllm' or leave them unset",
                               backends=("transformers", "llamacpp", "hosted")),
    "max_packed_tokens": Unsupported(
        "it schedules its own batches; max_packed_tokens sizes the transformers backend's packed passes",
        backends=("vllm", "llamacpp", "hosted")),
    "max_batch_tokens": Unsupported(
        "it schedules its own batches; max_batch_tokens sizes the transformers backend's batched passes",
        backends=("vllm", "llamacpp", "hosted")),
    "dtype": Unsupported(
        "llama.cpp computes in the GGUF's own (quantised) types; use backend='transformers' for float32",
        backends=("llamacpp", "hosted")),
    "prompt_format": Unsupported("a hosted judge sends chat messages; the server renders them with the model's "
                                 "own template", backends=("hosted",)),
}
"""``LLMConfig`` fields that a local backend does not implement: a non-default value is refused."""


def converted_folder(gguf: Path) -> Path:
    """Folder holding the safetensors conversion of ``gguf`` (exists once converted)."""
    return cache_dir() / "converted" / f"{gguf.stem}-sha256-{file_sha256(gguf)[:16]}"


def ensure_converted(gguf: Path) -> Path:
    """Convert ``gguf`` to a float32 safetensors folder once; return the folder.

    The folder is written under a temporary name and renamed into place, so an interrupted
    conversion never leaves a half-written model behind.
    """
    target = converted_folder(gguf)
    if (target / "config.json").is_file():
        return target
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    logger.info("converting %s to %s (once)", gguf, target)
    with no_progress_bars():
        tokenizer = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name, trust_remote_code=False)
        model = AutoModelForCausalLM.from_pretrained(
            gguf.parent, gguf_file=gguf.name, dtype=torch.float32, trust_remote_code=False
        )
    # The de-quantised weights are plain float32; drop the GGUF quantizer so they can be saved.
    model.hf_quantizer = None
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config
    _write_folder_once(target, "config.json", lambda staging: (model.save_pretrained(staging),
                                                               tokenizer.save_pretrained(staging)))
    return target


@contextlib.contextmanager
def no_progress_bars() -> Iterator[None]:
    """Switch transformers' and huggingface_hub's tqdm bars off inside the block (they would
    print "Loading weights" bars to stderr under our own progress display), then restore them."""
    from transformers.utils import logging as hf_logging

    was_enabled = hf_logging.is_progress_bar_enabled()
    hf_logging.disable_progress_bar()
    try:
        yield
    finally:
        if was_enabled:
            hf_logging.enable_progress_bar()


def _write_folder_once(target: Path, marker: str, write: Any) -> None:
    """Write a cache folder by ``write(staging)`` under a temporary name, then rename it to ``target``.

    An interrupted write never leaves a half-written folder; if another process finished
    first (``target/marker`` exists), its folder is kept.
    """
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=target.name + ".", dir=target.parent))
    try:
        write(staging)
        if (target / marker).is_file():
            return
        if target.exists():
            shutil.rmtree(target)
        staging.rename(target)
    finally:
        if staging.exists():
            shutil.rmtree(staging, ignore_errors=True)


def _pick_device_dtype(config: LLMConfig) -> tuple[str, Any]:
    import torch

    device = config.device
    if device == "auto":
        device = "cuda" if torch.cuda.is_available() else "cpu"
    if device == "cuda" and not torch.cuda.is_available():
        raise EngineError("device 'cuda' requested but no CUDA GPU is available")
    dtype_name = config.dtype
    if dtype_name == "auto":
        dtype_name = "bfloat16" if device == "cuda" else "float32"
    return device, getattr(torch, dtype_name)


def unsupported_settings(config: LLMConfig, backend: str | None = None) -> list[str]:
    """One message per field of ``config`` set (to a non-default value) that its backend ignores.

    ``backend`` is the backend that will run (default ``config.backend``). For ``"auto"``
    before the model is resolved, the fields refused are those every candidate of
    :data:`AUTO_CANDIDATES` refuses.

    A message names the field path, its value (keys of a mapping; never a secret), the backend
    and what to do instead: ``LLMConfig.api_base is not supported by the transformers backend
    (got 'http://...'); hosted and server judges need backend='hosted' ...``.
    """
    backend = backend or config.backend
    candidates = AUTO_CANDIDATES if backend == "auto" else (backend,)
    shown = "auto (transformers or llamacpp)" if backend == "auto" else backend
    problems: list[str] = []
    for name, unsupported in UNSUPPORTED_FIELDS.items():
        value = getattr(config, name)
        if not set(candidates) <= set(unsupported.backends) or value == _default(name):
            continue
        problems.append(f"LLMConfig.{name} is not supported by the {shown} backend "
                        f"(got {_shown(value, unsupported.shown)}); {unsupported.reason}")
    return problems


def _shown(value: Any, how: Literal["value", "keys", "hidden"]) -> str:
    if how == "hidden":
        return "a value, not shown"
    if how == "keys":
        return f"keys {sorted(value)}"
    return repr(value)


def _default(name: str) -> Any:
    return LLMConfig.model_fields[name].get_default(call_default_factory=True)


def check_backend_support(config: LLMConfig, backend: str | None = None) -> None:
    """Refuse a config that sets a field its backend cannot honour (:data:`UNSUPPORTED_FIELDS`).

    ``backend``: as in :func:`unsupported_settings`.

    Raises
    ------
    InputError
        One line per such field (:func:`unsupported_settings`).
    """
    problems = unsupported_settings(config, backend)
    if problems:
        raise InputError("\n".join(problems))


def refuse_custom_code(folder: Path) -> None:
    """Refuse a model folder that needs its own Python code, before any loader reads it.

    A Hugging Face folder names such code in an ``auto_map`` of its ``config.json`` (model) or
    ``tokenizer_config.json`` (tokenizer); transformers would import the ``.py`` files it
    lists. autorubric-local never runs code shipped with a model.

    Raises
    ------
    InputError
        Names the folder, the file and the classes of the ``auto_map``, or a file that is
        not a JSON object.
    """
    for name in ("config.json", "tokenizer_config.json"):
        path = folder / name
        if not path.is_file():
            continue
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise InputError(f"{path}: not valid JSON: {exc}") from exc
        if not isinstance(data, dict):
            raise InputError(f"{path}: expected a JSON object, got {type(data).__name__}")
        auto_map = data.get("auto_map")
        if auto_map:
            classes = ", ".join(sorted(auto_map)) if isinstance(auto_map, dict) else repr(auto_map)
            raise InputError(
                f"{folder}: {name} has an auto_map ({classes}): this model needs Python code shipped in its "
                "folder, and autorubric-local never runs custom model code (trust_remote_code is always False). "
                "Use a model whose architecture transformers supports natively."
            )


def load_engine(config: LLMConfig) -> Engine:
    """The engine for ``config``: ``config.engine`` if given, else a (shared) loaded model.

    The backend is ``config.backend``, or for ``"auto"`` :func:`choose_backend`'s pick.

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
    if config.backend == "hosted":
        from autorubric_local.engine.hosted_backend import from_config

        return from_config(config)
    resolved = _resolve(config.model)
    backend = choose_backend(config, resolved)
    if backend != config.backend:
        check_backend_support(config, backend)
    if backend == "vllm":
        key: tuple[Any, ...] = ("vllm", str(resolved.path), config.device, config.dtype,
                                config.context_length, config.gpu_memory_utilization,
                                json.dumps(vllm_engine_args(config, resolved), sort_keys=True),
                                config.temperature, config.top_p, config.seed, prompt_format(config, resolved))
        if key not in _ENGINES:
            _ENGINES[key] = _load_vllm(resolved, config)
        return _ENGINES[key]
    if backend == "llamacpp":
        key = ("llamacpp", str(resolved.path), config.device, config.context_length, config.temperature,
               config.seed, prompt_format(config, resolved))
        if key not in _ENGINES:
            _ENGINES[key] = _load_llamacpp(resolved, config)
        return _ENGINES[key]
    device, dtype = _pick_device_dtype(config)
    key = (str(resolved.path), device, str(dtype), config.context_length, config.max_packed_tokens,
           config.max_batch_tokens, config.temperature, config.seed, prompt_format(config, resolved))
    engine = _ENGINES.get(key)
    if engine is None:
        engine = _load_transformers(resolved, config, device, dtype)
        _ENGINES[key] = engine
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
                       judge, getattr(engine, "model_id", "?"), type(exc).__name__, exc)


def _close(engine: Engine) -> None:
    """Mark ``engine`` released and call its ``close()`` when it has one (vLLM: shutdown)."""
    with contextlib.suppress(TypeError):
        _RELEASED.add(engine)
    close = getattr(engine, "close", None)
    if callable(close):
        close()


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
    presets name ``"transformers"``; README, "GGUF judges on llama.cpp"); else ``"llamacpp"`` for a GGUF file when
    llama-cpp-python is installed (``scripts/setup_llamacpp.sh``): it runs the file as stored,
    without the float32 copy (a 7B Q4 GGUF needs ~5 GB there instead of ~28 GB); else
    ``"transformers"``.
    """
    if config.backend != "auto":
        return config.backend
    if resolved.preset is not None and resolved.preset.backend:
        return resolved.preset.backend
    if resolved.kind == "gguf":
        from autorubric_local.engine.llamacpp_backend import available

        if available():
            return "llamacpp"
    return "transformers"


def gguf_tokenizer(gguf: Path) -> Any:
    """The Hugging Face tokenizer stored in ``gguf``, read once and cached as a tokenizer folder.

    The first read parses the GGUF's metadata with transformers (a few seconds); the
    tokenizer is then saved under the cache directory, keyed by the file's content hash, like
    :func:`converted_folder`, so later loads take well under a second.
    """
    from transformers import AutoTokenizer

    converted = converted_folder(gguf)
    if (converted / "tokenizer_config.json").is_file():
        return AutoTokenizer.from_pretrained(converted, trust_remote_code=False)
    target = cache_dir() / "tokenizers" / converted.name
    if (target / "tokenizer_config.json").is_file():
        return AutoTokenizer.from_pretrained(target, trust_remote_code=False)
    tokenizer = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name, trust_remote_code=False)
    _write_folder_once(target, "tokenizer_config.json", tokenizer.save_pretrained)
    return tokenizer


def prompt_format(config: LLMConfig, resolved: ResolvedModel) -> str:
    """The prompt format to build the engine with: the config's, else the preset's, else ``"auto"``."""
    if config.prompt_format != "auto":
        return config.prompt_format
    if resolved.preset is not None and resolved.preset.prompt_format:
        return resolved.preset.prompt_format
    return "auto"


def vllm_engine_args(config: LLMConfig, resolved: ResolvedModel) -> dict[str, Any]:
    """The vLLM engine arguments of a judge: the preset's ``engine_args``, then the config's
    (a key in both takes the config's value)."""
    preset = dict(resolved.preset.engine_args) if resolved.preset is not None else {}
    return {**preset, **config.engine_args}


def _load_vllm(resolved: ResolvedModel, config: LLMConfig) -> Engine:
    from autorubric_local.engine.vllm_backend import load_vllm

    folder = ensure_converted(resolved.path) if resolved.kind == "gguf" else resolved.path
    refuse_custom_code(folder)
    return load_vllm(
        folder,
        model_id=resolved.model_id,
        context_length=config.context_length or (resolved.preset.context_length if resolved.preset else None),
        device=config.device,
        dtype=config.dtype,
        temperature=config.temperature,
        top_p=config.top_p,
        seed=config.seed,
        gpu_memory_utilization=config.gpu_memory_utilization,
        prompt_format=prompt_format(config, resolved),
        engine_args=vllm_engine_args(config, resolved),
    )


def _load_llamacpp(resolved: ResolvedModel, config: LLMConfig) -> Engine:
    from autorubric_local.engine.llamacpp_backend import load_llamacpp, supports_gpu

    if resolved.kind != "gguf":
        raise InputError(f"backend 'llamacpp' runs GGUF files; {resolved.path} is a Hugging Face folder "
                         "(use backend='transformers' or 'vllm')")
    if config.device == "cuda" and not supports_gpu():
        raise EngineError("device 'cuda' requested but this llama-cpp-python was built without GPU offload")
    preset_context = resolved.preset.context_length if resolved.preset and resolved.preset.context_length else None
    context = config.context_length or min(preset_context or DEFAULT_LLAMACPP_CONTEXT, DEFAULT_LLAMACPP_CONTEXT)
    return load_llamacpp(
        resolved.path,
        gguf_tokenizer(resolved.path),
        model_id=resolved.model_id,
        context_length=context,
        temperature=config.temperature,
        seed=config.seed,
        prompt_format=prompt_format(config, resolved),
        n_gpu_layers=0 if config.device == "cpu" else (-1 if supports_gpu() else 0),
    )


def _load_transformers(resolved: ResolvedModel, config: LLMConfig, device: str, dtype: Any) -> Engine:
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from autorubric_local.engine.transformers_backend import from_transformers

    folder = ensure_converted(resolved.path) if resolved.kind == "gguf" else resolved.path
    refuse_custom_code(folder)
    with no_progress_bars():
        tokenizer = AutoTokenizer.from_pretrained(folder, trust_remote_code=False)
        model = AutoModelForCausalLM.from_pretrained(folder, dtype=dtype, trust_remote_code=False).to(device)
    context = config.context_length or (resolved.preset.context_length if resolved.preset else None)
    return from_transformers(
        model,
        tokenizer,
        model_id=resolved.model_id,
        context_length=context,
        max_packed_tokens=config.max_packed_tokens,
        max_batch_tokens=config.max_batch_tokens,
        temperature=config.temperature,
        seed=config.seed,
        prompt_format=prompt_format(config, resolved),
    )
