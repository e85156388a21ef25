"""AutoRubric's ``autorubric.utils`` names, for code written against AutoRubric
(``from autorubric.utils import fill_ground_truth`` becomes
``from autorubric_local.utils import fill_ground_truth``).

Each name is the project's own implementation, re-exported from the room that owns it:
text and length-penalty helpers (:mod:`autorubric_local.core.penalty`), token-usage and cost
totals (:mod:`autorubric_local.core.usage`), and ``fill_ground_truth``
(:mod:`autorubric_local.runner.ground_truth`).
"""

from autorubric_local.core.penalty import (
    compute_length_penalty,
    normalize_to_grade_input,
    parse_thinking_output,
    word_count,
)
from autorubric_local.core.usage import (
    aggregate_completion_cost,
    aggregate_evaluation_usage,
    aggregate_token_usage,
)
from autorubric_local.runner.ground_truth import fill_ground_truth

__all__ = [
    "aggregate_completion_cost",
    "aggregate_evaluation_usage",
    "aggregate_token_usage",
    "compute_length_penalty",
    "fill_ground_truth",
    "normalize_to_grade_input",
    "parse_thinking_output",
    "word_count",
]
