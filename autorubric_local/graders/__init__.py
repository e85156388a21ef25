"""Graders: ``CriterionGrader`` and ``JudgeSpec`` (AutoRubric's ``autorubric.graders``)."""

from autorubric_local.graders.criterion_grader import (
    CriterionGrader,
    GradedItem,
    JudgeSpec,
)
from autorubric_local.rubric import Grader

__all__ = ["CriterionGrader", "GradedItem", "Grader", "JudgeSpec"]
