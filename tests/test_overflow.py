"""``LLMConfig.on_overflow``: an over-long submission is a recorded error by default, or is cut
in the middle (head and tail kept around a marker) to fit the judge's context, with the cut
recorded on the report. Real tokenization: the tiny transformers judge with a short context."""

from __future__ import annotations

from typing import Any

import pytest

from autorubric_local.core.types import Criterion, CriterionOption
from autorubric_local.engine import ScriptedEngine, from_transformers
from autorubric_local.engine.user_text import plain
from autorubric_local.graders import CriterionGrader
from autorubric_local.graders.overflow import TRUNCATION_MARK
from autorubric_local.graders.planning import GradeItem
from autorubric_local.judges.config import LLMConfig

CONTEXT = 1600  # the prompt without a submission takes ~1,290 tokens of the tiny tokenizer; LONG needs ~2,400
RUBRIC = (
    Criterion(name="density", weight=10.0, requirement="States the energy density"),
    Criterion(name="depth", weight=4.0, requirement="How deep is it?", scale_type="ordinal",
              options=[CriterionOption(label="Vague", value=0.0), CriterionOption(label="Expert", value=1.0)]),
)
HEAD, TAIL = "HEADWORD begins the answer. ", " The answer ends with TAILWORD"
LONG = HEAD + "NMC cells reach 250 Wh/kg and LFP cells 160 Wh/kg. " * 30 + TAIL


@pytest.fixture(scope="module")
def short_engine(tiny_model: Any) -> Any:
    return from_transformers(tiny_model.model, tiny_model.tokenizer, model_id="tiny-short",
                             context_length=CONTEXT, max_packed_tokens=256)


def grade(engine: Any, on_overflow: str, mode: str = "score", submission: str = LONG) -> Any:
    """``mode``: ``score``, ``explain`` (reasoning first, the default) or ``explain-vf`` (verdict first)."""
    grader = CriterionGrader(LLMConfig(model="tiny", engine=engine, on_overflow=on_overflow), seed=0,
                             mode="score" if mode == "score" else "explain", explanation_first=mode != "explain-vf")
    return grader.grade_batch([GradeItem(submission=submission, rubric=RUBRIC, query="Compare NMC and LFP.")])[0]


def test_overflow_is_a_recorded_error_by_default(short_engine: Any) -> None:
    graded = grade(short_engine, "error")
    assert graded.report.score is None and f"exceeds the judge's context length of {CONTEXT}" in graded.report.error
    assert all(r.error is not None for r in graded.results)
    assert graded.report.input_truncated_tokens is None and graded.report.judged_submission is None


@pytest.mark.parametrize("mode", ["score", "explain-vf"])
def test_truncate_keeps_head_and_tail_and_records_the_cut(short_engine: Any, mode: str) -> None:
    graded = grade(short_engine, "truncate", mode)
    report = graded.report
    assert report.error is None and report.score is not None
    assert all(r.error is None for r in graded.results)
    judged = report.judged_submission
    assert judged is not None and judged.startswith("HEADWORD") and judged.endswith("TAILWORD")
    assert TRUNCATION_MARK.format(n=report.input_truncated_tokens) in judged
    original = len(short_engine.tokens(LONG))
    assert 0 < report.input_truncated_tokens < original
    for result in graded.results:  # every prompt now fits, with room for the answer
        task = result.task
        assert len(short_engine.tokens(task.prefix)) + len(short_engine.tokens(task.suffix)) <= CONTEXT
        assert judged in plain(result.task.prefix) and LONG not in plain(result.task.prefix)
    assert graded.item.submission == LONG  # the item itself is not changed


def test_a_submission_that_fits_is_not_touched(short_engine: Any) -> None:
    graded = grade(short_engine, "truncate", submission="NMC reaches 250 Wh/kg.")
    assert graded.report.input_truncated_tokens is None and graded.report.judged_submission is None
    assert graded.report.error is None


def test_engines_without_a_tokenizer_cannot_truncate() -> None:
    overflow = "infrastructure: prompt of 9999 tokens exceeds the judge's context length of 100 tokens"
    engine = ScriptedEngine(policy=lambda request: overflow if len(request.prefix) > 1000 else [-1.0] * len(request.labels))
    graded = grade(engine, "truncate")
    assert graded.report.input_truncated_tokens is None and graded.report.judged_submission is None
    assert graded.report.score is None and overflow in graded.report.error
    assert all(r.error == overflow for r in graded.results)


def test_in_a_mixed_panel_only_truncating_judges_read_the_cut_text(short_engine: Any, tiny_model: Any) -> None:
    from autorubric_local.graders import JudgeSpec

    roomy = from_transformers(tiny_model.model, tiny_model.tokenizer, model_id="tiny-roomy",
                              context_length=4096, max_packed_tokens=256)
    grader = CriterionGrader(judges=[
        JudgeSpec(LLMConfig(model="short", engine=short_engine, on_overflow="truncate"), "short"),
        JudgeSpec(LLMConfig(model="roomy", engine=roomy), "roomy"),
    ], seed=0)
    graded = grader.grade_batch([GradeItem(submission=LONG, rubric=RUBRIC, query="Compare NMC and LFP.")])[0]
    judged = graded.report.judged_submission
    assert judged is not None and graded.report.input_truncated_tokens
    for result in graded.results:
        prompt = plain(result.task.prefix)
        assert result.error is None
        if result.task.judge_index == 0:
            assert judged in prompt and LONG not in prompt
        else:
            assert LONG in prompt  # the judge with room reads the whole submission
    assert {r.task.judge_index for r in graded.results} == {0, 1}


def test_reasoning_first_truncation_leaves_room_for_twice_the_explanation_budget(short_engine: Any) -> None:
    """Reasoning first, the verdict is read after the explanation's text tokenized again: the cut
    is sized on the prompt with the verdict's JSON scaffold plus twice the explanation budget.
    (The random tiny judge's explanations can still outgrow it, 96 generated tokens becoming
    up to ~260 when re-tokenized; such a judgment is recorded as an overflow error.)"""
    graded = grade(short_engine, "truncate", "explain")
    report = graded.report
    assert report.input_truncated_tokens is not None and report.judged_submission is not None
    budget = LLMConfig(model="tiny").explanation_budget
    for result in graded.results:
        task = result.task
        assert len(short_engine.prompt_tokens(task.prefix, task.reasoning_suffix(""))) + 2 * budget + 32 <= CONTEXT
        assert result.error is None or result.error.startswith("infrastructure: prompt of")
    assert any(r.error is None for r in graded.results)
