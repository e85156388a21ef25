"""Raw label log-probabilities and off-label mass, from the engine to the votes (issue 13).

The engine's ``LabelScores.logprobs`` are raw (their probabilities may sum to < 1) and
``off_label_mass`` is the first-step probability outside the labels. Grading keeps both:
``JudgmentResult`` in shown order, votes keyed like ``label_probabilities`` (original option
label), a multi-order vote holding the log of the mean raw probability. A ScriptedEngine
scripts them; no model is loaded."""

from __future__ import annotations

import math
import re

import pytest
from pydantic import ValidationError

from autorubric_local.core.reports import JudgeVote, MultiChoiceJudgeVote, TokenUsage
from autorubric_local.core.types import Criterion, CriterionOption
from autorubric_local.engine import LabelScores, ScoreRequest, ScriptedEngine
from autorubric_local.graders import GradedItem
from fake_judge import fake_grader

BINARY = Criterion(name="density", weight=10.0, requirement="States the energy density")
DEPTH = Criterion(
    name="depth",
    weight=6.0,
    requirement="How deep is the comparison?",
    options=[
        CriterionOption(label="Vague", value=0.0),
        CriterionOption(label="Basic", value=0.33),
        CriterionOption(label="Solid", value=0.67),
        CriterionOption(label="Expert", value=1.0),
    ],
)
YES_NO = Criterion(
    name="cites",
    weight=2.0,
    requirement="Does it cite a source?",
    options=[CriterionOption(label="No", value=0.0), CriterionOption(label="Yes", value=1.0)],
)


def shown_options(suffix: str) -> list[str]:
    """Option labels in the order the judge saw them (the '1. label' lines)."""
    block = suffix.split("</criterion>")[0]
    return [m.group(1) for m in re.finditer(r"^\d+\. (.*)$", block, flags=re.MULTILINE)]


def grade(engine: ScriptedEngine, rubric: list[Criterion], **kwargs: object) -> GradedItem:
    kwargs.setdefault("seed", 0)
    grader = fake_grader(engine, **kwargs)
    (graded,) = grader.grade_inputs([("An answer.", rubric, None, None, "item-0")])
    return graded


# ------------------------------------------------------------------------------ the engine


def test_scripted_engine_returns_a_scripted_label_scores_with_usage_filled_in() -> None:
    engine = ScriptedEngine()
    own = TokenUsage.of(prompt_tokens=7)
    engine.enqueue_scores(LabelScores((-1.0, -2.0), off_label_mass=0.25), [-0.5, -0.5],
                          LabelScores((-1.0, -1.0), usage=own))
    first, second, third = engine.score([ScoreRequest("a b", " c", ("X", "Y"))] * 3)
    assert first.logprobs == (-1.0, -2.0) and first.off_label_mass == 0.25
    assert first.usage.prompt_tokens == 3  # 'a b c', as for a plain answer
    assert second.logprobs == (-0.5, -0.5) and second.off_label_mass is None  # the default
    assert third.usage == own


def test_scripted_engine_refuses_a_label_scores_of_the_wrong_length() -> None:
    engine = ScriptedEngine(policy=lambda r: LabelScores((-1.0,)))
    with pytest.raises(ValueError, match="1 logprobs for 2 labels"):
        engine.score([ScoreRequest("a", "b", ("X", "Y"))])


# ------------------------------------------------------------------------------ binary


def test_binary_vote_keeps_raw_logprobs_and_off_label_mass() -> None:
    # Raw probabilities 0.5, 0.2, 0.1 sum to 0.8: the judge put 0.2 elsewhere.
    raw = (math.log(0.5), math.log(0.2), math.log(0.1))
    engine = ScriptedEngine()
    engine.enqueue_scores(LabelScores(raw, off_label_mass=0.2))
    graded = grade(engine, [BINARY])
    (result,) = graded.results
    assert result.logprobs == raw and result.off_label_mass == 0.2
    vote = graded.report.report[0].votes[0]
    assert vote.label_logprobs == {"MET": math.log(0.5), "UNMET": math.log(0.2), "CANNOT_ASSESS": math.log(0.1)}
    assert vote.off_label_mass == 0.2
    # The distribution is still the renormalised one: 0.5/0.8, 0.2/0.8, 0.1/0.8.
    assert vote.label_probabilities == pytest.approx({"MET": 0.625, "UNMET": 0.25, "CANNOT_ASSESS": 0.125})


def test_unknown_off_label_mass_stays_none_and_raw_logprobs_are_kept() -> None:
    engine = ScriptedEngine()
    engine.enqueue_scores([-1.0, -2.0, -3.0])
    vote = grade(engine, [BINARY]).report.report[0].votes[0]
    assert vote.off_label_mass is None
    assert vote.label_logprobs == {"MET": -1.0, "UNMET": -2.0, "CANNOT_ASSESS": -3.0}


