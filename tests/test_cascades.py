"""Confidence cascades replayed offline (issue 53: AutoRubric's replay_escalation,
escalation_stats, calibrate_escalation, EscalationCurve.best). Two scripted judges grade the
same four items: a small first stage whose confidence on each criterion is set by hand, some of
its verdicts wrong, and a large judge that is always right. Every figure below is worked out by
hand from the table in ``SMALL``."""

from __future__ import annotations

import math
import warnings

import pytest

from autorubric_local import Criterion, CriterionVerdict, LLMConfig, Rubric, ScriptedEngine
from autorubric_local.cascades import (
    EscalationPoint,
    calibrate_escalation,
    escalates,
    escalation_stats,
    replay_escalation,
)
from autorubric_local.core.errors import InputError
from autorubric_local.data.dataset import RubricDataset
from autorubric_local.engine import LabelScores, ScoreRequest
from autorubric_local.graders import CriterionGrader, EscalationConfig
from autorubric_local.runner import EvalConfig, EvalRunner

MET, UNMET = CriterionVerdict.MET, CriterionVerdict.UNMET
CRITERIA = {"A": "Mentions alpha", "B": "Mentions beta"}
TRUTH = {0: (MET, UNMET), 1: (UNMET, MET), 2: (MET, MET), 3: (UNMET, UNMET)}
SMALL = {  # (item, criterion) -> (the small judge's verdict, its confidence); "!" marks a wrong verdict
    (0, "A"): (MET, 0.90), (0, "B"): (MET, 0.30),  # !
    (1, "A"): (UNMET, 0.40), (1, "B"): (UNMET, 0.27),  # ! on B
    (2, "A"): (MET, 0.80), (2, "B"): (UNMET, 0.60),  # ! on B
    (3, "A"): (MET, 0.98), (3, "B"): (UNMET, 0.90),  # ! on A
}
"""With three labels a chosen label's confidence is above 0.25 (its probability above 0.5)."""
EPS = 1e-9


def _scores(request: ScoreRequest, chosen: CriterionVerdict, p: float) -> list[float]:
    """Log-probabilities over MET, UNMET, CANNOT_ASSESS with ``p`` on ``chosen``."""
    other = UNMET if chosen == MET else MET
    probs = {chosen.value: p, other.value: 1.0 - p - EPS, "CANNOT_ASSESS": EPS}
    return [math.log(probs[label.strip('" ')]) for label in request.labels]  # labels are JSON continuations


def _cell(request: ScoreRequest) -> tuple[int, str]:
    text = request.prefix + request.suffix
    item = next(k for k in TRUTH if f"Answer number {k}." in text)
    return item, next(c for c, requirement in CRITERIA.items() if requirement in text)


def small_policy(request: ScoreRequest) -> list[float] | LabelScores:
    verdict, confidence = SMALL[_cell(request)]
    return _scores(request, verdict, (2 * confidence + 1) / 3)  # confidence = (K p - 1) / (K - 1), K = 3


def large_policy(request: ScoreRequest) -> list[float]:
    item, criterion = _cell(request)
    return _scores(request, TRUTH[item][list(CRITERIA).index(criterion)], 0.99)


def dataset(ids: bool = True) -> RubricDataset:
    rubric = Rubric([Criterion(name="A", weight=10.0, requirement=CRITERIA["A"]),
                     Criterion(name="B", weight=5.0, requirement=CRITERIA["B"])])
    data = RubricDataset(prompt="Name the letters.", rubric=rubric)
    for k, truth in TRUTH.items():
        data.add_item(f"Answer number {k}.", ground_truth=list(truth), id=f"i{k}" if ids else None)
    return data


def run(policy: object, name: str, ids: bool = True) -> object:
    grader = CriterionGrader(llm_config=LLMConfig(model=name, engine=ScriptedEngine(model_id=name, policy=policy)),
                             seed=1)
    return EvalRunner(dataset(ids), grader, EvalConfig(db_path=":memory:", show_progress=False)).run_sync()


@pytest.fixture(scope="module")
def runs() -> tuple[object, object]:
    return run(small_policy, "small"), run(large_policy, "large")


def test_the_small_judges_confidences_are_as_set(runs: tuple[object, object]) -> None:
    small, _ = runs
    for item in small.item_results:
        k = int(item.item_id[1:])
        for report in item.report.report:
            verdict, confidence = SMALL[(k, report.criterion.name)]
            assert report.final_verdict == verdict
            assert report.votes[0].confidence == pytest.approx(confidence, abs=1e-6)


