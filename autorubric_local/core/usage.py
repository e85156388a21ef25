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
    """Field-wise total of ``usages`` (AutoRubric's README, "Usage Tracking").

    Each field of :class:`~autorubric_local.core.reports.TokenUsage` (``prompt_tokens``,
    ``completion_tokens``, ``total_tokens``, ``cache_creation_input_tokens``,
    ``cache_read_input_tokens``; token counts) is summed over the entries that are not
    ``None`` (:meth:`TokenUsage.combine <autorubric_local.core.reports.TokenUsage.combine>`).

    Parameters
    ----------
    usages : iterable of TokenUsage or None, length n >= 0
        Consumed once; it may be a generator.

    Returns
    -------
    TokenUsage or None
        A new object with the totals; ``None`` when every entry is ``None`` or ``usages`` is
        empty (never an all-zero ``TokenUsage`` standing for "unknown").

    Raises
    ------
    TypeError
        An entry that is neither ``TokenUsage`` nor ``None`` (``TokenUsage + x`` is not defined).
    """
    present = [usage for usage in usages if usage is not None]
    if not present:
        return None
    return TokenUsage.combine(present)


def aggregate_completion_cost(costs: Iterable[float | None]) -> float | None:
    """Total cost in USD of ``costs`` (AutoRubric's README, "Usage Tracking").

    The sum is :func:`math.fsum` (exact rounding of the float sum, independent of order), over
    the entries that are not ``None``. A ``None`` entry is a call or report whose price is
    unknown (e.g. a hosted model LiteLLM has no price for); local engines are not priced and
    report 0.0, which is counted as 0.0.

    Parameters
    ----------
    costs : iterable of float or None, length n >= 0
        Costs in USD; consumed once, it may be a generator. Values are not checked (a negative
        or non-finite cost is summed as given).

    Returns
    -------
    float or None
        The total in USD; ``None`` when every entry is ``None`` or ``costs`` is empty (so
        "unknown" is not reported as 0.0).

    Raises
    ------
    TypeError
        An entry that is neither a number nor ``None``.
    """
    present = [cost for cost in costs if cost is not None]
    if not present:
        return None
    return math.fsum(present)


def aggregate_evaluation_usage(
    reports: Iterable[EvaluationReport | EnsembleEvaluationReport],
) -> tuple[TokenUsage | None, float | None]:
    """``(total token usage, total cost in USD)`` over grading results (AutoRubric's README,
    "Usage Tracking").

    :func:`aggregate_token_usage` of the reports' ``token_usage`` and
    :func:`aggregate_completion_cost` of their ``completion_cost``; each report is read once.

    Parameters
    ----------
    reports : iterable of EvaluationReport or EnsembleEvaluationReport, length n >= 0
        Consumed once (materialised as a list); it may be a generator. A failed grade's report
        counts with whatever usage and cost it carries.

    Returns
    -------
    (TokenUsage or None, float or None)
        The field-wise token totals and the cost in USD. Either element is ``None`` when no
        report carried that information (every report's field was ``None``, or ``reports`` was
        empty).

    Raises
    ------
    AttributeError
        An entry without ``token_usage`` or ``completion_cost`` (not a report).
    TypeError
        A report whose ``token_usage`` is not a ``TokenUsage`` or whose ``completion_cost`` is
        not a number (reports validated by pydantic cannot have either).
    """
    materialised = list(reports)
    return (
        aggregate_token_usage(r.token_usage for r in materialised),
        aggregate_completion_cost(r.completion_cost for r in materialised),
    )
