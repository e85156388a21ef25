"""The ``server`` backend: a llama.cpp or vLLM OpenAI-compatible server at ``LLMConfig.api_base``,
label probabilities exact (:mod:`autorubric_local.engine.server.backend`; standard library only)."""

from __future__ import annotations

from typing import Any

from autorubric_local.core.errors import InputError
from autorubric_local.engine.base import Engine
from autorubric_local.judges.backends.record import Backend, refusing
from autorubric_local.judges.model_files import gguf_tokenizer, no_progress_bars, prompt_format, refuse_custom_code
from autorubric_local.judges.presets import ResolvedModel

NOT_RETRIED = "a server judge's call is not retried: a failed call is stored as an error row"


def load(config: Any, resolved: ResolvedModel | None) -> Engine:
    """A :class:`~autorubric_local.engine.server.backend.ServerEngine` for the server at
    ``config.api_base``; ``config.model`` names the local copy of the served model (its
    tokenizer renders the prompts). Nothing is contacted until the first judgment.

    Raises
    ------
    InputError
        ``api_base`` unset or not an http(s) URL, or the model folder needs custom code.
    """
    from autorubric_local.engine.server.backend import DEFAULT_MAX_PARALLEL, load_server

    assert resolved is not None
    if not config.api_base:
        raise InputError("LLMConfig.api_base is required by the server backend: the server's URL, "
                         "e.g. 'http://127.0.0.1:8080/v1'")
    if resolved.kind == "gguf":
        tokenizer = gguf_tokenizer(resolved.path)
    else:
        from transformers import AutoTokenizer

        refuse_custom_code(resolved.path)
        with no_progress_bars():
            tokenizer = AutoTokenizer.from_pretrained(resolved.path, trust_remote_code=False)
    return load_server(
        config.api_base, tokenizer, model_id=f"{resolved.model_id}@{config.api_base}", api_key=config.api_key,
        headers=dict(config.extra_headers), timeout=config.timeout, temperature=config.sampling_temperature,
        top_p=config.top_p, seed=config.seed, prompt_format=prompt_format(config, resolved),
        max_parallel=config.max_parallel_requests or DEFAULT_MAX_PARALLEL, extra_body=dict(config.extra_params))


BACKEND = Backend(
    name="server",
    load=load,
    description=("a llama.cpp or vLLM OpenAI-compatible server at api_base, exact label probabilities "
                 "(model: the local copy of the served model, for its chat template)"),
    unsupported={
        **refusing("max_retries", "retry_min_wait", "retry_max_wait", "prompt_caching", "gpu_memory_utilization",
                   "engine_args", "max_packed_tokens", "max_batch_tokens", "dtype"),
        "max_retries": NOT_RETRIED,
        "retry_min_wait": NOT_RETRIED,
        "retry_max_wait": NOT_RETRIED,
        "prompt_caching": "the server caches prompt prefixes as it is configured to; a judge cannot turn that off",
        "dtype": "the server computes in its own types; a server judge cannot set them",
    },
    local=False,
    capabilities=frozenset({"logprobs", "off_label_mass", "constrained_generation"}),
)
