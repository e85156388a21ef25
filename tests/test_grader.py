"""CriterionGrader on a ScriptedEngine (no model): verdicts, option shuffles, errors, prompt
layout, explain modes, scores and token usage."""

from __future__ import annotations

import asyncio
import json
import math
import re
from collections.abc import Sequence

import pytest

from autorubric_local.core.errors import InputError
from autorubric_local.core.reports import EnsembleEvaluationReport
from autorubric_local.core.rubric import Rubric
from autorubric_local.core.types import (
    CannotAssessConfig,
    Criterion,
    CriterionOption,
    CriterionVerdict,
)
from autorubric_local.engine import GenerateRequest, ScoreRequest, ScriptedEngine
from autorubric_local.engine.constrained import (
    JSON_SENTENCE_BODY_REGEX,
    JSON_STRING_BODY_REGEX,
)
from autorubric_local.graders import CriterionGrader, GradedItem
from autorubric_local.graders.planning import GradeItem
from autorubric_local.graders.prompts import DEFAULT_SYSTEM_PROMPT, judge_system_prompt
from autorubric_local.judges.config import LLMConfig
from fake_judge import fake_grader

BINARY_KEYS = ["MET", "UNMET", "CANNOT_ASSESS"]


def lp(*probabilities: float) -> list[float]:
    """Log-probabilities of a distribution (the engine may also return unnormalised ones)."""
    return [math.log(p) for p in probabilities]


def grader_for(engine: ScriptedEngine, **kwargs: object) -> CriterionGrader:
    config_kwargs = {k: kwargs.pop(k) for k in ("thinking", "explanation_style") if k in kwargs}
    kwargs.setdefault("seed", 0)
    return fake_grader(engine, config=config_kwargs, **kwargs)


def grade_one(
    grader: CriterionGrader,
    submission: str,
    rubric: Sequence[Criterion],
    query: str | None = None,
    reference: str | None = None,
) -> GradedItem:
    (graded,) = grader.grade_inputs([(submission, list(rubric), query, reference, "item-0")])
    return graded


def score_requests(engine: ScriptedEngine) -> list[ScoreRequest]:
    return [r for r in engine.history if isinstance(r, ScoreRequest)]


def generate_requests(engine: ScriptedEngine) -> list[GenerateRequest]:
    return [r for r in engine.history if isinstance(r, GenerateRequest)]


def shown_options(suffix: str) -> list[str]:
    """Option labels in the order the judge saw them (the '1. label' lines of the criterion)."""
    block = suffix.split("</criterion>")[0]
    return [m.group(2) for m in re.finditer(r"^(\d+)\. (.*)$", block, flags=re.MULTILINE)]


BINARY_A = Criterion(name="a", weight=10.0, requirement="States the energy density")
BINARY_B = Criterion(name="b", weight=5.0, requirement="Mentions cobalt")
NEGATIVE = Criterion(name="neg", weight=-5.0, requirement="Claims LFP is denser")
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


# ---------------------------------------------------------------------------- binary verdicts


@pytest.mark.parametrize(
    ("probabilities", "verdict"),
    [
        ((0.7, 0.2, 0.1), CriterionVerdict.MET),
        ((0.2, 0.7, 0.1), CriterionVerdict.UNMET),
        ((0.2, 0.3, 0.5), CriterionVerdict.CANNOT_ASSESS),
    ],
)
def test_binary_verdict_is_argmax_with_label_probabilities(
    probabilities: tuple[float, float, float], verdict: CriterionVerdict
) -> None:
    engine = ScriptedEngine()
    # Unnormalised log-probabilities: the grader renormalises over the three labels.
    engine.enqueue_scores([math.log(p) - 3.0 for p in probabilities])
    graded = grade_one(grader_for(engine), "An answer.", [BINARY_A])
    criterion = graded.report.report[0]
    assert criterion.final_verdict is verdict
    vote = criterion.votes[0]
    assert vote.verdict is verdict and vote.error is None
    for mapping in (criterion.label_probabilities, vote.label_probabilities):
        assert list(mapping) == BINARY_KEYS
        assert math.isclose(sum(mapping.values()), 1.0, abs_tol=1e-9)
        for key, p in zip(BINARY_KEYS, probabilities):
            assert mapping[key] == pytest.approx(p, abs=1e-9)
    assert score_requests(engine)[0].labels == ('MET"', 'UNMET"', 'CANNOT_ASSESS"')


