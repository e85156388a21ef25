"""Totals of token usage and cost over many judge calls or grading results.

Behaviour follows AutoRubric's README (github.com/delip/autorubric), "Usage Tracking":
``None`` entries are ignored, and a total is ``None`` when every entry is ``None``.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

from autorubric_local.core.reports import (
    EnsembleEvaluationReport,
    EvaluationReport,
    TokenUsage,
)

__all__ = ["aggregate_completion_cost", "aggregate_evaluation_usage", "aggregate_token_usage"]


def aggregate_token_usage(usages: Iterable[TokenUsage | None]) -> TokenUsage | None:
    """Field-wise total of ``usages``; ``None`` when every entry is ``None`` (or none given)."""
    present = [usage for usage in usages if usage is not None]
    if not present:
        return None
    return TokenUsage.combine(present)


def aggregate_completion_cost(costs: Iterable[float | None]) -> float | None:
    """Total cost in USD of ``costs``; ``None`` when every entry is ``None`` (or none given)."""
    present = [cost for cost in costs if cost is not None]
    if not present:
        return None
    return math.fsum(present)


def aggregate_evaluation_usage(
    reports: Iterable[EvaluationReport | EnsembleEvaluationReport],
) -> tuple[TokenUsage | None, float | None]:
    """``(total token usage, total cost in USD)`` over grading results.

    Either element is ``None`` when no report carried that information.
    """
    materialised = list(reports)
    return (
        aggregate_token_usage(r.token_usage for r in materialised),
        aggregate_completion_cost(r.completion_cost for r in materialised),
    )
