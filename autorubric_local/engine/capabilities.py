"""What an engine declares it can do: one typed :class:`EngineCapabilities` per engine.

Callers read the declaration (``engine.capabilities``) instead of probing the engine for
attributes, so an engine that lacks a declaration, or declares what it does not have, is
refused where it enters (:func:`checked_capabilities`: ``LLMConfig(engine=...)`` and the
backend registry's loaders), not met as a silent ``None`` at use.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

DESCRIPTIONS = {
    "attention_path": "attention_path",
    "prompt_format": "prompt_format",
    "score_method": "score_method",
    "dtype": "dtype_name",
    "fallbacks": "fallbacks",
}
"""Run-record fields an engine may describe itself by, and the engine attribute that holds each."""

COUNTING_ATTRIBUTES = ("tokens", "tokenizer", "context_length")
"""What :attr:`EngineCapabilities.counts_tokens` promises: ``tokens(text)``, ``tokenizer``,
``context_length``."""


@dataclass(frozen=True)
class EngineCapabilities:
    """An engine's declared capabilities.

    Attributes
    ----------
    backend : str or None
        The registry backend it belongs to (``"transformers"``, ``"vllm"``, ``"llamacpp"``,
        ``"hosted"``, or a plugin's name); None for an engine of no backend (a user's own, or
        :class:`~autorubric_local.engine.scripted.ScriptedEngine`), which counts as local.
    counts_tokens : bool
        Has ``tokens(text) -> list[int]``, a Hugging Face ``tokenizer`` and ``context_length``:
        its judges may truncate an overflowing submission (``on_overflow="truncate"``).
    whole_prompt_tokens : bool
        Has ``prompt_tokens(prefix, suffix) -> list[int]``, the whole prompt encoded as it is
        scored (else a prompt's size is ``tokens(prefix) + tokens(suffix)``).
    describes : frozenset of str
        Run-record fields (keys of :data:`DESCRIPTIONS`) it reports, each from the attribute
        :data:`DESCRIPTIONS` names; a field it does not report is recorded as None (an empty
        list for ``fallbacks``).
    releases : bool
        Has ``close() -> None``, which frees what the engine holds outside Python's reach (vLLM:
        shuts its engine-core process down); releasing the engine calls it. An engine that
        does not declare it is only dropped, whatever methods it has.
    whole_judgment : bool
        Answers a judgment's verdict and its explanation in one call: ``score`` fills
        :attr:`~.base.LabelScores.explanation` with the explanation the judge wrote with its
        verdict (a hosted judge answers a whole structured turn). ``run_tasks`` then makes one
        ``score`` call per judgment in explain mode and reasoning first, and no ``generate``
        call; the explanation is not conditioned on a verdict chosen from label probabilities.
    """

    backend: str | None = None
    counts_tokens: bool = False
    whole_prompt_tokens: bool = False
    describes: frozenset[str] = frozenset()
    releases: bool = False
    whole_judgment: bool = False

    def __post_init__(self) -> None:
        unknown = set(self.describes) - set(DESCRIPTIONS)
        if unknown:
            raise ValueError(f"describes: unknown fields {sorted(unknown)} (known: {', '.join(DESCRIPTIONS)})")
        if self.whole_prompt_tokens and not self.counts_tokens:
            raise ValueError("whole_prompt_tokens needs counts_tokens (a tokenizer and context_length)")

    @property
    def hosted(self) -> bool:
        """Whether the engine calls a hosted API or server (the ``"hosted"`` backend)."""
        return self.backend == "hosted"

    def description(self, engine: Any) -> dict[str, Any]:
        """``{field: value}`` of every :data:`DESCRIPTIONS` field for ``engine`` (this declaration's
        engine): the declared ones read from it, the others None (``fallbacks``: ``[]``)."""
        values: dict[str, Any] = {}
        for name, attribute in DESCRIPTIONS.items():
            value = getattr(engine, attribute) if name in self.describes else None
            values[name] = list(value or ()) if name == "fallbacks" else value
        return values


def checked_capabilities(engine: object) -> EngineCapabilities:
    """``engine``'s declared :class:`EngineCapabilities`, checked against what it has.

    Raises
    ------
    TypeError
        The engine declares no ``capabilities`` (an :class:`EngineCapabilities`), or declares
        something it lacks (a token-counting attribute, ``prompt_tokens``, ``close``, a
        described field).
    """
    capabilities = getattr(engine, "capabilities", None)
    if not isinstance(capabilities, EngineCapabilities):
        raise TypeError(f"engine {type(engine).__name__} declares no capabilities: give it a `capabilities` "
                        f"attribute, an autorubric_local.engine.EngineCapabilities (got {capabilities!r})")
    needed = [*(COUNTING_ATTRIBUTES if capabilities.counts_tokens else ()),
              *(("prompt_tokens",) if capabilities.whole_prompt_tokens else ()),
              *(("close",) if capabilities.releases else ()),
              *(DESCRIPTIONS[name] for name in sorted(capabilities.describes))]
    missing = [name for name in needed if not hasattr(engine, name)]
    if missing:
        raise TypeError(f"engine {type(engine).__name__} declares capabilities it lacks: no {', '.join(missing)}")
    return capabilities
