"""The ``transformers`` backend: the reference engine and the CPU default
(:mod:`autorubric_local.engine.transformers.backend`: packed token tries, batched passes, exact
label log-probabilities, grammar-constrained explanations)."""

from __future__ import annotations

from typing import Any

from autorubric_local.core.errors import EngineError
from autorubric_local.engine.base import Engine
from autorubric_local.judges.backends.record import HOSTED_SETTINGS, Backend, refusing
from autorubric_local.judges.model_files import ensure_converted, no_progress_bars, prompt_format, refuse_custom_code
from autorubric_local.judges.presets import ResolvedModel


def device_and_dtype(config: Any) -> tuple[str, Any]:
    """``(device, torch dtype)`` of ``config``: ``"auto"`` is CUDA when available, else CPU;
    bfloat16 on CUDA, float32 on CPU unless ``dtype`` says otherwise.

    Raises
    ------
    EngineError
        Device ``"cuda"`` asked for and none is available.
    """
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


def cache_key(config: Any, resolved: ResolvedModel | None) -> tuple[Any, ...]:
    assert resolved is not None
    device, dtype = device_and_dtype(config)
    return (str(resolved.path), device, str(dtype), config.context_length, config.max_packed_tokens,
            config.max_batch_tokens, config.sampling_temperature, config.seed, prompt_format(config, resolved))


def load(config: Any, resolved: ResolvedModel | None) -> Engine:
    """A :class:`~autorubric_local.engine.transformers.backend.TransformersEngine` of the model
    (a GGUF file is converted to float32 once, :func:`~..model_files.ensure_converted`)."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from autorubric_local.engine.transformers.backend import from_transformers

    assert resolved is not None
    device, dtype = device_and_dtype(config)
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
        temperature=config.sampling_temperature,
        seed=config.seed,
        prompt_format=prompt_format(config, resolved),
    )


BACKEND = Backend(
    name="transformers",
    load=load,
    description="Hugging Face transformers in this process: the reference engine, CPU or GPU",
    unsupported=refusing(*HOSTED_SETTINGS, "prompt_caching", "top_p", "gpu_memory_utilization", "engine_args"),
    cache_key=cache_key,
    auto_rank=100,  # the general rule: every model llama.cpp does not claim
    capabilities=frozenset({"logprobs", "off_label_mass", "prefix_sharing", "constrained_generation",
                            "token_exact"}),
)