def test_binary_tie_goes_to_the_first_label() -> None:
    engine = ScriptedEngine()
    engine.enqueue_scores([-1.0, -1.0, -5.0])
    graded = grade_one(grader_for(engine), "x", [BINARY_A])
    assert graded.report.report[0].final_verdict is CriterionVerdict.MET


# ---------------------------------------------------------------------------- multi-choice


def favour(label: str, high: float = 0.7) -> "object":
    """Policy: put probability ``high`` on the shown position of option ``label``."""

    def policy(request: ScoreRequest) -> list[float]:
        shown = shown_options(request.suffix)
        if not shown:  # binary criterion
            return lp(0.5, 0.3, 0.2)
        rest = (1.0 - high) / (len(shown) - 1)
        return [math.log(high if option == label else rest) for option in shown]

    return policy


def many_choice_criteria(n: int) -> list[Criterion]:
    return [
        Criterion(
            name=f"c{i}",
            weight=1.0,
            requirement=f"Rate aspect {i}",
            options=[CriterionOption(label=f"opt{i}-{k}", value=k / 4) for k in range(5)],
        )
        for i in range(n)
    ]


def test_shuffled_choice_maps_back_to_the_original_option() -> None:
    engine = ScriptedEngine(policy=favour("Solid"))
    graded = grade_one(grader_for(engine, seed=3), "NMC and LFP differ.", [DEPTH])
    report = graded.report.report[0]
    vote = report.multi_choice_votes[0]
    order = vote.shuffle_order
    assert sorted(order) == [0, 1, 2, 3]
    assert report.shuffle_order == order  # spec 000 reads it from the criterion's report
    (request,) = score_requests(engine)
    # The suffix lists the options in shown order: shown position k is original option order[k].
    assert shown_options(request.suffix) == [DEPTH.options[i].label for i in order]
    assert request.labels == ("1,", "2,", "3,", "4,")
    assert report.final_multi_choice_verdict.selected_index == 2
    assert report.final_multi_choice_verdict.selected_label == "Solid"
    assert report.final_multi_choice_verdict.value == pytest.approx(0.67)
    assert vote.selected_index == 2
    assert graded.results[0].chosen == order.index(2)  # the shown position of 'Solid'
    # Probabilities keyed by ORIGINAL labels, in ORIGINAL order.
    for mapping in (report.label_probabilities, vote.label_probabilities):
        assert list(mapping) == ["Vague", "Basic", "Solid", "Expert"]
        assert mapping["Solid"] == pytest.approx(0.7)
        assert mapping["Vague"] == pytest.approx(0.1)
        assert math.isclose(sum(mapping.values()), 1.0, abs_tol=1e-9)


def test_probabilities_follow_original_options_through_the_shuffle() -> None:
    """A distinct probability per original option survives the permutation exactly."""
    wanted = {"Vague": 0.1, "Basic": 0.2, "Solid": 0.3, "Expert": 0.4}
    engine = ScriptedEngine(policy=lambda r: [math.log(wanted[o]) for o in shown_options(r.suffix)])
    criteria = [DEPTH.model_copy(update={"name": f"d{i}"}) for i in range(6)]
    graded = grade_one(grader_for(engine, seed=11), "text", criteria)
    orders = set()
    for report in graded.report.report:
        orders.add(tuple(report.multi_choice_votes[0].shuffle_order))
        assert report.label_probabilities == pytest.approx(wanted)
        assert list(report.label_probabilities) == list(wanted)
        assert report.final_multi_choice_verdict.selected_label == "Expert"
    assert len(orders) > 1  # the options really were shuffled differently


def test_same_seed_same_shuffles_different_seed_different() -> None:
    criteria = many_choice_criteria(8)

    def orders(seed: int) -> list[list[int]]:
        engine = ScriptedEngine(policy=favour("none"))
        graded = grade_one(grader_for(engine, seed=seed), "same submission", criteria)
        return [r.multi_choice_votes[0].shuffle_order for r in graded.report.report]

    first = orders(123)
    assert first == orders(123)
    assert first != orders(124)
    assert any(order != sorted(order) for order in first)
    for order in first:
        assert sorted(order) == list(range(5))


