"""The live confidence cascade, ``CriterionGrader(escalation=EscalationConfig(...))`` (issue 53).

A small scripted judge grades every criterion; the criteria it escalates (failed, abstained, or
confidence below the criterion's threshold) are graded again by a large scripted judge, whose
votes decide them. Every figure is worked out by hand from the policies' tables."""

from __future__ import annotations

import asyncio
import math

import pytest

from autorubric_local import Criterion, CriterionVerdict, LLMConfig, Rubric, ScriptedEngine
from autorubric_local.cascades import replay_escalation
from autorubric_local.core.errors import InputError
from autorubric_local.data.dataset import RubricDataset
from autorubric_local.engine import ScoreRequest
from autorubric_local.graders import CriterionGrader, EscalationConfig, JudgeSpec
from autorubric_local.runner import EvalConfig, EvalRunner

MET, UNMET, CA = CriterionVerdict.MET, CriterionVerdict.UNMET, CriterionVerdict.CANNOT_ASSESS
EPS = 1e-9
CRITERIA = {"A": ("Mentions alpha", 10.0), "B": ("Mentions beta", 5.0), "C": ("Mentions gamma", 3.0)}
SMALL = {  # (item, criterion) -> (small judge's verdict, its confidence (K p - 1)/(K - 1), K = 3)
    (0, "A"): (MET, 0.90),  # confident: kept at 0.5
    (0, "B"): (MET, 0.30),  # unsure: escalated at 0.5
    (0, "C"): (CA, 0.95),  # abstains: escalated at any threshold
    (1, "A"): (UNMET, 0.40), (1, "B"): (UNMET, 0.80), (1, "C"): (MET, 0.70),
    (2, "A"): (MET, 0.99), (2, "B"): (UNMET, 0.60), (2, "C"): (UNMET, 0.55),
}
LARGE = {(0, "A"): MET, (0, "B"): UNMET, (0, "C"): MET,
         (1, "A"): MET, (1, "B"): MET, (1, "C"): MET,
         (2, "A"): MET, (2, "B"): MET, (2, "C"): MET}


def _cell(request: ScoreRequest) -> tuple[int, str]:
    text = request.prefix + request.suffix
    item = next(k for k in range(3) if f"Answer number {k}." in text)
    return item, next(name for name, (requirement, _) in CRITERIA.items() if requirement in text)


def _logprobs(request: ScoreRequest, chosen: CriterionVerdict, p: float) -> list[float]:
    rest = [v for v in (MET, UNMET, CA) if v != chosen]
    probs = {chosen.value: p, rest[0].value: 1.0 - p - EPS, rest[1].value: EPS}
    return [math.log(probs[label.strip('" ')]) for label in request.labels]


def small_policy(request: ScoreRequest) -> list[float]:
    verdict, confidence = SMALL[_cell(request)]
    return _logprobs(request, verdict, (2 * confidence + 1) / 3)


def large_policy(request: ScoreRequest) -> list[float]:
    return _logprobs(request, LARGE[_cell(request)], 0.99)


def rubric(names: str = "ABC") -> list[Criterion]:
    return [Criterion(name=n, weight=CRITERIA[n][1], requirement=CRITERIA[n][0]) for n in names]


def engines() -> tuple[ScriptedEngine, ScriptedEngine]:
    return ScriptedEngine(model_id="small", policy=small_policy), ScriptedEngine(model_id="large", policy=large_policy)


def cascade(small: ScriptedEngine, large: ScriptedEngine, threshold: float = 0.5,
            per_criterion: dict[str, float] | None = None, **settings: object) -> CriterionGrader:
    escalation = EscalationConfig([JudgeSpec(LLMConfig(model="large", engine=large), "large")], threshold,
                                  per_criterion=per_criterion)
    return CriterionGrader(llm_config=LLMConfig(model="small", engine=small), escalation=escalation, seed=1,
                           **settings)


