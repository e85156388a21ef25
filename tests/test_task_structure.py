"""Planned tasks and the requests run from them carry their structure (issue 32, steps S2 and
S3): a task holds its item's :class:`~autorubric_local.engine.requests.PromptParts` (text and
the :class:`~autorubric_local.engine.requests.ItemPrompt` it renders) and its criterion block as
spans; every request ``run_tasks`` sends holds the same structure as a
:class:`~autorubric_local.engine.requests.JudgeRequest` that renders to its text. Pure; scripted
engines only. That the text itself did not move is ``tests/test_request_golden.py``'s job."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import pytest

from autorubric_local.bias.selection import (
    RESPONSE_OPENERS,
    SelectionTask,
    plan_selection_tasks,
    selection_block,
    selection_spans,
)
from autorubric_local.core.errors import InputError
from autorubric_local.core.types import Criterion, CriterionOption
from autorubric_local.engine.base import GenerateRequest, LabelScores, ScoreRequest
from autorubric_local.engine.cached import CachedEngine
from autorubric_local.engine.requests import (
    AnswerSpec,
    ItemPrompt,
    JudgeRequest,
    OptionList,
    PromptParts,
    Span,
    Step,
    render_spans,
    split_at_turn_end,
    split_item,
)
from autorubric_local.engine.response_cache import ResponseCache
from autorubric_local.engine.scripted import ScriptedEngine
from autorubric_local.engine.user_text import mark
from autorubric_local.graders.content_free import CONTENT_FREE_ITEM, plan_content_free
from autorubric_local.graders.contextual import CONTENT_FREE_INPUTS
from autorubric_local.graders.execution import JudgeMode, run_tasks
from autorubric_local.graders.planning import GradeItem, JudgmentTask, OptionPermutations, plan_tasks
from autorubric_local.graders.prompts import (
    EXPLANATION_STEM,
    OPTION_NUMBERS,
    criterion_spans,
    criterion_text,
    render_item,
)

FORMAT = ScriptedEngine().format_chat
BINARY = Criterion(requirement="States the capacity in mAh.", weight=2.0)
NEGATIVE = Criterion(requirement="Contains factual errors.", weight=-1.0)
CHOICE = Criterion(
    requirement="How complete is the answer?",
    weight=3.0,
    options=[CriterionOption(label="Complete", value=1.0), CriterionOption(label="Partial", value=0.5),
             CriterionOption(label="Missing", value=0.0)],
)
RUBRIC = (BINARY, NEGATIVE, CHOICE)
ITEMS = [
    GradeItem("The battery holds 4000 mAh.", RUBRIC, query="What is the capacity?", item_id="a"),
    GradeItem("It lasts a day.", RUBRIC, query="What is the capacity?", reference_submission="4000 mAh", item_id="b"),
]


class RawRecorder(ScriptedEngine):
    """A scripted engine that also keeps the requests as sent (``history`` holds them as read,
    markers removed); every label gets the same score, so the first label is chosen."""

    def __init__(self) -> None:
        super().__init__(policy=lambda request: [-1.0] * len(request.labels), explanation="it does.")
        self.sent: list[ScoreRequest | GenerateRequest] = []

    def score(self, requests: Sequence[ScoreRequest]) -> list[LabelScores]:
        self.sent.extend(requests)
        return super().score(requests)

    def generate(self, requests: Sequence[GenerateRequest]) -> list:  # type: ignore[override]
        self.sent.extend(requests)
        return super().generate(requests)


def item_spans(item: ItemPrompt, *, untrusted: bool) -> list[str]:
    return [span.text for span in item.user_head if span.untrusted == untrusted]


# --- S2: the structure on the parts and the task -------------------------------------------


def test_split_item_keeps_the_item_it_rendered_and_parts_compare_by_text() -> None:
    item = ItemPrompt("Judge.", (Span("<submission>\n"), Span("An answer.", True), Span("\n</submission>\n\n")))
    parts = split_item(FORMAT, item)
    assert parts.item is item
    again = split_at_turn_end(FORMAT, "Judge.", render_spans(item.user_head))
    assert again.item == ItemPrompt("Judge.", (Span(render_spans(item.user_head)),))  # taken as rendered, one span
    assert again == parts and again.item != parts.item  # same text: equal, whatever the structure


def test_an_untrusted_span_that_cannot_be_marked_is_refused_when_built() -> None:
    with pytest.raises(InputError, match="U\\+FDD0"):
        Span("a \ufdd0 b", True)
    assert Span("a \ufdd0 b").text == "a \ufdd0 b"  # trusted text is ours: not checked here


@pytest.mark.parametrize("order", [None, (0, 1, 2), (2, 0, 1), (1, 2, 0)])
def test_criterion_spans_render_the_criterion_text_with_data_untrusted(order: tuple[int, ...] | None) -> None:
    spans = criterion_spans(CHOICE, order)
    shown = [CHOICE.options[k].label for k in (order or (0, 1, 2))]  # type: ignore[index]
    assert [s.text for s in spans if s.untrusted] == [CHOICE.requirement, *shown]
    assert render_spans(spans) == criterion_text(CHOICE, order)
    assert render_spans(spans).endswith(f"Options:\n1. {mark(shown[0])}\n2. {mark(shown[1])}\n3. {mark(shown[2])}\n</criterion>")
    assert [s.text for s in criterion_spans(NEGATIVE) if s.untrusted] == [NEGATIVE.requirement]
    assert "negative criterion" in criterion_text(NEGATIVE)


def test_option_numbers_come_from_one_module_table_and_an_order_costs_no_span() -> None:
    """The number spans are the module's own objects, whatever the order; labels are the
    criterion's one set of spans, shared by every order laid out from it."""
    many = Criterion(requirement="Pick.", options=[CriterionOption(label=f"o{k}", value=k / 40) for k in range(40)])
    spans = criterion_spans(many, tuple(reversed(range(40))))
    numbers = [s for s in spans if s.text.startswith("\n") and s.text.endswith(". ")]
    assert numbers[: len(OPTION_NUMBERS)] == list(OPTION_NUMBERS)
    assert all(a is b for a, b in zip(numbers, OPTION_NUMBERS, strict=False))
    assert [s.text for s in numbers[len(OPTION_NUMBERS):]] == [f"\n{n}. " for n in range(len(OPTION_NUMBERS) + 1, 41)]
    assert render_spans(spans).count(f"\n40. {mark('o0')}\n") == 1
    listed = OptionList((), (Span("x", True), Span("y", True)), (), OPTION_NUMBERS[:2])
    one, other = listed.spans((0, 1)), listed.spans((1, 0))
    assert one[1] is other[3] and one[3] is other[1]
    with pytest.raises(ValueError):
        listed.spans((0,))


