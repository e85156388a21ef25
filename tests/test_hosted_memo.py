"""A hosted judge is called once per judgment, whatever the judging mode and the chunk size
(issue 32): explain mode (the verdict, then its explanation) and reasoning first (the reasoning,
then the verdict after it) take both from one structured answer, and its usage and price are
counted once. The judgments go through ``run_tasks`` as the grader sends them; a counting
stand-in for the HTTP client answers, nothing goes over the network."""

from __future__ import annotations

from typing import Any

import pytest

from autorubric_local.core.reports import TokenUsage
from autorubric_local.core.types import Criterion, CriterionJudgment, CriterionOption, CriterionVerdict, MultiChoiceJudgment
from autorubric_local.engine.hosted.backend import HostedEngine
from autorubric_local.engine.hosted.chat import format_chat
from autorubric_local.engine.hosted_types import GenerateResult
from autorubric_local.graders.execution import JudgeMode, run_tasks
from autorubric_local.graders.planning import GradeItem, JudgmentTask, plan_tasks

USAGE = TokenUsage(prompt_tokens=30, completion_tokens=7, total_tokens=37)
PRICE = 0.001


class CountingClient:
    """Answers MET (or option 2) with an explanation naming the submission; counts the calls.
    An explanation of an even-numbered submission starts with the sentence stem."""

    def __init__(self) -> None:
        self.calls = 0
        self.config = type("Config", (), {"model": "counting"})()

    async def complete(self, messages: list[dict[str, str]], schema: Any, **_: Any) -> GenerateResult:
        self.calls += 1
        reason = explanation_of(messages[-1]["content"])
        answer: CriterionJudgment | MultiChoiceJudgment
        if schema is CriterionJudgment:
            answer = CriterionJudgment(criterion_status=CriterionVerdict.MET, explanation=reason)
        else:
            answer = MultiChoiceJudgment(selected_option=2, explanation=reason)
        return GenerateResult(content=answer.model_dump_json(), parsed=answer, usage=USAGE, cost=PRICE)


def explanation_of(user: str) -> str:
    number = int(user.split("submission ", 1)[1].split("\n", 1)[0])
    return f"The submission {number} is named." if number % 2 == 0 else f"about submission {number}"


def tasks_of(n: int, criterion: Criterion | None = None) -> list[JudgmentTask]:
    """``n`` judgments of distinct submissions against one criterion."""
    rubric = (criterion or Criterion(requirement="Names the submission.", weight=1.0),)
    return plan_tasks([GradeItem(f"submission {i}", rubric) for i in range(n)], [("judge", format_chat)])


def kept(reason: str, style: str) -> str:
    """The explanation stored for ``reason`` (the rule of the hosted path): with the sentence
    stem, what the judge wrote after it, or the whole text after ``": "``."""
    if style == "free":
        return reason
    stem = "The submission"
    return reason if reason.startswith(stem) else stem + ": " + reason


SETTINGS = [
    pytest.param({"mode": JudgeMode.EXPLAIN, "reasoning_first": False, "explanation_style": "free"}, id="explain-free"),
    pytest.param({"mode": JudgeMode.EXPLAIN, "reasoning_first": False, "explanation_style": "sentence"},
                 id="explain-sentence"),
    pytest.param({"mode": JudgeMode.SCORE, "reasoning_first": True, "explanation_style": "free"}, id="reasoning-free"),
    pytest.param({"mode": JudgeMode.EXPLAIN, "reasoning_first": True, "explanation_style": "sentence"},
                 id="reasoning-sentence"),
]


