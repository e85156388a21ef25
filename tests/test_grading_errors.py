"""AutoRubric's ``ErrorCategory``, ``classify_grading_error`` and ``debug`` at the top level
(issue 53)."""

from __future__ import annotations

import asyncio
import sys
import types
from typing import Any, get_args

import pydantic
import pytest

import autorubric_local
from autorubric_local import CriterionGrader, ErrorCategory, LLMConfig, classify_grading_error
from autorubric_local.client.api import LLMClient
from autorubric_local.core.errors import EngineError, InputError, ModelNotFoundError
from autorubric_local.core.types import Criterion
from autorubric_local.engine import ScriptedEngine
from autorubric_local.engine.hosted.client import ResponseParseError
from autorubric_local.engine.hosted_types import GenerateResult
from autorubric_local.engine.llamacpp.context import DecodeError
from autorubric_local.engine.user_text import plain
from autorubric_local.graders.execution import ENGINE_FAILURES


def test_error_category_is_autorubrics_literal() -> None:
    assert get_args(ErrorCategory) == ("infrastructure", "parse", "unknown")
    assert {"ErrorCategory", "classify_grading_error", "debug"} <= set(autorubric_local.__all__)


def _validation_error() -> pydantic.ValidationError:
    class Answer(pydantic.BaseModel):
        criterion_status: str

    try:
        Answer.model_validate({})
    except pydantic.ValidationError as exc:
        return exc
    raise AssertionError("unreachable")


@pytest.mark.parametrize(("exc", "category"), [
    (ValueError("not JSON"), "parse"),
    (_validation_error(), "parse"),
    (ResponseParseError("bad", content="{", cost=None), "parse"),
    (InputError("bad label"), "parse"),
    (EngineError("context overflow"), "infrastructure"),
    (DecodeError("llama_decode returned 1"), "infrastructure"),
    (MemoryError(), "infrastructure"),
    (TimeoutError(), "infrastructure"),
    (ModelNotFoundError("no weights"), "infrastructure"),
    (KeyError("x"), "unknown"),
    (TypeError("bug"), "unknown"),
])
def test_classify_grading_error(exc: BaseException, category: str) -> None:
    assert classify_grading_error(exc) == category


def test_engine_failures_the_grader_records_are_infrastructure() -> None:
    # execution.py records these as "infrastructure: ..." errors rather than raising them.
    for kind in ENGINE_FAILURES:
        assert classify_grading_error(kind.__new__(kind)) == "infrastructure", kind


def test_openai_api_errors_are_infrastructure() -> None:
    openai = pytest.importorskip("openai")
    import httpx

    request = httpx.Request("POST", "http://localhost/v1/chat/completions")
    assert classify_grading_error(openai.APITimeoutError(request=request)) == "infrastructure"
    assert classify_grading_error(openai.APIConnectionError(request=request)) == "infrastructure"


def test_typesafe_sdk_errors_when_loaded(monkeypatch: pytest.MonkeyPatch) -> None:
    sdk = types.ModuleType("typesafe_sdk")
    base = type("TypeSafeError", (Exception,), {})
    for name in ("TypeSafeAPIResponseValidationError", "TypeSafeBadRequestError",
                 "TypeSafeUnprocessableEntityError", "TypeSafeRateLimitError"):
        setattr(sdk, name, type(name, (base,), {}))
    sdk.TypeSafeError = base  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "typesafe_sdk", sdk)
    assert classify_grading_error(sdk.TypeSafeBadRequestError()) == "parse"  # type: ignore[attr-defined]
    assert classify_grading_error(sdk.TypeSafeAPIResponseValidationError()) == "parse"  # type: ignore[attr-defined]
    assert classify_grading_error(sdk.TypeSafeRateLimitError()) == "infrastructure"  # type: ignore[attr-defined]


# ---- debug ------------------------------------------------------------------------------------------


def _grade(engine: ScriptedEngine) -> None:
    grader = CriterionGrader(LLMConfig(model="scripted", engine=engine), seed=0)
    grader.grade_inputs([("An answer.", [Criterion(name="a", requirement="Says hello")], None, None, "i0")])


def test_debug_prints_each_judge_prompt(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    assert autorubric_local.debug is False
    _grade(ScriptedEngine())
    assert "autorubric_local.debug" not in capsys.readouterr().err
    monkeypatch.setattr(autorubric_local, "debug", True)
    engine = ScriptedEngine()
    _grade(engine)
    err = capsys.readouterr().err
    assert "----- autorubric_local.debug: judge prompt (score) #1 -----" in err
    request = engine.history[0]
    assert plain(request.prefix + request.suffix) in err  # type: ignore[union-attr]
    assert "\ufdd0" not in err  # the untrusted-text markers never reach the model: not shown


class _Answerer:
    async def answer(self, system_prompt: str, user_prompt: str, response_format: Any = None,
                     **kwargs: Any) -> GenerateResult:
        return GenerateResult(content="ok")


def test_debug_prints_llm_client_prompts(monkeypatch: pytest.MonkeyPatch,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    client = LLMClient(LLMConfig(model="openai/gpt-4o-mini"))
    client._client = _Answerer()  # type: ignore[assignment]
    monkeypatch.setattr(autorubric_local, "debug", True)
    assert asyncio.run(client.generate("Be terse.", "Say hi.")) == "ok"
    err = capsys.readouterr().err
    assert "LLMClient.generate (openai/gpt-4o-mini)" in err
    assert "[system]\nBe terse.\n[user]\nSay hi." in err