def test_generated_seed_is_kept_and_reproduces_shuffles() -> None:
    criteria = many_choice_criteria(4)
    engine = ScriptedEngine(policy=favour("none"))
    grader = CriterionGrader(LLMConfig(model="scripted", engine=engine))
    assert isinstance(grader.seed, int)
    first = [r.multi_choice_votes[0].shuffle_order for r in grade_one(grader, "s", criteria).report.report]
    again = grader_for(ScriptedEngine(policy=favour("none")), seed=grader.seed)
    second = [r.multi_choice_votes[0].shuffle_order for r in grade_one(again, "s", criteria).report.report]
    assert first == second


def test_shuffle_options_false_keeps_identity_order() -> None:
    """No shuffle: options in their own order, and shuffle_order None (spec 003: "None ... when
    shuffle_options is disabled"); the stored row keeps the shown order."""
    engine = ScriptedEngine(policy=favour("Basic"))
    graded = grade_one(grader_for(engine, shuffle_options=False), "x", [DEPTH])
    report = graded.report.report[0]
    assert report.multi_choice_votes[0].shuffle_order is None
    assert report.shuffle_order is None
    assert graded.results[0].task.option_order == (0, 1, 2, 3)
    assert shown_options(score_requests(engine)[0].suffix) == ["Vague", "Basic", "Solid", "Expert"]
    assert report.final_multi_choice_verdict.selected_index == 1
    assert graded.results[0].chosen == 1


def test_a_shuffle_that_lands_on_the_identity_is_still_recorded() -> None:
    """With shuffling on, shuffle_order is the permutation drawn, the identity included (half
    the shuffles of two options): None means no shuffle happened, not "identity"."""
    two = Criterion(name="two", weight=1.0, requirement="Pick",
                    options=[CriterionOption(label="a", value=0.0), CriterionOption(label="b", value=1.0)])
    criteria = [two.model_copy(update={"name": f"two{i}"}) for i in range(8)]
    graded = grade_one(grader_for(ScriptedEngine(policy=favour("a")), seed=5), "s", criteria)
    orders = [r.shuffle_order for r in graded.report.report]
    assert set(map(tuple, orders)) == {(0, 1), (1, 0)}  # type: ignore[arg-type]


def test_auto_na_option_is_offered_and_can_be_chosen() -> None:
    engine = ScriptedEngine(policy=favour("Cannot assess / not applicable"))
    graded = grade_one(grader_for(engine, auto_na_option=True), "x", [DEPTH, BINARY_A])
    report = graded.report.report[0]
    assert len(shown_options(score_requests(engine)[0].suffix)) == 5
    assert report.final_multi_choice_verdict.na is True
    assert report.final_multi_choice_verdict.selected_index == 4
    assert report.is_na
    # SKIP (default): the NA criterion is left out; binary A is MET (policy 0.5 on MET).
    assert graded.report.score == pytest.approx(1.0)
    assert graded.report.cannot_assess_count == 1


# ---------------------------------------------------------------------------- errors


def test_engine_error_gives_conservative_error_votes_and_worst_case_score() -> None:
    engine = ScriptedEngine()
    engine.enqueue_scores(
        lp(0.9, 0.05, 0.05),  # A: MET
        "infrastructure: out of memory",  # B (positive weight): fails
        "unknown: boom",  # NEG (negative weight): fails
        "infrastructure: out of memory",  # DEPTH: fails
    )
    graded = grade_one(grader_for(engine), "x", [BINARY_A, BINARY_B, NEGATIVE, DEPTH])
    a, b, neg, depth = graded.report.report
    assert a.final_verdict is CriterionVerdict.MET and not a.is_error
    assert b.is_error and b.votes[0].is_error
    assert b.final_verdict is CriterionVerdict.UNMET  # conservative default, positive weight
    assert b.votes[0].label_probabilities is None
    assert b.error.startswith("infrastructure:")
    assert neg.is_error and neg.final_verdict is CriterionVerdict.MET  # negative weight: MET
    assert neg.votes[0].error == "unknown: boom"
    assert depth.is_error and depth.multi_choice_votes[0].is_error
    assert depth.multi_choice_votes[0].na is True
    # Worst case: A 10, B 0, NEG -5, DEPTH worst option 0.0 * 6 -> raw 5 over P = 10+5+6 = 21.
    assert graded.report.raw_score == pytest.approx(5.0)
    assert graded.report.score == pytest.approx(5.0 / 21.0)
    assert graded.report.error is None
    assert [r.error is not None for r in graded.results] == [False, True, True, True]


