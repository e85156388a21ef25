"""Single-call grading (graders/per_item.py): one teacher-forced prompt per item, score mode."""

from __future__ import annotations

import asyncio
import math
from pathlib import Path

import pytest

from autorubric_local.core.errors import InputError
from autorubric_local.core.rubric import Rubric
from autorubric_local.core.types import Criterion, CriterionOption
from autorubric_local.data.dataset import DataItem, RubricDataset
from autorubric_local.engine.base import LabelScores
from autorubric_local.engine.requests import render_spans
from autorubric_local.engine.scripted import ScriptedEngine
from autorubric_local.engine.user_text import plain
from autorubric_local.graders.criterion_grader import CriterionGrader, JudgeSpec
from autorubric_local.graders import per_item
from autorubric_local.graders.per_item import PerItemInput, rubric_spans, score_per_item
from autorubric_local.judges.config import LLMConfig
from autorubric_local.runner.runner import EvalRunner

CRITERIA = [
    Criterion(requirement="Names the capital", weight=10.0),
    Criterion(requirement="Invents a fact", weight=-5.0),
    Criterion(requirement="Tone", weight=3.0, options=[
        CriterionOption(label="rude", value=0.0), CriterionOption(label="neutral", value=0.5),
        CriterionOption(label="warm", value=1.0)]),
]

RUBRIC_TEXT = (
    "Grade the submission on each of these 3 criteria."
    "\n\nCriterion 1:\n<criterion>\nThis is a criterion: Names the capital\n</criterion>"
    "\n\nCriterion 2:\n<criterion>\nThis is a negative criterion (describes a mistake): Invents a fact\n</criterion>"
    "\n\nCriterion 3:\n<criterion>\nThis is a criterion: Tone\nOptions:\n1. rude\n2. neutral\n3. warm\n</criterion>"
    '\n\nAnswer with one JSON object {"verdicts": [...]} that lists one verdict per criterion, '
    'in the order above: {"criterion_status": "MET" | "UNMET" | "CANNOT_ASSESS"} for a '
    'criterion without options, {"selected_option": n} (the option number) for one with options.'
)


def test_rubric_prompt_is_the_hand_checked_text():
    assert plain(render_spans(rubric_spans(CRITERIA))) == RUBRIC_TEXT


def _policy(request):
    """Deterministic logprobs from the request text: a different argmax per item and round."""
    h = sum(map(ord, request.prefix + request.suffix))
    n = len(request.labels)
    return [math.log((1 + (h + 7 * j) % 5) / 20) for j in range(n)]


ITEMS = [PerItemInput("Paris is the capital of France."), PerItemInput("Lyon.", query="Capital of France?")]


def test_teacher_forcing_fills_earlier_argmax_labels():
    engine = ScriptedEngine(policy=_policy)
    scores, requests = score_per_item(engine, ITEMS, CRITERIA, speculate=1)
    assert [len(s) for s in scores] == [3, 3]
    for item_scores, item_requests in zip(scores, requests):
        chosen = [r.labels[max(range(len(s.logprobs)), key=s.logprobs.__getitem__)]
                  for r, s in zip(item_requests, item_scores)]
        assert len({r.prefix for r in item_requests}) == 1  # one item prompt, shared
        assert item_requests[0].suffix.endswith('{"verdicts": [{"criterion_status": "')
        assert item_requests[1].suffix.endswith(
            '{"verdicts": [{"criterion_status": "' + chosen[0] + '}, {"criterion_status": "')
        assert item_requests[2].suffix.endswith(
            '{"criterion_status": "' + chosen[0] + '}, {"criterion_status": "' + chosen[1]
            + '}, {"selected_option": ')
        assert item_requests[2].labels == ("1}", "2}", "3}")
    # batched: one engine call per round, both items in it, round by round
    assert [r.suffix for r in engine.history] == [requests[i][k].suffix for k in range(3) for i in range(2)]


@pytest.mark.parametrize("speculate", [4, 13, 100])
def test_speculating_on_later_rounds_keeps_exactly_the_round_by_round_answers(speculate):
    """One call settles several rounds (every label path of the next rounds sent with the round):
    the requests kept and their scores are those of one call per round, in fewer calls."""
    plain = ScriptedEngine(policy=_policy)
    expected = score_per_item(plain, ITEMS, CRITERIA, speculate=1)
    engine = ScriptedEngine(policy=_policy)
    calls = []
    engine_score = engine.score
    engine.score = lambda batch: calls.append(len(batch)) or engine_score(batch)  # type: ignore[method-assign]
    scores, requests = score_per_item(engine, ITEMS, CRITERIA, speculate=speculate)
    assert requests == expected[1]
    assert [[s.logprobs for s in item] for item in scores] == [[s.logprobs for s in item] for item in expected[0]]
    # 3 criteria (binary, binary, 3 options): budget 4 sends rounds 0-1 (1 + 3), then round 2: 2 calls;
    # 13 or more sends rounds 0-2 at once (1 + 3 + 9): 1 call; one call per round would be 3
    assert calls == ([2 * 4, 2 * 1] if speculate == 4 else [2 * 13])


