"""Judge engines: the public protocol and its backends (heavy libraries imported lazily)."""

from autorubric_local.engine.base import (
    Engine,
    GenerateRequest,
    Generation,
    LabelScores,
    ScoreRequest,
    label_distribution,
    mass_outside,
)
from autorubric_local.engine.capabilities import EngineCapabilities
from autorubric_local.engine.scripted import ScriptedEngine

__all__ = [
    "Engine",
    "EngineCapabilities",
    "GenerateRequest",
    "Generation",
    "LabelScores",
    "ScoreRequest",
    "ScriptedEngine",
    "from_transformers",
    "from_vllm",
    "label_distribution",
    "mass_outside",
]


def from_transformers(model, tokenizer, **kwargs):  # type: ignore[no-untyped-def]
    """Wrap a loaded Hugging Face model and tokenizer as an engine (imports torch lazily)."""
    from autorubric_local.engine.transformers.backend import from_transformers as build

    return build(model, tokenizer, **kwargs)


def from_vllm(llm, **kwargs):  # type: ignore[no-untyped-def]
    """Wrap a built ``vllm.LLM`` as an engine (imports vLLM lazily)."""
    from autorubric_local.engine.vllm.backend import from_vllm as build

    return build(llm, **kwargs)