@pytest.mark.parametrize("settings", SETTINGS)
def test_one_call_per_judgment_beyond_the_old_memo_size(settings: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> None:
    """5,000 judgments in one chunk (more than the 4,096 answers the engine once kept): 5,000
    calls, each judgment's usage and price counted once, its explanation that of the answer,
    and no generate call (the explanation comes with the verdict: ``whole_judgment``)."""
    def no_generate(*_: Any) -> Any:
        raise AssertionError("a whole-judgment engine is never asked to generate")

    monkeypatch.setattr(HostedEngine, "generate", no_generate)
    client = CountingClient()
    tasks = tasks_of(5000)
    results = run_tasks(HostedEngine(client, top_logprobs=0), tasks, explanation_tokens=40,  # type: ignore[arg-type]
                        **settings)
    assert client.calls == 5000
    assert all(r.error is None and r.explanation_error is None and r.chosen == 0 for r in results)  # MET
    assert all(r.cost_usd == PRICE and r.usage == USAGE for r in results)
    assert all(not r.explanation_truncated for r in results)
    style = settings["explanation_style"]
    assert [r.explanation for r in results] == [kept(explanation_of(f"submission {i}"), style) for i in range(5000)]
    if settings["reasoning_first"]:  # the suffix recorded is the one with the reasoning, as scored
        assert [r.prompt_suffix for r in results] == [t.reasoning_suffix(r.explanation) for t, r in
                                                      zip(tasks, results, strict=True)]
    else:
        assert all(r.prompt_suffix is None for r in results)


@pytest.mark.parametrize("settings", SETTINGS)
def test_a_multi_choice_judgment_is_one_call_too(settings: dict[str, Any]) -> None:
    choice = Criterion(requirement="Tone", weight=1.0, options=[CriterionOption(label="calm", value=1.0),
                                                                  CriterionOption(label="rude", value=0.0)])
    client = CountingClient()
    tasks = tasks_of(6, choice)
    results = run_tasks(HostedEngine(client, top_logprobs=0), tasks, explanation_tokens=40,  # type: ignore[arg-type]
                        **settings)
    assert client.calls == 6
    assert [r.chosen for r in results] == [1] * 6  # option number 2: the second shown
    assert all(r.cost_usd == PRICE and r.usage == USAGE for r in results)
    assert [r.explanation for r in results] == [kept(explanation_of(f"submission {i}"), settings["explanation_style"])
                                                for i in range(6)]


def test_score_mode_asks_for_no_explanation_and_one_call() -> None:
    client = CountingClient()
    results = run_tasks(HostedEngine(client, top_logprobs=0), tasks_of(3), mode=JudgeMode.SCORE,  # type: ignore[arg-type]
                        reasoning_first=False, explanation_tokens=40)
    assert client.calls == 3 and [r.explanation for r in results] == [None] * 3


def test_the_hosted_engine_answers_whole_judgments() -> None:
    assert HostedEngine.capabilities.whole_judgment and HostedEngine.capabilities.hosted


def test_a_whole_judgment_engine_without_an_explanation_breaks_its_contract() -> None:
    """An engine that declares ``whole_judgment`` must give the explanation with each verdict;
    a verdict without one is an engine bug, never stored as a judgment without explanation."""
    from autorubric_local.engine.base import EngineContractError
    from autorubric_local.engine.capabilities import EngineCapabilities
    from autorubric_local.engine.scripted import ScriptedEngine

    engine = ScriptedEngine(policy=lambda request: [0.0] + [-5.0] * (len(request.labels) - 1),
                            capabilities=EngineCapabilities(whole_judgment=True))
    tasks = plan_tasks([GradeItem("x", (Criterion(requirement="R", weight=1.0),))], [("judge", engine.format_chat)])
    assert run_tasks(engine, tasks, mode=JudgeMode.SCORE, reasoning_first=False, explanation_tokens=8)[0].chosen == 0
    with pytest.raises(EngineContractError, match="whole_judgment"):
        run_tasks(engine, tasks, mode=JudgeMode.EXPLAIN, reasoning_first=False, explanation_tokens=8)
    with pytest.raises(EngineContractError, match="whole_judgment"):
        run_tasks(engine, tasks, mode=JudgeMode.SCORE, reasoning_first=True, explanation_tokens=8)


def test_a_direct_generate_call_is_one_call_that_explains_its_own_answer() -> None:
    """``HostedEngine.generate`` (direct callers; the grader never uses it on a hosted judge):
    one call per request, priced, the explanation after the step's start."""
    from autorubric_local.engine.base import GenerateRequest
    from autorubric_local.engine.requests import Step

    client = CountingClient()
    engine = HostedEngine(client, top_logprobs=0)  # type: ignore[arg-type]
    requests = [GenerateRequest(t.prefix, t.reasoning_suffix(None, "sentence"), 40, answer=t.answer(),
                                judgment=t.request(t.answer(), Step("reason", start="The submission")))
                for t in tasks_of(2)]
    generations = engine.generate(requests)
    assert client.calls == 2
    assert [g.text for g in generations] == [" 0 is named.", ": about submission 1"]
    assert all(g.cost_usd == PRICE and g.usage == USAGE and g.error is None for g in generations)