def test_batched_equals_plain_one_prompt_scoring():
    engine = ScriptedEngine(policy=_policy)
    scores, requests = score_per_item(engine, ITEMS, CRITERIA)
    plain_engine = ScriptedEngine(policy=_policy)
    for item_scores, item_requests in zip(scores, requests):
        for s, r in zip(item_scores, item_requests):
            assert plain_engine.score([r])[0].logprobs == s.logprobs


def test_a_failed_round_fails_the_later_criteria_of_that_item_only():
    engine = ScriptedEngine(policy=_policy)
    engine.enqueue_scores("infrastructure: boom", [-1.0, -2.0, -3.0])
    scores, requests = score_per_item(engine, ITEMS, CRITERIA, speculate=1)
    assert scores[0][0].error == "infrastructure: boom"
    assert all(s.error and "earlier verdict failed" in s.error for s in scores[0][1:])
    assert requests[0][1:] == [None, None]
    assert all(s.error is None for s in scores[1])
    assert isinstance(scores[1][0], LabelScores) and scores[1][0].logprobs == (-1.0, -2.0, -3.0)


# ---------------------------------------------------------------- CriterionGrader(llm_calls="per_item")



LOW, HIGH = math.log(0.1), math.log(0.8)


def _per_item_grader(engine, **kwargs):
    return CriterionGrader(llm_config=LLMConfig(model="scripted", engine=engine), llm_calls="per_item", **kwargs)


def test_grade_per_item_gives_the_rounds_verdicts(monkeypatch):
    monkeypatch.setattr(per_item, "SPECULATED_REQUESTS", 1)  # one scripted answer per round, in order
    engine = ScriptedEngine()
    # one request per round (one item): MET on criterion 1, MET on the negative criterion 2, option 3 (warm)
    engine.enqueue_scores([HIGH, LOW, LOW], [HIGH, LOW, LOW], [LOW, LOW, HIGH])
    report = asyncio.run(_per_item_grader(engine).grade("Paris; founded by Romans in 1999.", CRITERIA,
                                                        query="Capital of France?"))
    assert [r.final_verdict.value for r in report.report[:2]] == ["MET", "MET"]
    assert report.report[2].final_multi_choice_verdict.selected_label == "warm"
    # raw = 10 - 5 + 1.0 * 3 = 8; normalised by the positive weights 10 + 3
    assert report.raw_score == pytest.approx(8.0)
    assert report.score == pytest.approx(8.0 / 13.0)
    # the grader sent exactly the per-item rounds: one prompt with the whole rubric, teacher-forced
    assert len(engine.history) == 3
    assert len({r.prefix for r in engine.history}) == 1 and RUBRIC_TEXT in plain(engine.history[0].prefix)
    assert engine.history[1].suffix.endswith('{"verdicts": [{"criterion_status": "MET"}, {"criterion_status": "')
    assert engine.history[2].suffix.endswith('{"criterion_status": "MET"}, {"selected_option": ')
    assert report.report[0].votes[0].label_probabilities["MET"] == pytest.approx(0.8)


def test_grade_inputs_per_item_matches_score_per_item_on_many_items():
    grader = _per_item_grader(ScriptedEngine(policy=_policy))
    graded = grader.grade_inputs([(item.submission, CRITERIA, item.query, None, f"i{n}")
                                  for n, item in enumerate(ITEMS)])
    scores, _ = score_per_item(ScriptedEngine(policy=_policy), ITEMS, CRITERIA)
    for entry, item_scores in zip(graded, scores):
        for criterion_report, s in zip(entry.report.report, item_scores):
            best = max(range(len(s.logprobs)), key=s.logprobs.__getitem__)
            if criterion_report.criterion.options is None:
                assert criterion_report.final_verdict.value == ("MET", "UNMET", "CANNOT_ASSESS")[best]
            else:
                assert criterion_report.final_multi_choice_verdict.selected_index == best
        assert len(entry.results) == 3 and all(r.error is None for r in entry.results)


def test_a_failed_round_is_an_error_verdict_for_the_rest_of_the_item():
    engine = ScriptedEngine(policy=_policy)
    engine.enqueue_scores("infrastructure: boom")
    report = asyncio.run(_per_item_grader(engine).grade("x", CRITERIA))
    assert [r.is_error for r in report.report] == [True, True, True]


@pytest.mark.parametrize(("kwargs", "named"), [
    ({"mode": "explain"}, "mode='explain'"),
    ({"llm_config": LLMConfig(model="scripted", engine=ScriptedEngine(), thinking="low")}, "thinking"),
    ({"llm_config": LLMConfig(model="openai/x", backend="hosted")}, "hosted judges"),
    ({"auto_na_option": True}, "auto_na_option"),
])
def test_per_item_refuses_what_it_is_not_built_for(kwargs, named):
    kwargs.setdefault("llm_config", LLMConfig(model="scripted", engine=ScriptedEngine()))
    with pytest.raises(InputError, match="score mode") as raised:
        CriterionGrader(llm_calls="per_item", **kwargs)
    assert named in str(raised.value)


