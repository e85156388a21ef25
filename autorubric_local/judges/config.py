"""``LLMConfig``: how to reach one judge model, validated and immutable.

Keeps AutoRubric's field names where they mean something for a local model (AutoRubric's
README, github.com/delip/autorubric, "LLMConfig Options") and adds local ones: ``backend``, ``device``,
``dtype``, ``context_length``, ``max_packed_tokens``, ``gpu_memory_utilization``,
``engine_args`` (further vLLM engine arguments), ``explanation_max_tokens``,
``explanation_style`` and ``engine``
(an already-built engine object, for custom backends and tests).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from autorubric_local.core.checks import parse_yaml, read_input_text
from autorubric_local.core.errors import InputError
from autorubric_local.engine.capabilities import checked_capabilities
from autorubric_local.engine.hosted_types import ThinkingConfig, ThinkingLevel
from autorubric_local.engine.vllm.args import ENGINE_ARGS, check_engine_args

Device = Literal["auto", "cpu", "cuda"]
DType = Literal["auto", "float32", "bfloat16", "float16"]
ThinkingLevelLiteral = Literal["none", "low", "medium", "high"]
ThinkingParam = ThinkingConfig | ThinkingLevel | ThinkingLevelLiteral | int | None
"""What ``LLMConfig.thinking`` accepts (AutoRubric's ``ThinkingParam``); it is stored as a level
string or a token budget."""

THINKING_BUDGETS: dict[str, int] = {"low": 64, "medium": 128, "high": 256}
"""Reasoning tokens a local judge writes before its verdict, per ``thinking`` level."""

DEFAULT_MODEL = "smollm2-135m-instruct"


_LATER_FIELDS = ("retry_min_wait", "retry_max_wait")
"""Fields added after runs were stored: :meth:`LLMConfig.describe` leaves them out at their defaults."""


class LLMConfig(BaseModel):
    """Configuration of one judge model.

    Parameters
    ----------
    model : str
        A preset name (built in, ``autorubric_local/judges/models/``, or from
        ``$AUTORUBRIC_LOCAL_MODELS``; e.g. ``"smollm2-135m-instruct"``), a local Hugging Face
        model folder, a ``.gguf`` file, or a Hugging Face id in the local Hugging Face cache.
        Nothing is downloaded.
    temperature : float >= 0 or None, default 0.0
        0 decodes explanations greedily. Verdicts always come from label probabilities.
        ``None`` (AutoRubric's default): the engine's own default, greedy on a local judge
        (:attr:`sampling_temperature` 0.0), left out of a hosted judge's request (the
        provider's default).
    max_tokens : int, >= 1
        Upper bound on generated tokens per judgment (explanation and reasoning).
    top_p, seed : as in AutoRubric; ``seed`` seeds sampling when ``temperature > 0``.
    thinking : "none" | "low" | "medium" | "high" | int | None
        Local meaning: the judge writes a reasoning text of this budget (64/128/256 tokens or
        the given number) *before* its verdict, and the verdict's label distribution is read
        after it. ``None``/``"none"``: no reasoning.
    backend : "auto" | "transformers" | "vllm" | "llamacpp" | "hosted" | a registered plugin's name
        The engine that runs the model, a backend of the registry
        (:mod:`autorubric_local.judges.backends`). ``"auto"`` (default): ``"llamacpp"`` for a GGUF file
        when llama-cpp-python is installed (``scripts/setup_llamacpp.sh``), else
        ``"transformers"`` (:func:`autorubric_local.judges.engines.choose_backend`).
        ``"llamacpp"`` runs GGUF files as stored (quantised); ``"vllm"`` needs vLLM installed
        (a separate venv on CPU: ``scripts/setup_vllm.sh``).
        ``"hosted"``: a hosted API or an OpenAI-compatible server through LiteLLM (``model`` a
        LiteLLM string such as ``"openai/<name>"`` with ``api_base``; extra ``[hosted]``);
        ``"auto"`` never picks it. The AutoRubric fields ``timeout`` ... ``extra_params`` apply
        to it only (:mod:`autorubric_local.engine.hosted.client`).
    max_retries, retry_min_wait, retry_max_wait : int, float, float
        Hosted judges only: further attempts after a transient failure, waiting
        ``min(retry_max_wait, retry_min_wait * 2**attempt)`` seconds before each (AutoRubric's
        defaults 1 s and 60 s; ``max_retries`` is 0 here, AutoRubric's 3: see
        docs/python-api.md, "Differences from AutoRubric 1.6.1").
    device, dtype : where and in what precision to run; ``"auto"`` picks CUDA + bfloat16 when a
        GPU is present, else CPU + float32. ``dtype="bfloat16"`` on a CPU pays off only where
        PyTorch has AMX tiles (``amx_bf16`` in ``/proc/cpuinfo``): there it scored the essay set
        2.5x faster than float32 but flipped 18% of SmolLM2's near-tie verdicts
        (``scripts/bench_peer.py``, ``scripts/bench_dtype.py``); without AMX it is much slower.
    context_length : int, optional
        Longest prompt in tokens; defaults to the preset's or the model config's value.
    max_packed_tokens : int
        Memory budget of one packed scoring pass, in suffix tokens (transformers backend).
    max_batch_tokens : int, optional
        Transformers backend: how many items' prefix + trie rows one forward pass stacks, as a
        budget of padded tokens (rows x longest row); 0 runs one item per pass. None picks by
        device: 0 on CPU (batching measured 0.87x there, ``scripts/results/bench_engine_batched_*``),
        16384 on a GPU (a memory guess, not measured). Results equal the per-item path within 1e-4.
    gpu_memory_utilization : float in (0, 1], optional
        vLLM backend only: share of GPU memory (on CPU builds: of host memory) vLLM reserves;
        defaults to vLLM's own on GPU and 0.3 on CPU.
    engine_args : dict, optional
        vLLM backend only: further ``vllm.LLM`` arguments, e.g. ``{"tensor_parallel_size": 2,
        "max_num_seqs": 64, "quantization": "awq"}``; keys from the allow-list
        :data:`autorubric_local.engine.vllm.args.ENGINE_ARGS` with values of its types
        (:func:`~autorubric_local.engine.vllm.args.check_engine_args`). A preset's
        ``engine_args`` apply under these (a key set here wins).
    explanation_max_tokens : int
        Token budget of one explanation (capped by ``max_tokens``).
    explanation_style : {"sentence", "free"}
        ``"sentence"`` (default): one sentence, starting "The submission", ended by the grammar
        at its first sentence end; ``"free"``: any length up to the budget (the style before
        issue 20; reasoning under ``thinking`` is always free).
        :data:`autorubric_local.graders.prompts.ExplanationStyle`.
    prompt_format : {"auto", "chat", "completion"}
        How judge prompts are rendered: ``"chat"`` with the model's chat template (instruction-
        tuned judges), ``"completion"`` as one plain-text document for base models
        (:func:`autorubric_local.engine.chat_text.format_completion`), ``"auto"``: the preset's
        choice if it names one, else ``"chat"`` when the tokenizer has a chat template, else
        ``"completion"``.
    on_overflow : {"error", "truncate"}
        A submission whose prompt does not fit the judge's context: ``"error"`` (default)
        records each such judgment as an error; ``"truncate"`` cuts the middle of the
        submission, keeping head and tail around a marker, and records the cut on the report
        (:mod:`autorubric_local.graders.overflow`).
    engine : object, optional
        A ready engine implementing :class:`autorubric_local.engine.Engine`; when given, ``model``
        is only a label and nothing is loaded.

    Raises
    ------
    pydantic.ValidationError
        On a value out of range; the message names the field, the range and the value. For
        ``engine_args`` it is :func:`~autorubric_local.engine.vllm.args.check_engine_args`'s
        ``InputError`` message: an argument not in the allow-list (named, with the allowed
        ones listed), or a value of the wrong type or range. (Judge-panel files, presets and
        the CLI raise that ``InputError`` itself.)
    """

    model_config = ConfigDict(frozen=True, extra="forbid", arbitrary_types_allowed=True)

    model: str = DEFAULT_MODEL
    temperature: float | None = Field(default=0.0, ge=0.0)
    max_tokens: int = Field(default=1024, ge=1)
    top_p: float | None = Field(default=None, gt=0.0, le=1.0)
    seed: int | None = None
    thinking: ThinkingLevelLiteral | int | None = None
    timeout: float | None = Field(default=None, gt=0)
    max_retries: int = Field(default=0, ge=0)
    retry_min_wait: float = Field(default=1.0, ge=0.0)
    retry_max_wait: float = Field(default=60.0, ge=0.0)
    max_parallel_requests: int | None = Field(default=None, ge=1)
    cache_enabled: bool = False
    cache_dir: str = ".autorubric_cache"
    cache_ttl: int | None = None
    prompt_caching: bool = True
    api_key: str | None = None
    api_base: str | None = None
    extra_headers: dict[str, str] = Field(default_factory=dict)
    extra_params: dict[str, Any] = Field(default_factory=dict)

    backend: str = "auto"
    device: Device = "auto"
    dtype: DType = "auto"
    context_length: int | None = Field(default=None, ge=16)
    max_packed_tokens: int = Field(default=2048, ge=64)
    max_batch_tokens: int | None = Field(default=None, ge=0)
    gpu_memory_utilization: float | None = Field(default=None, gt=0.0, le=1.0)
    engine_args: dict[str, Any] = Field(default_factory=dict, description=f"vLLM arguments: {', '.join(ENGINE_ARGS)}")
    explanation_max_tokens: int = Field(default=96, ge=1)
    explanation_style: Literal["sentence", "free"] = "sentence"
    on_overflow: Literal["error", "truncate"] = "error"
    prompt_format: Literal["auto", "chat", "completion"] = "auto"
    engine: Any = Field(default=None, exclude=True)

    @field_validator("backend")
    @classmethod
    def _check_backend(cls, value: str) -> str:
        """``"auto"`` or a registered backend (:func:`~autorubric_local.judges.backends.backend_names`)."""
        from autorubric_local.judges.backends.registry import backend_names

        known = backend_names()
        if value != "auto" and value not in known:
            raise ValueError(f"unknown backend {value!r}; known: auto, {', '.join(known)}")
        return value

    @field_validator("engine")
    @classmethod
    def _check_engine(cls, value: object) -> object:
        """None, or an engine that declares its capabilities (:func:`checked_capabilities`)."""
        if value is not None:
            try:
                checked_capabilities(value)
            except TypeError as exc:
                raise ValueError(str(exc)) from None
        return value

    @model_validator(mode="after")
    def _check_retry_waits(self) -> LLMConfig:
        if self.retry_max_wait < self.retry_min_wait:
            raise ValueError(f"retry_max_wait must be >= retry_min_wait ({self.retry_min_wait}), "
                             f"got {self.retry_max_wait}")
        return self

    @field_validator("engine_args", mode="before")
    @classmethod
    def _check_engine_args(cls, value: object) -> dict[str, Any]:
        return check_engine_args(value)

    @field_validator("thinking", mode="before")
    @classmethod
    def _thinking_as_level_or_budget(cls, value: object) -> object:
        """A ``ThinkingConfig`` (its budget, else its level) or ``ThinkingLevel`` member as the
        plain value stored: the config dumps to JSON and its content hash does not change."""
        if isinstance(value, ThinkingConfig):
            return value.budget_tokens if value.budget_tokens is not None else value.level.value
        if isinstance(value, ThinkingLevel):
            return value.value
        return value

    @field_validator("thinking")
    @classmethod
    def _check_thinking(cls, value: int | str | None) -> int | str | None:
        if isinstance(value, int) and not isinstance(value, bool) and value < 1:
            raise ValueError(f"thinking budget must be >= 1 token, got {value}")
        return value

    @property
    def sampling_temperature(self) -> float:
        """The temperature a local engine samples explanations at: ``temperature``, 0.0 for None."""
        return 0.0 if self.temperature is None else self.temperature

    @property
    def thinking_budget(self) -> int:
        """Reasoning tokens before the verdict; 0 when thinking is off."""
        if self.thinking is None or self.thinking == "none":
            return 0
        if isinstance(self.thinking, int):
            return min(self.thinking, self.max_tokens)
        return min(THINKING_BUDGETS[self.thinking], self.max_tokens)

    @property
    def explanation_kind(self) -> Literal["sentence", "free"]:
        """The explanation style in force: ``"free"`` under ``thinking``, else ``explanation_style``."""
        return "free" if self.thinking_budget > 0 else self.explanation_style

    @property
    def explanation_budget(self) -> int:
        """Tokens allowed for one explanation."""
        return min(self.explanation_max_tokens, self.max_tokens)

    @classmethod
    def from_yaml(cls, path: str | Path) -> LLMConfig:
        """Load a configuration from a YAML mapping file.

        Raises
        ------
        InputError
            If the file is missing, is not YAML, or is not a mapping.
        pydantic.ValidationError
            If a field is unknown or out of range.
        """
        path = Path(path)
        try:  # the same reading and YAML limits as rubric and panel files
            data = parse_yaml(read_input_text(path))
        except InputError as exc:
            message = str(exc)
            raise InputError(message if message.startswith(str(path)) else f"{path}: invalid YAML: {message}") from None
        if not isinstance(data, dict):
            raise InputError(f"{path}: expected a mapping of LLMConfig fields, got {type(data).__name__}")
        return cls(**data)

    def describe(self) -> dict[str, Any]:
        """The fields as JSON-able data for run records and content hashes: without ``engine``,
        and without ``max_batch_tokens`` while it is unset and ``retry_min_wait``/``retry_max_wait``
        while at their defaults, so runs stored before those fields existed keep their content hash."""
        exclude = {"engine"} | ({"max_batch_tokens"} if self.max_batch_tokens is None else set())
        exclude |= {name for name in _LATER_FIELDS if getattr(self, name) == type(self).model_fields[name].default}
        return self.model_dump(mode="json", exclude=exclude)

    def to_yaml(self, path: str | Path) -> None:
        """Write the configuration (without ``engine``) as YAML."""
        Path(path).write_text(
            yaml.safe_dump(self.model_dump(mode="json", exclude={"engine"}), sort_keys=False),
            encoding="utf-8",
        )
