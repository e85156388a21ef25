"""Contextual calibration in CriterionGrader (issue 20, part 1): content-free submissions judged
in the same prompt, priors per judge x context x option order, verdicts read from the corrected
distribution, the judge's own distribution kept. A ScriptedEngine answers by submission text."""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence

import pytest

from autorubric_local.core.errors import InputError
from autorubric_local.core.types import Criterion, CriterionOption, CriterionVerdict
from autorubric_local.engine import LabelScores, ScoreRequest, ScriptedEngine
from autorubric_local.graders import CriterionGrader
from autorubric_local.graders.content_free import CalibratedResult
from autorubric_local.graders.planning import GradeItem
from autorubric_local.judges.config import LLMConfig
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
CONTENT_FREE = ("", "N/A", "[SUBMISSION]")

def submission_of(request: ScoreRequest) -> str:
    found = re.search(r"<submission>\n(.*?)\n</submission>", request.prefix, flags=re.DOTALL)
    assert found is not None, request.prefix
    return found.group(1)


def shown_options(suffix: str) -> list[str]:
    block = suffix.split("</criterion>")[0]
    return [m.group(1) for m in re.finditer(r"^\d+\. (.*)$", block, flags=re.MULTILINE)]


def binary_policy(answers: Mapping[str, Sequence[float]]):  # type: ignore[no-untyped-def]
    def policy(request: ScoreRequest) -> LabelScores:
        return LabelScores(tuple(math.log(p) for p in answers[submission_of(request)]))

    return policy


def grader(engine: ScriptedEngine, **kwargs: object) -> CriterionGrader:
    kwargs.setdefault("seed", 0)
    return fake_grader(engine, **kwargs)


def items(*texts: str, rubric: tuple[Criterion, ...] = (BINARY,), query: str | None = "Compare NMC and LFP.") -> list[GradeItem]:
    return [GradeItem(submission=t, rubric=rubric, query=query, item_id=f"i{n}") for n, t in enumerate(texts)]


# Binary answers are raw probabilities of (MET, UNMET, CANNOT_ASSESS) by submission. The prior
# is the mean of the content-free rows, each renormalised: (0.8, 0.15, 0.05), (0.7, 0.2, 0.1) and
# (0.9, 0.07, 0.03) -> p_cf = (0.8, 0.14, 0.06).
P_CF = (0.8, 0.14, 0.06)


def answers_with(real: Mapping[str, Sequence[float]]) -> dict[str, tuple[float, ...]]:
    return {"": (0.8, 0.15, 0.05), "N/A": (0.35, 0.1, 0.05), "[SUBMISSION]": (0.9, 0.07, 0.03),
            **{k: tuple(v) for k, v in real.items()}}


# A real judgment (0.7, 0.28, 0.02): p / p_cf = (7/8, 2, 1/3) = (21, 48, 8) / 24 -> q = (21, 48, 8) / 77.
REAL_BINARY = (0.7, 0.28, 0.02)
Q = {"MET": 21 / 77, "UNMET": 48 / 77, "CANNOT_ASSESS": 8 / 77}


# ------------------------------------------------------------------------------ binary


def test_binary_verdict_is_read_from_the_corrected_distribution() -> None:
    engine = ScriptedEngine(policy=binary_policy(answers_with({"LFP is denser.": REAL_BINARY})))
    (graded,) = grader(engine, contextual_calibration=True).grade_batch(items("LFP is denser."))
    vote = graded.report.report[0].votes[0]
    assert vote.label_probabilities == pytest.approx(Q, abs=1e-12)
    assert vote.verdict is CriterionVerdict.UNMET  # the judge's own argmax was MET
    assert vote.uncalibrated_label_probabilities == pytest.approx(dict(zip(Q, REAL_BINARY)), abs=1e-12)
    assert vote.label_logprobs == pytest.approx({k: math.log(p) for k, p in zip(Q, REAL_BINARY)})
    report = graded.report.report[0]
    assert report.final_verdict is CriterionVerdict.UNMET
    assert report.label_probabilities == pytest.approx(vote.label_probabilities)
    assert graded.report.score == 0.0
    (result,) = graded.results
    assert isinstance(result, CalibratedResult) and result.prior is not None
    assert result.prior.inputs == CONTENT_FREE
    assert result.prior.probabilities == pytest.approx(P_CF, abs=1e-12)