def test_a_replay_at_one_half_escalates_the_three_unsure_criteria(runs: tuple[object, object]) -> None:
    small, large = runs
    replay = replay_escalation(small, large, EscalationConfig(LLMConfig(model="large"), 0.5))
    escalated = {(i.item_id, r.criterion.name) for i in replay.item_results for r in i.report.report if r.escalated}
    assert escalated == {("i0", "B"), ("i1", "A"), ("i1", "B")}  # confidences 0.30, 0.40, 0.27
    item1 = next(i for i in replay.item_results if i.item_id == "i1")
    a = item1.report.report[0]
    assert [(v.judge_id, v.superseded) for v in a.votes] == [("large", False), ("small", True)]
    assert a.final_verdict == UNMET and a.agreement == 1.0  # decided by the large judge's vote alone
    assert [round(i.report.score, 6) for i in replay.item_results] == [round(x / 15, 6) for x in (10, 5, 10, 10)]
    point = escalation_stats(replay, dataset())
    assert point.escalation_rate == pytest.approx(3 / 8)
    assert point.dm_accuracy_kept == pytest.approx(3 / 5)  # i0A, i2A, i3B right; i2B, i3A wrong
    assert point.dm_accuracy_escalated == pytest.approx(1 / 3)  # only i1A was right
    assert point.fallback_accuracy_escalated == pytest.approx(1.0)
    assert point.metric == pytest.approx(0.75)  # 6 of 8 pairs right, 3 of 4 on each criterion
    assert point.threshold is None


def test_thresholds_zero_and_one_give_back_the_two_runs(runs: tuple[object, object]) -> None:
    small, large = runs
    none = replay_escalation(small, large, EscalationConfig(LLMConfig(model="large"), 0.0))
    every = replay_escalation(small, large, EscalationConfig(LLMConfig(model="large"), 1.0))
    assert [i.report.score for i in none.item_results] == [i.report.score for i in small.item_results]
    assert [i.report.score for i in every.item_results] == [i.report.score for i in large.item_results]
    assert escalation_stats(every, dataset()).metric == pytest.approx(1.0)
    per = replay_escalation(small, large, EscalationConfig(LLMConfig(model="large"), 0.0, per_criterion={"A": 1.0}))
    assert {(i.item_id, r.criterion.name) for i in per.item_results for r in i.report.report if r.escalated} == {
        (f"i{k}", "A") for k in TRUTH}


def test_the_curve_and_its_best_point(runs: tuple[object, object]) -> None:
    small, large = runs
    curve = calibrate_escalation(dataset(), small, large)
    assert [p.threshold for p in curve.points] == [round(0.05 * i, 2) for i in range(21)]
    at = {p.threshold: p for p in curve.points}
    assert at[0.35].escalation_rate == pytest.approx(2 / 8) and at[0.35].metric == pytest.approx(0.75)
    assert at[0.3].escalation_rate == pytest.approx(1 / 8)  # 0.30 is not below 0.30: only i1B escalates
    assert at[0.3].metric == pytest.approx(5 / 8)
    assert at[0.65].metric == pytest.approx(7 / 8) and at[0.65].escalation_rate == pytest.approx(4 / 8)
    assert curve.best().threshold == 1.0  # only escalating i3A (confidence 0.98) makes every pair right
    assert curve.best(tolerance=0.25).threshold == 0.35  # the least escalating point within 0.25 of 1.0
    assert curve.best(max_escalation_rate=0.3).threshold == 0.35
    assert len(curve.to_dataframe()) == 21


def test_failures_and_abstentions_escalate_at_threshold_zero(runs: tuple[object, object]) -> None:
    small, _ = runs
    report = small.item_results[0].report.report[0]
    assert not escalates(report, 0.0) and escalates(report, 0.95)
    vote = report.votes[0]
    abstained = report.model_copy(update={"votes": [vote.model_copy(update={"verdict": CriterionVerdict.CANNOT_ASSESS})]})
    failed = report.model_copy(update={"votes": [vote.model_copy(update={"error": "judge call failed"})]})
    assert escalates(abstained, 0.0) and escalates(failed, 0.0)


def test_bad_input_is_refused(runs: tuple[object, object]) -> None:
    small, large = runs
    with pytest.raises(InputError, match=r"threshold must be a number in \[0, 1\]"):
        EscalationConfig(LLMConfig(model="large"), 1.5)
    with pytest.raises(InputError, match="per_criterion must be True or False"):
        calibrate_escalation(dataset(), small, large, per_criterion="yes")  # type: ignore[arg-type]
    with pytest.raises(InputError, match="has no threshold"):
        replay_escalation(small, large, escalation_stats(small, dataset()))
    short = type(large)(**{**large.__dict__, "item_results": large.item_results[:3]})
    with pytest.raises(InputError, match="is not in llm_result"):
        replay_escalation(small, short, EscalationPoint(threshold=0.5, escalation_rate=None, dm_accuracy_kept=None,
                                                        dm_accuracy_escalated=None, fallback_accuracy_escalated=None,
                                                        metric=None, cost_usd=None, compute_seconds=0.0))


def test_items_without_ids_are_found_by_the_runs_item_ids() -> None:
    small, large = run(small_policy, "small", ids=False), run(large_policy, "large", ids=False)
    replay = replay_escalation(small, large, EscalationConfig(LLMConfig(model="large"), 0.5))
    assert [i.item_id for i in replay.item_results] == [f"item-{k}" for k in TRUTH]
    assert escalation_stats(replay, dataset(ids=False)).metric == pytest.approx(0.75)


