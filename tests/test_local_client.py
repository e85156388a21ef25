"""``LLMClient`` / ``generate`` on local engines (client/local.py): messages rendered with
the engine's chat format, text or a validated ``response_format`` from grammar-constrained
decoding, the end-of-sequence token ending free text (engine/constrained.py), the response
cache, and which configs are local. Fast tests use the tiny random judge; the slow ones SmolLM2
on transformers, on llama.cpp (GGUF) and on vLLM (CPU build in ``.venv-vllm``)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from autorubric_local.core.types import CriterionVerdict
from autorubric_local.engine import GenerateRequest, ScriptedEngine
from autorubric_local.engine.constrained import (
    FREE_TEXT_REGEX,
    RegexGrammar,
    read_generated,
)
from autorubric_local.engine.hosted.client import ResponseParseError
from autorubric_local.client.local import LocalClient, schema_regex
from autorubric_local.judges.config import LLMConfig
from autorubric_local.client.api import LLMClient, generate, is_local

SPECIAL = ("<|im_start|>", "<|im_end|>", "<|endoftext|>")


class Verdict(BaseModel):
    criterion_status: CriterionVerdict


class Scored(BaseModel):
    verdict: CriterionVerdict
    score: int


# ---------------------------------------------------------------------------- the grammar
def tiny_grammar(regex: str) -> tuple[Any, RegexGrammar]:
    """A 5-token vocabulary: a, b, '"', and two special tokens: 3 (end of sequence) and 4."""
    import torch
    from outlines_core import Index, Vocabulary

    vocabulary = Vocabulary(3, {"a": [0], "b": [1], '"': [2], "<x>": [4]})
    grammar = RegexGrammar(Index(regex, vocabulary), banned=(3, 4), eos=(3,))
    return torch, grammar


def test_free_text_ends_at_the_end_of_sequence_token_and_never_uses_other_special_tokens() -> None:
    torch, grammar = tiny_grammar(FREE_TEXT_REGEX)
    guide = grammar.new_guide()
    assert not guide.is_finished()  # a regex that may end is not finished until the model ends it
    assert grammar.choose(guide, torch.tensor([0.0, 1.0, 0.0, 0.5, 9.0])) == 1  # 4 is banned, 3 is lower
    assert not guide.is_finished()
    assert grammar.choose(guide, torch.tensor([0.0, 1.0, 0.0, 5.0, 9.0])) == 3  # the model ends the text
    assert guide.is_finished()


def test_a_json_string_body_still_ends_at_its_closing_quote() -> None:
    torch, grammar = tiny_grammar(r'[ab]*"')
    guide = grammar.new_guide()
    assert grammar.choose(guide, torch.tensor([1.0, 0.0, 0.0, 9.0, 9.0])) == 0  # no end before the quote
    assert not guide.is_finished()
    assert grammar.choose(guide, torch.tensor([0.0, 0.0, 1.0, 9.0, 9.0])) == 2
    assert guide.is_finished()  # nothing but the end can follow


def test_read_generated_keeps_pattern_text_as_generated(tiny_model: Any) -> None:
    tokenizer = tiny_model.tokenizer
    ids = tokenizer.encode('say \\"hi\\"', add_special_tokens=False) + [tokenizer.eos_token_id]
    assert read_generated(GenerateRequest("p", "", pattern=FREE_TEXT_REGEX), tokenizer, ids) == ('say \\"hi\\"', False)
    body_ids = tokenizer.encode('say \\"hi\\""', add_special_tokens=False)
    assert read_generated(GenerateRequest("p", ""), tokenizer, body_ids) == ('say "hi"', False)


def test_schema_regex_matches_the_models_json() -> None:
    import re

    regex = schema_regex(Scored)
    assert re.fullmatch(regex, '{"verdict":"MET","score":3}')
    assert not re.fullmatch(regex, '{"verdict":"maybe","score":3}')


# ---------------------------------------------------------------------------- tiny judge
@pytest.fixture
def client(tiny_engine: Any, tmp_path: Path) -> LLMClient:
    return LLMClient(LLMConfig(model="tiny", max_tokens=24, cache_dir=str(tmp_path), engine=tiny_engine))


def test_free_text_from_the_tiny_judge(client: LLMClient) -> None:
    result = asyncio.run(client.generate("You are terse.", "Say hi <|im_end|>", return_result=True))
    assert isinstance(result.content, str) and result.content
    assert 0 < result.usage.completion_tokens <= 24 and result.usage.prompt_tokens > 0
    assert not any(token in result.content for token in SPECIAL)
    assert result.cost == 0.0 and result.cached is False and result.parsed is None
    text = asyncio.run(client.generate("You are terse.", "Say hi <|im_end|>"))
    assert text == result.content  # greedy: the same text; a plain str without return_result


def test_structured_output_from_the_tiny_judge(client: LLMClient) -> None:
    verdict = asyncio.run(client.generate("Judge.", "Is 2 + 2 = 4?", response_format=Verdict))
    assert isinstance(verdict, Verdict) and verdict.criterion_status in set(CriterionVerdict)
    result = asyncio.run(client.generate("Judge.", "Is 2 + 2 = 4?", response_format=Verdict, return_result=True))
    assert json.loads(result.content) == {"criterion_status": verdict.criterion_status.value}
    assert result.parsed == verdict


def test_an_answer_cut_by_max_tokens_is_a_parse_error(client: LLMClient) -> None:
    with pytest.raises(ResponseParseError, match="cut at max_tokens") as cut:
        asyncio.run(client.generate("Judge.", "Score it.", response_format=Scored, max_tokens=3))
    assert cut.value.content.startswith("{")


def test_overrides_a_local_engine_cannot_honour_are_refused(client: LLMClient) -> None:
    with pytest.raises(TypeError, match=r"no per-call \['temperature'\]"):
        asyncio.run(client.generate("s", "u", temperature=0.5))


def test_the_response_cache_answers_a_repeat_without_the_model(tiny_engine: Any, tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    config = LLMConfig(model="tiny", max_tokens=12, cache_enabled=True, cache_dir=str(tmp_path), engine=tiny_engine)
    client = LLMClient(config)
    first = asyncio.run(client.generate("s", "Write something.", return_result=True))
    assert first.cached is False and client.cache_stats()["count"] == 1
    forward = tiny_engine.model.forward
    passes: list[int] = []
    monkeypatch.setattr(tiny_engine.model, "forward", lambda *a, **k: passes.append(1) or forward(*a, **k))
    again = asyncio.run(client.generate("s", "Write something.", return_result=True))
    assert again.cached is True and again.content == first.content and passes == []
    asyncio.run(client.generate("s", "Write something.", use_cache=False))  # forced off: computed
    assert passes
    assert client.clear_cache() == 1


def test_llm_client_picks_local_or_hosted(tiny_model_dir: Path, tmp_path: Path) -> None:
    local = LLMConfig(model=str(tiny_model_dir), max_tokens=8, cache_dir=str(tmp_path))
    assert is_local(local)
    assert not is_local(LLMConfig(model="openai/gpt-4.1-mini"))  # AutoRubric's hosted string stays hosted
    assert not is_local(LLMConfig(model=str(tiny_model_dir), backend="hosted"))
    assert is_local(LLMConfig(model="anything", engine=ScriptedEngine()))
    client = LLMClient(local)
    assert client.cache_stats()["count"] == 0  # nothing loaded for the cache
    assert client._client is None
    text = asyncio.run(client.generate("You are terse.", "Hello"))
    assert isinstance(client.client, LocalClient) and isinstance(text, str)
    verdict = asyncio.run(generate("Judge.", "Hello", model=str(tiny_model_dir), response_format=Verdict, max_tokens=64))
    assert isinstance(verdict, Verdict)


# ---------------------------------------------------------------------------- real judges
def check_real(engine: Any) -> None:
    client = LLMClient(LLMConfig(model="smollm2-135m-instruct", max_tokens=64, engine=engine))
    result = asyncio.run(client.generate("You are a helpful assistant.", "Reply with one word: hello.",
                                         return_result=True))
    assert result.content.strip()
    assert result.usage.completion_tokens < 64  # the model ended its answer (end-of-sequence token)
    assert not any(token in result.content for token in SPECIAL)
    verdict = asyncio.run(client.generate("You judge answers.", "Question: 2 + 2? Answer: 4. Is the answer right?",
                                          response_format=Verdict))
    assert isinstance(verdict, Verdict)


@pytest.mark.slow
def test_smollm2_on_transformers(smollm2_engine: Any) -> None:
    check_real(smollm2_engine)


@pytest.mark.slow
def test_smollm2_on_llamacpp() -> None:
    from test_llamacpp_backend import require_llama_cpp

    from autorubric_local.judges.engines import load_engine

    require_llama_cpp()
    check_real(load_engine(LLMConfig(model="smollm2-135m-instruct", backend="llamacpp")))


@pytest.mark.slow
def test_smollm2_on_vllm(tmp_path: Path) -> None:
    import subprocess

    from test_vllm_backend import VLLM_PYTHON, require_vllm_venv, worker_env
    from vllm_memory import VLLM_ENGINE_BYTES, vllm_engines

    from autorubric_local.judges.engines import ensure_converted
    from autorubric_local.judges.presets import resolve_model

    require_vllm_venv()
    folder = ensure_converted(resolve_model("smollm2-135m-instruct").path)
    root = Path(__file__).resolve().parents[1]
    with vllm_engines({"smollm2": VLLM_ENGINE_BYTES["smollm2"]}):
        done = subprocess.run([str(VLLM_PYTHON), str(root / "tests" / "vllm_client_worker.py"), str(folder),
                               str(tmp_path / "out.json")], capture_output=True, text=True, cwd=root, env=worker_env(),
                              timeout=900, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    out = json.loads((tmp_path / "out.json").read_text(encoding="utf-8"))
    assert out["free"]["content"].strip() and out["free"]["completion_tokens"] < out["free"]["max_tokens"]
    assert not any(token in out["free"]["content"] for token in SPECIAL)
    assert out["verdict"]["criterion_status"] in {v.value for v in CriterionVerdict}
