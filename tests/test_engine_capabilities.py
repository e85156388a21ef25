"""Engines declare their capabilities (issue 32): callers read ``engine.capabilities`` instead of
probing for attributes, and an engine without a declaration, or declaring what it lacks, is
refused where it enters (``LLMConfig(engine=...)``, a registry backend's loader)."""

from __future__ import annotations

from collections.abc import Iterator
from types import SimpleNamespace
from typing import Any

import pytest
from pydantic import ValidationError

from autorubric_local.engine import EngineCapabilities, ScriptedEngine
from autorubric_local.graders.overflow import TruncatingJudge, can_truncate, fit_to_context
from autorubric_local.judges.backends import Backend, registry
from autorubric_local.judges.config import LLMConfig
from autorubric_local.judges.engines import load_engine


class Undeclared:
    """Scores and generates like an engine, but declares nothing."""

    model_id = "undeclared"

    def format_chat(self, messages: list[dict[str, str]]) -> str:
        return ScriptedEngine().format_chat(messages)

    def score(self, requests: Any) -> list[Any]:
        raise AssertionError("never called")

    def generate(self, requests: Any) -> list[Any]:
        raise AssertionError("never called")


class Counting(ScriptedEngine):
    """Counts tokens (one per character) but declares no whole-prompt encoding; its
    ``prompt_tokens`` must never be asked."""

    tokenizer = object()
    context_length = 10_000

    def __init__(self) -> None:
        super().__init__(model_id="counting", capabilities=EngineCapabilities(counts_tokens=True))

    def tokens(self, text: str) -> list[int]:
        return list(range(len(text)))

    def prompt_tokens(self, prefix: str, suffix: str) -> list[int]:
        raise AssertionError("prompt_tokens asked of an engine that does not declare it")


def test_an_engine_without_a_declaration_is_refused_by_llmconfig() -> None:
    with pytest.raises(ValidationError, match=r"engine Undeclared declares no capabilities"):
        LLMConfig(model="x", engine=Undeclared())


def test_an_engine_declaring_what_it_lacks_is_refused() -> None:
    engine = ScriptedEngine(capabilities=EngineCapabilities(counts_tokens=True))
    with pytest.raises(ValidationError, match=r"declares capabilities it lacks: no tokens, tokenizer, context_length"):
        LLMConfig(model="x", engine=engine)


def test_a_declaration_names_only_known_fields() -> None:
    with pytest.raises(ValueError, match=r"describes: unknown fields \['colour'\]"):
        EngineCapabilities(describes=frozenset({"colour"}))
    with pytest.raises(ValueError, match="whole_prompt_tokens needs counts_tokens"):
        EngineCapabilities(whole_prompt_tokens=True)


def test_an_engine_not_declaring_whole_prompt_tokens_is_never_asked_for_them() -> None:
    engine = Counting()
    LLMConfig(model="x", engine=engine)  # accepted: it has what it declares
    assert can_truncate(engine)
    task = SimpleNamespace(judge_index=0, item_index=0, prefix="abc", suffix="de")
    item = SimpleNamespace(submission="short")
    fitted, cuts = fit_to_context([item], [task], [TruncatingJudge(0, engine, reserve_tokens=1)])  # type: ignore[list-item]
    assert fitted == [item] and cuts == {}


def test_a_declared_hosted_engine_is_not_local() -> None:
    from autorubric_local.client.api import is_local

    assert is_local(LLMConfig(model="x", engine=ScriptedEngine()))
    assert not is_local(LLMConfig(model="x", engine=ScriptedEngine(capabilities=EngineCapabilities("hosted"))))


@pytest.fixture
def undeclared_backend() -> Iterator[str]:
    registry.register(Backend(name="undeclared", load=lambda config, resolved: Undeclared(), resolves_model=False))
    yield "undeclared"
    registry.unregister("undeclared")


def test_a_backend_whose_engine_declares_nothing_is_refused_at_load(undeclared_backend: str) -> None:
    with pytest.raises(TypeError, match=r"engine Undeclared declares no capabilities"):
        load_engine(LLMConfig(model="x", backend=undeclared_backend))


def test_built_in_engines_declare_every_run_record_field_their_class_has() -> None:
    """What the old ``getattr`` probes found on a built-in engine class is declared (the same
    run records); fields set per instance (vLLM's ``dtype_name``, ``fallbacks``) are checked by
    :func:`checked_capabilities` when the engine is loaded."""
    from autorubric_local.engine.capabilities import DESCRIPTIONS
    from autorubric_local.engine.hosted.backend import HostedEngine
    from autorubric_local.engine.llamacpp.backend import LlamaCppEngine
    from autorubric_local.engine.transformers.backend import TransformersEngine
    from autorubric_local.engine.vllm.backend import VLLMEngine

    for engine in (TransformersEngine, VLLMEngine, LlamaCppEngine, HostedEngine):
        on_class = {name for name, attribute in DESCRIPTIONS.items() if hasattr(engine, attribute)}
        assert on_class <= engine.capabilities.describes, engine.__name__


class Closable(ScriptedEngine):
    """Has a ``close()``; records whether releasing the engine called it."""

    def __init__(self, *, releases: bool) -> None:
        super().__init__(model_id="closable", capabilities=EngineCapabilities(releases=releases))
        self.closed = False

    def close(self) -> None:
        self.closed = True


@pytest.fixture
def closable_backend() -> Iterator[dict[str, Closable]]:
    built: dict[str, Closable] = {}

    def load(releases: bool) -> Any:
        return lambda config, resolved: built.setdefault(config.model, Closable(releases=releases))

    def key(config: LLMConfig, resolved: Any) -> tuple[str]:
        return (config.model,)

    registry.register(Backend(name="closes", load=load(True), resolves_model=False, cache_key=key))
    registry.register(Backend(name="keeps", load=load(False), resolves_model=False, cache_key=key))
    yield built
    registry.unregister("closes")
    registry.unregister("keeps")


def test_releasing_an_engine_calls_close_only_when_it_declares_releases(closable_backend: dict[str, Closable]) -> None:
    """The release reads the declaration: an engine whose ``close`` is not declared is dropped
    without it (the old ``getattr(engine, "close")`` probe called any ``close`` it found)."""
    from autorubric_local.judges.engines import release_engine, was_released

    declared = load_engine(LLMConfig(model="declared", backend="closes"))
    undeclared = load_engine(LLMConfig(model="undeclared", backend="keeps"))
    assert release_engine(declared) and release_engine(undeclared)
    assert was_released(declared) and was_released(undeclared)
    assert closable_backend["declared"].closed
    assert not closable_backend["undeclared"].closed


def test_an_engine_declaring_releases_without_close_is_refused() -> None:
    engine = ScriptedEngine(capabilities=EngineCapabilities(releases=True))
    with pytest.raises(ValidationError, match=r"declares capabilities it lacks: no close"):
        LLMConfig(model="x", engine=engine)


def test_only_the_vllm_engine_declares_releases_and_each_declaring_class_has_close() -> None:
    from autorubric_local.engine.hosted.backend import HostedEngine
    from autorubric_local.engine.llamacpp.backend import LlamaCppEngine
    from autorubric_local.engine.transformers.backend import TransformersEngine
    from autorubric_local.engine.vllm.backend import VLLMEngine

    declaring = {engine.__name__ for engine in (TransformersEngine, VLLMEngine, LlamaCppEngine, HostedEngine)
                 if engine.capabilities.releases}
    assert declaring == {"VLLMEngine"}
    assert callable(VLLMEngine.close)
