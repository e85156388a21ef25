"""A hosted judge is asked for the answer the request says it wants (issue 32): the answer's key,
values and schema travel on the request (``ScoreRequest.answer``, ``GenerateRequest.answer``),
set where the grader builds its requests, instead of being guessed from the prompt text. A
recording stand-in for the HTTP client answers; nothing goes over the network."""

from __future__ import annotations

from typing import Any

import pytest

from autorubric_local.bias.selection import SelectionTask, plan_selection_tasks
from autorubric_local.core.types import Criterion, CriterionJudgment, CriterionOption, CriterionVerdict, MultiChoiceJudgment
from autorubric_local.engine.base import GenerateRequest, ScoreRequest
from autorubric_local.engine.hosted.backend import HostedEngine
from autorubric_local.engine.hosted.chat import format_chat
from autorubric_local.engine.hosted_types import GenerateResult
from autorubric_local.engine.requests import AnswerSpec
from autorubric_local.graders.execution import JudgeMode, run_tasks
from autorubric_local.graders.planning import GradeItem, plan_tasks

BINARY_REASON = "The submission meets the criterion."
CHOICE_REASON = "The submission is best described by option 2."


class RecordingClient:
    """Answers each schema its own way (MET, or option 2) and records the schema of every call."""

    def __init__(self) -> None:
        self.schemas: list[str] = []
        self.config = type("Config", (), {"model": "recording"})()

    async def complete(self, messages: list[dict[str, str]], schema: Any, **_: Any) -> GenerateResult:
        self.schemas.append(schema.__name__)
        answer: CriterionJudgment | MultiChoiceJudgment
        if schema is CriterionJudgment:
            answer = CriterionJudgment(criterion_status=CriterionVerdict.MET, explanation=BINARY_REASON)
        else:
            answer = MultiChoiceJudgment(selected_option=2, explanation=CHOICE_REASON)
        return GenerateResult(content=answer.model_dump_json(), parsed=answer, cost=0.001)


@pytest.mark.parametrize("mode", [JudgeMode.SCORE, JudgeMode.EXPLAIN])
@pytest.mark.parametrize("reasoning_first", [False, True])
def test_a_binary_criterion_whose_requirement_lists_options_is_asked_for_a_verdict(
    mode: JudgeMode, reasoning_first: bool
) -> None:
    """Bug (b): the requirement text holds the multi-choice layout ``\\nOptions:\\n1. ``; the judge
    must still be asked with the binary schema, once per judgment."""
    criterion = Criterion(requirement="Answers the quiz below.\nOptions:\n1. Paris\n2. Rome", weight=1.0)
    assert not criterion.is_multi_choice
    tasks = plan_tasks([GradeItem("It is Paris.", (criterion,))], [("judge", format_chat)])
    client = RecordingClient()
    results = run_tasks(HostedEngine(client, top_logprobs=0), tasks, mode=mode,  # type: ignore[arg-type]
                        reasoning_first=reasoning_first, explanation_tokens=40)
    assert client.schemas == ["CriterionJudgment"]
    assert results[0].error is None and results[0].chosen == 0  # MET
    if mode is JudgeMode.EXPLAIN or reasoning_first:
        assert results[0].explanation == BINARY_REASON


@pytest.mark.parametrize("mode", [JudgeMode.SCORE, JudgeMode.EXPLAIN])
@pytest.mark.parametrize("reasoning_first", [False, True])
def test_a_selection_task_is_asked_for_an_option_once_and_explains_the_option_it_scored(
    mode: JudgeMode, reasoning_first: bool
) -> None:
    """Bug (a): a selection block has no ``<criterion>`` and no ``Options:`` list, so with reasoning
    first (a bias sweep with thinking on) the explanation was asked with the binary schema and the
    verdict with the multi-choice one: two calls, and an explanation of another answer."""
    item = SelectionTask("q", "Name the capital of France.", ("Paris.", "Rome.", "Lyon.")).to_grade_item()
    tasks = plan_selection_tasks([item], "judge", format_chat, shuffle_options=False)
    client = RecordingClient()
    results = run_tasks(HostedEngine(client, top_logprobs=0), tasks, mode=mode,  # type: ignore[arg-type]
                        reasoning_first=reasoning_first, explanation_tokens=40)
    assert client.schemas == ["MultiChoiceJudgment"] * len(tasks)
    assert all(r.error is None and r.chosen == 1 for r in results)  # option 2, shown position 1
    if mode is JudgeMode.EXPLAIN or reasoning_first:
        assert all(r.explanation == CHOICE_REASON for r in results)


