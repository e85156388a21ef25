"""AutoRubric 1.6.1's cookbook workflows, run here on local judges (issue 53).

Each test makes the calls one cookbook page makes, in its order and with its arguments, written
in our words (the pages are in the delip/autorubric repository; their code is not copied):
only the import and the judges change. Jev becomes a loopback System One server (the
``serve`` fixture of ``test_decision_model``) and the hosted LLM a scripted local judge.

- ``docs/cookbook/cascade-grading.md``: grade a calibration split with each judge alone through
  ``evaluate``, sweep thresholds with ``calibrate_escalation``, pick one with
  ``EscalationCurve.best(tolerance=...)``, check it on the held-out split with
  ``replay_escalation`` and ``escalation_stats``, and deploy the cascade with the same seed and
  the bare ``LLMConfig`` as judge ``"escalation"``, whose live run equals the replay.
- ``docs/cookbook/single-call-grading.md``: ``llm_calls="per_item"`` on one judge through
  ``rubric.grade``, then both modes twice each through ``evaluate`` (unnamed runs, each a new
  experiment), scored with ``compute_metrics``, the MET rate and cell-by-cell agreement read
  from ``item_results`` as the page reads them; and a cascade whose escalation judge makes one
  call per item.
"""

from __future__ import annotations

import asyncio
import hashlib
import math
from typing import Any

import pytest
from test_decision_model import answers, serve  # noqa: F401 (serve is a fixture)

from autorubric_local import (
    Criterion,
    DecisionModelConfig,
    EscalationConfig,
    LLMConfig,
    Rubric,
    RubricDataset,
    ScriptedEngine,
    calibrate_escalation,
    compute_metrics,
    escalation_stats,
    evaluate,
    replay_escalation,
)
from autorubric_local.graders import CriterionGrader, JudgeSpec
from autorubric_local.graders.planning import GradeItem
from autorubric_local.graders import per_item as per_item_module

SEED = 7
CRITERIA = [Criterion(name=n, weight=w, requirement=r) for n, w, r in (
    ("units", 4.0, "States the answer with its units."),
    ("method", 3.0, "Names the method used."),
    ("check", 2.0, "Checks the result against an estimate."))]


def _unit(text: str) -> float:
    """A stable number in [0, 1) from ``text``."""
    return int(hashlib.sha256(text.encode()).hexdigest()[:8], 16) / 2**32


def _truth(submission: str, name: str) -> bool:
    """Whether the item's human label of criterion ``name`` is MET."""
    return _unit(f"{submission}|{name}") < 0.6