def test_explain_mode_keeps_the_scored_logprobs() -> None:
    engine = ScriptedEngine(explanation="Because.")
    engine.enqueue_scores(LabelScores((-0.5, -1.5, -4.0), off_label_mass=0.1))
    graded = grade(engine, [BINARY], mode="explain")
    vote = graded.report.report[0].votes[0]
    assert vote.reason == "The submissionBecause."  # the scripted text follows the default stem as is
    assert vote.label_logprobs == {"MET": -0.5, "UNMET": -1.5, "CANNOT_ASSESS": -4.0}
    assert vote.off_label_mass == 0.1


def test_reasoning_first_keeps_the_logprobs_read_after_the_reasoning() -> None:
    engine = ScriptedEngine(explanation="Thinking.")
    engine.enqueue_scores(LabelScores((-2.0, -0.25, -3.0), off_label_mass=0.4))
    graded = grade(engine, [BINARY], mode="explain", explanation_first=True)
    vote = graded.report.report[0].votes[0]
    assert vote.verdict.value == "UNMET"
    assert vote.label_logprobs == {"MET": -2.0, "UNMET": -0.25, "CANNOT_ASSESS": -3.0}
    assert vote.off_label_mass == 0.4


@pytest.mark.parametrize(
    ("scores", "message"),
    [
        (LabelScores((0.5, -1.0, -2.0)), "not all finite and <= 0: [0.5, -1.0, -2.0]"),
        (LabelScores((-math.inf, -1.0, -2.0)), "not all finite and <= 0"),
        (LabelScores((math.nan, -1.0, -2.0)), "not all finite and <= 0"),
        (LabelScores((-1.0, -1.0, -2.0), off_label_mass=1.5), "off-label mass outside [0, 1]: 1.5"),
        (LabelScores((-1.0, -1.0, -2.0), off_label_mass=-0.1), "off-label mass outside [0, 1]: -0.1"),
        (LabelScores((-1.0, -1.0, -2.0), off_label_mass=math.nan), "off-label mass outside [0, 1]: nan"),
    ],
)
def test_engine_output_that_is_no_log_probability_is_an_error_judgment(scores: LabelScores, message: str) -> None:
    engine = ScriptedEngine()
    engine.enqueue_scores(scores)
    graded = grade(engine, [BINARY])
    (result,) = graded.results
    assert result.chosen is None and result.logprobs == () and result.off_label_mass is None
    assert result.error is not None and result.error.startswith("unknown: engine returned")
    assert message in result.error
    vote = graded.report.report[0].votes[0]
    assert vote.is_error and vote.label_logprobs is None and vote.off_label_mass is None


# ------------------------------------------------------------------------------ multi-choice


RAW = {"Vague": 0.05, "Basic": 0.1, "Solid": 0.15, "Expert": 0.2}  # sums to 0.5


def test_multi_choice_logprobs_are_keyed_by_original_option_through_the_shuffle() -> None:
    engine = ScriptedEngine(
        policy=lambda r: LabelScores(tuple(math.log(RAW[o]) for o in shown_options(r.suffix)), off_label_mass=0.5)
    )
    rubric = [DEPTH.model_copy(update={"name": f"d{i}"}) for i in range(6)]
    graded = grade(engine, rubric, seed=11)
    orders = set()
    for report in graded.report.report:
        vote = report.multi_choice_votes[0]
        orders.add(tuple(vote.shuffle_order))
        assert vote.label_logprobs == {label: math.log(p) for label, p in RAW.items()}
        assert list(vote.label_logprobs) == list(vote.label_probabilities) == ["Vague", "Basic", "Solid", "Expert"]
        assert vote.label_probabilities == pytest.approx({"Vague": 0.1, "Basic": 0.2, "Solid": 0.3, "Expert": 0.4})
        assert vote.off_label_mass == 0.5
    assert len(orders) > 1  # the options really were shown in different orders
    for result in graded.results:  # the result itself stays in shown order
        shown = [DEPTH.options[i].label for i in result.task.option_order]
        assert result.logprobs == tuple(math.log(RAW[label]) for label in shown)


def cyclic_policy(request: ScoreRequest) -> LabelScores:
    """Two options: shown [No, Yes] -> raw 0.5, 0.3, off-label 0.2; shown [Yes, No] -> raw 0.6,
    0.1, off-label 0.3."""
    if shown_options(request.suffix) == ["No", "Yes"]:
        return LabelScores((math.log(0.5), math.log(0.3)), off_label_mass=0.2)
    return LabelScores((math.log(0.6), math.log(0.1)), off_label_mass=0.3)


