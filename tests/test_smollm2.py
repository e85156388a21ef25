"""The real embedded judge (SmolLM2-135M-Instruct): prefix-shared scoring equals full-prompt
scoring, and the bundled example grades end to end. Slow: loads a 135M model on CPU."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

from autorubric_local.core.rubric import Rubric
from autorubric_local.core.types import (
    CriterionJudgment,
    CriterionVerdict,
    MultiChoiceJudgment,
)
from autorubric_local.data.submissions import load_grading_data
from autorubric_local.engine import ScoreRequest
from autorubric_local.graders import CriterionGrader
from autorubric_local.graders.planning import GradeItem
from autorubric_local.judges.config import LLMConfig

pytestmark = pytest.mark.slow
USES_ALL_CORES = True  # torch on every core in this module: tests/conftest.py _torch_threads

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


@pytest.fixture(scope="module")
def rubric() -> Rubric:
    return Rubric.from_file(EXAMPLES / "battery_rubric.yaml")


@pytest.fixture(scope="module")
def dataset(rubric: Rubric) -> Any:
    return load_grading_data(EXAMPLES / "battery_submissions.jsonl", rubric)


def grader_on(engine: Any, **kwargs: Any) -> CriterionGrader:
    config_kwargs = {k: kwargs.pop(k) for k in ("explanation_max_tokens",) if k in kwargs}
    return CriterionGrader(
        LLMConfig(model="smollm2-135m-instruct", engine=engine, **config_kwargs), seed=0, **kwargs
    )


def inputs_of(dataset: Any, indices: list[int]) -> list[tuple[Any, ...]]:
    return [
        (
            dataset[i].submission,
            list(dataset.get_item_rubric(i).rubric),
            dataset.get_item_query(i),
            dataset.get_item_reference_submission(i),
            dataset[i].id,
        )
        for i in indices
    ]


def reference_logprobs(engine: Any, request: ScoreRequest) -> tuple[float, ...]:
    """All labels of one request in one plain forward: prompt+label rows, right-padded (causal
    attention never looks at the padding after a row's own tokens). The prompt is the
    tokenizer's encoding of the whole prompt text, each label its continuation tokens."""
    import torch

    from test_real_judges import reference_ids

    pairs = [reference_ids(engine.tokenizer, request.prefix + request.suffix, label) for label in request.labels]
    prompt = pairs[0][0]
    labels = [label_ids for _, label_ids in pairs]
    width = len(prompt) + max(len(label) for label in labels)
    pad = engine.tokenizer.eos_token_id
    rows = [prompt + label + [pad] * (width - len(prompt) - len(label)) for label in labels]
    with torch.inference_mode():
        logits = engine.model(input_ids=torch.tensor(rows)).logits.float().log_softmax(-1)
    return tuple(
        float(sum(logits[k, len(prompt) - 1 + j, token].item() for j, token in enumerate(label)))
        for k, label in enumerate(labels)
    )


def test_batched_scoring_equals_full_prompt_scoring(smollm2_engine: Any, dataset: Any) -> None:
    """~6 real judge requests (binary and multi-choice, two items) against plain full-prompt scoring."""
    short = sorted(range(len(dataset)), key=lambda i: len(dataset[i].submission))
    grader = grader_on(smollm2_engine, system_prompt="Grade the submission against the criterion.")
    items = [
        GradeItem(
            submission=dataset[i].submission,
            rubric=tuple(dataset.get_item_rubric(i).rubric),
            query=dataset.get_item_query(i),
        )
        for i in short[:2]
    ]
    tasks = grader.plan(items)
    picked = [t for t in tasks if t.criterion_index in (0, 3, 6)]  # binary, negative, ordinal
    assert len(picked) == 6
    requests = [ScoreRequest(t.prefix, t.suffix, t.labels()) for t in picked]
    # Interleave the two items' prefixes.
    requests = [requests[0], requests[3], requests[1], requests[4], requests[2], requests[5]]
    results = smollm2_engine.score(requests)
    for request, result in zip(requests, results):
        assert result.error is None
        reference = reference_logprobs(smollm2_engine, request)
        expected = [math.exp(x - max(reference)) for x in reference]
        expected = [p / sum(expected) for p in expected]
        assert max(abs(a - b) for a, b in zip(result.probabilities, expected)) <= 1e-4
        assert max(abs(a - b) for a, b in zip(result.logprobs, reference)) <= 1e-3
        assert math.isclose(sum(result.probabilities), 1.0, abs_tol=1e-9)


def test_grading_the_bundled_example(smollm2_engine: Any, dataset: Any, rubric: Rubric) -> None:
    grader = grader_on(smollm2_engine)
    graded = grader.grade_inputs(inputs_of(dataset, list(range(len(dataset)))))
    assert len(graded) == len(dataset) == 8
    for item, result in zip(dataset, graded):
        report = result.report
        assert result.item.item_id == item.id
        assert report.error is None
        assert report.score is not None and 0.0 <= report.score <= 1.0
        assert report.token_usage is not None and report.token_usage.prompt_tokens > 0
        assert report.token_usage.cache_read_input_tokens > 0  # prefix shared across criteria
        assert len(report.report) == len(rubric)
        for criterion, judged in zip(rubric, report.report):
            assert judged.error is None
            probabilities = judged.label_probabilities
            assert probabilities is not None
            assert math.isclose(sum(probabilities.values()), 1.0, abs_tol=1e-6)
            if criterion.options is None:
                assert list(probabilities) == ["MET", "UNMET", "CANNOT_ASSESS"]
                assert isinstance(judged.final_verdict, CriterionVerdict)
                assert judged.final_verdict.value == max(probabilities, key=probabilities.__getitem__)
            else:
                assert list(probabilities) == [o.label for o in criterion.options]
                verdict = judged.final_multi_choice_verdict
                assert verdict is not None
                assert verdict.selected_label == criterion.options[verdict.selected_index].label
                assert verdict.selected_label == max(probabilities, key=probabilities.__getitem__)
                assert sorted(judged.multi_choice_votes[0].shuffle_order) == list(range(len(criterion.options)))


def test_explain_mode_on_one_item(smollm2_engine: Any, dataset: Any, rubric: Rubric) -> None:
    grader = grader_on(smollm2_engine, mode="explain", explanation_max_tokens=24)
    (graded,) = grader.grade_inputs(inputs_of(dataset, [0]))
    assert graded.report.error is None
    assert 0.0 <= graded.report.score <= 1.0
    assert graded.report.token_usage.completion_tokens > 0
    for criterion, judged, result in zip(rubric, graded.report.report, graded.results):
        assert result.error is None
        assert isinstance(result.explanation, str)
        assert judged.final_reason == result.explanation
        if criterion.options is None:
            answer = json.dumps({"criterion_status": judged.final_verdict.value, "explanation": result.explanation})
            assert CriterionJudgment.model_validate_json(answer).explanation == result.explanation
        else:
            shown = result.chosen + 1
            answer = '{"selected_option": ' + str(shown) + ', "explanation": ' + json.dumps(result.explanation) + "}"
            assert MultiChoiceJudgment.model_validate_json(answer).selected_option == shown


def test_ensemble_of_two_prompts_with_cyclic_permutations(smollm2_engine: Any, dataset: Any, rubric: Rubric) -> None:
    """Two judges on the one SmolLM2 engine (plain and strict prompt), every option rotation."""
    from autorubric_local.graders import JudgeSpec

    config = LLMConfig(model="smollm2-135m-instruct", engine=smollm2_engine)
    judges = [
        JudgeSpec(config, "plain"),
        JudgeSpec(config, "strict", system_prompt="You are a strict grader. Answer with the JSON asked for."),
    ]
    grader = CriterionGrader(judges=judges, permutations="cyclic", seed=0, ordinal_aggregation="median")
    graded = grader.grade_inputs(inputs_of(dataset, [0, 1]))
    n_rotations = sum(len(c.options) if c.options else 1 for c in rubric)
    for entry in graded:
        report = entry.report
        assert report.error is None and report.score is not None
        assert len(entry.results) == 2 * n_rotations
        assert set(report.judge_scores) == {"plain", "strict"}
        for criterion, judged in zip(rubric, report.report or []):
            votes = judged.votes or judged.multi_choice_votes
            assert [v.judge_id for v in votes] == ["plain", "strict"] and not any(v.is_error for v in votes)
            if criterion.options is not None:
                for vote in judged.multi_choice_votes:
                    probabilities = vote.label_probabilities or {}
                    assert math.isclose(sum(probabilities.values()), 1.0, abs_tol=1e-6)
                    assert vote.selected_label == max(probabilities, key=probabilities.__getitem__)