def _jev_reply(body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    """Jev: sure and right on about half of the criteria (P(yes) 0.95 or 0.05), unsure and a coin
    flip on the others (0.55 or 0.45)."""
    submission = body["state"]["submission"]
    by_id = {}
    for qid in body["questions"]:
        met = _truth(submission, CRITERIA[int(qid[1:])].name)
        sure = _unit(submission + qid) < 0.5
        p = (0.95 if met else 0.05) if sure else (0.55 if _unit(qid + submission) < 0.5 else 0.45)
        by_id[qid] = {"type": "noul", "noul": p}
    return answers(by_id)(body)


def _llm_policy(request: Any) -> list[float]:
    """The fallback LLM: the human label at P 0.9 (it reads the item and the criterion from the prompt)."""
    text = request.prefix + request.suffix
    submission = next(f"Answer {k}: it is {k * 3} m/s by the distance formula." for k in range(24)
                      if f"Answer {k}: " in text)
    listed = [c for c in CRITERIA if c.requirement in request.prefix]  # one prompt for a whole (sub-)rubric
    if listed:  # the round's criterion: as many verdicts opened as rounds so far, this one included
        name = listed[request.suffix.count('{"criterion_status"') - 1].name
    else:
        name = next(c.name for c in CRITERIA if c.requirement in request.suffix)
    p = 0.9 if _truth(submission, name) else 0.08
    return [math.log(p), math.log(0.98 - p), math.log(0.02)]


def _dataset() -> RubricDataset:
    data = RubricDataset(prompt="Compute the speed.", rubric=Rubric(CRITERIA))
    for k in range(24):
        submission = f"Answer {k}: it is {k * 3} m/s by the distance formula."
        truth = ["MET" if _truth(submission, c.name) else "UNMET" for c in CRITERIA]
        data.add_item(submission, ground_truth=truth, id=f"a{k}")
    return data


def test_the_cascade_grading_cookbook_runs_and_its_replay_equals_the_live_cascade(
        serve: Any, tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:  # noqa: F811
    server = serve(_jev_reply)
    monkeypatch.setenv("TYPESAFE_API_KEY", "sk-test")
    monkeypatch.chdir(tmp_path)  # evaluate writes under ./experiments
    jev = DecisionModelConfig(model="jev-test", api_base=server.url, cache_enabled=True,
                              cache_dir=str(tmp_path / "cache"), input_cost_per_token=0.042e-6, max_retries=1)
    llm = LLMConfig(model="scripted", engine=ScriptedEngine(model_id="fallback", policy=_llm_policy))
    dm_grader = CriterionGrader(judge_model_config=jev)
    llm_grader = CriterionGrader(judges=[JudgeSpec(llm, "escalation")], seed=SEED)

    dataset = _dataset()
    calib, test = dataset.split_train_test(n_train=len(dataset) // 2, seed=42)

    async def flow() -> tuple[Any, ...]:
        dm_calib = await evaluate(calib, dm_grader, experiment_name="calib-jev", show_progress=False)
        llm_calib = await evaluate(calib, llm_grader, experiment_name="calib-llm", show_progress=False)
        curve = calibrate_escalation(calib, dm_calib, llm_calib)
        table = curve.to_dataframe()[["threshold", "escalation_rate", "metric", "cost_usd"]]
        best = curve.best(tolerance=0.005)
        dm_test = await evaluate(test, dm_grader, experiment_name="test-jev", show_progress=False)
        llm_test = await evaluate(test, llm_grader, experiment_name="test-llm", show_progress=False)
        hybrid = replay_escalation(dm_test, llm_test, best)
        stats = escalation_stats(hybrid, test)
        cascade = CriterionGrader(judge_model_config=jev, escalation=EscalationConfig(
            judges=llm, threshold=best.threshold, per_criterion=best.per_criterion), seed=SEED)
        live = await evaluate(test, cascade, experiment_name="test-cascade", show_progress=False)
        return table, best, hybrid, stats, live, compute_metrics(dm_test, test).criterion_accuracy

    table, best, hybrid, stats, live, jev_alone = asyncio.run(flow())
    assert len(table) >= 2  # a sweep of thresholds
    assert list(table["escalation_rate"]) == sorted(table["escalation_rate"])  # more escalates at higher thresholds
    assert 0.0 < stats.escalation_rate < 1.0
    assert stats.metric > jev_alone  # on held-out items the cascade beats the decision model alone
    assert stats.cost_usd is not None and stats.cost_usd > 0  # Jev's priced tokens

    def decided(result: Any) -> list[Any]:
        return [(r.item_id, round(r.report.score, 9), [(c.escalated, c.final_verdict.value) for c in r.report.report])
                for r in sorted(result.item_results, key=lambda r: r.item_id)]

    # same seed and judge id "escalation": the live cascade is the replay, criterion by criterion
    assert decided(live) == decided(hybrid)
    escalated = sum(c.escalated for r in live.item_results for c in r.report.report)
    assert 0 < escalated < 3 * len(test), (best.threshold, escalated)  # a real cascade: some kept, some escalated
    assert len(server.requests) == len(dataset)  # the live cascade's Jev requests came from the cache


def test_the_single_call_grading_cookbook_runs_on_a_local_judge(serve: Any, tmp_path: Any,  # noqa: F811
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("TYPESAFE_API_KEY", "sk-test")
    engine = ScriptedEngine(model_id="judge", policy=_llm_policy)
    judge = LLMConfig(model="scripted", engine=engine, max_parallel_requests=16)
    rubric = Rubric(CRITERIA)
    answer = "Answer 3: it is 9 m/s by the distance formula."
    grader = CriterionGrader(judge_model_config=judge, llm_calls="per_item")
    report = asyncio.run(rubric.grade(to_grade=answer, grader=grader, query="Compute the speed."))
    assert len({r.prefix for r in engine.history}) == 1  # one prompt for the whole rubric
    assert [c.final_verdict.value for c in report.report] == [
        "MET" if _truth(answer, c.name) else "UNMET" for c in CRITERIA]

    dataset = _dataset()
    runs = {}
    for rep in (1, 2):
        for mode in ("per_criterion", "per_item"):
            graded = CriterionGrader(judge_model_config=judge, llm_calls=mode, seed=42)
            runs[mode, rep] = asyncio.run(evaluate(dataset, graded, show_progress=False))

    def verdicts(result: Any) -> dict[tuple[int, int], Any]:
        return {(r.item_idx, c): cr.final_verdict for r in result.item_results if r.error is None
                for c, cr in enumerate(r.report.report) if not cr.is_error and cr.final_verdict is not None}

    for result in runs.values():
        metrics = compute_metrics(result, dataset)
        assert metrics.criterion_accuracy == 1.0 and metrics.mean_kappa == pytest.approx(1.0)  # it reads the labels
        assert len(verdicts(result)) == len(dataset) * len(CRITERIA) and result.total_completion_cost == 0.0
    assert verdicts(runs["per_item", 1]) == verdicts(runs["per_item", 2]) == verdicts(runs["per_criterion", 1])

    # a cascade's escalation judge makes one call per item for the criteria escalated
    server = serve(_jev_reply)
    jev = DecisionModelConfig(model="jev-test", api_base=server.url, max_retries=1)
    escalation_engine = ScriptedEngine(model_id="fallback", policy=_llm_policy)
    monkeypatch.setattr(per_item_module, "SPECULATED_REQUESTS", 1)  # one request per round: counted below
    cascade = CriterionGrader(judge_model_config=jev, llm_calls="per_item", seed=42, escalation=EscalationConfig(
        judges=LLMConfig(model="scripted", engine=escalation_engine), threshold=0.5))
    graded_items = cascade.grade_batch([GradeItem(item.submission, tuple(CRITERIA)) for item in dataset.items[:6]])
    escalated = [[c.escalated for c in g.report.report] for g in graded_items]
    prompts = {r.prefix for r in escalation_engine.history}
    assert len(prompts) == sum(any(e) for e in escalated)  # one prompt per item with an escalated criterion
    assert len(escalation_engine.history) == sum(map(sum, escalated))  # a round per escalated criterion
    assert all(c.final_verdict.value == ("MET" if _truth(g.item.submission, c.criterion.name) else "UNMET")
               for g in graded_items for c in g.report.report if c.escalated)
