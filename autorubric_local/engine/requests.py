"""What a judge request wants as its answer, carried as data (issue 32, "Structured requests").

Requests stay text (:class:`~.base.ScoreRequest`, :class:`~.base.GenerateRequest`: a shared
prefix and a per-criterion suffix), and the grader also says, on each request, which answer it
wants: :class:`AnswerSpec`, the JSON key of the verdict and its values in the order shown. A
backend that answers a whole structured turn (the hosted engine) reads the schema to ask for
from it instead of from the prompt text; local backends ignore it (the label continuations and
the suffix already say everything they need).

Example
-------
>>> AnswerSpec("selected_option", ("1", "2", "3")).schema.__name__
'MultiChoiceJudgment'
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from pydantic import BaseModel

from autorubric_local.core.types import CriterionJudgment, MultiChoiceJudgment

__all__ = ["ANSWER_KEYS", "AnswerKey", "AnswerSpec", "answer_schema"]

AnswerKey = Literal["criterion_status", "selected_option"]
ANSWER_KEYS: tuple[str, ...] = ("criterion_status", "selected_option")


def answer_schema(key: str) -> type[BaseModel]:
    """The structured answer's model for a verdict key: ``CriterionJudgment`` for
    ``criterion_status``, ``MultiChoiceJudgment`` for ``selected_option``.

    Raises
    ------
    ValueError
        On another key.
    """
    if key not in ANSWER_KEYS:
        raise ValueError(f"answer key must be one of {ANSWER_KEYS}, got {key!r}")
    return CriterionJudgment if key == "criterion_status" else MultiChoiceJudgment


@dataclass(frozen=True)
class AnswerSpec:
    """The verdict a request asks for.

    Attributes
    ----------
    key : {"criterion_status", "selected_option"}
        The JSON key of the verdict: a binary criterion's status, or the number of the option
        chosen (a multi-choice criterion, a selection task).
    values : tuple of str, length n_labels >= 1
        The verdict's allowed values in the order of the request's labels (bare: ``"MET"``,
        ``"2"``), e.g. ``("MET", "UNMET", "CANNOT_ASSESS")`` or ``("1", "2", "3")``.

    Raises
    ------
    ValueError
        On another key, or no values.
    """

    key: AnswerKey
    values: tuple[str, ...]

    def __post_init__(self) -> None:
        if self.key not in ANSWER_KEYS:
            raise ValueError(f"AnswerSpec.key must be one of {ANSWER_KEYS}, got {self.key!r}")
        if not self.values:
            raise ValueError("AnswerSpec.values must hold at least one value, got none")

    @property
    def schema(self) -> type[BaseModel]:
        """The structured answer's model: ``CriterionJudgment`` or ``MultiChoiceJudgment``."""
        return answer_schema(self.key)
