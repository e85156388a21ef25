"""Judge engines: the public protocol and its backends (heavy libraries imported lazily)."""

from autorubric_local.engine.base import (
    Engine,
    GenerateRequest,
    Generation,
    LabelScores,
    ScoreRequest,
    Usage,
    label_distribution,
)
from autorubric_local.engine.scripted import ScriptedEngine

__all__ = [
    "Engine",
    "GenerateRequest",
    "Generation",
    "LabelScores",
    "ScoreRequest",
    "ScriptedEngine",
    "Usage",
    "from_transformers",
    "label_distribution",
]


def from_transformers(model, tokenizer, **kwargs):  # type: ignore[no-untyped-def]
    """Wrap a loaded Hugging Face model and tokenizer as an engine (imports torch lazily)."""
    from autorubric_local.engine.transformers_backend import from_transformers as build

    return build(model, tokenizer, **kwargs)