def test_the_answer_travels_on_every_request_the_grader_builds() -> None:
    """Every request run_tasks sends names the wanted answer: key and values in shown order."""
    from autorubric_local.engine.scripted import ScriptedEngine

    choice = Criterion(requirement="Tone", weight=1.0,
                       options=[CriterionOption(label="calm", value=1.0), CriterionOption(label="rude", value=0.0)])
    binary = Criterion(requirement="Mentions Paris", weight=1.0)
    engine = ScriptedEngine(policy=lambda request: [-0.1] + [-3.0] * (len(request.labels) - 1))
    tasks = plan_tasks([GradeItem("Paris, calmly.", (binary, choice))], [("judge", engine.format_chat)])
    for reasoning_first in (False, True):
        engine.history.clear()
        run_tasks(engine, tasks, mode=JudgeMode.EXPLAIN, reasoning_first=reasoning_first, explanation_tokens=8)
        answers = [request.answer for request in engine.history]
        assert len(answers) == 4
        assert answers.count(AnswerSpec("criterion_status", ("MET", "UNMET", "CANNOT_ASSESS"))) == 2
        assert answers.count(AnswerSpec("selected_option", ("1", "2"))) == 2


def test_the_answer_does_not_change_request_equality() -> None:
    """``answer`` is not compared: requests built with and without it are equal (caches, history)."""
    spec = AnswerSpec("criterion_status", ("MET", "UNMET"))
    assert ScoreRequest("p", "s", ('MET"', 'UNMET"'), answer=spec) == ScoreRequest("p", "s", ('MET"', 'UNMET"'))
    assert GenerateRequest("p", "s", 8, answer=spec) == GenerateRequest("p", "s", 8)


def test_an_answer_whose_values_do_not_match_the_labels_is_refused() -> None:
    with pytest.raises(ValueError, match="does not give the labels"):
        ScoreRequest("p", "s", ('MET"', 'UNMET"', 'CANNOT_ASSESS"'), answer=AnswerSpec("criterion_status", ("MET", "UNMET")))
    with pytest.raises(ValueError, match="does not give the labels"):  # a binary answer for an options prompt
        ScoreRequest("p", "s", ("1,", "2,"), answer=AnswerSpec("criterion_status", ("MET", "UNMET")))
    ScoreRequest("p", "s", ("1}", "2}"), answer=AnswerSpec("selected_option", ("1", "2")))  # reasoning first
    with pytest.raises(ValueError, match="key"):
        AnswerSpec("verdict", ("MET", "UNMET"))  # type: ignore[arg-type]


def test_a_reasoning_request_is_asked_with_the_schema_its_structure_names() -> None:
    """Reasoning first, the prompt holds no verdict key yet: the schema comes from the request's
    ``judgment.answer`` (a multi-choice criterion: ``MultiChoiceJudgment``), never from the
    prompt's layout; a request without ``judgment`` is refused (tests/test_hosted_messages.py)."""
    from autorubric_local.engine.requests import Step

    choice = Criterion(requirement="Tone", weight=1.0,
                       options=[CriterionOption(label="calm", value=1.0), CriterionOption(label="rude", value=0.0)])
    [task] = plan_tasks([GradeItem("Calmly.", (choice,))], [("judge", format_chat)])
    answer = task.answer()
    request = GenerateRequest(task.prefix, task.reasoning_suffix(None), 40, answer=answer,
                              judgment=task.request(answer, Step("reason")))
    client = RecordingClient()
    engine = HostedEngine(client, top_logprobs=0)  # type: ignore[arg-type]
    [generation] = engine.generate([request])
    assert client.schemas == ["MultiChoiceJudgment"] and generation.text == CHOICE_REASON
