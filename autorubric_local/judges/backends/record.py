"""What a judge backend declares about itself: one :class:`Backend` record per backend.

Built-in and third-party backends are records of the same kind, read from one registry
(:mod:`.registry`). A record holds no state; its loader builds an engine (the
:class:`~autorubric_local.engine.base.Engine` protocol) from an ``LLMConfig``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from autorubric_local.engine.base import Engine
from autorubric_local.judges.presets import ResolvedModel

CAPABILITIES = {
    "logprobs": "label log-probabilities from the model (probabilities, not only a chosen label)",
    "off_label_mass": "the probability the model put outside the allowed labels",
    "prefix_sharing": "a chunk's shared prompt prefix is computed once",
    "constrained_generation": "explanations decoded under a grammar, so they always parse",
    "token_exact": "the scored tokens are the tokenizer's own encoding of the whole prompt",
}
"""Capabilities a backend may declare (:attr:`Backend.capabilities`), with what each means."""

HOSTED_ONLY = "hosted and server judges need backend='hosted' (LiteLLM; docs/backends.md, \"Hosted and server judges\")"

REFUSAL_REASONS: dict[str, str] = {
    "timeout": f"a local judge runs in this process, there is no request to time out; {HOSTED_ONLY}",
    "max_retries": f"a local engine call is not retried (a failed judgment is stored as an error row); {HOSTED_ONLY}",
    "retry_min_wait": f"a local engine call is not retried, so there is no wait between retries; {HOSTED_ONLY}",
    "retry_max_wait": f"a local engine call is not retried, so there is no wait between retries; {HOSTED_ONLY}",
    "prompt_caching": ("a local engine always shares the prompt prefix of a chunk's judgments (trie packing, vLLM "
                       "prefix caching); it cannot be turned off"),
    "api_key": HOSTED_ONLY,
    "api_base": HOSTED_ONLY,
    "extra_headers": HOSTED_ONLY,
    "extra_params": HOSTED_ONLY,
    "top_p": "it samples explanations with temperature only; use backend='vllm' or leave top_p unset",
    "gpu_memory_utilization": "only the vllm backend reserves GPU memory",
    "engine_args": "engine_args are vLLM engine arguments; use backend='vllm' or leave them unset",
    "max_packed_tokens": ("it schedules its own batches; max_packed_tokens sizes the transformers backend's packed "
                          "passes"),
    "max_batch_tokens": ("it schedules its own batches; max_batch_tokens sizes the transformers backend's batched "
                         "passes"),
    "dtype": "llama.cpp computes in the GGUF's own (quantised) types; use backend='transformers' for float32",
    "prompt_format": "a hosted judge sends chat messages; the server renders them with the model's own template",
}
"""Why the built-in backends refuse an ``LLMConfig`` field, per field (the order messages come in)."""

HOSTED_SETTINGS = ("timeout", "max_retries", "retry_min_wait", "retry_max_wait", "api_key", "api_base",
                   "extra_headers", "extra_params")
"""AutoRubric's hosted-API settings, which no local backend implements."""


def refusing(*fields: str) -> dict[str, str]:
    """``{field: reason}`` of :data:`REFUSAL_REASONS` for ``fields``, in that table's order."""
    unknown = set(fields) - set(REFUSAL_REASONS)
    if unknown:
        raise KeyError(f"no refusal reason for {sorted(unknown)}")
    return {name: reason for name, reason in REFUSAL_REASONS.items() if name in fields}


Loader = Callable[[Any, "ResolvedModel | None"], Engine]
"""``load(config, resolved)``: the engine of an ``LLMConfig`` (``resolved`` is None for a backend
with ``resolves_model=False``)."""


@dataclass(frozen=True)
class Backend:
    """One judge backend, as the registry (:mod:`.registry`) knows it.

    Attributes
    ----------
    name : str
        The ``LLMConfig.backend`` value (and ``--backend`` choice) that selects it.
    load : Loader
        Builds the engine; may raise ``InputError`` (a model it cannot run), ``EngineError``
        (not installed, no device) or ``ModelNotFoundError``.
    description : str
        One line for ``--help`` and the support matrix.
    unsupported : mapping of str to str
        ``LLMConfig`` fields it cannot honour, with why; a non-default value is refused at load
        (:func:`~.support.check_backend_support`).
    cache_key : callable or None
        ``cache_key(config, resolved)``: configs with equal keys share one loaded engine in a
        process; None loads a new engine each time (nothing worth sharing, e.g. an HTTP client).
    resolves_model : bool
        Whether ``LLMConfig.model`` names a local model to find first (a preset, a Hugging Face
        folder or a GGUF file); False passes the model string to ``load`` as it is.
    auto_rank : int or None
        Whether ``backend="auto"`` may pick it, and in which order (lower first; None: never).
    auto_claims : callable or None
        ``auto_claims(resolved)``: whether ``"auto"`` picks it for this model.
    local : bool
        Runs in this process (False: a hosted API or server, reached over HTTP).
    memory_share : bool
        Reserves a share of accelerator memory that judges loaded together must split
        (:mod:`autorubric_local.judges.memory`).
    capabilities : frozenset of str
        What it can do, from :data:`CAPABILITIES`.
    """

    name: str
    load: Loader
    description: str = ""
    unsupported: Mapping[str, str] = field(default_factory=dict)
    cache_key: Callable[[Any, ResolvedModel | None], tuple[Any, ...]] | None = None
    resolves_model: bool = True
    auto_rank: int | None = None
    auto_claims: Callable[[ResolvedModel], bool] | None = None
    local: bool = True
    memory_share: bool = False
    capabilities: frozenset[str] = frozenset()

    def __post_init__(self) -> None:
        unknown = set(self.capabilities) - set(CAPABILITIES)
        if unknown:
            raise ValueError(f"backend {self.name!r}: unknown capabilities {sorted(unknown)} "
                             f"(known: {', '.join(CAPABILITIES)})")
        if not self.name or not self.name.replace("_", "").replace("-", "").isalnum() or self.name == "auto":
            raise ValueError(f"backend name {self.name!r}: letters, digits, '-' and '_' only, not 'auto'")
