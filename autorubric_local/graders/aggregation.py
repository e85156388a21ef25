"""Ensemble aggregation: combine the judges' votes on one criterion into a final verdict.

Pure functions of the votes and the criterion (no model, no judge order dependence). Sources:
AutoRubric's README (github.com/delip/autorubric), "Aggregation strategies"; AutoRubric's API
reference, pages "Multi-Choice" (``OrdinalAggregation``, ``NominalAggregation``) and "Core
Grading" (``Criterion.worst_option_among``, the one tie-break rule).

Rules common to every strategy (decisions where AutoRubric is silent are marked *):

- *Votes from failed judge calls (``is_error``) do not vote while at least one judge answered;
  when every call failed the final verdict is the conservative default (binary: UNMET for
  weight >= 0, MET for weight < 0; multi-choice: the NA option, else no option) with ``error``
  set, which the scorer counts as the worst case.
- *Abstentions (binary CANNOT_ASSESS, a multi-choice NA option) do not vote either; when every
  answering judge abstains, the final verdict is CANNOT_ASSESS (binary) or the NA option the
  abstaining judges chose (multi-choice).
- Binary (:data:`~autorubric_local.core.types.AggregationStrategy`): ``majority`` is MET when more
  MET than UNMET votes, ``weighted`` the same with judge weights summed; a head-count or
  weight tie resolves to the score-minimising verdict (UNMET for weight >= 0, MET for weight
  < 0). ``unanimous`` is MET only if every vote is MET; ``any`` is MET if one vote is.
- Ordinal: ``mean``/``median``/``weighted_mean`` of the selected values (``aggregated_value``)
  snapped to the nearest non-NA option by value; ``mode`` the most selected option; ``min``/
  ``max`` the lowest/highest-valued option selected (value ties: lowest index). Mode ties and
  equidistant snaps go to :meth:`Criterion.worst_option_among`.
- Nominal: ``mode``, ``weighted_mode`` (ties: ``worst_option_among``), ``unanimous`` (the
  option if all votes agree, else the NA option; with no NA option, ``mode`` and a warning).
"""

from __future__ import annotations

import math
import statistics
import warnings
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import get_args

from autorubric_local.core.errors import InputError
from autorubric_local.core.reports import JudgeVote, MultiChoiceJudgeVote
from autorubric_local.core.types import (
    AggregatedMultiChoiceVerdict,
    AggregationStrategy,
    Criterion,
    CriterionVerdict,
    NominalAggregation,
    OrdinalAggregation,
)

BINARY_STRATEGIES: tuple[str, ...] = get_args(AggregationStrategy)
ORDINAL_STRATEGIES: tuple[str, ...] = get_args(OrdinalAggregation)
NOMINAL_STRATEGIES: tuple[str, ...] = get_args(NominalAggregation)

_SNAP_TOLERANCE = 1e-9


def _same_mass(a: float, b: float) -> bool:
    """Equal vote masses up to summation rounding (0.1 + 0.2 ties 0.3), whatever the judge order."""
    return abs(a - b) <= _SNAP_TOLERANCE * max(1.0, abs(a), abs(b))


@dataclass(frozen=True)
class Strategies:
    """The grader's default strategy per criterion family (validated)."""

    binary: str = "majority"
    ordinal: str = "mean"
    nominal: str = "mode"

    def __post_init__(self) -> None:
        check_strategy(self.binary, BINARY_STRATEGIES, "aggregation")
        check_strategy(self.ordinal, ORDINAL_STRATEGIES, "ordinal_aggregation")
        check_strategy(self.nominal, NOMINAL_STRATEGIES, "nominal_aggregation")

    def for_criterion(self, criterion: Criterion) -> str:
        """The strategy for ``criterion``: its own ``aggregation`` override, else the default."""
        if criterion.aggregation is not None:
            return criterion.aggregation
        if criterion.is_binary:
            return self.binary
        return self.ordinal if criterion.scale_type == "ordinal" else self.nominal


def allowed_strategies(criterion: Criterion) -> tuple[str, ...]:
    """The strategies valid for ``criterion``'s family."""
    if criterion.is_binary:
        return BINARY_STRATEGIES
    return ORDINAL_STRATEGIES if criterion.scale_type == "ordinal" else NOMINAL_STRATEGIES


def check_strategy(value: str, allowed: Sequence[str], field: str) -> None:
    """Raise ``InputError`` naming ``field``, the allowed values and ``value`` if not allowed."""
    if value not in allowed:
        raise InputError(f"{field} must be one of {list(allowed)}, got {value!r}")


def check_criterion_override(criterion: Criterion, where: str) -> None:
    """Validate a criterion's own ``aggregation`` against its family (``where`` names it)."""
    if criterion.aggregation is not None:
        check_strategy(criterion.aggregation, allowed_strategies(criterion), f"{where}: field 'aggregation'")


# ---------------------------------------------------------------------------------- binary
def _worst_binary(criterion: Criterion) -> CriterionVerdict:
    return CriterionVerdict.MET if criterion.weight < 0 else CriterionVerdict.UNMET


