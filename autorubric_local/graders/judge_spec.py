"""``JudgeSpec``: one judge of an ensemble (AutoRubric's ``autorubric.graders.JudgeSpec``).

Its own module so that :mod:`.escalation` (whose ``EscalationConfig`` names judges) and
:mod:`.criterion_grader` (which runs a cascade) can both import it without a cycle.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from autorubric_local.core.errors import InputError
from autorubric_local.judges.config import LLMConfig
from autorubric_local.judges.decision import DecisionModelConfig

__all__ = ["JudgeSpec"]


@dataclass(frozen=True)
class JudgeSpec:
    """One judge of an ensemble: ``JudgeSpec(LLMConfig(...), "judge-id", weight=1.0)``.

    ``llm_config`` may be a :class:`~autorubric_local.judges.decision.DecisionModelConfig`: a
    decision-model judge (:mod:`.decision_stage`), as in AutoRubric 1.6.1.

    Judges may be different models, or one model with different prompts: ``system_prompt``
    (extension) replaces the grader's system prompt for this judge only. Judges whose
    ``llm_config`` load the same model share one engine and one engine workload. vLLM judges of
    different models share the device memory (:mod:`autorubric_local.judges.memory`).

    Raises
    ------
    InputError
        If ``judge_id`` is empty or ``weight`` is not a positive finite number.
    """

    llm_config: LLMConfig | DecisionModelConfig
    judge_id: str
    weight: float = 1.0
    system_prompt: str | None = None

    def __post_init__(self) -> None:
        if not self.judge_id:
            raise InputError("JudgeSpec: judge_id must be a non-empty string")
        if not (math.isfinite(self.weight) and self.weight > 0):
            raise InputError(f"JudgeSpec {self.judge_id!r}: weight must be > 0, got {self.weight!r}")
