"""The ``llamacpp`` backend: GGUF files run as stored (quantised) by llama-cpp-python
(:mod:`autorubric_local.engine.llamacpp.backend`; installed by ``scripts/setup_llamacpp.sh``)."""

from __future__ import annotations

from typing import Any

from autorubric_local.core.errors import EngineError, InputError
from autorubric_local.engine.base import Engine
from autorubric_local.judges.backends.record import HOSTED_SETTINGS, Backend, refusing
from autorubric_local.judges.model_files import gguf_tokenizer, prompt_format
from autorubric_local.judges.presets import ResolvedModel

DEFAULT_LLAMACPP_CONTEXT = 8192
"""KV cache size (tokens) of a llama.cpp judge unless ``LLMConfig.context_length`` says otherwise:
llama.cpp allocates its cache up front, so a preset's 32k context would hold ~0.6 GB for a
270M model; longer prompts need ``context_length`` set."""


def cache_key(config: Any, resolved: ResolvedModel | None) -> tuple[Any, ...]:
    assert resolved is not None
    return (str(resolved.path), config.device, config.context_length, config.sampling_temperature, config.seed,
            prompt_format(config, resolved))


def load(config: Any, resolved: ResolvedModel | None) -> Engine:
    """A :class:`~autorubric_local.engine.llamacpp.backend.LlamaCppEngine` of a GGUF file.

    Raises
    ------
    InputError
        The model is a Hugging Face folder, not a GGUF file.
    EngineError
        Device ``"cuda"`` asked for and llama-cpp-python was built without GPU offload.
    """
    from autorubric_local.engine.llamacpp.backend import load_llamacpp, supports_gpu

    assert resolved is not None
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
        temperature=config.sampling_temperature,
        seed=config.seed,
        prompt_format=prompt_format(config, resolved),
        n_gpu_layers=0 if config.device == "cpu" else (-1 if supports_gpu() else 0),
    )


def claims(resolved: ResolvedModel) -> bool:
    """``backend="auto"`` runs a GGUF file on llama.cpp when llama-cpp-python is installed: as
    stored, without the float32 copy (a 7B Q4 GGUF needs ~5 GB there instead of ~28 GB)."""
    if resolved.kind != "gguf":
        return False
    from autorubric_local.engine.llamacpp.backend import available

    return available()


BACKEND = Backend(
    name="llamacpp",
    load=load,
    description="llama-cpp-python in this process: GGUF files as stored (quantised), CPU or GPU offload",
    unsupported=refusing(*HOSTED_SETTINGS, "prompt_caching", "top_p", "gpu_memory_utilization", "engine_args",
                         "max_packed_tokens", "max_batch_tokens", "dtype"),
    cache_key=cache_key,
    auto_rank=10,
    auto_claims=claims,
    capabilities=frozenset({"logprobs", "off_label_mass", "prefix_sharing", "constrained_generation",
                            "token_exact"}),
)
