"""AutoRubric's hosted-client API: ``LLMClient``, ``generate``, ``GenerateResult``, ``ThinkingConfig``.

The client and its types live in :mod:`autorubric_local.engine.hosted_client` and
:mod:`autorubric_local.engine.hosted_types`; this module adds the one-shot :func:`generate`,
which builds an :class:`~autorubric_local.judges.config.LLMConfig` (README, "Hosted and server
judges"). LiteLLM is imported on the first call, not here.
"""

from __future__ import annotations

from typing import Any, TypeVar

from pydantic import BaseModel

from autorubric_local.engine.hosted_client import LLMClient, ResponseParseError
from autorubric_local.engine.hosted_types import (
    GenerateResult,
    ThinkingConfig,
    ThinkingLevel,
)
from autorubric_local.judges.config import LLMConfig

__all__ = ["GenerateResult", "LLMClient", "ResponseParseError", "ThinkingConfig", "ThinkingLevel", "generate"]

T = TypeVar("T", bound=BaseModel)


async def generate(
    system_prompt: str,
    user_prompt: str,
    model: str,
    response_format: type[T] | None = None,
    **kwargs: Any,
) -> str | T:
    """One call to a hosted or server model, without keeping a client.

    Parameters
    ----------
    system_prompt, user_prompt : str
    model : str
        LiteLLM model string, e.g. ``"openai/gpt-4.1-mini"``, or ``"openai/<name>"`` with
        ``api_base=`` for an OpenAI-compatible server.
    response_format : pydantic model class, optional
        Ask for, and validate, a structured answer.
    **kwargs
        Further ``LLMConfig`` fields (``api_base``, ``temperature``, ``max_retries`` ...).

    Returns
    -------
    str or the ``response_format`` instance

    Raises
    ------
    pydantic.ValidationError
        On an invalid ``LLMConfig`` field.
    ResponseParseError, litellm.APIError, EngineError
        As :meth:`LLMClient.generate`.
    """
    client = LLMClient(LLMConfig(model=model, **kwargs))
    return await client.generate(system_prompt, user_prompt, response_format=response_format)  # type: ignore[return-value]
