"""Server judges (``backend="server"``) against a REAL llama.cpp server: llama-cpp-python's server
running the bundled SmolLM2 GGUF on 127.0.0.1 (``tests/hosted_server.py``), compared with the
in-process llama.cpp backend on the same file.

The figures over the first two items' 16 verdict requests are
``scripts/results/eval_server_judge_2cpu_2026-12-03_second.txt`` (``scripts/eval_server_judge.py``):
the off-label mass agrees with the in-process backend to 2.5e-6 relative; label
log-probabilities differ by up to 0.31 (0.062 in probability): the server computes each forced
step as a one-token batch, whose CPU kernels give other results than the long batches the
in-process backend uses (``engine/server/backend.py``, "Numerics"). The assertions here, on the first three
requests, hold bounds a little above what those three showed; a near tie (margin < 0.04) may flip.

A server that is down, and the backend's configuration, are checked without llama.cpp.
"""

from __future__ import annotations

import importlib.util
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from example_workload import example_items
from hosted_server import free_port, start_llama_server

from autorubric_local.core.errors import InputError
from autorubric_local.engine.base import GenerateRequest
from autorubric_local.engine.constrained import JSON_SENTENCE_BODY_REGEX, JSON_STRING_BODY_REGEX
from autorubric_local.engine.server.backend import GBNF_OF, ServerEngine
from autorubric_local.graders.execution import verdict_request
from autorubric_local.graders.planning import plan_tasks
from autorubric_local.judges.config import LLMConfig
from autorubric_local.judges.engines import load_engine
from autorubric_local.judges.presets import resolve_model

MODEL = "smollm2-135m-instruct"
NEEDED = ("llama_cpp", "fastapi", "uvicorn", "sse_starlette", "starlette_context", "pydantic_settings")


def require_server_extras() -> None:
    missing = [name for name in NEEDED if importlib.util.find_spec(name) is None]
    if missing:
        from setup_state import missing as setup_missing

        setup_missing(f"server-judge tests need {missing}", "setup_llamacpp.sh")


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    require_server_extras()
    process, base = start_llama_server(resolve_model(MODEL).path, tmp_path_factory.mktemp("server") / "server.log",
                                       threads=2)
    try:
        yield base
    finally:
        process.terminate()
        process.wait(timeout=30)


@pytest.fixture(scope="module")
def engines(server: str) -> tuple[Any, Any]:
    remote = load_engine(LLMConfig(model=MODEL, backend="server", api_base=server))
    local = load_engine(LLMConfig(model=MODEL, backend="llamacpp"))
    return remote, local


@pytest.mark.slow
def test_label_probabilities_follow_the_in_process_backend(engines: tuple[Any, Any]) -> None:
    remote, local = engines
    assert isinstance(remote, ServerEngine)
    tasks = plan_tasks(example_items()[:1], [("j", local.format_chat)], seed=0)[:3]
    requests = [verdict_request(t) for t in tasks]
    got, want = remote.score(requests), local.score(requests)
    for request, a, b in zip(requests, got, want, strict=True):
        assert a.error is None and b.error is None
        assert a.usage.prompt_tokens == len(local.prompt_tokens(request.prefix, request.suffix))
        # the first decision step: the same distribution (the off-label mass reads every first token)
        assert a.off_label_mass == pytest.approx(b.off_label_mass, rel=1e-4)
        assert max(abs(x - y) for x, y in zip(a.probabilities, b.probabilities, strict=True)) < 0.02
        assert max(abs(x - y) for x, y in zip(a.logprobs, b.logprobs, strict=True)) < 0.1
        ranked = sorted(b.probabilities, reverse=True)
        if ranked[0] - ranked[1] > 0.04:  # a clear verdict in-process is the server's verdict
            assert a.probabilities.index(max(a.probabilities)) == b.probabilities.index(ranked[0])


@pytest.mark.slow
@pytest.mark.parametrize("sentence", [False, True])
def test_explanations_decode_under_the_grammar_and_parse(engines: tuple[Any, Any], sentence: bool) -> None:
    remote, local = engines
    prefix = local.format_chat([{"role": "user", "content": "Say why the sky is blue, in JSON."}])
    request = GenerateRequest(prefix, '{"explanation": "', max_new_tokens=24, sentence=sentence)
    (generation,) = remote.generate([request])
    assert generation.error is None
    assert generation.usage.completion_tokens >= 1
    # the server's raw answer under the same grammar matches the request's regex, so it parses as a JSON string
    answer = remote.client.complete({"prompt": prefix + request.suffix, "max_tokens": 24, "temperature": 0.0,
                                     "grammar": GBNF_OF[request.regex]})
    raw = answer["choice"]["text"]
    assert raw
    if answer["choice"]["finish_reason"] == "length":  # cut at the budget: closed as the grader closes it
        raw = (raw[:-1] if (len(raw) - len(raw.rstrip("\\"))) % 2 else raw) + '"'
    assert re.fullmatch(request.regex, raw), raw
    assert isinstance(json.loads('"' + raw), str)


def _dead_engine() -> ServerEngine:
    engine = load_engine(LLMConfig(model=MODEL, backend="server", api_base=f"http://127.0.0.1:{free_port()}/v1"))
    assert isinstance(engine, ServerEngine)
    return engine


def test_a_server_that_is_down_gives_error_records() -> None:
    engine = _dead_engine()
    tasks = plan_tasks(example_items()[:1], [("j", engine.format_chat)], seed=0)[:2]
    scores = engine.score([verdict_request(t) for t in tasks])
    assert len(scores) == 2
    for result in scores:
        assert result.logprobs == ()
        assert result.error is not None and result.error.startswith("infrastructure: ")
        assert "127.0.0.1" in result.error
    (generation,) = engine.generate([GenerateRequest("p", "s")])
    assert generation.text == "" and generation.error is not None and generation.error.startswith("infrastructure: ")


def test_config_is_checked_before_anything_is_contacted() -> None:
    with pytest.raises(InputError, match="api_base is required"):
        load_engine(LLMConfig(model=MODEL, backend="server"))
    with pytest.raises(InputError, match="max_retries is not supported by the server backend"):
        load_engine(LLMConfig(model=MODEL, backend="server", api_base="http://127.0.0.1:1/v1", max_retries=2))
    with pytest.raises(InputError, match="http"):
        load_engine(LLMConfig(model=MODEL, backend="server", api_base="127.0.0.1:8080"))


def test_gbnf_grammars_cover_the_json_body_regexes() -> None:
    # hand-written from the regexes: same alphabet exclusions, closing quote last
    assert set(GBNF_OF) == {JSON_STRING_BODY_REGEX, JSON_SENTENCE_BODY_REGEX}
    for grammar in GBNF_OF.values():
        assert grammar.startswith("root ::= ") and '"\\""' in grammar and "\\x00-\\x1F" in grammar


def test_llm_client_answers_a_server_judge_through_its_engine_not_litellm() -> None:
    """AutoRubric's ``LLMClient`` with ``backend="server"`` uses this package's engine for the
    server (``LocalClient``), as it does for in-process judges; only ``"hosted"`` goes to LiteLLM."""
    from autorubric_local.client.api import is_local

    assert is_local(LLMConfig(model=MODEL, backend="server", api_base="http://127.0.0.1:8080/v1"))
    assert not is_local(LLMConfig(model="openai/gpt-4.1-mini", backend="hosted"))
