"""Confidence cascades measured offline: replay, diagnose and calibrate one from two runs (issue 53).

AutoRubric 1.6.1's ``replay_escalation``, ``escalation_stats``, ``calibrate_escalation``,
``EscalationPoint`` and ``EscalationCurve`` (``docs/cookbook/cascade-grading.md``), on runs of
local judges. A cascade's first stage judges every criterion of an item; a criterion is
escalated when the first stage's vote failed, abstained (``CANNOT_ASSESS``, an NA option) or has
a confidence below the criterion's threshold, and the escalation judges' votes alone decide it
(:class:`~autorubric_local.graders.escalation.EscalationConfig`). Given a run of the first stage
alone (``dm_result``, AutoRubric's name: there the first stage is a decision model) and a run of
the escalation judges alone over the same items (``llm_result``), :func:`replay_escalation`
builds the run the cascade would have made, without a call: each criterion's report is the first
stage's, or, escalated, the escalation judges' with ``escalated=True`` and the first stage's vote
kept with ``superseded=True``; each item is scored again with the package's one scorer
(:func:`~autorubric_local.core.scoring.raw_and_normalized`). A local first stage's ``confidence``
is ``clamp((K p - 1)/(K - 1), 0, 1)`` of its chosen label's probability ``p`` among ``K``
(:attr:`~autorubric_local.core.reports.JudgeVote.confidence`), read from the label probabilities
the engine computed, which is what a cascade needs of a decision model.

**Pairs and accuracy** (as AutoRubric defines them). A pair is one criterion of one item graded
in both runs. It is *labelled* when the item's ground truth for it does not abstain (a binary
label other than ``CANNOT_ASSESS``, a multi-choice label that is not an NA option). An accuracy
is the share of a set of labelled pairs on which a prediction (the verdict, or the selected
option) equals the label; a prediction that abstains, or a failed vote, is no prediction and
counts nowhere. *Kept* pairs are those not escalated; *deferred* pairs the escalated labelled
pairs the first stage answered (escalated for their confidence). :class:`EscalationPoint`
holds the first stage's accuracy on kept pairs, and the first stage's and the escalation
judges' accuracy on the deferred pairs both answered: a cascade pays where the second beats the
first. ``cost_usd`` and ``compute_seconds`` of a replay are estimates: an item's escalation
cost and time are its escalation run's, pro-rated by the share of its criteria escalated when
the judges are called per criterion (``llm_calls="per_criterion"``), in full for an item with
any escalated criterion under ``"per_item"``.

The live cascade (``CriterionGrader(escalation=...)``, in memory or stored) merges its reports with the
same rules (:func:`~autorubric_local.graders.escalation.escalated_criterion`,
:func:`~autorubric_local.graders.escalation.cascade_report`), so a replay of its two stages
gives its verdicts and scores. :func:`calibrate_escalation` sweeps a global threshold and, with
``per_criterion=True``, fits each named criterion a threshold of its own, as AutoRubric does.
Not built: a length penalty in the replayed scores, and AutoRubric's calibration fingerprint
warnings.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict

from autorubric_local.core.errors import InputError
from autorubric_local.core.reports import (
    EnsembleCriterionReport,
    JudgeVote,
    MultiChoiceJudgeVote,
)
from autorubric_local.core.types import CannotAssessConfig, Criterion, CriterionVerdict, LLMCalls
from autorubric_local.graders.escalation import (
    EscalationConfig,
    abstains,
    cascade_report,
    check_threshold,
    escalated_criterion,
    escalated_indices,
    escalates,
)
from autorubric_local.runner.results import EvalResult, EvalTimingStats, ItemResult

if TYPE_CHECKING:
    import pandas as pd

    from autorubric_local.data.dataset import RubricDataset

__all__ = ["DEFAULT_THRESHOLDS", "EscalationCurve", "EscalationPoint", "calibrate_escalation", "escalates",
           "escalation_stats", "replay_escalation"]

DEFAULT_THRESHOLDS: tuple[float, ...] = tuple(round(0.05 * i, 2) for i in range(21))
"""The thresholds :func:`calibrate_escalation` sweeps when given none: 0.00, 0.05, ..., 1.00."""

Vote = JudgeVote | MultiChoiceJudgeVote
Prediction = CriterionVerdict | int | None


class EscalationPoint(BaseModel):
    """One operating point of a cascade: its thresholds and what they achieve (AutoRubric's
    fields; the module docstring defines pairs and accuracies).

    Attributes
    ----------
    threshold : float or None
        The global threshold (None when measured on a run, :func:`escalation_stats`).
    per_criterion : dict of str to float, or None
        Thresholds by criterion name.
    escalation_rate : float in [0, 1] or None
        Share of the pairs escalated (None without pairs).
    dm_accuracy_kept, dm_accuracy_escalated, fallback_accuracy_escalated : float in [0, 1] or None
        The first stage on kept pairs; the first stage and the escalation judges on the
        deferred pairs both answered (None for an empty set).
    metric : float or None
        The run's ``compute_metrics(result, dataset)`` field named by ``metric``.
    cost_usd : float or None
        Sum of the items' ``completion_cost`` (None when no item has one).
    compute_seconds : float
        Sum of the items' grading times (seconds), not the run's wall-clock time.
    calibration_fingerprint : str or None
        Not computed here (always None).
    """

    model_config = ConfigDict(frozen=True)

    threshold: float | None = None
    per_criterion: dict[str, float] | None = None
    escalation_rate: float | None
    dm_accuracy_kept: float | None
    dm_accuracy_escalated: float | None
    fallback_accuracy_escalated: float | None
    metric: float | None
    cost_usd: float | None
    compute_seconds: float
    calibration_fingerprint: str | None = None


class EscalationCurve(BaseModel):
    """The points of a threshold sweep (:func:`calibrate_escalation`), in sweep order, and
    AutoRubric's rule that picks one (:meth:`best`).

    Every point is measured on the items it was calibrated on, so the metric of the point
    :meth:`best` picks is optimistic: replay its threshold on held-out runs before trusting it.
    """

    model_config = ConfigDict(frozen=True)

    points: list[EscalationPoint]

    def best(self, max_escalation_rate: float | None = None, tolerance: float = 0.0) -> EscalationPoint:
        """Among the points within the budget (``escalation_rate <= max_escalation_rate``; all
        without one) that have a metric, the least escalating whose metric is within
        ``tolerance`` of the best; ties go to the higher metric, then the lower threshold, then
        the earlier point. A point without an escalation rate is outside any budget.

        Raises
        ------
        InputError
            ``max_escalation_rate`` outside [0, 1], ``tolerance`` below 0, or no point with a
            metric within the budget.
        """
        if max_escalation_rate is not None:
            check_threshold(max_escalation_rate, "max_escalation_rate")
        if isinstance(tolerance, bool) or not isinstance(tolerance, (int, float)) or not tolerance >= 0:
            raise InputError(f"tolerance must be a number >= 0; got {tolerance!r}")
        candidates = [(i, p) for i, p in enumerate(self.points) if p.metric is not None and not math.isnan(p.metric)
                      and (max_escalation_rate is None or (p.escalation_rate is not None
                                                           and p.escalation_rate <= max_escalation_rate + 1e-12))]
        if not candidates:
            raise InputError("no point of the curve has a metric within the escalation budget"
                             if self.points else "the curve has no points")
        top = max(p.metric for _, p in candidates)  # type: ignore[type-var]
        near = [(i, p) for i, p in candidates if p.metric >= top - tolerance - 1e-12]  # type: ignore[operator]

        def order(entry: tuple[int, EscalationPoint]) -> tuple[float, float, float, int]:
            i, p = entry
            rate = p.escalation_rate if p.escalation_rate is not None else math.inf
            threshold = p.threshold if p.threshold is not None else math.inf
            return (rate, -p.metric, threshold, i)  # type: ignore[operator]

        return min(near, key=order)[1]

    def to_dataframe(self) -> pd.DataFrame:
        """The points as a pandas ``DataFrame``, a row a point, a column per field."""
        import pandas as pd

        return pd.DataFrame([p.model_dump() for p in self.points], columns=list(EscalationPoint.model_fields))


# ------------------------------------------------------------------------------- replay


def replay_escalation(
    dm_result: EvalResult,
    llm_result: EvalResult,
    escalation: EscalationConfig | EscalationPoint,
    per_criterion: Mapping[str, float] | None = None,
    cannot_assess_config: CannotAssessConfig | None = None,
    normalize: bool = True,
    llm_calls: LLMCalls = "per_criterion",
) -> EvalResult:
    """The run a cascade would have made, built from a run of its first stage and one of its
    escalation judges over the same items (the module docstring says how).

    Parameters
    ----------
    dm_result : EvalResult
        The first stage graded alone: one judge, whose votes carry label probabilities.
    llm_result : EvalResult
        The escalation judges graded alone over the same items (by item id) and criteria.
    escalation : EscalationConfig or EscalationPoint
        The thresholds (a point's ``threshold`` and ``per_criterion``).
    per_criterion : mapping of str to float, optional
        Thresholds by criterion name, over those of ``escalation``.
    cannot_assess_config : CannotAssessConfig, optional
        How CANNOT_ASSESS and NA verdicts score (default: AutoRubric's).
    normalize : bool, default True
        Scores in [0, 1] (else the raw weighted sums).
    llm_calls : {"per_criterion", "per_item"}
        How the escalation run's judges were called: the cost and time estimates follow it.

    Returns
    -------
    EvalResult
        One item a first-stage item, in its order; not stored (``run_id`` None).

    Raises
    ------
    InputError
        A threshold outside [0, 1]; the runs' items or criteria differ; a first-stage
        criterion with more than one vote.
    """
    threshold_of = _thresholds(escalation, per_criterion)
    if llm_calls not in ("per_criterion", "per_item"):
        raise InputError(f"llm_calls must be 'per_criterion' or 'per_item'; got {llm_calls!r}")
    config = cannot_assess_config or CannotAssessConfig()
    fallback = _by_item_id(llm_result, "llm_result")
    items = []
    for dm_item in dm_result.item_results:
        llm_item = fallback.get(dm_item.item_id)
        if llm_item is None:
            raise InputError(f"item {dm_item.item_id!r} of dm_result is not in llm_result: the runs must grade "
                             "the same items")
        items.append(_replayed_item(dm_item, llm_item, threshold_of, config, normalize, llm_calls))
    if len(fallback) != len(items):
        extra = sorted(set(fallback) - {i.item_id for i in items})[:3]
        raise InputError(f"llm_result has items dm_result lacks (e.g. {extra}): the runs must grade the same items")
    return _result(items, dm_result, llm_result)


def _thresholds(escalation: EscalationConfig | EscalationPoint,
                per_criterion: Mapping[str, float] | None) -> Any:
    if isinstance(escalation, EscalationConfig):
        base, named = escalation.threshold, dict(escalation.per_criterion or {})
    elif isinstance(escalation, EscalationPoint):
        if escalation.threshold is None:
            raise InputError("an EscalationPoint measured on a run (escalation_stats) has no threshold to replay")
        base, named = check_threshold(escalation.threshold, "threshold"), dict(escalation.per_criterion or {})
    else:
        raise InputError(f"escalation must be an EscalationConfig or EscalationPoint; got {type(escalation).__name__}")
    for name, value in (per_criterion or {}).items():
        named[name] = check_threshold(value, f"per_criterion[{name!r}]")
    return lambda name: named.get(name, base) if name is not None else base


def _by_item_id(result: EvalResult, what: str) -> dict[str, ItemResult]:
    found: dict[str, ItemResult] = {}
    for item in result.item_results:
        if item.item_id in found:
            raise InputError(f"{what}: item id {item.item_id!r} twice")
        found[item.item_id] = item
    return found


def _replayed_item(dm_item: ItemResult, llm_item: ItemResult, threshold_of: Any, config: CannotAssessConfig,
                   normalize: bool, llm_calls: str) -> ItemResult:
    dm_reports = dm_item.report.report or []
    llm_reports = llm_item.report.report or []
    if not dm_reports:  # the first stage failed the whole item: every criterion goes to the fallback
        return ItemResult(dm_item.item_idx, dm_item.item, llm_item.report,
                          dm_item.duration_seconds + llm_item.duration_seconds, item_id=dm_item.item_id)
    if len(llm_reports) != len(dm_reports) or any(
            a.criterion.requirement != b.criterion.requirement for a, b in zip(dm_reports, llm_reports, strict=False)):
        raise InputError(f"item {dm_item.item_id!r}: the runs graded different criteria")
    chosen = escalated_indices(dm_reports, threshold_of, f"item {dm_item.item_id!r} of dm_result")
    reports = [escalated_criterion(dm_report, llm_reports[k]) if k in chosen else dm_report
               for k, dm_report in enumerate(dm_reports)]
    escalated = len(chosen)
    share = (escalated / len(dm_reports)) if llm_calls == "per_criterion" else float(escalated > 0)
    dm_cost, llm_cost = dm_item.report.completion_cost, llm_item.report.completion_cost
    cost = None if dm_cost is None and llm_cost is None else (dm_cost or 0.0) + share * (llm_cost or 0.0)
    report = cascade_report(
        reports, config, normalize,
        judge_scores={**(dm_item.report.judge_scores or {}), **(llm_item.report.judge_scores or {})},
        completion_cost=cost,
        device_seconds=(dm_item.report.device_seconds or 0.0) + share * (llm_item.report.device_seconds or 0.0))
    seconds = dm_item.duration_seconds + share * llm_item.duration_seconds
    return ItemResult(dm_item.item_idx, dm_item.item, report, seconds, item_id=dm_item.item_id)


def _result(items: list[ItemResult], dm_result: EvalResult, llm_result: EvalResult) -> EvalResult:
    durations = sorted(i.duration_seconds for i in items) or [0.0]
    total = sum(durations)
    costs = [i.report.completion_cost for i in items if i.report.completion_cost is not None]
    failed = [i for i in items if i.report.score is None]
    started = min(dm_result.started_at, llm_result.started_at)
    completed = max(dm_result.completed_at, llm_result.completed_at)
    wall = max((completed - started).total_seconds(), 0.0) if isinstance(started, datetime) else 0.0
    stats = EvalTimingStats(total, total / len(durations), durations[0], durations[-1],
                            durations[len(durations) // 2], durations[min(len(durations) - 1,
                                                                        int(0.95 * len(durations)))],
                            len(items) / wall if wall > 0 else 0.0)
    name = f"replay({dm_result.experiment_name or 'dm'}, {llm_result.experiment_name or 'llm'})"
    return EvalResult(items, len(items), len(items) - len(failed), len(failed), None,
                      sum(costs) if costs else None, stats, started, completed,
                      errors=[(i.item_idx, i.report.error or "") for i in failed], experiment_name=name,
                      grader_settings=dm_result.grader_settings)


# -------------------------------------------------------------------------------- stats


def escalation_stats(result: EvalResult, dataset: RubricDataset, metric: str = "criterion_accuracy") -> EscalationPoint:
    """An :class:`EscalationPoint` measured on a cascade run (a replay): escalation rate,
    accuracies (the module docstring), the run's ``metric``, cost and compute time.

    Parameters
    ----------
    result : EvalResult
        A replayed (or live) cascade run.
    dataset : RubricDataset
        Its items with ground truth (found by item id).
    metric : str, default "criterion_accuracy"
        A float field of :class:`~autorubric_local.metrics.MetricsResult`.

    Raises
    ------
    InputError
        ``metric`` is not such a field; an item of ``result`` is not in ``dataset``.
    """
    from autorubric_local.metrics import MetricsResult, compute_metrics

    if metric not in MetricsResult.model_fields:
        raise InputError(f"metric {metric!r} is not a field of MetricsResult")
    labels = _labels_by_item(dataset)
    pairs = escalated_pairs = 0
    kept: list[bool] = []
    deferred_dm: list[bool] = []
    deferred_fallback: list[bool] = []
    for item in result.item_results:
        if item.item_id not in labels:
            raise InputError(f"item {item.item_id!r} of the run is not in the dataset")
        truth = labels[item.item_id]
        for k, report in enumerate(item.report.report or []):
            pairs += 1
            escalated_pairs += report.escalated
            label = _label(truth, k, report.criterion)
            first = _first_stage_prediction(report)
            if label is None:
                continue
            if not report.escalated:
                if first is not None:
                    kept.append(first == label)
                continue
            final = _final_prediction(report)
            if first is not None and final is not None:
                deferred_dm.append(first == label)
                deferred_fallback.append(final == label)
    value = getattr(compute_metrics(result, dataset), metric) if result.item_results else None
    costs = [i.report.completion_cost for i in result.item_results if i.report.completion_cost is not None]
    return EscalationPoint(
        escalation_rate=escalated_pairs / pairs if pairs else None, dm_accuracy_kept=_share(kept),
        dm_accuracy_escalated=_share(deferred_dm), fallback_accuracy_escalated=_share(deferred_fallback),
        metric=None if value is None else float(value), cost_usd=sum(costs) if costs else None,
        compute_seconds=sum(i.duration_seconds for i in result.item_results))


def _share(outcomes: list[bool]) -> float | None:
    return sum(outcomes) / len(outcomes) if outcomes else None


def _labels_by_item(dataset: RubricDataset) -> dict[str, list[Any] | None]:
    """Ground truth by the id a run gives each item: its own, else ``item-<i>`` (its position)."""
    return {item.id or f"item-{i}": item.ground_truth for i, item in enumerate(dataset.items)}


def _label(truth: list[Any] | None, k: int, criterion: Criterion) -> Prediction:
    """The item's label for criterion ``k`` as a prediction compares with it; None when there
    is none or it abstains."""
    from autorubric_local.metrics import resolve_ground_truth

    if truth is None or k >= len(truth) or truth[k] is None:
        return None
    value = resolve_ground_truth([truth[k]], [criterion])[0]
    if isinstance(value, CriterionVerdict):
        return None if value == CriterionVerdict.CANNOT_ASSESS else value
    assert criterion.options is not None
    return None if criterion.options[value].na else value


def _vote_prediction(vote: Vote) -> Prediction:
    if vote.error is not None or abstains(vote):
        return None
    return vote.verdict if isinstance(vote, JudgeVote) else vote.selected_index


def _first_stage_prediction(report: EnsembleCriterionReport) -> Prediction:
    """The first stage's prediction: its vote on a kept criterion, its superseded vote on an
    escalated one."""
    votes: Sequence[Vote] = report.votes or report.multi_choice_votes
    if report.escalated:
        mine = [v for v in votes if v.superseded]
        return _vote_prediction(mine[0]) if mine else None
    if report.error is not None or len(votes) != 1:
        return None
    return _vote_prediction(votes[0])


def _final_prediction(report: EnsembleCriterionReport) -> Prediction:
    if report.error is not None:
        return None
    if report.final_verdict is not None:
        return None if report.final_verdict == CriterionVerdict.CANNOT_ASSESS else report.final_verdict
    verdict = report.final_multi_choice_verdict
    if verdict is None or verdict.na or verdict.selected_index is None:
        return None
    return verdict.selected_index


# ---------------------------------------------------------------------------- calibrate


def calibrate_escalation(
    dataset: RubricDataset,
    dm_result: EvalResult,
    llm_result: EvalResult,
    thresholds: Sequence[float] | None = None,
    metric: str = "criterion_accuracy",
    per_criterion: bool = False,
    min_pairs_per_criterion: int = 30,
    cannot_assess_config: CannotAssessConfig | None = None,
    normalize: bool = True,
    llm_calls: LLMCalls = "per_criterion",
) -> EscalationCurve:
    """A cascade replayed (:func:`replay_escalation`) and measured (:func:`escalation_stats`)
    at every global threshold of a sweep, in order, optionally with a threshold fitted for each
    named criterion.

    **Thresholds per criterion** (``per_criterion=True``), AutoRubric 1.6.1's rule
    (``docs/cookbook/cascade-grading.md``; ``autorubric/escalation.py``,
    ``calibrate_escalation``). A threshold by name
    (:attr:`~autorubric_local.graders.escalation.EscalationConfig.per_criterion`) applies to
    every criterion of that name, so it is fitted on that name's pairs across the items:

    1. *Which criteria.* Each named criterion with at least ``min_pairs_per_criterion``
       labelled pairs in ``dm_result`` (the module docstring defines them). Unnamed criteria,
       which cannot have a threshold of their own, and named ones with fewer labelled pairs
       (a ``UserWarning`` names them, with their counts) follow the global threshold.
    2. *The start.* The global threshold that :meth:`EscalationCurve.best` picks, at its
       defaults (no budget, no tolerance), on the plain sweep.
    3. *The fits.* In order of first appearance, each criterion's threshold is the threshold
       of the sweep that the same rule picks among the replays at the start with that
       criterion's threshold set to it and the thresholds already fitted held: the best
       ``metric`` of the whole run, then the lowest ``escalation_rate`` of the whole run,
       then the lowest threshold. The current setting is among the candidates, so no fit
       lowers the metric at the start.
    4. *The points.* With any threshold fitted, the sweep is measured again with the fits in
       place: every point holds one global threshold and the same ``per_criterion`` dict,
       what ``replay_escalation(dm_result, llm_result, point)`` replays and
       ``EscalationConfig(judges, point.threshold, per_criterion=point.per_criterion)``
       configures; :meth:`EscalationCurve.best` then trades only on the criteria that follow
       the global threshold. With none fitted (no criterion has enough pairs, or ``metric``
       is None at every threshold, which warns too), the points are the plain sweep's, with
       ``per_criterion`` None.

    Fitting replays the sweep once more for each fitted criterion and once with the fits;
    settings that escalate the same pairs give the same replay, which is measured once. Each fit is measured on the pairs it is chosen from: with few pairs it is optimistic,
    which ``min_pairs_per_criterion`` bounds; replay the point on held-out runs.

    Parameters
    ----------
    dataset : RubricDataset
        The items, with ground truth (found by item id).
    dm_result, llm_result : EvalResult
        As :func:`replay_escalation`: the first stage alone and the escalation judges alone,
        over the same items and criteria.
    thresholds : sequence of float in [0, 1], optional
        The global thresholds swept, in the order of the curve; default
        :data:`DEFAULT_THRESHOLDS` (21 values, 0.00 to 1.00). Also the candidates of each
        criterion's fit.
    metric : str, default "criterion_accuracy"
        A float field of :class:`~autorubric_local.metrics.MetricsResult`, higher being
        better: the run-level measure every point reports and every fit maximizes.
    per_criterion : bool, default False
        Whether named criteria get thresholds of their own, fitted as above.
    min_pairs_per_criterion : int >= 1, default 30
        The labelled pairs (criterion x item) a named criterion needs for a fitted threshold.
    cannot_assess_config, normalize, llm_calls
        As :func:`replay_escalation`: how the replays score, and the unit of their cost and
        time estimates (``cost_usd`` in USD, ``compute_seconds`` in seconds).

    Returns
    -------
    EscalationCurve
        One point per threshold of ``thresholds``, in their order, each with its
        ``threshold`` and ``per_criterion`` (the fitted thresholds by name, or None).

    Raises
    ------
    InputError
        ``per_criterion`` not a bool; ``min_pairs_per_criterion`` not a positive integer; a
        threshold outside [0, 1]; no thresholds; an item of ``dm_result`` not in ``dataset``;
        the errors of :func:`replay_escalation` and :func:`escalation_stats`.

    Warns
    -----
    UserWarning
        With ``per_criterion=True``: the named criteria left on the global threshold for want
        of labelled pairs, or because ``metric`` is None at every threshold of the sweep.
    """
    if not isinstance(per_criterion, bool):
        raise InputError(f"per_criterion must be True or False (whether to fit thresholds per criterion); got "
                         f"{per_criterion!r} (thresholds by name go to replay_escalation)")
    if isinstance(min_pairs_per_criterion, bool) or not isinstance(min_pairs_per_criterion, int) \
            or min_pairs_per_criterion < 1:
        raise InputError(f"min_pairs_per_criterion must be a positive integer; got {min_pairs_per_criterion!r}")
    grid = [check_threshold(t, "threshold") for t in (DEFAULT_THRESHOLDS if thresholds is None else thresholds)]
    if not grid:
        raise InputError("thresholds: give at least one")
    blank = EscalationPoint(threshold=0.0, escalation_rate=None, dm_accuracy_kept=None, dm_accuracy_escalated=None,
                            fallback_accuracy_escalated=None, metric=None, cost_usd=None, compute_seconds=0.0)
    # A replay depends on its thresholds only through the pairs they escalate, so one measure
    # serves every setting that escalates the same pairs (compute_metrics dominates the cost).
    by_escalated: dict[tuple[tuple[int, ...], ...], EscalationPoint] = {}

    def measured(threshold: float, fitted: Mapping[str, float]) -> EscalationPoint:
        """The point of the replay at global ``threshold`` with the ``fitted`` thresholds by name."""
        setting = blank.model_copy(update={"threshold": threshold})
        threshold_of = _thresholds(setting, fitted)
        key = tuple(tuple(escalated_indices(item.report.report or [], threshold_of,
                                            f"item {item.item_id!r} of dm_result")) for item in dm_result.item_results)
        if key not in by_escalated:
            replayed = replay_escalation(dm_result, llm_result, setting, per_criterion=fitted,
                                         cannot_assess_config=cannot_assess_config, normalize=normalize,
                                         llm_calls=llm_calls)
            by_escalated[key] = escalation_stats(replayed, dataset, metric)
        return by_escalated[key].model_copy(update={"threshold": threshold, "per_criterion": dict(fitted) or None})

    points = [measured(threshold, {}) for threshold in grid]
    if per_criterion:
        fitted = _fitted_thresholds(_labelled_pairs(dm_result, dataset), grid, EscalationCurve(points=points),
                                    min_pairs_per_criterion, measured)
        if fitted:
            points = [measured(threshold, fitted) for threshold in grid]
    return EscalationCurve(points=points)


def _labelled_pairs(dm_result: EvalResult, dataset: RubricDataset) -> dict[str, int]:
    """Each named criterion of ``dm_result``'s graded items, in order of first appearance, with
    its number of labelled pairs (those whose label does not abstain)."""
    labels = _labels_by_item(dataset)
    counts: dict[str, int] = {}
    for item in dm_result.item_results:
        if item.item_id not in labels:
            raise InputError(f"item {item.item_id!r} of dm_result is not in the dataset")
        for k, report in enumerate(item.report.report or []):
            name = report.criterion.name
            if name is not None:
                counts[name] = counts.get(name, 0) + (_label(labels[item.item_id], k, report.criterion) is not None)
    return counts


def _fitted_thresholds(labelled: Mapping[str, int], grid: Sequence[float], sweep: EscalationCurve, min_pairs: int,
                       measured: Callable[[float, Mapping[str, float]], EscalationPoint]) -> dict[str, float]:
    """The threshold of each named criterion with at least ``min_pairs`` labelled pairs, fitted
    by :meth:`EscalationCurve.best`'s rule on the whole run's metric, in the order of
    ``labelled`` (see :func:`calibrate_escalation`); warns about the names left unfitted.

    Parameters
    ----------
    labelled : mapping of str to int
        Labelled pairs by criterion name, in order of first appearance.
    grid : sequence of float in [0, 1]
        The sweep's thresholds: the candidates of each fit.
    sweep : EscalationCurve
        The sweep without fitted thresholds; its best point is the fits' global threshold.
    min_pairs : int
        ``min_pairs_per_criterion``.
    measured : callable (float, mapping of str to float) -> EscalationPoint
        The point of the replay at a global threshold with thresholds by name.

    Returns
    -------
    dict of str to float
        The fitted thresholds by name, in fitting order (empty when none is fitted).
    """
    names = [name for name, n in labelled.items() if n >= min_pairs]
    thin = [name for name, n in labelled.items() if n < min_pairs]
    if thin:
        _warn_global(thin, labelled, f"a criterion's own threshold needs at least min_pairs_per_criterion={min_pairs} "
                                     "labelled pairs")
    if not names:
        return {}
    if all(p.metric is None or math.isnan(p.metric) for p in sweep.points):
        _warn_global(names, labelled, "the metric is None at every threshold of the sweep, so none can be chosen by it")
        return {}
    start = sweep.best().threshold
    assert start is not None  # every point of a sweep has its threshold
    fitted: dict[str, float] = {}
    for name in names:
        # Each candidate carries the criterion's threshold as its own, so the rule's tie-break
        # on the lower threshold reads the criterion's, not the (fixed) global one.
        candidates = [measured(start, {**fitted, name: t}).model_copy(update={"threshold": t}) for t in grid]
        choice = EscalationCurve(points=candidates).best().threshold
        assert choice is not None
        fitted[name] = choice
    return fitted


def _warn_global(names: Sequence[str], labelled: Mapping[str, int], reason: str) -> None:
    """Warn that the criteria ``names`` follow the global threshold, and why."""
    listed = ", ".join(f"{name!r} ({labelled[name]} labelled pair{'' if labelled[name] == 1 else 's'})"
                       for name in names)
    warnings.warn(f"calibrate_escalation fits no threshold for {listed}: {reason}; "
                  f"{'it follows' if len(names) == 1 else 'they follow'} the global threshold", UserWarning,
                  stacklevel=4)  # _warn_global <- _fitted_thresholds <- calibrate_escalation <- its caller