def test_selection_spans_render_the_selection_block() -> None:
    task = SelectionTask("t", "Which?", ("first", "second", "third"), preferred=0).to_grade_item()
    criterion = task.rubric[0]
    spans = selection_spans(criterion, (2, 0, 1))
    assert render_spans(spans) == selection_block(criterion, (2, 0, 1))
    assert [s.text for s in spans if s.untrusted] == ["third", "first", "second"]
    assert spans[1] is RESPONSE_OPENERS[0]


def test_a_task_reads_its_prefix_turn_switch_and_block_from_its_structure() -> None:
    tasks = plan_tasks(ITEMS, [("judge", FORMAT)], seed=3, permutations=OptionPermutations.CYCLIC)
    for task in tasks:
        item = ITEMS[task.item_index]
        assert task.prefix == task.parts.prefix and task.turn_switch == task.parts.turn_switch
        assert item_spans(task.parts.item, untrusted=True) == [t for t in (item.query, item.reference_submission,
                                                                            item.submission) if t]
        assert task.criterion_block == render_spans(task.block) == criterion_text(task.criterion, task.option_order)
        assert task.suffix.startswith(task.criterion_block + task.turn_switch)
    other = render_item(FORMAT, "Another answer.", query=None, reference_submission=None)
    moved = dataclasses.replace(tasks[0], parts=other)
    assert moved.prefix == other.prefix and moved.parts.item is other.item  # one field: text and structure move together
    with pytest.raises(dataclasses.FrozenInstanceError):
        tasks[0].prefix = "x"  # type: ignore[misc]