def test_only_the_unsure_and_abstaining_criteria_go_to_the_escalation_judge() -> None:
    small, large = engines()
    report = asyncio.run(cascade(small, large).grade("Answer number 0.", rubric()))
    assert len(small.history) == 3 and len(large.history) == 2  # the large judge never sees A
    assert sorted(_cell(r)[1] for r in large.history) == ["B", "C"]
    a, b, c = report.report
    assert not a.escalated and [v.judge_id for v in a.votes] == ["small"] and a.final_verdict == MET
    for criterion, verdict, first in ((b, UNMET, MET), (c, MET, CA)):
        assert criterion.escalated and criterion.final_verdict == verdict  # the large judge's vote decides
        assert [(v.judge_id, v.superseded, v.verdict) for v in criterion.votes] == [
            ("large", False, verdict), ("small", True, first)]
        assert criterion.agreement == 1.0
    assert report.score == pytest.approx((10 + 3) / 18)  # A and C met of weights 10 + 5 + 3
    assert report.raw_score == pytest.approx(13.0)
    assert report.judge_scores["small"] == pytest.approx(15 / 15)  # A, B met; C abstains (skipped)
    assert report.judge_scores["large"] == pytest.approx(3 / 8)  # over the criteria it judged: C of B, C
    assert report.cannot_assess_count == 0


def test_threshold_zero_escalates_only_the_abstention_and_one_everything() -> None:
    small, large = engines()
    report = asyncio.run(cascade(small, large, 0.0).grade("Answer number 0.", rubric()))
    assert [r.escalated for r in report.report] == [False, False, True] and len(large.history) == 1
    assert report.score == pytest.approx(18 / 18)  # A, B met (the small judge), C met (the large)
    small, large = engines()
    report = asyncio.run(cascade(small, large, 1.0).grade("Answer number 0.", rubric()))
    assert all(r.escalated for r in report.report) and len(large.history) == 3
    assert report.score == pytest.approx(13 / 18)


def test_per_criterion_thresholds() -> None:
    small, large = engines()  # A at 0.95 escalates (0.90 < 0.95); B at 0.2 is kept (0.30); C abstains
    report = asyncio.run(cascade(small, large, 0.5, {"A": 0.95, "B": 0.2}).grade("Answer number 0.", rubric()))
    assert [r.escalated for r in report.report] == [True, False, True]
    assert sorted(_cell(r)[1] for r in large.history) == ["A", "C"]
    assert report.score == pytest.approx(18 / 18)  # A met (large), B met (small), C met (large)


def dataset() -> RubricDataset:
    data = RubricDataset(prompt="Name the letters.", rubric=Rubric(rubric()))
    for k in range(3):
        data.add_item(f"Answer number {k}.", id=f"i{k}")
    return data


def test_the_live_cascade_equals_the_replay_of_its_two_stages() -> None:
    small, large = engines()
    grader = cascade(small, large)
    live = grader.grade_inputs([(f"Answer number {k}.", rubric(), None, None, f"i{k}") for k in range(3)])
    # at 0.5: i0 B, C; i1 A; i2 none (0.55 and 0.60 are kept): one batch of three large judgments
    assert [[r.escalated for r in g.report.report] for g in live] == [[False, True, True], [True, False, False],
                                                                     [False, False, False]]
    assert len(large.history) == 3
    runs = []
    for name, policy in (("small", small_policy), ("large", large_policy)):
        alone = CriterionGrader(llm_config=LLMConfig(model=name, engine=ScriptedEngine(model_id=name, policy=policy)),
                                seed=1)
        runs.append(EvalRunner(dataset(), alone, EvalConfig(db_path=":memory:", show_progress=False)).run_sync())
    replay = replay_escalation(*runs, EscalationConfig(LLMConfig(model="large"), 0.5))
    for entry, replayed in zip(live, replay.item_results, strict=True):
        assert entry.report.score == pytest.approx(replayed.report.score)
        assert entry.report.raw_score == pytest.approx(replayed.report.raw_score)
        assert [(r.escalated, r.final_verdict, [(v.judge_id, v.superseded, v.verdict) for v in r.votes])
                for r in entry.report.report] == [
            (r.escalated, r.final_verdict, [(v.judge_id, v.superseded, v.verdict) for v in r.votes])
            for r in replayed.report.report]
    assert [round(g.report.score, 9) for g in live] == [round(x / 18, 9) for x in (13, 13, 10)]  # i1: A met (large), B unmet, C met


