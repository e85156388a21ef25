"""AutoRubric's client API lives in ``client/`` (issue 32): one class named ``LLMClient``, and one
place (:func:`autorubric_local.client.api.shaped`) that turns a call's result into what
``generate`` returns; the clients below it (hosted, local) return whole results."""

from __future__ import annotations

import ast
from pathlib import Path

from pydantic import BaseModel

import autorubric_local
from autorubric_local.client.api import LLMClient, shaped
from autorubric_local.client.local import LocalClient
from autorubric_local.engine.hosted.client import HostedClient
from autorubric_local.engine.hosted_types import GenerateResult

PACKAGE = Path(autorubric_local.__file__).parent


class Answer(BaseModel):
    value: int


def test_one_class_is_named_llmclient_and_it_is_the_public_one() -> None:
    defined = [str(path.relative_to(PACKAGE)) for path in sorted(PACKAGE.rglob("*.py"))
               for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
               if isinstance(node, ast.ClassDef) and node.name == "LLMClient"]
    assert defined == ["client/api.py"]
    assert autorubric_local.LLMClient is LLMClient


def test_the_clients_below_return_whole_results_and_shape_nothing() -> None:
    for below in (HostedClient, LocalClient):
        assert not hasattr(below, "generate") and callable(below.answer)


def test_shaped_returns_text_the_instance_or_the_whole_result() -> None:
    result = GenerateResult(content='{"value": 3}', parsed=Answer(value=3))
    assert shaped(result, None, whole=False) == '{"value": 3}'
    assert shaped(result, Answer, whole=False) == Answer(value=3)
    assert shaped(result, Answer, whole=True) is result and shaped(result, None, whole=True) is result