def test_off_by_default_nothing_is_corrected_and_no_content_free_judgment_is_made() -> None:
    engine = ScriptedEngine(policy=binary_policy(answers_with({"LFP is denser.": REAL_BINARY})))
    (graded,) = grader(engine).grade_batch(items("LFP is denser."))
    vote = graded.report.report[0].votes[0]
    assert vote.verdict is CriterionVerdict.MET and vote.uncalibrated_label_probabilities is None
    assert [submission_of(r) for r in engine.history] == ["LFP is denser."]  # type: ignore[arg-type]
    assert "contextual_calibration" not in grader(engine).describe()


def test_content_free_prompts_are_the_real_prompts_with_the_submission_replaced() -> None:
    engine = ScriptedEngine(policy=binary_policy(answers_with({"Real answer.": (0.5, 0.4, 0.1)})))
    grader(engine, contextual_calibration=True).grade_batch(items("Real answer."))
    requests: list[ScoreRequest] = engine.history  # type: ignore[assignment]
    by_text = {submission_of(r): r for r in requests}
    assert sorted(by_text) == sorted(["Real answer.", *CONTENT_FREE])
    real = by_text["Real answer."]
    for text in CONTENT_FREE:
        assert by_text[text].suffix == real.suffix
        assert by_text[text].labels == real.labels
        assert by_text[text].prefix == real.prefix.replace("<submission>\nReal answer.\n", f"<submission>\n{text}\n")


def test_one_prior_per_context_shared_by_items_and_kept_across_batches() -> None:
    answers = answers_with({f"a{i}": (0.6, 0.3, 0.1) for i in range(4)})
    engine = ScriptedEngine(policy=binary_policy(answers))
    g = grader(engine, contextual_calibration=True)
    g.grade_batch(items("a0", "a1"))
    assert sum(submission_of(r) in CONTENT_FREE for r in engine.history) == 3  # type: ignore[arg-type]
    g.grade_batch(items("a2"))  # same context: the prior is known
    assert sum(submission_of(r) in CONTENT_FREE for r in engine.history) == 3  # type: ignore[arg-type]
    g.grade_batch(items("a3", query="Another question."))  # another context
    assert sum(submission_of(r) in CONTENT_FREE for r in engine.history) == 6  # type: ignore[arg-type]


def test_a_failed_content_free_judgment_makes_the_judgment_an_error_and_is_tried_again() -> None:
    answers = answers_with({"x": (0.6, 0.3, 0.1)})
    calls = {"n": 0}

    def policy(request: ScoreRequest) -> LabelScores | str:
        if submission_of(request) == "N/A" and calls["n"] == 0:
            calls["n"] += 1
            return LabelScores((), error="infrastructure: out of memory")
        return LabelScores(tuple(math.log(p) for p in answers[submission_of(request)]))

    engine = ScriptedEngine(policy=policy)  # type: ignore[arg-type]
    g = grader(engine, contextual_calibration=True)
    (graded,) = g.grade_batch(items("x"))
    vote = graded.report.report[0].votes[0]
    assert vote.is_error and vote.label_probabilities is None
    assert vote.error == ("infrastructure: contextual calibration has no label prior: the content-free input "
                          "'N/A' failed: infrastructure: out of memory")
    (result,) = graded.results
    assert isinstance(result, CalibratedResult) and result.uncalibrated == pytest.approx((0.6, 0.3, 0.1))
    (again,) = g.grade_batch(items("x"))  # the failed prior was not kept: estimated again, now fine
    assert not again.report.report[0].votes[0].is_error
    assert sum(submission_of(r) in CONTENT_FREE for r in engine.history) == 6  # type: ignore[arg-type]


def test_a_failed_real_judgment_stays_failed() -> None:
    engine = ScriptedEngine(policy=binary_policy(answers_with({})))
    engine.enqueue_scores("infrastructure: engine down")  # the real judgment is scored first
    (graded,) = grader(engine, contextual_calibration=True).grade_batch(items("x"))
    vote = graded.report.report[0].votes[0]
    assert vote.error == "infrastructure: engine down" and vote.uncalibrated_label_probabilities is None


# ------------------------------------------------------------------------------ multi-choice