def test_a_length_penalty_is_applied_to_the_merged_score() -> None:
    from autorubric_local.core.penalty import LengthPenalty

    penalty = LengthPenalty(free_budget=1, max_cap=3, penalty_at_cap=0.25, exponent=1.0, count_fn=lambda t: 3)
    small, large = engines()
    report = asyncio.run(cascade(small, large, length_penalty=penalty).grade("Answer number 0.", rubric()))
    assert report.score == pytest.approx(13 / 18 - 0.25)


def test_describe_names_the_escalation_only_when_set() -> None:
    small, large = engines()
    plain = CriterionGrader(llm_config=LLMConfig(model="small", engine=small), seed=1)
    assert "escalation" not in plain.describe()
    described = cascade(small, large, 0.5, {"B": 0.2}).describe()
    assert {k: v for k, v in described.items() if k != "escalation"} == plain.describe()
    assert described["escalation"]["threshold"] == 0.5 and described["escalation"]["per_criterion"] == {"B": 0.2}
    assert [j["judge_id"] for j in described["escalation"]["judges"]] == ["large"]


def test_release_engines_releases_the_escalation_judges_too() -> None:
    small, large = engines()
    grader = cascade(small, large, 1.0)
    asyncio.run(grader.grade("Answer number 0.", rubric()))
    assert grader.loaded_judges() == {"small", "large"}
    grader.release_engines()
    assert grader.loaded_judges() == frozenset()


def test_bad_cascades_are_refused() -> None:
    small, large = engines()
    two = [JudgeSpec(LLMConfig(model="small", engine=small), "a"), JudgeSpec(LLMConfig(model="small", engine=small), "b")]
    with pytest.raises(InputError, match=r"escalation needs exactly one first-stage judge .*got 2: \['a', 'b'\]"):
        CriterionGrader(judges=two, escalation=EscalationConfig(LLMConfig(model="large", engine=large), 0.5))
    with pytest.raises(InputError, match="escalation must be an EscalationConfig"):
        CriterionGrader(llm_config=LLMConfig(model="small", engine=small), escalation=0.5)  # type: ignore[arg-type]
    same = EscalationConfig([JudgeSpec(LLMConfig(model="large", engine=large), "small")], 0.5)
    with pytest.raises(InputError, match=r"escalation judge ids \['small'\] are also first-stage judge ids"):
        CriterionGrader(llm_config=LLMConfig(model="small", engine=small), escalation=same)


def _cascade_votes(result: object) -> list[tuple[str, float, list[tuple[bool, str, list[tuple[str, bool, str]]]]]]:
    return [(r.item_id, round(r.report.score, 9),
             [(c.escalated, c.final_verdict.value, [(v.judge_id, v.superseded, v.verdict.value) for v in c.votes])
              for c in r.report.report])
            for r in sorted(result.item_results, key=lambda r: r.item_id)]  # type: ignore[attr-defined]


