"""Judge-panel files: an ensemble of local judges and its aggregation settings, in YAML or JSON.

Format (every key but ``judges`` optional)::

    judges:
      - judge_id: smol            # unique; defaults to the model name
        model: smollm2-135m-instruct
        weight: 1.0
        system_prompt: null       # replaces the grader's system prompt for this judge
        # any other LLMConfig field: backend, device, dtype, thinking, context_length, ...
        # backend: vllm
        # engine_args: {tensor_parallel_size: 2, max_num_seqs: 64}  # vLLM only (LLMConfig.engine_args)
      - judge_id: smol-strict
        model: smollm2-135m-instruct
        system_prompt: "You are a strict grader. ..."
        metadata: {owner: qa-team}  # free-form JSON-able data, kept in JudgesFile.metadata
      - judge_id: jev             # a decision model (System One): its DecisionModelConfig fields
        decision_model: {model: jev-latest, api_base: "http://127.0.0.1:8000", binary_framing: noul}
        weight: 1.0               # no api_key in a file: the SDK reads TYPESAFE_API_KEY
    aggregation: majority         # binary: majority | weighted | unanimous | any
    ordinal_aggregation: mean     # mean | median | weighted_mean | mode | min | max
    nominal_aggregation: mode     # mode | weighted_mode | unanimous
    permutations: single          # single | cyclic

Used by the CLI's ``--judges FILE`` (``grade``, ``sweep``). Loading is strict: unknown keys are
errors naming the closest known field, numbers must be finite, booleans real booleans and
strings strings (LLMConfig fields are validated in pydantic's strict mode); the file is read
with the limits of :mod:`autorubric_local.core.checks` (64 MiB, UTF-8, 64 levels of nesting).
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pydantic

from autorubric_local.core.checks import (
    MAX_WEIGHT,
    check_json_object,
    check_keys,
    check_number,
    field_error,
    parse_yaml,
    read_input_text,
    short_repr,
)
from autorubric_local.core.errors import InputError
from autorubric_local.engine.vllm.args import check_engine_args
from autorubric_local.graders.aggregation import (
    BINARY_STRATEGIES,
    NOMINAL_STRATEGIES,
    ORDINAL_STRATEGIES,
)
from autorubric_local.graders.criterion_grader import JudgeSpec
from autorubric_local.judges.config import LLMConfig
from autorubric_local.judges.decision import DecisionModelConfig
from autorubric_local.judges.engines import check_backend_support

_JUDGE_KEYS = ("judge_id", "weight", "system_prompt")
_ENTRY_KEYS = (*_JUDGE_KEYS, *(name for name in LLMConfig.model_fields if name != "engine"), "metadata",
               "decision_model")
_DECISION_KEYS = tuple(f.name for f in dataclasses.fields(DecisionModelConfig) if f.name != "api_key")
_TOP_KEYS: dict[str, tuple[str, ...]] = {
    "aggregation": BINARY_STRATEGIES,
    "ordinal_aggregation": ORDINAL_STRATEGIES,
    "nominal_aggregation": NOMINAL_STRATEGIES,
    "permutations": ("single", "cyclic"),
}


@dataclass(frozen=True)
class JudgesFile:
    """A parsed judge-panel file: the judges, the grader settings it names, and each judge's
    ``metadata`` (by ``judge_id``; only judges that have it)."""

    judges: tuple[JudgeSpec, ...]
    settings: dict[str, str]
    metadata: dict[str, dict[str, Any]] = field(default_factory=dict)

    def grader_kwargs(self) -> dict[str, Any]:
        """Keyword arguments for :class:`CriterionGrader`: ``judges`` plus the named settings."""
        return {"judges": list(self.judges), **self.settings}


def _optional_str(own: dict[str, Any], key: str) -> str | None:
    value = own.get(key)
    if value is not None and not isinstance(value, str):
        raise InputError(f"field {key!r}: expected a string, got {type(value).__name__} {short_repr(value)}")
    return value


def _judge(raw: object) -> tuple[JudgeSpec, dict[str, Any] | None]:
    """One judge entry and its metadata; errors name the field, not yet the file or index."""
    if not isinstance(raw, dict):
        raise InputError(f"expected a mapping with at least 'model', got {type(raw).__name__}")
    check_keys(raw, _ENTRY_KEYS)
    if "decision_model" in raw:
        return _decision_judge(raw)
    if "model" not in raw:
        raise InputError("field 'model' is required")
    for key, value in raw.items():
        if isinstance(value, float) and not math.isfinite(value):
            raise InputError(f"field {key!r}: expected a finite number, got {value}")
    entry = dict(raw)
    own = {key: entry.pop(key) for key in _JUDGE_KEYS if key in entry}
    metadata = entry.pop("metadata", None)
    if metadata is not None:
        metadata = check_json_object(metadata)
    if "engine_args" in entry:  # its own message (argument, allowed ones), not pydantic's
        entry["engine_args"] = check_engine_args(entry["engine_args"], "field 'engine_args'")
    try:
        config = LLMConfig.model_validate(entry, strict=True)
    except pydantic.ValidationError as exc:
        raise InputError(field_error(exc, LLMConfig)) from None
    check_backend_support(config)  # a hosted-only field fails here, with the file's name
    return _spec(config, own), metadata


def _spec(config: LLMConfig | DecisionModelConfig, own: dict[str, Any]) -> JudgeSpec:
    """The entry's JudgeSpec from its ``judge_id``, ``weight`` and ``system_prompt`` fields."""
    judge_id = _optional_str(own, "judge_id")
    if judge_id is not None and not judge_id.strip():
        raise InputError("field 'judge_id': must not be empty")
    weight = check_number(own.get("weight", 1.0), "weight", -MAX_WEIGHT, MAX_WEIGHT)
    return JudgeSpec(config, judge_id or config.model, weight, _optional_str(own, "system_prompt"))


