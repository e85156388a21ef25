"""Graders: ``CriterionGrader``, ``JudgeSpec`` and ``EscalationConfig`` (AutoRubric's ``autorubric.graders``)."""

from autorubric_local.core.rubric import Grader
from autorubric_local.graders.criterion_grader import (
    CriterionGrader,
    GradedItem,
    JudgeSpec,
)
from autorubric_local.graders.escalation import EscalationConfig

__all__ = ["CriterionGrader", "EscalationConfig", "GradedItem", "Grader", "JudgeSpec"]