def test_error_vote_never_raises_the_score() -> None:
    """Even a CANNOT_ASSESS-friendly strategy cannot turn a failure into a better score."""
    engine_ok = ScriptedEngine()
    engine_ok.enqueue_scores(lp(0.9, 0.05, 0.05), lp(0.1, 0.8, 0.1))
    engine_err = ScriptedEngine()
    engine_err.enqueue_scores(lp(0.9, 0.05, 0.05), "infrastructure: boom")
    config = CannotAssessConfig(strategy="skip")
    ok = grade_one(grader_for(engine_ok, cannot_assess_config=config), "x", [BINARY_A, NEGATIVE])
    err = grade_one(grader_for(engine_err, cannot_assess_config=config), "x", [BINARY_A, NEGATIVE])
    assert ok.report.score == pytest.approx(1.0)
    assert err.report.score == pytest.approx(0.5)  # NEG counted as MET: (10 - 5) / 10


def test_all_judgments_failed_gives_no_score_and_an_error() -> None:
    engine = ScriptedEngine()  # no answers queued, no policy: every request fails
    graded = grade_one(grader_for(engine), "x", [BINARY_A, NEGATIVE, DEPTH])
    assert graded.report.score is None
    assert graded.report.error is not None
    assert "all 3 judgments failed" in graded.report.error
    assert "unknown: no scripted answer left" in graded.report.error
    assert all(c.is_error for c in graded.report.report)


def test_empty_rubric_is_an_input_error() -> None:
    grader = grader_for(ScriptedEngine())
    with pytest.raises(InputError, match="rubric"):
        grader.grade_batch([GradeItem(submission="x", rubric=())])


# ---------------------------------------------------------------------------- prompt layout


def test_prompt_prefix_holds_query_reference_and_submission_shared_by_all_criteria() -> None:
    engine = ScriptedEngine(policy=favour("Basic"))
    query = "Compare NMC and LFP cathodes."
    reference = "NMC is denser; LFP is safer."
    submission = "NMC reaches 250-300 Wh/kg."
    grade_one(grader_for(engine), submission, [BINARY_A, NEGATIVE, DEPTH], query=query, reference=reference)
    requests = score_requests(engine)
    assert len(requests) == 3
    prefix = requests[0].prefix
    assert all(r.prefix == prefix for r in requests)
    assert query in prefix
    assert reference in prefix
    assert f"<submission>\n{submission}\n</submission>" in prefix
    assert prefix.index(query) < prefix.index(reference) < prefix.index("<submission>")
    for request, criterion in zip(requests, [BINARY_A, NEGATIVE, DEPTH]):
        assert criterion.requirement in request.suffix
        assert criterion.requirement not in prefix
        assert submission not in request.suffix


def test_items_have_their_own_prefixes_in_one_workload() -> None:
    engine = ScriptedEngine(policy=favour("Basic"))
    grader = grader_for(engine)
    graded = grader.grade_inputs(
        [
            ("first answer", [BINARY_A, NEGATIVE], "q1", None, "i1"),
            ("second answer", [BINARY_A, NEGATIVE], "q2", None, "i2"),
        ]
    )
    assert len(graded) == 2
    prefixes = [r.prefix for r in score_requests(engine)]
    assert len(prefixes) == 4 and len(set(prefixes)) == 2
    assert "first answer" in prefixes[0] and "second answer" in prefixes[2]
    assert [g.item.item_id for g in graded] == ["i1", "i2"]


def test_no_query_or_reference_leaves_them_out() -> None:
    engine = ScriptedEngine(policy=favour("x"))
    grade_one(grader_for(engine), "only the answer", [BINARY_A])
    prefix = score_requests(engine)[0].prefix
    assert "<question>" not in prefix and "<reference>" not in prefix
    assert "<submission>\nonly the answer\n</submission>" in prefix


