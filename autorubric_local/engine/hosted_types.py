"""AutoRubric's client types for hosted and server judges: thinking settings and call results.

``ThinkingConfig`` and ``GenerateResult`` keep AutoRubric's names, fields and meanings (spec
001, "Extended Thinking/Reasoning"); they are plain data and import nothing heavy, so the base
install can name them without LiteLLM.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Literal

from autorubric_local.core.reports import TokenUsage

__all__ = ["THINKING_LEVEL_BUDGETS", "GenerateResult", "ThinkingConfig", "ThinkingLevel", "thinking_config"]


class ThinkingLevel(StrEnum):
    """Provider-neutral reasoning effort, AutoRubric's ``ThinkingLevel`` (``ThinkingLevel.HIGH``);
    ``ThinkingLevelLiteral`` is the matching string type. Accepted by ``LLMConfig.thinking``."""

    NONE = "none"
    LOW = "low"
    MEDIUM = "medium"
    HIGH = "high"


THINKING_LEVEL_BUDGETS: dict[str, int] = {"none": 0, "low": 1024, "medium": 2048, "high": 4096}
"""Reasoning tokens per level for providers that take a budget (as AutoRubric maps them)."""


@dataclass
class ThinkingConfig:
    """How much a hosted model reasons before it answers.

    Attributes
    ----------
    level : "none" | "low" | "medium" | "high"
        Effort; sent to LiteLLM as ``reasoning_effort``. Default ``"medium"``.
    budget_tokens : int >= 1, optional
        Explicit budget in tokens; when set it wins over ``level`` (sent as
        ``thinking={"type": "enabled", "budget_tokens": n}``).

    Raises
    ------
    ValueError
        On an unknown level or a budget below 1.
    """

    level: ThinkingLevel | Literal["none", "low", "medium", "high"] = ThinkingLevel.MEDIUM
    budget_tokens: int | None = None

    def __post_init__(self) -> None:
        self.level = ThinkingLevel(self.level)
        if self.budget_tokens is not None and self.budget_tokens < 1:
            raise ValueError(f"ThinkingConfig.budget_tokens must be >= 1, got {self.budget_tokens}")

    def get_effective_budget(self) -> int:
        """Tokens of reasoning: ``budget_tokens`` if set, else the level's budget."""
        if self.budget_tokens is not None:
            return self.budget_tokens
        return THINKING_LEVEL_BUDGETS[self.level.value]

    def get_reasoning_effort(self) -> str:
        """The ``reasoning_effort`` string LiteLLM takes."""
        return self.level.value

    def request_params(self) -> dict[str, Any]:
        """The LiteLLM parameters for this setting; empty for level ``"none"`` without a budget."""
        if self.budget_tokens is not None:
            return {"thinking": {"type": "enabled", "budget_tokens": self.budget_tokens}}
        if self.level is ThinkingLevel.NONE:
            return {}
        return {"reasoning_effort": self.level.value}


def thinking_config(value: Any) -> ThinkingConfig | None:
    """Normalise an ``LLMConfig.thinking`` value (level string, enum, budget, config or None).

    Raises
    ------
    TypeError
        For any other type.
    ValueError
        For an unknown level string or a budget below 1.
    """
    if value is None:
        return None
    if isinstance(value, ThinkingConfig):
        return value
    if isinstance(value, bool):
        raise TypeError(f"thinking must be a level, a token budget or a ThinkingConfig, got {value!r}")
    if isinstance(value, int):
        return ThinkingConfig(budget_tokens=value)
    if isinstance(value, str):
        return ThinkingConfig(level=ThinkingLevel(value))
    raise TypeError(f"thinking must be a level, a token budget or a ThinkingConfig, got {type(value).__name__}")


@dataclass
class GenerateResult:
    """What one hosted call returned.

    Attributes
    ----------
    content : str
        The response text (raw; for structured output the JSON text).
    thinking : str or None
        The reasoning trace when the provider returned one.
    raw_response : object
        LiteLLM's response object (None when served from the response cache).
    usage : TokenUsage or None
        Token counts reported by the server (``prompt_tokens``, ``completion_tokens``,
        ``total_tokens``; cached prompt tokens as ``cache_read_input_tokens``).
    cost : float or None
        USD of the call from LiteLLM's pricing (the response's ``response_cost``, else
        ``litellm.completion_cost``), summed over every response received for it (a response
        that did not validate and was retried is billed too); None when LiteLLM does not know
        the model's price (a self-hosted server's model, unless ``extra_params`` gives
        ``input_cost_per_token`` and ``output_cost_per_token``). 0.0 for a response served from
        the response cache.
    parsed : pydantic model or None
        The validated ``response_format`` instance, when one was requested.
    cached : bool
        True when served from the response cache (no request was sent). Extension.
    logprobs : list of dict or None
        When log-probabilities were requested and returned: one entry per output token,
        ``{"token": str, "logprob": float, "top": [[token, logprob], ...]}`` (natural log).
        Extension.
    """

    content: str
    thinking: str | None = None
    raw_response: Any = None
    usage: TokenUsage | None = None
    cost: float | None = None
    parsed: Any = None
    cached: bool = False
    logprobs: list[dict[str, Any]] | None = None
