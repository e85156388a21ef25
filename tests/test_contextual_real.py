"""Contextual calibration on the real SmolLM2 judge (slow): a content-free input is scored exactly
as the same text graded as an ordinary submission, and each verdict is the correction of the
judge's own distribution by that prior."""

from __future__ import annotations

import math
from typing import Any

import pytest

from autorubric_local.core.types import Criterion, CriterionOption
from autorubric_local.graders import CriterionGrader
from autorubric_local.graders.content_free import CalibratedResult
from autorubric_local.graders.contextual import CONTENT_FREE_INPUTS, contextual_correction
from autorubric_local.graders.planning import GradeItem
from autorubric_local.judges.config import LLMConfig

pytestmark = pytest.mark.slow

QUERY = "Why is the fifth ionization energy of aluminium much larger than the fourth?"
RUBRIC = (
    Criterion(name="shell", weight=1.0, requirement="Says the fifth electron comes from the n=2 shell"),
    Criterion(name="depth", weight=1.0, requirement="How complete is the explanation?", options=[
        CriterionOption(label="Missing", value=0.0), CriterionOption(label="Partial", value=0.5),
        CriterionOption(label="Complete", value=1.0)]),
)
ANSWERS = ("The fifth electron is removed from the n=2 shell, closer to the nucleus.",
           "Aluminium is a metal.")


def grader(engine: Any, **kwargs: Any) -> CriterionGrader:
    return CriterionGrader(LLMConfig(model="smollm2", engine=engine), seed=1, shuffle_options=False, **kwargs)


def test_content_free_judgments_equal_grading_that_text_and_verdicts_follow_the_correction(smollm2_engine: Any) -> None:
    items = [GradeItem(submission=a, rubric=RUBRIC, query=QUERY, item_id=f"a{i}") for i, a in enumerate(ANSWERS)]
    graded = grader(smollm2_engine, contextual_calibration=True, permutations="cyclic").grade_batch(items)
    priors = {}
    for entry in graded:
        for result in entry.results:
            assert isinstance(result, CalibratedResult) and result.error is None and result.prior is not None
            prior = result.prior
            priors[prior.prior_id] = prior
            assert list(result.probabilities) == pytest.approx(contextual_correction(result.logprobs, prior.log_prior))
            assert result.chosen == max(range(len(result.probabilities)), key=result.probabilities.__getitem__)
            own = [math.exp(v) for v in result.logprobs]
            assert list(result.uncalibrated) == pytest.approx([v / sum(own) for v in own])
    assert len(priors) == 1 + 3  # the binary criterion, and each rotation of the three options
    # 'N/A' graded as an ordinary submission, without calibration: the same distributions.
    plain = grader(smollm2_engine, permutations="cyclic").grade_batch(
        [GradeItem(submission="N/A", rubric=RUBRIC, query=QUERY, item_id="na")])[0]
    index = CONTENT_FREE_INPUTS.index("N/A")
    for result in plain.results:
        prior = next(p for p in priors.values() if p.criterion == result.task.criterion
                     and p.option_order == result.task.option_order)
        assert list(result.logprobs) == pytest.approx(list(prior.logprobs[index]), abs=1e-4)