def test_thinking_part_of_the_submission_is_not_shown() -> None:
    engine = ScriptedEngine(policy=favour("x"))
    grade_one(grader_for(engine), "<thinking>secret plan</thinking><output>final answer</output>", [BINARY_A])
    prefix = score_requests(engine)[0].prefix
    assert "final answer" in prefix and "secret plan" not in prefix


def test_the_default_system_prompt_is_sent() -> None:
    engine = ScriptedEngine(policy=favour("x"))
    grade_one(grader_for(engine), "ans", [BINARY_A])
    assert DEFAULT_SYSTEM_PROMPT in score_requests(engine)[0].prefix


def test_the_default_prompt_words_verdicts_as_presence_and_balances_its_worked_examples() -> None:
    """Issue 20's default: MET/UNMET defined by presence, CANNOT_ASSESS only for unreadable
    submissions, worked answers not mostly MET (they would teach the judge to say MET)."""
    assert "- MET: what the criterion describes IS present in the submission." in DEFAULT_SYSTEM_PROMPT
    assert "- UNMET: what the criterion describes is NOT present" in DEFAULT_SYSTEM_PROMPT
    answers = re.findall(r'^\{"criterion_status": "(\w+)"\}$', DEFAULT_SYSTEM_PROMPT, flags=re.MULTILINE)
    assert answers.count("MET") == 2 and answers.count("UNMET") == 3
    yes_no = judge_system_prompt("YES", "NO", cannot_assess=False)
    assert "CANNOT_ASSESS" not in yes_no and '"YES" | "NO"' in yes_no and "MET" not in yes_no


def test_custom_system_prompt_replaces_the_default() -> None:
    engine = ScriptedEngine(policy=favour("x"))
    grade_one(grader_for(engine, system_prompt="Be kind but exact."), "ans", [BINARY_A])
    prefix = score_requests(engine)[0].prefix
    assert "Be kind but exact." in prefix
    assert DEFAULT_SYSTEM_PROMPT.splitlines()[0] not in prefix


def test_negative_criteria_are_announced_in_the_suffix() -> None:
    engine = ScriptedEngine(policy=favour("x"))
    grade_one(grader_for(engine), "x", [BINARY_A, NEGATIVE])
    positive, negative = score_requests(engine)
    assert "negative criterion" in negative.suffix
    assert "negative criterion" not in positive.suffix
    assert positive.suffix.endswith('{"criterion_status": "')


# ---------------------------------------------------------------------------- explain modes


def test_explain_mode_scores_then_generates_one_sentence_after_the_chosen_label() -> None:
    engine = ScriptedEngine()
    engine.enqueue_scores(lp(0.2, 0.7, 0.1), lp(0.1, 0.2, 0.3, 0.4))
    engine.enqueue_generations(' leaves the figures "missing".', " gives several figures.")
    graded = grade_one(grader_for(engine, mode="explain", explanation_first=False, shuffle_options=False), "x",
                       [BINARY_A, DEPTH])
    kinds = [type(r).__name__ for r in engine.history]
    assert kinds == ["ScoreRequest", "ScoreRequest", "GenerateRequest", "GenerateRequest"]
    scores, generations = score_requests(engine), generate_requests(engine)
    assert generations[0].prefix == scores[0].prefix
    # The default style: the explanation starts with the stem, written into the prompt, and the
    # grammar is the one-sentence one.
    assert generations[0].suffix == scores[0].suffix + 'UNMET", "explanation": "The submission'
    assert generations[1].suffix == scores[1].suffix + '4, "explanation": "The submission'
    assert [g.sentence for g in generations] == [True, True]
    assert generations[0].regex == JSON_SENTENCE_BODY_REGEX
    assert generations[0].max_new_tokens == 96  # LLMConfig.explanation_max_tokens default
    binary, depth = graded.report.report
    assert binary.final_verdict is CriterionVerdict.UNMET
    assert binary.final_reason == 'The submission leaves the figures "missing".'
    assert binary.votes[0].reason == 'The submission leaves the figures "missing".'
    assert depth.final_multi_choice_verdict.selected_label == "Expert"
    assert depth.final_reason == "The submission gives several figures."
    # The assembled answer the judge "wrote" is valid JSON.
    answer = json.loads('{"criterion_status": "UNMET", "explanation": ' + json.dumps(binary.final_reason) + "}")
    assert answer["explanation"] == 'The submission leaves the figures "missing".'


