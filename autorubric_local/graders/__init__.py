"""Graders: ``CriterionGrader`` and ``JudgeSpec`` (AutoRubric's ``autorubric.graders``)."""

from autorubric_local.core.rubric import Grader
from autorubric_local.graders.criterion_grader import (
    CriterionGrader,
    GradedItem,
    JudgeSpec,
)

__all__ = ["CriterionGrader", "GradedItem", "Grader", "JudgeSpec"]