def _dataset(n: int) -> RubricDataset:
    return RubricDataset(prompt="Capital of France?", rubric=Rubric(CRITERIA), items=[
        DataItem(submission=f"Answer {i}: {'Paris' if i % 2 else 'Lyon'}.", description="", id=f"s{i}")
        for i in range(n)])


def _votes(result) -> list[tuple[str, list[tuple[str | None, float | None]]]]:
    return [(r.item_id, [(c.final_verdict and c.final_verdict.value, c.final_multi_choice_verdict and
                          c.final_multi_choice_verdict.selected_index) for c in r.report.report])
            for r in sorted(result.item_results, key=lambda r: r.item_id)]


def test_a_stored_per_item_run_resumes_to_what_one_pass_in_memory_grades(tmp_path):
    from autorubric_local.runner import EvalConfig, EvalInterruptedError

    dataset = _dataset(5)
    config = EvalConfig(db_path=tmp_path / "r.sqlite", experiment_name="one-call", chunk_judgments=3,
                        show_progress=False)
    runner = EvalRunner(dataset, _per_item_grader(ScriptedEngine(policy=_policy)), config,
                        on_chunk=lambda chunk: runner.stop() if chunk.chunk_index == 1 else None)
    with pytest.raises(EvalInterruptedError):
        runner.run_sync()
    resumed = EvalRunner(dataset, _per_item_grader(ScriptedEngine(policy=_policy)), config).run_sync()
    assert resumed.resumed_items == 2  # chunk_judgments=3 < 3 criteria a item: one item a chunk
    whole = EvalRunner(dataset, _per_item_grader(ScriptedEngine(policy=_policy)),
                       EvalConfig(db_path=tmp_path / "w.sqlite", show_progress=False)).run_sync()
    assert _votes(resumed) == _votes(whole)
    in_memory = [asyncio.run(_per_item_grader(ScriptedEngine(policy=_policy)).grade(
        item.submission, CRITERIA, query=dataset.prompt)) for item in dataset.items]
    assert [[(c.final_verdict and c.final_verdict.value) for c in report.report] for report in in_memory] == [
        [v for v, _ in votes] for _, votes in _votes(whole)]
    assert [report.score for report in in_memory] == [r.report.score for r in sorted(
        whole.item_results, key=lambda r: r.item_id)]
    with pytest.raises(InputError, match="cannot be resumed"):  # the run's settings say per_item
        EvalRunner(dataset, CriterionGrader(llm_config=LLMConfig(model="scripted", engine=ScriptedEngine(
            policy=_policy))), config).run_sync()


def test_each_judge_of_a_panel_votes_its_own_rounds(monkeypatch):
    monkeypatch.setattr(per_item, "SPECULATED_REQUESTS", 1)  # one scripted answer per round, in order
    a, b = ScriptedEngine(model_id="a"), ScriptedEngine(model_id="b")
    a.enqueue_scores([HIGH, LOW, LOW], [LOW, HIGH, LOW])
    b.enqueue_scores([LOW, HIGH, LOW], [LOW, HIGH, LOW])
    grader = CriterionGrader(judges=[JudgeSpec(LLMConfig(model="a", engine=a), "a"),
                                     JudgeSpec(LLMConfig(model="b", engine=b), "b")], llm_calls="per_item")
    report = asyncio.run(grader.grade("x", CRITERIA[:2]))
    votes = [[(v.judge_id, v.verdict.value) for v in r.votes] for r in report.report]
    assert votes == [[("a", "MET"), ("b", "UNMET")], [("a", "UNMET"), ("b", "UNMET")]]
    assert report.report[1].final_verdict.value == "UNMET"  # both judges agree
    assert len(a.history) == len(b.history) == 2


def test_grade_llm_calls_per_item_stores_a_single_call_run(tmp_path, monkeypatch):
    import json

    import sqlite_utils
    from click.testing import CliRunner

    from autorubric_local.cli import main
    from autorubric_local.graders import criterion_grader

    engines: list[ScriptedEngine] = []
    monkeypatch.setattr(per_item, "SPECULATED_REQUESTS", 1)  # one request per item and round, counted below
    monkeypatch.setattr(criterion_grader, "load_engine",
                        lambda config: engines.append(ScriptedEngine(policy=_policy)) or engines[-1])
    examples = Path(__file__).resolve().parent.parent / "examples"
    done = CliRunner().invoke(main, ["grade", str(examples / "battery_rubric.yaml"),
                                     str(examples / "battery_submissions.jsonl"), "--llm-calls", "per_item",
                                     "--limit", "2", "--db", str(tmp_path / "r.sqlite"), "--json", "--no-progress"])
    assert done.exit_code == 0, done.output
    rubric = Rubric.from_file(str(examples / "battery_rubric.yaml"))
    history = engines[0].history
    assert len(history) == 2 * len(rubric.rubric)  # one request per item and round
    assert all(f"on each of these {len(rubric.rubric)} criteria" in r.prefix for r in history)
    (run,) = sqlite_utils.Database(tmp_path / "r.sqlite")["runs"].rows
    assert json.loads(run["grader_json"])["llm_calls"] == "per_item"
    assert [len(item["criteria"]) for item in json.loads(done.stdout)] == [len(rubric.rubric)] * 2
