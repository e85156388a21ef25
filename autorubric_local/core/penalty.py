"""Length penalty and thinking/output input handling.

The penalty curve and the accepted input forms follow AutoRubric's README (github.com/delip/autorubric),
"Length Penalty" and "Thinking/Output Token Support". The
grader subtracts the penalty from the score; this module only computes it.
"""

from __future__ import annotations

import math
import re
import warnings
from collections.abc import Callable
from typing import Literal, TypedDict

from pydantic import BaseModel, ConfigDict, model_validator

from autorubric_local.core.errors import InputError

__all__ = [
    "CountFn",
    "LengthPenalty",
    "PenaltyType",
    "ThinkingOutputDict",
    "ToGradeInput",
    "compute_length_penalty",
    "normalize_to_grade_input",
    "parse_thinking_output",
    "word_count",
]

CountFn = Callable[[str], int]
"""Counts the length units (words, tokens) of a text."""

PenaltyType = Literal["ALL", "OUTPUT_ONLY", "THINKING_ONLY"]
"""Which sections count toward the length penalty."""


class ThinkingOutputDict(TypedDict, total=False):
    """A submission split into a ``thinking`` trace and the final ``output``.

    Both keys are optional; a missing key counts as the empty string.
    """

    thinking: str
    output: str


ToGradeInput = str | ThinkingOutputDict
"""What ``Rubric.grade`` accepts: a string (optionally with ``<thinking>``/``<output>``
markers) or a :class:`ThinkingOutputDict`."""


def word_count(text: str) -> int:
    """Number of whitespace-separated words in ``text`` (the default :data:`CountFn`)."""
    return len(text.split())


class LengthPenalty(BaseModel):
    """Settings of the length penalty (README 001, "Length Penalty").

    Attributes
    ----------
    free_budget : int, default 6000
        Length (in ``count_fn`` units) up to which no penalty applies; >= 0.
    max_cap : int, default 8000
        Length at and above which the full penalty applies; > ``free_budget``.
    penalty_at_cap : float, default 0.5
        The full penalty, >= 0. A fraction of the score for normalised scores; an absolute
        amount (e.g. 50.0) for raw scores.
    exponent : float, default 1.6
        Curve exponent, > 0; higher is more lenient just above the budget.
    count_fn : CountFn or None
        Length function; ``None`` means :func:`word_count`.
    penalty_type : {"ALL", "OUTPUT_ONLY", "THINKING_ONLY"}, default "ALL"
        Which sections are counted.

    Raises
    ------
    pydantic.ValidationError
        When a bound is violated; the message names the field, the allowed range and the
        value given.
    """

    model_config = ConfigDict(frozen=True, arbitrary_types_allowed=True)

    free_budget: int = 6000
    max_cap: int = 8000
    penalty_at_cap: float = 0.5
    exponent: float = 1.6
    count_fn: CountFn | None = None
    penalty_type: PenaltyType = "ALL"

    @model_validator(mode="after")
    def _check_bounds(self) -> LengthPenalty:
        if self.free_budget < 0:
            raise ValueError(f"free_budget must be >= 0, got {self.free_budget}")
        if self.max_cap <= self.free_budget:
            raise ValueError(
                f"max_cap must be > free_budget ({self.free_budget}), got {self.max_cap}"
            )
        if not (math.isfinite(self.penalty_at_cap) and self.penalty_at_cap >= 0):
            raise ValueError(
                f"penalty_at_cap must be a finite number >= 0, got {self.penalty_at_cap}"
            )
        if not (math.isfinite(self.exponent) and self.exponent > 0):
            raise ValueError(f"exponent must be a finite number > 0, got {self.exponent}")
        return self


_THINKING_RE = re.compile(r"<thinking>(.*?)</thinking>", re.DOTALL | re.IGNORECASE)
_OUTPUT_RE = re.compile(r"<output>(.*?)</output>", re.DOTALL | re.IGNORECASE)


