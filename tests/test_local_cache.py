"""``cache_enabled``/``cache_dir``/``cache_ttl`` and ``max_parallel_requests`` on local judges
(engine/cached.py): a repeat grading served from the response cache never reaches the model, the
key follows the prompt and the settings that change an answer, failed answers are not kept, and
at most ``max_parallel_requests`` batched calls reach an engine at once."""

from __future__ import annotations

import asyncio
import math
import sqlite3
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from autorubric_local.core.rubric import Rubric
from autorubric_local.engine import EngineCapabilities, LabelScores, ScoreRequest, ScriptedEngine
from autorubric_local.engine.cached import CachedEngine, with_request_settings
from autorubric_local.engine.response_cache import CACHE_FILE
from autorubric_local.graders import CriterionGrader
from autorubric_local.judges.config import LLMConfig

RUBRIC = [{"weight": 10.0, "requirement": "Is polite"},
          {"weight": 5.0, "requirement": "How polite?", "scale_type": "ordinal",
           "options": [{"label": "Rude", "value": 0.0}, {"label": "Fine", "value": 0.5}, {"label": "Warm", "value": 1.0}]}]


def policy(request: ScoreRequest) -> list[float]:
    return [math.log(1.0 / len(request.labels))] * len(request.labels)


def grade(config: LLMConfig, text: str = "Thanks!", mode: str = "score") -> Any:
    grader = CriterionGrader(llm_config=config, seed=3, mode=mode)
    return asyncio.run(Rubric.from_dict(RUBRIC).grade(to_grade=text, grader=grader))


def scored(engine: ScriptedEngine) -> int:
    return sum(1 for request in engine.history if isinstance(request, ScoreRequest))


def test_a_repeat_grading_is_served_from_the_cache(tmp_path: Path) -> None:
    engine = ScriptedEngine(policy=policy)
    config = LLMConfig(model="scripted", engine=engine, cache_enabled=True, cache_dir=str(tmp_path), cache_ttl=3600)
    first = grade(config, mode="explain")
    calls = len(engine.history)
    assert scored(engine) == 2 and calls == 4  # a score and an explanation per criterion
    again = grade(config, mode="explain")  # a new grader: nothing kept in memory
    assert len(engine.history) == calls
    assert again.model_dump(exclude={"device_seconds"}) == first.model_dump(exclude={"device_seconds"})
    assert (tmp_path / CACHE_FILE).is_file()
    grade(config, text="Something else.", mode="explain")  # another prompt: computed
    assert len(engine.history) == 2 * calls


def test_without_cache_enabled_every_grading_reaches_the_engine(tmp_path: Path) -> None:
    engine = ScriptedEngine(policy=policy)
    config = LLMConfig(model="scripted", engine=engine, cache_dir=str(tmp_path))
    assert with_request_settings(engine, config) is engine  # nothing set: the engine itself
    grade(config)
    grade(config)
    assert scored(engine) == 4 and not (tmp_path / CACHE_FILE).exists()


@pytest.mark.parametrize("change", [{"temperature": 0.7}, {"seed": 9}, {"dtype": "float32"}])
def test_settings_that_change_an_answer_are_in_the_key(tmp_path: Path, change: dict[str, Any]) -> None:
    engine = ScriptedEngine(policy=policy)
    base = {"model": "scripted", "engine": engine, "cache_enabled": True, "cache_dir": str(tmp_path)}
    grade(LLMConfig(**base))
    grade(LLMConfig(**base, **change))
    assert scored(engine) == 4


def test_an_expired_entry_is_computed_again(tmp_path: Path) -> None:
    engine = ScriptedEngine(policy=policy)
    config = LLMConfig(model="scripted", engine=engine, cache_enabled=True, cache_dir=str(tmp_path), cache_ttl=3600)
    grade(config)
    with sqlite3.connect(tmp_path / CACHE_FILE) as db:  # as if stored two hours ago
        db.execute("UPDATE responses SET created_utc = created_utc - 7200")
    grade(config)
    assert scored(engine) == 4


def test_a_failed_answer_is_not_kept(tmp_path: Path) -> None:
    engine = ScriptedEngine(policy=policy)
    engine.enqueue_scores("infrastructure: out of memory")
    config = LLMConfig(model="scripted", engine=engine, cache_enabled=True, cache_dir=str(tmp_path))
    first = grade(config)
    assert first.report[0].votes[0].error == "infrastructure: out of memory"
    again = grade(config)
    assert scored(engine) == 3  # only the failed judgment was asked again
    assert again.report[0].votes[0].error is None


class InFlight:
    """An engine that counts its calls in flight (each call waits a little, so calls overlap)."""

    model_id = "in-flight"
    capabilities = EngineCapabilities()

    def __init__(self) -> None:
        self.now = 0
        self.peak = 0
        self.calls = 0
        self.lock = threading.Lock()

    def format_chat(self, messages: list[dict[str, str]]) -> str:
        return ScriptedEngine().format_chat(messages)

    def score(self, requests: Sequence[ScoreRequest]) -> list[LabelScores]:
        with self.lock:
            self.now += 1
            self.calls += 1
            self.peak = max(self.peak, self.now)
        time.sleep(0.05)
        with self.lock:
            self.now -= 1
        return [LabelScores(tuple(policy(r))) for r in requests]

    def generate(self, requests: Sequence[Any]) -> list[Any]:
        raise AssertionError("score mode only")


@pytest.mark.parametrize("limit", [1, 2])
def test_max_parallel_requests_bounds_calls_in_flight(limit: int) -> None:
    engine = InFlight()
    grader = CriterionGrader(llm_config=LLMConfig(model="in-flight", engine=engine, max_parallel_requests=limit))
    rubric = Rubric.from_dict(RUBRIC)

    async def many() -> list[Any]:
        return await asyncio.gather(*(rubric.grade(to_grade=f"Answer {i}", grader=grader) for i in range(6)))

    reports = asyncio.run(many())
    assert len(reports) == 6 and all(r.error is None for r in reports)
    assert engine.calls == 6 and 1 <= engine.peak <= limit


def test_a_limit_below_one_is_refused() -> None:
    with pytest.raises(ValueError, match="max_parallel_requests must be >= 1, got 0"):
        CachedEngine(ScriptedEngine(), limit=0)


def test_a_repeat_grading_by_a_real_model_runs_no_forward_pass(
    tiny_model_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from autorubric_local.judges.engines import load_engine

    config = LLMConfig(model=str(tiny_model_dir), cache_enabled=True, cache_dir=str(tmp_path), cache_ttl=3600)
    model = load_engine(config).model  # type: ignore[attr-defined]
    forward = model.forward
    passes: list[int] = []

    def counting(*args: Any, **kwargs: Any) -> Any:
        passes.append(1)
        return forward(*args, **kwargs)

    monkeypatch.setattr(model, "forward", counting)
    first = grade(config, mode="explain")
    assert passes  # the model ran
    done = len(passes)
    again = grade(config, mode="explain")
    assert len(passes) == done  # no forward pass at all
    assert again.score == first.score
    assert [r.final_reason for r in again.report] == [r.final_reason for r in first.report]
