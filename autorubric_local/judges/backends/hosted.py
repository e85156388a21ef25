"""The ``hosted`` backend: a hosted API or an OpenAI-compatible server through LiteLLM
(:mod:`autorubric_local.engine.hosted.backend`; the ``hosted`` extra)."""

from __future__ import annotations

from typing import Any

from autorubric_local.engine.base import Engine
from autorubric_local.judges.backends.record import Backend, refusing
from autorubric_local.judges.presets import ResolvedModel


def load(config: Any, resolved: ResolvedModel | None) -> Engine:
    """A :class:`~autorubric_local.engine.hosted.backend.HostedEngine` for the model string
    (LiteLLM is imported now, so a missing install fails at load with the install command)."""
    from autorubric_local.engine.hosted.backend import from_config

    return from_config(config)


BACKEND = Backend(
    name="hosted",
    load=load,
    description="a hosted API or an OpenAI-compatible server, through LiteLLM (the model string as LiteLLM's)",
    unsupported={
        **refusing("gpu_memory_utilization", "engine_args", "max_packed_tokens", "max_batch_tokens", "dtype",
                   "prompt_format"),
        # the shared table's dtype reason is llama.cpp's (quantised GGUF types), wrong for a server
        "dtype": "the server computes in its own types; a hosted judge cannot set them",
    },
    resolves_model=False,
    local=False,
)