def test_free_explanations_have_no_stem_and_any_length() -> None:
    engine = ScriptedEngine()
    engine.enqueue_scores(lp(0.2, 0.7, 0.1))
    engine.enqueue_generations('Figures "missing". More.')
    graded = grade_one(grader_for(engine, mode="explain", explanation_first=False, explanation_style="free"), "x",
                       [BINARY_A])
    (generation,) = generate_requests(engine)
    assert generation.suffix == score_requests(engine)[0].suffix + 'UNMET", "explanation": "'
    assert generation.sentence is False and generation.regex == JSON_STRING_BODY_REGEX
    assert graded.report.report[0].final_reason == 'Figures "missing". More.'


def test_reasoning_under_thinking_is_free_whatever_the_style() -> None:
    engine = ScriptedEngine()
    engine.enqueue_generations("Step one. Step two.")
    engine.enqueue_scores(lp(0.8, 0.1, 0.1))
    graded = grade_one(grader_for(engine, mode="explain", thinking="low"), "x", [BINARY_A])
    (generation,) = generate_requests(engine)
    assert generation.suffix.endswith('{"explanation": "') and generation.sentence is False
    # Spec 003: under thinking the deliberation is the vote's reasoning; reason is its conclusion.
    (vote,) = graded.report.report[0].votes
    assert vote.reasoning == "Step one. Step two." and vote.reason == "Step two."
    assert graded.report.report[0].final_reason == "Step two."


def test_without_thinking_the_explanation_is_the_reason_and_reasoning_is_none() -> None:
    engine = ScriptedEngine()
    engine.enqueue_generations("Step one. Step two.")
    engine.enqueue_scores(lp(0.8, 0.1, 0.1))
    graded = grade_one(grader_for(engine, mode="explain", explanation_first=True), "x", [BINARY_A])
    (vote,) = graded.report.report[0].votes
    assert vote.reasoning is None and vote.reason.endswith("Step one. Step two.")


def test_score_mode_generates_nothing() -> None:
    engine = ScriptedEngine(policy=favour("x"))
    graded = grade_one(grader_for(engine), "x", [BINARY_A, NEGATIVE])
    assert generate_requests(engine) == []
    assert all(r.explanation is None for r in graded.results)
    assert all(c.final_reason == "" for c in graded.report.report)


def test_explain_mode_skips_generation_for_failed_scores() -> None:
    engine = ScriptedEngine()
    engine.enqueue_scores("infrastructure: boom", lp(0.6, 0.3, 0.1))
    grade_one(grader_for(engine, mode="explain", explanation_first=False), "x", [BINARY_A, BINARY_B])
    (generation,) = generate_requests(engine)
    assert generation.suffix == score_requests(engine)[1].suffix + 'MET", "explanation": "The submission'


def test_explanation_first_generates_then_scores_with_the_explanation_in_the_suffix() -> None:
    engine = ScriptedEngine()
    engine.enqueue_generations('It gives "250-300 Wh/kg".', "Deep enough.")
    engine.enqueue_scores(lp(0.8, 0.1, 0.1), lp(0.1, 0.6, 0.2, 0.1))
    graded = grade_one(
        grader_for(engine, mode="explain", explanation_first=True, shuffle_options=False, explanation_style="free"),
        "x", [BINARY_A, DEPTH],
    )
    kinds = [type(r).__name__ for r in engine.history]
    assert kinds == ["GenerateRequest", "GenerateRequest", "ScoreRequest", "ScoreRequest"]
    generations, scores = generate_requests(engine), score_requests(engine)
    assert generations[0].suffix.endswith('{"explanation": "')
    assert generations[0].suffix.startswith(scores[0].suffix.split('{"explanation"')[0])
    explanation = json.dumps('It gives "250-300 Wh/kg".')
    assert scores[0].suffix.endswith('{"explanation": ' + explanation + ', "criterion_status": "')
    assert scores[1].suffix.endswith('{"explanation": "Deep enough.", "selected_option": ')
    assert scores[1].labels == ("1}", "2}", "3}", "4}")
    binary, depth = graded.report.report
    assert binary.final_verdict is CriterionVerdict.MET
    assert binary.final_reason == 'It gives "250-300 Wh/kg".'
    assert depth.final_multi_choice_verdict.selected_label == "Basic"
    # The text the judge saw before its verdict closes into valid JSON with any label.
    opener = scores[0].suffix[scores[0].suffix.index('{"explanation"') :]
    assert json.loads(opener + 'MET"}')["explanation"] == 'It gives "250-300 Wh/kg".'