def test_a_criterion_s_spans_are_built_once_per_plan() -> None:
    """Every task of a criterion (items, judges, option orders) shares its label spans."""
    tasks = plan_tasks(ITEMS, [("a", FORMAT), ("b", FORMAT)], permutations=OptionPermutations.CYCLIC)
    choice = [t for t in tasks if t.criterion.options is not None]
    assert len(choice) == 2 * 2 * 3
    labels = {id(span) for t in choice for span in t.block if span.untrusted and span.text != CHOICE.requirement}
    assert len(labels) == 3


def test_few_shot_examples_lead_the_block_as_one_rendered_span() -> None:
    rendered = f"<examples>\n{mark('An example.')}\n</examples>\n\n"
    tasks = plan_tasks(ITEMS[:1], [("judge", FORMAT)], examples=lambda criterion: rendered)
    for task in tasks:
        assert task.block[0] == Span(rendered)
        assert task.criterion_block == rendered + criterion_text(task.criterion, task.option_order)


def test_selection_tasks_carry_their_prompt_and_candidates() -> None:
    item = SelectionTask("t", "Which?", ("first", "second", "third"), preferred=0).to_grade_item()
    tasks = plan_selection_tasks([item], "judge", FORMAT)
    assert len(tasks) == 3
    for task in tasks:
        assert item_spans(task.parts.item, untrusted=True) == ["Which?"]
        assert task.criterion_block == selection_block(task.criterion, task.option_order or ())


def test_content_free_tasks_carry_the_content_free_item() -> None:
    """The content-free path swaps the parts: prefix and item hold the content-free input,
    never the real submission."""
    tasks = plan_tasks(ITEMS, [("judge", FORMAT)])
    plan = plan_content_free(tasks, ITEMS, ["judge"],
                             lambda j, text, query, reference: render_item(FORMAT, text, query=query,
                                                                          reference_submission=reference),
                             CONTENT_FREE_INPUTS)
    planned = plan.all_tasks()
    assert planned
    for task in planned:
        assert task.item_index == CONTENT_FREE_ITEM
        untrusted = item_spans(task.parts.item, untrusted=True)
        assert untrusted[-1] in CONTENT_FREE_INPUTS
        assert task.prefix == split_item(FORMAT, task.parts.item).prefix


def test_tasks_are_still_pure_values() -> None:
    """Equal plans give equal tasks (the rendered block cached on a task is no field)."""
    one = plan_tasks(ITEMS, [("judge", FORMAT)], seed=5)
    two = plan_tasks(ITEMS, [("judge", FORMAT)], seed=5)
    [t.criterion_block for t in one]
    assert one == two
    assert all(isinstance(t, JudgmentTask) and isinstance(t.parts, PromptParts) for t in one)


# --- S3: the structure on the requests -------------------------------------------------------


@pytest.mark.parametrize(("mode", "reasoning_first"), [(JudgeMode.SCORE, False), (JudgeMode.EXPLAIN, False),
                                                        (JudgeMode.EXPLAIN, True)])
@pytest.mark.parametrize("style", ["free", "sentence"])
def test_every_request_carries_a_judgment_that_renders_to_its_text(mode: JudgeMode, reasoning_first: bool,
                                                                   style: str) -> None:
    tasks = plan_tasks(ITEMS, [("judge", FORMAT)], seed=1)
    engine = RawRecorder()
    run_tasks(engine, tasks, mode=mode, reasoning_first=reasoning_first, explanation_tokens=8,
              explanation_style=style)  # type: ignore[arg-type]
    start = EXPLANATION_STEM if style == "sentence" else ""
    kinds = []
    for request in engine.sent:
        judgment = request.judgment
        assert judgment is not None and judgment.answer == request.answer
        kinds.append(judgment.step.kind)
        assert split_item(FORMAT, judgment.item).prefix == request.prefix
        assert request.suffix.startswith(render_spans(judgment.block))
        step = judgment.step
        if step.kind == "explain":
            assert step.start == start and request.suffix.endswith('"explanation": "' + start)
            assert step.chosen == judgment.answer.values[0]  # equal scores: the first shown value
        if step.kind == "reason":
            assert step.start == start and request.suffix.endswith('{"explanation": "' + start)
        if step.kind == "verdict_after_reason":
            assert step.explanation == start + "it does."
    expected = {(JudgeMode.SCORE, False): {"verdict"}, (JudgeMode.EXPLAIN, False): {"verdict", "explain"},
                (JudgeMode.EXPLAIN, True): {"reason", "verdict_after_reason"}}[(mode, reasoning_first)]
    assert set(kinds) == expected and len(kinds) == len(tasks) * len(expected)