def test_a_stored_live_cascade_resumes_to_what_it_grades_in_memory(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """EvalRunner stores a live cascade: reports with both stages (read back as graded), one
    judgment row per judgment of each stage keyed by the judge and the criterion's position in
    the full rubric, and a run stopped after its first chunk resumes to the one-pass result."""
    import sqlite3

    from autorubric_local.runner import EvalInterruptedError

    config = EvalConfig(db_path=tmp_path / "r.sqlite", experiment_name="cascade", chunk_judgments=3,
                        show_progress=False)
    runner = EvalRunner(dataset(), cascade(*engines()), config,
                        on_chunk=lambda chunk: runner.stop() if chunk.chunk_index == 0 else None)
    with pytest.raises(EvalInterruptedError):
        runner.run_sync()
    resumed = EvalRunner(dataset(), cascade(*engines()), config).run_sync()
    assert resumed.resumed_items == 1  # one item a chunk: 3 first-stage judgments each
    small, large = engines()
    live = cascade(small, large).grade_inputs([(f"Answer number {k}.", rubric(), None, None, f"i{k}")
                                               for k in range(3)])
    expected = [(g.item.item_id, round(g.report.score, 9),
                 [(c.escalated, c.final_verdict.value, [(v.judge_id, v.superseded, v.verdict.value) for v in c.votes])
                  for c in g.report.report]) for g in live]
    assert _cascade_votes(resumed) == expected
    with sqlite3.connect(tmp_path / "r.sqlite") as db:
        rows = db.execute("select item_id, criterion_index, criterion_name, judge_id, model_id, verdict "
                          "from judgments order by item_id, judge_id, criterion_index").fetchall()
    # at 0.5: i0 escalates B and C, i1 A, i2 nothing (hand-worked in the test above)
    assert [r for r in rows if r[3] == "large"] == [
        ("i0", 1, "B", "large", "large", "UNMET"), ("i0", 2, "C", "large", "large", "MET"),
        ("i1", 0, "A", "large", "large", "MET")]
    assert [(r[0], r[1], r[5]) for r in rows if r[3] == "small"] == [
        (f"i{k}", c, SMALL[(k, name)][0].value) for k in range(3) for c, name in enumerate("ABC")]
    whole = EvalRunner(dataset(), cascade(*engines()), EvalConfig(db_path=tmp_path / "w.sqlite",
                                                                  show_progress=False)).run_sync()
    assert _cascade_votes(whole) == expected


def test_the_escalation_stage_has_the_graders_settings_and_one_batch() -> None:
    small, large = engines()
    grader = cascade(small, large, mode="explain", normalize=False, shuffle_options=False)
    plain = CriterionGrader(llm_config=LLMConfig(model="small", engine=small), seed=1, mode="explain",
                            normalize=False, shuffle_options=False)
    assert grader.escalation_grader is not None
    assert {k: v for k, v in grader.escalation_grader.describe().items() if k != "judges"} == {
        k: v for k, v in plain.describe().items() if k != "judges"}
    small, large = engines()
    grader = cascade(small, large)
    calls: list[list[int]] = []
    batch = grader.escalation_grader.grade_batch

    def counted(items, **settings):  # type: ignore[no-untyped-def]
        calls.append([len(item.rubric) for item in items])
        return batch(items, **settings)

    grader.escalation_grader.grade_batch = counted  # type: ignore[method-assign]
    grader.grade_inputs([(f"Answer number {k}.", rubric(), None, None, f"i{k}") for k in range(3)])
    assert calls == [[2, 1]]  # one call: i0 with B and C, i1 with A; i2 has nothing to escalate


def test_a_failed_first_stage_judgment_escalates_and_both_failing_leaves_no_score() -> None:
    from autorubric_local.engine import LabelScores

    def failing_on_b(request: ScoreRequest) -> list[float] | LabelScores:
        return LabelScores((), error="boom") if _cell(request)[1] == "B" else small_policy(request)

    large = ScriptedEngine(model_id="large", policy=large_policy)
    report = asyncio.run(cascade(ScriptedEngine(model_id="small", policy=failing_on_b), large, 0.0)
                         .grade("Answer number 0.", rubric()))
    assert [r.escalated for r in report.report] == [False, True, True]  # B failed, C abstained
    assert report.report[1].final_verdict == UNMET and report.report[1].error is None
    assert report.score == pytest.approx((10 + 3) / 18)

    def failing(request: ScoreRequest) -> LabelScores:
        return LabelScores((), error="boom")

    both = cascade(ScriptedEngine(model_id="small", policy=failing), ScriptedEngine(model_id="large", policy=failing))
    report = asyncio.run(both.grade("Answer number 0.", rubric()))
    assert all(r.escalated and r.error is not None for r in report.report)
    assert report.score is None and "both stages failed" in report.error


def test_an_escalated_multi_choice_criterion_is_shown_as_a_full_run_shows_it() -> None:
    """The second stage's option shuffle is seeded by the criterion's position in the full rubric,
    so the escalation judge sees the options in the order a full run of it would show them (before
    the fix it was seeded by the position in the sub-rubric of escalated criteria)."""
    from autorubric_local import CriterionOption

    scale = Criterion(name="M", weight=4.0, requirement="Rates the depth",
                      options=[CriterionOption(label=f"level {k}", value=k / 4) for k in range(5)])
    rubric_ = [*rubric("A"), scale]

    def small(request: ScoreRequest) -> list[float]:  # sure of A, unsure of the scale: only the scale escalates
        if "Mentions alpha" in request.prefix + request.suffix:
            return _logprobs(request, MET, 0.99)
        return [math.log(1 / len(request.labels))] * len(request.labels)

    def uniform(request: ScoreRequest) -> list[float]:
        return [math.log(1 / len(request.labels))] * len(request.labels)

    large = ScriptedEngine(model_id="large", policy=uniform)
    escalation = EscalationConfig([JudgeSpec(LLMConfig(model="large", engine=large), "large")], 0.5)
    live = CriterionGrader(llm_config=LLMConfig(model="small", engine=ScriptedEngine(model_id="small", policy=small)),
                           escalation=escalation, seed=3, shuffle_options=True)
    asyncio.run(live.grade("Answer number 0.", rubric_))
    full_engine = ScriptedEngine(model_id="large", policy=uniform)
    full = CriterionGrader(judges=[JudgeSpec(LLMConfig(model="large", engine=full_engine), "large")], seed=3,
                           shuffle_options=True)
    asyncio.run(full.grade("Answer number 0.", rubric_))
    assert len(large.history) == 1
    shown = [r.prefix + r.suffix for r in full_engine.history if "Rates the depth" in r.prefix + r.suffix]
    assert [r.prefix + r.suffix for r in large.history] == shown


def test_a_stored_cascade_records_its_escalation_judges_and_releases_them(tmp_path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """The run's judges record names both stages, and the local executor releases what it
    loaded of both (here through load_engine, a scripted engine per config)."""
    import json
    import sqlite3

    from autorubric_local.graders import criterion_grader

    grader = cascade(*engines())
    EvalRunner(dataset(), grader, EvalConfig(db_path=tmp_path / "r.sqlite", show_progress=False)).run_sync()
    with sqlite3.connect(tmp_path / "r.sqlite") as db:
        (judges,), = db.execute("select judges_json from runs").fetchall()
    assert [(j["judge_id"], j["model_id"], j.get("stage")) for j in json.loads(judges)] == [
        ("small", "small", None), ("large", "large", "escalation")]
    loaded: list[str] = []

    def load(config: LLMConfig) -> ScriptedEngine:
        loaded.append(config.model)
        return ScriptedEngine(model_id=config.model, policy=small_policy if config.model == "small" else large_policy)

    escalation = EscalationConfig([JudgeSpec(LLMConfig(model="large"), "large")], 0.5)
    fresh = CriterionGrader(llm_config=LLMConfig(model="small"), escalation=escalation, seed=1)
    monkeypatch.setattr(criterion_grader, "load_engine", load)
    EvalRunner(dataset(), fresh, EvalConfig(db_path=tmp_path / "f.sqlite", show_progress=False)).run_sync()
    assert sorted(loaded) == ["large", "small"] and fresh.loaded_judges() == frozenset()


def test_a_cascade_is_shipped_to_ray_workers_without_either_stages_engines() -> None:
    from autorubric_local.runner.distributed import shippable_grader

    escalation = EscalationConfig([JudgeSpec(LLMConfig(model="large"), "large")], 0.5)
    grader = CriterionGrader(llm_config=LLMConfig(model="small"), escalation=escalation, seed=1)
    grader.escalation_grader._engines["large"] = ScriptedEngine(model_id="large")  # type: ignore[union-attr]
    shipped = shippable_grader(grader)
    assert shipped.escalation_grader is not grader.escalation_grader
    assert shipped.escalation_grader._engines == {} and grader.escalation_grader._engines  # type: ignore[union-attr]
    assert shipped.describe() == grader.describe()
    with pytest.raises(InputError, match="cannot be shipped"):
        shippable_grader(cascade(*engines()))  # engines built in this process, both stages