def aggregate_binary(criterion: Criterion, votes: Sequence[JudgeVote], strategy: str) -> CriterionVerdict:
    """Final verdict of binary ``votes`` under ``strategy`` (module docstring for the rules).

    Raises
    ------
    InputError
        If ``strategy`` is not a binary strategy.
    """
    check_strategy(strategy, BINARY_STRATEGIES, "aggregation")
    answered = [v for v in votes if not v.is_error]
    if not answered:
        return _worst_binary(criterion)
    deciding = [v for v in answered if v.verdict != CriterionVerdict.CANNOT_ASSESS]
    if not deciding:
        return CriterionVerdict.CANNOT_ASSESS
    met = [v for v in deciding if v.verdict == CriterionVerdict.MET]
    if strategy == "unanimous":
        return CriterionVerdict.MET if len(met) == len(deciding) else CriterionVerdict.UNMET
    if strategy == "any":
        return CriterionVerdict.MET if met else CriterionVerdict.UNMET
    if strategy == "majority":
        met_mass, unmet_mass = float(len(met)), float(len(deciding) - len(met))
    else:  # weighted
        met_mass = math.fsum(v.weight for v in met)
        unmet_mass = math.fsum(v.weight for v in deciding if v.verdict == CriterionVerdict.UNMET)
    if _same_mass(met_mass, unmet_mass):
        return _worst_binary(criterion)
    return CriterionVerdict.MET if met_mass > unmet_mass else CriterionVerdict.UNMET


# ------------------------------------------------------------------------------ multi-choice
def _verdict(criterion: Criterion, index: int | None, aggregated: float | None = None) -> AggregatedMultiChoiceVerdict:
    if index is None:
        return AggregatedMultiChoiceVerdict(
            selected_index=None, selected_label=None, value=0.0, na=True, aggregated_value=0.0
        )
    option = (criterion.options or [])[index]
    value = option.value
    return AggregatedMultiChoiceVerdict(
        selected_index=index,
        selected_label=option.label,
        value=value,
        na=option.na,
        aggregated_value=value if aggregated is None else aggregated,
    )


def _snap(criterion: Criterion, target: float) -> int:
    """The non-NA option nearest to ``target`` by value; equidistant ties -> worst option."""
    options = criterion.options or []
    scored = [i for i, option in enumerate(options) if not option.na]
    best = min(abs(options[i].value - target) for i in scored)
    tied = [i for i in scored if abs(options[i].value - target) - best <= _SNAP_TOLERANCE]
    return criterion.worst_option_among(tied)


def _mode(criterion: Criterion, votes: Sequence[MultiChoiceJudgeVote], weighted: bool) -> int:
    weights: dict[int, list[float]] = defaultdict(list)
    for vote in votes:
        assert vote.selected_index is not None
        weights[vote.selected_index].append(vote.weight if weighted else 1.0)
    mass = {index: math.fsum(values) for index, values in weights.items()}
    top = max(mass.values())
    return criterion.worst_option_among([i for i, m in mass.items() if _same_mass(m, top)])


def _abstention(criterion: Criterion, answered: Sequence[MultiChoiceJudgeVote]) -> AggregatedMultiChoiceVerdict:
    chosen = [v.selected_index for v in answered if v.selected_index is not None]
    if chosen:
        counts = {i: chosen.count(i) for i in set(chosen)}
        top = max(counts.values())
        return _verdict(criterion, min(i for i, c in counts.items() if c == top))
    return _verdict(criterion, criterion.na_option_index)


def aggregate_multi_choice(
    criterion: Criterion, votes: Sequence[MultiChoiceJudgeVote], strategy: str
) -> AggregatedMultiChoiceVerdict:
    """Final verdict of multi-choice ``votes`` (original option indices) under ``strategy``.

    ``aggregated_value`` is the continuous mean/median/weighted mean before snapping, else the
    selected option's value.

    Raises
    ------
    InputError
        If ``strategy`` does not fit the criterion's ``scale_type``.
    """
    ordinal = criterion.scale_type == "ordinal"
    check_strategy(
        strategy,
        ORDINAL_STRATEGIES if ordinal else NOMINAL_STRATEGIES,
        "ordinal_aggregation" if ordinal else "nominal_aggregation",
    )
    answered = [v for v in votes if not v.is_error]
    if not answered:
        return _verdict(criterion, criterion.na_option_index)
    scored = [v for v in answered if not v.na and v.selected_index is not None]
    if not scored:
        return _abstention(criterion, answered)
    values = [v.value for v in scored]
    if strategy in ("mean", "median", "weighted_mean"):
        if strategy == "mean":
            center = statistics.fmean(values)
        elif strategy == "median":
            center = float(statistics.median(values))
        else:
            total = sum(v.weight for v in scored)
            center = sum(v.weight * v.value for v in scored) / total
        return _verdict(criterion, _snap(criterion, center), center)
    if strategy in ("min", "max"):
        pick = min if strategy == "min" else max
        target = pick(values)
        return _verdict(criterion, min(v.selected_index for v in scored if v.value == target))  # type: ignore[type-var]
    if strategy == "unanimous":
        chosen = {v.selected_index for v in scored}
        if len(chosen) == 1:
            return _verdict(criterion, chosen.pop())
        if criterion.na_option_index is not None:
            return _verdict(criterion, criterion.na_option_index)
        warnings.warn(
            f"criterion {criterion.name or criterion.requirement[:40]!r}: nominal 'unanimous' found "
            "disagreement and the criterion has no NA option; falling back to 'mode'",
            stacklevel=2,
        )
        return _verdict(criterion, _mode(criterion, scored, weighted=False))
    return _verdict(criterion, _mode(criterion, scored, weighted=strategy == "weighted_mode"))
