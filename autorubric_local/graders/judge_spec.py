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

    Judges may be different models, or one model with different prompts: ``system_prompt``
    (extension) replaces the grader's system prompt for this judge only. Judges whose
    ``llm_config`` load the same model share one engine and one engine workload. vLLM judges of
    different models share the device memory (:mod:`autorubric_local.judges.memory`).

    Raises
    ------
    InputError
        If ``judge_id`` is empty or ``weight`` is not a positive finite number.
    """

    llm_config: LLMConfig
    judge_id: str
    weight: float = 1.0
    system_prompt: str | None = None

    def __post_init__(self) -> None:
        # judge_model_config, ensemble judges and cascade stages all become judge specs, so
        # this one check refuses a decision model everywhere a grader would take it
        if isinstance(self.llm_config, DecisionModelConfig):
            raise InputError(f"JudgeSpec {self.judge_id!r}: decision-model judges (DecisionModelConfig) do not grade "
                             "inside CriterionGrader yet (issue 53): not as judge_model_config, an ensemble judge "
                             "or a cascade stage. Grade an item with "
                             "autorubric_local.judges.decision.DecisionModelJudge(config).grade_item(...)")
        if not self.judge_id:
            raise InputError("JudgeSpec: judge_id must be a non-empty string")
        if not (math.isfinite(self.weight) and self.weight > 0):
            raise InputError(f"JudgeSpec {self.judge_id!r}: weight must be > 0, got {self.weight!r}")
