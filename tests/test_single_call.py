"""Single-call grading (graders/per_item.py): one teacher-forced prompt per item, score mode."""

from __future__ import annotations

import math

from autorubric_local.core.types import Criterion, CriterionOption
from autorubric_local.engine.base import LabelScores
from autorubric_local.engine.requests import render_spans
from autorubric_local.engine.scripted import ScriptedEngine
from autorubric_local.engine.user_text import plain
from autorubric_local.graders.per_item import PerItemInput, rubric_spans, score_per_item

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
    scores, requests = score_per_item(engine, ITEMS, CRITERIA)
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
    scores, requests = score_per_item(engine, ITEMS, CRITERIA)
    assert scores[0][0].error == "infrastructure: boom"
    assert all(s.error and "earlier verdict failed" in s.error for s in scores[0][1:])
    assert requests[0][1:] == [None, None]
    assert all(s.error is None for s in scores[1])
    assert isinstance(scores[1][0], LabelScores) and scores[1][0].logprobs == (-1.0, -2.0, -3.0)
