"""``EscalationConfig``: which judges take over in a confidence cascade, and when (issue 53).

AutoRubric 1.6.1's ``autorubric.graders.EscalationConfig`` (``docs/cookbook/cascade-grading.md``,
``docs/api/decision-models.md``). A cascade's first stage judges every criterion; a criterion is
*escalated* when the first stage's vote failed, abstained (``CANNOT_ASSESS`` or an NA option) or
has a ``confidence`` below the criterion's threshold (:meth:`EscalationConfig.threshold_for`);
the escalation judges' votes alone then decide it, the first stage's vote kept as superseded,
never used as a fallback. Here the first stage is any judge whose votes carry label
probabilities (a local judge of any backend), so ``confidence`` is read from them
(:attr:`~autorubric_local.core.reports.JudgeVote.confidence`).

The report-level rules of a cascade live here, shared by the live cascade
(``CriterionGrader(escalation=...)``, in memory or stored) and its replay from two runs
(:mod:`autorubric_local.cascades`): :func:`escalates` (which criteria go on),
:func:`escalated_criterion` (a criterion's report once the escalation judges decided it) and
:func:`cascade_report` (the item's report, scored again by the one scorer).
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from autorubric_local.core.errors import InputError
from autorubric_local.core.reports import (
    EnsembleCriterionReport,
    EnsembleEvaluationReport,
    JudgeVote,
    MultiChoiceJudgeVote,
    TokenUsage,
)
from autorubric_local.core.scoring import raw_and_normalized
from autorubric_local.core.types import CannotAssessConfig, CriterionVerdict
from autorubric_local.graders.judge_spec import JudgeSpec
from autorubric_local.judges.config import LLMConfig

__all__ = ["EscalationConfig", "abstains", "cascade_report", "check_threshold", "escalated_criterion",
           "escalated_indices", "escalates", "first_stage_vote"]

Vote = JudgeVote | MultiChoiceJudgeVote


def check_threshold(value: object, what: str) -> float:
    """``value`` as a threshold: a real number in [0, 1] (not a boolean).

    Raises
    ------
    InputError
        Naming ``what`` and the value.
    """
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not math.isfinite(float(value)) \
            or not 0.0 <= float(value) <= 1.0:
        raise InputError(f"{what} must be a number in [0, 1]; got {value!r}")
    return float(value)


@dataclass(frozen=True, init=False)
class EscalationConfig:
    """A confidence cascade's escalation judges and thresholds (AutoRubric's API).

    Parameters
    ----------
    judges : LLMConfig or sequence of JudgeSpec
        The escalation judges; a bare ``LLMConfig`` becomes ``[JudgeSpec(config, "escalation")]``.
    threshold : float in [0, 1]
        A criterion is escalated when the first stage's confidence is below it: ``0.0``
        escalates only failures and abstentions, ``1.0`` everything short of certainty.
    per_criterion : mapping of str to float in [0, 1], optional
        Thresholds for particular criteria by name (copied); others use ``threshold``.

    Raises
    ------
    InputError
        No judges, a judge that is not a ``JudgeSpec``, a threshold outside [0, 1] or not a
        number, or a ``per_criterion`` key that is not a string.
    """

    judges: list[JudgeSpec]
    threshold: float
    per_criterion: Mapping[str, float] | None = None

    def __init__(self, judges: LLMConfig | Sequence[JudgeSpec], threshold: float,
                 per_criterion: Mapping[str, float] | None = None) -> None:
        specs = [JudgeSpec(judges, "escalation")] if isinstance(judges, LLMConfig) else list(judges)
        if not specs:
            raise InputError("EscalationConfig: judges must name at least one judge")
        for spec in specs:
            if not isinstance(spec, JudgeSpec):
                raise InputError(f"EscalationConfig: judges must be JudgeSpec (or one LLMConfig), got "
                                 f"{type(spec).__name__}")
        object.__setattr__(self, "judges", specs)
        object.__setattr__(self, "threshold", check_threshold(threshold, "EscalationConfig: threshold"))
        if per_criterion is not None:
            if not isinstance(per_criterion, Mapping):
                raise InputError("EscalationConfig: per_criterion must map criterion names to thresholds")
            checked = {}
            for name, value in per_criterion.items():
                if not isinstance(name, str):
                    raise InputError(f"EscalationConfig: per_criterion keys are criterion names, got {name!r}")
                checked[name] = check_threshold(value, f"EscalationConfig: per_criterion[{name!r}]")
            per_criterion = checked
        object.__setattr__(self, "per_criterion", per_criterion)

    def threshold_for(self, name: str | None) -> float:
        """The threshold of the criterion named ``name`` (``per_criterion``'s, else ``threshold``)."""
        if name is not None and self.per_criterion is not None and name in self.per_criterion:
            return self.per_criterion[name]
        return self.threshold


# ------------------------------------------------------------------ the cascade's report rules


def first_stage_vote(report: EnsembleCriterionReport) -> Vote | None:
    """The first stage's one vote on a criterion (None when it has none: a failed grade)."""
    votes: Sequence[Vote] = report.votes or report.multi_choice_votes
    return votes[0] if len(votes) == 1 else None


def abstains(vote: Vote) -> bool:
    """Whether ``vote`` abstained: ``CANNOT_ASSESS``, an NA option, or no option selected."""
    if isinstance(vote, JudgeVote):
        return vote.verdict == CriterionVerdict.CANNOT_ASSESS
    return vote.na or vote.selected_index is None


def escalates(report: EnsembleCriterionReport, threshold: float) -> bool:
    """Whether a cascade escalates the first stage's criterion ``report``: its vote failed
    (or it has none), abstained (``CANNOT_ASSESS``, an NA option), or its confidence is below
    ``threshold`` (a vote without probabilities has no confidence: it is escalated only at a
    threshold above 0)."""
    vote = first_stage_vote(report)
    if report.error is not None or vote is None or vote.error is not None or abstains(vote):
        return True
    confidence = vote.confidence
    if confidence is None:
        return threshold > 0.0
    return confidence < threshold


def escalated_indices(reports: Sequence[EnsembleCriterionReport], threshold_of: Callable[[str | None], float],
                      where: str) -> list[int]:
    """Positions of the first stage's criterion ``reports`` of one item that escalate, each at
    ``threshold_of(criterion name)``.

    Raises
    ------
    InputError
        A criterion with more than one first-stage vote (``where`` names the item).
    """
    chosen = []
    for index, report in enumerate(reports):
        if len(report.votes) + len(report.multi_choice_votes) > 1:
            raise InputError(f"{where}: the first stage has more than one vote on "
                             f"{report.criterion.name or report.criterion.requirement!r}: the first stage is one judge")
        if escalates(report, threshold_of(report.criterion.name)):
            chosen.append(index)
    return chosen


def escalated_criterion(first: EnsembleCriterionReport, second: EnsembleCriterionReport) -> EnsembleCriterionReport:
    """The report of an escalated criterion: the escalation judges' ``second``, marked
    ``escalated=True``, with the first stage's vote appended as ``superseded=True`` (kept, never
    counted: the verdict and agreement stay the deciding votes')."""
    vote = first_stage_vote(first)
    update: dict[str, Any] = {"escalated": True}
    if isinstance(vote, JudgeVote):
        update["votes"] = [*second.votes, vote.model_copy(update={"superseded": True})]
    elif isinstance(vote, MultiChoiceJudgeVote):
        update["multi_choice_votes"] = [*second.multi_choice_votes, vote.model_copy(update={"superseded": True})]
    return second.model_copy(update=update)


def cascade_report(
    reports: Sequence[EnsembleCriterionReport],
    cannot_assess: CannotAssessConfig,
    normalize: bool,
    *,
    judge_scores: Mapping[str, float | None],
    completion_cost: float | None,
    device_seconds: float | None,
    penalty: float = 0.0,
    token_usage: TokenUsage | None = None,
) -> EnsembleEvaluationReport:
    """An item's cascade report from its merged criterion ``reports`` (kept and escalated, in
    rubric order), scored by the one scorer
    (:func:`~autorubric_local.core.scoring.raw_and_normalized`), less ``penalty`` (a length
    penalty: ``max(0, normalized - penalty)``, or ``raw - penalty`` unnormalized, as a grade)."""
    raw, normalized = raw_and_normalized(reports, cannot_assess)
    agreements = [r.agreement for r in reports]
    return EnsembleEvaluationReport(
        score=max(0.0, normalized - penalty) if normalize else raw - penalty, raw_score=raw, llm_raw_score=raw,
        report=list(reports), judge_scores=dict(judge_scores),
        mean_agreement=sum(agreements) / len(agreements) if agreements else None,
        cannot_assess_count=sum(1 for r in reports if r.is_na), token_usage=token_usage,
        completion_cost=completion_cost, device_seconds=device_seconds)