def _decision_judge(raw: dict[str, Any]) -> tuple[JudgeSpec, dict[str, Any] | None]:
    """A decision-model entry (``decision_model``: its :class:`DecisionModelConfig` fields, no
    ``api_key``) and its metadata."""
    extra = [key for key in raw if key not in (*_JUDGE_KEYS, "decision_model", "metadata")]
    if extra:
        raise InputError(f"fields {extra} are LLM settings; a decision-model entry has only "
                         f"{[*_JUDGE_KEYS, 'decision_model', 'metadata']}")
    fields = raw["decision_model"]
    if not isinstance(fields, dict):
        raise InputError(f"field 'decision_model': expected a mapping of DecisionModelConfig fields, got "
                         f"{type(fields).__name__}")
    if "api_key" in fields:
        raise InputError("field 'decision_model.api_key': a key is not read from a file; set TYPESAFE_API_KEY")
    check_keys(fields, _DECISION_KEYS, "field 'decision_model':")
    if "model" not in fields:
        raise InputError("field 'decision_model.model' is required")
    try:
        config = DecisionModelConfig(**fields)
    except TypeError as exc:  # a field of the wrong kind for the dataclass
        raise InputError(f"field 'decision_model': {exc}") from None
    metadata = raw.get("metadata")
    return _spec(config, raw), None if metadata is None else check_json_object(metadata)


def load_judges_file(path: str | Path) -> JudgesFile:
    """Read a judge-panel file (YAML or JSON; format in the module docstring).

    Raises
    ------
    InputError
        If the file cannot be read (missing, a directory, over 64 MiB, not UTF-8) or parsed
        (including nesting deeper than 64 levels), or a field is unknown, missing or invalid
        (the message names the file, the judge's index and the field), or two judges share a
        ``judge_id``.
    """
    path = Path(path)
    text = read_input_text(path)
    try:
        data = parse_yaml(text)
    except InputError as exc:
        raise InputError(f"{path}: not valid YAML/JSON: {exc}") from None
    if isinstance(data, dict):
        check_keys(data, ("judges", *_TOP_KEYS), f"{path}:")
    if not isinstance(data, dict) or not isinstance(data.get("judges"), list) or not data["judges"]:
        raise InputError(f"{path}: expected a mapping with a non-empty list 'judges'")
    judges: list[JudgeSpec] = []
    metadata: dict[str, dict[str, Any]] = {}
    for index, raw in enumerate(data["judges"]):
        try:
            judge, extra = _judge(raw)
        except InputError as exc:
            raise InputError(f"{path}: judges[{index}]: {exc}") from None
        if any(judge.judge_id == other.judge_id for other in judges):
            raise InputError(f"{path}: judges[{index}]: field 'judge_id': duplicate {judge.judge_id!r}")
        judges.append(judge)
        if extra is not None:
            metadata[judge.judge_id] = extra
    settings: dict[str, str] = {}
    for key, choices in _TOP_KEYS.items():
        if key in data:
            if not isinstance(data[key], str) or data[key] not in choices:
                raise InputError(
                    f"{path}: field '{key}' must be one of {list(choices)}, got {short_repr(data[key])}"
                )
            settings[key] = data[key]
    return JudgesFile(tuple(judges), settings, metadata)
