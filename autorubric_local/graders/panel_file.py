"""Judge-panel files: an ensemble of local judges and its aggregation settings, in YAML or JSON.

Format (every key but ``judges`` optional)::

    judges:
      - judge_id: smol            # unique; defaults to the model name
        model: smollm2-135m-instruct
        weight: 1.0
        system_prompt: null       # replaces the grader's system prompt for this judge
        # any other LLMConfig field: backend, device, dtype, thinking, context_length, ...
      - judge_id: smol-strict
        model: smollm2-135m-instruct
        system_prompt: "You are a strict grader. ..."
    aggregation: majority         # binary: majority | weighted | unanimous | any
    ordinal_aggregation: mean     # mean | median | weighted_mean | mode | min | max
    nominal_aggregation: mode     # mode | weighted_mode | unanimous
    permutations: single          # single | cyclic

Used by the CLI's ``--judges FILE`` (``grade``, ``sweep``).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pydantic
import yaml

from autorubric_local.core.errors import InputError
from autorubric_local.graders.aggregation import (
    BINARY_STRATEGIES,
    NOMINAL_STRATEGIES,
    ORDINAL_STRATEGIES,
)
from autorubric_local.graders.criterion_grader import JudgeSpec
from autorubric_local.judges.config import LLMConfig

_JUDGE_KEYS = ("judge_id", "weight", "system_prompt")
_TOP_KEYS: dict[str, tuple[str, ...]] = {
    "aggregation": BINARY_STRATEGIES,
    "ordinal_aggregation": ORDINAL_STRATEGIES,
    "nominal_aggregation": NOMINAL_STRATEGIES,
    "permutations": ("single", "cyclic"),
}


@dataclass(frozen=True)
class JudgesFile:
    """A parsed judge-panel file: the judges and the grader settings it names."""

    judges: tuple[JudgeSpec, ...]
    settings: dict[str, str]

    def grader_kwargs(self) -> dict[str, Any]:
        """Keyword arguments for :class:`CriterionGrader`: ``judges`` plus the named settings."""
        return {"judges": list(self.judges), **self.settings}


def _judge(path: Path, index: int, raw: object) -> JudgeSpec:
    where = f"{path}: judges[{index}]"
    if not isinstance(raw, dict):
        raise InputError(f"{where}: expected a mapping with at least 'model', got {type(raw).__name__}")
    entry = dict(raw)
    if "model" not in entry:
        raise InputError(f"{where}: field 'model' is required")
    own = {key: entry.pop(key) for key in _JUDGE_KEYS if key in entry}
    try:
        config = LLMConfig(**entry)
    except pydantic.ValidationError as exc:
        error = exc.errors()[0]
        field = ".".join(str(part) for part in error["loc"]) or "?"
        raise InputError(f"{where}: field '{field}': {error['msg']}") from None
    try:
        return JudgeSpec(
            config,
            str(own.get("judge_id") or config.model),
            float(own.get("weight", 1.0)),
            own.get("system_prompt"),
        )
    except (InputError, TypeError, ValueError) as exc:
        raise InputError(f"{where}: {exc}") from None


def load_judges_file(path: str | Path) -> JudgesFile:
    """Read a judge-panel file (YAML or JSON; format in the module docstring).

    Raises
    ------
    InputError
        If the file cannot be read or parsed, or a field is missing or invalid (the message
        names the file, the judge's index and the field), or two judges share a ``judge_id``.
    """
    path = Path(path)
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise InputError(f"{path}: cannot read judges file: {exc.strerror or exc}") from None
    except yaml.YAMLError as exc:
        raise InputError(f"{path}: not valid YAML/JSON: {exc}") from None
    if not isinstance(data, dict) or not isinstance(data.get("judges"), list) or not data["judges"]:
        raise InputError(f"{path}: expected a mapping with a non-empty list 'judges'")
    unknown = sorted(set(data) - {"judges", *_TOP_KEYS})
    if unknown:
        raise InputError(f"{path}: unknown keys {unknown}; allowed: {['judges', *_TOP_KEYS]}")
    judges = tuple(_judge(path, i, raw) for i, raw in enumerate(data["judges"]))
    seen: set[str] = set()
    for index, judge in enumerate(judges):
        if judge.judge_id in seen:
            raise InputError(f"{path}: judges[{index}]: field 'judge_id': duplicate {judge.judge_id!r}")
        seen.add(judge.judge_id)
    settings: dict[str, str] = {}
    for key, allowed in _TOP_KEYS.items():
        if key in data:
            if data[key] not in allowed:
                raise InputError(f"{path}: field '{key}' must be one of {list(allowed)}, got {data[key]!r}")
            settings[key] = data[key]
    return JudgesFile(judges, settings)
