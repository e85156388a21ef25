"""AutoRubric's client API: ``LLMClient`` and ``generate`` for a hosted, server or local model.

It sits above ``engine/`` and ``judges/``: a hosted model answers through the hosted backend's
LiteLLM client (:mod:`autorubric_local.engine.hosted.client`), a local one through its loaded
engine (:mod:`.local`).
"""

from autorubric_local.client.api import (
    GenerateResult,
    LLMClient,
    ResponseParseError,
    ThinkingConfig,
    ThinkingLevel,
    generate,
    is_local,
)

__all__ = ["GenerateResult", "LLMClient", "ResponseParseError", "ThinkingConfig", "ThinkingLevel", "generate",
           "is_local"]
