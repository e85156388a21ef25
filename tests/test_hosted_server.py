"""Hosted judges against a REAL OpenAI-compatible server: llama-cpp-python's server running the
embedded SmolLM2 GGUF on 127.0.0.1, behind a counting proxy (``tests/hosted_server.py``).

What is checked, through LiteLLM as it is (nothing mocked): structured verdicts and label
probabilities from ``top_logprobs``; a repeat run answered from the response cache with no
request reaching the server; retries on injected 429/503 and none on a 400; a non-validating
answer retried and then recorded as a ``parse:`` error; ``max_parallel_requests`` seen as the
most requests in flight at the proxy; a hosted and an in-process llama.cpp judge in one
ensemble. llama-cpp-python's server answers ``json_schema`` response formats with HTTP 500, so
the judge sends ``{"type": "json_object", "schema": ...}`` (``extra_params``).

Slow. Needs LiteLLM (``scripts/setup.sh``: extra ``[hosted]``) and llama-cpp-python with its
server extras (``scripts/setup_llamacpp.sh``): skipped without them, failed under CI or once the
current setup_llamacpp.sh's stamp says they were installed.
"""

from __future__ import annotations

import asyncio
import importlib.util
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from example_workload import example_items
from hosted_server import CountingProxy, start_llama_server

from autorubric_local.core.rubric import Rubric
from autorubric_local.core.types import CriterionJudgment, CriterionVerdict
from autorubric_local.engine.hosted.backend import HostedEngine
from autorubric_local.client.api import LLMClient, ResponseParseError
from autorubric_local.graders import CriterionGrader, JudgeSpec
from autorubric_local.graders.execution import verdict_request
from autorubric_local.graders.planning import plan_tasks
from autorubric_local.judges.config import LLMConfig
from autorubric_local.judges.engines import load_engine
from autorubric_local.judges.presets import resolve_model

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parent.parent
NEEDED = ("litellm", "llama_cpp", "fastapi", "uvicorn", "sse_starlette", "starlette_context", "pydantic_settings")
QUERY = "Compare NMC and LFP cathode materials for EV battery applications."
SUBMISSION = "NMC cells reach 250-280 Wh/kg; LFP 150-205 Wh/kg. LFP is cheaper and has no cobalt."
RUBRIC = [
    {"weight": 10.0, "requirement": "States NMC cell-level energy density in the 250-300 Wh/kg range"},
    {"weight": 5.0, "requirement": "Says LFP is cheaper than NMC and contains no cobalt"},
    {"weight": -15.0, "requirement": "Incorrectly claims LFP has higher gravimetric energy density than NMC"},
]


def require_server_extras() -> None:
    missing = [name for name in NEEDED if importlib.util.find_spec(name) is None]
    if not missing:
        return
    from setup_state import missing as setup_missing

    setup_missing(f"hosted-judge server tests need {missing} (scripts/setup.sh installs the rest)", "setup_llamacpp.sh")


@pytest.fixture(scope="module")
def proxy(tmp_path_factory: pytest.TempPathFactory) -> Iterator[CountingProxy]:
    require_server_extras()
    gguf = resolve_model("smollm2-135m-instruct").path
    # one thread: on a machine shared with busy processes, ggml's spinning thread barrier at 2 threads
    # slowed the first test to minutes (scripts/results/bench_hosted_1cpu_2026-11-23.txt)
    process, base = start_llama_server(gguf, tmp_path_factory.mktemp("server") / "server.log", threads=1)
    counting = CountingProxy(base)
    try:
        yield counting
    finally:
        counting.close()
        process.terminate()
        process.wait(timeout=30)


@pytest.fixture
def fresh(proxy: CountingProxy) -> CountingProxy:
    proxy.reset()
    return proxy


def hosted(proxy: CountingProxy, **fields: Any) -> LLMConfig:
    settings: dict[str, Any] = {"model": "openai/smollm2", "api_base": proxy.url, "api_key": "none", "backend": "hosted",
                                "max_tokens": 256, "extra_params": {"response_format_type": "json_object"},
                                "retry_min_wait": 0.25, "retry_max_wait": 8.0}  # short waits, for the test's time
    settings.update(fields)
    return LLMConfig(**settings)


def grade(config: LLMConfig | None = None, judges: list[JudgeSpec] | None = None, mode: str = "score") -> Any:
    grader = CriterionGrader(llm_config=config, judges=judges, seed=0, mode=mode)
    rubric = Rubric.from_dict(RUBRIC)
    return asyncio.run(rubric.grade(to_grade=SUBMISSION, grader=grader, query=QUERY))


def test_structured_verdicts_and_label_probabilities_from_the_server(fresh: CountingProxy) -> None:
    engine = load_engine(hosted(fresh))
    assert isinstance(engine, HostedEngine)
    tasks = plan_tasks(example_items()[:2], [("hosted", engine.format_chat)], seed=0)[:6]
    scores = engine.score([verdict_request(t) for t in tasks])
    assert fresh.requests == fresh.forwarded == 6
    for score in scores:
        assert score.error is None
        assert score.one_hot is False  # the server returned top_logprobs at the verdict
        assert len(score.logprobs) == 3 and all(lp <= 0.0 for lp in score.logprobs)
        assert sum(score.probabilities) == pytest.approx(1.0, abs=1e-12)
        assert score.usage.prompt_tokens > 0 and score.usage.completion_tokens > 0


