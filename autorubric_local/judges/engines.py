"""Turn an ``LLMConfig`` into a ready engine: resolve, convert GGUF once, load, cache in-process.

GGUF files are de-quantised by transformers into float32 and written once as a safetensors
folder under the cache directory (``$AUTORUBRIC_LOCAL_CACHE`` or ``~/.cache/autorubric-local``),
keyed by the GGUF's content hash, so later loads take about a second instead of ~26 s.
Loaded engines are shared within a process (one copy of the weights for many graders).
"""

from __future__ import annotations

import hashlib
import logging
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

from autorubric_local.core.errors import EngineError
from autorubric_local.engine.base import Engine
from autorubric_local.judges.config import LLMConfig
from autorubric_local.judges.presets import ResolvedModel, resolve_model

logger = logging.getLogger(__name__)

_ENGINES: dict[tuple[Any, ...], Engine] = {}


def cache_dir() -> Path:
    """Root folder for converted models."""
    return Path(os.environ.get("AUTORUBRIC_LOCAL_CACHE", "~/.cache/autorubric-local")).expanduser()


def file_sha256(path: Path) -> str:
    """Hex SHA-256 of a file's bytes."""
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


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
    tokenizer = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)
    model = AutoModelForCausalLM.from_pretrained(gguf.parent, gguf_file=gguf.name, dtype=torch.float32)
    # The de-quantised weights are plain float32; drop the GGUF quantizer so they can be saved.
    model.hf_quantizer = None
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=target.name + ".", dir=target.parent))
    try:
        model.save_pretrained(staging)
        tokenizer.save_pretrained(staging)
        if (target / "config.json").is_file():  # another process finished first
            return target
        if target.exists():
            shutil.rmtree(target)
        staging.rename(target)
    finally:
        if staging.exists():
            shutil.rmtree(staging, ignore_errors=True)
    return target


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


def load_engine(config: LLMConfig) -> Engine:
    """The engine for ``config``: ``config.engine`` if given, else a (shared) loaded model.

    Raises
    ------
    ModelNotFoundError
        If the model cannot be located (the message lists where it looked).
    EngineError
        If the device is unavailable.
    """
    if config.engine is not None:
        return config.engine
    resolved = resolve_model(config.model)
    if config.backend == "vllm":
        key: tuple[Any, ...] = ("vllm", str(resolved.path), config.device, config.dtype,
                                config.context_length, config.gpu_memory_utilization,
                                config.temperature, config.top_p, config.seed)
        if key not in _ENGINES:
            _ENGINES[key] = _load_vllm(resolved, config)
        return _ENGINES[key]
    device, dtype = _pick_device_dtype(config)
    key = (str(resolved.path), device, str(dtype), config.context_length, config.max_packed_tokens,
           config.temperature, config.seed)
    engine = _ENGINES.get(key)
    if engine is None:
        engine = _load_transformers(resolved, config, device, dtype)
        _ENGINES[key] = engine
    return engine


def _load_vllm(resolved: ResolvedModel, config: LLMConfig) -> Engine:
    from autorubric_local.engine.vllm_backend import load_vllm

    folder = ensure_converted(resolved.path) if resolved.kind == "gguf" else resolved.path
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
    )


def _load_transformers(resolved: ResolvedModel, config: LLMConfig, device: str, dtype: Any) -> Engine:
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from autorubric_local.engine.transformers_backend import from_transformers

    folder = ensure_converted(resolved.path) if resolved.kind == "gguf" else resolved.path
    tokenizer = AutoTokenizer.from_pretrained(folder)
    model = AutoModelForCausalLM.from_pretrained(folder, dtype=dtype).to(device)
    context = config.context_length or (resolved.preset.context_length if resolved.preset else None)
    return from_transformers(
        model,
        tokenizer,
        model_id=resolved.model_id,
        context_length=context,
        max_packed_tokens=config.max_packed_tokens,
        temperature=config.temperature,
        seed=config.seed,
    )