def test_explanation_first_in_sentence_style_reads_the_verdict_after_stem_and_sentence() -> None:
    engine = ScriptedEngine()
    engine.enqueue_generations(" names two causes.")
    engine.enqueue_scores(lp(0.8, 0.1, 0.1))
    graded = grade_one(grader_for(engine, mode="explain", explanation_first=True), "x", [BINARY_A])
    (generation,), (score,) = generate_requests(engine), score_requests(engine)
    assert generation.suffix.endswith('{"explanation": "The submission') and generation.sentence is True
    assert score.suffix.endswith('{"explanation": "The submission names two causes.", "criterion_status": "')
    assert graded.report.report[0].final_reason == "The submission names two causes."


@pytest.mark.parametrize(("thinking", "budget"), [("low", 96), ("high", 256), (300, 300)])
def test_thinking_implies_reasoning_first_even_in_score_mode(thinking: object, budget: int) -> None:
    engine = ScriptedEngine(policy=favour("x"), explanation="Because.")
    graded = grade_one(grader_for(engine, thinking=thinking), "x", [BINARY_A])
    kinds = [type(r).__name__ for r in engine.history]
    assert kinds == ["GenerateRequest", "ScoreRequest"]
    (generation,) = generate_requests(engine)
    assert generation.max_new_tokens == budget  # max(thinking budget, explanation budget)
    assert score_requests(engine)[0].suffix.endswith('{"explanation": "Because.", "criterion_status": "')
    assert graded.report.report[0].final_reason == "Because."


def test_invalid_mode_is_an_input_error() -> None:
    with pytest.raises(InputError, match="mode"):
        grader_for(ScriptedEngine(), mode="verbose")


# ---------------------------------------------------------------------------- scores and usage


def test_hand_computed_score_with_positive_and_negative_weights() -> None:
    rubric = [
        Criterion(weight=10.0, requirement="A"),  # MET -> +10
        Criterion(weight=8.0, requirement="B"),  # UNMET -> 0
        Criterion(weight=-15.0, requirement="Mistake C"),  # UNMET (mistake absent) -> 0
        Criterion(weight=-10.0, requirement="Mistake D"),  # MET (mistake present) -> -10
        DEPTH,  # 'Solid' (0.67) * 6 -> +4.02
        Criterion(weight=3.0, requirement="E"),  # CANNOT_ASSESS -> skipped
    ]
    engine = ScriptedEngine()
    engine.enqueue_scores(
        lp(0.6, 0.3, 0.1), lp(0.3, 0.6, 0.1), lp(0.1, 0.8, 0.1), lp(0.7, 0.2, 0.1), lp(0.1, 0.2, 0.6, 0.1), lp(0.1, 0.2, 0.7)
    )
    graded = grade_one(grader_for(engine, shuffle_options=False), "x", rubric)
    raw = 10.0 + 0.0 + 0.0 - 10.0 + 0.67 * 6.0
    assert graded.report.raw_score == pytest.approx(raw)
    assert graded.report.score == pytest.approx(raw / (10.0 + 8.0 + 6.0))
    assert graded.report.cannot_assess_count == 1
    # Un-normalised, the score is the raw weighted sum.
    engine.enqueue_scores(
        lp(0.6, 0.3, 0.1), lp(0.3, 0.6, 0.1), lp(0.1, 0.8, 0.1), lp(0.7, 0.2, 0.1), lp(0.1, 0.2, 0.6, 0.1), lp(0.1, 0.2, 0.7)
    )
    raw_graded = grade_one(grader_for(engine, shuffle_options=False, normalize=False), "x", rubric)
    assert raw_graded.report.score == pytest.approx(raw)


