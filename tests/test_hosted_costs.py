"""What hosted calls cost, summed into reports (``completion_cost``) and runs
(``total_completion_cost``): LiteLLM's own price of each response, with no network: LiteLLM's
``mock_response`` (sent through ``extra_params``) answers inside LiteLLM, which prices it as it
prices a real response (10 prompt and 20 completion tokens). A model LiteLLM has no price for (a
self-hosted server's) is None unless its price is given per token. Giving a price registers the
model in LiteLLM's process-wide price map, so the unpriced model is never given one here."""

from __future__ import annotations

import asyncio
import math
from pathlib import Path
from typing import Any

import pytest

from autorubric_local.core.rubric import Rubric
from autorubric_local.core.types import CriterionJudgment
from autorubric_local.engine import LabelScores, ScoreRequest, ScriptedEngine
from autorubric_local.engine.base import add_costs
from autorubric_local.client.api import LLMClient, ResponseParseError
from autorubric_local.graders import CriterionGrader, JudgeSpec
from autorubric_local.judges.config import LLMConfig
from fake_judge import fake_grader

pytest.importorskip("litellm")

ANSWER = '{"criterion_status": "MET", "explanation": "It names a colour."}'
PRICES = {"input_cost_per_token": 1e-6, "output_cost_per_token": 2e-6}
CALL_USD = 10 * 1e-6 + 20 * 2e-6  # LiteLLM's mock usage: 10 prompt, 20 completion tokens
RUBRIC = [{"weight": 10.0, "requirement": "Names a colour"}, {"weight": 5.0, "requirement": "Is short"}]


UNPRICED = "openai/unpriced-model"


def hosted(model: str = "openai/priced-model", answer: str = ANSWER, **extra: Any) -> LLMConfig:
    return LLMConfig(model=model, backend="hosted", max_retries=1, extra_params={"mock_response": answer, **extra})


def ask(config: LLMConfig) -> Any:
    return asyncio.run(LLMClient(config).generate("Answer in JSON.", "Submission: 'Red.'",
                                                  response_format=CriterionJudgment, return_result=True))


def grade(*judges: JudgeSpec, mode: str = "score") -> Any:
    grader = CriterionGrader(judges=list(judges), seed=0, mode=mode)
    return asyncio.run(Rubric.from_dict(RUBRIC).grade(to_grade="Red.", grader=grader))


def test_a_call_is_priced_by_litellm_or_unknown() -> None:
    import litellm

    assert ask(hosted(UNPRICED)).cost is None  # no price for a self-hosted model: unknown, not 0.0
    assert ask(hosted(**PRICES)).cost == pytest.approx(CALL_USD)
    free = ask(hosted("openai/free-model", input_cost_per_token=0.0, output_cost_per_token=0.0))
    assert free.cost == 0.0  # a self-hosted model declared free
    known = ask(hosted(model="openai/gpt-4o-mini"))
    assert known.cost > 0 and known.cost == pytest.approx(litellm.completion_cost(completion_response=known.raw_response))


def test_responses_that_did_not_validate_are_paid_for() -> None:
    with pytest.raises(ResponseParseError) as failed:
        ask(hosted(answer="MET, I think", **PRICES))  # max_retries=1: two responses
    assert failed.value.cost == pytest.approx(2 * CALL_USD)


def test_a_report_sums_its_calls() -> None:
    report = grade(JudgeSpec(hosted(**PRICES), "priced"))
    assert report.completion_cost == pytest.approx(len(RUBRIC) * CALL_USD)
    # explain mode reuses each structured answer: still one priced call per judgment
    explained = grade(JudgeSpec(hosted(**PRICES), "priced"), mode="explain")
    assert explained.completion_cost == pytest.approx(len(RUBRIC) * CALL_USD)
    assert explained.report[0].votes[0].reason.endswith("It names a colour.")


def test_an_unknown_price_makes_the_report_unknown_and_local_judges_add_nothing() -> None:
    assert grade(JudgeSpec(hosted(UNPRICED), "self-hosted")).completion_cost is None
    local = LLMConfig(model="scripted", engine=ScriptedEngine(policy=lambda r: [math.log(0.6), math.log(0.3),
                                                                                  math.log(0.1)]))
    mixed = grade(JudgeSpec(local, "local"), JudgeSpec(hosted(**PRICES), "priced"))
    assert mixed.completion_cost == pytest.approx(len(RUBRIC) * CALL_USD)
    assert grade(JudgeSpec(local, "local")).completion_cost == 0.0


def test_a_failed_call_is_priced_by_what_came_back() -> None:
    report = grade(JudgeSpec(hosted(answer="not json", **PRICES), "priced"))
    assert all(c.votes[0].error.startswith("parse:") for c in report.report)
    assert report.completion_cost == pytest.approx(2 * len(RUBRIC) * CALL_USD)  # two responses per judgment


def test_add_costs() -> None:
    assert add_costs() == 0.0 and add_costs(0.1, 0.2) == pytest.approx(0.3)
    assert add_costs(0.1, None) is None


def test_a_run_sums_the_reports(tmp_path: Path) -> None:
    from crash_worker import build_dataset, make_policy

    from autorubric_local.runner import EvalConfig, EvalRunner, load_result

    def priced(request: ScoreRequest) -> LabelScores:
        return LabelScores(tuple(make_policy(0.0)(request)), cost_usd=0.001)

    grader = fake_grader(policy=priced, seed=1)
    config = EvalConfig(db_path=tmp_path / "r.sqlite", experiment_name="priced", show_progress=False)
    result = EvalRunner(build_dataset(2), grader, config).run_sync()
    judgments = result.total_judgments
    assert result.total_completion_cost == pytest.approx(0.001 * judgments)
    assert f"${result.total_completion_cost:.4f}" == f"${0.001 * judgments:.4f}"
    stored, _ = load_result(tmp_path / "r.sqlite", "priced")
    assert stored.total_completion_cost == pytest.approx(result.total_completion_cost)