def test_explain_mode_grades_with_one_call_per_judgment(fresh: CountingProxy) -> None:
    result = grade(hosted(fresh), mode="explain")
    assert fresh.requests == len(RUBRIC)
    assert result.completion_cost is None  # LiteLLM has no price for the server's model: unknown, not 0.0
    for report in result.report:
        vote = report.votes[0]
        assert vote.error is None
        assert report.final_verdict in set(CriterionVerdict)
        assert vote.reason.startswith("The submission")
        assert sum(vote.label_probabilities.values()) == pytest.approx(1.0, abs=1e-12)


def test_a_repeat_run_is_served_from_the_cache(fresh: CountingProxy, tmp_path: Path) -> None:
    config = hosted(fresh, cache_enabled=True, cache_dir=str(tmp_path / "cache"), cache_ttl=3600)
    first = grade(config)
    assert fresh.requests == len(RUBRIC)
    again = grade(config)  # a new engine: nothing kept in memory
    assert fresh.requests == len(RUBRIC)  # no request reached the proxy, let alone the server
    assert [r.label_probabilities for r in again.report] == [r.label_probabilities for r in first.report]
    client = LLMClient(config)
    stats = client.cache_stats()
    assert stats["count"] == len(RUBRIC) and stats["directory"] == str(tmp_path / "cache") and stats["size"] > 0
    assert client.clear_cache() == len(RUBRIC)
    grade(config)
    assert fresh.requests == 2 * len(RUBRIC)


def ask(config: LLMConfig) -> Any:
    client = LLMClient(config)
    return asyncio.run(client.generate("Answer with a JSON object.", "Criterion: names a colour. Submission: 'Red.'",
                                       response_format=CriterionJudgment, return_result=True))


def test_transient_errors_are_retried_and_client_errors_are_not(fresh: CountingProxy) -> None:
    import litellm

    fresh.inject(429, 503)
    result = ask(hosted(fresh, max_retries=2))
    assert isinstance(result.parsed, CriterionJudgment)
    assert (fresh.requests, fresh.forwarded) == (3, 1)
    assert result.cost is None  # LiteLLM has no price for a self-hosted model

    fresh.reset()
    fresh.inject(503, 503)
    with pytest.raises(litellm.ServiceUnavailableError):
        ask(hosted(fresh, max_retries=1))
    assert (fresh.requests, fresh.forwarded) == (2, 0)

    fresh.reset()
    fresh.inject(400)
    with pytest.raises(litellm.BadRequestError):
        ask(hosted(fresh, max_retries=3))
    assert fresh.requests == 1


NOT_JSON = {"id": "x", "object": "chat.completion", "created": 0, "model": "smollm2",
            "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": "MET, I think"}}],
            "usage": {"prompt_tokens": 5, "completion_tokens": 3, "total_tokens": 8}}


def test_an_answer_that_does_not_validate_is_retried_then_a_parse_error(fresh: CountingProxy) -> None:
    fresh.inject(NOT_JSON)
    assert isinstance(ask(hosted(fresh, max_retries=1)).parsed, CriterionJudgment)
    assert (fresh.requests, fresh.forwarded) == (2, 1)

    fresh.reset()
    fresh.inject(NOT_JSON, NOT_JSON)
    with pytest.raises(ResponseParseError):
        ask(hosted(fresh, max_retries=1))

    fresh.reset()
    fresh.inject(*[NOT_JSON] * 2 * len(RUBRIC))
    result = grade(hosted(fresh, max_retries=1))
    errors = [r.votes[0].error for r in result.report]
    assert all(e.startswith("parse: ResponseParseError: response does not validate against CriterionJudgment")
               for e in errors), errors
    assert fresh.forwarded == 0


def test_a_failing_server_is_an_infrastructure_error(fresh: CountingProxy) -> None:
    fresh.inject(*[503] * len(RUBRIC))
    result = grade(hosted(fresh))
    assert [r.votes[0].error.split(":")[0] for r in result.report] == ["infrastructure"] * len(RUBRIC)


def test_parallel_requests_are_bounded_per_provider(fresh: CountingProxy) -> None:
    fresh.reset(delay=0.3)
    engine = load_engine(hosted(fresh, max_parallel_requests=2))
    tasks = plan_tasks(example_items()[:2], [("hosted", engine.format_chat)], seed=0)[:6]
    scores = engine.score([verdict_request(t) for t in tasks])
    assert [s.error for s in scores] == [None] * 6
    assert fresh.requests == 6 and fresh.peak_in_flight == 2


def test_local_and_hosted_judges_in_one_ensemble(fresh: CountingProxy) -> None:
    local = LLMConfig(model="smollm2-135m-instruct", backend="llamacpp")
    result = grade(judges=[JudgeSpec(llm_config=local, judge_id="local"),
                           JudgeSpec(llm_config=hosted(fresh), judge_id="server")])
    assert fresh.requests == len(RUBRIC)
    assert result.completion_cost is None  # the local judge adds 0.0, the server's calls are unpriced
    declared = grade(hosted(fresh, extra_params={"response_format_type": "json_object", "input_cost_per_token": 0.0,
                                                 "output_cost_per_token": 0.0}))
    assert declared.completion_cost == 0.0  # a price given per token (here: free) makes it known
    for report in result.report:
        assert [v.judge_id for v in report.votes] == ["local", "server"]
        assert [v.error for v in report.votes] == [None, None]


def test_the_public_one_shot_generate(fresh: CountingProxy) -> None:
    import autorubric_local

    answer = asyncio.run(autorubric_local.generate(
        "Answer with a JSON object.", "Criterion: names a colour. Submission: 'Red.'", model="openai/smollm2",
        response_format=CriterionJudgment, api_base=fresh.url, api_key="none", max_tokens=256,
        extra_params={"response_format_type": "json_object"}))
    assert isinstance(answer, CriterionJudgment)
    assert fresh.requests == 1