@pytest.mark.parametrize("reasoning_first", [False, True])
def test_content_free_requests_never_carry_the_real_submission(reasoning_first: bool) -> None:
    """Run the content-free tasks as the grader does: each request's judgment holds a
    content-free input where the submission goes, and no span holds a real submission."""
    tasks = plan_tasks(ITEMS, [("judge", FORMAT)])
    plan = plan_content_free(tasks, ITEMS, ["judge"],
                             lambda j, text, query, reference: render_item(FORMAT, text, query=query,
                                                                          reference_submission=reference),
                             CONTENT_FREE_INPUTS)
    engine = RawRecorder()
    run_tasks(engine, plan.all_tasks(), mode=JudgeMode.EXPLAIN, reasoning_first=reasoning_first, explanation_tokens=8)
    assert engine.sent
    real = {item.submission for item in ITEMS}
    for request in engine.sent:
        assert request.judgment is not None
        head = request.judgment.item.user_head
        texts = [span.text for span in head]
        assert not any(submission in text for submission in real for text in texts)
        assert item_spans(request.judgment.item, untrusted=True)[-1] in CONTENT_FREE_INPUTS
        assert split_item(FORMAT, request.judgment.item).prefix == request.prefix


def test_a_request_s_judgment_must_ask_for_its_answer_and_fit_its_kind() -> None:
    item = ItemPrompt("S", (Span("x", True),))
    status = AnswerSpec("criterion_status", ("MET", "UNMET", "CANNOT_ASSESS"))
    option = AnswerSpec("selected_option", ("1", "2"))
    verdict = JudgeRequest(item, (), status, Step("verdict"))
    ScoreRequest("p", "s", status.labels(), answer=status, judgment=verdict)
    with pytest.raises(ValueError, match="judgment asks for"):
        ScoreRequest("p", "s", option.labels(), answer=option, judgment=verdict)
    with pytest.raises(ValueError, match="judgment asks for"):
        ScoreRequest("p", "s", status.labels(), judgment=verdict)  # no answer
    with pytest.raises(ValueError, match="generates"):
        ScoreRequest("p", "s", status.labels(), answer=status,
                     judgment=JudgeRequest(item, (), status, Step("reason")))
    explain = JudgeRequest(item, (), status, Step("explain", chosen="MET", start="The submission"))
    GenerateRequest("p", "s", answer=status, judgment=explain)
    with pytest.raises(ValueError, match="is scored"):
        GenerateRequest("p", "s", answer=status, judgment=verdict)
    with pytest.raises(ValueError, match="judgment asks for"):
        GenerateRequest("p", "s", answer=option, judgment=explain)
    with pytest.raises(ValueError, match="start"):
        Step("verdict", start="The submission")
    assert ScoreRequest("p", "s", status.labels(), answer=status, judgment=verdict) == ScoreRequest("p", "s", status.labels())


def test_the_cache_key_ignores_the_judgment(tmp_path: object) -> None:
    """Two requests of the same text share one cache entry, whatever structure they carry."""
    status = AnswerSpec("criterion_status", ("MET", "UNMET", "CANNOT_ASSESS"))
    engine = RawRecorder()
    cached = CachedEngine(engine, cache=ResponseCache(tmp_path, 3600))  # type: ignore[arg-type]
    item = ItemPrompt("S", (Span("x", True),))
    first = ScoreRequest("p", "s", status.labels(), answer=status,
                         judgment=JudgeRequest(item, (Span("a"),), status, Step("verdict")))
    second = dataclasses.replace(first, judgment=JudgeRequest(item, (Span("b"),), status, Step("verdict")))
    assert cached.score([first]) == cached.score([second])
    assert len(engine.sent) == 1  # the second was read from the cache