def parse_thinking_output(text: str) -> ThinkingOutputDict:
    """Split ``text`` on ``<thinking>...</thinking>`` and ``<output>...</output>`` markers.

    Markers are matched case-insensitively and only as complete open/close pairs; an
    unpaired marker is ordinary text.

    - No complete pair: ``thinking=""``, ``output=text`` (unchanged).
    - A complete ``<output>`` pair: ``output`` is its stripped content (the first pair);
      text outside the markers is dropped.
    - Thinking pairs but no output pair: ``output`` is the text with every thinking block
      removed, stripped.
    - ``thinking`` is the stripped content of the thinking blocks; several blocks are
      joined with a blank line (the source keeps only the first, losing the others).

    Returns
    -------
    ThinkingOutputDict
        Always with both keys.
    """
    blocks = [match.strip() for match in _THINKING_RE.findall(text)]
    output_match = _OUTPUT_RE.search(text)
    if output_match is not None:
        output = output_match.group(1).strip()
    elif blocks:
        output = _THINKING_RE.sub("", text).strip()
    else:
        output = text
    thinking = "\n\n".join(block for block in blocks if block)
    return ThinkingOutputDict(thinking=thinking, output=output)


def normalize_to_grade_input(to_grade: ToGradeInput) -> ThinkingOutputDict:
    """Bring a submission to the ``{"thinking", "output"}`` form.

    A string is parsed with :func:`parse_thinking_output` (a plain string becomes all
    output). A dict may hold ``thinking`` and/or ``output`` strings; a missing key becomes
    ``""`` and unknown keys are ignored with a ``UserWarning``.

    Raises
    ------
    InputError
        (a ``ValueError``) if ``to_grade`` is neither a string nor a dict, or a section is
        not a string.
    """
    if isinstance(to_grade, str):
        return parse_thinking_output(to_grade)
    if not isinstance(to_grade, dict):
        raise InputError(f"to_grade must be a string or dict, got {type(to_grade).__name__}")
    thinking = to_grade.get("thinking", "")
    output = to_grade.get("output", "")
    if not isinstance(thinking, str):
        raise InputError(f"'thinking' must be a string, got {type(thinking).__name__}")
    if not isinstance(output, str):
        raise InputError(f"'output' must be a string, got {type(output).__name__}")
    extra = sorted(str(key) for key in to_grade if key not in ("thinking", "output"))
    if extra:
        warnings.warn(
            f"Unexpected keys in to_grade dict: {extra}. Only 'thinking' and 'output' are used.",
            UserWarning,
            stacklevel=2,
        )
    return ThinkingOutputDict(thinking=thinking, output=output)


def _text_to_count(sections: ThinkingOutputDict, penalty_type: PenaltyType) -> str:
    thinking = sections.get("thinking", "")
    output = sections.get("output", "")
    if penalty_type == "OUTPUT_ONLY":
        return output
    if penalty_type == "THINKING_ONLY":
        return thinking
    # Join with a newline so the last thinking word and first output word stay apart.
    return "\n".join(part for part in (thinking, output) if part)


def compute_length_penalty(text: str | ThinkingOutputDict, config: LengthPenalty) -> float:
    """Length penalty of a submission (README 001, "Penalty Formula").

    With ``n = count_fn(counted text)``, ``b = free_budget``, ``m = max_cap``,
    ``p = penalty_at_cap`` and ``e = exponent``::

        penalty = 0                           if n <= b
                = p                           if n >= m
                = p * ((n - b) / (m - b))**e  otherwise

    Parameters
    ----------
    text : str or ThinkingOutputDict
        A string counts as all output (markers are not parsed here; the grader passes the
        result of :func:`normalize_to_grade_input`). In a dict, a missing section is "".
    config : LengthPenalty

    Returns
    -------
    float
        In ``[0, penalty_at_cap]``, in the units of the score it is subtracted from.
    """
    sections = ThinkingOutputDict(thinking="", output=text) if isinstance(text, str) else text
    count_fn = config.count_fn if config.count_fn is not None else word_count
    count = count_fn(_text_to_count(sections, config.penalty_type))
    if count <= config.free_budget:
        return 0.0
    if count >= config.max_cap:
        return config.penalty_at_cap
    fraction = (count - config.free_budget) / (config.max_cap - config.free_budget)
    return config.penalty_at_cap * fraction**config.exponent