# Content-free judgments favour the first shown position: (0.4, 0.3, 0.2, 0.1) by position.
POSITION_PRIOR = (0.4, 0.3, 0.2, 0.1)
REAL = {"Vague": 0.1, "Basic": 0.2, "Solid": 0.3, "Expert": 0.4}  # by original option


def choice_policy(request: ScoreRequest) -> LabelScores:
    shown = shown_options(request.suffix)
    if submission_of(request) in CONTENT_FREE:
        return LabelScores(tuple(math.log(p) for p in POSITION_PRIOR[: len(shown)]))
    return LabelScores(tuple(math.log(REAL[label]) for label in shown))


def corrected(order: Sequence[int]) -> dict[str, float]:
    """Hand rule: q over shown positions is REAL[shown] / POSITION_PRIOR[position], normalised."""
    labels = [o.label for o in DEPTH.options or []]
    ratios = {labels[original]: REAL[labels[original]] / POSITION_PRIOR[pos] for pos, original in enumerate(order)}
    total = sum(ratios.values())
    return {label: ratios[label] / total for label in labels}


def test_multi_choice_priors_follow_each_shown_order() -> None:
    engine = ScriptedEngine(policy=choice_policy)
    graded = grader(engine, contextual_calibration=True, seed=11).grade_batch(
        items(*[f"essay {i}" for i in range(4)], rubric=(DEPTH,)))
    orders = set()
    for entry in graded:
        vote = entry.report.report[0].multi_choice_votes[0]
        order = tuple(vote.shuffle_order or ())
        orders.add(order)
        assert vote.label_probabilities == pytest.approx(corrected(order))
        assert vote.uncalibrated_label_probabilities == pytest.approx(REAL)
        (result,) = entry.results
        assert result.prior is not None and result.prior.option_order == order  # type: ignore[attr-defined]
    assert len(orders) > 1
    # Each content-free request shows the options in the order of a real request.
    requests: list[ScoreRequest] = engine.history  # type: ignore[assignment]
    real_orders = {tuple(shown_options(r.suffix)) for r in requests if submission_of(r) not in CONTENT_FREE}
    free_orders = [tuple(shown_options(r.suffix)) for r in requests if submission_of(r) in CONTENT_FREE]
    assert set(free_orders) == real_orders and len(free_orders) == 3 * len(real_orders)


def test_cyclic_rotations_are_corrected_each_with_its_own_prior_then_averaged() -> None:
    engine = ScriptedEngine(policy=choice_policy)
    (graded,) = grader(engine, contextual_calibration=True, permutations="cyclic", seed=3).grade_batch(
        items("essay", rubric=(DEPTH,)))
    vote = graded.report.report[0].multi_choice_votes[0]
    rotations = [r.task.option_order for r in graded.results]
    assert len(rotations) == 4
    labels = [o.label for o in DEPTH.options or []]
    expected = {label: sum(corrected(order)[label] for order in rotations) / 4 for label in labels}  # type: ignore[arg-type]
    assert vote.label_probabilities == pytest.approx(expected)
    assert vote.uncalibrated_label_probabilities == pytest.approx(REAL)
    assert vote.selected_label == max(expected, key=expected.__getitem__)
    assert len({r.prior.prior_id for r in graded.results}) == 4  # type: ignore[attr-defined]


# ------------------------------------------------------------------------------ modes, settings


def test_reasoning_first_judges_the_content_free_inputs_the_same_way() -> None:
    engine = ScriptedEngine(policy=binary_policy(answers_with({"x": REAL_BINARY})), explanation="Hmm.")
    (graded,) = grader(engine, contextual_calibration=True, mode="explain", explanation_first=True).grade_batch(
        items("x"))
    vote = graded.report.report[0].votes[0]
    assert vote.label_probabilities == pytest.approx(Q, abs=1e-12)
    generated = [r for r in engine.history if not isinstance(r, ScoreRequest)]
    assert len(generated) == 4  # the real item and the three content-free inputs each reason first