GRID = [0.0, 0.65, 1.0]
"""A short sweep for the per-criterion fits: each replay is measured by compute_metrics (~0.2 s)."""


def test_per_criterion_fits_each_criterion_its_own_threshold(runs: tuple[object, object]) -> None:
    # AutoRubric 1.6.1 (autorubric/escalation.py, calibrate_escalation / _fitted_thresholds). The
    # wrong small verdicts are i3A (0.98) and i0B (0.30), i1B (0.27), i2B (0.60); the large judge
    # is always right; the metric is right pairs / 8.
    # Plain sweep: 0.0 -> 4/8 at rate 0; 0.65 -> 7/8 at rate 4/8 (i1A, i0B, i1B, i2B); 1.0 -> 8/8
    # at rate 8/8. The start is best() = 1.0.
    # Fit A (global 1.0, so B all escalated): t_A 0.0 -> 7/8 (i3A kept), 0.65 -> 7/8, 1.0 -> 8/8:
    # A = 1.0. Fit B (A = 1.0): t_B 0.0 -> 5/8; 0.65 -> 8/8 at rate 7/8 (i3B kept, right); 1.0 ->
    # 8/8 at rate 8/8: the least escalating, B = 0.65. With both criteria named and fitted the
    # global threshold decides nothing: every point is 8/8 at rate 7/8, and best() takes 0.0.
    small, large = runs
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        curve = calibrate_escalation(dataset(), small, large, thresholds=GRID, per_criterion=True,
                                     min_pairs_per_criterion=4)
    assert not [w for w in caught if "calibrate_escalation" in str(w.message)]  # 4 labelled pairs each: enough
    assert [p.threshold for p in curve.points] == GRID
    assert [p.per_criterion for p in curve.points] == [{"A": 1.0, "B": 0.65}] * 3
    assert [p.escalation_rate for p in curve.points] == [pytest.approx(7 / 8)] * 3
    assert [p.metric for p in curve.points] == [pytest.approx(1.0)] * 3
    best = curve.best()
    assert best.threshold == 0.0 and best.per_criterion == {"A": 1.0, "B": 0.65}
    assert best.dm_accuracy_kept == pytest.approx(1.0)  # i3B alone is kept, and right
    assert best.dm_accuracy_escalated == pytest.approx(3 / 7)  # i0A, i1A, i2A right of the 7 deferred
    replay = replay_escalation(small, large, best)  # the point replays its own thresholds
    assert {(i.item_id, r.criterion.name) for i in replay.item_results for r in i.report.report
            if not r.escalated} == {("i3", "B")}


def test_a_criterion_with_too_few_labelled_pairs_follows_the_global_threshold(runs: tuple[object, object]) -> None:
    # B's labels on i0 and i1 abstain (CANNOT_ASSESS): B has 2 labelled pairs (i2: small wrong at
    # 0.60; i3: small right at 0.90), under min_pairs_per_criterion=3, so it warns and follows the
    # global threshold; A has 4 and is fitted. The metric is right pairs / 6 (the 4 of A, 2 of B).
    # Plain sweep: 0.0 -> 4/6 (i3A, i2B wrong); 0.65 -> 5/6 (i3A); 1.0 -> 6/6: start 1.0.
    # Fit A (global 1.0): t_A 0.0 -> 5/6, 0.65 -> 5/6, 1.0 -> 6/6: A = 1.0.
    # Points (A = 1.0; B at the global threshold): 0.0 -> 5/6 at rate 4/8 (the four A pairs);
    # 0.65 -> 6/6 at rate 7/8 (+ i0B, i1B, i2B); 1.0 -> 6/6 at rate 8/8. best() takes 0.65.
    small, large = runs
    abstain = CriterionVerdict.CANNOT_ASSESS
    data = RubricDataset(prompt="Name the letters.", rubric=dataset().rubric)
    for k, truth in {0: (MET, abstain), 1: (UNMET, abstain), 2: (MET, MET), 3: (UNMET, UNMET)}.items():
        data.add_item(f"Answer number {k}.", ground_truth=list(truth), id=f"i{k}")
    with pytest.warns(UserWarning, match=r"no threshold for 'B' \(2 labelled pairs\).*min_pairs_per_criterion=3"):
        curve = calibrate_escalation(data, small, large, thresholds=GRID, per_criterion=True,
                                     min_pairs_per_criterion=3)
    assert [p.per_criterion for p in curve.points] == [{"A": 1.0}] * 3
    assert [p.escalation_rate for p in curve.points] == [pytest.approx(x) for x in (4 / 8, 7 / 8, 8 / 8)]
    assert [p.metric for p in curve.points] == [pytest.approx(x) for x in (5 / 6, 1.0, 1.0)]
    assert curve.best().threshold == 0.65 and curve.best().per_criterion == {"A": 1.0}