def test_cyclic_vote_holds_the_log_of_the_mean_raw_probability_and_the_mean_mass() -> None:
    engine = ScriptedEngine(policy=cyclic_policy)
    graded = grade(engine, [YES_NO], permutations="cyclic", shuffle_options=False)
    assert [r.task.option_order for r in graded.results] == [(0, 1), (1, 0)]
    vote = graded.report.report[0].multi_choice_votes[0]
    # No: (0.5 + 0.1) / 2 = 0.3; Yes: (0.3 + 0.6) / 2 = 0.45.
    assert vote.label_logprobs == pytest.approx({"No": math.log(0.3), "Yes": math.log(0.45)}, abs=1e-12)
    assert vote.off_label_mass == pytest.approx(0.25, abs=1e-12)
    # Probabilities: mean of (0.625, 0.375) and (1/7, 6/7), by original option.
    assert vote.label_probabilities == pytest.approx({"No": (0.625 + 1 / 7) / 2, "Yes": (0.375 + 6 / 7) / 2})
    assert vote.selected_label == "Yes"


def test_cyclic_vote_mass_is_the_mean_of_the_orders_that_report_it() -> None:
    engine = ScriptedEngine()
    engine.enqueue_scores(
        LabelScores((math.log(0.5), math.log(0.3)), off_label_mass=0.2),
        [math.log(0.6), math.log(0.1)],  # this order does not report a mass
    )
    vote = grade(engine, [YES_NO], permutations="cyclic", shuffle_options=False).report.report[0].multi_choice_votes[0]
    assert vote.off_label_mass == 0.2
    assert vote.label_logprobs == pytest.approx({"No": math.log(0.3), "Yes": math.log(0.45)}, abs=1e-12)


def test_cyclic_vote_skips_a_failed_order() -> None:
    engine = ScriptedEngine()
    engine.enqueue_scores("infrastructure: out of memory", LabelScores((math.log(0.6), math.log(0.1)), off_label_mass=0.3))
    vote = grade(engine, [YES_NO], permutations="cyclic", shuffle_options=False).report.report[0].multi_choice_votes[0]
    # Only rotation 1 (shown [Yes, No]) answered.
    assert vote.label_logprobs == pytest.approx({"No": math.log(0.1), "Yes": math.log(0.6)}, abs=1e-12)
    assert vote.off_label_mass == 0.3


# ------------------------------------------------------------------------------ vote checks


def test_votes_round_trip_through_json() -> None:
    vote = JudgeVote(judge_id="j", verdict="MET", reason="", label_probabilities={"MET": 0.8, "UNMET": 0.2},
                     label_logprobs={"MET": -0.5, "UNMET": -1.875}, off_label_mass=0.125)
    assert JudgeVote.model_validate_json(vote.model_dump_json()) == vote
    old = JudgeVote.model_validate_json('{"judge_id": "j", "verdict": "MET", "reason": ""}')  # stored before
    assert old.label_logprobs is None and old.off_label_mass is None


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"label_logprobs": {"MET": 0.25, "UNMET": -1.0}}, r"label_logprobs\['MET'\] must be a finite log-probability <= 0, got 0.25"),
        ({"label_logprobs": {"MET": -math.inf, "UNMET": -1.0}}, "must be a finite log-probability <= 0, got -inf"),
        ({"label_logprobs": {"MET": math.nan, "UNMET": -1.0}}, "must be a finite log-probability <= 0, got nan"),
        ({"label_logprobs": {}}, "label_logprobs must not be empty"),
        ({"label_logprobs": {"UNMET": -1.0, "MET": -0.5}}, "differ from label_probabilities keys"),
        ({"label_logprobs": {"YES": -1.0}, "label_probabilities": None}, r"unknown keys \['YES'\]"),
        ({"off_label_mass": 1.25}, "off_label_mass must be a probability in \\[0, 1\\] or None, got 1.25"),
        ({"off_label_mass": -0.5}, "got -0.5"),
    ],
)
def test_binary_vote_refuses_bad_raw_values(fields: dict[str, object], message: str) -> None:
    base: dict[str, object] = {"judge_id": "j", "verdict": "MET", "reason": "",
                               "label_probabilities": {"MET": 0.6, "UNMET": 0.4}}
    with pytest.raises(ValidationError, match=message):
        JudgeVote(**{**base, **fields})


def test_raw_logprobs_need_not_sum_to_one() -> None:
    vote = MultiChoiceJudgeVote(judge_id="j", selected_index=0, selected_label="a", value=1.0, reason="",
                                label_probabilities={"a": 0.5, "b": 0.5},
                                label_logprobs={"a": math.log(0.01), "b": math.log(0.01)}, off_label_mass=0.98)
    assert vote.label_logprobs == {"a": math.log(0.01), "b": math.log(0.01)}
    with pytest.raises(ValidationError, match=r"MultiChoiceJudgeVote.label_logprobs\['b'\] must be a finite"):
        MultiChoiceJudgeVote(judge_id="j", selected_index=0, selected_label="a", value=1.0, reason="",
                             label_logprobs={"a": -1.0, "b": 1e-9})