def test_describe_records_the_method_and_inputs() -> None:
    g = grader(ScriptedEngine(), contextual_calibration=True, content_free_inputs=["N/A", "--"])
    assert g.describe()["contextual_calibration"] == {"method": "zhao2021-diagonal", "content_free_inputs": ["N/A", "--"]}


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"contextual_calibration": True, "mode": "explain", "explanation_first": False},
         "does not work with mode='explain' and the verdict first"),
        ({"content_free_inputs": ["N/A"]}, "content_free_inputs needs contextual_calibration=True"),
        ({"contextual_calibration": True, "content_free_inputs": []}, "non-empty list of strings"),
        ({"contextual_calibration": True, "content_free_inputs": "N/A"}, "non-empty list of strings"),
        ({"contextual_calibration": True, "content_free_inputs": ["N/A", "N/A"]}, "duplicates"),
        ({"contextual_calibration": True, "content_free_inputs": ["ok", "\ud800"]}, r"content_free_inputs\[1\]: lone surrogate"),
    ],
)
def test_bad_settings_are_refused(kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(InputError, match=message):
        grader(ScriptedEngine(), **kwargs)


# ------------------------------------------------------------------------------ votes


def test_votes_check_the_uncalibrated_distribution() -> None:
    from pydantic import ValidationError

    from autorubric_local.core.reports import JudgeVote, MultiChoiceJudgeVote

    ok = {"MET": 0.5, "UNMET": 0.5}
    vote = JudgeVote(judge_id="j", verdict=CriterionVerdict.MET, reason="", label_probabilities=ok,
                     uncalibrated_label_probabilities={"MET": 0.9, "UNMET": 0.1})
    assert vote.uncalibrated_label_probabilities == {"MET": 0.9, "UNMET": 0.1}
    with pytest.raises(ValidationError, match=r"uncalibrated_label_probabilities must sum to 1"):
        JudgeVote(judge_id="j", verdict=CriterionVerdict.MET, reason="", label_probabilities=ok,
                  uncalibrated_label_probabilities={"MET": 0.9, "UNMET": 0.2})
    with pytest.raises(ValidationError, match=r"uncalibrated_label_probabilities keys \['UNMET', 'MET'\] differ"):
        JudgeVote(judge_id="j", verdict=CriterionVerdict.MET, reason="", label_probabilities=ok,
                  uncalibrated_label_probabilities={"UNMET": 0.1, "MET": 0.9})
    with pytest.raises(ValidationError, match="label_probabilities keys None"):
        MultiChoiceJudgeVote(judge_id="j", selected_index=0, selected_label="a", value=0.0, reason="",
                             uncalibrated_label_probabilities={"a": 1.0})


def test_explain_mode_is_accepted_when_every_judge_reasons_first() -> None:
    engine = ScriptedEngine(policy=binary_policy(answers_with({"x": REAL_BINARY})), explanation="Hmm.")
    thinking = CriterionGrader(LLMConfig(model="scripted", engine=engine, thinking=16), mode="explain",
                               contextual_calibration=True, seed=0)
    (graded,) = thinking.grade_batch(items("x"))
    assert graded.report.report[0].votes[0].label_probabilities == pytest.approx(Q, abs=1e-12)
    with pytest.raises(InputError, match=r"verdict first \(judges \['scripted'\]"):
        CriterionGrader(LLMConfig(model="scripted", engine=engine), mode="explain", contextual_calibration=True,
                        explanation_first=False)


def test_a_content_free_judgment_left_unplanned_is_a_bug_that_raises(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every content-free task must come back judged; one the grouping lost (our own bug) raises
    instead of calibrating silently with the priors that remain (issue 32, "Nothing silent")."""
    from autorubric_local.engine.base import EngineContractError
    from autorubric_local.graders.content_free import CONTENT_FREE_ITEM

    workloads = CriterionGrader._workloads

    def losing_one(self: CriterionGrader, tasks: Sequence[object]) -> list[list[object]]:
        groups = workloads(self, tasks)  # type: ignore[arg-type]
        dropped = next(task for group in groups for task in group if task.item_index == CONTENT_FREE_ITEM)
        return [[task for task in group if task is not dropped] for group in groups]

    monkeypatch.setattr(CriterionGrader, "_workloads", losing_one)
    engine = ScriptedEngine(policy=binary_policy(answers_with({"LFP is denser.": REAL_BINARY})))
    with pytest.raises(EngineContractError, match="content-free calibration judgments"):
        grader(engine, contextual_calibration=True).grade_batch(items("LFP is denser."))