def test_penalty_only_rubric_scores_one_when_no_mistake() -> None:
    engine = ScriptedEngine()
    engine.enqueue_scores(lp(0.1, 0.8, 0.1), lp(0.2, 0.7, 0.1))
    graded = grade_one(grader_for(engine), "x", [NEGATIVE, NEGATIVE.model_copy(update={"name": "n2"})])
    assert graded.report.score == pytest.approx(1.0)


def test_token_usage_totals() -> None:
    engine = ScriptedEngine(policy=favour("Basic"), explanation="two words")
    graded = grade_one(grader_for(engine, mode="explain"), "some answer", [BINARY_A, NEGATIVE, DEPTH])
    usage = graded.report.token_usage
    expected_prompt = sum(len((r.prefix + r.suffix).split()) for r in score_requests(engine))
    assert usage.prompt_tokens == expected_prompt > 0
    assert usage.completion_tokens == 3 * 2  # 'two words' per criterion
    assert usage.total_tokens == usage.prompt_tokens + usage.completion_tokens
    assert usage.cache_read_input_tokens == 0
    assert sum(r.usage.prompt_tokens for r in graded.results) == usage.prompt_tokens


def test_grade_batch_progress_and_order() -> None:
    engine = ScriptedEngine(policy=favour("Basic"))
    calls: list[int] = []
    items = [GradeItem(submission=f"answer {i}", rubric=(BINARY_A, DEPTH), item_id=f"i{i}") for i in range(3)]
    graded = grader_for(engine).grade_batch(items, progress=calls.append)
    assert [g.item.item_id for g in graded] == ["i0", "i1", "i2"]
    assert calls == [6]
    for g in graded:
        assert [r.task.item_index for r in g.results] == [graded.index(g)] * 2


# ---------------------------------------------------------------------------- async API


def test_rubric_grade_awaits_the_grader() -> None:
    engine = ScriptedEngine()
    engine.enqueue_scores(lp(0.8, 0.1, 0.1), lp(0.1, 0.8, 0.1))
    rubric = Rubric([BINARY_A, NEGATIVE])
    grader = grader_for(engine)

    async def main() -> EnsembleEvaluationReport:
        return await rubric.grade("An answer.", grader=grader, query="A question?")

    report = asyncio.run(main())
    assert isinstance(report, EnsembleEvaluationReport)
    assert report.score == pytest.approx(1.0)
    assert [c.final_verdict for c in report.report] == [CriterionVerdict.MET, CriterionVerdict.UNMET]
    assert "A question?" in score_requests(engine)[0].prefix


def test_grader_grade_directly_with_reference() -> None:
    engine = ScriptedEngine(policy=favour("x"))
    grader = grader_for(engine)
    report = asyncio.run(grader.grade("ans", [BINARY_A], query="q?", reference_submission="ref!"))
    assert report.score == pytest.approx(1.0)
    assert "ref!" in score_requests(engine)[0].prefix


def test_explain_mode_reasons_first_by_default() -> None:
    """The default explain mode generates first, then reads the verdict after the explanation."""
    engine = ScriptedEngine(policy=favour("Basic"), explanation=" states no figure.")
    graded = grade_one(grader_for(engine, mode="explain"), "x", [BINARY_A])
    kinds = [type(r).__name__ for r in engine.history]
    assert kinds == ["GenerateRequest", "ScoreRequest"]
    (generation,) = generate_requests(engine)
    (score,) = score_requests(engine)
    assert score.suffix.startswith(generation.suffix)  # the verdict is read after the explanation
    assert graded.results[0].explanation == "The submission states no figure."


def test_describe_keeps_score_mode_runs_as_before_the_default_turned() -> None:
    engine = ScriptedEngine()
    assert grader_for(engine).describe()["explanation_first"] is False  # score mode: hash unchanged
    assert grader_for(engine, mode="explain").describe()["explanation_first"] is True
    assert grader_for(engine, mode="explain", explanation_first=False).describe()["explanation_first"] is False
